// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues. The vendor's CQ is created with our shadow as its
 * cq_context, so an event on it leads back to the shadow (channel.c). Polls
 * are served from the private queue first (completions drained at a freeze),
 * then from the vendor's CQ; every completion returned retires its logged
 * work request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

/**
 * ibckpt_cq_create() - create a shadow CQ and the vendor's CQ behind it
 * @ctx: the shadow context
 * @init: how the application created it (its channel: the application's,
 *	or NULL); kept for a re-creation, set before the CQ is published
 *	(a release may come at once)
 * @ex: created by ibv_create_cq_ex()
 * @make: creates the vendor's CQ on @ctx->real, with the shadow as its
 *	cq_context and the real channel standing for @init->channel
 * @arg: passed to @make
 *
 * Shared by ibv_create_cq() and ibv_create_cq_ex(); libibverbs fills in the
 * shadow's public fields (context, channel, cq_context) when it returns.
 * Return: the shadow, or NULL with errno set.
 */
struct ibckpt_cq *ibckpt_cq_create(struct ibckpt_context *ctx,
				   const struct ibv_cq_init_attr_ex *init, bool ex,
				   ibckpt_make_cq_fn make, void *arg)
{
	struct ibv_comp_channel *channel = init->channel;
	struct ibckpt_cq *cq = ibckpt_zalloc_lines(sizeof(*cq));
	int err;

	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = ctx;
	cq->init = *init;
	cq->ex = ex;
	cq->wc_flags = ex ? init->wc_flags : 0;
	ibckpt_spin_init(&cq->lock);
	/* CQs come and go inside the gate: the control thread walks them while closed. */
	err = ibckpt_gate_enter(&ctx->gate);
	if (err) {
		free(cq);
		errno = err;
		return NULL;
	}
	if (channel) {
		err = ibckpt_channel_get(ctx, channel, &cq->chan);
		if (err)
			goto err_free;
	}
	cq->real = make(cq, cq->chan ? cq->chan->real : NULL, arg);
	if (!cq->real) {
		err = errno;
		goto err_chan;
	}
	err = ibckpt_vcq_init(&cq->vcq, (uint32_t)cq->real->cqe);
	if (err)
		goto err_cq;
	cq->ibv_cq.cqe = cq->real->cqe;
	cq->ibv_cq.handle = cq->real->handle;
	pthread_mutex_lock(&ctx->lock);
	cq->next = ctx->cqs;
	ctx->cqs = cq;
	/* what the context's other CQs look at already (ibckpt_ctx_slow_polls()) */
	atomic_init(&cq->slow, (ctx->remapped ? IBCKPT_CQ_REMAPPED : 0) |
			       (ctx->mw2 ? IBCKPT_CQ_WINDOWS : 0));
	pthread_mutex_unlock(&ctx->lock);
	ibckpt_obj_add(ctx, &cq->obj, IBCKPT_SNAP_CQ);
	ibckpt_gate_exit(&ctx->gate);
	return cq;

err_cq:
	ibv_destroy_cq(cq->real);
err_chan:
	if (cq->chan)
		ibckpt_channel_put(cq);		/* no event yet: nothing to purge */
err_free:
	ibckpt_gate_exit(&ctx->gate);
	free(cq);
	errno = err;
	return NULL;
}

struct make_cq_args {
	int cqe, comp_vector;
};

static struct ibv_cq *make_cq(struct ibckpt_cq *cq, struct ibv_comp_channel *real_channel,
			      void *arg)
{
	const struct make_cq_args *a = arg;

	return ibv_create_cq(cq->ctx->real, a->cqe, cq, real_channel, a->comp_vector);
}

struct ibv_cq *ibckpt_create_cq(struct ibv_context *context, int cqe,
				struct ibv_comp_channel *channel, int comp_vector)
{
	struct make_cq_args a = { .cqe = cqe, .comp_vector = comp_vector };
	struct ibv_cq_init_attr_ex init = { .cqe = (uint32_t)cqe, .channel = channel,
					    .comp_vector = (uint32_t)comp_vector };
	struct ibckpt_cq *cq = ibckpt_cq_create(to_ictx(context), &init, false, make_cq, &a);

	return cq ? &cq->ibv_cq : NULL;
}

