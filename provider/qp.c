// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: the shadow object. The vendor's QP carries our shadow as
 * qp_context (async events lead back to it) and is registered under its QPN
 * in the context's table, where completions find it to retire logged
 * requests. The virtual QPN is the real one until a restart.
 *
 * This file holds the object: create, open, destroy, modify and query with
 * the history a restart replays, multicast groups, and the lookup and
 * retirement of completions. Posting is in qp_post.c, the translating path
 * in qp_xlate.c, the release and re-creation in qp_restart.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

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

/* The vendor's CQ behind a shadow CQ, or NULL (here and at a re-creation). */
struct ibv_cq *ibckpt_real_cq(struct ibv_cq *cq)
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
	qp->real_qpn = qp->real->qp_num;
	q->state = qp->real->state;
	q->qp_type = qp->real->qp_type;
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	ibckpt_qp_set_paths(qp);
}

/*
 * The vendor's QP for a new shadow, with a QPN that is nobody's virtual QPN
 * (ibckpt_id_taken(): after a restart the vendor may hand out one that the
 * job's peers translate to another QP). A taken one is held while the
 * vendor is asked again, so that it does not hand the same out twice.
 */
static struct ibv_qp *create_fresh_qp(struct ibckpt_context *ctx, struct ibv_qp_init_attr_ex *ra)
{
	struct ibv_qp_init_attr_ex asked = *ra;
	struct ibv_qp *held[IBCKPT_ID_TRIES], *q;
	unsigned int n = 0;

	for (;;) {
		q = ibv_create_qp_ex(ctx->real, ra);
		if (!q || !ibckpt_id_taken(ctx, IBCKPT_ID_QPN, q->qp_num))
			break;
		ibckpt_dbg("create_qp: QPN %#x is a virtual QPN of the job: another", q->qp_num);
		if (n == IBCKPT_ID_TRIES) {
			ibv_destroy_qp(q);
			q = NULL;
			errno = EADDRINUSE;
			break;
		}
		held[n++] = q;
		*ra = asked;
	}
	while (n)
		if (ibv_destroy_qp(held[--n]))
			ibckpt_dbg("create_qp: a QP held aside could not be destroyed");
	return q;
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
	qp = ibckpt_zalloc_lines(sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	ra.qp_context = qp;
	ra.pd = ibpd ? to_ipd(ibpd)->real : NULL;
	ra.send_cq = ibckpt_real_cq(attr->send_cq);
	ra.recv_cq = ibckpt_real_cq(attr->recv_cq);
	ra.srq = attr->srq ? to_isrq(attr->srq)->real : NULL;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) {
		qp->xrcd = attr->xrcd ? to_ixrcd(attr->xrcd) : NULL;
		ra.xrcd = qp->xrcd ? qp->xrcd->real : NULL;
	}
	qp->real = create_fresh_qp(ctx, &ra);
	if (!qp->real) {
		free(qp);
		return NULL;
	}
	attr->cap = ra.cap;	/* what the vendor granted */
	qp->init = *attr;
	qp->ctx = ctx;
	qp->srq = attr->srq ? to_isrq(attr->srq) : NULL;
	/* An XRC target QP has no queue of its own; an XRC sender no receive queue. */
	err = tgt ? 0 : ibckpt_wrlog_init(&qp->sq, IBCKPT_WRLOG_SQ,
					  ibckpt_wrlog_depth(ra.cap.max_send_wr),
					  ra.cap.max_send_sge, ra.cap.max_inline_data,
					  attr->sq_sig_all);
	qp->rq_logged = !qp->srq && !tgt && attr->qp_type != IBV_QPT_XRC_SEND;
	if (!err && qp->rq_logged)
		err = ibckpt_wrlog_init(&qp->rq, IBCKPT_WRLOG_RQ,
					ibckpt_wrlog_depth(ra.cap.max_recv_wr),
					ra.cap.max_recv_sge, 0, false);
	if (!err && !tgt && (attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER))
		qp->sq.max_hdr = attr->max_tso_header;	/* headers logged with their requests */
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
	qp = ibckpt_zalloc_lines(sizeof(*qp));
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
	uint32_t rqpn;
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	rqpn = qp->real->qp_num;
	ret = ibv_destroy_qp(qp->real);
	if (ret) {
		ibckpt_gate_exit(&ctx->gate);
		return ret;
	}
	ibckpt_spin_lock(&ctx->qpn_lock);	/* no poller finds it any more */
	if (qp->qpn_gen)
		ibckpt_vidmap_remove(&ctx->qpns, ibqp->qp_num, qp->qpn_gen);
	if (qp->rel.qpn_virt_gen)	/* restarted: its real QPN may be handed out again */
		ibckpt_vidmap_remove(&ctx->qpn_virt, rqpn, qp->rel.qpn_virt_gen);
	ibckpt_spin_unlock(&ctx->qpn_lock);
	ibckpt_qp_internal_gone(qp);		/* its completion still dropped */
	ibckpt_fence_put(qp);
	ibckpt_cq_forget_qp(ibqp->send_cq, qp);		/* nor retires into it */
	ibckpt_cq_forget_qp(ibqp->recv_cq, qp);
	pthread_mutex_lock(&ctx->lock);
	if (ctx->mw2)		/* type 2 windows may name it */
		ibckpt_mw_qp_gone(ctx, qp);
	pthread_mutex_unlock(&ctx->lock);
	ibckpt_obj_del(ctx, &qp->obj);
	ibckpt_gate_exit(&ctx->gate);
	/* its unread async events leave the pipe; the read ones are waited for */
	if (!ibckpt_async_put(ctx, ibqp, &qp->async_sent, &qp->async_seen))
		return 0;	/* the shadow stays: an event in the pipe names it */
	ibckpt_await_acks(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed, qp->async_sent);
	ibckpt_wrlog_destroy(&qp->sq);
	ibckpt_wrlog_destroy(&qp->rq);
	ibckpt_qpx_free(qp->qpx);
	free(qp->mcast);
	free(qp);
	return 0;
}

