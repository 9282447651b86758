// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * excheck: extended CQs (ibv_create_cq_ex, ibv_start_poll/next_poll/end_poll,
 * ibv_wc_read_*) give the same completions with and without ibckpt, the
 * application only sees its own CQ (completion event, cq_context), and an
 * unsupported wc_flags request fails with EOPNOTSUPP. Memory windows of both
 * types, bound with ibv_bind_mw() and with a posted IBV_WR_BIND_MW, take
 * RDMA writes through their rkeys. A QP with the extended post-send API
 * (ibv_wr_*) posts a batch of a send with immediate and inline data, an RDMA
 * write from two SGEs, an RDMA read and two atomics, all landing, and an
 * aborted batch posts nothing.
 *
 * One RC QP connected to itself over GID index 0, both queues on one
 * extended CQ with a completion channel. First the windows: each is bound
 * over 64 bytes of the MR and written through. Then a send, a send with
 * immediate and
 * an RDMA write with immediate, each consuming one receive. With --wait,
 * it prints "posted" after posting and reads a line from standard input
 * before polling, so that a test can freeze and thaw it in between (the
 * completions are then drained at the freeze and handed back at the thaw).
 * With --single, each ibv_start_poll() takes one completion and is ended
 * at once, without ibv_next_poll(): Debian's rdma-core 44 rxe provider
 * unlocks twice and skips past the producer when ibv_end_poll() follows an
 * ibv_next_poll() that returned ENOENT (fixed upstream after v44: "rxe: Fix
 * double unlock in cq_ex polling", "rxe: fix completion queue consumer
 * index overrun"), so the direct run needs it; through ibckpt both work.
 *
 *   excheck DEVICE [--wait] [--single]
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"
#define PROG "excheck"
#include "../lib/expect.h"

#define WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
		  IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |	    \
		  IBV_WC_EX_WITH_DLID_PATH_BITS)

struct expect_wc {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;		/* receives only */
	uint32_t imm;			/* host order; 0: none */
};

/* What each queue must complete, in order. */
static const struct expect_wc sends[] = {
	{ 200, IBV_WC_SEND, 0, 0 },
	{ 201, IBV_WC_SEND, 0, 0 },
	{ 202, IBV_WC_RDMA_WRITE, 0, 0 },
};
static const struct expect_wc recvs[] = {
	{ 100, IBV_WC_RECV, 16, 0 },
	{ 101, IBV_WC_RECV, 24, 0x12345678 },
	{ 102, IBV_WC_RECV_RDMA_WITH_IMM, 32, 0xabcd },
};

static void connect_self(struct ibv_context *ctx, struct ibv_qp *qp)
{
	union ibv_gid gid;
	const char *step;

	if (ibv_query_gid(ctx, 1, 0, &gid))
		DIE("query_gid");
	step = rc_loopback_connect(qp, &gid, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (step)
		DIE("%s", step);
}

/* One completion through the legacy poll: it must be wr_id's, successful. */
static void expect_one(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc;
	int tries, n = 0;

	for (tries = 0; tries < 5000 && !n; tries++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			poll(NULL, 0, 1);
	}
	EXPECT(n == 1, "no completion for wr_id %llu", (unsigned long long)wr_id);
	if (n != 1)
		return;
	EXPECT(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id && wc.opcode == opcode,
	       "wr_id %llu opcode %d: %s; expected wr_id %llu opcode %d",
	       (unsigned long long)wc.wr_id, wc.opcode, ibv_wc_status_str(wc.status),
	       (unsigned long long)wr_id, opcode);
}

/* An RDMA write of 'src' into 'dst' through 'rkey' lands. */
static void write_through(struct ibv_qp *qp, struct ibv_mr *mr, char *src, char *dst,
			  uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge s = { (uintptr_t)src, 64, mr->lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = rkey } }, *bad;

	snprintf(src, 64, "written through window rkey %#x", rkey);
	if (ibv_post_send(qp, &w, &bad))
		DIE("post RDMA write through a window");
	expect_one(qp->send_cq, wr_id, IBV_WC_RDMA_WRITE);
	EXPECT(!strcmp(src, dst), "write through rkey %#x did not land", rkey);
}

