// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* WR log retirement rules (wrlog.h), under ASan + UBSan. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "../wrlog.h"
#define UNIT_SUITE "provider/wrlog"
#include "../../tests/unit/unit.h"

static int post(struct ibckpt_wrlog *log, uint64_t id, unsigned int flags)
{
	char buf[16] = "payload";
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 7 };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = flags };

	return ibckpt_wrlog_send(log, &wr);
}

/* A signaled completion retires the unsignaled requests posted before it. */
static void sq_signaled_retires_earlier_unsignaled(void)
{
	struct ibckpt_wrlog log;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 8, 1, 0, false), 0);
	CHECK_EQ(post(&log, 1, 0), 0);
	CHECK_EQ(post(&log, 2, 0), 0);
	CHECK_EQ(post(&log, 3, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 4, 0), 0);
	CHECK_EQ(ibckpt_wrlog_count(&log), 4);
	CHECK_EQ(ibckpt_wrlog_signaled(&log), 1);
	CHECK(ibckpt_wrlog_complete(&log, 3, true));
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	CHECK_EQ(ibckpt_wrlog_signaled(&log), 0);	/* 4 completes silently */
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 4);
	CHECK_EQ(log.retired, 3);
	ibckpt_wrlog_destroy(&log);
}

/*
 * Regression (perftest through ibckpt failed with "Couldn't post send"):
 * every request carries the same wr_id and one in 100 is signaled; each
 * completion must retire its whole run, or the log fills up.
 */
static void sq_same_wr_id_moderation(void)
{
	struct ibckpt_wrlog log;
	int round, i;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 128, 1, 0, false), 0);
	for (round = 0; round < 10; round++) {
		for (i = 1; i <= 100; i++)
			CHECK_EQ(post(&log, 0, i % 100 ? 0 : IBV_SEND_SIGNALED), 0);
		CHECK(ibckpt_wrlog_complete(&log, 0, true));
		CHECK_EQ(ibckpt_wrlog_count(&log), 0);
	}
	CHECK_EQ(log.retired, 1000);
	ibckpt_wrlog_destroy(&log);
}

/* A successful completion with nothing signaled outstanding matches nothing. */
static void unknown_completion_retires_nothing(void)
{
	struct ibckpt_wrlog log;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 4, 1, 0, false), 0);
	CHECK_EQ(post(&log, 1, 0), 0);
	CHECK(!ibckpt_wrlog_complete(&log, 1, true));
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	CHECK_EQ(log.unmatched, 1);
	/* A flush error retires through its wr_id, signaled or not; unknown: nothing. */
	CHECK(!ibckpt_wrlog_complete(&log, 7, false));
	CHECK(ibckpt_wrlog_complete(&log, 1, false));
	CHECK_EQ(ibckpt_wrlog_count(&log), 0);
	ibckpt_wrlog_destroy(&log);
}

/* Receive queues complete in order, whatever the wr_ids say. */
static void rq_in_order(void)
{
	struct ibckpt_wrlog log;
	struct ibv_sge sge = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ibv_recv_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1 };

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_RQ, 4, 1, 0, false), 0);
	CHECK_EQ(ibckpt_wrlog_recv(&log, &wr), 0);
	wr.wr_id = 6;
	CHECK_EQ(ibckpt_wrlog_recv(&log, &wr), 0);
	CHECK(ibckpt_wrlog_complete(&log, 5, true));
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 6);
	CHECK(ibckpt_wrlog_complete(&log, 6, false));
	CHECK_EQ(ibckpt_wrlog_count(&log), 0);
	CHECK(!ibckpt_wrlog_complete(&log, 6, true));
	ibckpt_wrlog_destroy(&log);
}

/* SRQ receives complete out of order; the head skips retired slots. */
static void srq_retires_out_of_order(void)
{
	struct ibckpt_wrlog log;
	struct ibv_sge sge = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	uint64_t id;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SRQ, 4, 1, 0, false), 0);
	for (id = 10; id < 14; id++) {
		wr.wr_id = id;
		CHECK_EQ(ibckpt_wrlog_recv(&log, &wr), 0);
	}
	CHECK(ibckpt_wrlog_complete(&log, 12, true));
	CHECK_EQ(ibckpt_wrlog_count(&log), 4);	/* 10 still at the head */
	CHECK(ibckpt_wrlog_complete(&log, 10, true));
	/* 10 gone; 12 is a retired hole between 11 and 13 */
	CHECK_EQ(ibckpt_wrlog_count(&log), 3);
	CHECK_EQ(ibckpt_wrlog_live(&log), 2);
	CHECK(ibckpt_wrlog_at(&log, 1, NULL, NULL)->retired);
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 11);
	CHECK(ibckpt_wrlog_complete(&log, 11, true));
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 13);
	ibckpt_wrlog_destroy(&log);
}

