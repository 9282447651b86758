/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What every command's output shares: the output mode and the report of a
 * request the module refused (out.c). A leaf: it calls no other file of the
 * CLI, so that every file may print.
 */
#ifndef IBCKPT_TOOLS_OUT_H
#define IBCKPT_TOOLS_OUT_H

extern int json;	/* -j: JSON output */

/* Print "ibckpt: WHAT: kernel's reason (strerror)"; returns exit status 1. */
int cli_fail(int err, const char *what, const char *extack);

#endif
