// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the WR logs and the ibv_wr_* staging of one QP cost (issue #14),
 * in bytes: at creation, with 64 one-SGE requests outstanding on
 * each queue, and with the queues full of requests of the most SGEs. "Before"
 * is what the fixed rings of 0f38141..this change allocated at creation,
 * whatever was posted: 2 x depth (a power of two) x (88 + 16 x max_sge +
 * max_inline) per log, depth x (128 + 16 x max_sge + max_inline) staged.
 * Runs on the host: the logs need no device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../provider/ibckpt.h"

bool ibckpt_debug, ibckpt_stats_on;

/* The staging's post path is not taken here. */
int ibckpt_qpx_post(struct ibckpt_qp *qp, struct ibv_send_wr *wr)
{
	(void)qp;
	(void)wr;
	return EOPNOTSUPP;
}

struct shape {
	const char *name;
	uint32_t send, recv, sge, inl;
};

static size_t pow2(uint32_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static size_t before(const struct shape *s)
{
	size_t slot = 88 + 16 * (size_t)s->sge;

	return pow2(2 * s->send) * (slot + s->inl) + pow2(2 * s->recv) * slot +
	       (size_t)s->send * (128 + 16 * (size_t)s->sge + s->inl);
}

/* Posts 'n' requests of 'sges' SGEs on both logs; the bytes the QP then holds. */
static size_t fill(struct ibckpt_wrlog *sq, struct ibckpt_wrlog *rq, uint32_t n, uint32_t sges)
{
	static struct ibv_sge sge[64];
	struct ibv_send_wr s = { .sg_list = sge, .num_sge = (int)sges, .opcode = IBV_WR_SEND };
	struct ibv_recv_wr r = { .sg_list = sge, .num_sge = (int)sges };
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (ibckpt_wrlog_send(sq, &s) || ibckpt_wrlog_recv(rq, &r)) {
			fprintf(stderr, "logmem: post %u refused\n", i);
			exit(1);
		}
	}
	return ibckpt_wrlog_bytes(sq) + ibckpt_wrlog_bytes(rq);
}

int main(void)
{
	static const struct shape shapes[] = {
		{ "ibv_rc_pingpong (rxe)", 1, 500, 1, 0 },
		{ "ib_write_bw defaults (rxe)", 128, 512, 1, 220 },
		{ "mlx5-sized, review #9", 16384, 16384, 30, 256 },
	};
	size_t i;

	printf("%-28s %-18s %10s %9s %9s %10s\n", "QP", "send/recv SGE inl", "before",
	       "created", "64 posted", "full");
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		struct ibv_qp_cap cap = { .max_send_wr = s->send, .max_send_sge = s->sge,
					  .max_inline_data = s->inl };
		struct ibckpt_wrlog sq, rq;
		struct ibckpt_qp qp;
		size_t created, few, full, staging;
		uint32_t depth = s->send < s->recv ? s->send : s->recv;

		memset(&qp, 0, sizeof(qp));
		/* as qp.c creates them */
		if (ibckpt_wrlog_init(&sq, IBCKPT_WRLOG_SQ, ibckpt_wrlog_depth(s->send), s->sge,
				      s->inl, false) ||
		    ibckpt_wrlog_init(&rq, IBCKPT_WRLOG_RQ, ibckpt_wrlog_depth(s->recv), s->sge, 0,
				      false) ||
		    ibckpt_qpx_init(&qp, IBV_QP_EX_WITH_SEND, &cap, 0))
			return 1;
		staging = ibckpt_qpx_bytes(qp.qpx);
		created = ibckpt_wrlog_bytes(&sq) + ibckpt_wrlog_bytes(&rq) + staging;
		few = fill(&sq, &rq, depth < 64 ? depth : 64, 1) + staging;
		full = fill(&sq, &rq, depth - (depth < 64 ? depth : 64), s->sge) + staging;
		printf("%-28s %5u/%-5u %2u %3u %10zu %9zu %9zu %10zu\n", s->name, s->send, s->recv,
		       s->sge, s->inl, before(s), created, few, full);
		ibckpt_wrlog_destroy(&sq);
		ibckpt_wrlog_destroy(&rq);
		ibckpt_qpx_free(qp.qpx);
	}
	printf("(bytes per QP: send and receive logs, ibv_wr_* staging; \"full\": the smaller\n"
	       " depth posted on both queues, beyond 64 with the most SGEs each)\n");
	return 0;
}
