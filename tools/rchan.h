/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CLI's end of a provider's restart channel (uapi/linux/ibckpt_restart.h):
 * its two pipes, opened through /proc/PID/fd.
 */
#ifndef IBCKPT_TOOLS_RCHAN_H
#define IBCKPT_TOOLS_RCHAN_H

#include <stddef.h>
#include <stdint.h>

struct rchan {
	unsigned int pid;
	int cmd_fd, reply_fd;		/* the process's numbers */
	int cmd, reply;			/* ours, -1 when closed */
};

/* 0, or -1 with the reason in @why (no such process, not its pipes, no access). */
int rchan_open(struct rchan *c, char *why, size_t whylen);
void rchan_close(struct rchan *c);

/*
 * Send a command, wait up to @timeout_ms for its reply. Return: the reply's
 * status (0 or a positive errno, its message in @why), or -1 if the
 * channel failed (@why says how). *@out (malloc'ed, NULL if empty) and
 * *@outlen get a successful reply's payload when @out is given.
 */
int rchan_call(struct rchan *c, uint32_t type, uint32_t flags, const void *payload,
	       uint32_t len, int timeout_ms, void **out, uint32_t *outlen, char *why,
	       size_t whylen);

#endif
