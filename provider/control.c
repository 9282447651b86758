// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-process control thread: the provider's end of ibckpt.ko.
 *
 * Started with the first context; opens /dev/ibckpt and registers itself, so
 * that a freeze never parks it. On IBCKPT_EV_QUIESCE it closes the verbs
 * gate and every queue of every context (quiesce.c: waiting for the threads
 * inside a verb to leave), then drains every CQ into its private queue
 * until every signaled send has completed and, for a quiet period, no
 * completion arrived and no connected QP's PSNs moved (unsignaled requests
 * in flight show only there), or a bound is reached (late completions: the
 * peer may still be sending); it answers with what it drained and how many
 * sends have not been seen to complete (unsignaled sends after the last
 * signaled one complete without a trace).
 * The gates stay closed until IBCKPT_EV_THAW or IBCKPT_EV_ABORT. Between the
 * answer and the thaw the thread waits in read(): it runs no code while the
 * group is frozen.
 *
 * Without the module (no /dev/ibckpt) there is no control thread and a
 * freeze parks the application threads without quiescing verbs.
 *
 * Tunables (milliseconds): IBCKPT_GATE_MS (threads to leave the gate, 2000),
 * IBCKPT_QUIET_MS (quiet period, 10), IBCKPT_DRAIN_MS (drain bound, 1000).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "linux/ibckpt.h"
#include "restart.h"

/*
 * Fault injection for tests (Documentation/testing.rst):
 * IBCKPT_FAULT_QUIESCE=ERRNO answers every quiesce with that error once the
 * gates are closed, as a failed snapshot would; IBCKPT_FAULT_NO_ANSWER=1
 * closes the gates and never answers, as a stuck control thread would;
 * IBCKPT_FAULT_REACQUIRE=PATH refuses every REACQUIRE (EIO) before anything
 * is touched while the file PATH exists, as a provider that cannot
 * re-create its objects would. A file decides, not the variable: the
 * environment is the process's memory, which a restore brings back as it
 * was, so only something outside the process can change the answer.
 */
static int fault_quiesce;
static bool fault_no_answer;
static char *fault_reacquire;

/*
 * ctl_lock: the start of the control thread, and every change of ctl_fd
 * (the control thread reads it without the lock: nobody else writes it but
 * a fork's child), so that a forked child knows which descriptor is the
 * parent's registration (fork.c). Taken under ibckpt_ctx_lock, never the
 * other way round.
 */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t ctl_pid;			/* process that started it (a fork's child: not it) */
static atomic_bool ctl_forwarding;	/* it forwards completion events (channel.c) */
static int ctl_fd = -1;			/* the registered /dev/ibckpt; ctl_lock */

/* @fd, or -1, replaces the registration's descriptor. */
static void ctl_fd_set(int fd)
{
	pthread_mutex_lock(&ctl_lock);
	if (ctl_fd >= 0)
		close(ctl_fd);
	ctl_fd = fd;
	pthread_mutex_unlock(&ctl_lock);
}

/*
 * Does the control thread forward completion events? It does once started:
 * a freeze never parks it, so it never stops between reading a vendor event
 * and acknowledging it (the vendor's destroy of that CQ would wait forever).
 */
bool ibckpt_control_forwards(void)
{
	return atomic_load(&ctl_forwarding) && ctl_pid == getpid();
}

/* Is a reacquire to be refused (IBCKPT_FAULT_REACQUIRE, above)? */
bool ibckpt_fault_reacquire(void)
{
	return fault_reacquire && *fault_reacquire && !access(fault_reacquire, F_OK);
}

/* Registration failed: a forwarder thread of its own takes over. */
static void stop_forwarding(void)
{
	atomic_store(&ctl_forwarding, false);
	if (ibckpt_fwd_orphaned())
		fprintf(stderr, "ibckpt: cannot start the completion event forwarder\n");
}

static unsigned int env_ms(const char *name, unsigned int def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	return *end || n > 600000 ? def : (unsigned int)n;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void gates_open(void)
{
	struct ibckpt_context *ctx;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next)
		ibckpt_ctx_open(ctx);
}

/*
 * Sends posted and not seen to complete, over every QP of every context;
 * *signaled: those of them a completion will still report (trailing
 * unsignaled sends complete without one, so they are not waited for).
 */
static uint64_t sends_outstanding(uint64_t *signaled)
{
	struct ibckpt_context *ctx;
	uint64_t n = 0;
	uint32_t i;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		ibckpt_spin_lock(&ctx->qpn_lock);
		for (i = 0; i < ctx->qpns.size; i++) {
			const struct ibckpt_vid *v = &ctx->qpns.slot[i];

			struct ibckpt_wrlog *sq;

			if (!v->gen || v->gen == ~0u)
				continue;
			sq = &((struct ibckpt_qp *)v->obj)->sq;
			n += ibckpt_wrlog_live(sq);
			*signaled += ibckpt_wrlog_signaled(sq);
		}
		ibckpt_spin_unlock(&ctx->qpn_lock);
	}
	return n;
}