/* Inline payloads are copied at post time: reusing the buffer changes nothing. */
static void inline_payload_copied(void)
{
	struct ibckpt_wrlog log;
	char a[4] = "abc", b[3] = "de";
	struct ibv_sge sge[2] = { { .addr = (uintptr_t)a, .length = 3 },
				  { .addr = (uintptr_t)b, .length = 2 } };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = sge, .num_sge = 2,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE };
	const uint8_t *data;
	const struct ibckpt_wr *e;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 2, 2, 16, true), 0);
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
	memcpy(a, "XYZ", 3);
	e = ibckpt_wrlog_at(&log, 0, NULL, &data);
	CHECK(e != NULL);
	CHECK_EQ(e->inline_len, 5);
	CHECK(memcmp(data, "abcde", 5) == 0);
	CHECK(e->send_flags & IBV_SEND_SIGNALED);	/* sq_sig_all */
	/* Larger than the queue's max_inline: refused, nothing logged. */
	sge[0].length = 20;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), EINVAL);
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	/* so are lengths whose 32-bit sum wraps to a small one */
	sge[0].length = 0xfffffff8u;
	sge[1].length = 0x10;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), EINVAL);
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	ibckpt_wrlog_destroy(&log);
}

/* The ring is bounded; unpost forgets what the vendor refused. */
static void bounded_and_unpost(void)
{
	struct ibckpt_wrlog log;
	uint32_t i;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 3, 1, 0, false), 0);
	for (i = 0; i < log.size; i++)
		CHECK_EQ(post(&log, i, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 100, IBV_SEND_SIGNALED), ENOMEM);
	ibckpt_wrlog_unpost(&log, 2);
	CHECK_EQ(ibckpt_wrlog_count(&log), log.size - 2);
	CHECK_EQ(post(&log, 100, IBV_SEND_SIGNALED), 0);
	/* Retire across the wrap-around. */
	for (i = 0; i < log.size - 2; i++)
		CHECK(ibckpt_wrlog_complete(&log, i, true));
	CHECK_EQ(post(&log, 101, 0), 0);
	CHECK_EQ(post(&log, 102, IBV_SEND_SIGNALED), 0);
	CHECK(ibckpt_wrlog_complete(&log, 100, true));
	CHECK_EQ(ibckpt_wrlog_count(&log), 2);
	CHECK(ibckpt_wrlog_complete(&log, 102, true));
	CHECK_EQ(ibckpt_wrlog_count(&log), 0);
	ibckpt_wrlog_destroy(&log);
}

/* Atomics keep their operands; too many SGEs are refused. */
static void atomics_and_sge_limit(void)
{
	struct ibckpt_wrlog log;
	uint64_t res;
	struct ibv_sge sge[3] = { { .addr = (uintptr_t)&res, .length = 8 } };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	const struct ibckpt_wr *e;

	wr.wr.atomic.remote_addr = 0xabc0;
	wr.wr.atomic.rkey = 42;
	wr.wr.atomic.compare_add = 3;
	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 2, 2, 0, false), 0);
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
	e = ibckpt_wrlog_at(&log, 0, NULL, NULL);
	CHECK_EQ(e->wr.atomic.remote_addr, 0xabc0);
	CHECK_EQ(e->wr.atomic.rkey, 42);
	CHECK_EQ(e->wr.atomic.compare_add, 3);
	CHECK_EQ(e->opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	wr.num_sge = 3;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), EINVAL);
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	ibckpt_wrlog_destroy(&log);
}

/*
 * A window bind keeps the window, its new rkey and the bound range, not the
 * RDMA fields its union would alias; a signaled bind retires like a send.
 */
static void bind_mw_logged_and_retired(void)
{
	struct ibckpt_wrlog log;
	int mw_tag, mr_tag;
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };
	const struct ibckpt_wr *e;

	wr.wr.rdma.remote_addr = 0xdead;	/* stale union contents */
	wr.bind_mw.mw = (struct ibv_mw *)&mw_tag;
	wr.bind_mw.rkey = 0x1201;
	wr.bind_mw.bind_info.mr = (struct ibv_mr *)&mr_tag;
	wr.bind_mw.bind_info.addr = 0x4000;
	wr.bind_mw.bind_info.length = 128;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 4, 1, 0, false), 0);
	CHECK_EQ(post(&log, 8, 0), 0);
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
	e = ibckpt_wrlog_newest(&log, 1);
	CHECK(e == ibckpt_wrlog_at(&log, 1, NULL, NULL));
	CHECK(ibckpt_wrlog_newest(&log, 2) == ibckpt_wrlog_at(&log, 0, NULL, NULL));
	CHECK(e->bind_mw.mw == (void *)&mw_tag);
	CHECK_EQ(e->bind_mw.rkey, 0x1201);
	CHECK_EQ(e->bind_mw.bind_info.addr, 0x4000);
	CHECK_EQ(e->bind_mw.bind_info.length, 128);
	CHECK(e->bind_mw.bind_info.mr == (void *)&mr_tag);
	CHECK_EQ(e->bind_mw.bind_info.mw_access_flags, IBV_ACCESS_REMOTE_WRITE);
	CHECK_EQ(e->num_sge, 0);
	CHECK_EQ(ibckpt_wrlog_signaled(&log), 1);
	CHECK(ibckpt_wrlog_complete(&log, 9, true));
	CHECK_EQ(ibckpt_wrlog_live(&log), 0);
	ibckpt_wrlog_destroy(&log);
}

