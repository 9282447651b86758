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
 * channel fd (same number, same flags) the read end of a pipe. The
 * process's control thread (control.c), or without one a forwarder thread,
 * reads the vendor's events, acknowledges them (the vendor's destroy waits
 * for that) and writes the shadow CQ's pointer into the pipe:
 * ibv_get_cq_event() then returns the shadow and its cq_context. The
 * control thread is never parked by a freeze: it never stops between
 * reading an event and acknowledging it.
 *
 * Which channel is which. ibv_create_comp_channel() and
 * ibv_destroy_comp_channel() are libibverbs code with no provider op: a
 * uverbs command and a malloc(), a close() and a free(). Nothing tells us
 * that a channel is gone but its file: the application's fd stops being our
 * pipe's read end. So a channel is found by that file, the pipe's device
 * and inode, which cannot be reused while we hold the write end; not by the
 * struct's address or the fd's number, which the next channel gets back at
 * once (glibc's tcache, the lowest free fd; librdmacm destroys and creates
 * two channels per connection). A re-created channel has a uverbs file of
 * its own and is taken over anew. Its predecessor's pipe has no reader any
 * more: the forwarder sees POLLERR on the write end and frees our side.
 *
 * Event lifetimes, as libibverbs promises them without us: a destroyed CQ's
 * unread events are dropped (the kernel does that in
 * ib_uverbs_release_ucq()), and destroy_cq returns once the application
 * acknowledged every event it obtained. Each CQ counts the events written
 * for it (events_sent) and those that reached the application through our
 * cq_event op (events_seen); its destroy takes what is left of its events
 * out of the pipe (pipe_purge()), then waits for the application's
 * acknowledgements of the rest (cq.c).
 *
 * The context's async event file works the same way (ibckpt_async_open()):
 * the application's async_fd is the read end of a pipe of ours from the
 * start, fed from the vendor's async file with records the kernel's format
 * (struct ib_uverbs_async_event_desc) whose element is the shadow, so that
 * ibv_get_async_event(), libibverbs code, returns shadows; nothing the
 * application blocks in holds a uverbs file, and a release has nothing to
 * hide behind a placeholder. A destroyed object's unread events are taken
 * out of that pipe too (ibckpt_async_put()).
 *
 * Lifetime: channels live on one list under chan_lock; the forwarder takes
 * chan_lock around each event it forwards, ibckpt_channel_put() around
 * bookkeeping and the purge (never while the vendor waits for
 * acknowledgements). Every descriptor of ours (pipe write ends, vendor
 * channels, wake_fd) is created and closed under chan_lock, so that a
 * fork's child, whose handler closes the parent's (fork.c), sees them all.
 * chan_lock nests inside ibckpt_ctx_lock and ctl_lock; nothing of ours is
 * taken under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include "restart.h"

struct fwd_chan {
	struct ibckpt_channel chan;
	struct ibckpt_context *ctx;
	bool dead;
	bool async;		/* the context's async events, from vendor_fd */
	int vendor_fd;		/* async: the vendor's async file; -1 released */
	/* Records the full pipe had no room for, in order (chan_put()). */
	char *backlog;
	size_t backlog_len, backlog_cap;
};

/* What the kernel writes into an async event file; libibverbs reads this. */
struct async_rec {
	uint64_t element;	/* the shadow object, or a port number */
	uint32_t event_type;
	uint32_t reserved;
};

static pthread_mutex_t chan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fwd_chan **chans;		/* under chan_lock */
static unsigned int nchans, chans_cap;
static unsigned long chans_gen;		/* bumped on every list change */
static int wake_fd = -1;		/* tells the forwarder the list changed */
static bool fwd_started;
static bool fwd_thread;			/* a thread of its own forwards (no control thread) */
static unsigned long fwd_polled_gen;	/* the list the forwarder polls; chan_lock */
static pthread_cond_t fwd_polled = PTHREAD_COND_INITIALIZER;

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
	if (fc->chan.real && ibv_destroy_comp_channel(fc->chan.real))
		ibckpt_dbg("vendor channel still busy at release");
	free(fc->backlog);
	free(fc);
}

