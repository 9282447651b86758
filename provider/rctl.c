// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The restart channel: two pipes of the process (uapi/linux/ibckpt_restart.h)
 * through which the CLI runs release and reacquire. The control thread
 * serves one command at a time; each gets one reply.
 *
 * Pipes because a process released for a checkpoint must hold nothing a
 * checkpointer cannot dump, and must still be reachable after its restore:
 * CRIU restores pipes, with their descriptor numbers, and a read() blocked
 * in one restarts. Both ends of both pipes stay open in the process, so
 * neither side ever sees an end of file; the CLI opens its ends through
 * /proc/PID/fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

static int cmd_pipe[2] = { -1, -1 }, reply_pipe[2] = { -1, -1 };
static pid_t rctl_pid;			/* the process the pipes are of (fork) */

/**
 * ibckpt_rctl_open() - create the process's restart channel, once
 *
 * Context: the control thread. Return: 0 or an errno.
 */
int ibckpt_rctl_open(void)
{
	if (rctl_pid == getpid())
		return 0;
	if (pipe2(cmd_pipe, O_CLOEXEC))
		return errno;
	if (pipe2(reply_pipe, O_CLOEXEC)) {
		int err = errno;

		close(cmd_pipe[0]);
		close(cmd_pipe[1]);
		return err;
	}
	rctl_pid = getpid();
	return 0;
}

/* The descriptors the CLI opens; ENOENT before the channel exists. */
int ibckpt_rctl_fds(int *cmd, int *reply)
{
	if (rctl_pid != getpid())
		return ENOENT;
	*cmd = cmd_pipe[1];
	*reply = reply_pipe[0];
	return 0;
}

/* The end the control thread waits on, -1 if none. */
int ibckpt_rctl_wait_fd(void)
{
	return rctl_pid == getpid() ? cmd_pipe[0] : -1;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = read(fd, (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? errno : EPIPE;
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	ssize_t r;

	while (put < len) {
		r = write(fd, (const char *)buf + put, len - put);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? errno : EPIPE;
		put += (size_t)r;
	}
	return 0;
}

static void reply(uint32_t status, const void *payload, uint32_t len)
{
	struct ibckpt_rmsg h = { .magic = IBCKPT_RMSG_MAGIC, .type = IBCKPT_RMSG_REPLY,
				 .status = status };
	const char *msg = ibckpt_restart_msg();

	if (status) {		/* the reason, for the CLI to print */
		payload = msg[0] ? msg : strerror((int)status);
		len = (uint32_t)strlen(payload) + 1;
	}
	h.len = len;
	if (write_full(reply_pipe[1], &h, sizeof(h)) ||
	    (len && write_full(reply_pipe[1], payload, len)))
		ibckpt_dbg("restart: reply lost: %s", strerror(errno));
}

/* Every gate open again, the freeze over: the GO of a reacquire. */
static void gates_reopen(void)
{
	struct ibckpt_context *ctx;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		if (ctx->gate_closed) {
			ibckpt_gate_open(&ctx->gate);
			ctx->gate_closed = false;
		}
	}
	ibckpt_quiesced = false;
}

/**
 * ibckpt_rctl_serve() - read one command from the channel and answer it
 *
 * Context: the control thread, when the command pipe is readable.
 * Return: true if the process was reacquired (the gates are open again).
 */
bool ibckpt_rctl_serve(void)
{
	struct ibckpt_ident *ids = NULL;
	struct ibckpt_rmsg h;
	uint32_t nids = 0;
	void *payload = NULL;
	bool done = false;
	int err;

	err = read_full(cmd_pipe[0], &h, sizeof(h));
	if (err)
		return false;
	if (h.magic != IBCKPT_RMSG_MAGIC || h.len > IBCKPT_RMSG_MAX_LEN) {
		/* Not a command: nothing in the pipe can be trusted to be one. */
		char junk[4096];

		fcntl(cmd_pipe[0], F_SETFL, O_NONBLOCK);
		while (read(cmd_pipe[0], junk, sizeof(junk)) > 0)
			;
		fcntl(cmd_pipe[0], F_SETFL, 0);
		reply(EPROTO, NULL, 0);
		return false;
	}
	if (h.len) {
		payload = malloc(h.len);
		if (!payload || read_full(cmd_pipe[0], payload, h.len)) {
			free(payload);
			reply(ENOMEM, NULL, 0);
			return false;
		}
	}
	/* Contexts being opened finish first; none opens until the GO. */
	if (h.type == IBCKPT_RMSG_RELEASE && !ibckpt_released &&
	    ibckpt_gate_close(&ibckpt_open_gate, 2000)) {
		free(payload);
		reply(ETIMEDOUT, NULL, 0);
		return false;
	}
	pthread_mutex_lock(&ibckpt_ctx_lock);
	switch (h.type) {
	case IBCKPT_RMSG_PREPARE:
		err = ibckpt_release_prepare(h.status);
		break;
	case IBCKPT_RMSG_RELEASE:
		err = ibckpt_release(h.status);
		if (!ibckpt_released)
			ibckpt_gate_open(&ibckpt_open_gate);
		break;
	case IBCKPT_RMSG_REACQUIRE:
		err = h.len % sizeof(struct ibckpt_rdev_map) ? EINVAL : 0;
		if (!err && ibckpt_fault_reacquire()) {
			/* before anything, the module's registration too (control.c) */
			ibckpt_restart_err_clear();
			ibckpt_restart_err("fault injected (IBCKPT_FAULT_REACQUIRE)");
			err = EIO;
		}
		if (!err && ibckpt_released) {
			err = ibckpt_control_reattach();
			if (err)
				ibckpt_restart_err("cannot register with ibckpt.ko again: %s",
						   strerror(err));
		}
		if (!err)
			err = ibckpt_reacquire(payload, h.len / sizeof(struct ibckpt_rdev_map),
					       &ids, &nids);
		break;
	case IBCKPT_RMSG_REMAP:
		err = h.len % sizeof(struct ibckpt_ident) ? EINVAL :
		      ibckpt_remap(payload, h.len / sizeof(struct ibckpt_ident));
		break;
	case IBCKPT_RMSG_ABORT:
		err = ibckpt_unacquire();
		break;
	case IBCKPT_RMSG_GO:
		done = ibckpt_released;
		err = ibckpt_go();
		if (err)
			done = false;
		else if (done) {	/* a process not released keeps its freeze's gates */
			gates_reopen();
			ibckpt_gate_open(&ibckpt_open_gate);
		}
		break;
	default:
		err = EINVAL;
		break;
	}
	pthread_mutex_unlock(&ibckpt_ctx_lock);
	free(payload);
	reply((uint32_t)err, ids, nids * (uint32_t)sizeof(*ids));
	return done;
}
