// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mtverbs: threads sharing one verbs context, for `make bench` (the fast
 * path must not make them share a cache line per verb).
 *
 *   mtverbs DEVICE MODE THREADS SECONDS
 *	poll	  each thread polls its own empty CQ: the cheapest verb, where
 *		  whatever the provider adds shows most
 *	pingpong  each thread runs rounds of post_recv + post_send (signaled
 *		  SEND, 64 bytes) + polls of its own CQ on its own QP connected
 *		  to itself
 *	pipeline  (THREADS is 2) one thread posts receive + send pairs to one
 *		  QP, another polls its CQ; at most 8 pairs outstanding
 *
 * Prints "mode M threads T ops N ops_per_s X"; an op is a poll, a round or
 * a pair.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"

#define DEPTH 16

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char *buf;
static union ibv_gid gid;
static atomic_bool stop;
static atomic_long outstanding;		/* pipeline: pairs posted, not completed */

/* One per thread, on lines of its own: the bench must share nothing itself. */
struct worker {
	pthread_t t;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int id;
	long ops;		/* written once, at the end */
} __attribute__((aligned(64)));

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static struct ibv_qp *loop_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);
	const char *step;

	if (!qp)
		die("create_qp");
	step = rc_loopback_connect(qp, &gid, IBV_ACCESS_LOCAL_WRITE);
	if (step)
		die(step);
	return qp;
}

static void post_pair(struct worker *w)
{
	char *b = buf + (size_t)w->id * 4096;
	struct ibv_sge rs = { (uintptr_t)b, 64, mr->lkey }, ss = { (uintptr_t)b + 2048, 64, mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rb;
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sb;

	if (ibv_post_recv(w->qp, &rw, &rb) || ibv_post_send(w->qp, &sw, &sb))
		die("post");
}

/* A completion that failed ends the run. */
static void check_wc(const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion: %s\n", ibv_wc_status_str(wc->status));
		exit(1);
	}
}

/* Polls until n completions came, each checked. */
static void reap(struct worker *w, int n)
{
	struct ibv_wc wc[4];
	int got = 0, k, i;

	while (got < n && !atomic_load_explicit(&stop, memory_order_relaxed)) {
		k = ibv_poll_cq(w->cq, 4, wc);
		if (k < 0)
			die("poll_cq");
		for (i = 0; i < k; i++)
			check_wc(&wc[i]);
		got += k;
	}
}

static void *run_poll(void *arg)
{
	struct worker *w = arg;
	struct ibv_wc wc;
	long ops = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (ibv_poll_cq(w->cq, 1, &wc) != 0)
			die("poll_cq of an empty CQ");
		ops++;
	}
	w->ops = ops;
	return NULL;
}

static void *run_pingpong(void *arg)
{
	struct worker *w = arg;
	long ops = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		post_pair(w);
		reap(w, 2);
		ops++;
	}
	w->ops = ops;
	return NULL;
}

static void *run_poster(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load(&outstanding) >= DEPTH / 2)
			continue;
		atomic_fetch_add(&outstanding, 1);
		post_pair(w);
	}
	return NULL;
}

static void *run_poller(void *arg)
{
	struct worker *w = arg;
	struct ibv_wc wc[4];
	long ops = 0;
	int k, i;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		k = ibv_poll_cq(w->cq, 4, wc);
		if (k < 0)
			die("poll_cq");
		for (i = 0; i < k; i++) {
			check_wc(&wc[i]);
			if (wc[i].opcode == IBV_WC_SEND)	/* its queue slot is free again */
				atomic_fetch_sub(&outstanding, 1);
			else
				ops++;				/* a pair is done once received */
		}
	}
	w->ops = ops;
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *w;
	const char *mode;
	double secs;
	long ops = 0;
	int n, i;

	if (argc != 5 || (n = atoi(argv[3])) < 1 || (secs = atof(argv[4])) <= 0) {
		fprintf(stderr, "usage: mtverbs DEVICE poll|pingpong|pipeline THREADS SECONDS\n");
		return 2;
	}
	mode = argv[2];
	if (!strcmp(mode, "pipeline"))
		n = 2;
	ctx = open_named_device(argv[1]);
	if (!ctx)
		die(argv[1]);
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, (size_t)n * 4096);
	if (!pd || !buf || ibv_query_gid(ctx, 1, 0, &gid))
		die("pd/buf/gid");
	mr = ibv_reg_mr(pd, buf, (size_t)n * 4096, IBV_ACCESS_LOCAL_WRITE);
	w = aligned_alloc(64, (size_t)n * sizeof(*w));
	if (w)
		memset(w, 0, (size_t)n * sizeof(*w));
	if (!mr || !w)
		die("mr");
	for (i = 0; i < n; i++) {
		w[i].id = i;
		w[i].cq = i && !strcmp(mode, "pipeline") ? w[0].cq :
			  ibv_create_cq(ctx, 4 * DEPTH, NULL, NULL, 0);
		if (!w[i].cq)
			die("create_cq");
		if (!strcmp(mode, "pingpong") || (!strcmp(mode, "pipeline") && !i))
			w[i].qp = loop_qp(w[i].cq);
	}
	if (!strcmp(mode, "pipeline"))
		w[1].qp = w[0].qp;
	for (i = 0; i < n; i++) {
		void *(*fn)(void *) = !strcmp(mode, "poll") ? run_poll :
				      !strcmp(mode, "pingpong") ? run_pingpong :
				      !strcmp(mode, "pipeline") ? (i ? run_poller : run_poster) : NULL;

		if (!fn) {
			fprintf(stderr, "mtverbs: unknown mode %s\n", mode);
			return 2;
		}
		if (pthread_create(&w[i].t, NULL, fn, &w[i]))
			die("pthread_create");
	}
	nanosleep(&(struct timespec){ (time_t)secs, (long)((secs - (time_t)secs) * 1e9) }, NULL);
	atomic_store(&stop, true);
	for (i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		ops += w[i].ops;
	}
	printf("mode %s threads %d ops %ld ops_per_s %.0f\n", mode, n, ops, ops / secs);
	return 0;
}
