// SPDX-License-Identifier: GPL-2.0
/*
 * Freeze session bookkeeping: thread tallies, the FREEZING -> FROZEN/ABORTED
 * decision, and validation of a freeze request's arguments.
 */
#include <linux/errno.h>
#include <linux/mm.h>

#include "state.h"

static u32 *ibckpt_tally_slot(struct ibckpt_tally *t, enum ibckpt_thread_state st)
{
	switch (st) {
	case IBCKPT_THREAD_PENDING:
		return &t->pending;
	case IBCKPT_THREAD_PARKED:
		return &t->parked;
	case IBCKPT_THREAD_EXITED:
		return &t->exited;
	default:
		return NULL;	/* running threads are only counted in @threads */
	}
}

/**
 * ibckpt_tally_add() - count a newly tracked thread
 * @t: the tally
 * @st: its state
 */
void ibckpt_tally_add(struct ibckpt_tally *t, enum ibckpt_thread_state st)
{
	u32 *slot = ibckpt_tally_slot(t, st);

	t->threads++;
	if (slot)
		(*slot)++;
}

/**
 * ibckpt_tally_move() - account for a thread changing state
 * @t: the tally
 * @from: its old state
 * @to: its new state
 */
void ibckpt_tally_move(struct ibckpt_tally *t, enum ibckpt_thread_state from,
		       enum ibckpt_thread_state to)
{
	u32 *a = ibckpt_tally_slot(t, from), *b = ibckpt_tally_slot(t, to);

	if (from == to)
		return;
	if (a && *a)
		(*a)--;
	if (b)
		(*b)++;
}

/**
 * ibckpt_converge() - the state a session reaches after a scan of its job
 * @cur: current state
 * @calm: no known thread was on its way to park when the scan started
 * @new_threads: threads the scan found and queued for parking
 * @timed_out: the freeze's deadline has passed
 *
 * A job is frozen only when a scan that started while every known thread
 * was parked (or gone) finds no thread it did not know. Sampling "nothing
 * pending" after the scan instead would miss a child that a pending thread
 * forked behind the walk's position and then parked: the walk never saw
 * the child, and nothing pends any more. Every thread a parked thread
 * created before it parked is visible to a walk that starts afterwards, and
 * a parked thread creates none.
 *
 * Return: the new state.
 */
enum ibckpt_state ibckpt_converge(enum ibckpt_state cur, bool calm,
				  unsigned int new_threads, bool timed_out)
{
	if (cur != IBCKPT_STATE_FREEZING)
		return cur;
	if (calm && !new_threads)
		return IBCKPT_STATE_FROZEN;
	return timed_out ? IBCKPT_STATE_ABORTED : IBCKPT_STATE_FREEZING;
}

/**
 * ibckpt_freeze_args_check() - validate a freeze request (the job itself is
 *	checked by ibckpt_job_args_check())
 * @timeout_ms: how long freezing may take
 * @flags: IBCKPT_FREEZE_F_*
 * @watchdog_ms: for a persistent freeze, when it thaws by itself
 * @why: set to a message for the requester on error
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_freeze_args_check(u32 timeout_ms, u32 flags, u32 watchdog_ms, const char **why)
{
	if (!timeout_ms || timeout_ms > IBCKPT_FREEZE_TIMEOUT_MAX_MS) {
		*why = "timeout must be 1 ms to 10 minutes";
		return -ERANGE;
	}
	if (flags & ~(u32)IBCKPT_FREEZE_F_ALL) {
		*why = "unknown freeze flags";
		return -EOPNOTSUPP;
	}
	if ((flags & IBCKPT_FREEZE_F_PERSIST) && !watchdog_ms) {
		*why = "a persistent freeze needs a watchdog";
		return -EINVAL;
	}
	if (!(flags & IBCKPT_FREEZE_F_PERSIST) && watchdog_ms) {
		*why = "a watchdog applies to persistent freezes only";
		return -EINVAL;
	}
	if (watchdog_ms > IBCKPT_WATCHDOG_MAX_MS) {
		*why = "watchdog must be at most 7 days";
		return -ERANGE;
	}
	return 0;
}

/**
 * ibckpt_state_name() - a session state as text
 * @st: the state
 *
 * Return: a static string.
 */
const char *ibckpt_state_name(enum ibckpt_state st)
{
	switch (st) {
	case IBCKPT_STATE_FREEZING:
		return "freezing";
	case IBCKPT_STATE_FROZEN:
		return "frozen";
	case IBCKPT_STATE_THAWING:
		return "thawing";
	case IBCKPT_STATE_ABORTED:
		return "aborted";
	}
	return "unknown";
}
