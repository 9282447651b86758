// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the quiesce gate adds to every verb (issue #14): ns per enter+exit of
 * one gate on the host, with the closer fencing the other threads through
 * membarrier(2) (the provider's mode where the kernel has it) and with
 * every entry fencing itself (the fallback, and the gate before this
 * measurement: one exchange per entry), beside the same loop with no gate.
 *
 *   gatecost [--fence] [MILLIONS]
 *
 * One mode per process: the provider decides it once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../provider/gate.h"

static struct ibckpt_gate gate;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* The verb's body: nothing, but a call the compiler keeps. */
static __attribute__((noinline)) void body(long *n)
{
	__asm__ volatile("" : : "r"(n) : "memory");
}

int main(int argc, char **argv)
{
	bool fence = argc > 1 && !strcmp(argv[1], "--fence");
	long i, n = (argc > 1 + fence ? atol(argv[1 + fence]) : 50) * 1000000L;
	double t0, bare, gated;

	if (fence)
		ibckpt_gate_asym = false;
	ibckpt_gate_init(&gate);
	if (ibckpt_gate_enter(&gate))	/* the first: registers */
		return 1;
	ibckpt_gate_exit(&gate);

	t0 = now_ns();
	for (i = 0; i < n; i++)
		body(&i);
	bare = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (ibckpt_gate_enter(&gate))
			return 1;
		body(&i);
		ibckpt_gate_exit(&gate);
	}
	gated = (now_ns() - t0) / n;
	printf("gate (%s): %.2f ns per verb with it, %.2f without: +%.2f ns\n",
	       ibckpt_gate_asym ? "closer's membarrier" : "entry's own fence",
	       gated, bare, gated - bare);
	return 0;
}
