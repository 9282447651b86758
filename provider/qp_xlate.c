// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The translating path of a remapped context: requests as the application
 * names things (virtual keys and QPNs, shadow AHs and windows), posted as
 * copies in the vendor's terms. The general send path, srq.c, fence.c,
 * qp_ex_post.c and a restart's reposts use it. One request on its own goes
 * through the inline path in qp_post.c instead.
 */
#include <errno.h>
#include "restart.h"

/* SGEs name virtual lkeys; one without an entry is a key made since (its own). */
void ibckpt_sge_to_real(struct ibckpt_context *ctx, struct ibv_sge *dst,
			const struct ibv_sge *src, int n)
{
	uint32_t r;
	int i;

	for (i = 0; i < n; i++) {
		dst[i] = src[i];
		r = ibckpt_key_real(ctx, &ctx->lkeys, src[i].lkey, 0);
		if (r)
			dst[i].lkey = r;
	}
}

/**
 * ibckpt_post_recv_xlate() - post receives to a remapped context's queue
 * @target: struct ibckpt_recv_target
 * @wr: the list, logged already; the application's, left as it is
 * @bad: set to the first request not posted
 *
 * One request at a time, each a translated copy. Return: 0 or the vendor's error.
 */
int ibckpt_post_recv_xlate(void *target, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibckpt_recv_target *t = target;
	struct ibv_recv_wr *w, *rbad;
	int ret;

	for (w = wr; w; w = w->next) {
		struct ibv_sge s[w->num_sge > 0 ? w->num_sge : 1];
		struct ibv_recv_wr c = { .wr_id = w->wr_id, .sg_list = s, .num_sge = w->num_sge };

		ibckpt_sge_to_real(t->ctx, s, w->sg_list, w->num_sge);
		ret = t->srq ? ibv_post_srq_recv(t->real, &c, &rbad) : ibv_post_recv(t->real, &c, &rbad);
		if (ret) {
			*bad = w;
			return ret;
		}
	}
	return 0;
}

/*
 * One of this context's remote keys, an MR's or a window's, as the vendor
 * knows it now: an MR's whole first, then a window's by its index, as its
 * peers translate it (ibckpt_remap_rkey()).
 */
static uint32_t local_key_real(struct ibckpt_context *ctx, uint32_t key)
{
	struct ibckpt_mw *mw;
	uint32_t r;

	ibckpt_spin_lock(&ctx->key_lock);
	r = ibckpt_vidmap_real(&ctx->rkeys, key, 0);
	if (!r && (mw = ibckpt_mw_find(ctx, key, false)) != NULL)
		r = (mw->ridx << 8) | ((key + mw->key_off) & 0xff);
	ibckpt_spin_unlock(&ctx->key_lock);
	return r ? r : key;
}

static bool wr_has_rkey(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/**
 * ibckpt_send_wr_real() - a send request in the vendor's terms
 * @qp: the shadow QP it is posted on (its send queue's lock held)
 * @src: the request as the application names things: shadow AH, window
 *	and MR; after a restart virtual keys and QPNs
 * @c: set to a copy, alone (next NULL): the vendor's AH, window and MR,
 *	and in a remapped context lkeys to this context's new ones, the remote
 *	key and UD destination QPN to the peer device's
 * @s: room for @src's SGEs (a remapped context's copy points here)
 */
void ibckpt_send_wr_real(struct ibckpt_qp *qp, const struct ibv_send_wr *src,
			 struct ibv_send_wr *c, struct ibv_sge *s)
{
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	uint32_t r;

	*c = *src;
	c->next = NULL;
	if (ud)
		c->wr.ud.ah = to_iah(src->wr.ud.ah)->real;
	else if (src->opcode == IBV_WR_BIND_MW)
		ibckpt_mw_wr_real(src, c);	/* the key byte too, remapped or not */
	if (!qp->ctx->remapped)
		return;
	c->sg_list = s;
	ibckpt_sge_to_real(qp->ctx, s, src->sg_list, src->num_sge);
	if (ud) {
		struct ibckpt_ah *ah = to_iah(src->wr.ud.ah);

		if (ibckpt_remap_find(IBCKPT_ID_QPN, ah->peer_vdev, src->wr.ud.remote_qpn, &r))
			c->wr.ud.remote_qpn = r;
	} else if (wr_has_rkey(src->opcode)) {
		bool atomic = src->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			      src->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
		uint32_t *rkey = atomic ? &c->wr.atomic.rkey : &c->wr.rdma.rkey;

		if (ibckpt_remap_rkey(qp->rel.peer_vdev, *rkey, &r))
			*rkey = r;
	}
	/* the key to invalidate: the peer's (SEND_WITH_INV) or one of ours (LOCAL_INV) */
	if (src->opcode == IBV_WR_SEND_WITH_INV &&
	    ibckpt_remap_rkey(qp->rel.peer_vdev, src->invalidate_rkey, &r))
		c->invalidate_rkey = r;
	else if (src->opcode == IBV_WR_LOCAL_INV)
		c->invalidate_rkey = local_key_real(qp->ctx, src->invalidate_rkey);
}

/* One send request of a remapped context, posted as a translated copy. */
int ibckpt_post_one_xlate(struct ibckpt_qp *qp, const struct ibv_send_wr *src)
{
	struct ibv_sge s[src->num_sge > 0 ? src->num_sge : 1];
	struct ibv_send_wr c, *rbad;

	ibckpt_send_wr_real(qp, src, &c, s);
	return ibv_post_send(qp->real, &c, &rbad);
}

/* The send path of a remapped context: logged, then posted one by one, translated. */
NOINLINE int ibckpt_post_send_xlate(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						     struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w;
	int ret;

	for (w = wr; w; w = w->next) {
		if (w->opcode == IBV_WR_TSO) {
			*bad = w;	/* not kept across a restart (restart.rst) */
			return EOPNOTSUPP;
		}
		ret = ibckpt_wrlog_send_fast(&qp->sq, w);
		if (!ret) {
			ret = ibckpt_post_one_xlate(qp, w);
			if (ret)
				ibckpt_wrlog_unpost(&qp->sq, 1);
			else
				ibckpt_mw_posted(qp->ctx, w, qp);
		}
		if (ret) {
			*bad = w;
			return ret;
		}
	}
	return 0;
}
