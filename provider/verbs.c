// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What libibverbs calls through a context's ops: each entry listed once, in
 * the control path's table or in the data path's table for each state of a
 * context. The entries themselves live in their objects' files. (The
 * extended CQ's polls, the ibv_wr_* batches and the device's ops are the
 * objects' own pointers: cq_ex.c, qp_ex.c, device.c.)
 *
 * Control path (ibckpt_ctx_ops, set once when a context opens). The
 * creates, registrations, queries, notification requests and multicast
 * attachments below enter the context's gate around the whole verb, so that
 * none of them reaches the vendor while the control thread holds the gates
 * closed: nothing is created after a snapshot and before the thaw, and no
 * verb finds the vendor's context gone while released (restart.h). The
 * destroys, CQ creation and resize, modify_qp, modify_srq, window binds and
 * close_xrcd enter the gate in their own files, around what they must
 * cover and no more: a thread must never enter twice, since a closer would
 * wait for it forever. A thread arriving at a closed
 * gate sleeps interruptibly: it parks like any other, and a checkpointer
 * can seize it.
 *
 * Data path (post_send, post_recv, post_srq_recv, poll_cq). libibverbs'
 * inline ibv_post_send() and ibv_poll_cq() call them through the context's
 * struct ibv_context_ops on every call, so they are switched there as the
 * context's state changes (ibckpt_ctx_set_datapath()). They enter no gate:
 * each takes its queue's lock and tests the queue's closed flag under it
 * (quiesce.c).
 *
 *   state             post_send, post_recv        post_srq_recv  poll_cq
 *   identity          ibckpt_post_send, _recv     ibckpt_        ibckpt_poll_cq
 *   remapped          ibckpt_post_send_xl, _xl    ibckpt_        ibckpt_poll_cq_xl
 *   counted           counted_*: count, then the identity entries
 *   foreign           refused_*: EACCES before any lock
 *
 * identity: IDs are the vendor's. remapped: after a restart's reacquire,
 * the entries translate inline (qp_post.c, cq.c). counted: IBCKPT_STATS,
 * remapped or not: the identity entries translate on their general paths,
 * so counting stays through a restart. foreign: a forked child's copy of
 * its parent's context (fork.c); the entries the parent keeps calling test
 * nothing for it.
 */
#include <errno.h>
#include "restart.h"

/*
 * GATED(): the verb @name called inside the context's gate. refused(err):
 * what it returns when the gate refuses it (a forked child's inherited
 * context, fork.c): the errno itself, or NULL with errno.
 */
#define GATED(ret_t, name, ctx_expr, params, args, refused)			\
	static ret_t gated_##name params					\
	{									\
		struct ibckpt_context *ctx = (ctx_expr);			\
		int err = ibckpt_gate_enter(&ctx->gate);			\
		ret_t r;							\
										\
		if (err)							\
			return refused(err);					\
		r = ibckpt_##name args;						\
		ibckpt_gate_exit(&ctx->gate);					\
		return r;							\
	}

#define ERRNO(err)	(err)
#define NULL_ERRNO(err)	(errno = (err), NULL)

GATED(struct ibv_pd *, alloc_pd, to_ictx(c), (struct ibv_context *c), (c), NULL_ERRNO)
GATED(struct ibv_mr *, reg_mr, to_ictx(pd->context),
      (struct ibv_pd *pd, void *addr, size_t len, uint64_t hca_va, int access),
      (pd, addr, len, hca_va, access), NULL_ERRNO)
GATED(struct ibv_mw *, alloc_mw, to_ictx(pd->context), (struct ibv_pd *pd, enum ibv_mw_type t),
      (pd, t), NULL_ERRNO)
GATED(struct ibv_ah *, create_ah, to_ictx(pd->context), (struct ibv_pd *pd, struct ibv_ah_attr *a),
      (pd, a), NULL_ERRNO)
GATED(struct ibv_qp *, create_qp, to_ictx(pd->context),
      (struct ibv_pd *pd, struct ibv_qp_init_attr *a), (pd, a), NULL_ERRNO)
GATED(struct ibv_qp *, create_qp_ex, to_ictx(c),
      (struct ibv_context *c, struct ibv_qp_init_attr_ex *a), (c, a), NULL_ERRNO)
