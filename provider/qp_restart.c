// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A queue pair across a restart: can it be released, its release, and its
 * re-creation (INIT, its receives again, RTR, RTS and its logged sends
 * again). restart.c calls these in order for every QP.
 */
#include <errno.h>
#include <string.h>
#include "restart.h"

/*
 * The peers' check proves that the peer received every packet this QP
 * sent; not that every request posted was sent. One posted but not started
 * (behind a fence, out of read credits, its receiver out of receives: an
 * RNR retry rewinds the send PSN to what the peer expects) or sent in part
 * would be forgotten by the release. Each logged request took its packets'
 * PSNs (wrlog.h): the QP's next PSN must be the one after all of them.
 * Return: 0, EBUSY (with the reason), or EOPNOTSUPP if the device cannot
 * say.
 */
static int qp_sends_transmitted(struct ibckpt_qp *qp, uint32_t live)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	uint32_t want;
	bool known;

	ibckpt_spin_lock(&qp->sq_lock);
	known = qp->psn_based && !qp->sq.psn_lost;
	want = (qp->psn_base + qp->sq.psn_sum) & IBCKPT_PSN_MASK;
	ibckpt_spin_unlock(&qp->sq_lock);
	if (!known)	/* sends logged before the QP had an MTU: the peers' check only */
		return 0;
	if (ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, &init)) {
		/* not EBUSY: freezing again would not make the device say */
		ibckpt_restart_err("QP %u: the device cannot say its next PSN (%s): its unsignaled "
				   "requests cannot be shown transmitted", qp->vqp.qp.qp_num,
				   strerror(errno));
		return EOPNOTSUPP;
	}
	if (a.qp_state != IBV_QPS_RTS || a.sq_psn == want)
		return 0;
	ibckpt_restart_err("QP %u: %u unsignaled requests are not all transmitted (next PSN "
			   "%#x, %#x once they are): its peer may be out of receives (RNR)",
			   qp->vqp.qp.qp_num, live, a.sq_psn, want);
	return EBUSY;
}

/*
 * The release keeps the PSNs the QP is at (ibckpt_qp_release()); one whose
 * device cannot say would come back at the PSNs it was first given, which
 * its peer passed long ago. Return: 0 or EOPNOTSUPP (said: not
 * EBUSY, which a checkpoint would try again).
 */
static int qp_psns_readable(struct ibckpt_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (qp->vqp.qp.qp_type == IBV_QPT_UD || !(qp->hist.mask & IBV_QP_STATE) ||
	    qp->hist.attr.qp_state < IBV_QPS_RTR || qp->hist.attr.qp_state == IBV_QPS_ERR)
		return 0;
	if (!ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &init))
		return 0;
	ibckpt_restart_err("QP %u: the device cannot say its PSNs (%s): it cannot be released",
			   qp->vqp.qp.qp_num, strerror(errno));
	return EOPNOTSUPP;
}

/**
 * ibckpt_qp_release_check() - can the QP be released without losing a request?
 * @qp: the QP, quiesced
 * @flags: IBCKPT_RREL_*
 *
 * A signaled send not completed after the drain would have to be guessed
 * about. Unsignaled sends after the last signaled one complete without a
 * trace: they executed if the peer's expected PSN has passed them, which
 * the CLI checked when it says so (IBCKPT_RREL_PEERS_CHECKED). An RDMA
 * READ or atomic among them has a response to come back: an RC QP gets a
 * fence behind them (fence.c) once every QP passed its checks; a fence of
 * an earlier try still outstanding was waited for before (it is a
 * signaled request not completed).
 * Return: 0, EOPNOTSUPP, EBUSY (with the reason for the CLI).
 */
