// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs. The vendor's QP carries our shadow as qp_context (async
 * events lead back to it) and is registered under its QPN in the context's
 * table, where completions find it to retire logged requests. The virtual
 * QPN is the real one until a restart.
 *
 * Posting logs each request before handing the list to the vendor, under
 * the queue's lock so that the log's order is the hardware queue's; what the
 * vendor refuses is forgotten again. UD requests and window binds name
 * shadows: the real objects are swapped in for the vendor and back from the
 * log before returning, so nothing is allocated per request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ibckpt.h"

static void qp_history_add(struct ibckpt_qp_history *h, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *m = &h->attr;

	if (mask & IBV_QP_STATE) {
		m->qp_state = a->qp_state;
		if (a->qp_state == IBV_QPS_RESET) {	/* a fresh start */
			memset(m, 0, sizeof(*m));
			h->mask = 0;
		}
	}
#define MERGE(bit, field) do { if (mask & (bit)) m->field = a->field; } while (0)
	MERGE(IBV_QP_CUR_STATE, cur_qp_state);
	MERGE(IBV_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
	MERGE(IBV_QP_ACCESS_FLAGS, qp_access_flags);
	MERGE(IBV_QP_PKEY_INDEX, pkey_index);
	MERGE(IBV_QP_PORT, port_num);
	MERGE(IBV_QP_QKEY, qkey);
	MERGE(IBV_QP_AV, ah_attr);
	MERGE(IBV_QP_PATH_MTU, path_mtu);
	MERGE(IBV_QP_TIMEOUT, timeout);
	MERGE(IBV_QP_RETRY_CNT, retry_cnt);
	MERGE(IBV_QP_RNR_RETRY, rnr_retry);
	MERGE(IBV_QP_RQ_PSN, rq_psn);
	MERGE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	MERGE(IBV_QP_ALT_PATH, alt_ah_attr);
	MERGE(IBV_QP_ALT_PATH, alt_pkey_index);
	MERGE(IBV_QP_ALT_PATH, alt_port_num);
	MERGE(IBV_QP_ALT_PATH, alt_timeout);
	MERGE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	MERGE(IBV_QP_SQ_PSN, sq_psn);
	MERGE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	MERGE(IBV_QP_PATH_MIG_STATE, path_mig_state);
	MERGE(IBV_QP_CAP, cap);
	MERGE(IBV_QP_DEST_QPN, dest_qp_num);
	MERGE(IBV_QP_RATE_LIMIT, rate_limit);
#undef MERGE
	h->mask |= mask;
	h->calls++;
}

static struct ibv_cq *real_cq(struct ibv_cq *cq)
{
	return cq ? to_icq(cq)->real : NULL;
}

/* The shadow's public part as libibverbs would fill it, from the vendor's QP. */
static void qp_shadow_init(struct ibckpt_qp *qp, struct ibckpt_context *ctx, void *qp_context)
{
	struct ibv_qp *q = &qp->vqp.qp;

	ibckpt_spin_init(&qp->sq_lock);
	ibckpt_spin_init(&qp->rq_lock);
	q->context = &ctx->vctx.context;
	q->qp_context = qp_context;
	q->handle = qp->real->handle;
	q->qp_num = qp->real->qp_num;
	q->state = qp->real->state;
	q->qp_type = qp->real->qp_type;
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
}

/* Both create paths end here with an attribute set naming shadows. */
static struct ibv_qp *qp_create(struct ibckpt_context *ctx, struct ibv_pd *ibpd,
				struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex ra = *attr;
	struct ibckpt_qp *qp;
	int err;

	bool tgt = attr->qp_type == IBV_QPT_XRC_RECV;

	if ((attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
				 IBV_QP_INIT_ATTR_CREATE_FLAGS |
				 IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     ibckpt_qpx_check(attr->send_ops_flags))) {
		/* RSS, newer post-send ops, ...: not stacked yet. */
		ibckpt_dbg("create_qp: comp_mask %#x send_ops_flags %#llx not stacked",
			   attr->comp_mask, (unsigned long long)attr->send_ops_flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	ra.qp_context = qp;
	ra.pd = ibpd ? to_ipd(ibpd)->real : NULL;
	ra.send_cq = real_cq(attr->send_cq);
	ra.recv_cq = real_cq(attr->recv_cq);
	ra.srq = attr->srq ? to_isrq(attr->srq)->real : NULL;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) {
		qp->xrcd = attr->xrcd ? to_ixrcd(attr->xrcd) : NULL;
		ra.xrcd = qp->xrcd ? qp->xrcd->real : NULL;
	}
	qp->real = ibv_create_qp_ex(ctx->real, &ra);
	if (!qp->real) {
		free(qp);
		return NULL;
	}
	attr->cap = ra.cap;	/* what the vendor granted */
	qp->ctx = ctx;
	qp->srq = attr->srq ? to_isrq(attr->srq) : NULL;
	/* An XRC target QP has no queue of its own; an XRC sender no receive queue. */
	err = tgt ? 0 : ibckpt_wrlog_init(&qp->sq, IBCKPT_WRLOG_SQ, ra.cap.max_send_wr,
					  ra.cap.max_send_sge, ra.cap.max_inline_data,
					  attr->sq_sig_all);
	qp->rq_logged = !qp->srq && !tgt && attr->qp_type != IBV_QPT_XRC_SEND;
	if (!err && qp->rq_logged)
		err = ibckpt_wrlog_init(&qp->rq, IBCKPT_WRLOG_RQ, ra.cap.max_recv_wr,
					ra.cap.max_recv_sge, 0, false);
	if (!err && !tgt && (attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER))
		err = ibckpt_wrlog_init_tso(&qp->sq, attr->max_tso_header);
	if (!err && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		err = ibckpt_qpx_init(qp, attr->send_ops_flags, &ra.cap,
				      attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER ?
				      attr->max_tso_header : 0);
	if (!err && !tgt) {	/* a target's completions are its SRQs' (srq.c) */
		ibckpt_spin_lock(&ctx->qpn_lock);
		err = ibckpt_vidmap_insert(&ctx->qpns, qp->real->qp_num, qp->real->qp_num, qp,
					   &qp->qpn_gen);
		ibckpt_spin_unlock(&ctx->qpn_lock);
	}
	if (err) {
		ibv_destroy_qp(qp->real);
		ibckpt_wrlog_destroy(&qp->sq);
		ibckpt_wrlog_destroy(&qp->rq);
		ibckpt_qpx_free(qp->qpx);
		free(qp);
		errno = err;
		return NULL;
	}
	qp_shadow_init(qp, ctx, attr->qp_context);

	struct ibv_qp *q = &qp->vqp.qp;

	q->pd = ibpd;
	q->send_cq = attr->send_cq;
	q->recv_cq = attr->recv_cq;
	q->srq = attr->srq;
	ibckpt_obj_add(ctx, &qp->obj, IBCKPT_SNAP_QP);
	return q;
}

struct ibv_qp *ibckpt_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = ibpd;
	qp = qp_create(to_ictx(ibpd->context), ibpd, &ax);
	if (qp)
		attr->cap = ax.cap;
	return qp;
}

struct ibv_qp *ibckpt_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_pd *pd = attr->comp_mask & IBV_QP_INIT_ATTR_PD ? attr->pd : NULL;

	/* Only an XRC target QP has no PD (its XRC domain stands for it). */
	if (!pd && attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	return qp_create(to_ictx(context), pd, attr);
}

/*
 * Another process's (or our own) XRC target QP, opened in a shared domain:
 * a shadow with no queues, which only modify, query and destroy reach.
 */
struct ibv_qp *ibckpt_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr)
{
	struct ibckpt_context *ctx = to_ictx(context);
	struct ibv_qp_open_attr ra = *attr;
	struct ibckpt_qp *qp;

	if (!(attr->comp_mask & IBV_QP_OPEN_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->xrcd = to_ixrcd(attr->xrcd);
	ra.xrcd = qp->xrcd->real;
	ra.qp_context = qp;
	ra.comp_mask |= IBV_QP_OPEN_ATTR_CONTEXT;
	qp->real = ibv_open_qp(ctx->real, &ra);
	if (!qp->real) {
		free(qp);
		return NULL;
	}
	qp->ctx = ctx;
	qp->opened = true;
	qp_shadow_init(qp, ctx, attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT ? attr->qp_context
									      : NULL);
	ibckpt_obj_add(ctx, &qp->obj, IBCKPT_SNAP_QP);
	return &qp->vqp.qp;
}

int ibckpt_destroy_qp(struct ibv_qp *ibqp)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_context *ctx = qp->ctx;
	int ret;

	ibckpt_gate_enter(&ctx->gate);
	ret = ibv_destroy_qp(qp->real);
	if (ret) {
		ibckpt_gate_exit(&ctx->gate);
		return ret;
	}
	ibckpt_spin_lock(&ctx->qpn_lock);	/* no poller retires into it any more */
	if (qp->qpn_gen)
		ibckpt_vidmap_remove(&ctx->qpns, ibqp->qp_num, qp->qpn_gen);
	if (ctx->last_qp == qp)
		ctx->last_qp = NULL;
	ibckpt_spin_unlock(&ctx->qpn_lock);
	ibckpt_obj_del(ctx, &qp->obj);
	ibckpt_gate_exit(&ctx->gate);
	ibckpt_await_acks(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
			  atomic_load(&qp->async_seen));
	ibckpt_wrlog_destroy(&qp->sq);
	ibckpt_wrlog_destroy(&qp->rq);
	ibckpt_qpx_free(qp->qpx);
	free(qp);
	return 0;
}

int ibckpt_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibv_qp_attr ra, *va = attr;
	int ret;

	/* Address vectors name virtual addresses (addr.h): the vendor gets real ones. */
	if (mask & (IBV_QP_AV | IBV_QP_ALT_PATH)) {
		ra = *attr;
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &ra.ah_attr);
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &ra.alt_ah_attr);
		va = &ra;
	}
	/* Inside the gate: a snapshot reads the QP's state and history while closed. */
	ibckpt_gate_enter(&qp->ctx->gate);
	ret = ibv_modify_qp(qp->real, va, mask);
	if (!ret) {
		bool reset = (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET;

		ibckpt_spin_lock(&qp->sq_lock);
		qp_history_add(&qp->hist, attr, mask);
		/* A reset empties the queues without completions: forget them too. */
		if (reset)
			ibckpt_wrlog_reset(&qp->sq);
		ibckpt_spin_unlock(&qp->sq_lock);
		if (reset && qp->rq_logged) {
			ibckpt_spin_lock(&qp->rq_lock);
			ibckpt_wrlog_reset(&qp->rq);
			ibckpt_spin_unlock(&qp->rq_lock);
		}
	}
	ibckpt_gate_exit(&qp->ctx->gate);
	return ret;
}