GATED(struct ibv_qp *, open_qp, to_ictx(c), (struct ibv_context *c, struct ibv_qp_open_attr *a),
      (c, a), NULL_ERRNO)
GATED(int, query_qp, to_iqp(qp)->ctx,
      (struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init),
      (qp, a, mask, init), ERRNO)
GATED(int, attach_mcast, to_iqp(qp)->ctx, (struct ibv_qp *qp, const union ibv_gid *g, uint16_t lid),
      (qp, g, lid), ERRNO)
GATED(int, detach_mcast, to_iqp(qp)->ctx, (struct ibv_qp *qp, const union ibv_gid *g, uint16_t lid),
      (qp, g, lid), ERRNO)
GATED(struct ibv_srq *, create_srq, to_ictx(pd->context),
      (struct ibv_pd *pd, struct ibv_srq_init_attr *a), (pd, a), NULL_ERRNO)
GATED(struct ibv_srq *, create_srq_ex, to_ictx(c),
      (struct ibv_context *c, struct ibv_srq_init_attr_ex *a), (c, a), NULL_ERRNO)
GATED(int, query_srq, to_isrq(s)->ctx, (struct ibv_srq *s, struct ibv_srq_attr *a), (s, a), ERRNO)
GATED(int, get_srq_num, to_isrq(s)->ctx, (struct ibv_srq *s, uint32_t *n), (s, n), ERRNO)
GATED(int, req_notify_cq, to_icq(cq)->ctx, (struct ibv_cq *cq, int solicited),
      (cq, solicited), ERRNO)
GATED(struct ibv_xrcd *, open_xrcd, to_ictx(c),
      (struct ibv_context *c, struct ibv_xrcd_init_attr *a), (c, a), NULL_ERRNO)
GATED(int, query_port, to_ictx(c), (struct ibv_context *c, uint8_t port, struct ibv_port_attr *a),
      (c, port, a), ERRNO)
GATED(int, query_device_ex, to_ictx(c),
      (struct ibv_context *c, const struct ibv_query_device_ex_input *in,
       struct ibv_device_attr_ex *a, size_t size), (c, in, a, size), ERRNO)

/*
 * The control path: every entry but the data path's four, which follow the
 * context's state (ibckpt_datapaths[]).
 */
const struct verbs_context_ops ibckpt_ctx_ops = {
	.alloc_mw = gated_alloc_mw,
	.alloc_pd = gated_alloc_pd,
	.async_event = ibckpt_async_event,
	.attach_mcast = gated_attach_mcast,
	.bind_mw = ibckpt_bind_mw,
	.close_xrcd = ibckpt_close_xrcd,
	.cq_event = ibckpt_cq_event,
	.create_ah = gated_create_ah,
	.create_cq = ibckpt_create_cq,
	.create_cq_ex = ibckpt_create_cq_ex,
	.create_qp = gated_create_qp,
	.create_qp_ex = gated_create_qp_ex,
	.create_srq = gated_create_srq,
	.create_srq_ex = gated_create_srq_ex,
	.dealloc_mw = ibckpt_dealloc_mw,
	.dealloc_pd = ibckpt_dealloc_pd,
	.dereg_mr = ibckpt_dereg_mr,
	.destroy_ah = ibckpt_destroy_ah,
	.destroy_cq = ibckpt_destroy_cq,
	.destroy_qp = ibckpt_destroy_qp,
	.destroy_srq = ibckpt_destroy_srq,
	.detach_mcast = gated_detach_mcast,
	.free_context = ibckpt_free_context,
	.get_srq_num = gated_get_srq_num,
	.modify_qp = ibckpt_modify_qp,
	.modify_srq = ibckpt_modify_srq,
	.open_qp = gated_open_qp,
	.open_xrcd = gated_open_xrcd,
	.query_device_ex = gated_query_device_ex,
	.query_port = gated_query_port,
	.query_qp = gated_query_qp,
	.query_srq = gated_query_srq,
	.reg_mr = gated_reg_mr,
	.req_notify_cq = gated_req_notify_cq,
	.resize_cq = ibckpt_resize_cq,
};

/*
 * counted: with IBCKPT_STATS. The verbs themselves count nothing, so that
 * without it the data path pays not even a test.
 */
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

