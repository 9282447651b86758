// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Extended CQs (ibv_create_cq_ex, ibv_start_poll/ibv_next_poll/ibv_end_poll
 * and the ibv_wc_read_*() accessors).
 *
 * The shadow is an ordinary shadow CQ (cq.c) whose public part is an
 * ibv_cq_ex. Its poll functions take one completion at a time through the
 * same path as ibv_poll_cq(): the private queue first, then the vendor's CQ,
 * retiring logged requests as they go; the accessors read that completion.
 * The vendor's CQ is created with ibv_create_cq_ex() and the same wc_flags,
 * so the vendor accepts or refuses them exactly as without ibckpt.
 *
 * Only what a struct ibv_wc carries can be read back this way: CQs asking
 * for completion timestamps, CVLAN, flow tag or tag-matching data are
 * refused with EOPNOTSUPP (Documentation/provider.rst).
 */
#include <errno.h>
#include "ibckpt.h"

#define IBCKPT_WC_EX_FLAGS						\
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |		\
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |		\
	 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |			\
	 IBV_WC_EX_WITH_DLID_PATH_BITS)

/* 0 with the completion in cq->cur, ENOENT when empty, or an error. */
static int cqx_poll_one(struct ibv_cq_ex *cqx)
{
	struct ibckpt_cq *cq = to_icq_ex(cqx);
	int n;

	if (ibckpt_ctx_refuses(cq->ctx))	/* an inherited CQ: not through the ops (fork.c) */
		return EACCES;
	n = ibckpt_poll_cq(&cq->ibv_cq, 1, &cq->cur);

	if (n == 0)
		return ENOENT;
	if (n < 0)
		return EIO;
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = cq->cur.status;
	return 0;
}

static int cqx_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	if (attr->comp_mask)
		return EINVAL;
	return cqx_poll_one(cqx);
}

static int cqx_next_poll(struct ibv_cq_ex *cqx)
{
	return cqx_poll_one(cqx);
}

/* Each completion was taken whole by its poll: nothing is held in between. */
static void cqx_end_poll(struct ibv_cq_ex *cqx)
{
	(void)cqx;
}

static enum ibv_wc_opcode cqx_read_opcode(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.opcode;
}

static uint32_t cqx_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.vendor_err;
}

static uint32_t cqx_read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.byte_len;
}

/* The immediate data, or the invalidated rkey (IBV_WC_WITH_INV): one field. */
static __be32 cqx_read_imm_data(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.imm_data;
}

static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.qp_num;
}

static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.src_qp;
}

static unsigned int cqx_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.wc_flags;
}

static uint32_t cqx_read_slid(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.slid;
}

static uint8_t cqx_read_sl(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.sl;
}

static uint8_t cqx_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return to_icq_ex(cqx)->cur.dlid_path_bits;
}

static struct ibv_cq *make_cq_ex(struct ibckpt_cq *cq, struct ibv_comp_channel *real_channel,
				 void *arg)
{
	struct ibv_cq_init_attr_ex ra = *(const struct ibv_cq_init_attr_ex *)arg;
	struct ibv_cq_ex *real;

	ra.cq_context = cq;
	ra.channel = real_channel;
	real = ibv_create_cq_ex(cq->ctx->real, &ra);
	return real ? ibv_cq_ex_to_cq(real) : NULL;
}

struct ibv_cq_ex *ibckpt_create_cq_ex(struct ibv_context *context,
				      struct ibv_cq_init_attr_ex *attr)
{
	struct ibckpt_cq *cq;
	struct ibv_cq_ex *x;

	if ((attr->wc_flags & ~(uint64_t)IBCKPT_WC_EX_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS)) {
		ibckpt_dbg("create_cq_ex: wc_flags %#llx comp_mask %#x not stacked",
			   (unsigned long long)attr->wc_flags, attr->comp_mask);
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = ibckpt_cq_create(to_ictx(context), attr, true, make_cq_ex, attr);
	if (!cq)
		return NULL;
	x = &cq->cq_ex;
	x->start_poll = cqx_start_poll;
	x->next_poll = cqx_next_poll;
	x->end_poll = cqx_end_poll;
	x->read_opcode = cqx_read_opcode;
	x->read_vendor_err = cqx_read_vendor_err;
	x->read_wc_flags = cqx_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = cqx_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = cqx_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = cqx_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = cqx_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = cqx_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = cqx_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = cqx_read_dlid_path_bits;
	return x;
}
