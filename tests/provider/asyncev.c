// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * asyncev DEV TRIGGER: a thread blocked in ibv_get_async_event() across a
 * checkpoint (in place, or to disk and restarted) gets the event raised
 * after it, naming the application's own SRQ.
 *
 * One RC QP connected to itself receives through an SRQ with 16 receives
 * posted and its limit armed at 8. The event thread blocks at once; the
 * program says "ready" and waits for the file TRIGGER to exist (the test
 * checkpoints meanwhile), then sends 10 messages: the SRQ falls below its
 * limit and the device raises IBV_EVENT_SRQ_LIMIT_REACHED. Exit 0 if the
 * blocked thread got exactly that event for that SRQ within 10 s, 1 if not,
 * 2 if the set-up failed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "../lib/verbs_util.h"
#define PROG "asyncev"
#include "../lib/expect.h"

#define NRECV	16
#define LIMIT	8
#define NSEND	10
#define MSG	64

static struct ibv_context *ctx;
static struct ibv_async_event got;
static atomic_int got_rc = -2;		/* -2: still waiting */

static void *event_thread(void *arg)
{
	(void)arg;
	/* restarted by CRIU, or by the kernel after a thaw: it must not fail */
	atomic_store(&got_rc, ibv_get_async_event(ctx, &got));
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))	/* EINTR after a restore */
		;
}

/* Poll @n completions off @cq within 10 s; each must be a success. */
static void reap(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc;
	int i, got_n = 0, r;

	for (i = 0; i < 10000 && got_n < n; i++) {
		r = ibv_poll_cq(cq, 1, &wc);
		if (r < 0)
			DIE("poll_cq");
		if (!r) {
			sleep_ms(1);
			continue;
		}
		EXPECT(wc.status == IBV_WC_SUCCESS, "completion %s (opcode %d)",
		       ibv_wc_status_str(wc.status), wc.opcode);
		got_n++;
	}
	EXPECT(got_n == n, "%d of %d completions", got_n, n);
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 1 } };
	struct ibv_srq_attr limit = { .srq_limit = LIMIT };
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = NSEND, .max_recv_wr = 0, .max_send_sge = 1 },
	};
	static char buf[(NRECV + 1) * MSG];
	struct ibv_recv_wr rw, *bad_rw;
	struct ibv_send_wr sw, *bad_sw;
	struct ibv_sge sge;
	const char *step;
	union ibv_gid gid;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	pthread_t t;
	int i;

	if (argc != 3) {
		fprintf(stderr, "usage: asyncev DEV TRIGGER\n");
		return 2;
	}
	ctx = open_named_device(argv[1]);
	if (!ctx)
		DIE("open %s", argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 2 * (NRECV + NSEND), NULL, NULL, 0) : NULL;
	/* relaxed ordering: an optional flag the provider must not lose (vm/67 dumps it) */
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING) : NULL;
	srq = mr ? ibv_create_srq(pd, &sa) : NULL;
	if (!srq)
		DIE("set-up");
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	qp = ibv_create_qp(pd, &qa);
	if (!qp || ibv_query_gid(ctx, 1, 0, &gid))
		DIE("create_qp");
	step = rc_loopback_connect(qp, &gid, IBV_ACCESS_LOCAL_WRITE);
	if (step)
		DIE("to %s", step);
	for (i = 0; i < NRECV; i++) {
		sge = (struct ibv_sge){ (uintptr_t)buf + (size_t)(i + 1) * MSG, MSG, mr->lkey };
		rw = (struct ibv_recv_wr){ .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };
		if (ibv_post_srq_recv(srq, &rw, &bad_rw))
			DIE("post_srq_recv");
	}
	if (ibv_modify_srq(srq, &limit, IBV_SRQ_LIMIT))
		DIE("arm the SRQ limit");
	if (pthread_create(&t, NULL, event_thread, NULL))
		DIE("pthread_create");
	sleep_ms(100);		/* the thread blocks in its read */
	printf("ready\n");
	fflush(stdout);
	while (access(argv[2], F_OK))
		sleep_ms(50);
	EXPECT(atomic_load(&got_rc) == -2, "an event before the trigger (rc %d, type %d)",
	       atomic_load(&got_rc), got.event_type);

	for (i = 0; i < NSEND; i++) {
		snprintf(buf, MSG, "message %d", i);
		sge = (struct ibv_sge){ (uintptr_t)buf, MSG, mr->lkey };
		sw = (struct ibv_send_wr){ .wr_id = 100 + (uint64_t)i, .sg_list = &sge,
					   .num_sge = 1, .opcode = IBV_WR_SEND };
		if (ibv_post_send(qp, &sw, &bad_sw))
			DIE("post_send %d", i);
		reap(cq, 2);	/* the send and its receive */
	}
	for (i = 0; i < 1000 && atomic_load(&got_rc) == -2; i++)
		sleep_ms(10);
	EXPECT(atomic_load(&got_rc) == 0, "the blocked thread got no event (rc %d)",
	       atomic_load(&got_rc));
	if (atomic_load(&got_rc) == 0) {
		EXPECT(got.event_type == IBV_EVENT_SRQ_LIMIT_REACHED, "event %s",
		       ibv_event_type_str(got.event_type));
		EXPECT(got.element.srq == srq, "the event names %p, not the SRQ %p",
		       (void *)got.element.srq, (void *)srq);
		ibv_ack_async_event(&got);
		pthread_join(t, NULL);
	} else {
		pthread_cancel(t);
	}
	if (failures)
		return 1;
	if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq) || ibv_dereg_mr(mr) ||
	    ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		DIE("tear-down");
	printf("asyncev: %s on the application's SRQ, read by a thread blocked since before "
	       "the checkpoint\n", ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED));
	return 0;
}
