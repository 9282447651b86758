// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The CLI's end of the restart channel (tools/rchan.c) against a provider
 * played by a thread on two pipes of this process: a reply
 * left over from an earlier command is never taken for this one's, and a
 * provider that stops reading cannot hold the CLI.
 */
#define UNIT_SUITE "rchan"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <linux/ibckpt_restart.h>
#include "../../tests/unit/unit.h"
#include "../rchan.h"

static int cmd[2], rep[2];

/* What the played provider does with the next command. */
static enum { ANSWER, STALE_FIRST, SILENT } mode;

static void put_reply(uint32_t seq, uint32_t type, uint32_t status, const char *msg)
{
	struct ibckpt_rmsg h = { .magic = IBCKPT_RMSG_MAGIC, .type = IBCKPT_RMSG_REPLY,
				 .status = status, .len = (uint32_t)strlen(msg) + 1, .seq = seq,
				 .cmd = type };

	CHECK_EQ(write(rep[1], &h, sizeof(h)), (ssize_t)sizeof(h));
	CHECK_EQ(write(rep[1], msg, h.len), (ssize_t)h.len);
}

static void *provider(void *arg)
{
	struct pollfd p = { .fd = cmd[0], .events = POLLIN };
	struct ibckpt_rmsg h;

	(void)arg;
	CHECK_EQ(poll(&p, 1, 5000), 1);
	CHECK_EQ(read(cmd[0], &h, sizeof(h)), (ssize_t)sizeof(h));
	CHECK_EQ(h.magic, IBCKPT_RMSG_MAGIC);
	if (mode == STALE_FIRST)	/* the late answer to a command given up on */
		put_reply(h.seq - 1, h.type, 0, "stale");
	put_reply(h.seq, h.type, EBUSY, "the fresh reason");
	return NULL;
}

static struct rchan chan(void)
{
	CHECK_EQ(pipe2(cmd, O_NONBLOCK), 0);
	CHECK_EQ(pipe2(rep, O_NONBLOCK), 0);
	return (struct rchan){ .pid = 1, .cmd = cmd[1], .reply = rep[0] };
}

static void unchan(void)
{
	close(cmd[0]);
	close(cmd[1]);
	close(rep[0]);
	close(rep[1]);
}

/* Left in the pipe before the call (an earlier CLI's), or written before ours. */
static void stale_replies_are_dropped(void)
{
	struct rchan c = chan();
	char why[256] = "";
	pthread_t t;

	put_reply(7, IBCKPT_RMSG_REACQUIRE, 0, "an earlier CLI's");
	mode = STALE_FIRST;
	CHECK_EQ(pthread_create(&t, NULL, provider, NULL), 0);
	CHECK_EQ(rchan_call(&c, IBCKPT_RMSG_RELEASE, 0, NULL, 0, 5000, NULL, NULL, why,
			    sizeof(why)), EBUSY);
	CHECK(strstr(why, "the fresh reason") != NULL);
	pthread_join(t, NULL);
	unchan();
}

/* A reply to another command type with our number is not ours either. */
static void reply_to_another_command_dropped(void)
{
	struct rchan c = chan();
	char why[256] = "";

	mode = SILENT;
	put_reply(0, IBCKPT_RMSG_GO, 0, "not ours");	/* dropped before sending */
	CHECK_EQ(rchan_call(&c, IBCKPT_RMSG_GO, 0, NULL, 0, 300, NULL, NULL, why,
			    sizeof(why)), -1);
	CHECK(strstr(why, "timed out") != NULL);
	unchan();
}

/* A provider that reads nothing: a payload larger than the pipe times out. */
static void writer_has_a_deadline(void)
{
	static char big[256 << 10];
	struct rchan c = chan();
	char why[256] = "";

	CHECK_EQ(rchan_call(&c, IBCKPT_RMSG_REMAP, 0, big, sizeof(big), 300, NULL, NULL, why,
			    sizeof(why)), -1);
	CHECK(strstr(why, "sending to its restart channel: timed out") != NULL);
	unchan();
}

int main(void)
{
	RUN(stale_replies_are_dropped);
	RUN(reply_to_another_command_dropped);
	RUN(writer_has_a_deadline);
	return unit_done();
}
