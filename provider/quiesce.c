// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Closing a context for a quiesce: its gate, then every queue.
 *
 * The control-path verbs (creates, destroys, modifies, registrations...)
 * run inside the context's gate (gate.h). The data-path verbs (post_send,
 * post_recv, post_srq_recv, poll_cq and the ibv_wr_* and extended-CQ ones
 * built on them) enter none: each takes its queue's own lock, the one it
 * takes anyway to log the request or retire completions, and tests the
 * queue's closed flag under it. A closed queue: the verb releases the lock
 * and sleeps on the gate's futex word until the queue opens
 * (ibckpt_gate_wait_queue()), interruptibly, so the kernel parks it like
 * any other thread, then takes the lock again.
 *
 * Closing sets each queue's flag and then takes and releases its lock: a
 * verb holding the lock (inside the vendor's post or poll) finishes first,
 * and every later one sees the flag. Once every queue is closed no thread
 * is inside a vendor post or poll, and none gets in, until the queues
 * open. The closer holds one queue lock at a time, briefly, so this adds
 * no lock order; opening takes none. While closed, a queue is the control
 * thread's alone: its own lock and unlock of it are no-ops, since a thread
 * the freeze parked on its way out may hold the lock (spinlock.h).
 *
 * Order: the gate closes first and opens last. Closing it waits until no
 * control-path verb is inside, so the context's object list stands still
 * while it is walked (creates and destroys are inside the gate until the
 * queue is on the list or off it); a queue created before the close is
 * on the list and closed with the others, and a create arriving while
 * closed waits at the gate, so its queue is born when the queues are open
 * again (a verb inside the gate always finds every queue open). A queue
 * is closed only while the gate is, which is what lets its waiters sleep
 * on the gate's word.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include "ibckpt.h"

/*
 * The flag first, then the lock taken once and released: verbs that take
 * the lock meanwhile see the flag and let go at once, so a queue polled in
 * a busy loop is not held against the closer; the holder found there (a
 * verb inside the vendor's post or poll) leaves within microseconds,
 * unless it is stopped (a debugger, SIGSTOP). Once the closer had the lock,
 * every verb that takes it after sees the flag (the lock orders them).
 * Return: 0, or ETIMEDOUT with the queue open again, as it was (a CQ's
 * IBCKPT_Q_DRAINED kept: at worst one poll finds its private queue empty).
 */
static int q_close(struct ibckpt_spinlock *l, atomic_uint *closed, const struct timespec *t0,
		   unsigned int timeout_ms)
{
	static const struct timespec nap = { 0, 20000 };
	unsigned int was;

	was = atomic_exchange_explicit(closed, IBCKPT_Q_CLOSED, memory_order_relaxed);
	while (!ibckpt_spin_trylock(l)) {
		if (ibckpt_ms_since(t0) >= (long)timeout_ms) {
			atomic_store_explicit(closed, was, memory_order_relaxed);
			return ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
	ibckpt_spin_unlock_raw(l);
	return 0;
}

/*
 * A release store, which a verb's load of the flag under the lock acquires
 * (ibckpt_q_closed()): what the control thread wrote while it was closed
 * (a restart's paths and IDs) is seen. No lock: one that a thread stopped
 * in a verb holds would keep the control thread here. A CQ whose private
 * queue holds completions opens marked (spinlock.h): @cq, NULL for other
 * queues. A queue not closed (a close that gave up before it, or at it:
 * q_close() put its flag back) is left alone: its private queue is its
 * pollers' to read.
 */
static void q_open(atomic_uint *closed, const struct ibckpt_cq *cq)
{
	if (atomic_load_explicit(closed, memory_order_relaxed) != IBCKPT_Q_CLOSED)
		return;
	atomic_store_explicit(closed, cq && ibckpt_cq_drained(cq) ? IBCKPT_Q_DRAINED : 0,
			      memory_order_release);
}

/*
 * Every queue of @ctx closed (@close) or open; closing gives up at the
 * first lock not free by the deadline. Context: the gate closed.
 */
static int queues_set(struct ibckpt_context *ctx, bool close, const struct timespec *t0,
		      unsigned int timeout_ms)
{
	struct ibckpt_obj *o;
	int err = 0;

	for (o = ctx->objs.next; o != &ctx->objs && !err; o = o->next) {
		if (o->type == IBCKPT_SNAP_QP) {
			struct ibckpt_qp *qp = ibckpt_container_of(o, struct ibckpt_qp, obj);

			if (!close) {
				q_open(&qp->sq_lock.closed, NULL);
				q_open(&qp->rq_lock.closed, NULL);
				continue;
			}
			err = q_close(&qp->sq_lock, &qp->sq_lock.closed, t0, timeout_ms);
			if (!err)
				err = q_close(&qp->rq_lock, &qp->rq_lock.closed, t0, timeout_ms);
		} else if (o->type == IBCKPT_SNAP_SRQ) {
			struct ibckpt_srq *srq = ibckpt_container_of(o, struct ibckpt_srq, obj);

			if (!close)
				q_open(&srq->lock.closed, NULL);
			else
				err = q_close(&srq->lock, &srq->lock.closed, t0, timeout_ms);
		} else if (o->type == IBCKPT_SNAP_CQ) {
			struct ibckpt_cq *cq = ibckpt_container_of(o, struct ibckpt_cq, obj);

			if (!close)
				q_open(&cq->lock.closed, cq);
			else
				err = q_close(&cq->lock, &cq->lock.closed, t0, timeout_ms);
		}
	}
	return err;
}

/**
 * ibckpt_ctx_close() - close a context's gate and queues, for a quiesce
 * @ctx: a context of ibckpt_ctxs, its gate open; ibckpt_ctx_lock held
 * @timeout_ms: how long threads inside a verb may take to leave, in all
 *
 * Return: 0, every verb of the context held back and none inside
 * (ctx->gate_closed set); or ETIMEDOUT, or membarrier(2)'s errno, with
 * the context open again.
 */
int ibckpt_ctx_close(struct ibckpt_context *ctx, unsigned int timeout_ms)
{
	struct timespec t0;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = ibckpt_gate_close(&ctx->gate, timeout_ms);
	if (err)
		return err;
	err = queues_set(ctx, true, &t0, timeout_ms);
	if (err) {	/* a thread stayed inside a post or poll */
		queues_set(ctx, false, NULL, 0);
		ibckpt_gate_open(&ctx->gate);
		return err;
	}
	ctx->gate_closed = true;
	return 0;
}

/**
 * ibckpt_ctx_open() - open a context's queues, then its gate, if closed
 * @ctx: a context of ibckpt_ctxs; ibckpt_ctx_lock held
 *
 * A context opened while quiesced (context.c) has its gate closed and no
 * queue yet.
 */
void ibckpt_ctx_open(struct ibckpt_context *ctx)
{
	if (!ctx->gate_closed)
		return;
	queues_set(ctx, false, NULL, 0);
	ibckpt_gate_open(&ctx->gate);
	ctx->gate_closed = false;
}
