// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Quiesce gate: see gate.h. */
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "gate.h"

static long futex(atomic_uint *word, int op, unsigned int val, const struct timespec *ts)
{
	return syscall(SYS_futex, (unsigned int *)word, op, val, ts, NULL, 0);
}

void ibckpt_gate_init(struct ibckpt_gate *g)
{
	atomic_init(&g->inflight, 0);
	atomic_init(&g->closed, 0);
}

/*
 * Slow path of enter: step out, sleep while closed, step in again.
 * Return: 0 (inside), or EACCES at a foreign gate (outside): what uverbs
 * answers a forked child's write() command on its parent's file (another
 * process's credentials), so that every verb on an inherited object fails
 * alike.
 */
int ibckpt_gate_wait_open(struct ibckpt_gate *g)
{
	for (;;) {
		if (atomic_load(&g->closed) == IBCKPT_GATE_FOREIGN) {
			atomic_fetch_sub(&g->inflight, 1);	/* nobody closes it: no wake */
			return EACCES;
		}
		ibckpt_gate_exit(g);
		while (atomic_load(&g->closed) == 1)
			futex(&g->closed, FUTEX_WAIT_PRIVATE, 1, NULL);
		atomic_fetch_add(&g->inflight, 1);
		if (!atomic_load(&g->closed))
			return 0;
	}
}

void ibckpt_gate_wake_closer(struct ibckpt_gate *g)
{
	futex(&g->inflight, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/*
 * In a forked child, for a context inherited from the parent: the parent's
 * threads counted inside do not exist here, and no thread of the child
 * gets in again (ibckpt_gate_wait_open()). Single-threaded (the child's
 * atfork handler).
 */
void ibckpt_gate_make_foreign(struct ibckpt_gate *g)
{
	atomic_store(&g->inflight, 0);
	atomic_store(&g->closed, IBCKPT_GATE_FOREIGN);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

int ibckpt_gate_close(struct ibckpt_gate *g, unsigned int timeout_ms)
{
	struct timespec t0, slice = { 0, 1000000 };	/* re-check every ms */
	unsigned int n;

	atomic_store(&g->closed, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = atomic_load(&g->inflight)) != 0) {
		if (ms_since(&t0) >= (long)timeout_ms) {
			ibckpt_gate_open(g);
			return ETIMEDOUT;
		}
		futex(&g->inflight, FUTEX_WAIT_PRIVATE, n, &slice);
	}
	return 0;
}

void ibckpt_gate_open(struct ibckpt_gate *g)
{
	atomic_store(&g->closed, 0);
	futex(&g->closed, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}
