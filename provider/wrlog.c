// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Work request log: see wrlog.h for the rules. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "wrlog.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

int ibckpt_wrlog_init(struct ibckpt_wrlog *log, enum ibckpt_wrlog_kind kind,
		      uint32_t max_wr, uint32_t max_sge, uint32_t max_inline, bool sq_sig_all)
{
	memset(log, 0, sizeof(*log));
	log->kind = kind;
	log->sq_sig_all = sq_sig_all;
	/*
	 * Vendors may round the queue up further than they report, and retire
	 * hardware slots of unsignaled requests at different times than we do:
	 * twice the reported depth never limits what the vendor accepts.
	 */
	log->size = pow2_at_least(2 * (max_wr ? max_wr : 1));
	log->max_sge = max_sge ? max_sge : 1;
	log->max_inline = max_inline;
	log->wr = calloc(log->size, sizeof(*log->wr));
	log->sge = calloc((size_t)log->size * log->max_sge, sizeof(*log->sge));
	if (max_inline)
		log->inline_buf = malloc((size_t)log->size * max_inline);
	if (!log->wr || !log->sge || (max_inline && !log->inline_buf)) {
		ibckpt_wrlog_destroy(log);
		return ENOMEM;
	}
	return 0;
}

void ibckpt_wrlog_destroy(struct ibckpt_wrlog *log)
{
	free(log->wr);
	free(log->sge);
	free(log->inline_buf);
	log->wr = NULL;
	log->sge = NULL;
	log->inline_buf = NULL;
}

static struct ibckpt_wr *slot_reserve(struct ibckpt_wrlog *log, int num_sge, uint32_t *idx)
{
	if (ibckpt_wrlog_count(log) == log->size)
		return NULL;
	if (num_sge < 0 || (uint32_t)num_sge > log->max_sge)
		return NULL;
	*idx = log->tail & (log->size - 1);
	return &log->wr[*idx];
}

int ibckpt_wrlog_send(struct ibckpt_wrlog *log, const struct ibv_send_wr *wr)
{
	struct ibckpt_wr *e;
	struct ibv_sge *sge;
	uint32_t idx, len = 0;
	int i;

	if (ibckpt_wrlog_count(log) == log->size)
		return ENOMEM;
	e = slot_reserve(log, wr->num_sge, &idx);
	if (!e)
		return EINVAL;
	sge = &log->sge[(size_t)idx * log->max_sge];
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* The payload is the data now, not the buffer later. */
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > log->max_inline)
			return EINVAL;
		uint8_t *dst = &log->inline_buf[(size_t)idx * log->max_inline];

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
	}
	for (i = 0; i < wr->num_sge; i++)	/* mostly one: no memcpy call */
		sge[i] = wr->sg_list[i];
	e->wr_id = wr->wr_id;
	e->opcode = (uint8_t)wr->opcode;
	e->send_flags = wr->send_flags | (log->sq_sig_all ? IBV_SEND_SIGNALED : 0);
	e->num_sge = (uint16_t)wr->num_sge;
	e->inline_len = len;
	e->imm_data = wr->imm_data;
	e->retired = 0;
	switch (wr->opcode) {
	case IBV_WR_BIND_MW:
		/* The window, its new rkey and what it is bound to (shadows). */
		e->ah = wr->bind_mw.mw;
		e->rkey = wr->bind_mw.rkey;
		e->remote_addr = wr->bind_mw.bind_info.addr;
		e->compare_add = wr->bind_mw.bind_info.length;
		e->swap = (uintptr_t)wr->bind_mw.bind_info.mr;
		e->imm_data = wr->bind_mw.bind_info.mw_access_flags;
		e->remote_qpn = e->remote_qkey = 0;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		e->remote_addr = wr->wr.atomic.remote_addr;
		e->rkey = wr->wr.atomic.rkey;
		e->compare_add = wr->wr.atomic.compare_add;
		e->swap = wr->wr.atomic.swap;
		e->ah = NULL;
		e->remote_qpn = e->remote_qkey = 0;
		break;
	default:
		e->remote_addr = wr->wr.rdma.remote_addr;
		e->rkey = wr->wr.rdma.rkey;
		e->compare_add = e->swap = 0;
		/* The union also holds UD's fields; keep them for UD queues. */
		e->ah = wr->wr.ud.ah;
		e->remote_qpn = wr->wr.ud.remote_qpn;
		e->remote_qkey = wr->wr.ud.remote_qkey;
		break;
	}
	log->tail++;
	log->posted++;
	return 0;
}

