// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ckscale: a small live verbs program for `make bench`'s checkpoint/restart
 * scale table (tests/bench/restart-scale.sh).
 *
 *   ckscale DEV QPS MRS [--no-rdma]
 *	Opens DEV: one PD, one CQ, QPS RC QPs connected in loopback pairs on
 *	DEV (QP 2i <-> 2i+1; an odd last one, or QPS=1, to itself), RECVS
 *	receives posted on each, MRS MRs of 4 KiB (one page of one buffer
 *	each, every page touched). Prints "ready", then every 100 ms sends one
 *	64-byte message on the next QP round-robin to its peer and polls until
 *	both completions are there; the receive's content is checked (its
 *	round, sender, receiver and bytes) and the receive posted again.
 *	SIGINT: the round in progress ends, one more message is sent from
 *	every QP to its peer, the CQ must then be empty and every QP at RTS;
 *	everything is destroyed. Exit 0, or 1 on any error (said on stderr).
 *   --no-rdma
 *	The plain criu baseline: the same memory (MRS x 4 KiB, touched), the
 *	same loop and checks with memcpy instead of verbs, no device opened.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"

#define PAGE		4096
#define RECVS		2		/* receives posted per QP */
#define MSG		64		/* bytes per message */
#define SLOTS		16		/* receive slots per page (first half) */
#define POLL_TRIES	20000		/* 1 ms each, counted while running: ~20 s */
#define SEND_ID		UINT64_MAX

static volatile sig_atomic_t stop;

static void on_int(int sig)
{
	(void)sig;
	stop = 1;
}

#define fail(...) do { fprintf(stderr, "ckscale: " __VA_ARGS__); exit(1); } while (0)

struct scale {
	int rdma, nqp, nmr;
	char *buf;			/* nmr pages */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp **qps;
	struct ibv_mr **mrs;
	union ibv_gid gid;
	uint64_t rounds;		/* messages sent and verified */
};

struct msg {
	uint64_t round;
	uint32_t from, to;
	unsigned char fill[MSG - 16];
};

static int peer(const struct scale *s, int q)
{
	if (q == s->nqp - 1 && s->nqp % 2)
		return q;
	return q ^ 1;
}

/* Receive slot k of QP q: its MR and where in its page. */
static int slot_mr(const struct scale *s, int q, int k)
{
	return (int)(((uint64_t)q * RECVS + (uint64_t)k) % (uint64_t)s->nmr);
}

static char *slot_addr(const struct scale *s, int q, int k)
{
	uint64_t n = (uint64_t)q * RECVS + (uint64_t)k;

	return s->buf + (size_t)(n % (uint64_t)s->nmr) * PAGE +
	       (size_t)(n / (uint64_t)s->nmr % SLOTS) * MSG;
}

/* The send buffer of a round: the second half of a page, round-robin. */
static int send_mr(const struct scale *s, uint64_t round)
{
	return (int)(round % (uint64_t)s->nmr);
}

static char *send_addr(const struct scale *s, uint64_t round)
{
	return s->buf + (size_t)send_mr(s, round) * PAGE + PAGE / 2;
}

static void fill_msg(struct msg *m, uint64_t round, int from, int to)
{
	m->round = round;
	m->from = (uint32_t)from;
	m->to = (uint32_t)to;
	for (size_t i = 0; i < sizeof(m->fill); i++)
		m->fill[i] = (unsigned char)(round * 31 + i * 7 + (unsigned int)from);
}

static void check_msg(const char *got, uint32_t len, uint64_t round, int from, int to)
{
	struct msg want;

	fill_msg(&want, round, from, to);
	if (len != MSG || memcmp(got, &want, MSG)) {
		const struct msg *g = (const void *)got;

		fail("round %" PRIu64 ": QP %d received %u bytes (round %" PRIu64
		     ", %u -> %u) instead of the message from QP %d\n", round, to, len,
		     g->round, g->from, g->to, from);
	}
}

