// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The extended post-send API (ibv_qp_to_qp_ex, ibv_wr_start ... ibv_wr_*
 * ... ibv_wr_complete) on shadow QPs.
 *
 * The shadow's ibv_qp_ex builds ordinary work requests in a staging area that
 * grows with the batch, up to the send queue's depth (it starts small: a
 * deep queue with many SGEs would otherwise cost megabytes to stage what is
 * mostly one request at a time); ibv_wr_complete() hands the list to
 * ibckpt_qpx_post() (qp_ex_post.c), which logs it like any post, and
 * gives it to the vendor's own ibv_wr_* API: all of it or none. The
 * vendor's QP is created with the same send_ops_flags, so it accepts or
 * refuses them as without ibckpt.
 *
 * Inline data is copied into the staging area when it is set, as the API
 * allows the caller to reuse its buffer at once. Errors while building (too
 * many requests, SGEs or inline bytes, an unsupported setter) are kept and
 * returned by ibv_wr_complete(), which then posts nothing; so does an
 * error of the log or of the vendor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ibckpt.h"

/*
 * What maps onto struct ibv_send_wr (TSO too: its header copied into the
 * staging area), and atomic write (staged with its 8 bytes in
 * wr.atomic.swap, which ibv_post_send() has no agreed form for).
 */
#define IBCKPT_SEND_OPS							\
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |	\
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |	\
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV |		\
	 IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_TSO)

static inline struct ibckpt_qp *to_iqp_ex(struct ibv_qp_ex *x)
{
	return ibckpt_container_of(x, struct ibckpt_qp, vqp.qp_ex);
}

/* The request the setters apply to: the newest, or scratch after an error. */
static struct ibv_send_wr *cur_wr(struct ibckpt_qpx *s)
{
	return s->n && !s->err ? &s->wr[s->n - 1] : &s->scratch;
}

/* First staging slots; doubled as a batch needs, up to the queue's depth. */
#define QPX_FIRST_SLOTS 16u

/* p of old_n elements of 'size' bytes made n (zeroed); p as it was once *ok is false. */
static void *grow(void *p, size_t n, size_t size, size_t old_n, bool *ok)
{
	uint8_t *q;

	if (!*ok || !size)
		return p;
	q = realloc(p, n * size);
	if (!q) {
		*ok = false;
		return p;
	}
	memset(q + old_n * size, 0, (n - old_n) * size);
	return q;
}

/*
 * Room for 'n' slots. The requests staged so far may move, so their
 * pointers into the staging (next, SGE list, inline copy, TSO header) are
 * made again, whether or not all of it grew. False if memory ran out.
 */
static bool qpx_grow(struct ibckpt_qpx *s, uint32_t n)
{
	size_t sges = s->max_sge ? s->max_sge : 1;
	/* inline copies: an SGE pointing into the old area (not every SGE of an
	 * IBV_SEND_INLINE request: wr_flags may say so with the caller's SGE) */
	uintptr_t old_inl = (uintptr_t)s->inl, inl_len = (uintptr_t)s->alloc * s->max_inline;
	bool ok = true;
	uint32_t i;

	s->wr = grow(s->wr, n, sizeof(*s->wr), s->alloc, &ok);
	s->sge = grow(s->sge, n, sges * sizeof(*s->sge), s->alloc, &ok);
	s->inl = grow(s->inl, n, s->max_inline, s->alloc, &ok);
	s->hdr = grow(s->hdr, n, s->max_hdr, s->alloc, &ok);
	for (i = 0; i < s->n; i++) {
		struct ibv_send_wr *w = &s->wr[i];

		w->next = i + 1 < s->n ? &s->wr[i + 1] : NULL;
		w->sg_list = &s->sge[(size_t)i * sges];
		if (w->num_sge && w->sg_list[0].addr - old_inl < inl_len)
			w->sg_list[0].addr = (uintptr_t)s->inl + (w->sg_list[0].addr - old_inl);
		if (w->opcode == IBV_WR_TSO && w->tso.hdr_sz)
			w->tso.hdr = &s->hdr[(size_t)i * s->max_hdr];
	}
	if (ok)
		s->alloc = n;
	return ok;
}

static struct ibv_send_wr *new_wr(struct ibv_qp_ex *x, enum ibv_wr_opcode opcode)
{
	struct ibckpt_qpx *s = to_iqp_ex(x)->qpx;
	struct ibv_send_wr *w;

	if (s->err)
		return &s->scratch;
	if (s->n == s->alloc &&
	    (s->alloc == s->max || !qpx_grow(s, s->alloc * 2 < s->max ? s->alloc * 2 : s->max))) {
		s->err = ENOMEM;
		return &s->scratch;
	}
	w = &s->wr[s->n];
	memset(w, 0, sizeof(*w));
	w->wr_id = x->wr_id;
	w->send_flags = x->wr_flags;
	w->opcode = opcode;
	w->sg_list = &s->sge[(size_t)s->n * (s->max_sge ? s->max_sge : 1)];
	if (s->n)
		s->wr[s->n - 1].next = w;
	s->n++;
	return w;
}

