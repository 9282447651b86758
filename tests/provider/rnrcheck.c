// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnrcheck DEV TRIGGER: an unsignaled send whose receiver has no receive
 * posted is not lost by a checkpoint.
 *
 * RC QP A sends to RC QP B, both on DEV; B has no receive posted, so A's
 * one unsignaled SEND is retried on RNR (rnr_retry 7: for ever, every
 * 491 ms). Each retry rewinds A's send PSN to the one B expects, so a check
 * of PSNs alone finds nothing in flight. The program says "ready" and
 * waits for the file TRIGGER (the test tries to checkpoint meanwhile,
 * which must be refused), then posts B's receive: the message must arrive,
 * intact, within 10 s. Exit 0 if it did, 1 if not, 2 if the set-up failed.
 */
#include <time.h>
#include <unistd.h>
#include "../lib/verbs_util.h"
#define PROG "rnrcheck"
#include "../lib/expect.h"

#define MSG	"the one unsignaled message"

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))	/* EINTR after a restore */
		;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	static char buf[2 * 64];
	struct ibv_recv_wr rw, *bad_rw;
	struct ibv_send_wr sw, *bad_sw;
	struct ibv_context *ctx;
	struct ibv_qp *a, *b;
	const char *step;
	struct ibv_sge sge;
	union ibv_gid gid;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	int i, r, got = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: rnrcheck DEV TRIGGER\n");
		return 2;
	}
	ctx = open_named_device(argv[1]);
	if (!ctx)
		DIE("open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr || ibv_query_gid(ctx, 1, 0, &gid))
		DIE("set-up");
	qa.send_cq = qa.recv_cq = cq;
	a = ibv_create_qp(pd, &qa);
	b = a ? ibv_create_qp(pd, &qa) : NULL;
	if (!b)
		DIE("create_qp");
	/* rnr_retry 7, min_rnr_timer 31: a retry every 491 ms, for ever */
	step = rc_connect_rnr(a, b->qp_num, &gid, 0, 31);
	if (!step)
		step = rc_connect_rnr(b, a->qp_num, &gid, 0, 31);
	if (step)
		DIE("to %s", step);
	snprintf(buf, 64, MSG);
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(MSG), mr->lkey };
	sw = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND };	/* unsignaled */
	if (ibv_post_send(a, &sw, &bad_sw))
		DIE("post_send");
	sleep_ms(200);		/* sent, NAKed: in RNR retry */
	printf("ready\n");
	fflush(stdout);
	while (access(argv[2], F_OK))
		sleep_ms(50);

	sge = (struct ibv_sge){ (uintptr_t)buf + 64, 64, mr->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	if (ibv_post_recv(b, &rw, &bad_rw))
		DIE("post_recv");
	for (i = 0; i < 10000 && !got; i++) {
		r = ibv_poll_cq(cq, 1, &wc);
		if (r < 0)
			DIE("poll_cq");
		if (!r) {
			sleep_ms(1);
			continue;
		}
		EXPECT(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2, "completion %s, wr_id %llu",
		       ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
		got = wc.wr_id == 2;
	}
	EXPECT(got, "the unsignaled message never arrived");
	EXPECT(!got || !strcmp(buf + 64, MSG), "the message arrived as '%.63s'", buf + 64);
	if (failures)
		return 1;
	if (ibv_destroy_qp(a) || ibv_destroy_qp(b) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) ||
	    ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		DIE("tear-down");
	printf("rnrcheck: the unsignaled send waiting on RNR arrived once its receive was "
	       "posted\n");
	return 0;
}
