/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the ibckpt CLI's command implementations.
 */
#ifndef IBCKPT_TOOLS_CLI_H
#define IBCKPT_TOOLS_CLI_H

#include <stdint.h>
#include <linux/ibckpt.h>
#include "nl.h"

extern int json;	/* -j: JSON output */

/*
 * args.c: take the global options (-j, --json) that follow the command out
 * of argv, setting *@json_out, so that the command parses only its own;
 * @valued lists the commands' options that take the next argument as their
 * value (NULL-terminated), which is never taken for -j. Options before the
 * command are left to getopt. Returns the new argc (argv stays
 * NULL-terminated).
 */
int cli_take_global(int argc, char **argv, const char *const *valued, int *json_out);

/* Print "ibckpt: WHAT: kernel's reason (strerror)"; returns exit status 1. */
int cli_fail(int err, const char *what, const char *extack);

/* Parse a process group id; prints the error and returns -1 if malformed. */
int cli_pgid(const char *s, unsigned int *pgid);

int cmd_status(int argc, char **argv);
int cmd_freeze(int argc, char **argv);
int cmd_thaw(int argc, char **argv);
int cmd_dump(int argc, char **argv);

/* session.c: what the module says about freeze sessions */
struct cli_session {
	uint64_t id;
	unsigned int pgid, state, flags, threads, parked, pending, exited;
	uint64_t freeze_ns;
	/* the providers' part: asked, answered, drained, outstanding, failure */
	unsigned int providers, quiesced, outstanding, quiesce_err, quiesce_pid;
	uint64_t drained;
};

struct cli_sessions {
	struct cli_session *v;
	unsigned int n;
};

struct cli_thread {
	unsigned int tid, tgid, state;
	uint64_t ip;
	int syscall;	/* -1: none */
};

struct cli_threads {
	struct cli_thread *v;
	unsigned int n;
};

int cli_get_sessions(struct ibnl *n, unsigned int pgid, struct cli_sessions *l,
		     char *ext, size_t extlen);
int cli_get_threads(struct ibnl *n, unsigned int pgid, struct cli_threads *l,
		    char *ext, size_t extlen);
const char *cli_state_name(unsigned int st);

/*
 * A thread of a session that never parked in it. PENDING: still on its way.
 * Once a session is released (thawed or aborted) a thread that did park is
 * RUNNING again, but so is one whose park request ran only after the
 * release: the module records the user-space instruction pointer
 * (IBCKPT_THREAD_A_USER_IP) when, and only when, a thread parks, so a
 * RUNNING thread with none never parked.
 */
static inline int cli_thread_never_parked(const struct cli_thread *t)
{
	return t->state == IBCKPT_THREAD_PENDING ||
	       (t->state == IBCKPT_THREAD_RUNNING && !t->ip);
}
const char *cli_thread_state_name(unsigned int st);

#endif