int ibckpt_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		    struct ibv_qp_init_attr *init)
{
	int ret = ibv_query_qp(to_iqp(ibqp)->real, attr, mask, init);

	if (!ret) {
		/* The vendor answered with its own objects and addresses: show ours. */
		ibckpt_ah_attr_to_virtual(&to_iqp(ibqp)->ctx->addrs, &attr->ah_attr);
		ibckpt_ah_attr_to_virtual(&to_iqp(ibqp)->ctx->addrs, &attr->alt_ah_attr);
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
	}
	return ret;
}

int ibckpt_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	return ibv_attach_mcast(to_iqp(ibqp)->real, gid, lid);
}

int ibckpt_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	return ibv_detach_mcast(to_iqp(ibqp)->real, gid, lid);
}

/*
 * Requests name shadows: UD sends their AH, window binds their window and
 * MR. The vendor gets the real objects, swapped in before the post and back
 * after it from the log, which holds the application's pointers of the
 * 'logged' newest requests; nothing is allocated. The binds the vendor took
 * (before 'rbad') are now the windows'.
 */
static void shadows_to_real(struct ibv_send_wr *wr, bool ud)
{
	for (; wr; wr = wr->next) {
		if (ud) {
			wr->wr.ud.ah = to_iah(wr->wr.ud.ah)->real;
		} else if (wr->opcode == IBV_WR_BIND_MW) {
			wr->bind_mw.mw = to_imw(wr->bind_mw.mw)->real;
			if (wr->bind_mw.bind_info.mr)
				wr->bind_mw.bind_info.mr = to_imr(wr->bind_mw.bind_info.mr)->real;
		}
	}
}

