// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The one memory region each side registers, cut into fixed areas. Both sides
 * compute the same layout from the same (nqp, window, msg_size), so offsets
 * into the peer's region need no exchange beyond its base address and rkey.
 *
 *   per QP: send slots (sq_depth)   sources of SEND/WRITE, sinks of READ/ATOMIC
 *   per QP: write ring (2 * window) targets of the peer's WRITE WITH IMM
 *   per QP: read area (msg_size)    a fixed pattern the peer RDMA-READs
 *   per QP: atomic counter (8)      the peer's fetch-and-add target
 *   SRQ receive slots (srq_depth)
 *   UD send slots (ud_depth), UD receive slots (ud_depth, + 40 for the GRH)
 */
#include "traffic.h"

#define UD_GRH 40

static size_t sz(const struct tctx *t)
{
	return (size_t)t->o.msg_size;
}

static size_t per_qp(const struct tctx *t)
{
	return sz(t) * ((size_t)t->sq_depth + 2u * t->o.window + 1) + 8;
}

static size_t qp_base(const struct tctx *t, int qp)
{
	/* keep every QP area 8-byte aligned for the atomic counter */
	size_t stride = (per_qp(t) + 7) & ~(size_t)7;

	return stride * (size_t)qp;
}

static size_t srq_base(const struct tctx *t)
{
	return qp_base(t, t->o.nqp);
}

static size_t ud_send_base(const struct tctx *t)
{
	return srq_base(t) + sz(t) * (size_t)t->srq_depth;
}

static size_t ud_recv_base(const struct tctx *t)
{
	return ud_send_base(t) + sz(t) * (size_t)t->ud_depth;
}

size_t tl_size(const struct tctx *t)
{
	return ud_recv_base(t) + (sz(t) + UD_GRH) * (size_t)t->ud_depth;
}

uint8_t *tl_sq_slot(struct tctx *t, int qp, uint64_t pos)
{
	return t->buf + qp_base(t, qp) + sz(t) * (pos % (uint64_t)t->sq_depth);
}

uint64_t tl_write_slot_off(const struct tctx *t, int qp, uint64_t seq)
{
	uint64_t ring = 2u * (uint64_t)t->o.window;

	return qp_base(t, qp) + sz(t) * ((uint64_t)t->sq_depth + seq % ring);
}

uint64_t tl_read_off(const struct tctx *t, int qp)
{
	return qp_base(t, qp) + sz(t) * ((size_t)t->sq_depth + 2u * t->o.window);
}

uint64_t tl_atomic_off(const struct tctx *t, int qp)
{
	return (tl_read_off(t, qp) + sz(t) + 7) & ~(uint64_t)7;
}

uint8_t *tl_srq_slot(struct tctx *t, uint64_t i)
{
	return t->buf + srq_base(t) + sz(t) * (i % (uint64_t)t->srq_depth);
}

uint8_t *tl_ud_send_slot(struct tctx *t, uint64_t pos)
{
	return t->buf + ud_send_base(t) + sz(t) * (pos % (uint64_t)t->ud_depth);
}

uint8_t *tl_ud_recv_slot(struct tctx *t, uint64_t i)
{
	return t->buf + ud_recv_base(t) + (sz(t) + UD_GRH) * (i % (uint64_t)t->ud_depth);
}
