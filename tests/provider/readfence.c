// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * readfence DEV_A DEV_B read|atomic|full GRANTS TRIGGER: an unsignaled
 * RDMA READ (or atomic) whose response is lost when a checkpoint comes
 * still lands its data (restart.rst, "Exactly once").
 *
 * RC QP A on DEV_A reads from (or adds to) memory of RC QP B on DEV_B,
 * both in this process. B's QP grants what GRANTS names (r: remote reads,
 * w: remote writes, a: remote atomics; its MR what A's request needs
 * too), so that the provider's fence behind A's request is chosen from
 * them: a zero-length WRITE if B grants writes, else a zero-length READ,
 * else a FETCH_AND_ADD of 0. A's timeout is 18 (1.07 s before it asks
 * again for a lost response), its retries unlimited. The program says
 * "ready" and waits for the file TRIGGER (the test makes the link drop
 * what DEV_B sends meanwhile), then posts one unsignaled request: a READ
 * of 4 KiB of a pattern, or a FETCH_AND_ADD of 1 to a counter at 41. It
 * says "posted" and waits up to 20 s for the result in A's buffer (the
 * test checkpoints the job and lets the link carry DEV_B's packets again
 * meanwhile), and checks that the request ran once (the counter is 42).
 * Once the file TRIGGER.after exists (the checkpoint is over) it checks
 * that A's QP still works: a signaled READ or add completes, and is the
 * only completion in A's CQ (the provider's fence completed, and never
 * reached the application).
 *
 * full: two such pairs, both READs, the second's QPs on the first's
 * contexts, created after them; the second A's send queue holds one
 * request (rxe grants a depth of 1 for 1), the READ whose response is
 * lost: a release finds no room for its fence after it posted the first
 * A's, and must wait for that one before it refuses.
 *
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
	uint8_t *buf;
};

static uint8_t abuf[2][LEN] __attribute__((aligned(4096)));
static uint8_t bbuf[2][LEN] __attribute__((aligned(4096)));

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))	/* EINTR: a freeze, a restore */
		;
}

/* A side on device @dev, on the context @ctx has open on it already (or its own). */
static void side_open(struct side *s, const char *dev, struct ibv_context *ctx, uint8_t *buf,
		      int access, uint32_t depth)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	s->buf = buf;
	s->ctx = ctx ? ctx : open_named_device(dev);
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

/* A's request: a READ of @len bytes into its buffer, or an add of 1 with its result there. */
static int post(struct side *a, const struct side *b, bool atomic, uint32_t len,
		uint64_t wr_id, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)a->buf, atomic ? 8 : len, a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .send_flags = flags }, *bad;

	if (atomic) {
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)b->buf;
		wr.wr.atomic.rkey = b->mr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
		wr.wr.rdma.rkey = b->mr->rkey;
	}
	return ibv_post_send(a->qp, &wr, &bad);
}

static bool landed(const uint8_t *buf, bool atomic)
{
	uint64_t v;
	int i;

	if (atomic) {
		memcpy(&v, buf, 8);
		return v == 41;
	}
	for (i = 0; i < LEN; i++)
		if (buf[i] != (uint8_t)(i * 7 + 1))
			return false;
	return true;
}

/* GRANTS: "r", "w", "a" in any order. */
static int grants(const char *g)
{
	int access = 0;

	for (; *g; g++) {
		if (*g == 'r')
			access |= IBV_ACCESS_REMOTE_READ;
		else if (*g == 'w')
			access |= IBV_ACCESS_REMOTE_WRITE;
		else if (*g == 'a')
			access |= IBV_ACCESS_REMOTE_ATOMIC;
		else if (*g != '-')
			return -1;
	}
	return access;
}

static void wait_file(const char *path)
{
	int i;

	for (i = 0; access(path, F_OK); i++) {
		if (i == 6000)
			DIE("no trigger %s", path);
		sleep_ms(10);
	}
}

