// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ibv_wr_* staging of shadow QPs (qp_ex.c), under ASan + UBSan: what
 * ibv_wr_complete() hands to the post path, and what it refuses. The post
 * path is replaced by a recorder.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include "../ibckpt.h"
#define UNIT_SUITE "provider/qp_ex"
#include "../../tests/unit/unit.h"

bool ibckpt_debug, ibckpt_stats_on;

/* The recorder standing in for ibckpt_qpx_post() (qp_ex_post.c). */
static struct {
	int calls;
	int n;
	struct ibv_send_wr wr[64];
	struct ibv_sge sge[64][2];
	char inl[64][32];
	uint8_t hdr[64][8];
	int ret;
} posted;

int ibckpt_qpx_post(struct ibckpt_qp *qp, struct ibv_send_wr *wr)
{
	int i;

	(void)qp;
	posted.calls++;
	for (posted.n = 0; wr && posted.n < 64; wr = wr->next, posted.n++) {
		posted.wr[posted.n] = *wr;
		for (i = 0; i < wr->num_sge && i < 2; i++)
			posted.sge[posted.n][i] = wr->sg_list[i];
		if (wr->send_flags & IBV_SEND_INLINE)
			memcpy(posted.inl[posted.n], (void *)(uintptr_t)wr->sg_list[0].addr,
			       wr->sg_list[0].length);
		if (wr->opcode == IBV_WR_TSO && wr->tso.hdr_sz >= 8)
			memcpy(posted.hdr[posted.n], wr->tso.hdr, 8);
	}
	CHECK(wr == NULL);	/* the list ends */
	return posted.ret;
}

static struct ibckpt_qp *make_qp(uint64_t flags)
{
	static struct ibckpt_qp qp;
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_send_sge = 2, .max_inline_data = 16 };

	memset(&qp, 0, sizeof(qp));
	memset(&posted, 0, sizeof(posted));
	CHECK_EQ(ibckpt_qpx_init(&qp, flags, &cap, 64), 0);
	CHECK(qp.vqp.comp_mask & VERBS_QP_EX);
	return &qp;
}

#define ALL (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE | \
	     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |		  \
	     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_LOCAL_INV |		  \
	     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV |			  \
	     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)

static void only_what_maps_onto_a_send_wr(void)
{
	CHECK_EQ(ibckpt_qpx_check(ALL), 0);
	CHECK_EQ(ibckpt_qpx_check(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO), 0);
	CHECK_EQ(ibckpt_qpx_check(1ull << 20), EOPNOTSUPP);	/* newer than rdma-core 44 */
	CHECK_EQ(ibckpt_qpx_check(IBV_QP_EX_WITH_ATOMIC_WRITE), 0);

	struct ibckpt_qp *qp = make_qp(IBV_QP_EX_WITH_SEND);

	CHECK(qp->vqp.qp_ex.wr_send != NULL);
	CHECK(qp->vqp.qp_ex.wr_rdma_write == NULL);	/* not asked for */
	ibckpt_qpx_free(qp->qpx);
}

/* A batch becomes one list, in order, with each request's own fields. */
static void batch_is_posted_as_built(void)
{
	struct ibckpt_qp *qp = make_qp(ALL);
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	struct ibv_sge two[2] = { { 0x1000, 10, 7 }, { 0x2000, 20, 8 } };
	char msg[16] = "inline bytes";

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htobe32(5));
	ibv_wr_set_inline_data(x, msg, 13);
	memset(msg, 0, sizeof(msg));		/* copied when set */
	x->wr_id = 2;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, 0x55, 0xbeef);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 3;
	ibv_wr_atomic_cmp_swp(x, 0x66, 0xa0, 1, 2);
	ibv_wr_set_sge(x, 9, 0x3000, 8);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.calls, 1);
	CHECK_EQ(posted.n, 3);
	CHECK_EQ(posted.wr[0].wr_id, 1);
	CHECK_EQ(posted.wr[0].opcode, IBV_WR_SEND_WITH_IMM);
	CHECK_EQ(posted.wr[0].imm_data, htobe32(5));
	CHECK_EQ(posted.wr[0].send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	CHECK_EQ(posted.wr[0].num_sge, 1);
	CHECK(!strcmp(posted.inl[0], "inline bytes"));
	CHECK_EQ(posted.wr[1].opcode, IBV_WR_RDMA_WRITE);
	CHECK_EQ(posted.wr[1].send_flags, 0);
	CHECK_EQ(posted.wr[1].wr.rdma.rkey, 0x55);
	CHECK_EQ(posted.wr[1].wr.rdma.remote_addr, 0xbeef);
	CHECK_EQ(posted.wr[1].num_sge, 2);
	CHECK_EQ(posted.sge[1][1].addr, 0x2000);
	CHECK_EQ(posted.sge[1][1].length, 20);
	CHECK_EQ(posted.wr[2].opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	CHECK_EQ(posted.wr[2].wr.atomic.compare_add, 1);
	CHECK_EQ(posted.wr[2].wr.atomic.swap, 2);
	CHECK_EQ(posted.sge[2][0].lkey, 9);
	/* the next batch starts empty */
	ibv_wr_start(x);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.calls, 1);
	ibckpt_qpx_free(qp->qpx);
}