/* A vendor whose queue takes 'room' more receives, then refuses with ENOMEM. */
static int room, vendor_calls;
static uint64_t vendor_got[8];

static int fake_post_recv(void *real, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int n = 0;

	(void)real;
	vendor_calls++;
	for (; wr; wr = wr->next, n++) {
		if (!room) {
			*bad = wr;
			return ENOMEM;
		}
		room--;
		vendor_got[n] = wr->wr_id;
	}
	return 0;
}

/*
 * Posting a list through the log: what the vendor refuses is forgotten, what
 * the log cannot take ends the list (reported in *bad), and the
 * application's list is given back unchanged either way.
 */
static void post_recv_through_the_log(void)
{
	struct ibckpt_wrlog log;
	struct ibv_sge sge = { .length = 8 };
	struct ibv_recv_wr w[4], *bad = NULL;
	int i;

	for (i = 0; i < 4; i++)
		w[i] = (struct ibv_recv_wr){ .wr_id = 10 + i, .sg_list = &sge, .num_sge = 1,
					     .next = i < 3 ? &w[i + 1] : NULL };
	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_RQ, 2, 1, 0, false), 0);
	CHECK_EQ(log.size, 4);
	/* the vendor takes two of four: two logged */
	room = 2;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, w, &bad), ENOMEM);
	CHECK(bad == &w[2]);
	CHECK_EQ(ibckpt_wrlog_count(&log), 2);
	CHECK_EQ(vendor_got[1], 11);
	/* the log holds two more: the list is cut before the fifth slot... */
	room = 8;
	w[3].next = NULL;
	bad = NULL;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, &w[1], &bad), ENOMEM);
	CHECK(bad == &w[3]);			/* the first the log refused */
	CHECK_EQ(ibckpt_wrlog_count(&log), 4);
	CHECK(w[2].next == &w[3]);		/* ...and mended afterwards */
	CHECK_EQ(vendor_got[0], 11);
	CHECK_EQ(vendor_got[1], 12);
	/* a full log posts nothing at all */
	i = vendor_calls;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, &w[3], &bad), ENOMEM);
	CHECK_EQ(vendor_calls, i);
	/* in order: each completion retires the oldest */
	CHECK(ibckpt_wrlog_complete(&log, 10, true));
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 11);
	ibckpt_wrlog_destroy(&log);
}

/* A single request (the inline path): refused by the vendor, it is forgotten. */
static void post_recv_one(void)
{
	struct ibckpt_wrlog log;
	struct ibv_sge sge[2] = { { .addr = 0x10, .length = 8, .lkey = 4 } };
	struct ibv_recv_wr w = { .wr_id = 1, .sg_list = sge, .num_sge = 1 }, *bad = NULL;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_RQ, 2, 2, 0, false), 0);
	room = 0;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, &w, &bad), ENOMEM);
	CHECK(bad == &w);
	CHECK_EQ(ibckpt_wrlog_count(&log), 0);
	room = 1;
	bad = NULL;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, &w, &bad), 0);
	CHECK(bad == NULL);
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	/* two SGEs take the full path, the same rules */
	w.wr_id = 2;
	w.num_sge = 2;
	room = 1;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, &w, &bad), 0);
	CHECK_EQ(ibckpt_wrlog_at(&log, 1, NULL, NULL)->num_sge, 2);
	/* too many SGEs: refused before the vendor sees it */
	w.num_sge = 3;
	CHECK_EQ(ibckpt_wrlog_post_recv(&log, NULL, fake_post_recv, &w, &bad), EINVAL);
	CHECK(bad == &w);
	CHECK_EQ(ibckpt_wrlog_count(&log), 2);
	ibckpt_wrlog_destroy(&log);
}

