/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The spinlock of the verb paths (queue logs, QPN table, private CQs).
 *
 * Inline, so that an uncontended lock costs one atomic exchange and an
 * unlock one store, with no call into libc on every post and poll. Held
 * only for a few hundred instructions at most, and only while the
 * context's queues are open (quiesce.c): a quiesce takes every queue's
 * lock to close it, so a thread parked by a freeze never holds one. Contended
 * waiters spin on a plain load and yield now and then, since on a small
 * machine the holder may be waiting for the CPU they spin on.
 */
#ifndef IBCKPT_SPINLOCK_H
#define IBCKPT_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

struct ibckpt_spinlock {
	atomic_int locked;
};

void ibckpt_spin_lock_contended(struct ibckpt_spinlock *l);

static inline void ibckpt_spin_init(struct ibckpt_spinlock *l)
{
	atomic_init(&l->locked, 0);
}

static inline void ibckpt_spin_lock(struct ibckpt_spinlock *l)
{
	if (__builtin_expect(atomic_exchange_explicit(&l->locked, 1, memory_order_acquire), 0))
		ibckpt_spin_lock_contended(l);
}

/* Return: true if it was free, and is now the caller's. */
static inline bool ibckpt_spin_trylock(struct ibckpt_spinlock *l)
{
	return !atomic_load_explicit(&l->locked, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire);
}

static inline void ibckpt_spin_unlock(struct ibckpt_spinlock *l)
{
	atomic_store_explicit(&l->locked, 0, memory_order_release);
}

#endif