/*
 * After the vendor's CQ is destroyed: the CQ's unread completion and async
 * events leave their pipes, then the events the application obtained are
 * waited for, as libibverbs' own destroy waits for the kernel's count: until then
 * the application may still hold the CQ's pointer from an event (and call
 * ibv_ack_*() on it). Return: whether the shadow may be freed.
 */
static bool cq_events_done(struct ibckpt_cq *cq)
{
	if (cq->chan && !ibckpt_channel_put(cq)) {
		fprintf(stderr, "ibckpt: cannot read the completion channel (through /proc); "
			"a destroyed CQ's unread event stays in it, and the CQ's memory with it\n");
		return false;
	}
	ibckpt_await_acks(&cq->ibv_cq.mutex, &cq->ibv_cq.cond, &cq->ibv_cq.comp_events_completed,
			  cq->events_sent);
	if (!ibckpt_async_put(cq->ctx, &cq->ibv_cq, &cq->async_sent, &cq->async_seen))
		return false;
	ibckpt_await_acks(&cq->ibv_cq.mutex, &cq->ibv_cq.cond, &cq->ibv_cq.async_events_completed,
			  cq->async_sent);
	return true;
}

int ibckpt_destroy_cq(struct ibv_cq *ibcq)
{
	struct ibckpt_cq *cq = to_icq(ibcq), **p;
	struct ibckpt_context *ctx = cq->ctx;
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_destroy_cq(cq->real);
	if (ret) {
		ibckpt_gate_exit(&ctx->gate);
		return ret;
	}
	pthread_mutex_lock(&ctx->lock);
	for (p = &ctx->cqs; *p; p = &(*p)->next) {
		if (*p == cq) {
			*p = cq->next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	ibckpt_obj_del(ctx, &cq->obj);
	ibckpt_spin_lock(&cq->lock);
	ibckpt_cq_orphans_drop(cq);		/* their completions went with it */
	ibckpt_spin_unlock(&cq->lock);
	ibckpt_gate_exit(&ctx->gate);
	if (!cq_events_done(cq))
		return 0;
	ibckpt_vcq_destroy(&cq->vcq);
	free(cq);
	return 0;
}

/* After a restart a completion names the vendor's QPN: the application's instead. */
static inline void wc_remap(struct ibckpt_context *ctx, struct ibckpt_cq *cq, struct ibv_wc *wc)
{
	/*
	 * One of this CQ's: the shadow is alive under its lock (the vendor's
	 * QP may not be: a destroy frees it first).
	 */
	const struct ibckpt_qp *qp = cq->last_qp;

	if (qp && qp->real_qpn == wc->qp_num) {
		wc->qp_num = qp->vqp.qp.qp_num;
		ibckpt_wc_ud_source(ctx, qp, wc);
	} else {
		ibckpt_spin_lock(&ctx->qpn_lock);
		ibckpt_wc_to_virtual(ctx, wc, 1);
		ibckpt_spin_unlock(&ctx->qpn_lock);
	}
}

/*
 * After a restart, with nothing else to look at (cq->slow is
 * IBCKPT_CQ_REMAPPED alone, no orphan): nothing is taken out, and a
 * completion of the CQ's last QP, not UD (whose sender is translated too),
 * is translated and retired in one step, by the QP it names; any other as
 * retire_slow() would (retire_remapped_one(), out of line: the loop keeps
 * few registers). Return: @n.
 */
static NOINLINE void retire_remapped_one(struct ibckpt_context *ctx,
							   struct ibckpt_cq *cq, struct ibv_wc *wc)
{
	wc_remap(ctx, cq, wc);
	ibckpt_qp_retire(ctx, cq, wc);
}

static inline ALWAYS_INLINE int retire_remapped(struct ibckpt_context *ctx,
								  struct ibckpt_cq *cq,
								  struct ibv_wc *wc, int n)
{
	struct ibckpt_qp *qp;
	int i;

	for (i = 0; i < n; i++) {
		qp = cq->last_qp;
		if (likely(qp && qp->real_qpn == wc[i].qp_num &&
			   qp->vqp.qp.qp_type != IBV_QPT_UD)) {
			wc[i].qp_num = qp->vqp.qp.qp_num;
			ibckpt_qp_retire_into(qp, cq, &wc[i]);
		} else {
			retire_remapped_one(ctx, cq, &wc[i]);	/* another QP, or UD */
		}
	}
	return n;
}

/*
 * A CQ whose completions are looked at one by one (cq->slow: the bits
 * @slow, read once; qp_internal.c and mw.c say why). After a restart each
 * is translated, then retired, so that the CQ's last QP translates the run
 * of completions that follows it, as it retires them, without the
 * context's table and its lock (a line every poller of the context would
 * write; only a completion of another QP takes them). In a context with
 * type 2 windows a receive is checked for a peer's invalidation of one.
 * While a provider-internal request is outstanding on a queue completing
 * here, or an orphan of one, its completion is retired and taken out, and
 * the vendor is asked again for as many as were taken out, until it has no
 * more, so that the application's completions behind one are not left for
 * its next poll (which an application woken by the CQ's event, or polling
 * one at a time as cq_ex does, would not make): never more than the @n it
 * returned, so never more than the poll asked for. Return: how many are
 * left, in order, at the front of @wc.
 */
static NOINLINE int retire_slow(struct ibckpt_context *ctx,
						  struct ibckpt_cq *cq, struct ibv_wc *wc,
						  int n, unsigned int slow)
{
	int i, k = 0, at = 0, end = n;

	if (slow == IBCKPT_CQ_REMAPPED && !cq->orphans)
		return retire_remapped(ctx, cq, wc, n);
	for (;;) {
		for (i = at; i < end; i++) {
			if (cq->orphans && ibckpt_cq_orphan(cq, &wc[i]))	/* vendor's QPN */
				continue;
			if (slow & IBCKPT_CQ_REMAPPED)
				wc_remap(ctx, cq, &wc[i]);
			if (slow & IBCKPT_CQ_WINDOWS)
				ibckpt_mw_wc(ctx, &wc[i]);
			if (!(slow & IBCKPT_CQ_INTERNAL))
				ibckpt_qp_retire(ctx, cq, &wc[i]);
			else if (!ibckpt_qp_retire_checked(ctx, cq, &wc[i]))
				continue;
			if (k != i)
				wc[k] = wc[i];
			k++;
		}
		if (k == end)		/* none taken out */
			return k;
		at = k;
		n = ibv_poll_cq(cq->real, end - k, wc + k);
		if (n <= 0)
			return k;
		end = k + n;
	}
}

/*
 * Retires what the vendor returned, under the CQ's lock (a poll's, the CQ
 * open, or the control thread's drain).
 * One load decides: all of them retired here, or each looked at
 * (retire_slow()). Return: how many completions are the application's
 * (all of them, but while an internal request is outstanding), at the
 * front of @wc.
 */
static inline int retire_locked(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
				struct ibv_wc *wc, int n)
{
	unsigned int slow = atomic_load_explicit(&cq->slow, memory_order_relaxed);
	int i;

	if (unlikely(slow != 0))
		return retire_slow(ctx, cq, wc, n, slow);
	for (i = 0; i < n; i++)
		ibckpt_qp_retire(ctx, cq, &wc[i]);
	return n;
}

/**
 * ibckpt_cq_internal() - count an internal request outstanding on a queue of @cq, or done
 * @cq: the send CQ of the request's QP; its lock held
 * @d: 1 (posted) or -1 (completed, or its completion cannot come)
 */
void ibckpt_cq_internal(struct ibckpt_cq *cq, int d)
{
	cq->internal += (uint32_t)d;
	if (d > 0 && cq->internal == 1)
		atomic_fetch_or_explicit(&cq->slow, IBCKPT_CQ_INTERNAL, memory_order_relaxed);
	else if (d < 0 && !cq->internal)
		atomic_fetch_and_explicit(&cq->slow, ~IBCKPT_CQ_INTERNAL, memory_order_relaxed);
}

/**
 * ibckpt_ctx_slow_polls() - every CQ of a context looks at its completions, or stops
 * @ctx: the context
 * @bit: IBCKPT_CQ_REMAPPED or IBCKPT_CQ_WINDOWS
 * @on: set or clear it
 *
 * Context: ctx->lock held (CQs created meanwhile take the context's bits
 * under it). A poll in flight may not see the change: a restart sets
 * IBCKPT_CQ_REMAPPED with the gates closed, and a window can be
 * invalidated only once a bind posted after its allocation completed.
 */
void ibckpt_ctx_slow_polls(struct ibckpt_context *ctx, unsigned int bit, bool on)
{
	struct ibckpt_cq *cq;

	for (cq = ctx->cqs; cq; cq = cq->next) {
		if (on)
			atomic_fetch_or_explicit(&cq->slow, bit, memory_order_release);
		else
			atomic_fetch_and_explicit(&cq->slow, ~bit, memory_order_release);
	}
}

/**
 * ibckpt_cq_forget_qp() - a QP is going: the CQ no longer remembers it
 * @ibcq: one of its CQs (the application's), or NULL
 * @qp: the QP, out of the context's table already
 *
 * Under the CQ's lock: a poller retiring into @qp finishes first, and no
 * later one finds it.
 */
void ibckpt_cq_forget_qp(struct ibv_cq *ibcq, struct ibckpt_qp *qp)
{
	struct ibckpt_cq *cq;

	if (!ibcq)
		return;
	cq = to_icq(ibcq);
	ibckpt_spin_lock(&cq->lock);
	if (cq->last_qp == qp)
		cq->last_qp = NULL;
	ibckpt_spin_unlock(&cq->lock);
}

/*
 * Under the CQ's lock: the completion a drain held aside (cq->spill) goes
 * behind the private queue, grown if it is full. Return: 0 or ENOMEM.
 */
static int spill_back(struct ibckpt_cq *cq)
{
	if (ibckpt_vcq_count(&cq->vcq) == cq->vcq.size && ibckpt_vcq_grow(&cq->vcq))
		return ENOMEM;
	ibckpt_vcq_push(&cq->vcq, &cq->spill, 1);
	cq->spilled = false;
	return 0;
}

/* After a thaw: what was drained comes first, in order, then the vendor's. Under the lock. */
static NOINLINE int poll_drained_first(struct ibckpt_cq *cq, int ne,
							 struct ibv_wc *wc)
{
	int n, r;

	if (ne <= 0)
		return ibv_poll_cq(cq->real, ne, wc);
	/* Drained before a freeze and already retired. */
	n = (int)ibckpt_vcq_pop(&cq->vcq, wc, (uint32_t)ne);
	if (cq->spilled && !spill_back(cq))	/* room now: it was just popped */
		n += (int)ibckpt_vcq_pop(&cq->vcq, wc + n, (uint32_t)(ne - n));
	if (n == ne)
		return n;
	r = ibv_poll_cq(cq->real, ne - n, wc + n);
	if (r > 0)
		r = retire_locked(cq->ctx, cq, wc + n, r);
	return r < 0 ? (n ? n : r) : n + r;
}

/* A poll refused (fork.c): out of line, the fast path keeps its registers. */
static NOINLINE COLD int poll_refused(int err)
{
	errno = err;
	return -1;
}

/* poll_retire_unlock() for a CQ whose completions are looked at (cq->slow). */
static NOINLINE int poll_slow_unlock(struct ibckpt_cq *cq, struct ibv_wc *wc,
						      int n, unsigned int slow)
{
	n = retire_slow(cq->ctx, cq, wc, n, slow);
	ibckpt_spin_unlock_raw(&cq->lock);
	return n;
}

/*
 * What a poll found, retired; then the CQ's lock released. Out of line and
 * reached by a tail call: an empty poll, most of a busy loop's, keeps few
 * registers. The one test of cq->slow sends the rest away, by a tail call
 * too: here every completion is the application's, and the count stays.
 */
static NOINLINE int poll_retire_unlock(struct ibckpt_cq *cq, struct ibv_wc *wc,
							int n)
{
	struct ibckpt_context *ctx = cq->ctx;
	unsigned int slow;
	int i;

	slow = atomic_load_explicit(&cq->slow, memory_order_relaxed);
	if (unlikely(slow != 0))
		return poll_slow_unlock(cq, wc, n, slow);
	for (i = 0; i < n; i++)
		ibckpt_qp_retire(ctx, cq, &wc[i]);
	ibckpt_spin_unlock_raw(&cq->lock);
	return n;
}

/*
 * poll_retire_unlock() of a remapped context's polls (ibckpt_poll_cq_xl()):
 * with nothing but the translation to do (cq->slow is IBCKPT_CQ_REMAPPED
 * alone, no orphan), the completions are translated and retired here, in
 * one pass; anything else as poll_retire_unlock() would.
 */
static NOINLINE int poll_retire_xl_unlock(struct ibckpt_cq *cq,
							   struct ibv_wc *wc, int n)
{
	unsigned int slow = atomic_load_explicit(&cq->slow, memory_order_relaxed);

	if (unlikely(slow != IBCKPT_CQ_REMAPPED || cq->orphans))
		return slow ? poll_slow_unlock(cq, wc, n, slow) : poll_retire_unlock(cq, wc, n);
	retire_remapped(cq->ctx, cq, wc, n);
	ibckpt_spin_unlock_raw(&cq->lock);
	return n;
}

/*
 * A poll of a CQ marked IBCKPT_Q_DRAINED: its private queue first. Once
 * that is served, the mark goes, unless a closer replaced it meanwhile
 * (spinlock.h).
 */
static NOINLINE int poll_drained_unlock(struct ibckpt_cq *cq, int ne,
							 struct ibv_wc *wc)
{
	int n = poll_drained_first(cq, ne, wc);
	unsigned int drained = IBCKPT_Q_DRAINED;

	if (!ibckpt_cq_drained(cq))
		atomic_compare_exchange_strong_explicit(&cq->lock.closed, &drained, 0,
							memory_order_relaxed,
							memory_order_relaxed);
	ibckpt_spin_unlock_raw(&cq->lock);
	return n;
}

/*
 * The CQ's flag set, under its lock: drained (its private queue first), or
 * closed by a quiesce (quiesce.c): wait, then poll.
 */
static NOINLINE int poll_closed(struct ibckpt_cq *cq, int ne, struct ibv_wc *wc)
{
	int err;

	/* acquire: a drain's private queue, which the opening's store of DRAINED releases */
	if (atomic_load_explicit(&cq->lock.closed, memory_order_acquire) == IBCKPT_Q_DRAINED)
		return poll_drained_unlock(cq, ne, wc);
	ibckpt_spin_unlock_raw(&cq->lock);
	err = ibckpt_gate_wait_queue(&cq->ctx->gate, &cq->lock.closed);
	if (err)
		return poll_refused(err);
	/* a restart may have come meanwhile (either entry polls either way) */
	if (cq->ctx->remapped)
		return ibckpt_poll_cq_xl(&cq->ibv_cq, ne, wc);
	return ibckpt_poll_cq(&cq->ibv_cq, ne, wc);
}

/*
 * The vendor's poll and the private queue's service under the CQ's lock,
 * which a quiesce takes to close the CQ (quiesce.c): no thread is inside
 * the vendor's poll once it is closed. What the vendor returned goes to
 * @retire_unlock, by a tail call (inlined into each entry, the call is a
 * direct one).
 */
static inline ALWAYS_INLINE int
poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc,
	int (*retire_unlock)(struct ibckpt_cq *cq, struct ibv_wc *wc, int n))
{
	struct ibckpt_cq *cq = to_icq(ibcq);
	int n;

	ibckpt_spin_lock_raw(&cq->lock);
	/* closed by a quiesce, or its private queue not empty (spinlock.h) */
	if (unlikely(ibckpt_q_closed(&cq->lock.closed)))
		return poll_closed(cq, ne, wc);
	n = ibv_poll_cq(cq->real, ne, wc);
	if (n > 0)
		return retire_unlock(cq, wc, n);
	ibckpt_spin_unlock_raw(&cq->lock);
	return n;
}

int ibckpt_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	return poll_cq(ibcq, ne, wc, poll_retire_unlock);
}

