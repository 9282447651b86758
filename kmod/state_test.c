// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: a freeze is declared complete only when it is, times out cleanly
 * otherwise, and refuses malformed requests with a reason.
 */
#include <kunit/test.h>

#include "state.h"

static void tally_follows_threads(struct kunit *test)
{
	struct ibckpt_tally t = {};

	ibckpt_tally_add(&t, IBCKPT_THREAD_PENDING);
	ibckpt_tally_add(&t, IBCKPT_THREAD_PENDING);
	ibckpt_tally_add(&t, IBCKPT_THREAD_EXITED);	/* task_work_add said -ESRCH */
	KUNIT_EXPECT_EQ(test, t.threads, 3U);
	KUNIT_EXPECT_EQ(test, t.pending, 2U);
	ibckpt_tally_move(&t, IBCKPT_THREAD_PENDING, IBCKPT_THREAD_PARKED);
	ibckpt_tally_move(&t, IBCKPT_THREAD_PENDING, IBCKPT_THREAD_EXITED);
	KUNIT_EXPECT_EQ(test, t.pending, 0U);
	KUNIT_EXPECT_EQ(test, t.parked, 1U);
	KUNIT_EXPECT_EQ(test, t.exited, 2U);
	/* thaw: parked -> running is no longer counted as parked */
	ibckpt_tally_move(&t, IBCKPT_THREAD_PARKED, IBCKPT_THREAD_RUNNING);
	KUNIT_EXPECT_EQ(test, t.parked, 0U);
	KUNIT_EXPECT_EQ(test, t.threads, 3U);
	/* a no-op move changes nothing */
	ibckpt_tally_move(&t, IBCKPT_THREAD_EXITED, IBCKPT_THREAD_EXITED);
	KUNIT_EXPECT_EQ(test, t.exited, 2U);
}

static void frozen_only_when_converged(struct kunit *test)
{
	struct ibckpt_tally t = { .threads = 4, .pending = 1, .parked = 3 };
	enum ibckpt_state f = IBCKPT_STATE_FREEZING;

	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, &t, 0, false), f);
	t.pending = 0;
	t.parked = 4;
	/* a thread born during the scan keeps the session freezing */
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, &t, 1, false), f);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, &t, 0, false), IBCKPT_STATE_FROZEN);
	/* everyone exited: nothing is left running, so that is frozen too */
	t = (struct ibckpt_tally){ .threads = 2, .exited = 2 };
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, &t, 0, false), IBCKPT_STATE_FROZEN);
}

static void timeout_aborts_unless_done(struct kunit *test)
{
	struct ibckpt_tally t = { .threads = 2, .pending = 1, .parked = 1 };
	enum ibckpt_state f = IBCKPT_STATE_FREEZING;

	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, &t, 0, true), IBCKPT_STATE_ABORTED);
	t.pending = 0;
	t.parked = 2;
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, &t, 0, true), IBCKPT_STATE_FROZEN);
	/* other states never move by converging */
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_THAWING, &t, 0, true),
			IBCKPT_STATE_THAWING);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_FROZEN, &t, 3, true),
			IBCKPT_STATE_FROZEN);
}

static void freeze_args_are_checked(struct kunit *test)
{
	const char *why = NULL;

	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 1000, 0, 0, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 1000, IBCKPT_FREEZE_F_PERSIST,
						       60000, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(0, 1000, 0, 0, &why), -EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "not a process group id");
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 0, 0, 0, &why), -ERANGE);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, IBCKPT_FREEZE_TIMEOUT_MAX_MS + 1,
						       0, 0, &why), -ERANGE);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 1000, 0x80, 0, &why),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 1000, IBCKPT_FREEZE_F_PERSIST,
						       0, &why), -EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "a persistent freeze needs a watchdog");
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 1000, 0, 5000, &why), -EINVAL);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(42, 1000, IBCKPT_FREEZE_F_PERSIST,
						       IBCKPT_WATCHDOG_MAX_MS + 1, &why), -ERANGE);
}

static void state_names(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, ibckpt_state_name(IBCKPT_STATE_FROZEN), "frozen");
	KUNIT_EXPECT_STREQ(test, ibckpt_state_name(IBCKPT_STATE_ABORTED), "aborted");
	KUNIT_EXPECT_STREQ(test, ibckpt_state_name(0), "unknown");
}

static struct kunit_case ibckpt_state_cases[] = {
	KUNIT_CASE(tally_follows_threads),
	KUNIT_CASE(frozen_only_when_converged),
	KUNIT_CASE(timeout_aborts_unless_done),
	KUNIT_CASE(freeze_args_are_checked),
	KUNIT_CASE(state_names),
	{}
};

static struct kunit_suite ibckpt_state_suite = {
	.name = "ibckpt_state",
	.test_cases = ibckpt_state_cases,
};

kunit_test_suite(ibckpt_state_suite);