/* Building errors are returned by wr_complete, and nothing is posted. */
static void errors_post_nothing(void)
{
	struct ibckpt_qp *qp = make_qp(ALL);
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	struct ibv_sge three[3] = { { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 } };
	char big[32] = "";
	int i;

	ibv_wr_start(x);				/* more than the queue holds */
	for (i = 0; i < 5; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, 0x10, 4);
	}
	CHECK_EQ(ibv_wr_complete(x), ENOMEM);
	ibv_wr_start(x);				/* more SGEs than granted */
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 3, three);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);				/* more inline bytes than granted */
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, sizeof(big));
	CHECK_EQ(ibv_wr_complete(x), ENOSPC);
	ibv_wr_start(x);				/* aborted */
	ibv_wr_send(x);
	ibv_wr_abort(x);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.calls, 0);
	/* and the QP works again afterwards */
	ibv_wr_start(x);
	x->wr_id = 77;
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.calls, 1);
	CHECK_EQ(posted.n, 1);
	CHECK_EQ(posted.wr[0].wr_id, 77);
	/* a vendor error comes back as is */
	posted.ret = EAGAIN;
	ibv_wr_start(x);
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), EAGAIN);
	ibckpt_qpx_free(qp->qpx);
}

/* An XRC sender names the target SRQ per request. */
static void xrc_srqn_is_posted(void)
{
	struct ibckpt_qp *qp = make_qp(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 0x5123);
	ibv_wr_set_sge(x, 1, 0x10, 4);
	ibv_wr_rdma_write(x, 2, 0x20);
	ibv_wr_set_xrc_srqn(x, 0x5124);
	ibv_wr_set_sge(x, 1, 0x10, 4);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.n, 2);
	CHECK_EQ(posted.wr[0].qp_type.xrc.remote_srqn, 0x5123);
	CHECK_EQ(posted.wr[1].qp_type.xrc.remote_srqn, 0x5124);
	ibckpt_qpx_free(qp->qpx);
}

/* An atomic write keeps its 8 bytes (copied when built), in the batch's order. */
static void atomic_write_is_staged(void)
{
	struct ibckpt_qp *qp = make_qp(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE);
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	uint64_t val = 0x1122334455667788ull;

	CHECK(x->wr_atomic_write != NULL);
	ibv_wr_start(x);
	x->wr_id = 5;
	ibv_wr_atomic_write(x, 0x44, 0x8000, &val);
	val = 0;				/* copied when built */
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x10, 4);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.calls, 1);
	CHECK_EQ(posted.n, 2);
	CHECK_EQ(posted.wr[0].opcode, IBV_WR_ATOMIC_WRITE);
	CHECK_EQ(posted.wr[0].wr_id, 5);
	CHECK_EQ(posted.wr[0].wr.rdma.rkey, 0x44);
	CHECK_EQ(posted.wr[0].wr.rdma.remote_addr, 0x8000);
	CHECK_EQ(posted.wr[0].wr.atomic.swap, 0x1122334455667788ull);
	CHECK_EQ(posted.wr[1].opcode, IBV_WR_SEND);
	ibckpt_qpx_free(qp->qpx);
}

static void tso_is_staged(void)
{
	struct ibckpt_qp *qp = make_qp(IBV_QP_EX_WITH_TSO);
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	uint8_t hdr[54], big[65];

	memset(hdr, 0x42, sizeof(hdr));
	ibv_wr_start(x);
	x->wr_id = 8;
	ibv_wr_send_tso(x, hdr, sizeof(hdr), 1448);
	ibv_wr_set_sge(x, 1, 0x10000, 9000);
	memset(hdr, 0, sizeof(hdr));		/* copied when built */
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.n, 1);
	CHECK_EQ(posted.wr[0].opcode, IBV_WR_TSO);
	CHECK_EQ(posted.wr[0].tso.hdr_sz, 54);
	CHECK_EQ(posted.wr[0].tso.mss, 1448);
	CHECK(posted.wr[0].tso.hdr != hdr);
	CHECK_EQ(((uint8_t *)posted.wr[0].tso.hdr)[53], 0x42);
	ibv_wr_start(x);
	ibv_wr_send_tso(x, big, sizeof(big), 1448);	/* max_tso_header is 64 */
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(posted.calls, 1);
	ibckpt_qpx_free(qp->qpx);
}

/*
 * The staging takes what a batch needs, not the send queue's depth times
 * its largest request: a QP of mlx5's size stages little until
 * a batch is long, and a long batch with SGE lists, inline data and TSO
 * headers comes out as built while the staging grows under it.
 */
