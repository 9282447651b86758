// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Quiesce gate (gate.h) with real threads, under ASan + UBSan. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../gate.h"
/* the suite's name says which fence entries use (main()) */
static const char *suite = "provider/gate";
static bool fence_mode;
#define UNIT_SUITE suite
#include "../../tests/unit/unit.h"

static struct ibckpt_gate gate;
static atomic_int inside, stop;
static atomic_long entries;

static void *worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (ibckpt_gate_enter(&gate))
			abort();
		atomic_fetch_add(&inside, 1);
		atomic_fetch_add(&entries, 1);
		atomic_fetch_sub(&inside, 1);
		ibckpt_gate_exit(&gate);
	}
	return NULL;
}

/* While closed nobody is inside and nobody gets in; reopening lets them go on. */
static void close_excludes_threads(void)
{
	pthread_t t[4];
	long before;
	int i, round;

	ibckpt_gate_init(&gate);
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (round = 0; round < 20; round++) {
		usleep(2000);
		/* a worker preempted inside (a loaded host) may hold it a while */
		CHECK_EQ(ibckpt_gate_close(&gate, 10000), 0);
		CHECK_EQ(atomic_load(&inside), 0);
		before = atomic_load(&entries);
		usleep(5000);
		CHECK_EQ(atomic_load(&entries), before);
		CHECK_EQ(atomic_load(&inside), 0);
		ibckpt_gate_open(&gate);
	}
	/* reopened, they get in again: wait for it (a loaded host schedules late) */
	for (i = 0; i < 5000 && atomic_load(&entries) == before; i++)
		usleep(1000);
	CHECK(atomic_load(&entries) > before);
	atomic_store(&stop, 1);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* A thread that stays inside makes close time out and leaves the gate open. */
static void close_times_out(void)
{
	ibckpt_gate_init(&gate);
	CHECK_EQ(ibckpt_gate_enter(&gate), 0);
	CHECK_EQ(ibckpt_gate_close(&gate, 20), ETIMEDOUT);
	CHECK_EQ(atomic_load(&gate.closed), 0);
	ibckpt_gate_exit(&gate);
	CHECK_EQ(ibckpt_gate_close(&gate, 20), 0);
	ibckpt_gate_open(&gate);
}

/*
 * A forked child's copy of a gate its parent's threads were inside, or had
 * closed: made foreign, it refuses at once (no sleep on the copied count or
 * word), counts nobody inside, and never lets anyone in.
 */
static void foreign_gate_refuses(void)
{
	int i;

	ibckpt_gate_init(&gate);
	atomic_store(&gate.closed, 1);			/* a quiesce under way */
	ibckpt_gate_make_foreign(&gate);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(ibckpt_gate_enter(&gate), EACCES);
		CHECK(atomic_load(&ibckpt_gate_me.inside) == IBCKPT_GATE_IDLE);	/* not inside */
	}
	CHECK_EQ(atomic_load(&gate.closed), IBCKPT_GATE_FOREIGN);
}

static void *one_verb(void *arg)
{
	(void)arg;
	if (ibckpt_gate_enter(&gate))
		abort();
	atomic_fetch_add(&entries, 1);
	ibckpt_gate_exit(&gate);
	return NULL;
}

/*
 * Threads that come, make one verb and go, while the gate is closed and
 * opened over and over: each joins the registry with its first verb and
 * leaves it when it exits (a closer never reads an exited thread's entry),
 * and every one gets its verb done.
 */
static void short_lived_threads(void)
{
	pthread_t t[8];
	int i, round;

	ibckpt_gate_init(&gate);
	atomic_store(&entries, 0);
	for (round = 0; round < 50; round++) {
		for (i = 0; i < 8; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, one_verb, NULL), 0);
		CHECK_EQ(ibckpt_gate_close(&gate, 10000), 0);
		ibckpt_gate_open(&gate);
		for (i = 0; i < 8; i++)
			pthread_join(t[i], NULL);
	}
	CHECK_EQ(atomic_load(&entries), 50 * 8);
	CHECK_EQ(ibckpt_gate_close(&gate, 10000), 0);	/* nobody left inside */
	ibckpt_gate_open(&gate);
}

