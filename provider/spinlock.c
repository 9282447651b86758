// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Verb-path spinlock: see spinlock.h. */
#include <sched.h>
#include "spinlock.h"

/* The control thread sets it (control.c): see spinlock.h. */
__thread bool ibckpt_ctl_self __attribute__((tls_model("initial-exec")));

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

void ibckpt_spin_lock_contended(struct ibckpt_spinlock *l)
{
	unsigned int spins = 0;

	do {
		while (atomic_load_explicit(&l->locked, memory_order_relaxed)) {
			if (++spins % 128)
				cpu_relax();
			else
				sched_yield();
		}
	} while (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire));
}
