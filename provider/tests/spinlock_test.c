// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The verb-path spinlock excludes: threads hammering one counter lose nothing. */
#include <pthread.h>
#include "../spinlock.h"
#define UNIT_SUITE "provider/spinlock"
#include "../../tests/unit/unit.h"

#define THREADS 4
#define ROUNDS 2000000

static struct ibckpt_spinlock lock;
static unsigned long counter;	/* plain: only the lock keeps it exact */

static void *hammer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		ibckpt_spin_lock(&lock);
		counter = counter + 1;
		ibckpt_spin_unlock(&lock);
	}
	return NULL;
}

static void threads_exclude_each_other(void)
{
	pthread_t t[THREADS];
	int i;

	ibckpt_spin_init(&lock);
	for (i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(counter, (unsigned long)THREADS * ROUNDS);
	CHECK_EQ(atomic_load(&lock.locked), 0);
}

int main(void)
{
	RUN(threads_exclude_each_other);
	return unit_done();
}