static void real_to_shadows(struct ibckpt_qp *qp, struct ibv_send_wr *wr, bool ud,
			    uint32_t logged, const struct ibv_send_wr *rbad)
{
	const struct ibckpt_wr *e;
	bool posted = true;

	for (; wr; wr = wr->next, logged--) {
		if (wr == rbad)
			posted = false;
		e = ibckpt_wrlog_newest(&qp->sq, logged);
		if (ud) {
			wr->wr.ud.ah = e->wr.ud.ah;
		} else if (wr->opcode == IBV_WR_BIND_MW) {
			wr->bind_mw.mw = e->bind_mw.mw;
			wr->bind_mw.bind_info.mr = e->bind_mw.bind_info.mr;
			if (posted)
				ibckpt_mw_bound(to_imw(wr->bind_mw.mw), &wr->bind_mw.bind_info,
						wr->bind_mw.rkey);
		}
	}
}

/*
 * Lists, UD and window binds: under the send queue's lock, inside the gate.
 * Out of line, so that the one-request path needs few registers.
 */
static __attribute__((noinline)) int post_send_list(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						     struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w, *cut = NULL, *rbad = NULL;
	uint32_t logged = 0, posted, binds = 0;
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	bool ud = type == IBV_QPT_UD, swap;
	int ret, err = 0;

	if (!qp->sq.wr)		/* an XRC target: the vendor's answer */
		return ibv_post_send(qp->real, wr, bad);
	for (w = wr; w; w = w->next) {
		err = ibckpt_wrlog_send_fast(&qp->sq, w);
		if (!err && w->opcode == IBV_WR_TSO) {	/* its header, copied */
			err = ibckpt_wrlog_tso(&qp->sq, w);
			if (err)
				ibckpt_wrlog_unpost(&qp->sq, 1);
		}
		if (err)
			break;
		if (type == IBV_QPT_XRC_SEND)
			ibckpt_wrlog_newest(&qp->sq, 1)->remote_srqn = w->qp_type.xrc.remote_srqn;
		binds += w->opcode == IBV_WR_BIND_MW;
		logged++;
	}
	if (err) {
		*bad = w;
		if (!logged)
			return err;
		for (cut = wr; cut->next != w; cut = cut->next)
			;
		cut->next = NULL;
	}
	swap = ud || binds;
	if (swap)
		shadows_to_real(wr, ud);
	ret = ibv_post_send(qp->real, wr, &rbad);
	if (swap)
		real_to_shadows(qp, wr, ud, logged, ret ? rbad : NULL);
	if (cut)
		cut->next = *bad;
	if (!ret)
		return err;
	for (posted = 0, w = wr; w && w != rbad; w = w->next)
		posted++;
	ibckpt_wrlog_unpost(&qp->sq, logged - posted);
	*bad = rbad;
	return ret;
}

