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
 * ibckpt_session_visible() - may a lookup find a listed session
 * @how: why it is looked for
 * @ending: the session was ended (thaw, its owner went away, watchdog,
 *	replaced, module exit) and is waiting for its threads to leave their
 *	parks
 *
 * An ending session stays listed until its threads have left their parks,
 * so that the CLI, which polls SESSION_GET by id after a THAW, learns when
 * the job runs again. It is no longer its job's session: a new freeze of
 * the job may start, and status by job says "not frozen". Ending it again
 * finds nothing, as it did when ending unlisted it at once.
 *
 * Return: true if the lookup may return it.
 */
bool ibckpt_session_visible(enum ibckpt_lookup how, bool ending)
{
	return !ending || how == IBCKPT_LOOKUP_ID;
}

/**
 * ibckpt_exiting() - is a thread that runs its park work on its way out
 * @pf_exiting: PF_EXITING is set: the work runs from exit_task_work()
 * @group_exit: the thread group is exiting (SIGNAL_GROUP_EXIT: exit_group(),
 *	the last thread's exit(), a fatal signal, a core dump) or another of
 *	its threads execs, which kills this one (group_exec_task)
 * @syscall: the system call the thread is in (syscall_get_nr()), -1 for none
 * @exit_nr: the number of exit() in the thread's system call ABI
 *
 * Task works also run from do_exit() before it sets PF_EXITING: from
 * ptrace_event(PTRACE_EVENT_EXIT) (ptrace_notify() runs them before the
 * tracer's stop) and from io_uring_files_cancel() (io_run_task_work()). A
 * thread that parked there would be reported parked while it is half gone,
 * and would exit only after the thaw. The group's exit shows in its
 * signal_struct by then; a lone thread's exit() only in its system call.
 *
 * Return: true if it must not park; it is counted as exited.
 */
bool ibckpt_exiting(bool pf_exiting, bool group_exit, int syscall, int exit_nr)
{
	return pf_exiting || group_exit || syscall == exit_nr;
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