static atomic_int busy[2];
static atomic_long laps[2];	/* each worker's sections */
/* a line the closer keeps reading: a worker's store to it is slow to land */
static _Alignas(64) atomic_long noise;

/*
 * Nothing in the section but relaxed accesses, as in a verb: no locked
 * instruction of the caller's supplies the order between enter's store of
 * the thread's entry and its load of 'closed' (the workers above count with
 * sequentially consistent atomics, which would).
 */
static void *plain_worker(void *arg)
{
	atomic_int *b = arg;
	atomic_long *l = &laps[b - busy];
	int spin = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/*
		 * Stores leave the store buffer in order: the entry's waits
		 * behind this one, while the load of 'closed' goes ahead.
		 */
		atomic_store_explicit(&noise, spin, memory_order_relaxed);
		if (ibckpt_gate_enter(&gate))
			abort();
		atomic_store_explicit(b, 1, memory_order_relaxed);
		/* counted inside, by its only writer: no locked instruction */
		atomic_store_explicit(l, atomic_load_explicit(l, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		for (spin = 0; spin < 50; spin++)
			atomic_signal_fence(memory_order_seq_cst);
		atomic_store_explicit(b, 0, memory_order_relaxed);
		ibckpt_gate_exit(&gate);
	}
	return NULL;
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/*
 * Enter against close, 20,000 times, with workers whose sections order
 * nothing: a closer that returned finds no worker in its section, and none
 * starts one in the next 10 us, in both fence modes. The store-buffering
 * race it guards (a worker's entry still in its store buffer when the
 * closer reads it, while the worker read 'closed' before the closer's
 * store) showed in each of three runs with the closer's membarrier(2)
 * taken out, and in --fence mode with the entry's store made relaxed.
 */
static void entry_races_close(void)
{
	pthread_t t[2];
	int i, round, seen = 0, spin;
	double t0;

	/* the default mode is the one this host gives the provider */
	CHECK(ibckpt_gate_asym == !fence_mode);
	ibckpt_gate_init(&gate);
	atomic_store(&stop, 0);
	for (i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, plain_worker, &busy[i]), 0);
	for (round = 0; round < 20000; round++) {
		long l0 = atomic_load(&laps[0]), l1 = atomic_load(&laps[1]);

		/* both running again (for a while at most: a loaded host) */
		for (spin = 0; spin < 100000; spin++)
			if (atomic_load_explicit(&laps[0], memory_order_relaxed) != l0 &&
			    atomic_load_explicit(&laps[1], memory_order_relaxed) != l1)
				break;
		(void)atomic_load_explicit(&noise, memory_order_relaxed);
		CHECK_EQ(ibckpt_gate_close(&gate, 10000), 0);
		l0 = atomic_load(&laps[0]) + atomic_load(&laps[1]);
		for (t0 = now_us(); now_us() - t0 < 10;)
			seen += atomic_load_explicit(&busy[0], memory_order_relaxed) +
				atomic_load_explicit(&busy[1], memory_order_relaxed);
		seen += atomic_load(&laps[0]) + atomic_load(&laps[1]) != l0;
		ibckpt_gate_open(&gate);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(seen, 0);
}

int main(int argc, char **argv)
{
	/* --fence: every entry fences itself, as without membarrier(2) */
	if (argc == 2 && !strcmp(argv[1], "--fence")) {
		ibckpt_gate_asym = false;
		fence_mode = true;
		suite = "provider/gate-fence";
	}
	RUN(close_excludes_threads);
	RUN(close_times_out);
	RUN(foreign_gate_refuses);
	RUN(short_lived_threads);
	RUN(entry_races_close);
	return unit_done();
}
