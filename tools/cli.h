/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the ibckpt CLI's command implementations.
 */
#ifndef IBCKPT_TOOLS_CLI_H
#define IBCKPT_TOOLS_CLI_H

#include <stdint.h>
#include "nl.h"

extern int json;	/* -j: JSON output */

/* Print "ibckpt: WHAT: kernel's reason (strerror)"; returns exit status 1. */
int cli_fail(int err, const char *what, const char *extack);

/* Parse a process group id; prints the error and returns -1 if malformed. */
int cli_pgid(const char *s, unsigned int *pgid);

int cmd_status(int argc, char **argv);
int cmd_freeze(int argc, char **argv);
int cmd_thaw(int argc, char **argv);

/* session.c: what the module says about freeze sessions */
struct cli_session {
	uint64_t id;
	unsigned int pgid, state, flags, threads, parked, pending, exited;
	uint64_t freeze_ns;
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
const char *cli_thread_state_name(unsigned int st);

#endif
