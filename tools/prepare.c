// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * PREPARE of every process of a frozen job, before any is released
 * (Documentation/restart.rst, "Exactly once"). A provider answers:
 *
 *   0            it can be released (the fences it posted completed);
 *   EINPROGRESS  a fence of its that must not run while the job runs (a
 *                FETCH_AND_ADD of 0) is still outstanding: asked again
 *                with the job still frozen, PREPARE_AGAIN times at most,
 *                each waiting for it again;
 *   EBUSY        requests in flight: a freeze a little later may find
 *                them done (the caller thaws and tries again);
 *   other        a refusal no retry cures.
 *
 * The processes are asked one after another. Once one said EBUSY the
 * release is refused, but the others are still asked, with
 * IBCKPT_RREL_NO_FENCE (the checks only, no fence posted), so that a
 * refusal no retry cures is told rather than tried again for; the first
 * such refusal ends it.
 */
#include <errno.h>
#include <stdio.h>
#include <linux/ibckpt_restart.h>
#include "restart.h"

/**
 * prepare_job() - PREPARE every process of a frozen job
 * @n: processes
 * @call: asks process @i with @flags; its errno (0: agreed), a negative
 *	number if it could not be asked, and its reason in @why
 * @arg: for @call
 * @what: what the command cannot do, for the messages
 *
 * Return: 0 if every process agreed; 3 if requests are in flight (EBUSY,
 * or an atomic fence outstanding after PREPARE_AGAIN more asks); 1 if a
 * process refused for good. Said.
 */
int prepare_job(unsigned int n, prepare_call_fn call, void *arg, const char *what)
{
	unsigned int i, t, busy = 0;
	char why[512];
	uint32_t flags;
	int st;

	for (i = 0; i < n; i++) {
		flags = IBCKPT_RREL_PEERS_CHECKED | (busy ? IBCKPT_RREL_NO_FENCE : 0);
		for (t = 0;; t++) {
			why[0] = 0;
			st = call(arg, i, flags, why, sizeof(why));
			if (st != EINPROGRESS || t == PREPARE_AGAIN)
				break;
			fprintf(stderr, "ibckpt: %s: %s: asking again (%u of %u), the job frozen\n",
				what, why, t + 2, PREPARE_AGAIN + 1);
		}
		if (!st)
			continue;
		fprintf(stderr, "ibckpt: %s: %s\n", what, why);
		if (st == EINPROGRESS)
			fprintf(stderr, "ibckpt: %s: gave up after %u tries: that fence is still "
				"outstanding, and runs at the peer whenever it does, the job frozen "
				"or not (an add of 0, which a store of the peer's to that word at the "
				"same moment may be lost to)\n", what, PREPARE_AGAIN + 1);
		if (st != EBUSY && st != EINPROGRESS)
			return 1;
		busy++;
	}
	return busy ? 3 : 0;
}