/*
 * A digest of every connected RC and UC QP's PSNs (sent next, expected
 * next). It moves while a queue still transmits what was posted before the
 * gates closed, or receives what its peer still sends: requests whose
 * completions do not show (unsignaled ones). The gates are closed: no QP
 * is created or destroyed meanwhile.
 */
static uint64_t psn_digest(void)
{
	struct ibv_qp_init_attr init;
	struct ibckpt_context *ctx;
	struct ibckpt_obj *o;
	struct ibv_qp_attr a;
	uint64_t d = 0;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		for (o = ctx->objs.next; o != &ctx->objs; o = o->next) {
			struct ibckpt_qp *qp = ibckpt_container_of(o, struct ibckpt_qp, obj);

			if (o->type != IBCKPT_SNAP_QP || qp->opened || !qp->real ||
			    (qp->vqp.qp.qp_type != IBV_QPT_RC && qp->vqp.qp.qp_type != IBV_QPT_UC) ||
			    ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
					 &init) || a.qp_state < IBV_QPS_RTR)
				continue;
			d = d * 1000003u + ((uint64_t)a.sq_psn << 24 | a.rq_psn);
		}
	}
	return d;
}

/* Return: 0 or ENOMEM (a private queue could not grow: the quiesce fails). */
static int drain_all(uint32_t *n)
{
	struct ibckpt_context *ctx;
	struct ibckpt_cq *cq;
	uint32_t k;
	int err = 0;

	/* The gates are closed: CQs are neither created nor destroyed (cq.c). */
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		for (cq = ctx->cqs; cq; cq = cq->next) {
			k = 0;
			if (ibckpt_cq_drain(cq, &k))
				err = ENOMEM;
			atomic_fetch_add(&ctx->stats.drained, k);
			*n += k;
		}
	}
	return err;
}

/*
 * Quiesced, between a QUIESCE and its THAW/ABORT, under ibckpt_ctx_lock: a
 * context opened meanwhile (by a thread not parked yet) starts with its gate
 * closed. It is not in the snapshot already given.
 */
bool ibckpt_quiesced;

/*
 * Under ibckpt_ctx_lock: contexts neither come nor go meanwhile.
 * *incomplete: the bound was reached with signaled sends still outstanding.
 */
static void quiesce(struct ibckpt_quiesced *q, bool *incomplete)
{
	unsigned int gate_ms = env_ms("IBCKPT_GATE_MS", 2000);
	unsigned int quiet_ms = env_ms("IBCKPT_QUIET_MS", 10);
	unsigned int bound_ms = env_ms("IBCKPT_DRAIN_MS", 1000);
	struct ibckpt_context *ctx;
	double start, last;
	uint64_t left = 0, signaled = 0, psn;

	if (ibckpt_released) {	/* no vendor object: the gates are closed already */
		ibckpt_quiesced = true;
		return;
	}
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		int err = ibckpt_ctx_close(ctx, gate_ms);	/* its gate and queues */

		if (err) {
			/* a thread stayed inside a verb: give up, reopen all */
			gates_open();
			q->status = err;
			return;
		}
		atomic_fetch_add(&ctx->stats.quiesces, 1);
	}
	start = last = now_ms();
	psn = psn_digest();
	for (;;) {
		uint32_t got = 0;
		uint64_t p;

		if (drain_all(&got)) {
			q->n_drained += got;
			gates_open();
			q->status = ENOMEM;
			return;
		}
		p = psn_digest();

		q->n_drained += got;
		if (got || p != psn)	/* completions, or packets still moving */
			last = now_ms();
		psn = p;
		signaled = 0;
		left = sends_outstanding(&signaled);
		if (!signaled && now_ms() - last >= quiet_ms)
			break;
		if (now_ms() - start >= bound_ms)
			break;
		usleep(200);
	}
	q->n_outstanding = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	*incomplete = signaled != 0;
	ibckpt_quiesced = true;
	ibckpt_dbg("quiesced: %llu completions drained, %u sends outstanding, %.1f ms",
		   (unsigned long long)q->n_drained, q->n_outstanding, now_ms() - start);
}

/*
 * The snapshot of the quiesced process, for `ibckpt dump`; 0 or an errno.
 * ESRCH: the freeze was abandoned meanwhile (its ABORT is queued behind).
 */