/* After the checkpoint: a signaled request completes, the only completion in A's CQ. */
static void still_works(struct side *a, const struct side *b, bool atomic)
{
	struct ibv_wc wc[4];
	uint64_t v;
	int i, n = 0;

	memset(a->buf, 0, LEN);
	if (post(a, b, atomic, 64, 77, IBV_SEND_SIGNALED))
		DIE("post_send after");
	for (i = 0; i < 1000 && !n; i++) {
		n = ibv_poll_cq(a->cq, 4, wc);
		if (!n)
			sleep_ms(10);
	}
	EXPECT(n == 1, "%d completions after the signaled request, not 1", n);
	EXPECT(n < 1 || (wc[0].wr_id == 77 && wc[0].status == IBV_WC_SUCCESS),
	       "completion wr_id %#llx status %d, not the request's",
	       (unsigned long long)wc[0].wr_id, (int)wc[0].status);
	sleep_ms(100);
	EXPECT(ibv_poll_cq(a->cq, 4, wc) == 0, "another completion in A's CQ");
	if (atomic) {
		memcpy(&v, a->buf, 8);
		EXPECT(v == 42, "the second add found %llu, not 42", (unsigned long long)v);
	} else {
		for (i = 0; i < 64 && a->buf[i] == (uint8_t)(i * 7 + 1); i++)
			;
		EXPECT(i == 64, "the second READ's byte %d is wrong", i);
	}
}

int main(int argc, char **argv)
{
	struct side a[2] = { 0 }, b[2] = { 0 };
	uint64_t counter = 41, v;
	int i, k, np, access, need;
	const char *step;
	char after[4200];
	bool atomic;

	if (argc != 6 || (strcmp(argv[3], "read") && strcmp(argv[3], "atomic") &&
			  strcmp(argv[3], "full")) || grants(argv[4]) < 0) {
		fprintf(stderr, "usage: readfence DEV_A DEV_B read|atomic|full r|w|a... TRIGGER\n");
		return 2;
	}
	atomic = !strcmp(argv[3], "atomic");
	np = strcmp(argv[3], "full") ? 1 : 2;
	access = grants(argv[4]);
	need = atomic ? IBV_ACCESS_REMOTE_ATOMIC : IBV_ACCESS_REMOTE_READ;
	for (k = 0; k < np; k++) {
		if (atomic)
			memcpy(bbuf[k], &counter, 8);
		else
			for (i = 0; i < LEN; i++)
				bbuf[k][i] = (uint8_t)(i * 7 + 1);
		/* one context per device: the second pair's QPs come after the first's */
		side_open(&a[k], argv[1], a[0].ctx, abuf[k], 0, k ? 1 : 8);
		side_open(&b[k], argv[2], b[0].ctx, bbuf[k], access | need, 8);
		step = connect_qp(&a[k], &b[k], 0);
		if (!step)
			step = connect_qp(&b[k], &a[k], access);
		if (step)
			DIE("to %s", step);
	}
	printf("ready\n");
	fflush(stdout);
	wait_file(argv[5]);
	for (k = 0; k < np; k++)
		if (post(&a[k], &b[k], atomic, LEN, 1, 0))	/* unsignaled */
			DIE("post_send");
	printf("posted\n");
	fflush(stdout);
	for (k = 0; k < np; k++) {
		for (i = 0; i < WAIT_MS / 10 && !landed(a[k].buf, atomic); i++)
			sleep_ms(10);
		EXPECT(landed(a[k].buf, atomic), "the %s's result never landed in the local "
		       "buffer of pair %d (after %d ms)", argv[3], k, WAIT_MS);
		if (atomic) {
			memcpy(&v, b[k].buf, 8);
			EXPECT(v == 42, "the counter is %llu, not 42: the add ran %s",
			       (unsigned long long)v, v > 42 ? "twice" : "not at all");
		}
	}
	/* A's QPs go on; their CQs have the one completion asked for, no other */
	snprintf(after, sizeof(after), "%s.after", argv[5]);
	wait_file(after);
	for (k = 0; k < np; k++)
		still_works(&a[k], &b[k], atomic);
	printf("%s\n", failures ? "failed" : "ok");
	return failures ? 1 : 0;
}
