// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: a freeze is declared complete only when it is, times out cleanly
 * otherwise, and refuses malformed requests with a reason; an ending
 * session is seen by id only; an exiting thread does not park.
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
	enum ibckpt_state f = IBCKPT_STATE_FREEZING;

	/* a thread was on its way to park when the scan started */
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, false, 0, false), f);
	/* a thread born during the scan keeps the session freezing */
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, true, 1, false), f);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, true, 0, false), IBCKPT_STATE_FROZEN);
}

/*
 * Thread T, pending, forks child C behind the walk's position, then
 * parks; the scan ends having found nothing, and nothing pends any more.
 * Pending sampled after the scan would say FROZEN while C runs. Sampled
 * before the scan, T was pending: one more scan must run, and that one
 * sees C.
 */
static void fork_behind_the_scan_is_not_frozen(struct kunit *test)
{
	struct ibckpt_tally t = {};
	bool calm;

	ibckpt_tally_add(&t, IBCKPT_THREAD_PENDING);		/* T */
	calm = !t.pending;					/* scan k starts */
	ibckpt_tally_move(&t, IBCKPT_THREAD_PENDING, IBCKPT_THREAD_PARKED);	/* T parks */
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_FREEZING, calm, 0, false),
			IBCKPT_STATE_FREEZING);
	/* scan k+1 starts calm and finds C */
	calm = !t.pending;
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_FREEZING, calm, 1, false),
			IBCKPT_STATE_FREEZING);
	ibckpt_tally_add(&t, IBCKPT_THREAD_PENDING);		/* C */
	calm = !t.pending;
	ibckpt_tally_move(&t, IBCKPT_THREAD_PENDING, IBCKPT_THREAD_PARKED);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_FREEZING, calm, 0, false),
			IBCKPT_STATE_FREEZING);
	calm = !t.pending;
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_FREEZING, calm, 0, false),
			IBCKPT_STATE_FROZEN);
}

static void timeout_aborts_unless_done(struct kunit *test)
{
	enum ibckpt_state f = IBCKPT_STATE_FREEZING;

	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, false, 0, true), IBCKPT_STATE_ABORTED);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, true, 2, true), IBCKPT_STATE_ABORTED);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(f, true, 0, true), IBCKPT_STATE_FROZEN);
	/* other states never move by converging */
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_THAWING, true, 0, true),
			IBCKPT_STATE_THAWING);
	KUNIT_EXPECT_EQ(test, ibckpt_converge(IBCKPT_STATE_FROZEN, false, 3, true),
			IBCKPT_STATE_FROZEN);
}

static void freeze_args_are_checked(struct kunit *test)
{
	const char *why = NULL;

	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(1000, 0, 0, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(1000, IBCKPT_FREEZE_F_PERSIST,
						       60000, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(0, 0, 0, &why), -ERANGE);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(IBCKPT_FREEZE_TIMEOUT_MAX_MS + 1,
						       0, 0, &why), -ERANGE);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(1000, 0x80, 0, &why), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(1000, IBCKPT_FREEZE_F_PERSIST,
						       0, &why), -EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "a persistent freeze needs a watchdog");
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(1000, 0, 5000, &why), -EINVAL);
	KUNIT_EXPECT_EQ(test, ibckpt_freeze_args_check(1000, IBCKPT_FREEZE_F_PERSIST,
						       IBCKPT_WATCHDOG_MAX_MS + 1, &why), -ERANGE);
}

/*
 * THAW ends a session and returns; the session stays listed until its
 * threads have left their parks. Only SESSION_GET by id (the CLI waiting
 * for the job to run) may see it then: it is no longer its job's session,
 * and it cannot be ended twice.
 */
static void an_ending_session_is_seen_by_id_only(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, ibckpt_session_visible(IBCKPT_LOOKUP_ID, false));
	KUNIT_EXPECT_TRUE(test, ibckpt_session_visible(IBCKPT_LOOKUP_JOB, false));
	KUNIT_EXPECT_TRUE(test, ibckpt_session_visible(IBCKPT_LOOKUP_END, false));
	KUNIT_EXPECT_TRUE(test, ibckpt_session_visible(IBCKPT_LOOKUP_ID, true));
	/* a new freeze of the job may start; status by job: not frozen */
	KUNIT_EXPECT_FALSE(test, ibckpt_session_visible(IBCKPT_LOOKUP_JOB, true));
	/* a second THAW by id: "no such freeze session", as before */
	KUNIT_EXPECT_FALSE(test, ibckpt_session_visible(IBCKPT_LOOKUP_END, true));
}

/*
 * Task works run in do_exit() before PF_EXITING (ptrace's exit event,
 * io_uring's cancel). Each way out, as the park callback sees it; 60 and
 * 231 are x86-64's exit and exit_group, 1 is i386's exit (and x86-64's
 * write).
 */
static void a_thread_on_its_way_out_does_not_park(struct kunit *test)
{
	/* running: interrupted in user space, or in a system call */
	KUNIT_EXPECT_FALSE(test, ibckpt_exiting(false, false, -1, 60));
	KUNIT_EXPECT_FALSE(test, ibckpt_exiting(false, false, 0, 60));
	/* exit_task_work() */
	KUNIT_EXPECT_TRUE(test, ibckpt_exiting(true, false, -1, 60));
	/* a lone thread's exit(): only its system call says so */
	KUNIT_EXPECT_TRUE(test, ibckpt_exiting(false, false, 60, 60));
	/* exit_group(), the last thread, a fatal signal, another's exec */
	KUNIT_EXPECT_TRUE(test, ibckpt_exiting(false, true, 231, 60));
	KUNIT_EXPECT_TRUE(test, ibckpt_exiting(false, true, -1, 60));
	/* a compat task: its own exit number, not the native one */
	KUNIT_EXPECT_TRUE(test, ibckpt_exiting(false, false, 1, 1));
	KUNIT_EXPECT_FALSE(test, ibckpt_exiting(false, false, 60, 1));
	KUNIT_EXPECT_FALSE(test, ibckpt_exiting(false, false, 1, 60));
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
	KUNIT_CASE(fork_behind_the_scan_is_not_frozen),
	KUNIT_CASE(timeout_aborts_unless_done),
	KUNIT_CASE(freeze_args_are_checked),
	KUNIT_CASE(an_ending_session_is_seen_by_id_only),
	KUNIT_CASE(a_thread_on_its_way_out_does_not_park),
	KUNIT_CASE(state_names),
	{}
};

static struct kunit_suite ibckpt_state_suite = {
	.name = "ibckpt_state",
	.test_cases = ibckpt_state_cases,
};

kunit_test_suite(ibckpt_state_suite);
