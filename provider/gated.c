// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Control-path verbs behind the gate: creates, registrations, queries,
 * notification requests, multicast attachments. The destroys, modify_qp and
 * modify_srq enter the gate in their own files (a thread must never enter
 * twice: a closer would wait for it forever), posts and polls none (they
 * test their queue's flag under its lock: quiesce.c); these enter it here,
 * around the whole verb, so that none of them reaches the vendor while the control
 * thread holds the gates closed: nothing is created after a snapshot and
 * before the thaw, and no verb finds the vendor's
 * context gone while released (restart.h).
 *
 * A thread arriving at a closed gate sleeps interruptibly: it parks like
 * any other, and a checkpointer can seize it.
 */
#include <errno.h>
#include "restart.h"

/*
 * refused(err): what the verb returns when the gate refuses it (a forked
 * child's inherited context, fork.c): the errno itself, or NULL with errno.
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
GATED(int, req_notify_cq, to_icq(cq)->ctx, (struct ibv_cq *cq, int solicited), (cq, solicited), ERRNO)
GATED(struct ibv_xrcd *, open_xrcd, to_ictx(c),
      (struct ibv_context *c, struct ibv_xrcd_init_attr *a), (c, a), NULL_ERRNO)
GATED(int, query_port, to_ictx(c), (struct ibv_context *c, uint8_t port, struct ibv_port_attr *a),
      (c, port, a), ERRNO)
GATED(int, query_device_ex, to_ictx(c),
      (struct ibv_context *c, const struct ibv_query_device_ex_input *in,
       struct ibv_device_attr_ex *a, size_t size), (c, in, a, size), ERRNO)

/* The ops libibverbs calls (context.c's table starts from these). */
const struct verbs_context_ops ibckpt_gated_ops = {
	.alloc_mw = gated_alloc_mw,
	.alloc_pd = gated_alloc_pd,
	.attach_mcast = gated_attach_mcast,
	.create_ah = gated_create_ah,
	.create_qp = gated_create_qp,
	.create_qp_ex = gated_create_qp_ex,
	.create_srq = gated_create_srq,
	.create_srq_ex = gated_create_srq_ex,
	.detach_mcast = gated_detach_mcast,
	.get_srq_num = gated_get_srq_num,
	.open_qp = gated_open_qp,
	.open_xrcd = gated_open_xrcd,
	.query_device_ex = gated_query_device_ex,
	.query_port = gated_query_port,
	.query_qp = gated_query_qp,
	.query_srq = gated_query_srq,
	.reg_mr = gated_reg_mr,
	.req_notify_cq = gated_req_notify_cq,
};