/* A type 1 window bound by ibv_bind_mw, a type 2 one by a posted bind. */
static void check_windows(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_mr *mr,
			  char (*buf)[64], struct ibv_mw **mws)
{
	struct ibv_mw_bind_info bi = { .mr = mr, .addr = (uintptr_t)buf[2], .length = 64,
				       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_mw_bind b = { .wr_id = 300, .send_flags = IBV_SEND_SIGNALED, .bind_info = bi };
	uint32_t before;

	mws[0] = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mws[1] = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mws[0] || !mws[1])
		DIE("alloc_mw");
	EXPECT(mws[0]->pd == pd && mws[0]->context == pd->context && mws[0]->type == IBV_MW_TYPE_1,
	       "MW fields are not the application's");
	before = mws[0]->rkey;
	if (ibv_bind_mw(qp, mws[0], &b))
		DIE("bind_mw");
	EXPECT(mws[0]->rkey != before, "the type 1 bind left rkey %#x", before);
	expect_one(qp->send_cq, 300, IBV_WC_BIND_MW);
	write_through(qp, mr, buf[6], buf[2], mws[0]->rkey, 301);

	struct ibv_send_wr w = { .wr_id = 302, .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	w.bind_mw.mw = mws[1];
	w.bind_mw.rkey = ibv_inc_rkey(mws[1]->rkey);
	w.bind_mw.bind_info = bi;
	w.bind_mw.bind_info.addr = (uintptr_t)buf[3];
	if (ibv_post_send(qp, &w, &bad))
		DIE("post type 2 bind");
	EXPECT(w.bind_mw.mw == mws[1] && w.bind_mw.bind_info.mr == mr,
	       "the posted bind request was not given back as posted");
	expect_one(qp->send_cq, 302, IBV_WC_BIND_MW);
	write_through(qp, mr, buf[6], buf[3], w.bind_mw.rkey, 303);
}

/* The ibv_wr_* API on a second QP sharing the CQ. */
static void check_wr_api(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
			 struct ibv_mr *mr, char (*buf)[64])
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq, .pd = pd,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 2,
			 .max_recv_sge = 1, .max_inline_data = 32 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);
	uint64_t *counter = (uint64_t *)(void *)buf[7], *res = counter + 1;
	char msg[32] = "inline, then overwritten";
	int i;

	if (!qp)
		DIE("create_qp_ex with send_ops_flags");
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	EXPECT(x && &x->qp_base == qp, "ibv_qp_to_qp_ex gives no extended QP");
	if (!x)
		return;
	connect_self(ctx, qp);
	memset(buf, 0, 8 * 64);
	*counter = 10;

	struct ibv_sge rs = { (uintptr_t)buf[0], 64, mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 400, .sg_list = &rs, .num_sge = 1 }, *rbad;

	if (ibv_post_recv(qp, &r, &rbad))
		DIE("post_recv");
	strcpy(buf[4], "first SGE,");
	strcpy(buf[5], "second SGE");
	strcpy(buf[3], "read me back");
	struct ibv_sge two[2] = { { (uintptr_t)buf[4], 10, mr->lkey },
				  { (uintptr_t)buf[5], 10, mr->lkey } };

	/*
	 * Debian's rxe (rdma-core 44) needs IBV_SEND_INLINE with inline data,
	 * and sums an SGE list as num_sge times the first length (fixed
	 * upstream after v44): the SGEs are of equal length.
	 */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	x->wr_id = 500;
	ibv_wr_send_imm(x, htobe32(7));
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 501;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)buf[2]);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 502;
	ibv_wr_rdma_read(x, mr->rkey, (uintptr_t)buf[3]);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf[6], 16);
	x->wr_id = 503;
	ibv_wr_atomic_fetch_add(x, mr->rkey, (uintptr_t)counter, 5);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)res, 8);
	memset(msg, 'x', sizeof(msg) - 1);	/* the API lets the caller reuse it */
	EXPECT(ibv_wr_complete(x) == 0, "wr_complete");
	expect_one(cq, 400, IBV_WC_RECV);
	for (i = 500; i <= 503; i++)
		expect_one(cq, (uint64_t)i, i == 500 ? IBV_WC_SEND : i == 501 ? IBV_WC_RDMA_WRITE :
				  i == 502 ? IBV_WC_RDMA_READ : IBV_WC_FETCH_ADD);
	EXPECT(!strcmp(buf[0], "inline, then overwritten"), "inline payload: '%.32s'", buf[0]);
	EXPECT(!strcmp(buf[2], "first SGE,second SGE"), "gathered write: '%.32s'", buf[2]);
	EXPECT(!strcmp(buf[6], "read me back"), "RDMA read: '%.16s'", buf[6]);
	EXPECT(*res == 10 && *counter == 15, "fetch-add: old %llu, now %llu",
	       (unsigned long long)*res, (unsigned long long)*counter);

	/* A second batch: compare-and-swap alone. */
	ibv_wr_start(x);
	x->wr_id = 504;
	ibv_wr_atomic_cmp_swp(x, mr->rkey, (uintptr_t)counter, 15, 99);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)res, 8);
	EXPECT(ibv_wr_complete(x) == 0, "wr_complete");
	expect_one(cq, 504, IBV_WC_COMP_SWAP);
	EXPECT(*res == 15 && *counter == 99, "compare-and-swap: old %llu, now %llu",
	       (unsigned long long)*res, (unsigned long long)*counter);

	/* An aborted batch posts nothing: the next completion is the next batch's. */
	ibv_wr_start(x);
	x->wr_id = 600;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)buf[1]);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf[4], 4);
	ibv_wr_abort(x);
	ibv_wr_start(x);
	x->wr_id = 601;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)buf[1]);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf[5], 6);
	EXPECT(ibv_wr_complete(x) == 0, "wr_complete");
	expect_one(cq, 601, IBV_WC_RDMA_WRITE);
	EXPECT(!strcmp(buf[1], "second"), "write after an abort: '%.16s'", buf[1]);
	if (ibv_destroy_qp(qp))
		DIE("destroy_qp");
}

