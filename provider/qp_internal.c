// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider-internal requests on an application's QP: a request the
 * provider posts on the application's own send queue (a fence at a
 * release, a window bound again at a reacquire), whose completion lands in
 * the application's CQ and must not reach the application.
 *
 * Such a request is logged in the QP's send log like any other, so that
 * everything the log says stays right: the PSNs the queue's requests take
 * (psn_sum), the retirement of the unsignaled requests before it by its
 * completion, and a snapshot's view of the queue. It is always signaled,
 * one at a time per QP, with a wr_id of the provider's (the address of
 * qp->internal), and posted only by the control thread with the context's
 * gate closed: no application thread posts or polls meanwhile.
 *
 * Its completion is told from the application's by what the completion
 * retires, not by its wr_id alone (an application may use any wr_id): a
 * successful send completion retires through the oldest live signaled
 * request, a failed one through the oldest live request with its wr_id
 * (wrlog.h). It is the internal request's if that request is the one in
 * the slot the internal request took, and the wr_id is the provider's.
 * While one is outstanding on a queue, its CQ's count (cq->internal) sends
 * every poll and drain of that CQ through ibckpt_qp_retire_checked(), one
 * completion at a time; with none (always, but between a fence that did
 * not complete in time and its completion) a poll pays one load for it.
 *
 * The wr_id is the address of a token of the QP's (struct
 * ibckpt_internal_tok), allocated at its first internal request and kept
 * for the next ones. A QP reset or destroyed with one outstanding
 * (ibckpt_qp_internal_forget()) may have left its completion in the CQ
 * already: neither the reset nor the destroy takes it out (Linux 6.1's
 * rxe does not), and the slot it would retire is gone. Its token then
 * becomes an orphan of the CQ, still counted in cq->internal, and the
 * first completion with its wr_id and the vendor's QPN it was posted on is
 * dropped (ibckpt_cq_orphan()). The token stays allocated meanwhile, so
 * that no object of the application's, nor a later QP's token, can be at
 * its address. An orphan whose completion never came (the request was
 * not executed before the reset) goes at the next drain that empties the
 * vendor's CQ with the context's gate closed (ibckpt_cq_drain(): a freeze,
 * a release), when no poller can hold its completion, or with the CQ.
 *
 * Locking: qp->internal belongs to the lock of the QP's send CQ (pollers
 * read it there); the send log's lock is taken inside it, as the exact
 * retirement does (qp.c).
 */
#include <errno.h>
#include <time.h>
#include "ibckpt.h"

/**
 * ibckpt_qp_internal_post() - post a provider-internal request on an application's QP
 * @qp: an RC, UC or UD QP with a send queue, of a context whose gate is
 *	closed (no application thread posts to it or polls its CQs); on the
 *	control thread
 * @wr: one request in the vendor's terms: real keys and objects, posted
 *	as it is (never translated) and logged as it is. Its wr_id and
 *	IBV_SEND_SIGNALED are set here, in a copy (@wr is only read)
 *
 * The request is logged on the send queue like the application's (its
 * PSNs counted, its completion retiring the unsignaled requests before
 * it), then posted. Its completion never reaches the application: the
 * drain (ibckpt_cq_drain()) and every poll retire it and drop it, however
 * late it comes. Being signaled, it holds a release back until it
 * completed (ibckpt_qp_release_check()), so a reacquire never posts it
 * again.
 *
 * Return: 0; EBUSY if an internal request of the QP is still outstanding;
 * EINVAL if the QP has no send queue; ENOMEM for its token; or the log's
 * or the vendor's error (nothing posted).
 */
int ibckpt_qp_internal_post(struct ibckpt_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr w = *wr, *bad = NULL;
	struct ibckpt_cq *cq;
	int err;

	if (!qp->real || !qp->sq.wr || !qp->vqp.qp.send_cq)
		return EINVAL;
	cq = to_icq(qp->vqp.qp.send_cq);
	w.next = NULL;
	w.wr_id = ibckpt_qp_internal_wr_id(qp);
	w.send_flags |= IBV_SEND_SIGNALED;
	if (!w.wr_id)
		return ENOMEM;
	ibckpt_spin_lock(&cq->lock);
	if (qp->internal.pending) {
		ibckpt_spin_unlock(&cq->lock);
		return EBUSY;
	}
	qp->internal.tok->qpn = qp->real->qp_num;
	ibckpt_spin_lock(&qp->sq_lock);
	err = ibckpt_wrlog_send(&qp->sq, &w);
	if (!err) {
		err = ibv_post_send(qp->real, &w, &bad);
		/* a vendor failing without naming it queued it (qp_post.c): it runs */
		if (err && bad)
			ibckpt_wrlog_unpost(&qp->sq, 1);
		else
			err = 0;
		if (err < 0)	/* rdma-core 44's rxe: -ENOMEM for a full queue */
			err = -err;
	}
	if (!err) {
		qp->internal.wr_id = w.wr_id;
		qp->internal.pos = qp->sq.tail - 1;
		qp->internal.pending = true;
		qp->internal.status = IBV_WC_SUCCESS;
		ibckpt_cq_internal(cq, 1);
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_spin_unlock(&cq->lock);
	return err;
}

static uint64_t us_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000000u +
	       (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000);
}