/* Receive slots are reused without a memset: nothing stale may show. */
static void recv_slots_reused_clean(void)
{
	struct ibckpt_wrlog log;
	struct ibv_sge sge = { .addr = 1, .length = 2, .lkey = 3 };
	struct ibv_recv_wr r = { .sg_list = &sge, .num_sge = 1 };
	const struct ibckpt_wr *e;
	int i;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SRQ, 2, 1, 0, false), 0);
	for (i = 0; i < 12; i++) {	/* three times round the ring */
		r.wr_id = 100 + i;
		CHECK_EQ(ibckpt_wrlog_recv(&log, &r), 0);
		e = ibckpt_wrlog_at(&log, ibckpt_wrlog_count(&log) - 1, NULL, NULL);
		CHECK_EQ(e->wr_id, 100 + i);
		CHECK_EQ(e->retired, 0);
		CHECK_EQ(e->opcode, 0);
		CHECK_EQ(e->send_flags, 0);
		CHECK_EQ(e->wr.rdma.remote_addr, 0);
		CHECK_EQ(e->inline_len, 0);
		CHECK(ibckpt_wrlog_complete(&log, 100 + i, true));
	}
	CHECK_EQ(ibckpt_wrlog_live(&log), 0);
	ibckpt_wrlog_destroy(&log);
}

/*
 * The poll path only counts completions; the ring is exact again once
 * settled, whoever settles: a count, a full ring at post time, a failure.
 */
static void counted_completions_settle_later(void)
{
	struct ibckpt_wrlog log;
	uint32_t i;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 2, 1, 0, false), 0);
	CHECK_EQ(log.size, 4);
	CHECK_EQ(post(&log, 1, 0), 0);
	CHECK_EQ(post(&log, 2, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 3, 0), 0);
	ibckpt_wrlog_done(&log);		/* 2's completion */
	CHECK_EQ(ibckpt_wrlog_count(&log), 3);	/* counted, not applied yet */
	CHECK_EQ(ibckpt_wrlog_live(&log), 1);	/* applied: 3 is left */
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 3);
	/* A full ring settles before it refuses. */
	for (i = 0; i < 3; i++)
		CHECK_EQ(post(&log, 10 + i, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(ibckpt_wrlog_count(&log), 4);
	ibckpt_wrlog_done(&log);		/* retires 3 and 10 */
	CHECK_EQ(post(&log, 20, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(ibckpt_wrlog_count(&log), 3);
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 11);
	CHECK_EQ(post(&log, 21, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 22, IBV_SEND_SIGNALED), ENOMEM);	/* really full */
	/* A flush after counted successes: the successes apply first. */
	ibckpt_wrlog_done(&log);		/* 11 */
	CHECK(ibckpt_wrlog_complete(&log, 20, false));	/* flushes 12 and 20 */
	CHECK_EQ(ibckpt_wrlog_live(&log), 1);
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 21);
	CHECK_EQ(log.retired, 7);
	CHECK_EQ(log.unmatched, 0);
	ibckpt_wrlog_destroy(&log);
}

/*
 * Which request a completion will retire through, before it is counted:
 * a success the oldest live signaled one (counted ones applied first), a
 * flush the oldest live one with its wr_id (qp_internal.c tells a
 * provider-internal request's completion by them).
 */
static void next_signaled_and_find(void)
{
	struct ibckpt_wrlog log;
	uint32_t pos = 99;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 8, 1, 0, false), 0);
	CHECK(!ibckpt_wrlog_next_signaled(&log, &pos));
	CHECK(!ibckpt_wrlog_find(&log, 1, &pos));
	CHECK_EQ(post(&log, 1, 0), 0);				/* position 0 */
	CHECK_EQ(post(&log, 2, IBV_SEND_SIGNALED), 0);		/* 1 */
	CHECK_EQ(post(&log, 1, 0), 0);				/* 2 */
	CHECK_EQ(post(&log, 1, IBV_SEND_SIGNALED), 0);		/* 3 */
	CHECK(ibckpt_wrlog_next_signaled(&log, &pos));
	CHECK_EQ(pos, 1);
	CHECK(ibckpt_wrlog_find(&log, 1, &pos));
	CHECK_EQ(pos, 0);
	ibckpt_wrlog_done(&log);		/* 2's completion, counted only */
	CHECK(ibckpt_wrlog_next_signaled(&log, &pos));
	CHECK_EQ(pos, 3);			/* applied first */
	CHECK(ibckpt_wrlog_find(&log, 1, &pos));
	CHECK_EQ(pos, 2);
	CHECK(!ibckpt_wrlog_find(&log, 2, &pos));	/* retired */
	ibckpt_wrlog_done(&log);
	CHECK(!ibckpt_wrlog_next_signaled(&log, &pos));
	CHECK(!ibckpt_wrlog_find(&log, 1, &pos));
	CHECK_EQ(log.unmatched, 0);
	ibckpt_wrlog_destroy(&log);
}

