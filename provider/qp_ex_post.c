// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An ibv_wr_* batch (qp_ex.c's staging) to the vendor: all of it or none,
 * as ibv_wr_complete() promises. Every request is logged first, under the
 * send queue's lock, the queue open, like any post; the batch then goes
 * to the vendor's own ibv_wr_* API in the vendor's terms (its AH, window
 * and MR; translated keys and QPNs after a restart), and the vendor's
 * ibv_wr_complete() posts it whole or not at all. A batch the log or the
 * vendor refuses is forgotten again: nothing of it was posted.
 *
 * The vendor's QP was created with the application's send_ops_flags, so it
 * has every ibv_wr_* function the batch can hold.
 */
#include <errno.h>
#include <string.h>
#include "ibckpt.h"

/* Local operations: no destination, no SGEs. */
static bool wr_local(enum ibv_wr_opcode op)
{
	return op == IBV_WR_LOCAL_INV || op == IBV_WR_BIND_MW;
}

/* Operations whose SGEs are a payload sent, which may go inline. */
static bool wr_sends_payload(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_TSO;
}

/* The vendor's ibv_wr_* calls for one request @c, in its terms. */
static void vendor_wr_one(struct ibv_qp_ex *vx, enum ibv_qp_type type, struct ibv_send_wr *c)
{
	bool local = wr_local(c->opcode);

	vx->wr_id = c->wr_id;
	/* IBV_SEND_INLINE too: Debian's rxe (rdma-core 44) wants it with inline data */
	vx->wr_flags = c->send_flags;
	switch (c->opcode) {
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(vx, c->wr.rdma.rkey, c->wr.rdma.remote_addr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(vx, c->wr.rdma.rkey, c->wr.rdma.remote_addr, c->imm_data);
		break;
	case IBV_WR_SEND:
		ibv_wr_send(vx);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(vx, c->imm_data);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(vx, c->wr.rdma.rkey, c->wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(vx, c->wr.atomic.rkey, c->wr.atomic.remote_addr,
				      c->wr.atomic.compare_add, c->wr.atomic.swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(vx, c->wr.atomic.rkey, c->wr.atomic.remote_addr,
					c->wr.atomic.compare_add);
		break;
	case IBV_WR_LOCAL_INV:
		ibv_wr_local_inv(vx, c->invalidate_rkey);
		break;
	case IBV_WR_BIND_MW:
		ibv_wr_bind_mw(vx, c->bind_mw.mw, c->bind_mw.rkey, &c->bind_mw.bind_info);
		break;
	case IBV_WR_SEND_WITH_INV:
		ibv_wr_send_inv(vx, c->invalidate_rkey);
		break;
	case IBV_WR_TSO:
		ibv_wr_send_tso(vx, c->tso.hdr, c->tso.hdr_sz, c->tso.mss);
		break;
	case IBV_WR_ATOMIC_WRITE:	/* its 8 bytes where qp_ex.c staged them */
		ibv_wr_atomic_write(vx, c->wr.rdma.rkey, c->wr.rdma.remote_addr,
				    &c->wr.atomic.swap);
		break;
	default:	/* qp_ex.c stages nothing else */
		break;
	}
	/* a local operation's WQE has no address segment for these to write */
	if (type == IBV_QPT_UD && !local)
		ibv_wr_set_ud_addr(vx, c->wr.ud.ah, c->wr.ud.remote_qpn, c->wr.ud.remote_qkey);
	else if (type == IBV_QPT_XRC_SEND && !local)
		ibv_wr_set_xrc_srqn(vx, c->qp_type.xrc.remote_srqn);
	/* atomic write carries its 8 bytes in the call */
	if (local || c->opcode == IBV_WR_ATOMIC_WRITE)
		return;
	/* a read's or an atomic's SGE is where its answer lands, whatever wr_flags say */
	if ((c->send_flags & IBV_SEND_INLINE) && wr_sends_payload(c->opcode)) {
		/*
		 * One buffer, always: Debian's rxe (rdma-core 44) loses the
		 * length of a list (wr_set_inline_data_list() never adds it
		 * up). qp_ex.c's inline setters made one; SGEs the caller
		 * flagged inline are gathered (the log checked their sum
		 * against max_inline).
		 */
		size_t len = 0, off = 0;
		int i;

		for (i = 0; i < c->num_sge; i++)
			len += c->sg_list[i].length;
		if (c->num_sge <= 1) {
			ibv_wr_set_inline_data(vx, c->num_sge ? (void *)(uintptr_t)c->sg_list[0].addr
							      : NULL, len);
		} else {
			uint8_t buf[len ? len : 1];

			for (i = 0; i < c->num_sge; off += c->sg_list[i].length, i++)
				memcpy(buf + off, (void *)(uintptr_t)c->sg_list[i].addr,
				       c->sg_list[i].length);
			ibv_wr_set_inline_data(vx, buf, len);	/* copied by the vendor */
		}
	} else {
		ibv_wr_set_sge_list(vx, (size_t)(c->num_sge > 0 ? c->num_sge : 0), c->sg_list);
	}
}

/* What a restart does not carry over (restart.rst "Limits"). */
static bool refused_when_remapped(enum ibv_wr_opcode op)
{
	return op == IBV_WR_TSO || op == IBV_WR_ATOMIC_WRITE;
}

/* Under the send queue's lock: log the batch, give it to the vendor whole. */
static int post_batch_locked(struct ibckpt_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_qp_ex *vx = ibv_qp_to_qp_ex(qp->real);
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	struct ibv_send_wr *w;
	uint32_t logged = 0;
	int ret = 0;

	if (!vx || !vx->wr_start || !qp->sq.wr)	/* no send queue: an XRC target */
		return EOPNOTSUPP;
	/*
	 * Below RTS Debian's rxe queues the batch and then fails its doorbell:
	 * the requests would run at RTS while the log forgot them. Refused
	 * before anything is queued (rxe answers that post with EINVAL too).
	 */
	if (qp->vqp.qp.state < IBV_QPS_RTS)
		return EINVAL;
	for (w = wr; w && !ret; w = w->next) {
		if (qp->ctx->remapped && refused_when_remapped(w->opcode)) {
			ret = EOPNOTSUPP;
			break;
		}
		ret = ibckpt_wrlog_send(&qp->sq, w);
		if (ret)
			break;
		logged++;
		if (type == IBV_QPT_XRC_SEND)
			ibckpt_wrlog_newest(&qp->sq, 1)->remote_srqn = w->qp_type.xrc.remote_srqn;
	}
	if (!ret) {
		ibv_wr_start(vx);
		for (w = wr; w; w = w->next) {
			struct ibv_sge s[w->num_sge > 0 ? w->num_sge : 1];
			struct ibv_send_wr c;

			ibckpt_send_wr_real(qp, w, &c, s);
			vendor_wr_one(vx, type, &c);	/* the vendor copies what it needs */
		}
		ret = ibv_wr_complete(vx);
	}
	if (ret) {
		ibckpt_wrlog_unpost(&qp->sq, logged);
		return ret;
	}
	for (w = wr; w; w = w->next)	/* the shadows take their windows' new state */
		ibckpt_mw_posted(qp->ctx, w, qp);
	return 0;
}

/**
 * ibckpt_qpx_post() - post an ibv_wr_* batch, all of it or none
 * @qp: the shadow QP
 * @wr: the batch, a list qp_ex.c built (read only)
 *
 * Return: 0, or the error of the log (ENOMEM, EINVAL), EACCES (a forked
 * child's inherited QP), or the vendor's; nothing of the batch posted then.
 */
int ibckpt_qpx_post(struct ibckpt_qp *qp, struct ibv_send_wr *wr)
{
	int ret;

	if (ibckpt_ctx_refuses(qp->ctx))
		return EACCES;
	ibckpt_spin_lock_raw(&qp->sq_lock);
	if (unlikely(ibckpt_q_closed(&qp->sq_lock.closed))) {	/* quiesce.c */
		ret = ibckpt_gate_relock_open(&qp->ctx->gate, &qp->sq_lock);
		if (ret)
			return ret;
	}
	ret = post_batch_locked(qp, wr);
	ibckpt_spin_unlock_raw(&qp->sq_lock);
	return ret;
}