static struct fwd_chan *to_fwd(struct ibckpt_channel *chan)
{
	return ibckpt_container_of(chan, struct fwd_chan, chan);
}

/*
 * Under chan_lock: one record (at most PIPE_BUF bytes, so written whole or
 * not at all) into the application's pipe, behind those waiting in the
 * backlog. A full pipe does not lose it: the kernel's own event queue is
 * unbounded, so the record waits in the backlog until the application
 * reads and the forwarder finds room (it polls for that, ibckpt_fwd_build()).
 * Return: false if it is lost (the application closed its end; or said:
 * no memory for the backlog, an unexpected error).
 */
static bool chan_put(struct fwd_chan *fc, const void *rec, size_t len)
{
	size_t cap;
	char *b;

	if (fc->dead)
		return false;		/* nobody reads the channel any more */
	if (!fc->backlog_len && write(fc->chan.pipe_wr, rec, len) == (ssize_t)len)
		return true;
	if (!fc->backlog_len && errno != EAGAIN) {
		if (errno != EPIPE)
			fprintf(stderr, "ibckpt: event lost: %s\n", strerror(errno));
		return false;
	}
	if (fc->backlog_len + len > fc->backlog_cap) {
		cap = fc->backlog_cap ? 2 * fc->backlog_cap : PIPE_BUF;
		b = realloc(fc->backlog, cap);
		if (!b) {
			fprintf(stderr, "ibckpt: event lost: no memory to hold it\n");
			return false;
		}
		fc->backlog = b;
		fc->backlog_cap = cap;
	}
	memcpy(fc->backlog + fc->backlog_len, rec, len);
	fc->backlog_len += len;
	return true;
}

/* Under chan_lock: as much of the backlog into the pipe as fits, in order. */
static void backlog_flush(struct fwd_chan *fc)
{
	size_t off = 0, n;

	while (off < fc->backlog_len) {
		/* whole records: PIPE_BUF is a multiple of both record sizes */
		n = fc->backlog_len - off < PIPE_BUF ? fc->backlog_len - off : PIPE_BUF;
		if (write(fc->chan.pipe_wr, fc->backlog + off, n) != (ssize_t)n)
			break;
		off += n;
	}
	fc->backlog_len -= off;
	memmove(fc->backlog, fc->backlog + off, fc->backlog_len);
}

/*
 * Takes the records of @rec bytes that start with @handle (the events of
 * one shadow) out of @buf's @len bytes, keeping the others in order.
 * Return: the bytes kept; *@removed counts the records taken out.
 */
static size_t purge_records(char *buf, size_t len, size_t rec, uint64_t handle, int *removed)
{
	size_t i, kept = 0;
	uint64_t first;

	for (i = 0; i + rec <= len; i += rec) {
		memcpy(&first, buf + i, sizeof(first));
		if (first == handle)
			(*removed)++;
		else
			memmove(buf + rec * kept++, buf + i, rec);
	}
	return rec * kept;
}

/* Under chan_lock: the same out of the backlog. Return: how many. */
static int backlog_purge(struct fwd_chan *fc, size_t rec, uint64_t handle)
{
	int removed = 0;

	fc->backlog_len = purge_records(fc->backlog, fc->backlog_len, rec, handle, &removed);
	return removed;
}

/* Under chan_lock: frees chans[i]; the last one takes its place. */
static void chan_drop(unsigned int i)
{
	chan_free(chans[i]);
	chans[i] = chans[--nchans];
	chans_gen++;
}

/*
 * Under chan_lock. The vendor's event is acknowledged last: the vendor's
 * destroy, and with it ibckpt_destroy_cq(), waits for that, so the shadow
 * outlives every access here.
 */