static void post_recv(struct scale *s, int q, int k)
{
	struct ibv_sge sge = { (uintptr_t)slot_addr(s, q, k), MSG,
			       s->mrs[slot_mr(s, q, k)]->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)q * RECVS + (uint64_t)k,
				  .sg_list = &sge, .num_sge = 1 }, *bad;

	memset(slot_addr(s, q, k), 0xee, MSG);
	errno = ibv_post_recv(s->qps[q], &wr, &bad);
	if (errno)
		fail("post_recv on QP %d: %s\n", q, strerror(errno));
}

static void setup_rdma(struct scale *s, const char *dev)
{
	const char *step;
	int q, k;

	s->ctx = open_named_device(dev);
	if (!s->ctx)
		fail("cannot open %s\n", dev);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 4 * RECVS + 16, NULL, NULL, 0) : NULL;
	if (!s->cq || ibv_query_gid(s->ctx, 1, 0, &s->gid))
		fail("pd/cq/gid on %s: %s\n", dev, strerror(errno));
	s->mrs = calloc((size_t)s->nmr, sizeof(*s->mrs));
	s->qps = calloc((size_t)s->nqp, sizeof(*s->qps));
	if (!s->mrs || !s->qps)
		fail("out of memory\n");
	for (int m = 0; m < s->nmr; m++) {
		s->mrs[m] = ibv_reg_mr(s->pd, s->buf + (size_t)m * PAGE, PAGE,
				       IBV_ACCESS_LOCAL_WRITE);
		if (!s->mrs[m])
			fail("MR %d of %d: %s\n", m, s->nmr, strerror(errno));
	}
	for (q = 0; q < s->nqp; q++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = RECVS, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		s->qps[q] = ibv_create_qp(s->pd, &qa);
		if (!s->qps[q])
			fail("QP %d of %d: %s\n", q, s->nqp, strerror(errno));
	}
	for (q = 0; q < s->nqp; q++) {
		step = rc_connect(s->qps[q], s->qps[peer(s, q)]->qp_num, &s->gid,
				  IBV_ACCESS_LOCAL_WRITE);
		if (step)
			fail("QP %d to %s: %s\n", q, step, strerror(errno));
		for (k = 0; k < RECVS; k++)
			post_recv(s, q, k);
	}
}

/* One message from QP @from to its peer, both completions polled, checked. */
static void round_rdma(struct scale *s, int from)
{
	int to = peer(s, from), got_send = 0, got_recv = 0, tries = 0, n;
	char *src = send_addr(s, s->rounds);
	struct ibv_sge sge = { (uintptr_t)src, MSG, s->mrs[send_mr(s, s->rounds)]->lkey };
	struct ibv_send_wr wr = { .wr_id = SEND_ID, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc[4];

	fill_msg((struct msg *)src, s->rounds, from, to);
	errno = ibv_post_send(s->qps[from], &wr, &bad);
	if (errno)
		fail("round %" PRIu64 ": post_send on QP %d: %s\n", s->rounds, from,
		     strerror(errno));
	while (!got_send || !got_recv) {
		n = ibv_poll_cq(s->cq, 4, wc);
		if (n < 0)
			fail("round %" PRIu64 ": poll_cq failed\n", s->rounds);
		if (!n) {
			if (++tries > POLL_TRIES)
				fail("round %" PRIu64 ": QP %d -> %d: no completion (send %d, "
				     "receive %d)\n", s->rounds, from, to, got_send, got_recv);
			usleep(1000);
			continue;
		}
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;

			if (wc[i].status != IBV_WC_SUCCESS)
				fail("round %" PRIu64 ": completion %" PRIu64 ": %s\n", s->rounds,
				     id, ibv_wc_status_str(wc[i].status));
			if (id == SEND_ID && wc[i].opcode == IBV_WC_SEND && !got_send) {
				got_send = 1;
				continue;
			}
			if (id != SEND_ID && wc[i].opcode == IBV_WC_RECV && !got_recv &&
			    (int)(id / RECVS) == to) {
				int k = (int)(id % RECVS);

				check_msg(slot_addr(s, to, k), wc[i].byte_len, s->rounds, from, to);
				post_recv(s, to, k);
				got_recv = 1;
				continue;
			}
			fail("round %" PRIu64 ": QP %d -> %d: unexpected completion wr_id %" PRIu64
			     " opcode %d\n", s->rounds, from, to, id, (int)wc[i].opcode);
		}
	}
	s->rounds++;
}

