// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * latemr DEV TRIGGER: receives that name an MR registered after their
 * queue was created come back usable after a reacquire.
 *
 * An SRQ and two RC QPs (A and B, B on the SRQ, A with a receive queue of
 * its own) are created first; only then is the MR registered, and
 * receives naming it posted to the SRQ and to A's queue (UCX grows its
 * receive pool so). The program says "ready" and waits for the file
 * TRIGGER (the test releases and reacquires the job in place meanwhile),
 * then A sends to B (into the SRQ) and B to A: both messages must arrive
 * intact within 10 s. Exit 0 if they did, 1 if not, 2 if the set-up
 * failed.
 */
#include <time.h>
#include <unistd.h>
#include "../lib/verbs_util.h"
#define PROG "latemr"
#include "../lib/expect.h"

#define MSG_AB	"from A to B, into the shared receive queue"
#define MSG_BA	"from B to A, into A's own receive queue"

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))
		;
}

/* Post a receive of 64 bytes at @off, wr_id @id. */
static int post_recv(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_mr *mr, char *buf,
		     int off, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, 64, mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return srq ? ibv_post_srq_recv(srq, &rw, &bad) : ibv_post_recv(qp, &rw, &bad);
}

static int post_send(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, int off, int len,
		     uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, (uint32_t)len, mr->lkey };
	struct ibv_send_wr sw = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(qp, &sw, &bad);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	static char buf[4 * 64];
	struct ibv_context *ctx;
	struct ibv_qp *a, *b;
	struct ibv_srq *srq;
	const char *step;
	union ibv_gid gid;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	int i, r, got = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: latemr DEV TRIGGER\n");
		return 2;
	}
	ctx = open_named_device(argv[1]);
	if (!ctx)
		DIE("open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	srq = cq ? ibv_create_srq(pd, &sa) : NULL;
	if (!srq || ibv_query_gid(ctx, 1, 0, &gid))
		DIE("set-up");
	qa.send_cq = qa.recv_cq = cq;
	a = ibv_create_qp(pd, &qa);
	qa.srq = srq;
	b = a ? ibv_create_qp(pd, &qa) : NULL;
	if (!b)
		DIE("create_qp");
	step = rc_connect(a, b->qp_num, &gid, 0);
	if (!step)
		step = rc_connect(b, a->qp_num, &gid, 0);
	if (step)
		DIE("to %s", step);
	/* the MR last, after every queue its receives go to */
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		DIE("reg_mr");
	if (post_recv(NULL, srq, mr, buf, 64, 1) || post_recv(a, NULL, mr, buf, 192, 2))
		DIE("post_recv");
	printf("ready\n");
	fflush(stdout);
	while (access(argv[2], F_OK))
		sleep_ms(50);

	snprintf(buf, 64, MSG_AB);
	snprintf(buf + 128, 64, MSG_BA);
	if (post_send(a, mr, buf, 0, sizeof(MSG_AB), 3) ||
	    post_send(b, mr, buf, 128, sizeof(MSG_BA), 4))
		DIE("post_send");
	for (i = 0; i < 10000 && got < 4; i++) {
		r = ibv_poll_cq(cq, 1, &wc);
		if (r < 0)
			DIE("poll_cq");
		if (!r) {
			sleep_ms(1);
			continue;
		}
		EXPECT(wc.status == IBV_WC_SUCCESS, "wr_id %llu completed: %s",
		       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		got++;
	}
	EXPECT(got == 4, "%d of 4 completions", got);
	EXPECT(!strcmp(buf + 64, MSG_AB), "B received '%.63s'", buf + 64);
	EXPECT(!strcmp(buf + 192, MSG_BA), "A received '%.63s'", buf + 192);
	if (failures)
		return 1;
	if (ibv_destroy_qp(a) || ibv_destroy_qp(b) || ibv_destroy_srq(srq) ||
	    ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		DIE("tear-down");
	printf("latemr: receives naming an MR registered after their queues arrived\n");
	return 0;
}
