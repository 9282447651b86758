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
 * The fence must not fail the QP, and must not change anything of the
 * peer's. It is chosen from what the peer QP grants, which the CLI reads
 * in the peer's snapshot and sends with PREPARE (struct ibckpt_rpeer):
 *  - remote writes: a zero-length RDMA WRITE. The peer checks only that
 *    its QP grants writes (Linux 6.1's rxe, check_op_valid()); a zero-byte
 *    WRITE needs neither key nor address (IBTA C9-88; rxe's check_rkey()),
 *    and one sent again is acknowledged again and nothing more
 *    (duplicate_request()).
 *  - else remote reads: a zero-length RDMA READ naming the newest live
 *    READ's key and address (an atomic's, behind atomics alone). Its first
 *    execution checks no key; one sent again, its response lost, is
 *    answered from the peer's responder resources after rxe_recheck_mr()
 *    looked the key up again, which the application's request used.
 *  - else remote atomics: a FETCH_AND_ADD of 0 at the newest atomic's
 *    target, its 8-byte result into a page of the provider's registered on
 *    the QP's PD while the fence may still complete. An add of 0 leaves
 *    the value as it was only while nothing else writes there: rxe reads
 *    and writes the word under a lock of its own (atomic_reply()), not
 *    atomically with the peer's CPU. So it must run while the job is
 *    frozen: one still outstanding when a PREPARE ends is EINPROGRESS, and
 *    the CLI asks again before it thaws the job.
 *  - none of them: refused (EOPNOTSUPP), as nothing can be posted that
 *    the peer would not refuse, failing the QP.
 * Without word from the CLI (no payload, or a QP it did not name), the
 * fence is the one the application's requests show the peer grants: a
 * zero-length READ behind READs, a FETCH_AND_ADD of 0 behind atomics alone.
 *
 * A release plans each QP's fence during its checks (ibckpt_fence_plan(),
 * every QP of every context), posts them only if every check passed
 * (ibckpt_fence_post()) and then waits for all of them together with one
 * deadline (ibckpt_fences_wait()): a fence never runs behind a refusal,
 * and the wait is as long as the slowest, not their sum. Each may take
 * three of its QP's retransmission timeouts (4.096 us << timeout) and a
 * margin, 10 s at most: a response lost once, and the one sent again lost
 * too. A fence not completed by then refuses the release (EBUSY: the CLI
 * thaws the job and freezes it again later; EINPROGRESS for an atomic
 * one); it stays posted, the next try waits for it first (again all
 * together), and its completion, whenever it comes, is the provider's. A
 * fence flushed means the QP failed before it (an application request's
 * error): the release goes on with the QP in the error state. A fence
 * that failed itself (the peer refused it, or stopped answering) put the
 * QP in error: the release is refused (EIO) and says so.
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

static const char *const fence_name[] = {
	[IBCKPT_FENCE_NONE] = "an internal request",
	[IBCKPT_FENCE_WRITE] = "zero-length WRITE",
	[IBCKPT_FENCE_READ] = "zero-length READ",
	[IBCKPT_FENCE_ATOMIC] = "FETCH_AND_ADD 0",
};

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

static uint64_t us_between(const struct timespec *t0, const struct timespec *t1)
{
	int64_t us = (int64_t)(t1->tv_sec - t0->tv_sec) * 1000000 +
		     (t1->tv_nsec - t0->tv_nsec) / 1000;

	return us > 0 ? (uint64_t)us : 0;
}

static uint64_t us_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return us_between(t0, &t);
}

/* Under sq_lock, the log settled: the newest live READ and atomic, if any. */
static void newest_reads(struct ibckpt_qp *qp, const struct ibckpt_wr **rd,
			 const struct ibckpt_wr **at)
{
	const struct ibckpt_wr *e;
	uint32_t i = ibckpt_wrlog_count(&qp->sq);

	*rd = *at = NULL;
	while (i-- && !*rd) {		/* the newest first */
		e = ibckpt_wrlog_at(&qp->sq, i, NULL, NULL);
		if (e->opcode == IBV_WR_RDMA_READ)
			*rd = e;
		else if (!*at && (e->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
				  e->opcode == IBV_WR_ATOMIC_CMP_AND_SWP))
			*at = e;
	}
}

/* What a peer's access flags grant, for a refusal. */
static const char *grants(int access)
{
	return access & IBV_ACCESS_REMOTE_ATOMIC ? "remote atomics only" :
	       "no remote access";
}