int ibckpt_qp_release_check(struct ibckpt_qp *qp, uint32_t flags)
{
	enum ibv_qp_type t = qp->vqp.qp.qp_type;
	uint32_t live, sig;

	if (qp->opened || qp->xrcd || (t != IBV_QPT_RC && t != IBV_QPT_UC && t != IBV_QPT_UD)) {
		ibckpt_restart_err("QP %u: type %d%s cannot be released yet", qp->vqp.qp.qp_num, t,
				   qp->opened ? " (opened)" : "");
		return EOPNOTSUPP;
	}
	if ((qp->hist.mask & IBV_QP_PORT) && qp->hist.attr.port_num > 1) {
		ibckpt_restart_err("QP %u on port %u: only port 1 is reacquired yet",
				   qp->vqp.qp.qp_num, qp->hist.attr.port_num);
		return EOPNOTSUPP;
	}
	if ((qp->hist.mask & IBV_QP_AV) &&
	    ibckpt_addr_publishable(&qp->hist.attr.ah_attr, "a QP"))
		return EOPNOTSUPP;
	ibckpt_spin_lock(&qp->sq_lock);
	live = ibckpt_wrlog_live(&qp->sq);
	sig = ibckpt_wrlog_signaled(&qp->sq);
	ibckpt_spin_unlock(&qp->sq_lock);
	if (sig) {
		ibckpt_restart_err("QP %u: %u signaled sends have not completed", qp->vqp.qp.qp_num,
				   sig);
		return EBUSY;
	}
	if (live && t != IBV_QPT_UD && !(flags & IBCKPT_RREL_PEERS_CHECKED)) {
		ibckpt_restart_err("QP %u: %u unsignaled sends may not have executed (peers not "
				   "checked)", qp->vqp.qp.qp_num, live);
		return EBUSY;
	}
	if (live && t != IBV_QPT_UD)
		return qp_sends_transmitted(qp, live);
	return qp_psns_readable(qp);
}

/*
 * Keeps what the re-creation needs: the state and PSNs now (ibv_query_qp),
 * then destroys the vendor's QP. Its trailing unsignaled sends executed
 * (ibckpt_qp_release_check()) or, on UD, went out: they are forgotten.
 */
void ibckpt_qp_release(struct ibckpt_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (!ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &init)) {
		qp->rel.state = a.qp_state;
		qp->rel.sq_psn = a.sq_psn;
		qp->rel.rq_psn = a.rq_psn;
	} else {
		qp->rel.state = qp->hist.attr.qp_state;
		qp->rel.sq_psn = qp->hist.attr.sq_psn;
		qp->rel.rq_psn = qp->hist.attr.rq_psn;
	}
	ibckpt_spin_lock(&qp->sq_lock);
	ibckpt_wrlog_reset(&qp->sq);
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_qp_unacquire(qp);
}

/**
 * ibckpt_qp_unacquire() - destroy the vendor's QP, keep what the release kept
 * @qp: a QP released, or re-created since (an aborted reacquire)
 *
 * Its state and PSNs at the release and its logged receives stay, for the
 * next re-creation.
 */
void ibckpt_qp_unacquire(struct ibckpt_qp *qp)
{
	struct ibckpt_context *ctx = qp->ctx;
	uint32_t rqpn;

	if (!qp->real)
		return;
	rqpn = qp->real->qp_num;
	if (ibv_destroy_qp(qp->real))
		ibckpt_dbg("release: the vendor kept QP %u busy", qp->vqp.qp.qp_num);
	qp->real = NULL;
	qp->rel.at_rts = false;
	ibckpt_spin_lock(&ctx->qpn_lock);
	if (qp->rel.qpn_virt_gen)
		ibckpt_vidmap_remove(&ctx->qpn_virt, rqpn, qp->rel.qpn_virt_gen);
	qp->rel.qpn_virt_gen = 0;
	ibckpt_spin_unlock(&ctx->qpn_lock);
	ibckpt_qp_internal_forget(qp);
	ibckpt_fence_put(qp);
	ibckpt_cq_forget_qp(qp->vqp.qp.send_cq, qp);
	ibckpt_cq_forget_qp(qp->vqp.qp.recv_cq, qp);
}

/* RESET -> INIT, as the application did it (its merged history). */
static int qp_to_init(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = h->pkey_index,
				 .port_num = h->port_num, .qp_access_flags = h->qp_access_flags,
				 .qkey = h->qkey };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->vqp.qp.qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp->real, &a, mask);
}

/**
 * ibckpt_qp_recreate() - the QP again, at INIT (its receives: ibckpt_qp_refill())
 * @qp: a released QP; its PD, CQs and SRQ are re-created
 *
 * The same attributes; the device must grant at least the capacities it
 * granted before. The new QPN is published for the peers.
 * Return: 0 or an errno.
 */
