// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the control thread's event queue delivers in order, exactly once,
 * across wrap-around, and refuses (rather than drops or grows) when full.
 */
#include <kunit/test.h>

#include "evq.h"

static void evq_fifo_order(struct kunit *test)
{
	struct ibckpt_evq q;
	struct ibckpt_event e;

	ibckpt_evq_init(&q);
	KUNIT_EXPECT_FALSE(test, ibckpt_evq_pending(&q));
	KUNIT_ASSERT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_QUIESCE, 7), 0);
	KUNIT_ASSERT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_THAW, 7), 0);
	KUNIT_EXPECT_TRUE(test, ibckpt_evq_pending(&q));
	KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_EXPECT_EQ(test, e.type, (u32)IBCKPT_EV_QUIESCE);
	KUNIT_EXPECT_EQ(test, e.session, 7ULL);
	KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_EXPECT_EQ(test, e.type, (u32)IBCKPT_EV_THAW);
	KUNIT_EXPECT_FALSE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_EXPECT_FALSE(test, ibckpt_evq_pending(&q));
}

static void evq_full_is_refused(struct kunit *test)
{
	struct ibckpt_evq q;
	struct ibckpt_event e;
	int i;

	ibckpt_evq_init(&q);
	for (i = 0; i < IBCKPT_EVQ_LEN; i++)
		KUNIT_ASSERT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_QUIESCE, i), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_ABORT, 99), -ENOSPC);
	/* nothing was overwritten: the oldest is still first */
	KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_EXPECT_EQ(test, e.session, 0ULL);
	KUNIT_EXPECT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_ABORT, 99), 0);
}

static void evq_wraps_around(struct kunit *test)
{
	struct ibckpt_evq q;
	struct ibckpt_event e;
	u64 next = 0, i;

	ibckpt_evq_init(&q);
	/* three laps of the ring, keeping it about half full */
	for (i = 0; i < 3 * IBCKPT_EVQ_LEN; i++) {
		KUNIT_ASSERT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_THAW, i), 0);
		if (i >= IBCKPT_EVQ_LEN / 2) {
			KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
			KUNIT_EXPECT_EQ(test, e.session, next);
			next++;
		}
	}
	while (ibckpt_evq_pop(&q, &e)) {
		KUNIT_EXPECT_EQ(test, e.session, next);
		next++;
	}
	KUNIT_EXPECT_EQ(test, next, 3ULL * IBCKPT_EVQ_LEN);
}

/* The end of a session is never refused: it displaces the oldest event. */
static void evq_end_displaces_oldest(struct kunit *test)
{
	struct ibckpt_evq q;
	struct ibckpt_event e;
	u64 i;

	ibckpt_evq_init(&q);
	for (i = 0; i < IBCKPT_EVQ_LEN; i++)
		KUNIT_ASSERT_EQ(test, ibckpt_evq_post(&q, IBCKPT_EV_QUIESCE, i), 0);
	KUNIT_EXPECT_TRUE(test, ibckpt_evq_post_end(&q, IBCKPT_EV_THAW, 100));
	KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_EXPECT_EQ(test, e.session, 1ULL);		/* 0 was dropped */
	for (i = 2; i < IBCKPT_EVQ_LEN; i++)
		KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_ASSERT_TRUE(test, ibckpt_evq_pop(&q, &e));
	KUNIT_EXPECT_EQ(test, e.type, (u32)IBCKPT_EV_THAW);
	KUNIT_EXPECT_EQ(test, e.session, 100ULL);
	KUNIT_EXPECT_FALSE(test, ibckpt_evq_pop(&q, &e));
	/* with room, nothing is dropped */
	KUNIT_EXPECT_FALSE(test, ibckpt_evq_post_end(&q, IBCKPT_EV_ABORT, 101));
}

static struct kunit_case ibckpt_evq_cases[] = {
	KUNIT_CASE(evq_fifo_order),
	KUNIT_CASE(evq_end_displaces_oldest),
	KUNIT_CASE(evq_full_is_refused),
	KUNIT_CASE(evq_wraps_around),
	{}
};

static struct kunit_suite ibckpt_evq_suite = {
	.name = "ibckpt_evq",
	.test_cases = ibckpt_evq_cases,
};

kunit_test_suite(ibckpt_evq_suite);