/* More receive completions counted than receives posted: the extra are reported. */
static void rq_overcount_is_unmatched(void)
{
	struct ibckpt_wrlog log;
	struct ibv_sge sge = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_RQ, 4, 1, 0, false), 0);
	CHECK_EQ(ibckpt_wrlog_recv(&log, &wr), 0);
	ibckpt_wrlog_done(&log);
	ibckpt_wrlog_done(&log);
	CHECK_EQ(ibckpt_wrlog_live(&log), 0);
	CHECK_EQ(log.unmatched, 1);
	CHECK_EQ(log.retired, 1);
	/* The next receive is live: the surplus does not carry over. */
	CHECK_EQ(ibckpt_wrlog_recv(&log, &wr), 0);
	CHECK_EQ(ibckpt_wrlog_live(&log), 1);
	ibckpt_wrlog_destroy(&log);
}

/*
 * One poster, one poller, as in a process: the poster posts under its lock
 * and never has more than a queue's depth outstanding (the vendor would
 * refuse); the poller counts each completion without the lock. Nothing may
 * be lost or retired twice.
 */
#define DEPTH 8
#define TOTAL 200000u
static atomic_uint vendor_posted;

static void *poller(void *arg)
{
	struct ibckpt_wrlog *log = arg;
	unsigned int completed = 0;

	while (completed < TOTAL) {
		if (atomic_load(&vendor_posted) == completed)
			continue;
		ibckpt_wrlog_done(log);
		completed++;
	}
	return NULL;
}

static void poster_and_poller_race(void)
{
	struct ibckpt_wrlog log;
	pthread_t t;
	unsigned int i;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, DEPTH, 1, 0, false), 0);
	atomic_store(&vendor_posted, 0);
	CHECK_EQ(pthread_create(&t, NULL, poller, &log), 0);
	for (i = 0; i < TOTAL; i++) {
		/* the vendor's queue: at most DEPTH outstanding */
		while (i - atomic_load(&log.done) >= DEPTH)
			;
		if (post(&log, i, IBV_SEND_SIGNALED)) {
			CHECK(0);
			break;
		}
		atomic_fetch_add(&vendor_posted, 1);
	}
	pthread_join(t, NULL);
	CHECK_EQ(ibckpt_wrlog_live(&log), 0);
	CHECK_EQ(log.retired, TOTAL);
	CHECK_EQ(log.unmatched, 0);
	ibckpt_wrlog_destroy(&log);
}

/* A reset queue forgets everything, counted completions included. */
static void reset_forgets_all(void)
{
	struct ibckpt_wrlog log;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 4, 1, 0, false), 0);
	CHECK_EQ(post(&log, 1, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 2, 0), 0);
	CHECK_EQ(post(&log, 3, IBV_SEND_SIGNALED), 0);
	ibckpt_wrlog_done(&log);		/* 1 completed before the reset */
	ibckpt_wrlog_reset(&log);
	CHECK_EQ(ibckpt_wrlog_live(&log), 0);
	CHECK_EQ(ibckpt_wrlog_signaled(&log), 0);
	/* The next completion is the next request's, not one from before. */
	CHECK_EQ(post(&log, 4, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 5, IBV_SEND_SIGNALED), 0);
	ibckpt_wrlog_done(&log);
	CHECK_EQ(ibckpt_wrlog_live(&log), 1);
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 5);
	CHECK_EQ(log.unmatched, 0);
	ibckpt_wrlog_destroy(&log);
}

/*
 * The numbering of signaled sends follows unposts and flushes:
 * refused requests give their numbers back, a flush retires its own.
 */
static void signaled_numbers_follow_unpost_and_flush(void)
{
	struct ibckpt_wrlog log;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 4, 1, 0, false), 0);
	CHECK_EQ(post(&log, 1, 0), 0);
	CHECK_EQ(post(&log, 2, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 3, IBV_SEND_SIGNALED), 0);
	ibckpt_wrlog_unpost(&log, 1);		/* the vendor refused 3 */
	CHECK_EQ(ibckpt_wrlog_signaled(&log), 1);
	CHECK_EQ(post(&log, 4, 0), 0);
	CHECK_EQ(post(&log, 5, IBV_SEND_SIGNALED), 0);
	CHECK_EQ(post(&log, 6, IBV_SEND_SIGNALED), 0);
	CHECK(ibckpt_wrlog_complete(&log, 4, false));	/* flush through 4: 2 goes too */
	CHECK_EQ(ibckpt_wrlog_signaled(&log), 2);
	ibckpt_wrlog_done(&log);		/* 5 */
	CHECK_EQ(ibckpt_wrlog_live(&log), 1);
	CHECK_EQ(ibckpt_wrlog_at(&log, 0, NULL, NULL)->wr_id, 6);
	ibckpt_wrlog_done(&log);		/* 6 */
	ibckpt_wrlog_done(&log);		/* nothing left: reported */
	CHECK_EQ(ibckpt_wrlog_live(&log), 0);
	CHECK_EQ(log.unmatched, 1);
	ibckpt_wrlog_destroy(&log);
}

