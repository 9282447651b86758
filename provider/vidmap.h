/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Virtual ID table: virtual QPN / lkey / rkey -> (real ID, object).
 *
 * Virtual IDs equal the real ones at creation, so until a restart the fast
 * path never consults this table for keys; it does look up QPNs to retire
 * logged requests on completion. Open addressing with linear probing on a
 * power-of-two array kept at most half full: O(1) expected, no allocation
 * except when it grows (at create time, never on the data path).
 *
 * Every insertion takes a new generation number from the table. An object
 * remembers the generation of its entry, so when an ID is recycled (a
 * deregistered MR's key handed out again by the vendor), a stale holder that
 * looks the ID up with its old generation gets no match instead of the new
 * object. A restart rewrites 'real' in place with ibckpt_vidmap_set_real().
 *
 * Callers serialize updates; lookups may run concurrently with each other.
 */
#ifndef IBCKPT_VIDMAP_H
#define IBCKPT_VIDMAP_H

#include <stdint.h>

struct ibckpt_vid {
	uint32_t vid;
	uint32_t real;
	uint32_t gen;		/* 0: free slot; ~0u: deleted (tombstone) */
	uint32_t pad;
	void *obj;
};

struct ibckpt_vidmap {
	struct ibckpt_vid *slot;
	uint32_t size;		/* power of two, 0 before the first insert */
	uint32_t used;		/* live + tombstones */
	uint32_t live;
	uint32_t next_gen;
};

void ibckpt_vidmap_init(struct ibckpt_vidmap *m);
void ibckpt_vidmap_destroy(struct ibckpt_vidmap *m);

/* Adds vid (EEXIST if live); returns its generation in *gen. */
int ibckpt_vidmap_insert(struct ibckpt_vidmap *m, uint32_t vid, uint32_t real, void *obj,
			 uint32_t *gen);
/* Removes vid if its generation is gen (0: any); ENOENT otherwise. */
int ibckpt_vidmap_remove(struct ibckpt_vidmap *m, uint32_t vid, uint32_t gen);
/* Live entry for vid, or NULL; gen 0 matches any generation. */
const struct ibckpt_vid *ibckpt_vidmap_find(const struct ibckpt_vidmap *m, uint32_t vid,
					    uint32_t gen);
/* The real ID behind vid of generation gen (0: any), 0 if there is none. */
static inline uint32_t ibckpt_vidmap_real(const struct ibckpt_vidmap *m, uint32_t vid,
					  uint32_t gen)
{
	const struct ibckpt_vid *v = ibckpt_vidmap_find(m, vid, gen);

	return v ? v->real : 0;
}
/* Slots a lookup of vid inspects (diagnostics, tests): about 1 to 2 when healthy. */
uint32_t ibckpt_vidmap_probes(const struct ibckpt_vidmap *m, uint32_t vid);
/* Points vid at a new real ID (restart). */
int ibckpt_vidmap_set_real(struct ibckpt_vidmap *m, uint32_t vid, uint32_t real);

#endif