static uint32_t give_snapshot(int fd, uint64_t session, uint32_t outstanding, bool incomplete)
{
	struct ibckpt_snapshot_arg a = { .session = session };
	void *buf;
	size_t len;
	int err;

	err = ibckpt_snapshot_build(session, outstanding, incomplete, &buf, &len);
	if (err)
		return (uint32_t)err;
	a.addr = (uintptr_t)buf;
	a.len = len;
	err = ioctl(fd, IBCKPT_IOC_SNAPSHOT, &a) ? errno : 0;
	if (err == ESRCH)
		ibckpt_dbg("session %llu ended before its snapshot", (unsigned long long)session);
	else if (err)
		fprintf(stderr, "ibckpt: the module refused the snapshot (%zu bytes): %s\n", len,
			strerror(err));
	free(buf);
	return (uint32_t)err;
}

static int register_fd(int fd)
{
	struct ibckpt_register reg = { .abi_version = IBCKPT_ABI_VERSION };

	if (ioctl(fd, IBCKPT_IOC_REGISTER, &reg)) {
		fprintf(stderr, "ibckpt: cannot register with ibckpt.ko: %s; "
			"freezes will not quiesce this process\n", strerror(errno));
		return -1;
	}
	ibckpt_dbg("control thread registered");
	return 0;
}

/* One event of the module's; false when the channel is gone. Context: the control thread. */
static bool handle_event(void)
{
	struct ibckpt_event ev;
	int fd = ctl_fd;
	ssize_t r = read(fd, &ev, sizeof(ev));

	if (r < 0 && errno == EINTR)
		return true;
	if (r != sizeof(ev)) {
		ibckpt_dbg("control channel: %s", r < 0 ? strerror(errno) : "short read");
		return false;
	}
	if (ev.type == IBCKPT_EV_QUIESCE) {
		struct ibckpt_quiesced q = { .session = ev.session };
		bool incomplete = false;

		pthread_mutex_lock(&ibckpt_ctx_lock);
		quiesce(&q, &incomplete);
		if (!q.status)
			q.status = fault_quiesce;
		if (!q.status && ibckpt_rctl_open())	/* named in the snapshot */
			ibckpt_dbg("no restart channel: %s", strerror(errno));
		if (!q.status)
			q.status = give_snapshot(fd, ev.session, q.n_outstanding, incomplete);
		pthread_mutex_unlock(&ibckpt_ctx_lock);
		if (q.status == ESRCH || fault_no_answer)
			return true;	/* abandoned: nobody waits for the answer */
		if (ioctl(fd, IBCKPT_IOC_QUIESCED, &q))
			ibckpt_dbg("answer to session %llu: %s", (unsigned long long)ev.session,
				   strerror(errno));
	} else if (ev.type == IBCKPT_EV_THAW || ev.type == IBCKPT_EV_ABORT) {
		pthread_mutex_lock(&ibckpt_ctx_lock);
		if (ibckpt_released) {
			/*
			 * Released (restart.h): the threads run again, the gates
			 * stay closed until a reacquire's GO, and nothing of the
			 * module's stays open for a checkpointer to trip on.
			 */
			pthread_mutex_unlock(&ibckpt_ctx_lock);
			ctl_fd_set(-1);
			ibckpt_dbg("session %llu over, released: waiting for a reacquire",
				   (unsigned long long)ev.session);
			return true;
		}
		gates_open();
		ibckpt_quiesced = false;
		pthread_mutex_unlock(&ibckpt_ctx_lock);
		ibckpt_dbg("session %llu %s: gates open", (unsigned long long)ev.session,
			   ev.type == IBCKPT_EV_THAW ? "thawed" : "aborted");
	}
	return true;
}

/**
 * ibckpt_control_reattach() - the module's again, at the start of a reacquire
 *
 * A released process closed /dev/ibckpt (a checkpointer could not dump it);
 * it registers again before re-creating anything. After a restore each of
 * its threads has credentials of its own (the restorer sets them per
 * thread): the module makes the identical ones one again, or the devices
 * the control thread opens would refuse the other threads' write()-based
 * verbs (uverbs compares the opener's credentials by identity).
 *
 * Context: the control thread. Return: 0 or an errno (for the message).
 */