/**
 * ibckpt_poll_cq_xl() - poll_cq of a remapped context
 * @ibcq: the shadow CQ
 * @ne: completions wanted
 * @wc: where they go, naming virtual QPNs
 *
 * ibckpt_poll_cq() whose completions go to poll_retire_xl_unlock(): a
 * restart sets it in the context's ops (ibckpt_ctx_set_remapped()), so
 * that translating them costs no more calls than retiring them does.
 * Return: the completions, or -1 with errno set.
 */
int ibckpt_poll_cq_xl(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	return poll_cq(ibcq, ne, wc, poll_retire_xl_unlock);
}

/**
 * ibckpt_cq_drain() - move what the vendor's CQ holds into the private queue
 * @cq: the CQ; its context's gate is closed, so no application thread polls
 * @moved: incremented by the completions moved
 *
 * Retires the completions' logged requests, as a poll would; a
 * provider-internal request's completion (qp_internal.c) is retired and
 * dropped, an orphan's dropped, and the orphans whose completions did not
 * come are forgotten once the vendor's CQ is empty (no poller holds one
 * taken from it). Everything the vendor's CQ holds is taken. A private queue
 * found full (the application polled nothing since an earlier freeze)
 * doubles once the vendor shows one more: those requests were executed
 * too, and left in the vendor's CQ they would stay in the logs, for a
 * restart to run again. Without memory for it, that one completion waits
 * in cq->spill (served right behind the private queue) and the drain
 * fails.
 * Return: 0, or ENOMEM (nothing lost; the rest stays the vendor's).
 */