int ibckpt_qp_recreate(struct ibckpt_qp *qp)
{
	struct ibckpt_context *ctx = qp->ctx;
	struct ibv_qp_init_attr_ex a = qp->init;
	struct ibv_qp *q = &qp->vqp.qp;
	uint32_t i;
	int err;

	a.qp_context = qp;
	a.pd = to_ipd(q->pd)->real;
	a.send_cq = ibckpt_real_cq(q->send_cq);
	a.recv_cq = ibckpt_real_cq(q->recv_cq);
	a.srq = q->srq ? to_isrq(q->srq)->real : NULL;
	qp->real = ibv_create_qp_ex(ctx->real, &a);
	if (!qp->real) {
		ibckpt_restart_err("QP %u: %s", q->qp_num, strerror(errno));
		return errno;
	}
	if (a.cap.max_send_wr < qp->init.cap.max_send_wr ||
	    a.cap.max_recv_wr < qp->init.cap.max_recv_wr ||
	    a.cap.max_send_sge < qp->init.cap.max_send_sge ||
	    a.cap.max_recv_sge < qp->init.cap.max_recv_sge ||
	    a.cap.max_inline_data < qp->init.cap.max_inline_data) {
		ibckpt_restart_err("QP %u: the device grants less than before (send %u/%u, "
				   "recv %u/%u, inline %u/%u)", q->qp_num, a.cap.max_send_wr,
				   qp->init.cap.max_send_wr, a.cap.max_recv_wr,
				   qp->init.cap.max_recv_wr, a.cap.max_inline_data,
				   qp->init.cap.max_inline_data);
		return EINVAL;
	}
	q->handle = qp->real->handle;
	qp->real_qpn = qp->real->qp_num;
	ibckpt_spin_lock(&ctx->qpn_lock);
	err = ibckpt_vidmap_insert(&ctx->qpn_virt, qp->real->qp_num, q->qp_num, qp,
				   &qp->rel.qpn_virt_gen);
	ibckpt_spin_unlock(&ctx->qpn_lock);
	if (!err)
		err = ibckpt_ident_add(IBCKPT_ID_QPN, ctx->ident->vdev, q->qp_num,
				       qp->real->qp_num, NULL, NULL);
	if (err)
		return err;
	for (i = 0; i < qp->nmcast; i++) {	/* the groups it was in */
		if (ibv_attach_mcast(qp->real, &qp->mcast[i].gid, qp->mcast[i].lid)) {
			ibckpt_restart_err("QP %u: attaching to a multicast group again: %s",
					   q->qp_num, strerror(errno));
			return errno ? errno : EIO;
		}
	}
	if (qp->rel.state == IBV_QPS_RESET)
		return 0;
	err = qp_to_init(qp);
	if (err)
		ibckpt_restart_err("QP %u: to INIT: %s", q->qp_num, strerror(err));
	return err;
}

/**
 * ibckpt_qp_refill() - the re-created QP's own receives posted again
 * @qp: re-created by ibckpt_qp_recreate(), as every MR of the process
 *
 * After every object is back, as an SRQ's (ibckpt_srq_refill()).
 * Return: 0 or an errno.
 */
int ibckpt_qp_refill(struct ibckpt_qp *qp)
{
	struct ibckpt_recv_target t = { .ctx = qp->ctx, .real = qp->real };

	if (qp->rel.state == IBV_QPS_RESET || !qp->rq_logged)
		return 0;
	return ibckpt_repost_recvs(&qp->rq, &t);
}

static bool qp_state_reached(const struct ibckpt_qp *qp, enum ibv_qp_state s)
{
	enum ibv_qp_state r = qp->rel.state;

	/* SQD and SQE are RTS with a send queue stopped: RTS again. */
	if (r == IBV_QPS_SQD || r == IBV_QPS_SQE)
		r = IBV_QPS_RTS;
	return r != IBV_QPS_ERR && r != IBV_QPS_UNKNOWN && r >= s;
}

/**
 * ibckpt_qp_to_rtr() - INIT -> RTR with the peer's new QPN and address
 * @qp: a re-created QP; the job's identities are installed
 *
 * Return: 0, ENOENT if its peer is not in the job, or the vendor's error.
 */
int ibckpt_qp_to_rtr(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE, ret;

	if (!qp_state_reached(qp, IBV_QPS_RTR))
		return 0;
	if (qp->vqp.qp.qp_type != IBV_QPT_UD) {
		qp->rel.peer_vdev = ibckpt_remap_dev_of(&h->ah_attr);
		if (!qp->rel.peer_vdev ||
		    !ibckpt_remap_find(IBCKPT_ID_QPN, qp->rel.peer_vdev, h->dest_qp_num,
				       &a.dest_qp_num)) {
			ibckpt_restart_err("QP %u: its peer QP %u is not in the job",
					   qp->vqp.qp.qp_num, h->dest_qp_num);
			return ENOENT;
		}
		a.ah_attr = h->ah_attr;
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &a.ah_attr);
		a.path_mtu = h->path_mtu;
		a.rq_psn = qp->rel.rq_psn;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->vqp.qp.qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = h->max_dest_rd_atomic;
			a.min_rnr_timer = h->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	ret = ibv_modify_qp(qp->real, &a, mask);
	if (ret)
		ibckpt_restart_err("QP %u: to RTR: %s", qp->vqp.qp.qp_num, strerror(ret));
	ibckpt_dbg("QP %u: RTR: real QPN %u, peer %u, rq_psn %#x", qp->vqp.qp.qp_num,
		   qp->real->qp_num, a.dest_qp_num, a.rq_psn);
	return ret;
}