int ibckpt_control_reattach(void)
{
	struct ibckpt_share_creds sc = { 0 };
	int err;

	/*
	 * A registration still open is the release's, whose thaw may not have
	 * been read yet (and would close it): a new one, for the freezes to come.
	 */
	pthread_mutex_lock(&ctl_lock);
	if (ctl_fd >= 0)
		close(ctl_fd);
	ctl_fd = open("/dev/" IBCKPT_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	err = ctl_fd < 0 ? errno : 0;
	pthread_mutex_unlock(&ctl_lock);
	if (err)
		return err;
	if (register_fd(ctl_fd)) {
		ctl_fd_set(-1);
		return EPROTO;
	}

	if (ioctl(ctl_fd, IBCKPT_IOC_SHARE_CREDS, &sc))
		return errno;
	if (sc.differ)	/* their write()-based verbs on the new devices will fail */
		fprintf(stderr, "ibckpt: %u threads have credentials of their own: write()-based "
			"verbs from them fail after this restart\n", sc.differ);
	ibckpt_dbg("credentials: %u threads switched, %u differ, %u shared", sc.switched,
		   sc.differ, sc.shared);
	return 0;
}

static void *control_main(void *arg)
{
	struct ibckpt_fwd_poll f = { 0 };
	struct pollfd *p = NULL;
	unsigned int n, cap = 0;

	(void)arg;	/* ctl_fd: set by ibckpt_control_start() */
	ibckpt_ctl_self = true;	/* the queues it closes are its own (spinlock.h) */
	if (register_fd(ctl_fd)) {
		ctl_fd_set(-1);
		stop_forwarding();
		return NULL;
	}
	for (;;) {
		/* the module's events, the restart channel, the completion channels */
		n = ibckpt_fwd_build(&f, true);
		if (n + 2 > cap) {
			cap = n + 16;
			p = realloc(p, cap * sizeof(*p));
			if (!p)
				abort();
		}
		p[0] = (struct pollfd){ .fd = ctl_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = ibckpt_rctl_wait_fd(), .events = POLLIN };
		memcpy(p + 2, f.pfd, n * sizeof(*p));
		if (poll(p, n + 2, -1) < 0)
			continue;	/* EINTR */
		if (n) {
			memcpy(f.pfd, p + 2, n * sizeof(*p));
			ibckpt_fwd_handle(&f);
		}
		/* the module's events first: a thaw comes before the reacquire after it */
		if (p[0].fd >= 0 && (p[0].revents & (POLLIN | POLLERR | POLLHUP)) &&
		    !handle_event())
			ctl_fd_set(-1);
		if (p[1].revents & POLLIN)
			ibckpt_rctl_serve();
	}
}

/**
 * ibckpt_control_start() - start this process's control thread, once
 *
 * Called with each new context; a forked child starts its own.
 */
void ibckpt_control_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int fd, err;

	pthread_mutex_lock(&ctl_lock);
	if (ctl_pid == getpid() || getenv("IBCKPT_NO_CONTROL"))
		goto out;
	ctl_pid = getpid();
	fault_quiesce = (int)env_ms("IBCKPT_FAULT_QUIESCE", 0);
	fault_no_answer = env_ms("IBCKPT_FAULT_NO_ANSWER", 0) != 0;
	free(fault_reacquire);	/* a forked child's copy of its parent's */
	fault_reacquire = getenv("IBCKPT_FAULT_REACQUIRE") ?
			  strdup(getenv("IBCKPT_FAULT_REACQUIRE")) : NULL;
	fd = open("/dev/" IBCKPT_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ibckpt_dbg("no /dev/%s (%s): no control thread", IBCKPT_DEVICE_NAME,
			   strerror(errno));
		goto out;
	}
	if (ibckpt_fwd_init()) {
		close(fd);
		goto out;
	}
	ctl_fd = fd;	/* under ctl_lock from its open: a fork's child closes it */
	atomic_store(&ctl_forwarding, true);
	/* Signals are the application's: none is delivered to this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, control_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		fprintf(stderr, "ibckpt: cannot start the control thread: %s\n", strerror(err));
		close(fd);
		ctl_fd = -1;
		stop_forwarding();
	}
out:
	pthread_mutex_unlock(&ctl_lock);
}

/**
 * ibckpt_control_atfork() - a fork's part of the control thread (fork.c)
 * @ph: the phase
 *
 * The child has no control thread; it starts one with its first context
 * of its own (ctl_pid is not the child's). The parent's /dev/ibckpt
 * descriptor is closed: the module registers no child through it (an fd
 * inherited across fork() belongs to its opener, kmod/chardev.c), and ends
 * the parent's registration only when the file is released, so a copy
 * left open here would keep the parent registered after the parent closed
 * its own (a released parent's reacquire would then be refused, EBUSY) or
 * exited. ctl_fd is the parent's descriptor at the fork: every change of
 * it is made under ctl_lock, which prepare holds.
 */
void ibckpt_control_atfork(enum ibckpt_fork_phase ph)
{
	if (ph == IBCKPT_FORK_PREPARE) {
		pthread_mutex_lock(&ctl_lock);
		return;
	}
	if (ph == IBCKPT_FORK_CHILD) {
		if (ctl_fd >= 0)
			close(ctl_fd);
		ctl_fd = -1;
		atomic_store(&ctl_forwarding, false);
		ibckpt_quiesced = false;	/* under ibckpt_ctx_lock, held */
	}
	pthread_mutex_unlock(&ctl_lock);
}