/**
 * ibckpt_fence_plan() - the fence the QP's live READs and atomics need, if any
 * @qp: a QP whose release checks passed
 * @peer: its peer QP's qp_access_flags, -1 if the CLI did not say
 *
 * Posts nothing: the fence is kept in qp->fence for ibckpt_fence_post().
 * Return: 0 (planned, or none needed: no live READ or atomic, not RC, the
 * QP in error with its requests flushed), or EOPNOTSUPP (said): the state
 * cannot be queried, is neither RTS nor ERR (SQD), or the peer grants
 * nothing a fence could use. None of these goes by itself: not EBUSY.
 */
int ibckpt_fence_plan(struct ibckpt_qp *qp, int peer)
{
	const struct ibckpt_wr *rd, *at;
	struct ibv_send_wr app = { 0 };
	struct ibv_qp_init_attr init;
	enum ibckpt_fence_kind kind;
	struct ibv_qp_attr a;
	struct ibv_sge s[1];

	qp->fence.planned = false;
	if (qp->vqp.qp.qp_type != IBV_QPT_RC || !qp->real || !qp->sq.wr)
		return 0;
	ibckpt_spin_lock(&qp->sq_lock);
	ibckpt_wrlog_settle(&qp->sq);
	newest_reads(qp, &rd, &at);
	ibckpt_spin_unlock(&qp->sq_lock);
	if (!rd && !at)
		return 0;
	if (ibv_query_qp(qp->real, &a, IBV_QP_STATE, &init)) {
		ibckpt_restart_err("QP %u: an RDMA READ or atomic is outstanding and the QP's state "
				   "cannot be queried (%s): no fence can be posted behind it",
				   qp->vqp.qp.qp_num, strerror(errno));
		return EOPNOTSUPP;
	}
	if (a.qp_state == IBV_QPS_ERR)
		return 0;
	if (a.qp_state != IBV_QPS_RTS) {
		ibckpt_restart_err("QP %u: an RDMA READ or atomic is outstanding in state %d (not "
				   "RTS): no fence can be posted behind it", qp->vqp.qp.qp_num,
				   (int)a.qp_state);
		return EOPNOTSUPP;
	}
	if (peer < 0)
		kind = rd ? IBCKPT_FENCE_READ : IBCKPT_FENCE_ATOMIC;
	else if (peer & IBV_ACCESS_REMOTE_WRITE)
		kind = IBCKPT_FENCE_WRITE;
	else if (peer & IBV_ACCESS_REMOTE_READ)
		kind = IBCKPT_FENCE_READ;
	else if (at && (peer & IBV_ACCESS_REMOTE_ATOMIC))
		kind = IBCKPT_FENCE_ATOMIC;
	else {
		ibckpt_restart_err("QP %u: its peer grants %s (access %#x): no fence that it would "
				   "not refuse fits behind its RDMA READs", qp->vqp.qp.qp_num,
				   grants(peer), (unsigned int)peer);
		return EOPNOTSUPP;
	}
	ibckpt_spin_lock(&qp->sq_lock);
	newest_reads(qp, &rd, &at);	/* the same: nothing posts while frozen */
	if (kind == IBCKPT_FENCE_ATOMIC) {
		app.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		app.wr.atomic.remote_addr = at->wr.atomic.remote_addr;
		app.wr.atomic.rkey = at->wr.atomic.rkey;
	} else {
		app.opcode = kind == IBCKPT_FENCE_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		if (rd) {
			app.wr.rdma = rd->wr.rdma;
		} else {
			app.wr.rdma.remote_addr = at->wr.atomic.remote_addr;
			app.wr.rdma.rkey = at->wr.atomic.rkey;
		}
	}
	ibckpt_send_wr_real(qp, &app, &qp->fence.wr, s);	/* the peer's key now */
	ibckpt_spin_unlock(&qp->sq_lock);
	qp->fence.wr.sg_list = NULL;
	qp->fence.wr.num_sge = 0;
	qp->fence.kind = (uint8_t)kind;
	qp->fence.planned = true;
	return 0;
}

/* The page an atomic fence's result lands in, registered on the QP's PD. */
static int fence_mr(struct ibckpt_qp *qp)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = page > 0 ? (size_t)page : 4096;
	int err;

	if (qp->fence.mr)
		return 0;
	if (posix_memalign(&qp->fence.buf, len, len))
		return ENOMEM;
	errno = 0;
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
 * @qp: its fence completed, or its vendor QP is reset or destroyed
 *
 * Kept while the QP's internal request is outstanding: its response may
 * still land there.
 */
