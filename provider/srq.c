// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues (basic type). The vendor's SRQ carries our shadow as
 * srq_context so that its async events lead back to it. XRC SRQs are not
 * stacked yet: create_srq_ex and open_xrcd keep libibverbs' EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include "ibckpt.h"

struct ibv_srq *ibckpt_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr)
{
	struct ibckpt_srq *srq = calloc(1, sizeof(*srq));
	struct ibv_srq_init_attr ra = *attr;
	int err;

	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	ra.srq_context = srq;
	srq->real = ibv_create_srq(to_ipd(ibpd)->real, &ra);
	if (!srq->real) {
		free(srq);
		return NULL;
	}
	attr->attr = ra.attr;	/* what the vendor granted */
	err = ibckpt_wrlog_init(&srq->rq, IBCKPT_WRLOG_SRQ, ra.attr.max_wr, ra.attr.max_sge, 0,
				false);
	if (err) {
		ibv_destroy_srq(srq->real);
		free(srq);
		errno = err;
		return NULL;
	}
	ibckpt_spin_init(&srq->lock);
	srq->ibv_srq.handle = srq->real->handle;
	ibckpt_obj_add(to_ictx(ibpd->context), &srq->obj, IBCKPT_SNAP_SRQ);
	return &srq->ibv_srq;	/* libibverbs fills context, pd, srq_context */
}

int ibckpt_destroy_srq(struct ibv_srq *ibsrq)
{
	struct ibckpt_srq *srq = to_isrq(ibsrq);
	struct ibckpt_context *ctx = to_ictx(ibsrq->context);
	int ret;

	ibckpt_gate_enter(&ctx->gate);
	ret = ibv_destroy_srq(srq->real);
	if (!ret)
		ibckpt_obj_del(ctx, &srq->obj);
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	ibckpt_wrlog_destroy(&srq->rq);
	free(srq);
	return 0;
}

int ibckpt_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct ibckpt_context *ctx = to_ictx(ibsrq->context);
	int ret;

	ibckpt_gate_enter(&ctx->gate);
	ret = ibv_modify_srq(to_isrq(ibsrq)->real, attr, mask);
	if (!ret && (mask & IBV_SRQ_LIMIT))
		to_isrq(ibsrq)->srq_limit = attr->srq_limit;
	ibckpt_gate_exit(&ctx->gate);
	return ret;
}

int ibckpt_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	return ibv_query_srq(to_isrq(ibsrq)->real, attr);
}

int ibckpt_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	return ibv_get_srq_num(to_isrq(ibsrq)->real, srq_num);
}

static int vendor_post_srq_recv(void *real, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_srq_recv(real, wr, bad);
}

int ibckpt_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibckpt_srq *srq = to_isrq(ibsrq);
	struct ibckpt_context *ctx = to_ictx(ibsrq->context);
	int ret;

	ibckpt_gate_enter(&ctx->gate);
	ibckpt_spin_lock(&srq->lock);
	ret = ibckpt_wrlog_post_recv(&srq->rq, srq->real, vendor_post_srq_recv, wr, bad);
	ibckpt_spin_unlock(&srq->lock);
	ibckpt_gate_exit(&ctx->gate);
	atomic_fetch_add_explicit(&ctx->stats.post_srq_recv, 1, memory_order_relaxed);
	return ret;
}