int ibckpt_cq_drain(struct ibckpt_cq *cq, uint32_t *moved)
{
	struct ibv_wc wc[32];
	uint32_t space;
	int n, err = 0;

	ibckpt_spin_lock(&cq->lock);
	if (cq->spilled && spill_back(cq)) {	/* an earlier drain's, nothing polled since */
		ibckpt_spin_unlock(&cq->lock);
		return ENOMEM;
	}
	while (!cq->spilled) {
		space = cq->vcq.size - ibckpt_vcq_count(&cq->vcq);
		n = ibv_poll_cq(cq->real, space ? (space < 32 ? (int)space : 32) : 1, wc);
		if (n < 0)
			break;
		if (!n) {
			/* no poller holds one of theirs: the gate is closed */
			if (cq->orphans)
				ibckpt_cq_orphans_drop(cq);
			break;
		}
		n = retire_locked(cq->ctx, cq, wc, n);	/* an internal request's dropped */
		if (!n)
			continue;
		if (!space && ibckpt_vcq_grow(&cq->vcq)) {
			cq->spill = wc[0];
			cq->spilled = true;
			err = ENOMEM;
		} else {
			ibckpt_vcq_push(&cq->vcq, wc, (uint32_t)n);
		}
		*moved += (uint32_t)n;
	}
	if (ibckpt_cq_drained(cq)) {
		/* polls serve it first: now if open, else once opened (quiesce.c) */
		unsigned int open = 0;

		atomic_compare_exchange_strong_explicit(&cq->lock.closed, &open, IBCKPT_Q_DRAINED,
							memory_order_relaxed,
							memory_order_relaxed);
	}
	ibckpt_spin_unlock(&cq->lock);
	return err;
}

