/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the ibckpt CLI's command implementations.
 */
#ifndef IBCKPT_TOOLS_CLI_H
#define IBCKPT_TOOLS_CLI_H

#include "nl.h"

extern int json;	/* -j: JSON output */

/* Print "ibckpt: WHAT: strerror[: kernel's reason]"; returns exit status 1. */
int cli_fail(int err, const char *what, const char *extack);

/* Parse a process group id; prints the error and returns -1 if malformed. */
int cli_pgid(const char *s, unsigned int *pgid);

int cmd_status(int argc, char **argv);

#endif