static void qpx_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_RDMA_WRITE);

	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = remote_addr;
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
			       __be32 imm_data)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_RDMA_WRITE_WITH_IMM);

	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = remote_addr;
	w->imm_data = imm_data;
}

static void qpx_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_RDMA_READ);

	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = remote_addr;
}

static void qpx_send(struct ibv_qp_ex *x)
{
	new_wr(x, IBV_WR_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *x, __be32 imm_data)
{
	new_wr(x, IBV_WR_SEND_WITH_IMM)->imm_data = imm_data;
}

static void qpx_send_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	new_wr(x, IBV_WR_SEND_WITH_INV)->invalidate_rkey = invalidate_rkey;
}

static void qpx_local_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	new_wr(x, IBV_WR_LOCAL_INV)->invalidate_rkey = invalidate_rkey;
}

static void qpx_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
			       uint64_t compare, uint64_t swap)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_ATOMIC_CMP_AND_SWP);

	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = remote_addr;
	w->wr.atomic.compare_add = compare;
	w->wr.atomic.swap = swap;
}

static void qpx_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
				 uint64_t add)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_ATOMIC_FETCH_AND_ADD);

	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = remote_addr;
	w->wr.atomic.compare_add = add;
}

/* The header is the caller's until this returns: copied, like inline data. */
static void qpx_send_tso(struct ibv_qp_ex *x, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	struct ibckpt_qpx *s = to_iqp_ex(x)->qpx;
	struct ibv_send_wr *w = new_wr(x, IBV_WR_TSO);
	uint8_t *copy;

	if (w == &s->scratch)
		return;
	if (hdr_sz > s->max_hdr) {
		s->err = EINVAL;
		return;
	}
	copy = hdr_sz ? &s->hdr[(size_t)(s->n - 1) * s->max_hdr] : NULL;
	if (hdr_sz)
		memcpy(copy, hdr, hdr_sz);
	w->tso.hdr = copy;
	w->tso.hdr_sz = hdr_sz;
	w->tso.mss = mss;
}

static void qpx_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
			     const void *atomic_wr)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_ATOMIC_WRITE);

	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = remote_addr;
	memcpy(&w->wr.atomic.swap, atomic_wr, sizeof(w->wr.atomic.swap));
}

static void qpx_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
			const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *w = new_wr(x, IBV_WR_BIND_MW);

	w->bind_mw.mw = mw;
	w->bind_mw.rkey = rkey;
	w->bind_mw.bind_info = *bind_info;
}

static void qpx_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t remote_qpn,
			    uint32_t remote_qkey)
{
	struct ibv_send_wr *w = cur_wr(to_iqp_ex(x)->qpx);

	w->wr.ud.ah = ah;
	w->wr.ud.remote_qpn = remote_qpn;
	w->wr.ud.remote_qkey = remote_qkey;
}

static void qpx_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t remote_srqn)
{
	cur_wr(to_iqp_ex(x)->qpx)->qp_type.xrc.remote_srqn = remote_srqn;
}

static void qpx_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibckpt_qpx *s = to_iqp_ex(x)->qpx;
	struct ibv_send_wr *w = cur_wr(s);

	if (w == &s->scratch)
		return;
	if (!s->max_sge) {
		s->err = EINVAL;
		return;
	}
	w->sg_list[0] = (struct ibv_sge){ .addr = addr, .length = length, .lkey = lkey };
	w->num_sge = 1;
}

static void qpx_set_sge_list(struct ibv_qp_ex *x, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct ibckpt_qpx *s = to_iqp_ex(x)->qpx;
	struct ibv_send_wr *w = cur_wr(s);

	if (w == &s->scratch)
		return;
	if (num_sge > s->max_sge) {
		s->err = EINVAL;
		return;
	}
	memcpy(w->sg_list, sg_list, num_sge * sizeof(*sg_list));
	w->num_sge = (int)num_sge;
}

/* The payload is copied now; one SGE points the vendor at the copy. */
static void qpx_set_inline_data_list(struct ibv_qp_ex *x, size_t num_buf,
				     const struct ibv_data_buf *buf_list)
{
	struct ibckpt_qpx *s = to_iqp_ex(x)->qpx;
	struct ibv_send_wr *w = cur_wr(s);
	uint8_t *dst;
	size_t i, len = 0;

	if (w == &s->scratch)
		return;
	for (i = 0; i < num_buf; i++)
		len += buf_list[i].length;
	if (len > s->max_inline || !s->max_sge) {
		s->err = ENOSPC;
		return;
	}
	dst = &s->inl[(size_t)(w - s->wr) * s->max_inline];
	w->sg_list[0] = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = (uint32_t)len };
	for (i = 0; i < num_buf; i++) {
		memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	w->num_sge = 1;
	w->send_flags |= IBV_SEND_INLINE;
}

static void qpx_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	qpx_set_inline_data_list(x, 1, &b);
}