int ibckpt_wrlog_recv(struct ibckpt_wrlog *log, const struct ibv_recv_wr *wr)
{
	struct ibckpt_wr *e;
	uint32_t idx;
	int i;

	if (ibckpt_wrlog_count(log) == log->size)
		return ENOMEM;
	e = slot_reserve(log, wr->num_sge, &idx);
	if (!e)
		return EINVAL;
	/*
	 * Receive logs only ever hold receives, so the send fields of every
	 * slot are still the zeroes calloc() gave them: no memset per post.
	 */
	e->wr_id = wr->wr_id;
	e->num_sge = (uint16_t)wr->num_sge;
	e->retired = 0;
	for (i = 0; i < wr->num_sge; i++)
		log->sge[(size_t)idx * log->max_sge + i] = wr->sg_list[i];
	log->tail++;
	log->posted++;
	return 0;
}

uint32_t ibckpt_wrlog_signaled(const struct ibckpt_wrlog *log)
{
	uint32_t i, n = 0;

	for (i = log->head; i != log->tail; i++)
		if (log->wr[i & (log->size - 1)].send_flags & IBV_SEND_SIGNALED)
			n++;
	return n;
}

void ibckpt_wrlog_unpost(struct ibckpt_wrlog *log, uint32_t n)
{
	if (n > ibckpt_wrlog_count(log))
		n = ibckpt_wrlog_count(log);
	log->tail -= n;
	log->posted -= n;
}

static void advance_head(struct ibckpt_wrlog *log)
{
	while (log->head != log->tail && log->wr[log->head & (log->size - 1)].retired)
		log->head++;
}

static void retire_through(struct ibckpt_wrlog *log, uint32_t i)
{
	log->retired += i + 1;
	log->head += i + 1;
}

bool ibckpt_wrlog_complete(struct ibckpt_wrlog *log, uint64_t wr_id, bool success)
{
	uint32_t i, n = ibckpt_wrlog_count(log);
	struct ibckpt_wr *e;

	if (!n) {
		log->unmatched++;
		return false;
	}
	switch (log->kind) {
	case IBCKPT_WRLOG_SQ:
		for (i = 0; i < n; i++) {
			e = &log->wr[(log->head + i) & (log->size - 1)];
			/*
			 * Success: only signaled requests complete, in order,
			 * so it is the oldest signaled one, whatever its wr_id
			 * (applications reuse wr_ids). Failure: every request
			 * completes (flush), the first with this wr_id.
			 */
			if (success ? (e->send_flags & IBV_SEND_SIGNALED) != 0 : e->wr_id == wr_id)
				break;
		}
		if (i == n) {
			log->unmatched++;
			return false;
		}
		if (e->wr_id != wr_id)
			log->mismatched++;
		retire_through(log, i);
		return true;
	case IBCKPT_WRLOG_RQ:
		/* A receive queue completes in posting order, one by one. */
		e = &log->wr[log->head & (log->size - 1)];
		if (e->wr_id != wr_id)
			log->mismatched++;
		retire_through(log, 0);
		return true;
	case IBCKPT_WRLOG_SRQ:
		for (i = 0; i < n; i++) {
			e = &log->wr[(log->head + i) & (log->size - 1)];
			if (!e->retired && e->wr_id == wr_id) {
				e->retired = 1;
				log->retired++;
				advance_head(log);
				return true;
			}
		}
		break;
	}
	log->unmatched++;
	return false;
}

const struct ibckpt_wr *ibckpt_wrlog_at(const struct ibckpt_wrlog *log, uint32_t i,
					const struct ibv_sge **sge, const uint8_t **inline_data)
{
	uint32_t idx;

	if (i >= ibckpt_wrlog_count(log))
		return NULL;
	idx = (log->head + i) & (log->size - 1);
	if (sge)
		*sge = &log->sge[(size_t)idx * log->max_sge];
	if (inline_data)
		*inline_data = log->inline_buf ? &log->inline_buf[(size_t)idx * log->max_inline]
					       : NULL;
	return &log->wr[idx];
}
