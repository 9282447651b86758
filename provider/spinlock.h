/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The spinlock of the verb paths (queue logs, QPN table, private CQs).
 *
 * Inline, so that an uncontended lock costs one atomic exchange and an
 * unlock one store, with no call into libc on every post and poll. Held
 * only for a few hundred instructions at most. Contended waiters spin on a
 * plain load and yield now and then, since on a small machine the holder
 * may be waiting for the CPU they spin on.
 *
 * A queue's lock also carries the queue's 'closed' flag (quiesce.c). Posts
 * and polls take the lock with the _raw calls and test the flag under it;
 * a closed queue sends them away at once, touching nothing. Such a thread
 * can still be parked by the freeze between its exchange and its unlock,
 * and then holds the lock for as long as the job is frozen. So while a
 * queue is closed it is the control thread's alone: its own lock and
 * unlock of that queue are no-ops (ibckpt_spin_lock()), and it never
 * waits for a thread the freeze parked. Only the control thread sets or
 * clears IBCKPT_Q_CLOSED, outside its locked sections, and only CLOSED
 * makes its lock a no-op, so its lock and unlock of one section always
 * agree (the DRAINED mark below changes inside locked sections too).
 *
 * A CQ's flag has a third value, IBCKPT_Q_DRAINED: open, and its private
 * queue holds completions a drain took, to be served before the vendor's
 * (cq.c). A poll's one test of the flag finds both, so an open CQ with
 * nothing drained costs no test of its private queue. Only a poller,
 * under the lock, takes DRAINED back to 0, by an exchange that fails if
 * a closer stored CLOSED meanwhile.
 */
#ifndef IBCKPT_SPINLOCK_H
#define IBCKPT_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include "compiler.h"

struct ibckpt_spinlock {
	atomic_int locked;
	atomic_uint closed;	/* a queue's lock: 0, IBCKPT_Q_CLOSED, IBCKPT_Q_DRAINED */
};

#define IBCKPT_Q_CLOSED		1u	/* by a quiesce: the control thread's (quiesce.c) */
#define IBCKPT_Q_DRAINED	2u	/* a CQ's: open, its private queue first (cq.c) */

/* Set in the provider's control thread only (control.c). */
extern __thread bool ibckpt_ctl_self __attribute__((tls_model("initial-exec")));

void ibckpt_spin_lock_contended(struct ibckpt_spinlock *l);

static inline void ibckpt_spin_init(struct ibckpt_spinlock *l)
{
	atomic_init(&l->locked, 0);
	atomic_init(&l->closed, 0);
}

static inline void ibckpt_spin_lock_raw(struct ibckpt_spinlock *l)
{
	if (unlikely(atomic_exchange_explicit(&l->locked, 1, memory_order_acquire)))
		ibckpt_spin_lock_contended(l);
}

static inline void ibckpt_spin_unlock_raw(struct ibckpt_spinlock *l)
{
	atomic_store_explicit(&l->locked, 0, memory_order_release);
}

/* Return: true if it was free, and is now the caller's. */
static inline bool ibckpt_spin_trylock(struct ibckpt_spinlock *l)
{
	return !atomic_load_explicit(&l->locked, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire);
}

/* The control thread at a queue it closed: the queue is its own (above). */
static inline bool ibckpt_spin_owned(const struct ibckpt_spinlock *l)
{
	return unlikely(atomic_load_explicit(&l->closed, memory_order_relaxed) ==
			IBCKPT_Q_CLOSED) &&
	       ibckpt_ctl_self;
}

static inline void ibckpt_spin_lock(struct ibckpt_spinlock *l)
{
	if (!ibckpt_spin_owned(l))
		ibckpt_spin_lock_raw(l);
}

static inline void ibckpt_spin_unlock(struct ibckpt_spinlock *l)
{
	if (!ibckpt_spin_owned(l))
		ibckpt_spin_unlock_raw(l);
}

#endif
