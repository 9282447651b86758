// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion channels.
 *
 * ibv_get_cq_event() is libibverbs code: it reads the channel's fd and
 * returns the CQ pointer the kernel hands back, which is whatever pointer the
 * vendor registered: the real CQ. No provider op sits on that path. So the
 * application's channel must never receive the vendor's events. When a CQ is
 * first created on an application channel, we create a channel of our own on
 * the vendor's context for the vendor's CQs, and make the application's
 * channel fd (same number, same flags) the read end of a pipe. One forwarder
 * thread per process reads the vendor's events, acknowledges them (the
 * vendor's destroy waits for that) and writes the shadow CQ's pointer into
 * the pipe: ibv_get_cq_event() then returns the shadow and its cq_context.
 *
 * When the application destroys its channel it closes the pipe's read end;
 * the forwarder sees POLLERR on the write end and frees our side.
 *
 * Lifetime: channels live on one list under chan_lock; the forwarder takes
 * chan_lock around each event it forwards, ibckpt_channel_put() around
 * bookkeeping only (never while the vendor waits for acknowledgements).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "ibckpt.h"

struct fwd_chan {
	struct ibckpt_channel chan;
	struct ibckpt_context *ctx;
	bool dead;
};

static pthread_mutex_t chan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fwd_chan **chans;		/* under chan_lock */
static unsigned int nchans, chans_cap;
static unsigned long chans_gen;		/* bumped on every list change */
static int wake_fd = -1;		/* tells the forwarder the list changed */
static bool fwd_started;

static void wake_forwarder(void)
{
	uint64_t one = 1;

	if (write(wake_fd, &one, sizeof(one)) < 0)
		ibckpt_dbg("forwarder wake-up: %s", strerror(errno));
}

static void chan_free(struct fwd_chan *fc)
{
	if (fc->chan.pipe_wr >= 0)
		close(fc->chan.pipe_wr);
	if (ibv_destroy_comp_channel(fc->chan.real))
		ibckpt_dbg("vendor channel still busy at release");
	free(fc);
}

/* Under chan_lock: frees chans[i]; the last one takes its place. */
static void chan_drop(unsigned int i)
{
	chan_free(chans[i]);
	chans[i] = chans[--nchans];
	chans_gen++;
}

static void forward_event(struct fwd_chan *fc)
{
	struct ibv_cq *rcq;
	void *shadow;
	uint64_t handle;

	if (ibv_get_cq_event(fc->chan.real, &rcq, &shadow))
		return;
	ibv_ack_cq_events(rcq, 1);
	atomic_store(&((struct ibckpt_cq *)shadow)->armed, false);
	handle = (uintptr_t)&((struct ibckpt_cq *)shadow)->ibv_cq;
	atomic_fetch_add(&fc->ctx->stats.cq_events, 1);
	if (write(fc->chan.pipe_wr, &handle, sizeof(handle)) != sizeof(handle))
		fprintf(stderr, "ibckpt: completion event lost: %s\n", strerror(errno));
}

static void *forwarder(void *arg)
{
	struct pollfd *pfd = NULL;
	struct fwd_chan **seen = NULL;
	unsigned int i, n = 0, cap = 0;
	unsigned long gen;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&chan_lock);
		if (2 * nchans + 1 > cap) {
			cap = 2 * nchans + 16;
			pfd = realloc(pfd, cap * sizeof(*pfd));
			seen = realloc(seen, cap * sizeof(*seen));
			if (!pfd || !seen)
				abort();
		}
		n = nchans;
		gen = chans_gen;
		pfd[0] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
		for (i = 0; i < n; i++) {
			seen[i] = chans[i];
			pfd[1 + 2 * i] = (struct pollfd){ .fd = chans[i]->chan.real->fd,
							  .events = POLLIN };
			pfd[2 + 2 * i] = (struct pollfd){ .fd = chans[i]->chan.pipe_wr };
		}
		pthread_mutex_unlock(&chan_lock);

		if (poll(pfd, 1 + 2 * n, -1) < 0)
			continue;	/* EINTR (e.g. the park of a freeze) */
		if (pfd[0].revents & POLLIN) {
			uint64_t v;

			if (read(wake_fd, &v, sizeof(v)) < 0)
				continue;
			continue;	/* the list changed: rebuild */
		}
		pthread_mutex_lock(&chan_lock);
		if (gen != chans_gen) {
			/* Something we polled may be gone; what is pending stays pending. */
			pthread_mutex_unlock(&chan_lock);
			continue;
		}
		for (i = 0; i < n; i++) {
			struct fwd_chan *fc = seen[i];

			if (pfd[1 + 2 * i].revents & POLLIN)
				forward_event(fc);
			if (pfd[2 + 2 * i].revents & (POLLERR | POLLHUP))
				fc->dead = true;	/* the application closed its channel */
		}
		/* Free closed channels no CQ uses any more. */
		for (i = 0; i < nchans;) {
			if (chans[i]->dead && !chans[i]->chan.users)
				chan_drop(i);
			else
				i++;
		}
		pthread_mutex_unlock(&chan_lock);
	}
	return NULL;
}