/* One event of the vendor's channel into the application's; false: none pending. */
static bool forward_event(struct fwd_chan *fc)
{
	struct ibckpt_cq *cq;
	struct ibv_cq *rcq;
	void *shadow;
	uint64_t handle;

	if (ibv_get_cq_event(fc->chan.real, &rcq, &shadow))
		return false;
	cq = shadow;
	atomic_store(&cq->armed, false);
	handle = (uintptr_t)&cq->ibv_cq;
	atomic_fetch_add(&fc->ctx->stats.cq_events, 1);
	if (chan_put(fc, &handle, sizeof(handle)))
		cq->events_sent++;
	ibv_ack_cq_events(rcq, 1);
	return true;
}

/*
 * Under chan_lock. One async event of the vendor's context into the
 * application's async file, its object translated to the shadow (which
 * the vendor's object carries as its user context). The vendor's event is
 * acknowledged last: the vendor's destroy of that object waits for it.
 * Return: false if none was pending.
 */
static bool forward_async(struct fwd_chan *fc)
{
	struct ibckpt_context *ctx = fc->ctx;
	struct async_rec r = { 0 };
	struct ibv_async_event ev;
	uint32_t *sent = NULL;
	struct ibckpt_srq *srq;
	struct ibckpt_cq *cq;
	struct ibckpt_qp *qp;

	if (fc->vendor_fd < 0 || ibv_get_async_event(ctx->real, &ev))
		return false;
	r.event_type = ev.event_type;
	switch (ibckpt_async_obj(ev.event_type)) {
	case IBCKPT_ASYNC_CQ:
		cq = ev.element.cq->cq_context;
		r.element = (uintptr_t)&cq->ibv_cq;
		sent = &cq->async_sent;
		break;
	case IBCKPT_ASYNC_QP:
		qp = ev.element.qp->qp_context;
		r.element = (uintptr_t)&qp->vqp.qp;
		sent = &qp->async_sent;
		break;
	case IBCKPT_ASYNC_SRQ:
		srq = ev.element.srq->srq_context;
		r.element = (uintptr_t)&srq->ibv_srq;
		sent = &srq->async_sent;
		/* the limit fires once: a re-created SRQ must not be armed again */
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			srq->srq_limit = 0;
		break;
	case IBCKPT_ASYNC_WQ:		/* no WQ is stacked (create_wq is refused) */
		ibv_ack_async_event(&ev);
		return true;
	case IBCKPT_ASYNC_PORT:		/* port and device events carry no object */
		r.element = ev.element.port_num;
		break;
	}
	atomic_fetch_add(&ctx->stats.async_events, 1);
	if (chan_put(fc, &r, sizeof(r)) && sent)
		(*sent)++;
	ibv_ack_async_event(&ev);
	return true;
}

/* Under chan_lock: the descriptor the forwarder polls for @fc's events. */
static int vendor_fd(const struct fwd_chan *fc)
{
	if (fc->async)
		return fc->vendor_fd;
	return fc->chan.real ? fc->chan.real->fd : -1;
}

/**
 * ibckpt_fwd_build() - what the forwarding thread polls: the wake-up fd, then
 *	each channel's vendor fd and our pipe's write end
 * @f: its state (pollfd array, channels seen, their count and list generation)
 * @control: the caller is the control thread (else the forwarder thread)
 *
 * Return: entries to poll (at least 1), 0 if the caller does not forward
 * (yet).
 */