int ibckpt_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct ibckpt_cq *cq = to_icq(ibcq);
	int ret = ibv_req_notify_cq(cq->real, solicited_only);

	if (!ret)
		atomic_store_explicit(&cq->armed, true, memory_order_relaxed);
	return ret;
}

/*
 * Called by ibv_get_cq_event() on the shadow, after it read the event from
 * our pipe; the forwarder already did the vendor's part. Counted so that a
 * destroy knows whether events of the CQ are still in the pipe.
 */
void ibckpt_cq_event(struct ibv_cq *ibcq)
{
	atomic_fetch_add_explicit(&to_icq(ibcq)->events_seen, 1, memory_order_relaxed);
}

int ibckpt_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ibckpt_cq *cq = to_icq(ibcq);
	struct ibckpt_vcq vcq;
	int ret;

	/* Inside the gate: the CQ is open (polls read the private queue under its lock). */
	ret = ibckpt_gate_enter(&cq->ctx->gate);
	if (ret)
		return ret;
	ret = ibv_resize_cq(cq->real, cqe);
	if (ret)
		goto out;
	/* The private queue must hold what the CQ can: grow it along. */
	if ((uint32_t)cq->real->cqe > cq->vcq.size) {
		if (ibckpt_vcq_init(&vcq, (uint32_t)cq->real->cqe)) {
			ret = ENOMEM;
			goto out;
		}
		ibckpt_spin_lock(&cq->lock);
		ibckpt_vcq_replace(&cq->vcq, &vcq);
		ibckpt_spin_unlock(&cq->lock);
	}
	ibcq->cqe = cq->real->cqe;
