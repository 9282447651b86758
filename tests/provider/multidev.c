// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * multidev: one process with a context on each of two devices, and an RC QP
 * on each connected to the other. The provider stacks every device a
 * process opens, each context with its own objects, keys and QPN table.
 * ROUNDS times, the QP on A sends a numbered message to B, and B writes it
 * back into A's memory with RDMA (B's request names A's rkey: a key of the
 * other context); both copies are checked. With --wait, B then posts two
 * receives, prints "posted" and waits for a line on standard input (a test
 * freezes and thaws it meanwhile), then A sends the two messages those
 * receives must take.
 *
 *   multidev DEVICE-A DEVICE-B [--wait]
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"
#define PROG "multidev"
#include "../lib/expect.h"

#define ROUNDS 100
#define MSG 64

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
	char *buf;		/* [0, MSG): send or receive; [2048, ...): RDMA target */
};

static void side_open(struct side *s, const char *name)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	s->name = name;
	s->ctx = open_named_device(name);
	if (!s->ctx)
		DIE("cannot open %s", name);
	s->buf = calloc(1, 4096);
	s->pd = ibv_alloc_pd(s->ctx);
	s->mr = s->pd && s->buf ? ibv_reg_mr(s->pd, s->buf, 4096, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE) : NULL;
	s->cq = s->mr ? ibv_create_cq(s->ctx, 16, NULL, NULL, 0) : NULL;
	if (!s->cq || ibv_query_gid(s->ctx, 1, 0, &s->gid))
		DIE("%s: set-up", name);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp)
		DIE("%s: create_qp", name);
}

static void side_close(struct side *s)
{
	ibv_destroy_qp(s->qp);
	ibv_destroy_cq(s->cq);
	ibv_dereg_mr(s->mr);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
	free(s->buf);
}

static void post_recv(struct side *s, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = MSG, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		DIE("%s: post_recv", s->name);
}

/* A signaled send of s's first MSG bytes, or an RDMA write of them to addr/rkey. */
static void post_send(struct side *s, uint64_t id, uint64_t addr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = MSG, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = rkey ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(s->qp, &wr, &bad))
		DIE("%s: post_send", s->name);
}

/* The next completion of s's CQ, which must be a success with wr_id 'id'. */
static void expect_completion(struct side *s, uint64_t id)
{
	struct ibv_wc wc;
	long spins = 0;
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0 && spins++ < 100000000)
		;
	if (n != 1)
		DIE("%s: no completion for %" PRIu64, s->name, id);
	EXPECT(wc.status == IBV_WC_SUCCESS && wc.wr_id == id,
	       "%s: completion %" PRIu64 " (%s), expected %" PRIu64, s->name,
	       (uint64_t)wc.wr_id, ibv_wc_status_str(wc.status), id);
}

/* A sends message i to B, which must receive it whole as receive 'rid'. */
static void a_to_b(struct side *a, struct side *b, int i, uint64_t rid)
{
	char want[MSG];

	snprintf(want, sizeof(want), "message %d from %s", i, a->name);
	memcpy(a->buf, want, sizeof(want));
	post_send(a, 1000000 + (uint64_t)i, 0, 0);
	expect_completion(a, 1000000 + (uint64_t)i);
	expect_completion(b, rid);
	EXPECT(!memcmp(b->buf, want, sizeof(want)), "%s: received '%.40s'", b->name, b->buf);
}

int main(int argc, char **argv)
{
	bool wait = argc > 3 && !strcmp(argv[3], "--wait");
	struct side a, b;
	const char *step;
	char line[16];
	int i;

	if (argc < 3)
		DIE("usage: multidev DEVICE-A DEVICE-B [--wait]");
	side_open(&a, argv[1]);
	side_open(&b, argv[2]);
	step = rc_connect(a.qp, b.qp->qp_num, &b.gid, IBV_ACCESS_REMOTE_WRITE);
	if (!step)
		step = rc_connect(b.qp, a.qp->qp_num, &a.gid, IBV_ACCESS_REMOTE_WRITE);
	if (step)
		DIE("modify_qp %s", step);
	for (i = 0; i < ROUNDS; i++) {
		post_recv(&b, (uint64_t)i);
		a_to_b(&a, &b, i, (uint64_t)i);
		/* back into A's memory, with A's key */
		post_send(&b, 2000000 + (uint64_t)i, (uintptr_t)a.buf + 2048, a.mr->rkey);
		expect_completion(&b, 2000000 + (uint64_t)i);
		EXPECT(!memcmp(a.buf + 2048, b.buf, MSG), "round %d: RDMA write not in %s's memory",
		       i, a.name);
	}
	printf("rounds %d qpn %u %u\n", ROUNDS, a.qp->qp_num, b.qp->qp_num);
	if (wait) {
		post_recv(&b, 3001);
		post_recv(&b, 3002);
		printf("posted\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			DIE("stdin closed");
		a_to_b(&a, &b, ROUNDS, 3001);
		a_to_b(&a, &b, ROUNDS + 1, 3002);
	}
	side_close(&a);
	side_close(&b);
	return failures ? 1 : 0;
}
