/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Quiesce gate of one context (design: a thread parked by the kernel must
 * never be inside a vendor call, holding the vendor's queue locks, when the
 * control thread drains the CQs).
 *
 * Every forwarded verb runs between ibckpt_gate_enter() and
 * ibckpt_gate_exit(). The control thread closes the gate and waits until no
 * thread is inside; threads arriving at a closed gate sleep on a futex until
 * it reopens. The sleep is interruptible, so the kernel parks such a thread
 * like any other. Fast path: one atomic add and one load on entry, one atomic
 * sub on exit; the futex wake is only issued while closed.
 *
 * A forked child's copies of its parent's contexts (fork.c) have gates
 * closed for good (IBCKPT_GATE_FOREIGN): entering one fails, on the slow
 * path the closed gate already takes, so the verb reaches neither the
 * parent's vendor objects nor a shadow lock the fork may have copied held.
 */
#ifndef IBCKPT_GATE_H
#define IBCKPT_GATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct ibckpt_gate {
	atomic_uint inflight;	/* threads inside a forwarded verb */
	atomic_uint closed;	/* futex word: 1 while closed, IBCKPT_GATE_FOREIGN */
};

/* closed: a forked child's copy of its parent's gate, never to open (fork.c) */
#define IBCKPT_GATE_FOREIGN 2u

void ibckpt_gate_init(struct ibckpt_gate *g);
int ibckpt_gate_wait_open(struct ibckpt_gate *g);
void ibckpt_gate_wake_closer(struct ibckpt_gate *g);
void ibckpt_gate_make_foreign(struct ibckpt_gate *g);

/*
 * Return: 0, inside the gate; or the errno a verb on a foreign context
 * fails with (not inside: no ibckpt_gate_exit()).
 */
static inline __attribute__((warn_unused_result)) int ibckpt_gate_enter(struct ibckpt_gate *g)
{
	atomic_fetch_add(&g->inflight, 1);	/* seq_cst: pairs with close */
	if (__builtin_expect(atomic_load(&g->closed) != 0, 0))
		return ibckpt_gate_wait_open(g);
	return 0;
}

static inline void ibckpt_gate_exit(struct ibckpt_gate *g)
{
	if (atomic_fetch_sub(&g->inflight, 1) == 1 &&
	    __builtin_expect(atomic_load(&g->closed) != 0, 0))
		ibckpt_gate_wake_closer(g);
}

/*
 * Closes the gate and waits up to timeout_ms for the threads inside to leave.
 * Returns 0 when none is inside (the gate stays closed), ETIMEDOUT otherwise
 * (the gate is reopened: the caller aborts the quiesce).
 */
int ibckpt_gate_close(struct ibckpt_gate *g, unsigned int timeout_ms);
void ibckpt_gate_open(struct ibckpt_gate *g);

#endif
