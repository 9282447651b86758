// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Object ids: the handles snapshots name objects by, and the high half of
 * an XRC SRQ receive's tag (srq.c). 32 bits, unique among the process's
 * live contexts and shadows. They are handed out in turn; after 2^32
 * creations (a UD application that creates an AH per message gets there
 * within hours) the count wraps, and an id still held is skipped instead
 * of given twice: two objects sharing a handle would make a snapshot
 * ambiguous, and an XRC tag would name the wrong SRQ. So the live ids are
 * kept in a set: one lookup and one insertion per create, one removal per
 * destroy, all on the control path.
 *
 * ids_lock is a leaf: nothing is taken under it. fork() holds it across
 * (fork.c), so that the child's copy of the set is consistent.
 */
#include <pthread.h>
#include "ibckpt.h"
#include "vidmap.h"

static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibckpt_vidmap live = { .next_gen = 1 };	/* as ibckpt_vidmap_init(); ids_lock */
static uint32_t last;			/* the id handed out last; under ids_lock */

/*
 * An id no live object holds, never 0. Without memory to record it, it is
 * handed out all the same: it can only be given twice 2^32 creations later.
 */
uint32_t ibckpt_new_id(void)
{
	uint32_t id, gen;

	pthread_mutex_lock(&ids_lock);
	do {
		id = ++last;
	} while (!id || ibckpt_vidmap_find(&live, id, 0));
	ibckpt_vidmap_insert(&live, id, id, NULL, &gen);
	pthread_mutex_unlock(&ids_lock);
	return id;
}

/* The object of @id is gone: it may be handed out again. */
void ibckpt_id_put(uint32_t id)
{
	if (!id)
		return;
	pthread_mutex_lock(&ids_lock);
	ibckpt_vidmap_remove(&live, id, 0);
	pthread_mutex_unlock(&ids_lock);
}

/* Tests: the next id is the one after @id (wrap-around is 2^32 creations away). */
void ibckpt_ids_skip_to(uint32_t id)
{
	pthread_mutex_lock(&ids_lock);
	last = id;
	pthread_mutex_unlock(&ids_lock);
}

void ibckpt_ids_atfork(enum ibckpt_fork_phase ph)
{
	if (ph == IBCKPT_FORK_PREPARE)
		pthread_mutex_lock(&ids_lock);
	else
		pthread_mutex_unlock(&ids_lock);
}
