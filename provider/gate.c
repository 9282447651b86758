// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Quiesce gate: see gate.h. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include "gate.h"

__thread struct ibckpt_gate_self ibckpt_gate_me IBCKPT_GATE_TLS;

/*
 * The registry: a node per thread that entered a gate and has not exited,
 * apart from the threads' own lines (nodes are linked and unlinked by
 * other threads). reg_lock is taken by a thread's first verb, by its exit
 * (the key's destructor) and by closers (the control thread, under
 * ibckpt_ctx_lock); nothing is taken under it.
 */
struct reg_node {
	struct ibckpt_gate_self *self;
	struct reg_node *next, **pprev;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reg_node *reg;
static pthread_key_t reg_key;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static int reg_key_err;

static long futex(atomic_uint *word, int op, unsigned int val, const struct timespec *ts)
{
	return syscall(SYS_futex, (unsigned int *)word, op, val, ts, NULL, 0);
}

bool ibckpt_gate_asym = true;
static pthread_once_t asym_once = PTHREAD_ONCE_INIT;

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/*
 * Closers fence the others if the process can use private expedited
 * membarrier(2) (Linux 4.14), otherwise every entry fences itself.
 * Registering waits for an RCU grace period once the process has more than
 * one thread: done when the provider loads (ibckpt_gate_setup()), usually
 * before the application's threads, not inside a verb.
 */
static void asym_setup(void)
{
	if (ibckpt_gate_asym && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		ibckpt_gate_asym = false;
}

/**
 * ibckpt_gate_setup() - decide how entering a gate is ordered, once
 *
 * Called when the provider loads; the first registration or close calls
 * it too, so that it is decided before any thread takes the fast path
 * (every thread's first verb registers).
 */
void ibckpt_gate_setup(void)
{
	pthread_once(&asym_once, asym_setup);
}

/*
 * A full barrier on every running thread of the process, after the
 * closer's store to 'closed' and before its reads of the entries.
 * Return: 0, or the errno of membarrier(2) (said on standard error: the
 * process can no longer be quiesced).
 */
static int fence_others(void)
{
	int err;

	if (!ibckpt_gate_asym)
		return 0;	/* every entry fences itself */
	if (!membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return 0;
	err = errno;
	/*
	 * Registration belongs to the mm: a fork keeps it, an exec drops it
	 * (and the provider with it), and CRIU does not restore it.
	 */
	if (err == EPERM && !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	    !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return 0;
	/* slower, but needs no registration (not on nohz_full CPUs) */
	if (!membarrier(MEMBARRIER_CMD_GLOBAL))
		return 0;
	fprintf(stderr, "ibckpt: cannot quiesce: membarrier(2) failed: %s\n", strerror(err));
	return err;
}

void ibckpt_gate_init(struct ibckpt_gate *g)
{
	atomic_init(&g->closed, 0);
	atomic_init(&g->left, 0);
}

static void unlink_node(struct reg_node *n)
{
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
}

/*
 * A thread ends (it is in no verb): off the registry for good. A verb it
 * makes later, from another key's destructor, is refused (registering again
 * would leave a node behind once its TLS is gone).
 */
static void unregister(void *arg)
{
	struct reg_node *n = arg;

	pthread_mutex_lock(&reg_lock);
	unlink_node(n);
	atomic_store(&n->self->inside, NULL);
	n->self->gone = true;
	pthread_mutex_unlock(&reg_lock);
	free(n);
}

static void reg_key_create(void)
{
	reg_key_err = pthread_key_create(&reg_key, unregister);
}

/*
 * The calling thread's first verb: on the registry, off it when it exits.
 * Return: 0, or ENOMEM (no node or key; or the thread is exiting).
 */
static int gate_register(void)
{
	struct ibckpt_gate_self *me = &ibckpt_gate_me;
	struct reg_node *n;

	ibckpt_gate_setup();
	pthread_once(&reg_once, reg_key_create);
	if (reg_key_err || me->gone)
		return ENOMEM;
	n = malloc(sizeof(*n));
	if (!n)
		return ENOMEM;
	if (pthread_setspecific(reg_key, n)) {
		free(n);
		return ENOMEM;
	}
	n->self = me;
	pthread_mutex_lock(&reg_lock);
	n->next = reg;
	n->pprev = &reg;
	if (reg)
		reg->pprev = &n->next;
	reg = n;
	atomic_store(&me->inside, IBCKPT_GATE_IDLE);
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/*
 * What enter found not idle: a thread's first verb (registered, then in
 * as usual), or a verb inside a verb (gate.h): it stays inside the outer
 * gate, whose closer waits for it, whatever this gate's state; a foreign
 * gate refuses it all the same.
 */
int ibckpt_gate_enter_slow(struct ibckpt_gate *g)
{
	struct ibckpt_gate_self *me = &ibckpt_gate_me;

	if (!atomic_load(&me->inside)) {
		if (gate_register())
			return ENOMEM;
		atomic_store(&me->inside, g);
		return atomic_load(&g->closed) ? ibckpt_gate_wait_open(g) : 0;
	}
#ifdef IBCKPT_GATE_CHECK
	__builtin_trap();	/* the unit tests: verbs must not nest */
#endif
	if (atomic_load(&g->closed) == IBCKPT_GATE_FOREIGN)
		return EACCES;
	me->nested++;
	return 0;
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
			/* nobody closes it */
			atomic_store(&ibckpt_gate_me.inside, IBCKPT_GATE_IDLE);
			return EACCES;
		}
		ibckpt_gate_exit(g);
		while (atomic_load(&g->closed) == 1)
			futex(&g->closed, FUTEX_WAIT_PRIVATE, 1, NULL);
		atomic_store(&ibckpt_gate_me.inside, g);
		if (!atomic_load(&g->closed))
			return 0;
	}
}

/**
 * ibckpt_gate_wait_queue() - sleep while a queue of @g's context is closed
 * @g: the context's gate
 * @q_closed: the queue's closed flag (quiesce.c), read without its lock
 *
 * A data-path verb found its queue closed under the queue's lock, and
 * released the lock: it sleeps as a thread at the closed gate does, on the
 * gate's word. A quiesce closes the gate before the queues and opens the
 * queues before the gate, so a queue is closed only while the gate is,
 * and the gate's wake comes after the queue opened.
 * Return: 0 (the queue was seen open: the verb takes its lock again), or
 * EACCES at a foreign gate.
 */
int ibckpt_gate_wait_queue(struct ibckpt_gate *g, const atomic_uint *q_closed)
{
	unsigned int c;

	for (;;) {
		c = atomic_load(&g->closed);
		if (c == IBCKPT_GATE_FOREIGN)
			return EACCES;
		if (atomic_load(q_closed) != IBCKPT_Q_CLOSED)	/* open (a CQ: maybe drained) */
			return 0;
		if (c)
			futex(&g->closed, FUTEX_WAIT_PRIVATE, c, NULL);
		else
			sched_yield();	/* closed since the first load: look again */
	}
}

/**
 * ibckpt_gate_relock_open() - a post found its queue closed: wait, relock
 * @g: the context's gate
 * @l: the queue's lock, held by the caller, its queue closed
 *
 * Return: 0 with @l held again and its queue open, or EACCES without it
 * (ibckpt_gate_wait_queue()).
 */
int ibckpt_gate_relock_open(struct ibckpt_gate *g, struct ibckpt_spinlock *l)
{
	int err;

	do {
		ibckpt_spin_unlock_raw(l);
		err = ibckpt_gate_wait_queue(g, &l->closed);
		if (err)
			return err;
		ibckpt_spin_lock_raw(l);
	} while (atomic_load_explicit(&l->closed, memory_order_acquire) == IBCKPT_Q_CLOSED);
	return 0;
}

void ibckpt_gate_wake_closer(struct ibckpt_gate *g)
{
	atomic_fetch_add(&g->left, 1);
	futex(&g->left, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/*
 * In a forked child, for a context inherited from the parent: no thread of
 * the child gets in again (ibckpt_gate_wait_open()). Single-threaded (the
 * child's atfork handler).
 */
void ibckpt_gate_make_foreign(struct ibckpt_gate *g)
{
	atomic_store(&g->closed, IBCKPT_GATE_FOREIGN);
}

/* Milliseconds since @t0 (CLOCK_MONOTONIC); the quiesce's deadlines (quiesce.c too). */
long ibckpt_ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Is a thread inside @g? */
static bool someone_inside(struct ibckpt_gate *g)
{
	struct reg_node *n;
	bool in = false;

	pthread_mutex_lock(&reg_lock);
	for (n = reg; n && !in; n = n->next)
		in = atomic_load(&n->self->inside) == g;
	pthread_mutex_unlock(&reg_lock);
	return in;
}

int ibckpt_gate_close(struct ibckpt_gate *g, unsigned int timeout_ms)
{
	struct timespec t0, slice = { 0, 1000000 };	/* re-check every ms */
	unsigned int left;
	int err;

	ibckpt_gate_setup();
	atomic_store(&g->closed, 1);	/* seq_cst: our store before our reads */
	err = fence_others();		/* and theirs before their loads */
	if (err) {
		ibckpt_gate_open(g);
		return err;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		left = atomic_load(&g->left);	/* before the look: a leave after it wakes us */
		if (!someone_inside(g))
			return 0;
		if (ibckpt_ms_since(&t0) >= (long)timeout_ms) {
			ibckpt_gate_open(g);
			return ETIMEDOUT;
		}
		futex(&g->left, FUTEX_WAIT_PRIVATE, left, &slice);
	}
}

void ibckpt_gate_open(struct ibckpt_gate *g)
{
	atomic_store(&g->closed, 0);
	futex(&g->closed, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

void ibckpt_gate_atfork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

void ibckpt_gate_atfork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

/*
 * The other threads' nodes are not the child's (freed: the child's copies);
 * only its own stays, its thread in no gate (fork() is no verb; what the
 * parent's threads were inside is the parent's).
 */
void ibckpt_gate_atfork_child(void)
{
	struct ibckpt_gate_self *me = &ibckpt_gate_me;
	struct reg_node *own = atomic_load(&me->inside) ? pthread_getspecific(reg_key) : NULL;
	struct reg_node *n, *next;

	for (n = reg; n; n = next) {
		next = n->next;
		if (n != own)
			free(n);
	}
	atomic_store(&me->inside, own ? IBCKPT_GATE_IDLE : NULL);
	me->nested = 0;
	reg = NULL;
	if (own) {
		own->next = NULL;
		own->pprev = &reg;
		reg = own;
	}
	pthread_mutex_unlock(&reg_lock);
}