/* A logged send request, as the application posted it. */
static void wr_from_log(const struct ibckpt_wr *e, const struct ibv_sge *sge,
			const uint8_t *inl, struct ibv_send_wr *w, struct ibv_sge *inl_sge)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = e->wr_id;
	w->opcode = (enum ibv_wr_opcode)e->opcode;
	w->send_flags = e->send_flags;
	w->imm_data = e->imm_data;
	w->wr = e->wr;
	if (e->inline_len) {	/* its bytes, copied at post time */
		*inl_sge = (struct ibv_sge){ .addr = (uintptr_t)inl, .length = e->inline_len };
		w->sg_list = inl_sge;
		w->num_sge = 1;
		w->send_flags |= IBV_SEND_INLINE;
	} else {
		w->sg_list = (struct ibv_sge *)sge;
		w->num_sge = e->num_sge;
	}
}

/**
 * ibckpt_qp_rts() - a re-created QP, RTR -> RTS, nothing posted
 * @qp: a QP at RTR (REMAP: to bind windows through it), or already moved
 *
 * Return: 0 or an errno (said).
 */
int ibckpt_qp_rts(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = qp->rel.sq_psn };
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN, ret;

	if (qp->rel.at_rts)
		return 0;
	if (qp->vqp.qp.qp_type == IBV_QPT_RC) {
		a.timeout = h->timeout;
		a.retry_cnt = h->retry_cnt;
		a.rnr_retry = h->rnr_retry;
		a.max_rd_atomic = h->max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	ret = ibv_modify_qp(qp->real, &a, mask);
	if (ret) {
		struct ibv_qp_init_attr ia;
		struct ibv_qp_attr cur;

		/* where the vendor's QP is: the reason is often there */
		if (ibv_query_qp(qp->real, &cur, IBV_QP_STATE, &ia))
			cur.qp_state = (enum ibv_qp_state)-1;
		ibckpt_restart_err("QP %u: to RTS from state %d (sq_psn %#x, rd_atomic %u): %s",
				   qp->vqp.qp.qp_num, (int)cur.qp_state, a.sq_psn,
				   a.max_rd_atomic, strerror(ret));
		return ret;
	}
	qp->rel.at_rts = true;
	return 0;
}

/**
 * ibckpt_qp_to_rts() - RTR -> RTS, then the sends still logged, again
 * @qp: a QP at RTR (or at RTS already: ibckpt_qp_rts()); every QP of the
 *	job is
 *
 * Return: 0 or an errno.
 */
int ibckpt_qp_to_rts(struct ibckpt_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	const struct ibckpt_wr *e;
	const struct ibv_sge *sge;
	const uint8_t *inl;
	uint32_t i;
	int ret;

	if (qp->rel.state == IBV_QPS_ERR)
		return ibv_modify_qp(qp->real, &a, IBV_QP_STATE);
	if (!qp_state_reached(qp, IBV_QPS_RTS))
		return 0;
	ret = ibckpt_qp_rts(qp);
	qp->rel.at_rts = false;
	if (ret)
		return ret;
	ibckpt_spin_lock(&qp->sq_lock);
	ibckpt_wrlog_settle(&qp->sq);
	/* the logged sends go out again from the PSN due */
	e = ibckpt_wrlog_at(&qp->sq, 0, NULL, NULL);
	qp->psn_base = (qp->rel.sq_psn - (e ? e->psn_start : qp->sq.psn_sum)) & IBCKPT_PSN_MASK;
	qp->psn_based = true;
	for (i = 0; !ret && (e = ibckpt_wrlog_at(&qp->sq, i, &sge, &inl)) != NULL; i++) {
		struct ibv_send_wr w;
		struct ibv_sge one;

		wr_from_log(e, sge, inl, &w, &one);
		ibckpt_dbg("QP %u: again: wr_id %#llx opcode %d flags %#x sges %d psn %#x rkey %#x",
			   qp->vqp.qp.qp_num, (unsigned long long)w.wr_id, w.opcode,
			   w.send_flags, w.num_sge,
			   (e->psn_start + qp->psn_base) & IBCKPT_PSN_MASK, w.wr.rdma.rkey);
		ret = ibckpt_post_one_xlate(qp, &w);
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	if (ret)
		ibckpt_restart_err("QP %u: posting a logged send again: %s", qp->vqp.qp.qp_num,
				   strerror(ret));
	return ret;
}