void ibckpt_fence_put(struct ibckpt_qp *qp)
{
	if (!qp->fence.mr || ibckpt_qp_internal_pending(qp))
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
 * ibckpt_fence_unplan() - a planned fence is not posted after all
 * @qp: a QP ibckpt_fence_plan() saw
 */
void ibckpt_fence_unplan(struct ibckpt_qp *qp)
{
	qp->fence.planned = false;
}

/**
 * ibckpt_fence_post() - post the fence ibckpt_fence_plan() planned, if any
 * @qp: a QP of a release whose checks all passed
 *
 * Return: 0 (posted: qp->fence.posted; or none planned), or a refusal no
 * retry cures (said): ENOSPC when the send queue has no room for it (its
 * log's, or the vendor's, which may hold more than it reported), ENOMEM.
 */
int ibckpt_fence_post(struct ibckpt_qp *qp)
{
	struct ibv_send_wr w = qp->fence.wr;
	struct ibv_sge local;
	int err;

	if (!qp->fence.planned)
		return 0;
	qp->fence.planned = false;
	if (!ibckpt_qp_internal_wr_id(qp)) {
		ibckpt_restart_err("QP %u: a fence: out of memory", qp->vqp.qp.qp_num);
		return ENOMEM;
	}
	if (qp->fence.kind == IBCKPT_FENCE_ATOMIC) {
		err = fence_mr(qp);
		if (err) {
			ibckpt_restart_err("QP %u: the fence's memory cannot be registered: %s",
					   qp->vqp.qp.qp_num, strerror(err));
			return err == EBUSY || err == EINPROGRESS ? ENOMEM : err;
		}
		local = (struct ibv_sge){ .addr = (uintptr_t)qp->fence.buf, .length = 8,
					  .lkey = qp->fence.mr->lkey };
		w.sg_list = &local;
		w.num_sge = 1;
	}
	err = ibckpt_qp_internal_post(qp, &w);
	if (err) {
		ibckpt_fence_put(qp);
		if (err == ENOMEM) {
			ibckpt_restart_err("QP %u: its send queue has no room for a fence behind its "
					   "RDMA READs and atomics (the %s refused one more): a queue "
					   "kept full cannot be released", qp->vqp.qp.qp_num,
					   ibckpt_wrlog_count(&qp->sq) >= qp->sq.cap ? "log" :
					   "device");
			return ENOSPC;
		}
		ibckpt_restart_err("QP %u: posting a fence behind its RDMA READs and atomics: %s",
				   qp->vqp.qp.qp_num, strerror(err));
		return err == EBUSY || err == EINPROGRESS ? EIO : err;
	}
	clock_gettime(CLOCK_MONOTONIC, &qp->fence.at);
	qp->fence.ms = fence_ms(qp);
	qp->fence.posted = true;
	ibckpt_dbg("QP %u: fence posted (%s), up to %u ms", qp->vqp.qp.qp_num,
		   fence_name[qp->fence.kind], qp->fence.ms);
	return 0;
}

/* How a wait for several fences ends: the first of each outcome, told last. */
struct fences_end {
	struct ibckpt_qp *atomic, *busy, *failed;	/* not completed (atomic), ..., failed */
	enum ibv_wc_status status;			/* failed's */
	uint64_t ms;					/* waited */
	int nomem;
};

/* A fence of the list completed: how, in the debug log, or its failure kept. */
static void fence_done(struct ibckpt_qp *qp, enum ibv_wc_status status, bool earlier,
		       const struct timespec *t0, struct fences_end *e)
{
	double ms = (earlier ? us_since(t0) : us_since(&qp->fence.at)) / 1000.0;

	ibckpt_fence_put(qp);
	if (status == IBV_WC_SUCCESS || status == IBV_WC_WR_FLUSH_ERR)
		qp->fence.kind = IBCKPT_FENCE_NONE;	/* the failed one is named below */
	if (status == IBV_WC_SUCCESS && earlier)
		ibckpt_dbg("QP %u: the fence of an earlier try: completed after %.3f ms more",
			   qp->vqp.qp.qp_num, ms);
	else if (status == IBV_WC_SUCCESS)
		ibckpt_dbg("QP %u: fence completed in %.3f ms", qp->vqp.qp.qp_num, ms);
	else if (status == IBV_WC_WR_FLUSH_ERR)
		ibckpt_dbg("QP %u: the fence was flushed after %.3f ms: the QP failed before it, "
			   "its requests flushed to the application", qp->vqp.qp.qp_num, ms);
	else if (!e->failed) {
		e->failed = qp;
		e->status = status;
	}
}

/**
 * ibckpt_fences_wait() - wait for the fences of @list together, one deadline
 * @list: QPs linked by fence.next, each with an internal request outstanding
 *	and fence.posted set
 * @earlier: posted by an earlier try (each may take its time from now on),
 *	else by this one (from when it was posted)
 *
 * Drains the QPs' send CQs until every fence completed or the last of
 * their times is up, napping between rounds (20 us, doubling up to 1 ms).
 * A fence not completed stays outstanding (its completion is dropped
 * whenever it comes); fence.posted is cleared on all.
 * Return: 0; EINPROGRESS if an atomic fence has not completed (the job
 * must stay frozen); ENOMEM (a drain could not take a completion) or EIO
 * (a fence failed itself, the QP now in error); EBUSY if a fence has not
 * completed in time. Said, the first in this order.
 */
int ibckpt_fences_wait(struct ibckpt_qp *list, bool earlier)
{
	struct fences_end e = { 0 };
	enum ibv_wc_status status;
	uint64_t limit = 0, d, us;
	uint32_t step = 20, waiting;
	struct timespec t0, nap;
	struct ibckpt_qp *qp;
	bool pending;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (qp = list; qp; qp = qp->fence.next) {
		if (earlier)
			qp->fence.ms = fence_ms(qp);
		d = (uint64_t)qp->fence.ms * 1000u;
		us = earlier ? 0 : us_between(&qp->fence.at, &t0);
		if (d > us && d - us > limit)
			limit = d - us;
	}
	for (;;) {
		waiting = 0;
		for (qp = list; qp && !e.nomem; qp = qp->fence.next) {
			if (!qp->fence.posted)
				continue;
			err = ibckpt_qp_internal_check(qp, &pending, &status);
			if (err) {
				e.nomem = err;
				e.busy = qp;
			} else if (pending) {
				waiting++;
			} else {
				qp->fence.posted = false;
				fence_done(qp, status, earlier, &t0, &e);
			}
		}
		us = us_since(&t0);
		if (!waiting || e.nomem || us >= limit)
			break;
		nap.tv_sec = 0;
		nap.tv_nsec = (long)(limit - us < step ? limit - us : step) * 1000;
		nanosleep(&nap, NULL);
		if (step < 1000)
			step *= 2;
	}
	e.ms = us_since(&t0) / 1000u;
	for (qp = list; qp; qp = qp->fence.next) {
		if (!qp->fence.posted)
			continue;
		qp->fence.posted = false;
		if (qp->fence.kind == IBCKPT_FENCE_ATOMIC && !e.atomic)
			e.atomic = qp;
		else if (!e.busy)
			e.busy = qp;
	}
	ibckpt_restart_err_clear();	/* one reason: the one that decides */
	if (e.atomic) {
		ibckpt_restart_err("QP %u: its fence, a FETCH_AND_ADD of 0 at its peer, has not "
				   "completed in %llu ms%s: it must complete before the job runs "
				   "again", e.atomic->vqp.qp.qp_num, (unsigned long long)e.ms,
				   earlier ? " more" : "");
		return EINPROGRESS;
	}
	if (e.nomem) {
		ibckpt_restart_err("waiting for QP %u's fence: cannot take a CQ's completions: %s",
				   e.busy->vqp.qp.qp_num, strerror(e.nomem));
		return e.nomem;
	}
	if (e.failed) {
		ibckpt_restart_err("QP %u: its fence (%s) failed: %s (status %d): the QP is in error "
				   "now, its requests flushed to the application",
				   e.failed->vqp.qp.qp_num, fence_name[e.failed->fence.kind],
				   ibv_wc_status_str(e.status), (int)e.status);
		return EIO;
	}
	if (e.busy) {
		if (earlier)
			ibckpt_restart_err("QP %u: the fence of an earlier try has not completed in "
					   "%llu ms more: a response to an RDMA READ or atomic is "
					   "missing", e.busy->vqp.qp.qp_num,
					   (unsigned long long)e.ms);
		else
			ibckpt_restart_err("QP %u: the fence behind its RDMA READs and atomics has "
					   "not completed in %llu ms: a response is missing (the QP "
					   "asks again after its retransmission timeout)",
					   e.busy->vqp.qp.qp_num, (unsigned long long)e.ms);
		return EBUSY;
	}
	return 0;
}
