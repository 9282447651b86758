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
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

/* Created by the control thread under ibckpt_ctx_lock (a fork's prepare holds it). */
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
	/* non-blocking: every read and write has a deadline (io_full()) */
	if (pipe2(cmd_pipe, O_CLOEXEC | O_NONBLOCK))
		return errno;
	if (pipe2(reply_pipe, O_CLOEXEC | O_NONBLOCK)) {
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

/*
 * How long the rest of a message may take to arrive, or a reply to leave:
 * a CLI that dies part way through a command (or never reads its reply)
 * must not hold the control thread, which also serves the module.
 */
unsigned int ibckpt_rctl_deadline_ms = 5000;

/* Read or write @len bytes of the non-blocking @fd within the deadline. Return: 0 or an errno. */
static int io_full(int fd, void *buf, size_t len, bool wr)
{
	struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
	int waited = 0;
	size_t done = 0;
	ssize_t r;

	while (done < len) {
		r = wr ? write(fd, (const char *)buf + done, len - done) :
			 read(fd, (char *)buf + done, len - done);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (!r)
			return EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno;
		if (waited >= (int)ibckpt_rctl_deadline_ms)
			return ETIMEDOUT;
		if (poll(&p, 1, 100) == 0)
			waited += 100;
	}
	return 0;
}

/* Drop what @fd holds (a partial message, a reply nobody read). */
static void drain(int fd)
{
	char junk[4096];

	while (read(fd, junk, sizeof(junk)) > 0)
		;
}

static void reply(const struct ibckpt_rmsg *cmd, uint32_t status, const void *payload,
		  uint32_t len)
{
	struct ibckpt_rmsg h = { .magic = IBCKPT_RMSG_MAGIC, .type = IBCKPT_RMSG_REPLY,
				 .status = status, .seq = cmd->seq, .cmd = cmd->type };
	const char *msg = ibckpt_restart_msg();

	if (status) {		/* the reason, for the CLI to print */
		payload = msg[0] ? msg : strerror((int)status);
		len = (uint32_t)strlen(payload) + 1;
	}
	h.len = len;
	/* a reply an earlier CLI left unread goes: this one is read first */
	drain(reply_pipe[0]);
	if (io_full(reply_pipe[1], &h, sizeof(h), true) ||
	    (len && io_full(reply_pipe[1], (void *)payload, len, true))) {
		ibckpt_dbg("restart: reply lost: %s", strerror(errno));
		drain(reply_pipe[0]);	/* no half reply left behind */
	}
}

/* Every gate open again, the freeze over: the GO of a reacquire. */
static void gates_reopen(void)
{
	struct ibckpt_context *ctx;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next)
		ibckpt_ctx_open(ctx);	/* its queues, then its gate */
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

	err = io_full(cmd_pipe[0], &h, sizeof(h), false);
	if (err) {
		drain(cmd_pipe[0]);	/* a header cut short: its sender gave up */
		return false;
	}
	if (h.magic != IBCKPT_RMSG_MAGIC || h.len > IBCKPT_RMSG_MAX_LEN) {
		/* Not a command: nothing in the pipe can be trusted to be one. */
		drain(cmd_pipe[0]);
		reply(&h, EPROTO, NULL, 0);
		return false;
	}
	if (h.len) {
		payload = malloc(h.len);
		err = payload ? io_full(cmd_pipe[0], payload, h.len, false) : ENOMEM;
		if (err) {
			free(payload);
			drain(cmd_pipe[0]);	/* the rest of it is no command */
			reply(&h, err, NULL, 0);
			return false;
		}
	}
	/* Contexts being opened finish first; none opens until the GO. */
	if (h.type == IBCKPT_RMSG_RELEASE && !ibckpt_released &&
	    (err = ibckpt_gate_close(&ibckpt_open_gate, 2000))) {
		free(payload);
		reply(&h, err, NULL, 0);
		return false;
	}
	pthread_mutex_lock(&ibckpt_ctx_lock);
	switch (h.type) {
	case IBCKPT_RMSG_PREPARE:
		err = h.len % sizeof(struct ibckpt_rpeer) ? EINVAL :
		      ibckpt_release_prepare(h.status, payload,
					     h.len / sizeof(struct ibckpt_rpeer));
		break;
	case IBCKPT_RMSG_RELEASE:
		err = h.len % sizeof(struct ibckpt_rpeer) ? EINVAL :
		      ibckpt_release(h.status, payload, h.len / sizeof(struct ibckpt_rpeer));
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
	reply(&h, (uint32_t)err, ids, nids * (uint32_t)sizeof(*ids));
	return done;
}

/*
 * A fork's child (fork.c): the pipes are the parent's channel, which only
 * the parent's control thread serves; the child makes its own at its first
 * freeze. The copies are closed: descriptors of ibckpt's own, which no
 * CLI ever opens through the child.
 */
void ibckpt_rctl_atfork_child(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (cmd_pipe[i] >= 0)
			close(cmd_pipe[i]);
		if (reply_pipe[i] >= 0)
			close(reply_pipe[i]);
		cmd_pipe[i] = reply_pipe[i] = -1;
	}
	rctl_pid = 0;
}