int ibckpt_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_context *ctx = qp->ctx;
	struct ibv_send_wr *rbad = NULL;
	int ret;

	ibckpt_gate_enter(&ctx->gate);
	ibckpt_spin_lock(&qp->sq_lock);
	/* UD, raw packet and XRC QPs: types from IBV_QPT_UD up. */
	if (__builtin_expect(!wr || wr->next || ibqp->qp_type >= IBV_QPT_UD ||
			     wr->opcode == IBV_WR_BIND_MW, 0)) {
		ret = post_send_list(qp, wr, bad);
	} else {
		/* One request naming no shadow: most posts. */
		ret = ibckpt_wrlog_send_fast(&qp->sq, wr);
		if (ret) {
			*bad = wr;
		} else {
			ret = ibv_post_send(qp->real, wr, &rbad);
			if (ret) {
				if (rbad)	/* else: taken, as post_send_list() reads it */
					ibckpt_wrlog_unpost(&qp->sq, 1);
				*bad = rbad;
			}
		}
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_gate_exit(&ctx->gate);
	atomic_fetch_add_explicit(&ctx->stats.post_send, 1, memory_order_relaxed);
	return ret;
}

/*
 * Atomic writes staged by ibv_wr_atomic_write() (qp_ex.c), their 8 bytes in
 * wr.atomic.swap: ibv_post_send() has no agreed form for them (rxe's ignores
 * their address), so they go to the vendor's own ibv_wr_* API, logged like
 * any send. Its ibv_wr_complete() posts all of them or none.
 */
static int post_atomic_writes(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
			      struct ibv_send_wr **bad)
{
	struct ibv_qp_ex *vx = ibv_qp_to_qp_ex(qp->real);
	struct ibv_send_wr *w;
	uint32_t logged = 0;
	int ret = 0;

