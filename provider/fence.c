// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The release's fence (Documentation/restart.rst, "Exactly once").
 *
 * The checks before a release prove that every request a connected QP was
 * given was transmitted (its next PSN) and received (the peer's expected
 * PSN, which the CLI compares). For a SEND or an RDMA WRITE that is all:
 * the peer executed it, and nothing comes back that the application waits
 * for. An RDMA READ or an atomic completes only when its response arrives:
 * one whose response is still on its way back (or was lost, and will be
 * asked for again after the QP's retransmission timeout) would be
 * forgotten by the release, its data or original value never written into
 * the application's buffer. So an RC QP whose live requests include a READ
 * or an atomic gets a fence behind them: a provider-internal request
 * (qp_internal.c), signaled, whose completion proves every request before
 * it completed (an RC send queue completes in order), their responses
 * landed.
 *
 * The fence must not be able to fail the QP, and the provider does not
 * know the peer's access flags. Behind a READ it is a zero-length RDMA
 * READ with that READ's rkey and address: the peer granted remote reads
 * to that READ, and a zero-length one needs neither address nor key
 * (IBTA C9-88; Linux 6.1's rxe skips the key for a zero-byte READ or
 * WRITE, check_rkey(), and checks it again only when the request is sent
 * again, where the READ's own key is valid as for the READ). Behind
 * atomics only it is a FETCH_AND_ADD of 0 at the newest atomic's target,
 * which the peer granted to that atomic; its 8-byte result lands in a page
 * of the provider's, registered on the QP's PD while the fence may still
 * complete. An add of 0 leaves the peer's value as it was; the job is
 * frozen, no thread of it runs.
 *
 * Fences are posted by the release's checks (ibckpt_qp_release_check(),
 * every QP of every context) and waited for afterwards
 * (ibckpt_fence_wait()), so that they run at once: the wait is as long as
 * the slowest, not their sum. Each is waited for a few of its QP's
 * retransmission timeouts (4.096 us << timeout) and a margin: a response
 * lost once, and the one sent again lost too, and the release is refused
 * (EBUSY; `ibckpt checkpoint` thaws and tries again). The fence stays
 * posted: the next try waits for it first, and its completion, whenever it
 * comes, is the provider's. A fence completing in error means the QP
 * failed: the application's requests were flushed to it, and the release
 * goes on with the QP in the error state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

#define FENCE_TRIES		3	/* retransmission timeouts a fence may take */
#define FENCE_MARGIN_MS		100
#define FENCE_MAX_MS		10000
/* timeout 0: a QP that never sends again; only a slow response can still come */
#define FENCE_NO_TIMEOUT_MS	1000

/* How long a fence may take on @qp. */
static unsigned int fence_ms(const struct ibckpt_qp *qp)
{
	unsigned int t = qp->hist.mask & IBV_QP_TIMEOUT ? qp->hist.attr.timeout : 0;
	uint64_t ms;

	if (!t)
		return FENCE_NO_TIMEOUT_MS;
	ms = (FENCE_TRIES * (4096ull << (t > 31 ? 31 : t)) + 999999) / 1000000 + FENCE_MARGIN_MS;
	return ms > FENCE_MAX_MS ? FENCE_MAX_MS : (unsigned int)ms;
}

static uint64_t us_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)((t.tv_sec - t0->tv_sec) * 1000000 + (t.tv_nsec - t0->tv_nsec) / 1000);
}

enum fence_kind { FENCE_NONE, FENCE_READ, FENCE_ATOMIC };

/*
 * Under sq_lock, the log settled: the fence the live requests need, in the
 * application's terms (its keys, virtual after a restart), in @w.
 */
static enum fence_kind fence_for(struct ibckpt_qp *qp, struct ibv_send_wr *w)
{
	const struct ibckpt_wr *e, *atomic = NULL;
	uint32_t i = ibckpt_wrlog_count(&qp->sq);