/*
 * Under sq_lock: the QP sends @psn next; what is logged now (posted before
 * RTS) goes out from there.
 */
static void qp_psn_base(struct ibckpt_qp *qp, uint32_t psn)
{
	qp->psn_base = (psn - qp->sq.psn_sum) & IBCKPT_PSN_MASK;
	qp->psn_based = true;
}

int ibckpt_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibv_qp_attr ra, *va = attr;
	int ret;

	/*
	 * Inside the gate: a snapshot reads the QP's state and history while
	 * closed, and a restart rewrites the translations used below.
	 */
	ret = ibckpt_gate_enter(&qp->ctx->gate);
	if (ret)
		return ret;
	/* Address vectors name virtual addresses (addr.h): the vendor gets real ones. */
	if (mask & (IBV_QP_AV | IBV_QP_ALT_PATH)) {
		ra = *attr;
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &ra.ah_attr);
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &ra.alt_ah_attr);
		va = &ra;
	}
	/* Restarted: the peer named is the one its application knows (restart.h). */
	if (qp->ctx->remapped && (mask & IBV_QP_DEST_QPN)) {
		const struct ibv_ah_attr *av = mask & IBV_QP_AV ? &attr->ah_attr :
					       &qp->hist.attr.ah_attr;
		uint32_t r;

		if (va != &ra) {
			ra = *attr;
			va = &ra;
		}
		qp->rel.peer_vdev = ibckpt_remap_dev_of(av);
		if (ibckpt_remap_find(IBCKPT_ID_QPN, qp->rel.peer_vdev, attr->dest_qp_num, &r))
			ra.dest_qp_num = r;
	}
	ret = ibv_modify_qp(qp->real, va, mask);
	if (!ret) {
		bool reset = (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET;

		/*
		 * An internal request is gone with the rest, its completion
		 * maybe in the CQ: an orphan, before its slot goes below (a
		 * poller meanwhile tells it by its slot, or as an orphan).
		 */
		if (reset) {
			ibckpt_qp_internal_forget(qp);
			ibckpt_fence_put(qp);
		}
		ibckpt_spin_lock(&qp->sq_lock);
		qp_history_add(&qp->hist, attr, mask);
		/* A reset empties the queues without completions: forget them too. */
		if (reset) {
			ibckpt_wrlog_reset(&qp->sq);
			qp->sq.psn_lost = false;
			qp->psn_based = false;
		}
		if (mask & IBV_QP_PATH_MTU)
			qp->sq.mtu_shift = (uint8_t)(7 + attr->path_mtu);	/* IBV_MTU_256: 1 */
		if (mask & IBV_QP_SQ_PSN)
			qp_psn_base(qp, attr->sq_psn);
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
		/* the peer's QPN the application named, not its new one */
		if (to_iqp(ibqp)->ctx->remapped)
			attr->dest_qp_num = to_iqp(ibqp)->hist.attr.dest_qp_num;
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
	}
	return ret;
}

/* Under ctx->lock: @qp's entry for the group, or -1. */
static int mcast_find(const struct ibckpt_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	uint32_t i;

	for (i = 0; i < qp->nmcast; i++)
		if (qp->mcast[i].lid == lid && !memcmp(&qp->mcast[i].gid, gid, sizeof(*gid)))
			return (int)i;
	return -1;
}

/*
 * The groups are remembered: a re-created QP is attached to them again,
 * so that it keeps receiving multicast after a restart.
 */
int ibckpt_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_mcast *m;
	int ret;

	pthread_mutex_lock(&qp->ctx->lock);
	ret = ibv_attach_mcast(qp->real, gid, lid);
	if (!ret && mcast_find(qp, gid, lid) < 0) {
		m = realloc(qp->mcast, (qp->nmcast + 1) * sizeof(*m));
		if (!m) {
			ibv_detach_mcast(qp->real, gid, lid);
			ret = ENOMEM;
		} else {
			qp->mcast = m;
			qp->mcast[qp->nmcast++] = (struct ibckpt_mcast){ .gid = *gid, .lid = lid };
		}
	}
	pthread_mutex_unlock(&qp->ctx->lock);
	return ret;
}