	if (!vx || !vx->wr_atomic_write)
		ret = EOPNOTSUPP;
	for (w = wr; w && !ret; w = w->next) {
		ret = ibckpt_wrlog_send(&qp->sq, w);
		logged += !ret;
	}
	if (!ret) {
		ibv_wr_start(vx);
		for (w = wr; w; w = w->next) {
			vx->wr_id = w->wr_id;
			vx->wr_flags = w->send_flags;
			ibv_wr_atomic_write(vx, w->wr.rdma.rkey, w->wr.rdma.remote_addr,
					    &w->wr.atomic.swap);
		}
		ret = ibv_wr_complete(vx);
	}
	if (ret) {
		ibckpt_wrlog_unpost(&qp->sq, logged);
		*bad = wr;
	}
	return ret;
}

/**
 * ibckpt_post_send_staged() - post an ibv_wr_* batch holding atomic writes
 * @qp: the shadow QP
 * @wr: the batch (qp_ex.c's staging)
 * @bad: set to the first request not posted
 *
 * Runs of atomic writes go to the vendor's ibv_wr_* API, the runs between
 * them through the ibv_post_send() path, in order, under the send queue's
 * lock: as one post does, an error leaves the runs before it posted.
 * Return: 0 or the first error.
 */
int ibckpt_post_send_staged(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
			    struct ibv_send_wr **bad)
{
	struct ibckpt_context *ctx = qp->ctx;
	struct ibv_send_wr *end, *last;
	int ret = 0;

	ibckpt_gate_enter(&ctx->gate);
	ibckpt_spin_lock(&qp->sq_lock);
	while (wr && !ret) {
		bool aw = wr->opcode == IBV_WR_ATOMIC_WRITE;

		for (last = wr; last->next && (last->next->opcode == IBV_WR_ATOMIC_WRITE) == aw;)
			last = last->next;
		end = last->next;
		last->next = NULL;
		ret = aw ? post_atomic_writes(qp, wr, bad) : post_send_list(qp, wr, bad);
		last->next = end;
		wr = end;
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_gate_exit(&ctx->gate);
	atomic_fetch_add_explicit(&ctx->stats.post_send, 1, memory_order_relaxed);
	return ret;
}

static int vendor_post_recv(void *real, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(real, wr, bad);
}

int ibckpt_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_context *ctx = qp->ctx;
	int ret;

	if (!qp->rq_logged)	/* SRQ or XRC: the vendor's answer, unlogged */
		return ibv_post_recv(qp->real, wr, bad);
	ibckpt_gate_enter(&ctx->gate);
	ibckpt_spin_lock(&qp->rq_lock);
	ret = ibckpt_wrlog_post_recv(&qp->rq, qp->real, vendor_post_recv, wr, bad);
	ibckpt_spin_unlock(&qp->rq_lock);
	ibckpt_gate_exit(&ctx->gate);
	atomic_fetch_add_explicit(&ctx->stats.post_recv, 1, memory_order_relaxed);
	return ret;
}

/**
 * ibckpt_qp_lookup() - the QP completions of @qpn come for, NULL if none
 * @ctx: context of the CQ; its qpn_lock is held
 * @qpn: the completion's (real) QP number
 *
 * The miss path of ibckpt_qp_retire(): remembers the QP for the next ones.
 */
struct ibckpt_qp *ibckpt_qp_lookup(struct ibckpt_context *ctx, uint32_t qpn)
{
	const struct ibckpt_vid *v = ibckpt_vidmap_find(&ctx->qpns, qpn, 0);

	if (!v)
		return NULL;
	ctx->last_qp = v->obj;
	return v->obj;
}

/**
 * ibckpt_qp_retire_exact() - the slow path of ibckpt_qp_retire()
 * @qp: the completion's QP
 * @wc: a failed completion, or a receive completion of a QP with an SRQ
 *
 * A failed completion's opcode is undefined, so it is tried against the
 * send queue first (by wr_id), then the receive side. SRQ receives retire
 * by wr_id under the SRQ's lock.
 */
void ibckpt_qp_retire_exact(struct ibckpt_qp *qp, const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS;

	if (!ok) {
		bool found;

		ibckpt_spin_lock(&qp->sq_lock);
		found = ibckpt_wrlog_complete(&qp->sq, wc->wr_id, false);
		ibckpt_spin_unlock(&qp->sq_lock);
		if (found)
			return;
	}
	if (qp->srq) {
		ibckpt_spin_lock(&qp->srq->lock);
		ibckpt_wrlog_complete(&qp->srq->rq, wc->wr_id, ok);
		ibckpt_spin_unlock(&qp->srq->lock);
	} else if (qp->rq_logged) {
		ibckpt_wrlog_done(&qp->rq);
	}
}