static void staging_grows_with_the_batch(void)
{
	static struct ibckpt_qp qp;
	struct ibv_qp_cap cap = { .max_send_wr = 16384, .max_send_sge = 30,
				  .max_inline_data = 256 };
	struct ibv_qp_ex *x = &qp.vqp.qp_ex;
	struct ibv_sge two[2];
	uint8_t hdr[40];
	char data[24];
	size_t before;
	int i;

	memset(&qp, 0, sizeof(qp));
	memset(&posted, 0, sizeof(posted));
	CHECK_EQ(ibckpt_qpx_init(&qp, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO, &cap, 64), 0);
	before = ibckpt_qpx_bytes(qp.qpx);
	CHECK(before <= 64 * 1024);	/* before: 16,384 x (128 + 480 + 256 + 64) */
	ibv_wr_start(x);
	for (i = 0; i < 60; i++) {
		x->wr_id = (uint64_t)i;
		switch (i % 3) {
		case 0:
			ibv_wr_send(x);
			two[0] = (struct ibv_sge){ .addr = 0x1000u + i, .length = 8, .lkey = i };
			two[1] = (struct ibv_sge){ .addr = 0x2000u + i, .length = 8, .lkey = i + 1 };
			ibv_wr_set_sge_list(x, 2, two);
			break;
		case 1:
			ibv_wr_send(x);
			memset(data, 'a' + i % 26, sizeof(data));
			ibv_wr_set_inline_data(x, data, sizeof(data));
			memset(data, 0, sizeof(data));		/* copied when set */
			break;
		default:
			memset(hdr, i, sizeof(hdr));
			ibv_wr_send_tso(x, hdr, sizeof(hdr), 1448);
			ibv_wr_set_sge(x, 7, 0x3000u + i, 9000);
			memset(hdr, 0, sizeof(hdr));
			break;
		}
	}
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.n, 60);
	for (i = 0; i < 60; i++) {
		CHECK_EQ(posted.wr[i].wr_id, (uint64_t)i);
		switch (i % 3) {
		case 0:
			CHECK_EQ(posted.wr[i].num_sge, 2);
			CHECK_EQ(posted.sge[i][1].addr, 0x2000u + i);
			CHECK_EQ(posted.sge[i][1].lkey, (uint32_t)i + 1);
			break;
		case 1:
			CHECK(posted.wr[i].send_flags & IBV_SEND_INLINE);
			CHECK_EQ(posted.wr[i].sg_list[0].length, 24);
			CHECK_EQ(posted.inl[i][23], 'a' + i % 26);
			break;
		default:
			CHECK_EQ(posted.wr[i].opcode, IBV_WR_TSO);
			CHECK_EQ(posted.hdr[i][7], (uint8_t)i);
			CHECK_EQ(posted.sge[i][0].addr, 0x3000u + i);
			break;
		}
	}
	CHECK(ibckpt_qpx_bytes(qp.qpx) > before);
	CHECK(ibckpt_qpx_bytes(qp.qpx) <= before + 2 * 60 * (128 + 480 + 256 + 64));
	ibckpt_qpx_free(qp.qpx);
}

/*
 * wr_flags may carry IBV_SEND_INLINE with the caller's own SGE (the man
 * page does not list it; rxe takes it): growing the staging moves only
 * the inline copies it made, not such a caller's address (not every SGE
 * of an IBV_SEND_INLINE request).
 */
static void staging_grows_under_inline_flags(void)
{
	struct ibckpt_qp *qp = make_qp(IBV_QP_EX_WITH_SEND);
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_send_sge = 2, .max_inline_data = 16 };
	static char own[40][8];		/* the caller's buffers */
	int i;

	ibckpt_qpx_free(qp->qpx);
	CHECK_EQ(ibckpt_qpx_init(qp, IBV_QP_EX_WITH_SEND, &cap, 0), 0);
	ibv_wr_start(x);
	for (i = 0; i < 40; i++) {
		x->wr_id = (uint64_t)i;
		x->wr_flags = IBV_SEND_INLINE;
		ibv_wr_send(x);
		if (i % 2)
			ibv_wr_set_inline_data(x, "0123456789", 10);
		else
			ibv_wr_set_sge(x, 7, (uintptr_t)own[i], 8);
	}
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(posted.n, 40);
	for (i = 0; i < 40; i++) {
		if (i % 2) {
			CHECK_EQ(posted.inl[i][9], '9');
		} else {
			CHECK_EQ(posted.sge[i][0].addr, (uintptr_t)own[i]);
			CHECK_EQ(posted.sge[i][0].lkey, 7);
		}
	}
	ibckpt_qpx_free(qp->qpx);
}

int main(void)
{
	RUN(only_what_maps_onto_a_send_wr);
	RUN(batch_is_posted_as_built);
	RUN(errors_post_nothing);
	RUN(xrc_srqn_is_posted);
	RUN(atomic_write_is_staged);
	RUN(tso_is_staged);
	RUN(staging_grows_with_the_batch);
	RUN(staging_grows_under_inline_flags);
	return unit_done();
}