/**
 * ibckpt_qp_internal_check() - has the QP's internal request completed?
 * @qp: as for ibckpt_qp_internal_post()
 * @pending: set if it is still outstanding
 * @status: set to the last one's status, once completed
 *
 * One drain of the QP's send CQ (ibckpt_cq_drain(): the application's
 * completions go to its private queue, in order), then a look.
 * Return: 0, or ENOMEM from the drain (nothing known).
 */
int ibckpt_qp_internal_check(struct ibckpt_qp *qp, bool *pending, enum ibv_wc_status *status)
{
	struct ibckpt_cq *cq = to_icq(qp->vqp.qp.send_cq);
	uint32_t moved = 0;
	int err;

	err = ibckpt_cq_drain(cq, &moved);
	if (err)
		return err;
	ibckpt_spin_lock(&cq->lock);
	*pending = qp->internal.pending;
	*status = qp->internal.status;
	ibckpt_spin_unlock(&cq->lock);
	return 0;
}

/**
 * ibckpt_qp_internal_wait() - wait for the QP's internal request to complete
 * @qp: as for ibckpt_qp_internal_post()
 * @timeout_ms: how long at most
 *
 * Drains the QP's send CQ (ibckpt_cq_drain(): the application's
 * completions go to its private queue, in order) until the internal
 * request's completion was seen, napping between drains (20 us, doubling
 * up to 1 ms).
 * Return: 0 if it completed successfully, or if none is outstanding and
 * the last one did; EIO if it completed in error (the QP failed: the
 * application's requests were flushed to it); ETIMEDOUT if it did not
 * complete in time (it stays outstanding; its completion is still dropped
 * whenever it comes); ENOMEM from the drain.
 */
int ibckpt_qp_internal_wait(struct ibckpt_qp *qp, unsigned int timeout_ms)
{
	enum ibv_wc_status status;
	struct timespec t0, nap;
	uint64_t us, left;
	uint32_t step = 20;
	bool pending;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		err = ibckpt_qp_internal_check(qp, &pending, &status);
		if (err)
			return err;
		if (!pending)
			return status == IBV_WC_SUCCESS ? 0 : EIO;
		us = us_since(&t0);
		if (us >= (uint64_t)timeout_ms * 1000u)
			return ETIMEDOUT;
		left = (uint64_t)timeout_ms * 1000u - us;
		nap.tv_sec = 0;
		nap.tv_nsec = (long)(left < step ? left : step) * 1000;
		nanosleep(&nap, NULL);
		if (step < 1000)
			step *= 2;
	}
}

/**
 * ibckpt_qp_post_internal() - post an internal request and wait for it
 * @qp: as for ibckpt_qp_internal_post()
 * @wr: likewise
 * @timeout_ms: as for ibckpt_qp_internal_wait()
 *
 * Return: ibckpt_qp_internal_post()'s error, else ibckpt_qp_internal_wait()'s.
 */
int ibckpt_qp_post_internal(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
			    unsigned int timeout_ms)
{
	int err = ibckpt_qp_internal_post(qp, wr);

	return err ? err : ibckpt_qp_internal_wait(qp, timeout_ms);
}

/* Is an internal request of @qp outstanding? */
bool ibckpt_qp_internal_pending(struct ibckpt_qp *qp)
{
	struct ibckpt_cq *cq;
	bool pending;

	if (!qp->vqp.qp.send_cq)
		return false;
	cq = to_icq(qp->vqp.qp.send_cq);
	ibckpt_spin_lock(&cq->lock);
	pending = qp->internal.pending;
	ibckpt_spin_unlock(&cq->lock);
	return pending;
}

/**
 * ibckpt_qp_internal_wr_id() - the wr_id of the QP's internal requests
 * @qp: a QP with a send queue; on the control thread, or the QP going
 *
 * Its token, allocated at the first call (after a reset or destroy with
 * one outstanding, a new one: the old one is its CQ's orphan).
 * Return: the wr_id, or 0 without memory.
 */
uint64_t ibckpt_qp_internal_wr_id(struct ibckpt_qp *qp)
{
	if (!qp->internal.tok)
		qp->internal.tok = malloc(sizeof(*qp->internal.tok));
	return (uintptr_t)qp->internal.tok;
}

/**
 * ibckpt_qp_internal_forget() - the QP's internal request will not complete
 * @qp: a QP destroyed, or reset (its queue emptied without completions)
 *
 * Its completion may be in the CQ already: the request's token stays the
 * CQ's, an orphan, until that completion or the CQ is gone (above).
 */