int ibckpt_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	int ret, i;

	pthread_mutex_lock(&qp->ctx->lock);
	ret = ibv_detach_mcast(qp->real, gid, lid);
	i = ret ? -1 : mcast_find(qp, gid, lid);
	if (i >= 0)
		qp->mcast[i] = qp->mcast[--qp->nmcast];
	pthread_mutex_unlock(&qp->ctx->lock);
	return ret;
}

/**
 * ibckpt_qp_lookup() - the QP a completion is for, NULL if none
 * @ctx: context of the CQ
 * @cq: the CQ; its lock is held
 * @wc: the completion (its QPN virtual, as the table's)
 *
 * The miss path of ibckpt_qp_retire(), under the context's qpn_lock: the
 * CQ remembers the QP for the next ones. A completion of no QP of the
 * context's is an XRC SRQ's (retired by its tag here) or a destroyed QP's.
 */
struct ibckpt_qp *ibckpt_qp_lookup(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
				   struct ibv_wc *wc)
{
	const struct ibckpt_vid *v;
	struct ibckpt_qp *qp = NULL;

	ibckpt_spin_lock(&ctx->qpn_lock);
	v = ibckpt_vidmap_find(&ctx->qpns, wc->qp_num, 0);
	if (v) {
		qp = v->obj;
		/*
		 * Remembered only by its own CQs, which forget it at its
		 * destroy; on another CQ it is a destroyed QP's completion,
		 * its QPN handed out again since.
		 */
		if (qp->vqp.qp.send_cq == &cq->ibv_cq || qp->vqp.qp.recv_cq == &cq->ibv_cq)
			cq->last_qp = qp;
		else
			qp = NULL;
	} else {
		ibckpt_xsrq_retire(ctx, wc);
	}
	ibckpt_spin_unlock(&ctx->qpn_lock);
	return qp;
}

/*
 * Under sq_lock: a send request failed (or was flushed), before its
 * completion retires (through the oldest live request with its wr_id,
 * wrlog.h). Which one failed is not known when several live requests carry
 * that wr_id (an application may give any): every request before the
 * oldest of them completed, and from it on each may be the one that failed
 * or one flushed behind it (the queue is in error now, so every later one
 * is flushed). Each bind and local invalidate from there to the newest
 * request leaves its window's state unknown (mw.c), until the window's
 * next bind or invalidate. Requests looked at by an earlier failure of the
 * queue are not looked at again (qp->mw_marked): a flush of a whole queue
 * costs its length, not its square. Nothing to do in a context without
 * windows.
 */
static void failed_send_windows(struct ibckpt_qp *qp, uint64_t wr_id)
{
	struct ibckpt_wrlog *log = &qp->sq;
	const struct ibckpt_wr *e;
	uint32_t pos;

	if (!atomic_load_explicit(&qp->ctx->mws, memory_order_relaxed) ||
	    !ibckpt_wrlog_find(log, wr_id, &pos))	/* settles */
		return;
	if ((int32_t)(qp->mw_marked - pos) > 0)
		pos = qp->mw_marked;
	for (; pos != log->tail; pos++) {
		e = ibckpt_wrlog_at(log, pos - log->head, NULL, NULL);
		if (e->opcode == IBV_WR_BIND_MW || e->opcode == IBV_WR_LOCAL_INV)
			ibckpt_mw_failed(qp->ctx, e);
	}
	qp->mw_marked = log->tail;
}

/**
 * ibckpt_qp_retire_exact() - the slow path of ibckpt_qp_retire()
 * @qp: the completion's QP
 * @cq: the CQ it came from
 * @wc: a failed completion, or a receive completion of a QP with an SRQ
 *
 * A failed completion's opcode is undefined (ibv_poll_cq(3)). The CQ tells
 * its queue when the QP's send and receive queues complete to different
 * CQs. On one CQ shared by both, a wr_id the send queue holds is taken as
 * the send queue's, else it is the receive side's (a wr_id both queues hold
 * cannot be told apart there). SRQ receives retire by wr_id under the
 * SRQ's lock.
 */
void ibckpt_qp_retire_exact(struct ibckpt_qp *qp, const struct ibckpt_cq *cq,
			    const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS;

	if (!ok && qp->vqp.qp.send_cq == &cq->ibv_cq) {
		bool found;

		ibckpt_spin_lock(&qp->sq_lock);
		failed_send_windows(qp, wc->wr_id);
		found = ibckpt_wrlog_complete(&qp->sq, wc->wr_id, false);
		ibckpt_spin_unlock(&qp->sq_lock);
		if (found || qp->vqp.qp.recv_cq != &cq->ibv_cq)
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
