// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * PREPARE of every process of a frozen job (tools/prepare.c) against
 * providers played by a script of answers: an atomic fence outstanding is
 * asked about again with the job frozen, and given up on after
 * PREPARE_AGAIN more asks, saying so; after an EBUSY the others are still
 * asked (checks only) so that a refusal no retry cures is told.
 */
#define UNIT_SUITE "prepare"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ibckpt_restart.h>
#include "../../tests/unit/unit.h"
#include "../restart.h"

#define MAX_ASKS 16

/* Each process's answers in turn (the last one repeats), and what it was asked. */
struct script {
	int answer[4][MAX_ASKS];
	unsigned int nanswer[4];
	unsigned int asked[4];
	uint32_t flags[4][MAX_ASKS];
};

static int play(void *arg, unsigned int i, uint32_t flags, char *why, size_t whylen)
{
	struct script *s = arg;
	unsigned int k = s->asked[i]++;
	int st;

	if (k < MAX_ASKS)
		s->flags[i][k] = flags;
	st = s->answer[i][k < s->nanswer[i] ? k : s->nanswer[i] - 1];
	snprintf(why, whylen, "process %u: answer %d", 100 + i, st);
	return st;
}

static char said[8192];

/* prepare_job() over @n processes of @s, what it says kept in said[]. */
static int run(struct script *s, unsigned int n)
{
	FILE *f = tmpfile();
	int fd, saved, rc;
	size_t len;

	CHECK(f != NULL);
	if (!f)
		return -100;
	fflush(stderr);
	saved = dup(2);
	fd = fileno(f);
	dup2(fd, 2);
	rc = prepare_job(n, play, s, "cannot checkpoint job");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	len = fread(said, 1, sizeof(said) - 1, f);
	said[len] = 0;
	fclose(f);
	return rc;
}

static void all_agree(void)
{
	struct script s = { .nanswer = { 1, 1, 1 } };

	CHECK_EQ(run(&s, 3), 0);
	CHECK_EQ(s.asked[0] + s.asked[1] + s.asked[2], 3);
	CHECK_EQ(s.flags[2][0], IBCKPT_RREL_PEERS_CHECKED);
	CHECK_EQ(said[0], 0);
}

/* An atomic fence that completes while asked again: released, the job never thawed. */
static void atomic_fence_asked_again(void)
{
	struct script s = { .answer = { { EINPROGRESS, EINPROGRESS, 0 } },
			    .nanswer = { 3, 1 } };

	CHECK_EQ(run(&s, 2), 0);
	CHECK_EQ(s.asked[0], 3);
	CHECK_EQ(s.asked[1], 1);
	CHECK_EQ(s.flags[0][2], IBCKPT_RREL_PEERS_CHECKED);
	CHECK(strstr(said, "process 100: answer 115: asking again (2 of 4), the job frozen"));
	CHECK(strstr(said, "asking again (3 of 4)"));
	CHECK(!strstr(said, "gave up"));
}

/* One that does not: given up on after four asks, said, and tried again later (3). */
static void atomic_fence_given_up(void)
{
	struct script s = { .answer = { { EINPROGRESS } }, .nanswer = { 1, 1 } };

	CHECK_EQ(run(&s, 2), 3);
	CHECK_EQ(s.asked[0], PREPARE_AGAIN + 1);
	CHECK(strstr(said, "gave up after 4 tries: that fence is still outstanding"));
	CHECK_EQ(s.flags[1][0], IBCKPT_RREL_PEERS_CHECKED | IBCKPT_RREL_NO_FENCE);
}

/*
 * An EBUSY, then a refusal no retry cures in a later process: that one
 * is told and ends it (1: the checkpoint is not tried again); the later
 * process was asked for the checks only (the first EBUSY does not end the
 * asking, which would lead to five futile tries).
 */
static void lasting_refusal_after_ebusy(void)
{
	struct script s = { .answer = { { EBUSY }, { EOPNOTSUPP } }, .nanswer = { 1, 1, 1 } };

	CHECK_EQ(run(&s, 3), 1);
	CHECK_EQ(s.asked[1], 1);
	CHECK_EQ(s.flags[1][0], IBCKPT_RREL_PEERS_CHECKED | IBCKPT_RREL_NO_FENCE);
	CHECK_EQ(s.asked[2], 0);
	CHECK(strstr(said, "process 100: answer 16"));
	CHECK(strstr(said, "process 101: answer 95"));
}

/* EBUSY, the others fine: 3, each asked once, after the EBUSY for the checks only. */
static void ebusy_only(void)
{
	struct script s = { .answer = { { 0 }, { EBUSY }, { 0 } }, .nanswer = { 1, 1, 1 } };

	CHECK_EQ(run(&s, 3), 3);
	CHECK_EQ(s.flags[0][0], IBCKPT_RREL_PEERS_CHECKED);
	CHECK_EQ(s.flags[1][0], IBCKPT_RREL_PEERS_CHECKED);
	CHECK_EQ(s.flags[2][0], IBCKPT_RREL_PEERS_CHECKED | IBCKPT_RREL_NO_FENCE);
}

/* A lasting refusal first, or a channel that fails: nobody else is asked. */
static void lasting_refusal_first(void)
{
	struct script s = { .answer = { { EOPNOTSUPP } }, .nanswer = { 1, 1 } };
	struct script c = { .answer = { { -1 } }, .nanswer = { 1, 1 } };

	CHECK_EQ(run(&s, 2), 1);
	CHECK_EQ(s.asked[1], 0);
	CHECK_EQ(run(&c, 2), 1);
	CHECK_EQ(c.asked[0], 1);
	CHECK_EQ(c.asked[1], 0);
}

int main(void)
{
	RUN(all_agree);
	RUN(atomic_fence_asked_again);
	RUN(atomic_fence_given_up);
	RUN(lasting_refusal_after_ebusy);
	RUN(ebusy_only);
	RUN(lasting_refusal_first);
	return unit_done();
}