void ibckpt_qp_internal_forget(struct ibckpt_qp *qp)
{
	struct ibckpt_internal_tok *tok;
	struct ibckpt_cq *cq;

	if (!qp->vqp.qp.send_cq)
		return;
	cq = to_icq(qp->vqp.qp.send_cq);
	ibckpt_spin_lock(&cq->lock);
	if (qp->internal.pending) {
		tok = qp->internal.tok;
		tok->next = cq->orphans;
		cq->orphans = tok;
		qp->internal.tok = NULL;
		qp->internal.pending = false;
		qp->internal.status = IBV_WC_WR_FLUSH_ERR;
		ibckpt_dbg("QP %u: an internal request outstanding at a reset or destroy: its "
			   "completion, if any, is dropped", qp->vqp.qp.qp_num);
	}
	ibckpt_spin_unlock(&cq->lock);
}

/**
 * ibckpt_qp_internal_gone() - the QP's shadow is freed
 * @qp: destroyed: its vendor QP too
 */
void ibckpt_qp_internal_gone(struct ibckpt_qp *qp)
{
	ibckpt_qp_internal_forget(qp);
	free(qp->internal.tok);		/* not an orphan: nothing names it */
	qp->internal.tok = NULL;
}

/**
 * ibckpt_cq_orphan() - is @wc the completion of an orphan of @cq? If so it goes
 * @cq: its lock held
 * @wc: a completion as the vendor gave it (its QPN the vendor's)
 */
bool ibckpt_cq_orphan(struct ibckpt_cq *cq, const struct ibv_wc *wc)
{
	struct ibckpt_internal_tok **p, *tok;

	if (wc->status == IBV_WC_SUCCESS && (wc->opcode & IBV_WC_RECV))
		return false;
	for (p = &cq->orphans; (tok = *p) != NULL; p = &tok->next) {
		if ((uintptr_t)tok != wc->wr_id || tok->qpn != wc->qp_num)
			continue;
		*p = tok->next;
		free(tok);
		ibckpt_cq_internal(cq, -1);
		ibckpt_dbg("CQ: an orphaned internal request's completion dropped (status %d)",
			   (int)wc->status);
		return true;
	}
	return false;
}

/**
 * ibckpt_cq_orphans_drop() - the orphans' completions cannot come any more
 * @cq: its lock held; its vendor CQ empty with the context's gate closed
 *	(no poller holds a completion taken from it), or gone
 */
void ibckpt_cq_orphans_drop(struct ibckpt_cq *cq)
{
	struct ibckpt_internal_tok *tok;

	while ((tok = cq->orphans) != NULL) {
		cq->orphans = tok->next;
		free(tok);
		ibckpt_cq_internal(cq, -1);
	}
}

/*
 * Under @cq's lock: is @wc the completion of @qp's internal request? If so
 * it is retired (as any completion of the queue: counted, or through its
 * slot) and the request is no longer outstanding.
 */
static bool internal_completion(struct ibckpt_qp *qp, struct ibckpt_cq *cq,
				const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS, mine;
	uint32_t pos;

	if (qp->vqp.qp.send_cq != &cq->ibv_cq || wc->wr_id != qp->internal.wr_id ||
	    (ok && (wc->opcode & IBV_WC_RECV)))
		return false;
	ibckpt_spin_lock(&qp->sq_lock);
	mine = ok ? ibckpt_wrlog_next_signaled(&qp->sq, &pos)
		  : ibckpt_wrlog_find(&qp->sq, wc->wr_id, &pos);
	mine = mine && pos == qp->internal.pos;
	if (mine && ok)
		ibckpt_wrlog_done(&qp->sq);
	else if (mine)
		ibckpt_wrlog_complete(&qp->sq, wc->wr_id, false);
	ibckpt_spin_unlock(&qp->sq_lock);
	if (mine) {
		qp->internal.pending = false;	/* its token stays, for the next one */
		qp->internal.status = wc->status;
		ibckpt_cq_internal(cq, -1);
		ibckpt_dbg("QP %u: internal request completed, status %d", qp->vqp.qp.qp_num,
			   (int)wc->status);
	}
	return mine;
}

/**
 * ibckpt_qp_retire_checked() - ibckpt_qp_retire(), internal requests' completions kept out
 * @ctx: context of the CQ
 * @cq: the CQ; its lock is held
 * @wc: a completion, its QPN the application's (virtual)
 *
 * The path of every completion of a CQ while an internal request is
 * outstanding on a queue completing to it (cq->internal).
 * Return: false if @wc was an internal request's: retired, and not the
 * application's.
 */
bool ibckpt_qp_retire_checked(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
			      struct ibv_wc *wc)
{
	struct ibckpt_qp *qp = cq->last_qp;

	if (!qp || qp->vqp.qp.qp_num != wc->qp_num) {
		qp = ibckpt_qp_lookup(ctx, cq, wc);
		if (!qp)	/* an XRC SRQ's (retired there), or a destroyed QP's */
			return true;
	}
	if (qp->internal.pending && internal_completion(qp, cq, wc))
		return false;
	ibckpt_qp_retire(ctx, cq, wc);		/* finds qp as cq->last_qp */
	return true;
}
