// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data path's statistics (IBCKPT_STATS in the environment): an ops
 * table of counting verbs, set over the others when a context opens with
 * statistics on. The verbs themselves count nothing, so that without
 * IBCKPT_STATS the data path pays not even a test for them.
 */
#include "ibckpt.h"

static void count(atomic_ulong *c, unsigned long n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static int counted_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad)
{
	count(&to_iqp(qp)->ctx->stats.post_send, 1);
	return ibckpt_post_send(qp, wr, bad);
}

static int counted_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad)
{
	count(&to_iqp(qp)->ctx->stats.post_recv, 1);
	return ibckpt_post_recv(qp, wr, bad);
}

static int counted_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad)
{
	count(&to_isrq(srq)->ctx->stats.post_srq_recv, 1);
	return ibckpt_post_srq_recv(srq, wr, bad);
}

/* Polls, and the completions they returned (drained ones included). */
static int counted_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	struct ibckpt_context *ctx = to_icq(cq)->ctx;
	int n = ibckpt_poll_cq(cq, ne, wc);

	count(&ctx->stats.poll_cq, 1);
	if (n > 0)
		count(&ctx->stats.wc, (unsigned long)n);
	return n;
}

const struct verbs_context_ops ibckpt_counted_ops = {
	.poll_cq = counted_poll_cq,
	.post_recv = counted_post_recv,
	.post_send = counted_post_send,
	.post_srq_recv = counted_post_srq_recv,
};