/* A TSO request keeps its header (the buffer may be reused), its size and MSS. */
static void tso_header_is_copied(void)
{
	struct ibckpt_wrlog log;
	uint8_t hdr[40], big[80];
	struct ibv_sge sge = { 0x1000, 9000, 1 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_TSO, .send_flags = IBV_SEND_SIGNALED };
	const struct ibckpt_wr *e;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 4, 1, 0, false), 0);
	log.max_hdr = 64;		/* a QP created with max_tso_header 64 */
	memset(hdr, 0x5a, sizeof(hdr));
	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = sizeof(hdr);
	wr.tso.mss = 1448;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);	/* the header with it */
	memset(hdr, 0, sizeof(hdr));			/* reused after the post */
	e = ibckpt_wrlog_at(&log, 0, NULL, NULL);
	CHECK(e != NULL);
	CHECK_EQ(e->tso.hdr_sz, 40);
	CHECK_EQ(e->tso.mss, 1448);
	CHECK_EQ(ibckpt_wrlog_tso_hdr(&log, e)[39], 0x5a);
	wr.tso.hdr = big;				/* more than max_tso_header */
	wr.tso.hdr_sz = sizeof(big);
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), EINVAL);
	CHECK_EQ(ibckpt_wrlog_count(&log), 1);
	ibckpt_wrlog_destroy(&log);
	/* a queue without max_tso_header takes a TSO request without a header */
	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 4, 1, 0, false), 0);
	wr.tso.hdr = NULL;
	wr.tso.hdr_sz = 0;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
	ibckpt_wrlog_destroy(&log);
}

/*
 * The PSNs a connected QP's requests take (IBTA: one per MTU or part, at
 * least one; a READ as many as its response; a window bind none), and what
 * an unposted request gave back (the release compares the QP's next PSN
 * with their sum).
 */
static void psns_of_requests(void)
{
	static char buf[5000];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 0, .lkey = 7 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_sge two[2] = { { (uintptr_t)buf, 1000, 7 }, { (uintptr_t)buf, 1000, 7 } };
	struct ibckpt_wrlog log;

	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 16, 2, 64, false), 0);
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);	/* no MTU yet */
	CHECK(log.psn_lost);
	log.psn_lost = false;
	log.psn_sum = 0xfffffe;		/* PSNs wrap at 2^24 */
	log.mtu_shift = 10;		/* IBV_MTU_1024 */
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);	/* zero bytes: one packet */
	CHECK_EQ(log.psn_sum, 0xffffff);
	sge.length = 1024;
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);	/* exactly one MTU */
	CHECK_EQ(log.psn_sum, 0);
	sge.length = 1025;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);	/* its response: 2 */
	CHECK_EQ(log.psn_sum, 2);
	wr.sg_list = two;
	wr.num_sge = 2;
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);	/* 2000 bytes in two SGEs */
	CHECK_EQ(log.psn_sum, 4);
	wr.send_flags = IBV_SEND_INLINE;
	two[0].length = two[1].length = 20;
	wr.opcode = IBV_WR_SEND;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);	/* inline */
	CHECK_EQ(log.psn_sum, 5);
	wr.send_flags = 0;
	wr.num_sge = 1;
	wr.sg_list = &sge;
	sge.length = 8;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);
	CHECK_EQ(log.psn_sum, 6);
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.num_sge = 0;
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);	/* local: none */
	CHECK_EQ(log.psn_sum, 6);
	wr.opcode = IBV_WR_SEND;
	wr.num_sge = 1;
	sge.length = 4096;
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);
	CHECK_EQ(log.psn_sum, 10);
	ibckpt_wrlog_unpost(&log, 2);	/* the vendor refused the last two */
	CHECK_EQ(log.psn_sum, 6);
	ibckpt_wrlog_destroy(&log);
}

/*
 * What a queue's log costs follows what is posted on it, not its depth
 * times its largest request (an mlx5-sized send queue of 16k requests,
 * 30 SGEs and 256 inline bytes would take about 27 MB at creation).
 */