static void qpx_start(struct ibv_qp_ex *x)
{
	struct ibckpt_qpx *s = to_iqp_ex(x)->qpx;

	s->n = 0;
	s->err = 0;
}

static int qpx_complete(struct ibv_qp_ex *x)
{
	struct ibckpt_qp *qp = to_iqp_ex(x);
	struct ibckpt_qpx *s = qp->qpx;
	int ret = s->err;

	if (!ret && s->n) {
		IBCKPT_COUNT(qp->ctx, post_send, 1);
		s->wr[s->n - 1].next = NULL;
		ret = ibckpt_qpx_post(qp, s->wr);
	}
	s->n = 0;
	s->err = 0;
	return ret;
}

static void qpx_abort(struct ibv_qp_ex *x)
{
	qpx_start(x);
}

/**
 * ibckpt_qpx_check() - can the shadow serve these send_ops_flags?
 * @flags: IBV_QP_EX_WITH_* the application asks for
 *
 * Return: 0, or EOPNOTSUPP for anything newer than rdma-core 44's.
 */
int ibckpt_qpx_check(uint64_t flags)
{
	return flags & ~(uint64_t)IBCKPT_SEND_OPS ? EOPNOTSUPP : 0;
}

/**
 * ibckpt_qpx_init() - give a shadow QP its ibv_qp_ex
 * @qp: the shadow, created with these send queue capabilities
 * @flags: send_ops_flags, already checked by ibckpt_qpx_check()
 * @cap: what the vendor granted
 * @max_tso_header: the QP's max_tso_header, 0 if not given
 *
 * Return: 0 or ENOMEM.
 */
int ibckpt_qpx_init(struct ibckpt_qp *qp, uint64_t flags, const struct ibv_qp_cap *cap,
		    uint32_t max_tso_header)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	struct ibckpt_qpx *s = calloc(1, sizeof(*s));
	size_t slots = cap->max_send_wr ? cap->max_send_wr : 1;

	if (!s)
		return ENOMEM;
	s->flags = flags;
	s->max = (uint32_t)slots;
	s->max_sge = cap->max_send_sge;
	s->max_inline = cap->max_inline_data;
	s->max_hdr = max_tso_header;
	s->scratch.sg_list = &s->scratch_sge;
	if (!qpx_grow(s, s->max < QPX_FIRST_SLOTS ? s->max : QPX_FIRST_SLOTS)) {
		ibckpt_qpx_free(s);
		return ENOMEM;
	}
	qp->qpx = s;
	x->comp_mask = 0;
	x->wr_start = qpx_start;
	x->wr_complete = qpx_complete;
	x->wr_abort = qpx_abort;
	x->wr_set_ud_addr = qpx_set_ud_addr;
	x->wr_set_xrc_srqn = qpx_set_xrc_srqn;
	x->wr_set_inline_data = qpx_set_inline_data;
	x->wr_set_inline_data_list = qpx_set_inline_data_list;
	x->wr_set_sge = qpx_set_sge;
	x->wr_set_sge_list = qpx_set_sge_list;
#define OP(bit, field, fn) do { if (flags & (bit)) x->field = fn; } while (0)
	OP(IBV_QP_EX_WITH_RDMA_WRITE, wr_rdma_write, qpx_rdma_write);
	OP(IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, wr_rdma_write_imm, qpx_rdma_write_imm);
	OP(IBV_QP_EX_WITH_SEND, wr_send, qpx_send);
	OP(IBV_QP_EX_WITH_SEND_WITH_IMM, wr_send_imm, qpx_send_imm);
	OP(IBV_QP_EX_WITH_RDMA_READ, wr_rdma_read, qpx_rdma_read);
	OP(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, wr_atomic_cmp_swp, qpx_atomic_cmp_swp);
	OP(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, wr_atomic_fetch_add, qpx_atomic_fetch_add);
	OP(IBV_QP_EX_WITH_LOCAL_INV, wr_local_inv, qpx_local_inv);
	OP(IBV_QP_EX_WITH_BIND_MW, wr_bind_mw, qpx_bind_mw);
	OP(IBV_QP_EX_WITH_SEND_WITH_INV, wr_send_inv, qpx_send_inv);
	OP(IBV_QP_EX_WITH_ATOMIC_WRITE, wr_atomic_write, qpx_atomic_write);
	OP(IBV_QP_EX_WITH_TSO, wr_send_tso, qpx_send_tso);
#undef OP
	qp->vqp.comp_mask |= VERBS_QP_EX;
	return 0;
}

size_t ibckpt_qpx_bytes(const struct ibckpt_qpx *s)
{
	return sizeof(*s) + s->alloc * (sizeof(*s->wr) +
					(s->max_sge ? s->max_sge : 1) * sizeof(*s->sge) +
					s->max_inline + s->max_hdr);
}

void ibckpt_qpx_free(struct ibckpt_qpx *s)
{
	if (!s)
		return;
	free(s->wr);
	free(s->sge);
	free(s->inl);
	free(s->hdr);
	free(s);
}