unsigned int ibckpt_fwd_build(struct ibckpt_fwd_poll *f, bool control)
{
	unsigned int i;

	pthread_mutex_lock(&chan_lock);
	if (wake_fd < 0 || (control && fwd_thread)) {
		pthread_mutex_unlock(&chan_lock);
		return 0;
	}
	if (2 * nchans + 1 > f->cap) {
		f->cap = 2 * nchans + 16;
		f->pfd = realloc(f->pfd, f->cap * sizeof(*f->pfd));
		f->seen = realloc(f->seen, f->cap * sizeof(*f->seen));
		if (!f->pfd || !f->seen)
			abort();
	}
	f->n = fwd_started ? nchans : 0;
	f->gen = chans_gen;
	f->pfd[0] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
	for (i = 0; i < f->n; i++) {
		f->seen[i] = chans[i];
		/* released (restart.h): nothing to poll until reacquired */
		f->pfd[1 + 2 * i] = (struct pollfd){ .fd = vendor_fd(chans[i]),
						     .events = POLLIN };
		/* a backlog waits for room in the pipe */
		f->pfd[2 + 2 * i] = (struct pollfd){ .fd = chans[i]->chan.pipe_wr,
						     .events = chans[i]->backlog_len ? POLLOUT : 0 };
	}
	fwd_polled_gen = f->gen;
	pthread_cond_broadcast(&fwd_polled);
	pthread_mutex_unlock(&chan_lock);
	return 1 + 2 * f->n;
}

/**
 * ibckpt_fwd_handle() - forward what the poll of ibckpt_fwd_build()'s set found
 * @f: the state the poll used (its revents filled)
 */