static void memory_follows_posts(void)
{
	static char buf[256];
	struct ibv_sge sge[30];
	struct ibv_send_wr wr = { .sg_list = sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibckpt_wrlog log;
	size_t small, per_big = sizeof(struct ibckpt_wr) + 30 * sizeof(struct ibv_sge);
	uint32_t i;

	for (i = 0; i < 30; i++)
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 8, .lkey = i };
	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 16384, 30, 256, false), 0);
	small = ibckpt_wrlog_bytes(&log);
	CHECK(small <= 64 * 1024);
	for (i = 0; i < 64; i++)
		CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), 0);
	CHECK_EQ(ibckpt_wrlog_bytes(&log), small);	/* one-SGE requests: no more */
	for (i = 0; i < 64; i++)
		ibckpt_wrlog_done(&log);
	ibckpt_wrlog_settle(&log);
	/* 1,000 requests of 30 SGEs outstanding: at most twice what they hold */
	wr.num_sge = 30;
	for (i = 0; i < 1000; i++) {
		wr.wr_id = i;
		CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
	}
	CHECK(ibckpt_wrlog_bytes(&log) <= 2 * 1000 * per_big + small);
	for (i = 0; i < 1000; i++) {	/* every one as posted, after the moves */
		const struct ibv_sge *s;
		const struct ibckpt_wr *e = ibckpt_wrlog_at(&log, i, &s, NULL);

		CHECK_EQ(e->wr_id, i);
		CHECK_EQ(s[0].lkey, 0);
		CHECK_EQ(s[29].lkey, 29);
	}
	/* completed, the same room serves the next ones */
	for (i = 0; i < 1000; i++)
		ibckpt_wrlog_done(&log);
	size_t high = ibckpt_wrlog_bytes(&log);

	for (i = 0; i < 3000; i++) {
		CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
		ibckpt_wrlog_done(&log);
	}
	CHECK_EQ(ibckpt_wrlog_bytes(&log), high);
	ibckpt_wrlog_destroy(&log);
	/* the bound is the same as before: twice the depth */
	CHECK_EQ(ibckpt_wrlog_init(&log, IBCKPT_WRLOG_SQ, 100, 30, 256, false), 0);
	for (i = 0; i < 256; i++)
		CHECK_EQ(ibckpt_wrlog_send(&log, &wr), 0);
	CHECK_EQ(ibckpt_wrlog_send(&log, &wr), ENOMEM);
	CHECK_EQ(ibckpt_wrlog_send_fast(&log, &wr), ENOMEM);
	ibckpt_wrlog_destroy(&log);
}

/* The model of one logged request: what ibckpt_wrlog_at() must give back. */
struct model_wr {
	uint64_t wr_id;
	int num_sge;
	uint32_t inline_len;
	bool inl;			/* posted inline: its SGEs name its buffers */
	bool live;
};

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

/* Checks every live request of the log against the model (oldest first). */
static void model_check(struct ibckpt_wrlog *log, const struct model_wr *m, uint32_t n,
			bool inline_ok)
{
	const struct ibckpt_wr *e;
	const struct ibv_sge *s;
	const uint8_t *inl;
	uint32_t i, j, k = 0;

	for (i = 0; (e = ibckpt_wrlog_at(log, i, &s, &inl)) != NULL; i++) {
		if (e->retired)
			continue;
		while (k < n && !m[k].live)
			k++;
		CHECK(k < n);
		if (k >= n)
			return;
		CHECK_EQ(e->wr_id, m[k].wr_id);
		CHECK_EQ(e->num_sge, m[k].num_sge);
		for (j = 0; j < (uint32_t)m[k].num_sge; j++) {
			CHECK_EQ(s[j].lkey, (uint32_t)(m[k].wr_id * 7 + j));
			if (!m[k].inl)	/* an inline one's: the buffer it had */
				CHECK_EQ(s[j].addr, m[k].wr_id + j);
		}
		if (inline_ok) {
			CHECK_EQ(e->inline_len, m[k].inline_len);
			for (j = 0; j < m[k].inline_len; j++)
				CHECK_EQ(inl[j], (uint8_t)(m[k].wr_id + j));
		}
		k++;
	}
	while (k < n && !m[k].live)
		k++;
	CHECK_EQ(k, n);
}

/*
 * Random requests of every size through each kind of log, against a model:
 * records that wrap the ring's end, growth with requests live, unposts,
 * retirement in order and (SRQ) out of order. Seeded: a failure repeats.
 */
