// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fastpath: a verbs load for `make bench`, on one device, with QPs
 * connected to themselves (loopback through the device).
 *
 *   fastpath [--wait] DEVICE ITERS [MRS] [QPS]
 *	ITERS rounds of post_recv + post_send (signaled SEND, 64 bytes) +
 *	poll_cq until both completed, on one QP; MRS-1 and QPS-1 more MRs and
 *	QPs exist beside it (the fast path must not care). Prints
 *	"iters N polls N ns_per_iter X". With --wait, once set up it prints
 *	"ready" and waits for a line on its standard input before it starts:
 *	time for a checkpoint in place, after which every ID it holds is
 *	translated (the bench's translating path). It waits in read(), where a
 *	freeze parks a thread that holds no lock of valgrind's.
 *   fastpath --empty DEVICE ITERS
 *	ITERS polls of an empty CQ. Prints "polls N ns_per_poll X".
 *   fastpath --hold DEVICE MRS QPS PROCS
 *	PROCS processes (forked, same process group), each with MRS MRs and
 *	QPS QPs, sending round-robin over all its QPs until SIGTERM; prints
 *	"ready" once all run. What a freeze's downtime is measured on.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr **mrs;
	struct ibv_qp **qps;
	char *buf;
	int nmr, nqp;
	union ibv_gid gid;
};

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_context *c = open_named_device(name);

	if (!c)
		die(name);
	return c;
}

static void connect_self(struct env *e, struct ibv_qp *qp)
{
	const char *step = rc_loopback_connect(qp, &e->gid, IBV_ACCESS_LOCAL_WRITE);

	if (step)
		die(step);
}

static void setup(struct env *e, const char *dev, int nmr, int nqp)
{
	e->ctx = open_dev(dev);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, 2 * nqp + 16, NULL, NULL, 0) : NULL;
	if (!e->cq || ibv_query_gid(e->ctx, 1, 0, &e->gid))
		die("pd/cq/gid");
	e->nmr = nmr;
	e->nqp = nqp;
	e->buf = aligned_alloc(4096, (size_t)nmr * 4096);
	e->mrs = calloc((size_t)nmr, sizeof(*e->mrs));
	e->qps = calloc((size_t)nqp, sizeof(*e->qps));
	if (!e->buf || !e->mrs || !e->qps)
		die("malloc");
	for (int i = 0; i < nmr; i++) {
		e->mrs[i] = ibv_reg_mr(e->pd, e->buf + (size_t)i * 4096, 4096, IBV_ACCESS_LOCAL_WRITE);
		if (!e->mrs[i])
			die("reg_mr");
	}
	for (int i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		e->qps[i] = ibv_create_qp(e->pd, &qa);
		if (!e->qps[i])
			die("create_qp");
		connect_self(e, e->qps[i]);
	}
}

static void post_pair(struct env *e, int q, int m)
{
	struct ibv_sge rs = { (uintptr_t)e->buf + (size_t)m * 4096, 64, e->mrs[m]->lkey };
	struct ibv_sge ss = { (uintptr_t)e->buf + (size_t)m * 4096 + 2048, 64, e->mrs[m]->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rb;
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sb;

	if (ibv_post_recv(e->qps[q], &rw, &rb) || ibv_post_send(e->qps[q], &sw, &sb))
		die("post");
}

static long wait_two(struct env *e)
{
	struct ibv_wc wc[2];
	long polls = 0;
	int got = 0, n;

	while (got < 2 && !stop) {
		n = ibv_poll_cq(e->cq, 2, wc);
		polls++;
		if (n < 0)
			die("poll_cq");
		for (int k = 0; k < n; k++)
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "completion: %s\n", ibv_wc_status_str(wc[k].status));
				exit(1);
			}
		got += n;
	}
	return polls;
}

static int hold(char **argv)
{
	int nmr = atoi(argv[3]), nqp = atoi(argv[4]), procs = atoi(argv[5]);
	struct env e;

	signal(SIGTERM, on_term);
	for (int p = 1; p < procs; p++)
		if (fork() == 0)
			break;
	setup(&e, argv[2], nmr, nqp);
	if (getpid() == getpgrp()) {
		printf("ready\n");
		fflush(stdout);
	}
	for (long i = 0; !stop; i++) {
		post_pair(&e, (int)(i % nqp), (int)(i % nmr));
		wait_two(&e);
	}
	while (wait(NULL) > 0)
		;
	return 0;
}

static double ns_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e9 + (t1.tv_nsec - t0->tv_nsec);
}

static int empty(char **argv)
{
	long iters = atol(argv[3]);
	struct timespec t0;
	struct ibv_wc wc;
	struct env e;

	setup(&e, argv[2], 1, 1);
	for (int i = 0; i < 100; i++)	/* warm up */
		if (ibv_poll_cq(e.cq, 1, &wc))
			die("poll_cq of an empty CQ");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < iters; i++)
		if (ibv_poll_cq(e.cq, 1, &wc))
			die("poll_cq of an empty CQ");
	printf("polls %ld ns_per_poll %.1f\n", iters, ns_since(&t0) / iters);
	return 0;
}

static void warm_up(struct env *e)
{
	for (int i = 0; i < 100; i++) {
		post_pair(e, 0, 0);
		wait_two(e);
	}
}

/* "ready", then a line on standard input (or its end). */
static void wait_go(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		die("stdin");
}

int main(int argc, char **argv)
{
	struct timespec t0;
	long iters, polls = 0;
	bool wait = false;
	struct env e;

	if (argc == 6 && !strcmp(argv[1], "--hold"))
		return hold(argv);
	if (argc == 4 && !strcmp(argv[1], "--empty"))
		return empty(argv);
	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		wait = true;
		argv++;
		argc--;
	}
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: fastpath [--wait] DEVICE ITERS [MRS] [QPS]\n"
			"       fastpath --empty DEVICE ITERS\n"
			"       fastpath --hold DEVICE MRS QPS PROCS\n");
		return 2;
	}
	iters = atol(argv[2]);
	setup(&e, argv[1], argc > 3 ? atoi(argv[3]) : 1, argc > 4 ? atoi(argv[4]) : 1);
	warm_up(&e);
	if (wait) {
		wait_go();
		warm_up(&e);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < iters; i++) {
		post_pair(&e, 0, 0);
		polls += wait_two(&e);
	}
	printf("iters %ld polls %ld ns_per_iter %.0f\n", iters, polls, ns_since(&t0) / iters);
	return 0;
}
