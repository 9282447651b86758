// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * readfence DEV_A DEV_B read|atomic TRIGGER: an unsignaled RDMA READ (or
 * atomic) whose response is lost when a checkpoint comes still lands its
 * data (restart.rst, "Exactly once").
 *
 * RC QP A on DEV_A reads from (or adds to) memory of RC QP B on DEV_B,
 * both in this process. B grants remote reads only (read) or remote
 * atomics only (atomic), so that a fence of the wrong kind would fail A.
 * A's timeout is 18 (1.07 s before it asks again for a lost response),
 * its retries unlimited. The program says "ready" and waits for the file
 * TRIGGER (the test makes the link drop what DEV_B sends meanwhile), then
 * posts one unsignaled request: a READ of 4 KiB of a pattern, or a
 * FETCH_AND_ADD of 1 to a counter at 41. It says "posted" and waits up to
 * 20 s for the result in A's buffer (the test checkpoints the job and
 * lets the link carry DEV_B's packets again meanwhile), and checks that
 * the request ran once (the counter is 42). Once the file TRIGGER.after
 * exists (the checkpoint is over) it checks that A's QP still works: a
 * signaled READ or add completes, and is the only completion in A's CQ
 * (the provider's fence completed, and never reached the application).
 * Exit 0 if all holds, 1 if not, 2 if the set-up failed.
 */
#include <stdbool.h>
#include <time.h>
#include <unistd.h>
#include "../lib/verbs_util.h"
#define PROG "readfence"
#include "../lib/expect.h"

#define LEN	4096
#define WAIT_MS	20000

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

static uint8_t abuf[LEN] __attribute__((aligned(4096)));
static uint8_t bbuf[LEN] __attribute__((aligned(4096)));

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))	/* EINTR: a freeze, a restore */
		;
}

static void side_open(struct side *s, const char *dev, void *buf, int access)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	s->ctx = open_named_device(dev);
	if (!s->ctx)
		DIE("open %s", dev);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 16, NULL, NULL, 0) : NULL;
	s->mr = s->cq ? ibv_reg_mr(s->pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE | access) : NULL;
	if (!s->mr || ibv_query_gid(s->ctx, 1, 0, &s->gid))
		DIE("set-up on %s", dev);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &qa);
	if (!s->qp)
		DIE("create_qp on %s", dev);
}

/* INIT, RTR, RTS: as rc_connect(), with timeout 18 and unlimited retries. */
static const char *connect_qp(struct side *s, const struct side *peer, int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = (unsigned int)access };

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return "INIT";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return "RTR";
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;
	a.retry_cnt = 7;		/* rxe: for ever */
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return "RTS";
	return NULL;
}

/* A's request: a READ of @len bytes into abuf, or an add of 1 with its result there. */
static int post(struct side *a, const struct side *b, bool atomic, uint32_t len,
		uint64_t wr_id, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)abuf, atomic ? 8 : len, a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .send_flags = flags }, *bad;

	if (atomic) {
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)bbuf;
		wr.wr.atomic.rkey = b->mr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)bbuf;
		wr.wr.rdma.rkey = b->mr->rkey;
	}
	return ibv_post_send(a->qp, &wr, &bad);
}

static bool landed(bool atomic)
{
	uint64_t v;
	int i;

	if (atomic) {
		memcpy(&v, abuf, 8);
		return v == 41;
	}
	for (i = 0; i < LEN; i++)
		if (abuf[i] != (uint8_t)(i * 7 + 1))
			return false;
	return true;
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	uint64_t counter = 41, v;
	struct ibv_wc wc[4];
	const char *step;
	char after[4200];
	bool atomic;
	int i, n = 0;

	if (argc != 5 || (strcmp(argv[3], "read") && strcmp(argv[3], "atomic"))) {
		fprintf(stderr, "usage: readfence DEV_A DEV_B read|atomic TRIGGER\n");
		return 2;
	}
	atomic = !strcmp(argv[3], "atomic");
	if (atomic)
		memcpy(bbuf, &counter, 8);
	else
		for (i = 0; i < LEN; i++)
			bbuf[i] = (uint8_t)(i * 7 + 1);
	side_open(&a, argv[1], abuf, 0);
	side_open(&b, argv[2], bbuf, atomic ? IBV_ACCESS_REMOTE_ATOMIC : IBV_ACCESS_REMOTE_READ);
	step = connect_qp(&a, &b, 0);
	if (!step)
		step = connect_qp(&b, &a, atomic ? IBV_ACCESS_REMOTE_ATOMIC :
						   IBV_ACCESS_REMOTE_READ);
	if (step)
		DIE("to %s", step);
	printf("ready\n");
	fflush(stdout);
	for (i = 0; access(argv[4], F_OK); i++) {
		if (i == 6000)
			DIE("no trigger %s", argv[4]);
		sleep_ms(10);
	}
	if (post(&a, &b, atomic, LEN, 1, 0))	/* unsignaled */
		DIE("post_send");
	printf("posted\n");
	fflush(stdout);
	for (i = 0; i < WAIT_MS / 10 && !landed(atomic); i++)
		sleep_ms(10);
	EXPECT(landed(atomic), "the %s's result never landed in the local buffer (after %d ms)",
	       argv[3], WAIT_MS);
	if (atomic) {
		memcpy(&v, bbuf, 8);
		EXPECT(v == 42, "the counter is %llu, not 42: the add ran %s", (unsigned long long)v,
		       v > 42 ? "twice" : "not at all");
	}
	/* A's QP goes on; its CQ has the one completion asked for, no other */
	snprintf(after, sizeof(after), "%s.after", argv[4]);
	for (i = 0; access(after, F_OK); i++) {
		if (i == 6000)
			DIE("no trigger %s", after);
		sleep_ms(10);
	}
	memset(abuf, 0, LEN);
	if (post(&a, &b, atomic, 64, 77, IBV_SEND_SIGNALED))
		DIE("post_send after");
	for (i = 0; i < 1000 && !n; i++) {
		n = ibv_poll_cq(a.cq, 4, wc);
		if (!n)
			sleep_ms(10);
	}
	EXPECT(n == 1, "%d completions after the signaled request, not 1", n);
	EXPECT(n < 1 || (wc[0].wr_id == 77 && wc[0].status == IBV_WC_SUCCESS),
	       "completion wr_id %#llx status %d, not the request's",
	       (unsigned long long)wc[0].wr_id, (int)wc[0].status);
	sleep_ms(100);
	EXPECT(ibv_poll_cq(a.cq, 4, wc) == 0, "another completion in A's CQ");
	if (atomic) {
		memcpy(&v, abuf, 8);
		EXPECT(v == 42, "the second add found %llu, not 42", (unsigned long long)v);
	} else {
		for (i = 0; i < 64 && abuf[i] == (uint8_t)(i * 7 + 1); i++)
			;
		EXPECT(i == 64, "the second READ's byte %d is wrong", i);
	}
	printf("%s\n", failures ? "failed" : "ok");
	return failures ? 1 : 0;
}