out:
	ibckpt_gate_exit(&cq->ctx->gate);
	return ret;
}

/*
 * Restart (restart.h). The private queue stays: what was drained is the
 * application's, first, after the reacquire as after a thaw. What the
 * vendor's CQ still holds when it goes are the flushes of the QPs destroyed
 * before it: their requests stay logged, to be posted again.
 */
void ibckpt_cq_release(struct ibckpt_cq *cq)
{
	if (cq->real && ibv_destroy_cq(cq->real))
		ibckpt_dbg("release: the vendor kept a CQ busy");
	cq->real = NULL;
	ibckpt_spin_lock(&cq->lock);
	ibckpt_cq_orphans_drop(cq);		/* their completions went with it */
	ibckpt_spin_unlock(&cq->lock);
	/* armed, and what would have raised its event was drained: it is owed one */
	if (cq->chan && atomic_load(&cq->armed) && !ibckpt_vcq_empty(&cq->vcq))
		ibckpt_channel_notify(cq);
}

int ibckpt_cq_recreate(struct ibckpt_cq *cq)
{
	struct ibckpt_context *ctx = cq->ctx;
	struct ibv_comp_channel *chan = NULL;
	struct ibv_cq_init_attr_ex a = cq->init;

	/*
	 * The size the application has now: what the vendor granted (rounded
	 * up, or resized since), which it sized its queues against.
	 */
	a.cqe = (uint32_t)cq->ibv_cq.cqe;
	if (cq->chan) {
		chan = ibckpt_channel_recreate(ctx, cq->chan);
		if (!chan)
			return errno;
	}
	if (cq->ex) {
		struct ibv_cq_ex *x;

		a.channel = chan;
		a.cq_context = cq;
		x = ibv_create_cq_ex(ctx->real, &a);
		cq->real = x ? ibv_cq_ex_to_cq(x) : NULL;
	} else {
		cq->real = ibv_create_cq(ctx->real, (int)a.cqe, cq, chan, (int)a.comp_vector);
	}
	if (!cq->real) {
		ibckpt_restart_err("CQ of %u entries: %s", a.cqe, strerror(errno));
		return errno;
	}
	if (cq->real->cqe < cq->ibv_cq.cqe) {
		ibckpt_restart_err("CQ: the device grants %d entries, %d before", cq->real->cqe,
				   cq->ibv_cq.cqe);
		ibv_destroy_cq(cq->real);
		cq->real = NULL;
		return ENOSPC;
	}
	cq->ibv_cq.handle = cq->real->handle;
	/* Armed and not delivered: the application still waits for its event. */
	if (atomic_load(&cq->armed) && ibv_req_notify_cq(cq->real, 0)) {
		ibckpt_restart_err("CQ: re-arming: %s", strerror(errno));
		return errno;
	}
	return 0;
}

