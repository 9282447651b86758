/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The freeze session's bookkeeping, kept free of tasks and locks so that
 * KUnit can test it anywhere (state_test.c).
 */
#ifndef IBCKPT_STATE_H
#define IBCKPT_STATE_H

#include <linux/types.h>

#include "uapi/linux/ibckpt.h"

/**
 * struct ibckpt_tally - how many of a session's threads are in each state
 * @threads: threads tracked (every state, running included)
 * @pending: asked to park, not parked yet
 * @parked: parked
 * @exited: exited during the session
 */
struct ibckpt_tally {
	u32 threads;
	u32 pending;
	u32 parked;
	u32 exited;
};

void ibckpt_tally_add(struct ibckpt_tally *t, enum ibckpt_thread_state st);
void ibckpt_tally_move(struct ibckpt_tally *t, enum ibckpt_thread_state from,
		       enum ibckpt_thread_state to);

enum ibckpt_state ibckpt_converge(enum ibckpt_state cur, bool calm,
				  unsigned int new_threads, bool timed_out);

int ibckpt_freeze_args_check(u32 timeout_ms, u32 flags, u32 watchdog_ms, const char **why);

/**
 * enum ibckpt_lookup - why a request looks for a session
 * @IBCKPT_LOOKUP_ID: to report it, named by its id (SESSION_GET,
 *	THREAD_GET, SNAPSHOT_GET)
 * @IBCKPT_LOOKUP_JOB: as the session of a job: to report it, to refuse a
 *	second freeze of the job or replace an aborted one, or to end it
 * @IBCKPT_LOOKUP_END: to end it (THAW), named by its id
 */
enum ibckpt_lookup {
	IBCKPT_LOOKUP_ID,
	IBCKPT_LOOKUP_JOB,
	IBCKPT_LOOKUP_END,
};

bool ibckpt_session_visible(enum ibckpt_lookup how, bool ending);
bool ibckpt_exiting(bool pf_exiting, bool group_exit, int syscall, int exit_nr);

const char *ibckpt_state_name(enum ibckpt_state st);

#endif /* IBCKPT_STATE_H */