/* The same without verbs: the receive is a memcpy into the same slot. */
static void round_plain(struct scale *s, int from)
{
	int to = peer(s, from), k = (int)(s->rounds % RECVS);
	char *src = send_addr(s, s->rounds), *dst = slot_addr(s, to, k);

	fill_msg((struct msg *)src, s->rounds, from, to);
	memcpy(dst, src, MSG);
	check_msg(dst, MSG, s->rounds, from, to);
	memset(dst, 0xee, MSG);
	s->rounds++;
}

static void one_round(struct scale *s, int from)
{
	if (s->rdma)
		round_rdma(s, from);
	else
		round_plain(s, from);
}

/* After SIGINT: every QP sends once, nothing else is pending, all at RTS. */
static void final_check(struct scale *s)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_wc wc;
	int q, n;

	for (q = 0; q < s->nqp; q++)
		one_round(s, q);
	if (!s->rdma)
		return;
	n = ibv_poll_cq(s->cq, 1, &wc);
	if (n)
		fail("a completion nobody asked for (wr_id %" PRIu64 ", %s)\n", wc.wr_id,
		     n < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
	for (q = 0; q < s->nqp; q++) {
		if (ibv_query_qp(s->qps[q], &attr, IBV_QP_STATE, &init))
			fail("query_qp of QP %d: %s\n", q, strerror(errno));
		if (attr.qp_state != IBV_QPS_RTS)
			fail("QP %d is in state %d, not RTS\n", q, (int)attr.qp_state);
	}
}

static void teardown(struct scale *s)
{
	int q, m;

	if (s->rdma) {
		for (q = 0; q < s->nqp; q++)
			if (ibv_destroy_qp(s->qps[q]))
				fail("destroy_qp of QP %d: %s\n", q, strerror(errno));
		for (m = 0; m < s->nmr; m++)
			if (ibv_dereg_mr(s->mrs[m]))
				fail("dereg_mr of MR %d: %s\n", m, strerror(errno));
		if (ibv_destroy_cq(s->cq) || ibv_dealloc_pd(s->pd) || ibv_close_device(s->ctx))
			fail("destroying the CQ, PD or context: %s\n", strerror(errno));
		free(s->qps);
		free(s->mrs);
	}
	free(s->buf);
}

int main(int argc, char **argv)
{
	struct scale s = { .rdma = 1 };
	struct timespec tick = { 0, 100 * 1000 * 1000 };
	struct sigaction sa = { .sa_handler = on_int };
	char *end;
	long v;

	if (argc == 5 && !strcmp(argv[4], "--no-rdma"))
		s.rdma = 0;
	else if (argc != 4)
		goto usage;
	v = strtol(argv[2], &end, 10);
	if (*end || v < 1 || v > 1 << 20)
		goto usage;
	s.nqp = (int)v;
	v = strtol(argv[3], &end, 10);
	if (*end || v < 1 || v > 1 << 22)
		goto usage;
	s.nmr = (int)v;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL))
		fail("sigaction: %s\n", strerror(errno));
	s.buf = aligned_alloc(PAGE, (size_t)s.nmr * PAGE);
	if (!s.buf)
		fail("%d pages: out of memory\n", s.nmr);
	memset(s.buf, 0x5a, (size_t)s.nmr * PAGE);	/* every page resident */
	if (s.rdma)
		setup_rdma(&s, argv[1]);
	printf("ready\n");
	fflush(stdout);
	for (int q = 0; !stop; q = (q + 1) % s.nqp) {
		one_round(&s, q);
		nanosleep(&tick, NULL);		/* SIGINT cuts it short */
	}
	final_check(&s);
	teardown(&s);
	printf("rounds %" PRIu64 " verified, %d QPs %d MRs%s\n", s.rounds, s.nqp, s.nmr,
	       s.rdma ? "" : " (no RDMA)");
	return 0;
usage:
	fprintf(stderr, "usage: ckscale DEV QPS MRS [--no-rdma]\n");
	return 2;
}