/* Check the completion the poll functions just returned. */
static void check_wc(struct ibv_cq_ex *cqx, struct ibv_qp *qp, int *ns, int *nr)
{
	enum ibv_wc_opcode op = ibv_wc_read_opcode(cqx);
	const struct expect_wc *e;

	EXPECT(cqx->status == IBV_WC_SUCCESS, "completion status %s",
	       ibv_wc_status_str(cqx->status));
	EXPECT(ibv_wc_read_qp_num(cqx) == qp->qp_num, "completion for QPN %u, expected %u",
	       ibv_wc_read_qp_num(cqx), qp->qp_num);
	if (!(op & IBV_WC_RECV)) {
		EXPECT(*ns < 3, "more than 3 send completions");
		if (*ns >= 3)
			return;
		e = &sends[(*ns)++];
	} else {
		EXPECT(*nr < 3, "more than 3 receive completions");
		if (*nr >= 3)
			return;
		e = &recvs[(*nr)++];
		EXPECT(ibv_wc_read_byte_len(cqx) == e->byte_len, "wr_id %llu: %u bytes, expected %u",
		       (unsigned long long)e->wr_id, ibv_wc_read_byte_len(cqx), e->byte_len);
		if (e->imm) {
			EXPECT(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM, "wr_id %llu: no immediate",
			       (unsigned long long)e->wr_id);
			EXPECT(be32toh(ibv_wc_read_imm_data(cqx)) == e->imm,
			       "wr_id %llu: immediate %#x, expected %#x",
			       (unsigned long long)e->wr_id, be32toh(ibv_wc_read_imm_data(cqx)),
			       e->imm);
		} else {
			EXPECT(!(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM),
			       "wr_id %llu: unexpected immediate", (unsigned long long)e->wr_id);
		}
	}
	EXPECT(cqx->wr_id == e->wr_id, "wr_id %llu, expected %llu (out of order or duplicated)",
	       (unsigned long long)cqx->wr_id, (unsigned long long)e->wr_id);
	EXPECT(op == e->opcode, "wr_id %llu: opcode %d, expected %d",
	       (unsigned long long)e->wr_id, op, e->opcode);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = NULL;
	int i, n, cq_tag;
	bool wait_stdin = false, single = false;
	static char buf[8][64] __attribute__((aligned(64)));

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait_stdin = true;
		else if (!strcmp(argv[i], "--single"))
			single = true;
		else
			break;
	}
	if (argc < 2 || i < argc) {
		fprintf(stderr, "usage: excheck DEVICE [--wait] [--single]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	ctx = open_named_device(argv[1]);
	if (!ctx)
		DIE("cannot open %s", argv[1]);

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND) : NULL;
	struct ibv_mw *mws[2];
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);

	if (!mr || !ch)
		DIE("pd/mr/channel");

	/* What a struct ibv_wc cannot carry is refused, as rxe itself does. */
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);

	EXPECT(!cqx && errno == EOPNOTSUPP, "timestamped CQ: %s",
	       cqx ? "created" : strerror(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));

	ca = (struct ibv_cq_init_attr_ex){ .cqe = 16, .cq_context = &cq_tag, .channel = ch,
					   .wc_flags = WC_FLAGS };
	cqx = ibv_create_cq_ex(ctx, &ca);
	if (!cqx)
		DIE("create_cq_ex");

	struct ibv_cq *cq = ibv_cq_ex_to_cq(cqx);

	EXPECT(cq->context == ctx && cq->channel == ch && cq->cq_context == &cq_tag,
	       "CQ fields are not the application's");
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };

	EXPECT(ibv_start_poll(cqx, &pa) == ENOENT, "start_poll on an empty CQ");

	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (!qp)
		DIE("create_qp");
	connect_self(ctx, qp);
	check_windows(pd, qp, mr, buf, mws);
	check_wr_api(ctx, pd, cq, mr, buf);
	memset(buf, 0, sizeof(buf));

	for (i = 0; i < 3; i++) {
		struct ibv_sge s = { (uintptr_t)buf[i], 64, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &r, &bad))
			DIE("post_recv");
	}
	if (ibv_req_notify_cq(cq, 0))
		DIE("req_notify_cq");

	struct ibv_sge ss[3] = {
		{ (uintptr_t)buf[4], 16, mr->lkey },
		{ (uintptr_t)buf[5], 24, mr->lkey },
		{ (uintptr_t)buf[6], 32, mr->lkey },
	};
	struct ibv_send_wr w[3] = {
		{ .wr_id = 200, .sg_list = &ss[0], .num_sge = 1, .opcode = IBV_WR_SEND },
		{ .wr_id = 201, .sg_list = &ss[1], .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
		  .imm_data = htobe32(0x12345678) },
		{ .wr_id = 202, .sg_list = &ss[2], .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(0xabcd),
		  .wr.rdma = { .remote_addr = (uintptr_t)buf[7], .rkey = mr->rkey } },
	}, *bad;

	for (i = 0; i < 3; i++) {
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
		snprintf(buf[4 + i], 64, "payload %d of the extended CQ check", i);
	}
	if (ibv_post_send(qp, w, &bad))
		DIE("post_send");
	if (wait_stdin) {
		char line[16];
		struct ibv_mw *gone = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
		struct ibv_mw_bind gb = { .wr_id = 299, .send_flags = 0,
					  .bind_info = { .mr = mr, .addr = (uintptr_t)buf[1],
							 .length = 64,
							 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE } };

		/*
		 * An unsignaled bind after the last signaled send stays in the
		 * log through the freeze; its window is gone by then, which the
		 * snapshot must survive (the bind names no window).
		 */
		if (!gone || ibv_bind_mw(qp, gone, &gb))
			DIE("unsignaled bind");
		poll(NULL, 0, 100);
		if (ibv_dealloc_mw(gone))
			DIE("dealloc_mw");
		printf("posted\n");
		if (!fgets(line, sizeof(line), stdin))
			DIE("standard input closed");
	}

	/* The completion event names the application's CQ and context. */
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	if (poll(&p, 1, 5000) != 1) {
		errno = ETIMEDOUT;
		DIE("no completion event within 5 s");
	}
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		DIE("get_cq_event");
	EXPECT(ev_cq == cq, "completion event for CQ %p, expected %p", (void *)ev_cq, (void *)cq);
	EXPECT(ev_ctx == &cq_tag, "completion event context is not the application's");
	ibv_ack_cq_events(cq, 1);

	int ns = 0, nr = 0, tries, ret;

	for (tries = 0; tries < 5000 && ns + nr < 6; tries++) {
		ret = ibv_start_poll(cqx, &pa);
		if (ret == ENOENT) {
			poll(NULL, 0, 1);
			continue;
		}
		EXPECT(!ret, "start_poll: %s", strerror(ret));
		if (ret)
			break;
		do {
			check_wc(cqx, qp, &ns, &nr);
			ret = single ? ENOENT : ibv_next_poll(cqx);
		} while (!ret);
		EXPECT(ret == ENOENT, "next_poll: %s", strerror(ret));
		ibv_end_poll(cqx);
	}
	EXPECT(ns == 3 && nr == 3, "%d send and %d receive completions, expected 3 and 3", ns,
	       nr);
	EXPECT(!memcmp(buf[0], buf[4], 16) && !memcmp(buf[1], buf[5], 24) &&
	       !memcmp(buf[7], buf[6], 32), "payloads differ");
	ret = ibv_start_poll(cqx, &pa);
	EXPECT(ret == ENOENT, "a completion came twice");
	if (!ret)
		ibv_end_poll(cqx);

	/* The legacy poll works on an extended CQ too. */
	struct ibv_sge rs = { (uintptr_t)buf[3], 64, mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 103, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_wc wc[2];

	w[0].wr_id = 203;
	w[0].next = NULL;
	if (ibv_post_recv(qp, &r, &rbad) || ibv_post_send(qp, w, &bad))
		DIE("post");
	for (n = 0, tries = 0; tries < 5000 && n < 2; tries++) {
		ret = ibv_poll_cq(cq, 2 - n, wc + n);
		EXPECT(ret >= 0, "poll_cq %d", ret);
		n += ret > 0 ? ret : 0;
		if (n < 2)
			poll(NULL, 0, 1);
	}
	EXPECT(n == 2, "%d legacy completions, expected 2", n);
	for (i = 0; i < n; i++)
		EXPECT(wc[i].status == IBV_WC_SUCCESS &&
		       wc[i].wr_id == (wc[i].opcode == IBV_WC_SEND ? 203u : 103u),
		       "legacy completion wr_id %llu opcode %d", (unsigned long long)wc[i].wr_id,
		       wc[i].opcode);

	if (ibv_dealloc_mw(mws[0]) || ibv_dealloc_mw(mws[1]) || ibv_destroy_qp(qp) ||
	    ibv_destroy_cq(cq) || ibv_destroy_comp_channel(ch) ||
	    ibv_dereg_mr(mr) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		DIE("teardown");
	if (failures)
		return 1;
	printf("excheck: ok\n");
	return 0;
}
