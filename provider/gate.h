/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Quiesce gate of one context (design: a thread parked by the kernel must
 * never be inside a vendor call, holding the vendor's queue locks, when the
 * control thread drains the CQs).
 *
 * Every forwarded verb but the posts and polls runs between
 * ibckpt_gate_enter() and ibckpt_gate_exit() (posts and polls test their
 * queue's flag under the queue's lock instead: quiesce.c; those closed
 * wait on the gate's word, ibckpt_gate_wait_queue()). The control thread
 * closes the gate and waits until no thread is inside; threads arriving at
 * a closed gate sleep on a futex until it reopens. The sleep is
 * interruptible, so the kernel parks such a thread like any other.
 *
 * Fast path: no cache line another thread writes. Each thread says which
 * gate it is inside in an entry of its own (struct ibckpt_gate_self, a
 * cache line of thread-local storage, on a list closers walk); entering
 * stores the gate there and then loads the gate's 'closed' word, which only
 * closing and opening write. Closing stores 'closed' and then reads every
 * thread's entry. Each side orders its store before its load, so either the
 * entering thread sees the gate closed or the closer sees it inside: never
 * neither. The closer pays for both sides: it fences itself and, with
 * membarrier(2), every other thread of the process (ibckpt_gate_step_in()),
 * so that entering costs no locked instruction; where membarrier(2) is
 * missing, entering fences itself (ibckpt_gate_asym). Exit stores
 * IBCKPT_GATE_IDLE (a release store: a closer that read the entry too
 * early looks again within its millisecond) and, only while closed, wakes
 * the closer. An entry still NULL (thread-local storage starts zeroed)
 * belongs to a thread not on the registry yet: the one test enter makes,
 * "is this entry idle?", sends it to the slow path for both that and
 * nesting.
 * Verbs do not nest
 * (IBCKPT_GATE_CHECK, the unit tests' build, aborts if one does); should
 * one, the inner entry only counts in 'nested', and the thread stays inside
 * the outer gate, which holds every closer back (a quiesce closes all).
 *
 * A forked child's copies of its parent's contexts (fork.c) have gates
 * closed for good (IBCKPT_GATE_FOREIGN): entering one fails, on the slow
 * path the closed gate already takes, so the verb reaches neither the
 * parent's vendor objects nor a shadow lock the fork may have copied held.
 */
#ifndef IBCKPT_GATE_H
#define IBCKPT_GATE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "compiler.h"
#include "spinlock.h"

struct ibckpt_gate {
	atomic_uint closed;	/* futex word: 1 while closed, IBCKPT_GATE_FOREIGN */
	atomic_uint left;	/* futex word: bumped by a thread leaving it closed */
};

/* closed: a forked child's copy of its parent's gate, never to open (fork.c) */
#define IBCKPT_GATE_FOREIGN 2u

/*
 * A thread's entry, a cache line only its thread writes; closers read
 * 'inside' through the registry (gate.c), whose list nodes live apart.
 */
struct ibckpt_gate_self {
	/* IBCKPT_GATE_IDLE: in no verb; NULL: not on the registry */
	_Atomic(struct ibckpt_gate *) inside;
	unsigned int nested;			/* entries inside 'inside' */
	bool gone;				/* the thread is exiting: off the registry */
} __attribute__((aligned(64)));

/* 'inside' of a registered thread in no verb: no gate's address. */
#define IBCKPT_GATE_IDLE ((struct ibckpt_gate *)1)

/*
 * Initial-exec TLS: two instructions per access. The provider is loaded
 * with dlopen(), which then takes these 64 bytes from glibc's surplus of
 * static TLS (512 bytes by default); without room the load fails, and
 * libibverbs says so and goes on without the provider.
 */
#ifndef IBCKPT_GATE_CHECK
#define IBCKPT_GATE_TLS __attribute__((tls_model("initial-exec")))
#else	/* the unit tests' build: gcc 12's UBSan null checks misread these addresses */
#define IBCKPT_GATE_TLS
#endif
extern __thread struct ibckpt_gate_self ibckpt_gate_me IBCKPT_GATE_TLS;

/*
 * Set once, before any thread's first verb (ibckpt_gate_setup()): closers
 * fence the other threads with membarrier(2), so that enter needs no fence
 * of its own. Unit tests may clear it before their first gate to test the
 * other mode.
 */
extern bool ibckpt_gate_asym;
void ibckpt_gate_setup(void);

/*
 * Enter's store of its entry, then its load of 'closed' (returned), in that
 * order: with ibckpt_gate_asym, by the compiler's order only (a closer's
 * membarrier(2) makes every running thread execute a full barrier between
 * the closer's store and its reads of the entries, and a thread not running
 * passed one when it was switched out); without, both sequentially
 * consistent (an exchange, then a load no store may pass on any
 * architecture: an acquire load could, on ppc64le or with arm64's LDAPR).
 */
static inline unsigned int ibckpt_gate_step_in(struct ibckpt_gate_self *me,
					       struct ibckpt_gate *g)
{
	if (likely(ibckpt_gate_asym)) {
		atomic_store_explicit(&me->inside, g, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		return atomic_load_explicit(&g->closed, memory_order_acquire);
	}
	atomic_store(&me->inside, g);
	return atomic_load(&g->closed);
}

void ibckpt_gate_init(struct ibckpt_gate *g);
int ibckpt_gate_enter_slow(struct ibckpt_gate *g);
int ibckpt_gate_wait_open(struct ibckpt_gate *g);
void ibckpt_gate_wake_closer(struct ibckpt_gate *g);
void ibckpt_gate_make_foreign(struct ibckpt_gate *g);
int ibckpt_gate_wait_queue(struct ibckpt_gate *g, const atomic_uint *q_closed);
int ibckpt_gate_relock_open(struct ibckpt_gate *g, struct ibckpt_spinlock *l);
long ibckpt_ms_since(const struct timespec *t0);

/*
 * Return: 0, inside the gate; or the errno a verb on a foreign context
 * fails with, or ENOMEM for a thread that could not be registered (not
 * inside: no ibckpt_gate_exit()).
 */
static inline __attribute__((warn_unused_result)) int ibckpt_gate_enter(struct ibckpt_gate *g)
{
	struct ibckpt_gate_self *me = &ibckpt_gate_me;

	/* Not registered yet, or a verb inside a verb: the slow path. */
	if (unlikely(atomic_load_explicit(&me->inside, memory_order_relaxed) !=
		     IBCKPT_GATE_IDLE))
		return ibckpt_gate_enter_slow(g);
	if (unlikely(ibckpt_gate_step_in(me, g) != 0))
		return ibckpt_gate_wait_open(g);
	return 0;
}

static inline void ibckpt_gate_exit(struct ibckpt_gate *g)
{
	struct ibckpt_gate_self *me = &ibckpt_gate_me;

	if (unlikely(me->nested != 0)) {
		me->nested--;
		return;
	}
	atomic_store_explicit(&me->inside, IBCKPT_GATE_IDLE, memory_order_release);
	if (unlikely(atomic_load_explicit(&g->closed, memory_order_relaxed) != 0))
		ibckpt_gate_wake_closer(g);
}

/*
 * Closes the gate and waits up to timeout_ms for the threads inside to leave.
 * Returns 0 when none is inside (the gate stays closed), ETIMEDOUT otherwise
 * or membarrier(2)'s errno should it fail (the gate is reopened: the caller
 * aborts the quiesce).
 */
int ibckpt_gate_close(struct ibckpt_gate *g, unsigned int timeout_ms);
void ibckpt_gate_open(struct ibckpt_gate *g);

/* fork.c: the registry's lock across a fork; the child keeps its own thread only. */
void ibckpt_gate_atfork_prepare(void);
void ibckpt_gate_atfork_parent(void);
void ibckpt_gate_atfork_child(void);

#endif