/* Under chan_lock. */
static int start_forwarder(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int err;

	if (fwd_started)
		return 0;
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0)
		return errno;
	/* Signals are the application's business: keep them off this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, forwarder, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(wake_fd);
		wake_fd = -1;
		return err;
	}
	fwd_started = true;
	return 0;
}

/* Make app->fd read from a new pipe; returns the write end or -errno. */
static int take_over_fd(struct ibv_comp_channel *app)
{
	int p[2], fl, fdfl;

	fl = fcntl(app->fd, F_GETFL);
	fdfl = fcntl(app->fd, F_GETFD);
	if (fl < 0 || fdfl < 0 || pipe2(p, O_CLOEXEC))
		return -errno;
	if (fl & O_NONBLOCK)
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	if (dup3(p[0], app->fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		int err = errno;

		close(p[0]);
		close(p[1]);
		return -err;
	}
	close(p[0]);
	return p[1];
}

/**
 * ibckpt_channel_get() - our side of an application completion channel
 * @ctx: the context of the CQ being created
 * @app: the application's channel
 * @out: set to our side, with one more user
 *
 * Return: 0 or an errno.
 */
int ibckpt_channel_get(struct ibckpt_context *ctx, struct ibv_comp_channel *app,
		       struct ibckpt_channel **out)
{
	struct fwd_chan *fc = NULL;
	unsigned int i;
	int err, wr;

	pthread_mutex_lock(&chan_lock);
	for (i = 0; i < nchans; i++) {
		if (chans[i]->chan.app == app && !chans[i]->dead) {
			fc = chans[i];
			goto found;
		}
	}
	err = start_forwarder();
	if (err)
		goto out;
	err = ENOMEM;
	if (nchans == chans_cap) {
		struct fwd_chan **n = realloc(chans, (chans_cap + 8) * sizeof(*n));

		if (!n)
			goto out;
		chans = n;
		chans_cap += 8;
	}
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		goto out;
	fc->ctx = ctx;
	fc->chan.app = app;
	fc->chan.real = ibv_create_comp_channel(ctx->real);
	if (!fc->chan.real) {
		err = errno;
		free(fc);
		goto out;
	}
	wr = take_over_fd(app);
	if (wr < 0) {
		err = -wr;
		ibv_destroy_comp_channel(fc->chan.real);
		free(fc);
		goto out;
	}
	fc->chan.pipe_wr = wr;
	chans[nchans++] = fc;
	chans_gen++;
	wake_forwarder();
found:
	fc->chan.users++;
	*out = &fc->chan;
	err = 0;
out:
	pthread_mutex_unlock(&chan_lock);
	return err;
}

void ibckpt_channel_put(struct ibckpt_context *ctx, struct ibckpt_channel *chan)
{
	(void)ctx;
	pthread_mutex_lock(&chan_lock);
	chan->users--;
	pthread_mutex_unlock(&chan_lock);
	wake_forwarder();	/* it frees the channel if the application closed it */
}

/* The context closes: forget its channels (the application destroyed its CQs). */
void ibckpt_channel_cleanup(struct ibckpt_context *ctx)
{
	unsigned int i;

	pthread_mutex_lock(&chan_lock);
	for (i = 0; i < nchans;) {
		if (chans[i]->ctx == ctx)
			chan_drop(i);
		else
			i++;
	}
	pthread_mutex_unlock(&chan_lock);
	if (fwd_started)
		wake_forwarder();
}
