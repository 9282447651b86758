// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The process's real-time interval timer, held from a release to its GO
 * (Documentation/restart.rst, "Interval timers").
 *
 * While released the application's every verb waits at a closed gate, but
 * its timers run on: an alarm() that drives its phases (perftest -D: warm
 * up, measure, stop) would end them with nothing to measure. And Debian's
 * criu 3.17 restores ITIMER_REAL only when it has an interval: a one-shot
 * timer (alarm(), a setitimer() without interval) is dumped and then
 * dropped at the restore (decode_itimer() and the restorer's itimer_armed()
 * look at the interval alone; fixed upstream in 2025), and a program
 * waiting for it waits for good. So the release takes the timer off,
 * remembering what was left, and GO sets it again: the time the job was
 * released does not count, as criu's own restore does not count the time
 * the job was down. A timer the application set while released (a
 * handler of a signal that came during the freeze) is newer and kept.
 *
 * ITIMER_VIRTUAL and ITIMER_PROF count CPU time, which a released job
 * hardly spends; POSIX timers are criu's (restored with their values).
 */
#include <stdbool.h>
#include <sys/time.h>
#include "ibckpt.h"
#include "restart.h"

/* Written by the control thread only (the phases), under ibckpt_ctx_lock. */
static struct itimerval held;
static bool holding;

static bool armed(const struct itimerval *t)
{
	return t->it_value.tv_sec || t->it_value.tv_usec;
}

/**
 * ibckpt_itimer_hold() - take the real-time timer off at a release
 *
 * Context: the control thread, at a release, once it sets ibckpt_released
 * (a release of a released process is refused before; one held already is
 * kept all the same).
 */
void ibckpt_itimer_hold(void)
{
	static const struct itimerval off;
	struct itimerval old;

	if (holding || setitimer(ITIMER_REAL, &off, &old) || !armed(&old))
		return;
	held = old;
	holding = true;
	ibckpt_dbg("real-time timer held: %ld.%06ld s left, interval %ld.%06ld s",
		   (long)old.it_value.tv_sec, (long)old.it_value.tv_usec,
		   (long)old.it_interval.tv_sec, (long)old.it_interval.tv_usec);
}

/**
 * ibckpt_itimer_resume() - the held timer on again, at GO
 *
 * One the application set meanwhile wins. Context: the control thread.
 */
void ibckpt_itimer_resume(void)
{
	struct itimerval now;

	if (!holding)
		return;
	holding = false;
	if (!getitimer(ITIMER_REAL, &now) && armed(&now))
		return;
	if (setitimer(ITIMER_REAL, &held, NULL))
		ibckpt_dbg("real-time timer not set again: %m");
}

/**
 * ibckpt_itimer_forget() - a fork child holds nothing
 *
 * fork() gives the child no interval timer: what its parent held is not
 * the child's to set at a GO of its own. Context: the child, in fork.c's
 * child handler, ibckpt_ctx_lock held.
 */
void ibckpt_itimer_forget(void)
{
	holding = false;
}