static void random_records_against_a_model(void)
{
	enum ibckpt_wrlog_kind kinds[] = { IBCKPT_WRLOG_SQ, IBCKPT_WRLOG_RQ, IBCKPT_WRLOG_SRQ };
	static struct model_wr m[1 << 16];
	struct ibv_sge sge[4];
	uint64_t seed = 20261125;
	unsigned int kk;

	for (kk = 0; kk < 3; kk++) {
		enum ibckpt_wrlog_kind kind = kinds[kk];
		struct ibckpt_wrlog log;
		uint32_t head = 0, n = 0, step, j;
		uint64_t next_id = 1;

		CHECK_EQ(ibckpt_wrlog_init(&log, kind, 100, 4, kind == IBCKPT_WRLOG_SQ ? 64 : 0,
					   true), 0);
		/* free-running positions that wrap 2^32 on the way */
		log.head = log.tail = 0u - 3000u;
		log.xtail = 0u - 40000u;
		for (step = 0; step < 20000 && n < (1u << 16) - 1; step++) {
			/* a quarter of the time no completions: the log fills, grows, is full */
			bool hold = step % 4000 >= 3000;
			uint32_t r = rnd(&seed) % 16, live = 0;

			if (hold && r >= 9 && r < 15)
				r = 0;
			if (step % 7 == 0) {
				if (kind != IBCKPT_WRLOG_SRQ)
					ibckpt_wrlog_settle(&log);
				model_check(&log, m, n, kind == IBCKPT_WRLOG_SQ);
			}
			for (j = head; j < n; j++)
				live += m[j].live;
			if (r < 8) {		/* post one */
				int ns = (int)(rnd(&seed) % 5);
				bool inl = kind == IBCKPT_WRLOG_SQ && rnd(&seed) % 3 == 0;
				uint32_t len = 0;
				int ret;

				for (j = 0; j < (uint32_t)ns; j++) {
					uint32_t l = inl ? rnd(&seed) % 17 : 8;

					sge[j] = (struct ibv_sge){ .addr = next_id + j, .length = l,
								   .lkey = (uint32_t)(next_id * 7 + j) };
					len += l;
				}
				if (inl) {	/* the payload is what the model expects */
					uint8_t *p = malloc(len ? len : 1);
					uint32_t off = 0;

					for (j = 0; j < len; j++)
						p[j] = (uint8_t)(next_id + j);
					for (j = 0; j < (uint32_t)ns; off += sge[j].length, j++)
						sge[j].addr = (uintptr_t)p + off;
					struct ibv_send_wr w = { .wr_id = next_id, .sg_list = sge,
								 .num_sge = ns, .opcode = IBV_WR_SEND,
								 .send_flags = IBV_SEND_INLINE };

					ret = ibckpt_wrlog_send(&log, &w);
					free(p);
				} else if (kind == IBCKPT_WRLOG_SQ) {
					struct ibv_send_wr w = { .wr_id = next_id, .sg_list = sge,
								 .num_sge = ns, .opcode = IBV_WR_SEND };

					ret = ns == 1 ? ibckpt_wrlog_send_fast(&log, &w)
						      : ibckpt_wrlog_send(&log, &w);
				} else {
					struct ibv_recv_wr w = { .wr_id = next_id, .sg_list = sge,
								 .num_sge = ns };

					ret = ns == 1 ? ibckpt_wrlog_recv_fast(&log, &w)
						      : ibckpt_wrlog_recv(&log, &w);
				}
				if (ret) {
					CHECK_EQ(ret, ENOMEM);	/* only when full */
					ibckpt_wrlog_live(&log);
					CHECK_EQ(ibckpt_wrlog_count(&log), 256);
					continue;
				}
				m[n++] = (struct model_wr){ .wr_id = next_id, .num_sge = ns,
							    .inline_len = inl ? len : 0, .inl = inl,
							    .live = true };
				next_id++;
			} else if (r < 9 && n > head) {	/* the vendor refused the newest */
				if (!m[n - 1].live)
					continue;
				ibckpt_wrlog_unpost(&log, 1);
				n--;
			} else if (r < 15 && live) {	/* completions */
				uint32_t c = 1 + rnd(&seed) % live;

				while (c--) {
					if (kind == IBCKPT_WRLOG_SRQ) {	/* any live one */
						uint32_t pick = rnd(&seed) % live--, q;

						for (q = head; !m[q].live || pick--; q++)
							;
						CHECK(ibckpt_wrlog_complete(&log, m[q].wr_id, true));
						m[q].live = false;
					} else {
						while (!m[head].live)
							head++;
						m[head].live = false;
						ibckpt_wrlog_done(&log);
					}
				}
				while (head < n && !m[head].live)
					head++;
			} else {
				if (kind != IBCKPT_WRLOG_SRQ)
					ibckpt_wrlog_settle(&log);
				model_check(&log, m, n, kind == IBCKPT_WRLOG_SQ);
			}
		}
		if (kind != IBCKPT_WRLOG_SRQ)
			ibckpt_wrlog_settle(&log);
		model_check(&log, m, n, kind == IBCKPT_WRLOG_SQ);
		ibckpt_wrlog_destroy(&log);
	}
}

int main(void)
{
	RUN(sq_signaled_retires_earlier_unsignaled);
	RUN(sq_same_wr_id_moderation);
	RUN(unknown_completion_retires_nothing);
	RUN(rq_in_order);
	RUN(srq_retires_out_of_order);
	RUN(inline_payload_copied);
	RUN(bounded_and_unpost);
	RUN(atomics_and_sge_limit);
	RUN(bind_mw_logged_and_retired);
	RUN(post_recv_through_the_log);
	RUN(post_recv_one);
	RUN(recv_slots_reused_clean);
	RUN(counted_completions_settle_later);
	RUN(next_signaled_and_find);
	RUN(rq_overcount_is_unmatched);
	RUN(poster_and_poller_race);
	RUN(reset_forgets_all);
	RUN(signaled_numbers_follow_unpost_and_flush);
	RUN(tso_header_is_copied);
	RUN(psns_of_requests);
	RUN(memory_follows_posts);
	RUN(random_records_against_a_model);
	return unit_done();
}