	while (i--) {		/* the newest first */
		e = ibckpt_wrlog_at(&qp->sq, i, NULL, NULL);
		if (e->opcode == IBV_WR_RDMA_READ) {
			*w = (struct ibv_send_wr){ .opcode = IBV_WR_RDMA_READ, .wr.rdma = e->wr.rdma };
			return FENCE_READ;
		}
		if (!atomic && (e->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
				e->opcode == IBV_WR_ATOMIC_CMP_AND_SWP))
			atomic = e;
	}
	if (!atomic)
		return FENCE_NONE;
	*w = (struct ibv_send_wr){ .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	w->wr.atomic.remote_addr = atomic->wr.atomic.remote_addr;
	w->wr.atomic.rkey = atomic->wr.atomic.rkey;
	return FENCE_ATOMIC;
}

/* The page an atomic fence's result lands in, registered on the QP's PD. */
static int fence_mr(struct ibckpt_qp *qp)
{
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (qp->fence.mr)
		return 0;
	if (posix_memalign(&qp->fence.buf, page > 0 ? (size_t)page : 4096,
			   page > 0 ? (size_t)page : 4096))
		return ENOMEM;
	qp->fence.mr = ibv_reg_mr_iova2(to_ipd(qp->vqp.qp.pd)->real, qp->fence.buf, 8,
					(uintptr_t)qp->fence.buf, IBV_ACCESS_LOCAL_WRITE);
	if (qp->fence.mr)
		return 0;
	err = errno ? errno : ENOMEM;
	free(qp->fence.buf);
	qp->fence.buf = NULL;
	return err;
}

/**
 * ibckpt_fence_put() - an atomic fence's MR is not needed any more
 * @qp: its fence completed, or its vendor QP is destroyed
 */
void ibckpt_fence_put(struct ibckpt_qp *qp)
{
	if (!qp->fence.mr)
		return;
	if (ibv_dereg_mr(qp->fence.mr)) {
		ibckpt_dbg("QP %u: the fence's MR could not be deregistered", qp->vqp.qp.qp_num);
		return;		/* kept, with its page, for a later try */
	}
	free(qp->fence.buf);
	qp->fence.mr = NULL;
	qp->fence.buf = NULL;
}

/**
 * ibckpt_fence_earlier() - an earlier try's fence (or other internal request) first
 * @qp: a QP a release checks
 *
 * A fence that did not complete when a release gave up on it is still
 * outstanding, signaled: it is waited for again before the QP's requests
 * are looked at. Return: 0 (completed, or failed: the QP is in error), or
 * EBUSY (said), ENOMEM.
 */
int ibckpt_fence_earlier(struct ibckpt_qp *qp)
{
	unsigned int ms = fence_ms(qp);
	struct timespec t0;
	int err;

	qp->fence.posted = false;
	if (!ibckpt_qp_internal_pending(qp)) {
		ibckpt_fence_put(qp);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = ibckpt_qp_internal_wait(qp, ms);
	ibckpt_dbg("QP %u: the fence of an earlier try: %s after %.3f ms more", qp->vqp.qp.qp_num,
		   err == ETIMEDOUT ? "not completed" : err ? "failed" : "completed",
		   us_since(&t0) / 1000.0);
	if (err == ETIMEDOUT) {
		ibckpt_restart_err("QP %u: the fence of an earlier try has not completed in %u ms "
				   "more: a response to an RDMA READ or atomic is missing",
				   qp->vqp.qp.qp_num, ms);
		return EBUSY;
	}
	ibckpt_fence_put(qp);
	return err == EIO ? 0 : err;
}

/**
 * ibckpt_fence_post() - a fence behind the QP's live READs and atomics
 * @qp: an RC QP whose live requests were all transmitted and received
 *
 * Posts nothing if no live request is a READ or an atomic, or if the QP
 * is in the error state (its requests are flushed). Waited for by
 * ibckpt_fence_wait(). Return: 0, or EBUSY (said).
 */
int ibckpt_fence_post(struct ibckpt_qp *qp)
{
	struct ibv_send_wr app, w;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	struct ibv_sge s[1], local;
	enum fence_kind kind;
	int err;

	ibckpt_spin_lock(&qp->sq_lock);
	ibckpt_wrlog_settle(&qp->sq);
	kind = fence_for(qp, &app);
	if (kind != FENCE_NONE)
		ibckpt_send_wr_real(qp, &app, &w, s);	/* the peer's key now */
	ibckpt_spin_unlock(&qp->sq_lock);
	if (kind == FENCE_NONE)
		return 0;
	if (ibv_query_qp(qp->real, &a, IBV_QP_STATE, &init)) {
		ibckpt_restart_err("QP %u: query: %s", qp->vqp.qp.qp_num, strerror(errno));
		return EBUSY;
	}
	if (a.qp_state == IBV_QPS_ERR)
		return 0;
	if (a.qp_state != IBV_QPS_RTS) {
		ibckpt_restart_err("QP %u: an RDMA READ or atomic outstanding in state %d: no "
				   "fence can be posted behind it", qp->vqp.qp.qp_num,
				   (int)a.qp_state);
		return EBUSY;
	}
	if (kind == FENCE_ATOMIC) {
		err = fence_mr(qp);
		if (err) {
			ibckpt_restart_err("QP %u: the fence's memory: %s", qp->vqp.qp.qp_num,
					   strerror(err));
			return EBUSY;
		}
		local = (struct ibv_sge){ .addr = (uintptr_t)qp->fence.buf, .length = 8,
					  .lkey = qp->fence.mr->lkey };
		w.sg_list = &local;
		w.num_sge = 1;
	}
	err = ibckpt_qp_internal_post(qp, &w);
	if (err) {
		ibckpt_restart_err("QP %u: posting a fence behind its RDMA READs and atomics: %s",
				   qp->vqp.qp.qp_num, strerror(err));
		return EBUSY;
	}
	clock_gettime(CLOCK_MONOTONIC, &qp->fence.at);
	qp->fence.ms = fence_ms(qp);
	qp->fence.posted = true;
	ibckpt_dbg("QP %u: fence posted (%s), up to %u ms", qp->vqp.qp.qp_num,
		   kind == FENCE_READ ? "zero-length READ" : "FETCH_AND_ADD 0", qp->fence.ms);
	return 0;
}

/**
 * ibckpt_fence_wait() - wait for the fence ibckpt_fence_post() posted, if any
 * @qp: a QP the release checked
 *
 * Return: 0 (it completed, or failed: the QP is in error), EBUSY if it did
 * not complete in time (said), or ENOMEM.
 */
int ibckpt_fence_wait(struct ibckpt_qp *qp)
{
	uint64_t us, limit = (uint64_t)qp->fence.ms * 1000u;
	int err;

	if (!qp->fence.posted)
		return 0;
	qp->fence.posted = false;
	us = us_since(&qp->fence.at);
	err = ibckpt_qp_internal_wait(qp, us < limit ? (unsigned int)((limit - us + 999) / 1000) : 0);
	us = us_since(&qp->fence.at);
	if (err == ETIMEDOUT) {
		ibckpt_restart_err("QP %u: the fence behind its RDMA READs and atomics has not "
				   "completed in %llu ms: a response is missing (the QP asks again "
				   "after its retransmission timeout)", qp->vqp.qp.qp_num,
				   (unsigned long long)(us / 1000));
		return EBUSY;
	}
	ibckpt_fence_put(qp);
	if (err == EIO)
		ibckpt_dbg("QP %u: the fence failed (status %d) after %.3f ms: the QP is in error, "
			   "its requests flushed to the application", qp->vqp.qp.qp_num,
			   (int)qp->internal.status, us / 1000.0);
	else if (!err)
		ibckpt_dbg("QP %u: fence completed in %.3f ms", qp->vqp.qp.qp_num, us / 1000.0);
	else
		ibckpt_restart_err("QP %u: waiting for its fence: %s", qp->vqp.qp.qp_num,
				   strerror(err));
	return err == EIO ? 0 : err;
}