void ibckpt_fwd_handle(struct ibckpt_fwd_poll *f)
{
	unsigned int i;

	if (f->pfd[0].revents & POLLIN) {
		uint64_t v;

		if (read(wake_fd, &v, sizeof(v)) < 0)
			ibckpt_dbg("forwarder wake-up: %s", strerror(errno));
		return;		/* the list changed: rebuild */
	}
	pthread_mutex_lock(&chan_lock);
	if (f->gen != chans_gen) {
		/* Something we polled may be gone; what is pending stays pending. */
		pthread_mutex_unlock(&chan_lock);
		return;
	}
	for (i = 0; i < f->n; i++) {
		struct fwd_chan *fc = f->seen[i];

		if (f->pfd[1 + 2 * i].revents & POLLIN) {
			if (fc->async)
				forward_async(fc);
			else
				forward_event(fc);
		}
		if (f->pfd[2 + 2 * i].revents & (POLLERR | POLLHUP))
			fc->dead = true;	/* the application closed its channel */
		else if (f->pfd[2 + 2 * i].revents & POLLOUT)
			backlog_flush(fc);
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

/*
 * The forwarder thread of a process without a control thread (no module):
 * with one, the control thread forwards (control.c), so that a freeze never
 * parks the forwarding between reading an event and acknowledging it, which
 * the vendor's destroy of that CQ would wait for.
 */
static void *forwarder(void *arg)
{
	struct ibckpt_fwd_poll f = { 0 };
	unsigned int n;

	(void)arg;
	for (;;) {
		n = ibckpt_fwd_build(&f, false);
		if (poll(f.pfd, n, -1) < 0)
			continue;	/* EINTR (e.g. the park of a freeze) */
		ibckpt_fwd_handle(&f);
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
	if (wake_fd < 0)
		wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0)
		return errno;
	if (ibckpt_control_forwards()) {	/* its poll takes the channels in */
		fwd_started = true;
		wake_forwarder();
		return 0;
	}
	/* Signals are the application's business: keep them off this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, forwarder, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return err;
	fwd_thread = true;
	fwd_started = true;
	return 0;
}

/**
 * ibckpt_fwd_orphaned() - the control thread will not forward after all
 *
 * Its registration failed: a forwarder thread of its own takes the channels
 * (no module, no freeze to fear). Return: 0 or an errno.
 */
int ibckpt_fwd_orphaned(void)
{
	int err = 0;

	pthread_mutex_lock(&chan_lock);
	if (fwd_started && !fwd_thread) {
		fwd_started = false;
		err = start_forwarder();
	}
	pthread_mutex_unlock(&chan_lock);
	return err;
}

/*
 * Make app->fd read from a new pipe; sets chan's write end and the pipe's
 * identity. Return: 0 or an errno.
 */
static int take_over_fd(struct ibv_comp_channel *app, struct ibckpt_channel *chan)
{
	int p[2], fl, fdfl, err;
	struct stat st;

	fl = fcntl(app->fd, F_GETFL);
	fdfl = fcntl(app->fd, F_GETFD);
	if (fl < 0 || fdfl < 0 || pipe2(p, O_CLOEXEC))
		return errno;
	if (fl & O_NONBLOCK)
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	if (fstat(p[1], &st) || dup3(p[0], app->fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		err = errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	close(p[0]);
	chan->pipe_wr = p[1];
	chan->pipe_dev = st.st_dev;
	chan->pipe_ino = st.st_ino;
	return 0;
}

/* Under chan_lock: room for one more entry in chans. Return: 0 or -1. */
static int chans_room(void)
{
	struct fwd_chan **n;

	if (nchans < chans_cap)
		return 0;
	n = realloc(chans, (chans_cap + 8) * sizeof(*n));
	if (!n)
		return -1;
	chans = n;
	chans_cap += 8;
	return 0;
}

/* Under chan_lock: our side of the channel whose fd is @fd, if it is one of our pipes. */
static struct fwd_chan *chan_find(int fd)
{
	struct stat st;
	unsigned int i;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return NULL;	/* a channel we have not taken over yet */
	for (i = 0; i < nchans; i++) {
		if (chans[i]->chan.pipe_ino == st.st_ino && chans[i]->chan.pipe_dev == st.st_dev &&
		    !chans[i]->dead && !chans[i]->async)
			return chans[i];
	}
	return NULL;
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
	struct fwd_chan *fc;
	int err;

	pthread_mutex_lock(&chan_lock);
	fc = chan_find(app->fd);
	if (fc)
		goto found;
	err = start_forwarder();
	if (err)
		goto out;
	err = ENOMEM;
	if (chans_room())
		goto out;
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		goto out;
	fc->ctx = ctx;
	fc->chan.real = ibv_create_comp_channel(ctx->real);
	if (!fc->chan.real) {
		err = errno;
		free(fc);
		goto out;
	}
	/*
	 * The kernel drops a destroyed CQ's unread events: one the forwarder's
	 * poll saw may be gone when it reads, and a blocking read would hold
	 * chan_lock until the channel's next event.
	 */
	fcntl(fc->chan.real->fd, F_SETFL, O_NONBLOCK);
	err = take_over_fd(app, &fc->chan);
	if (err) {
		ibv_destroy_comp_channel(fc->chan.real);
		free(fc);
		goto out;
	}
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

/*
 * Under chan_lock, so the forwarder writes nothing meanwhile: takes the
 * records of @rec bytes whose first 8 bytes are @handle (the events of one
 * shadow) out of the pipe and puts the others back, in their order. The application's end is the application's (its flags, its
 * blocked readers), so the pipe is read through a read end of our own,
 * opened through /proc: a second reader only for as long as this takes.
 * Return: events taken out, or -1 if the pipe could not be read.
 */
static int pipe_purge(struct ibckpt_channel *chan, size_t rec, uint64_t handle)
{
	int size = fcntl(chan->pipe_wr, F_GETPIPE_SZ), rd, removed = 0;
	size_t n = 0, kept;
	char path[40], *ev;
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", chan->pipe_wr);
	ev = size > 0 ? malloc((size_t)size) : NULL;
	rd = ev ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	if (rd < 0) {
		free(ev);
		return -1;
	}
	while ((r = read(rd, ev + n, (size_t)size - n)) > 0)
		n += (size_t)r;
	close(rd);
	/* records are written whole (at most PIPE_BUF) and read whole */
	kept = purge_records(ev, n, rec, handle, &removed);
	if (kept && write(chan->pipe_wr, ev, kept) != (ssize_t)kept)
		fprintf(stderr, "ibckpt: events lost: %s\n", strerror(errno));
	free(ev);
	return removed;
}

/**
 * ibckpt_channel_put() - a CQ leaves its channel
 * @cq: the CQ; the vendor's is destroyed, so no event of it reaches the
 *	forwarder any more
 *
 * Its events still in the pipe are taken out, as the kernel drops a
 * destroyed CQ's unread events; afterwards @cq->events_sent counts exactly
 * the events the application obtained (or is obtaining) for it.
 * Return: false if some may still be in the pipe (it could not be read):
 * then @cq must not be freed.
 */
bool ibckpt_channel_put(struct ibckpt_cq *cq)
{
	struct ibckpt_channel *chan = cq->chan;
	uint64_t handle = (uintptr_t)&cq->ibv_cq;
	bool clean = true;
	int removed;

	pthread_mutex_lock(&chan_lock);
	/* Read since, or being read: ibv_get_cq_event() calls the op after its read. */
	if (cq->events_sent != atomic_load(&cq->events_seen)) {
		removed = pipe_purge(chan, sizeof(handle), handle);
		if (removed < 0)
			clean = false;
		else
			cq->events_sent -= (uint32_t)removed;
		/* the backlog comes after the pipe's records: taken out too */
		cq->events_sent -= (uint32_t)backlog_purge(to_fwd(chan), sizeof(handle), handle);
		ibckpt_dbg("destroy_cq: %d unread completion events taken out of its channel",
			   removed);
	}
	chan->users--;
	pthread_mutex_unlock(&chan_lock);
	wake_forwarder();	/* it frees the channel if the application closed it */
	return clean;
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

/*
 * Restart (restart.h): the context's vendor channels go after its CQs, and
 * the forwarding of its async events before its vendor context. A
 * poll() holds the files it polls: a forwarder thread is woken to poll
 * without them (it may be parked by the freeze, outside poll(): it is waited
 * for a moment only). The control thread, which releases, forwards itself.
 */
void ibckpt_channel_release(struct ibckpt_context *ctx)
{
	unsigned int i;

	pthread_mutex_lock(&chan_lock);
	for (i = 0; i < nchans; i++) {
		struct fwd_chan *fc = chans[i];

		if (fc->ctx == ctx && fc->async) {	/* the vendor's context goes next */
			fc->vendor_fd = -1;
			chans_gen++;
			continue;
		}
		if (fc->ctx != ctx || !fc->chan.real)
			continue;
		if (ibv_destroy_comp_channel(fc->chan.real))
			ibckpt_dbg("release: the vendor kept a completion channel busy");
		fc->chan.real = NULL;
		chans_gen++;
	}
	if (fwd_started && fwd_thread) {	/* else we are the forwarder */
		struct timespec until;

		wake_forwarder();
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (fwd_polled_gen != chans_gen &&
		       !pthread_cond_timedwait(&fwd_polled, &chan_lock, &until))
			;
	}
	pthread_mutex_unlock(&chan_lock);
}

/**
 * ibckpt_channel_recreate() - the vendor's channel behind one of ours, again
 * @ctx: the reopened context
 * @chan: our side of an application channel
 *
 * Return: the vendor's channel (created by the first CQ that needs it), or
 * NULL with errno set.
 */
struct ibv_comp_channel *ibckpt_channel_recreate(struct ibckpt_context *ctx,
						 struct ibckpt_channel *chan)
{
	struct ibv_comp_channel *real;

	pthread_mutex_lock(&chan_lock);
	real = chan->real;
	if (!real) {
		real = ibv_create_comp_channel(ctx->real);
		if (real) {
			fcntl(real->fd, F_SETFL, O_NONBLOCK);
			chan->real = real;
			chans_gen++;
			wake_forwarder();
		} else {
			ibckpt_restart_err("completion channel: %s", strerror(errno));
		}
	}
	pthread_mutex_unlock(&chan_lock);
	return real;
}

/**
 * ibckpt_fwd_flush() - forward every event the context's vendor channels and
 *	async file hold
 * @ctx: a context about to be released
 *
 * The vendor's files are non-blocking: this returns once each is empty.
 * Context: the control thread (which forwards: nothing else reads them).
 */
void ibckpt_fwd_flush(struct ibckpt_context *ctx)
{
	unsigned int i;

	pthread_mutex_lock(&chan_lock);
	for (i = 0; i < nchans; i++) {
		if (chans[i]->ctx != ctx)
			continue;
		if (chans[i]->async)
			while (forward_async(chans[i]))
				;
		else if (chans[i]->chan.real)
			while (forward_event(chans[i]))
				;
	}
	pthread_mutex_unlock(&chan_lock);
}

/* Under chan_lock: the entry forwarding @ctx's async events, if any. */
static struct fwd_chan *async_find(const struct ibckpt_context *ctx)
{
	unsigned int i;

	for (i = 0; i < nchans; i++)
		if (chans[i]->ctx == ctx && chans[i]->async)
			return chans[i];
	return NULL;
}

/**
 * ibckpt_async_open() - make the context's async_fd a pipe of ours
 * @ctx: a new context, its vendor context open, the control thread started
 *	(so that it, not a thread a freeze parks, forwards)
 *
 * The read end takes async_fd's place, with its flags (libibverbs opens
 * the vendor's close-on-exec, blocking); the vendor's own async file
 * becomes non-blocking, read only by the forwarder. Return: 0 or an errno.
 */
int ibckpt_async_open(struct ibckpt_context *ctx)
{
	int afd = ctx->vctx.context.async_fd, p[2], err;
	struct fwd_chan *fc;

	if (afd < 0)
		return 0;
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		return ENOMEM;
	pthread_mutex_lock(&chan_lock);		/* the pipe is ours: see "Lifetime" */
	if (pipe2(p, O_CLOEXEC)) {
		err = errno;
		pthread_mutex_unlock(&chan_lock);
		free(fc);
		return err;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	if (dup3(p[0], afd, O_CLOEXEC) < 0) {
		err = errno;
		close(p[0]);
		close(p[1]);
		pthread_mutex_unlock(&chan_lock);
		free(fc);
		return err;
	}
	close(p[0]);
	fc->ctx = ctx;
	fc->async = true;
	fc->chan.pipe_wr = p[1];
	fc->vendor_fd = ctx->real->async_fd;
	fcntl(fc->vendor_fd, F_SETFL, O_NONBLOCK);
	err = start_forwarder();
	if (!err && chans_room())
		err = ENOMEM;
	if (err) {
		chan_free(fc);	/* async_fd stays the (empty) pipe: closed with the context */
		pthread_mutex_unlock(&chan_lock);
		return err;
	}
	chans[nchans++] = fc;
	chans_gen++;
	wake_forwarder();
	pthread_mutex_unlock(&chan_lock);
	return 0;
}

/**
 * ibckpt_async_reopen() - forward the reopened vendor context's async events
 * @ctx: a context whose vendor context was opened again (restart.h)
 */
void ibckpt_async_reopen(struct ibckpt_context *ctx)
{
	struct fwd_chan *fc;

	pthread_mutex_lock(&chan_lock);
	fc = async_find(ctx);
	if (fc && ctx->real->async_fd >= 0) {
		fc->vendor_fd = ctx->real->async_fd;
		fcntl(fc->vendor_fd, F_SETFL, O_NONBLOCK);
		chans_gen++;
		wake_forwarder();
	}
	pthread_mutex_unlock(&chan_lock);
}

/**
 * ibckpt_async_put() - a destroyed object's async events
 * @ctx: its context
 * @element: the shadow's address, as its events carry it
 * @sent: the events written for it (the vendor's object is destroyed: no
 *	more come)
 * @seen: those the application obtained through ibv_get_async_event()
 *
 * Its events still in the pipe are taken out, as the kernel drops a
 * destroyed object's unread events; afterwards *@sent counts the events
 * the application obtained (or is obtaining), whose acknowledgements the
 * destroy waits for. Return: false if some may still be in the pipe (it
 * could not be read): then the shadow must not be freed.
 */
bool ibckpt_async_put(struct ibckpt_context *ctx, const void *element, uint32_t *sent,
		      atomic_uint *seen)
{
	struct fwd_chan *fc;
	bool clean = true;
	int removed;

	pthread_mutex_lock(&chan_lock);
	fc = *sent != atomic_load(seen) ? async_find(ctx) : NULL;
	if (fc) {
		removed = pipe_purge(&fc->chan, sizeof(struct async_rec), (uintptr_t)element);
		if (removed < 0)
			clean = false;
		else
			*sent -= (uint32_t)removed;
		*sent -= (uint32_t)backlog_purge(fc, sizeof(struct async_rec), (uintptr_t)element);
		ibckpt_dbg("destroy: %d unread async events taken out", removed);
	}
	pthread_mutex_unlock(&chan_lock);
	if (!clean)
		fprintf(stderr, "ibckpt: cannot read the async event file (through /proc); a "
			"destroyed object's unread event stays in it, and its memory with it\n");
	return clean;
}

/**
 * ibckpt_channel_notify() - the event a released CQ owes its application
 * @cq: a CQ whose vendor CQ is gone, armed, with completions in its private
 *	queue
 *
 * The application armed it and waits for an event; the completions that
 * would have raised it were drained, and the vendor's CQ that would have
 * raised it is destroyed (its unread events with it): it gets one here.
 */
void ibckpt_channel_notify(struct ibckpt_cq *cq)
{
	uint64_t handle = (uintptr_t)&cq->ibv_cq;

	pthread_mutex_lock(&chan_lock);
	if (chan_put(to_fwd(cq->chan), &handle, sizeof(handle))) {
		cq->events_sent++;
		atomic_store(&cq->armed, false);
	}
	pthread_mutex_unlock(&chan_lock);
}

/**
 * ibckpt_fwd_init() - the forwarder's wake-up, before any channel exists
 *
 * Called by the control thread's start: its poll includes it from the
 * start, so that the first channel wakes it. Return: 0 or an errno.
 */
int ibckpt_fwd_init(void)
{
	int err = 0;

	pthread_mutex_lock(&chan_lock);
	if (wake_fd < 0)
		wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0)
		err = errno;
	pthread_mutex_unlock(&chan_lock);
	return err;
}

/**
 * ibckpt_channel_atfork() - a fork's part of the forwarding (fork.c)
 * @ph: the phase
 *
 * In the child, every channel on the list is the parent's: the forwarder
 * thread or control thread that served them is not in the child, and the
 * child's must not take the parent's events (its vendor channels and
 * async files are the parent's files). The list starts empty, so that the
 * child's first channel or context starts a forwarder of the child's.
 * Closed: the pipes' write ends, the vendor channels ibckpt created and the
 * wake-up eventfd, ibckpt's own descriptors (the application knows none of
 * their numbers), which would otherwise keep the parent's files open for
 * as long as the child lives. Kept: the application's channel and async
 * descriptors (the pipes' read ends; the application's to close, as
 * without ibckpt), and the vendor's async files (its context's: an
 * ibv_close_device() of the inherited context closes them).
 */
void ibckpt_channel_atfork(enum ibckpt_fork_phase ph)
{
	unsigned int i;

	if (ph == IBCKPT_FORK_PREPARE) {
		pthread_mutex_lock(&chan_lock);
		return;
	}
	if (ph == IBCKPT_FORK_CHILD) {
		for (i = 0; i < nchans; i++) {
			struct fwd_chan *fc = chans[i];

			if (fc->chan.pipe_wr >= 0)
				close(fc->chan.pipe_wr);
			/* the struct stays: the parent's vendor CQs name it */
			if (!fc->async && fc->chan.real) {
				close(fc->chan.real->fd);
				fc->chan.real->fd = -1;
			}
			free(fc->backlog);
			free(fc);
		}
		free(chans);
		chans = NULL;
		nchans = chans_cap = 0;
		chans_gen++;
		if (wake_fd >= 0)
			close(wake_fd);
		wake_fd = -1;
		fwd_started = false;
		fwd_thread = false;
		/* a parent thread may have waited on it: the copy may count it */
		pthread_cond_init(&fwd_polled, NULL);
	}
	pthread_mutex_unlock(&chan_lock);
}