/* Completions name the vendor's QPs: the application knows them by their virtual QPNs. */
/**
 * ibckpt_wc_ud_source() - a UD receive names its sender as its application knows it
 * @ctx: the completion's context (remapped)
 * @qp: the completion's QP, or NULL
 * @wc: the completion, its QPN already virtual
 *
 * The sender's QPN and LID are translated to their virtual ones; any other
 * completion is left alone. Reads only what a restart writes (gates closed).
 */
void ibckpt_wc_ud_source(struct ibckpt_context *ctx, const struct ibckpt_qp *qp,
			 struct ibv_wc *wc)
{
	uint32_t src;

	if (!qp || qp->vqp.qp.qp_type != IBV_QPT_UD || !(wc->opcode & IBV_WC_RECV))
		return;
	if (ibckpt_remap_src_qp(wc->src_qp, &src))
		wc->src_qp = src;
	wc->slid = ibckpt_lid_to_virtual(&ctx->addrs, wc->slid);
}

void ibckpt_wc_to_virtual(struct ibckpt_context *ctx, struct ibv_wc *wc, int n)
{
	const struct ibckpt_vid *v;
	int i;

	for (i = 0; i < n; i++) {
		v = ibckpt_vidmap_find(&ctx->qpn_virt, wc[i].qp_num, 0);
		if (v)
			wc[i].qp_num = v->real;
		else
			v = ibckpt_vidmap_find(&ctx->qpns, wc[i].qp_num, 0);	/* new since */
		ibckpt_wc_ud_source(ctx, v ? v->obj : NULL, &wc[i]);
	}
}