/*
 * foreign: a forked child's posts and polls on its parent's objects, refused
 * before any shadow lock, which the fork may have copied held.
 */
static int refused_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad)
{
	(void)qp;
	*bad = wr;
	return EACCES;
}

static int refused_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad)
{
	(void)qp;
	*bad = wr;
	return EACCES;
}

static int refused_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad)
{
	(void)srq;
	*bad = wr;
	return EACCES;
}

static int refused_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	(void)cq;
	(void)ne;
	(void)wc;
	errno = EACCES;
	return -1;
}

const struct ibckpt_datapath ibckpt_datapaths[IBCKPT_DP_NR] = {
	[IBCKPT_DP_IDENTITY] = {
		.post_send = ibckpt_post_send,
		.post_recv = ibckpt_post_recv,
		.post_srq_recv = ibckpt_post_srq_recv,
		.poll_cq = ibckpt_poll_cq,
	},
	[IBCKPT_DP_REMAPPED] = {
		.post_send = ibckpt_post_send_xl,
		.post_recv = ibckpt_post_recv_xl,
		.post_srq_recv = ibckpt_post_srq_recv,
		.poll_cq = ibckpt_poll_cq_xl,
	},
	[IBCKPT_DP_COUNTED] = {
		.post_send = counted_post_send,
		.post_recv = counted_post_recv,
		.post_srq_recv = counted_post_srq_recv,
		.poll_cq = counted_poll_cq,
	},
	[IBCKPT_DP_FOREIGN] = {
		.post_send = refused_post_send,
		.post_recv = refused_post_recv,
		.post_srq_recv = refused_post_srq_recv,
		.poll_cq = refused_poll_cq,
	},
};

/* Foreign comes first, then counted, then remapped. */
static const struct ibckpt_datapath *datapath_of(const struct ibckpt_context *ctx)
{
	if (ctx->foreign)
		return &ibckpt_datapaths[IBCKPT_DP_FOREIGN];
	if (ibckpt_stats_on)
		return &ibckpt_datapaths[IBCKPT_DP_COUNTED];
	if (ctx->remapped)
		return &ibckpt_datapaths[IBCKPT_DP_REMAPPED];
	return &ibckpt_datapaths[IBCKPT_DP_IDENTITY];
}

/**
 * ibckpt_ctx_set_ops() - a new context's ops, given to libibverbs
 * @ctx: a context being opened, not yet returned to the application
 *
 * The control path's table with the data path of the context's state,
 * through verbs_set_ops(), which keeps its own copy of every entry.
 */
void ibckpt_ctx_set_ops(struct ibckpt_context *ctx)
{
	const struct ibckpt_datapath *dp = datapath_of(ctx);
	struct verbs_context_ops ops = ibckpt_ctx_ops;

	ops.post_send = dp->post_send;
	ops.post_recv = dp->post_recv;
	ops.post_srq_recv = dp->post_srq_recv;
	ops.poll_cq = dp->poll_cq;
	verbs_set_ops(&ctx->vctx, &ops);
}

/**
 * ibckpt_ctx_set_datapath() - the data path's entries for a context's new state
 * @ctx: a context remapped (its gate closed, ctx->lock held) or made
 *	foreign (a fork's child, one thread)
 *
 * Only the entries libibverbs' inline ibv_post_send(), ibv_post_recv(),
 * ibv_post_srq_recv() and ibv_poll_cq() call change; libibverbs' own copy
 * (verbs_set_ops()) is read by none of them. A thread that loaded the old
 * entry just before a store still posts and polls right: every entry is
 * right in either state (it waits at its closed queue first). Those inline
 * calls load the pointers with plain loads (a data race in C11 terms, which
 * a race detector reports): aligned pointer stores are never seen torn.
 */
void ibckpt_ctx_set_datapath(struct ibckpt_context *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;
	const struct ibckpt_datapath *dp = datapath_of(ctx);

	__atomic_store_n(&ops->post_send, dp->post_send, __ATOMIC_RELAXED);
	__atomic_store_n(&ops->post_recv, dp->post_recv, __ATOMIC_RELAXED);
	__atomic_store_n(&ops->post_srq_recv, dp->post_srq_recv, __ATOMIC_RELAXED);
	__atomic_store_n(&ops->poll_cq, dp->poll_cq, __ATOMIC_RELAXED);
}
