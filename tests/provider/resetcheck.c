// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * resetcheck: a QP moved to RESET loses the requests it had queued, with no
 * completion for them (the IB spec; rxe empties its queues), and is reused.
 * Over 20 cycles it fills its receive queue and posts an unsignaled RDMA
 * write, then is reset and connected again; a QP that kept the lost requests
 * in its books would run out of room. Afterwards a send and a receive
 * complete normally. With --wait it then posts two receives, prints
 * "posted" and waits for a line on standard input, so that a test can
 * freeze it and read its snapshot: exactly those two receives are
 * outstanding, nothing of the cycles before.
 *
 * One RC QP connected to itself over GID index 0, queues of depth 4.
 *
 *   resetcheck DEVICE [--wait]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"
#define PROG "resetcheck"
#include "../lib/expect.h"

#define DEPTH 4
#define CYCLES 20

/* Returns the post's error, 0 on success. */
static int post_recv(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, enum ibv_wr_opcode op,
		      unsigned int flags, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)buf + 2048;
	wr.wr.rdma.rkey = mr->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* A refused post ends the program: what follows would only repeat it. */
#define POST(call, ...) do {					\
	int err_ = (call);					\
	if (err_) {						\
		fprintf(stderr, PROG ": ");			\
		fprintf(stderr, __VA_ARGS__);			\
		fprintf(stderr, " refused: %s\n", strerror(err_));	\
		return 1;					\
	}							\
} while (0)

static void to_reset(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		DIE("modify_qp RESET");
}

int main(int argc, char **argv)
{
	bool wait = argc > 2 && !strcmp(argv[2], "--wait");
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	union ibv_gid gid;
	struct ibv_wc wc[2];
	const char *step;
	int cycle, i, n = 0, spins = 0;
	char *buf, line[16];

	if (argc < 2)
		DIE("usage: resetcheck DEVICE [--wait]");
	ctx = open_named_device(argv[1]);
	if (!ctx)
		DIE("cannot open %s", argv[1]);
	buf = calloc(1, 4096);
	pd = ibv_alloc_pd(ctx);
	mr = pd && buf ? ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE) : NULL;
	cq = mr ? ibv_create_cq(ctx, 4 * DEPTH, NULL, NULL, 0) : NULL;
	if (!cq || ibv_query_gid(ctx, 1, 0, &gid))
		DIE("set-up");
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		DIE("create_qp");
	for (cycle = 0; cycle < CYCLES; cycle++) {
		step = rc_loopback_connect(qp, &gid, IBV_ACCESS_REMOTE_WRITE);
		if (step)
			DIE("cycle %d: modify_qp %s", cycle, step);
		for (i = 0; i < DEPTH; i++)
			POST(post_recv(qp, mr, buf, 100 * cycle + i), "cycle %d: receive %d", cycle, i);
		POST(post_send(qp, mr, buf, IBV_WR_RDMA_WRITE, 0, 100 * cycle + 50),
		     "cycle %d: unsignaled write", cycle);
		to_reset(qp);
	}
	/* The cycles' requests are gone: nothing may complete for them. */
	EXPECT(ibv_poll_cq(cq, 2, wc) == 0, "a completion for a request lost at a reset");
	step = rc_loopback_connect(qp, &gid, IBV_ACCESS_REMOTE_WRITE);
	if (step)
		DIE("modify_qp %s", step);
	POST(post_recv(qp, mr, buf + 1024, 1), "receive after the cycles");
	POST(post_send(qp, mr, buf, IBV_WR_SEND, IBV_SEND_SIGNALED, 2), "send after the cycles");
	while (n < 2 && spins++ < 100000000) {
		int r = ibv_poll_cq(cq, 2 - n, wc + n);

		if (r < 0)
			DIE("poll_cq");
		n += r;
	}
	EXPECT(n == 2, "%d of 2 completions after the cycles", n);
	for (i = 0; i < n; i++)
		EXPECT(wc[i].status == IBV_WC_SUCCESS, "completion %llu: %s",
		       (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
	printf("cycles %d qpn %u\n", CYCLES, qp->qp_num);
	if (wait) {
		POST(post_recv(qp, mr, buf, 3), "receive 3");
		POST(post_recv(qp, mr, buf, 4), "receive 4");
		printf("posted\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			DIE("stdin closed");
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return failures ? 1 : 0;
}
