// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Virtual ID table: see vidmap.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vidmap.h"

#define VID_FREE 0u
#define VID_DELETED (~0u)

static uint32_t vid_hash(uint32_t v)
{
	/*
	 * Keys and QPNs are often sequential, and keys are often an index
	 * shifted over a key byte: multiply (Knuth), then fold the high bits
	 * down, since the table uses the low ones.
	 */
	v *= 2654435761u;
	return v ^ (v >> 16);
}

void ibckpt_vidmap_init(struct ibckpt_vidmap *m)
{
	memset(m, 0, sizeof(*m));
	m->next_gen = 1;
}

void ibckpt_vidmap_destroy(struct ibckpt_vidmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* The live slot of vid, or NULL; *probes (if given) counts the slots inspected. */
static struct ibckpt_vid *probe(const struct ibckpt_vidmap *m, uint32_t vid, uint32_t *probes)
{
	uint32_t i, mask, n = 0;
	struct ibckpt_vid *s = NULL;

	if (m->size) {
		mask = m->size - 1;
		for (i = vid_hash(vid) & mask;; i = (i + 1) & mask) {
			n++;
			if (m->slot[i].gen == VID_FREE)
				break;
			if (m->slot[i].gen != VID_DELETED && m->slot[i].vid == vid) {
				s = &m->slot[i];
				break;
			}
		}
	}
	if (probes)
		*probes = n;
	return s;
}

static struct ibckpt_vid *find_slot(const struct ibckpt_vidmap *m, uint32_t vid)
{
	return probe(m, vid, NULL);
}

uint32_t ibckpt_vidmap_probes(const struct ibckpt_vidmap *m, uint32_t vid)
{
	uint32_t n;

	probe(m, vid, &n);
	return n;
}

static void place(struct ibckpt_vid *slot, uint32_t size, const struct ibckpt_vid *e)
{
	uint32_t i, mask = size - 1;

	for (i = vid_hash(e->vid) & mask; slot[i].gen != VID_FREE; i = (i + 1) & mask)
		;
	slot[i] = *e;
}

static int grow(struct ibckpt_vidmap *m)
{
	uint32_t i, size = 16;
	struct ibckpt_vid *slot;

	/*
	 * Called when live entries plus tombstones would pass half the array:
	 * rehash into an array where the live ones fill at most a quarter, which
	 * drops the tombstones and leaves room before the next rehash.
	 */
	while (4 * (m->live + 1) > size)
		size *= 2;
	slot = calloc(size, sizeof(*slot));
	if (!slot)
		return ENOMEM;
	for (i = 0; i < m->size; i++)
		if (m->slot[i].gen != VID_FREE && m->slot[i].gen != VID_DELETED)
			place(slot, size, &m->slot[i]);
	free(m->slot);
	m->slot = slot;
	m->size = size;
	m->used = m->live;
	return 0;
}

int ibckpt_vidmap_insert(struct ibckpt_vidmap *m, uint32_t vid, uint32_t real, void *obj,
			 uint32_t *gen)
{
	struct ibckpt_vid e = { .vid = vid, .real = real, .obj = obj };
	int ret;

	if (find_slot(m, vid))
		return EEXIST;
	if (2 * (m->used + 1) > m->size) {
		ret = grow(m);
		if (ret)
			return ret;
	}
	e.gen = m->next_gen++;
	if (m->next_gen == VID_DELETED)
		m->next_gen = 1;
	place(m->slot, m->size, &e);
	m->used++;
	m->live++;
	if (gen)
		*gen = e.gen;
	return 0;
}

int ibckpt_vidmap_remove(struct ibckpt_vidmap *m, uint32_t vid, uint32_t gen)
{
	struct ibckpt_vid *s = find_slot(m, vid);

	if (!s || (gen && s->gen != gen))
		return ENOENT;
	s->gen = VID_DELETED;
	s->obj = NULL;
	m->live--;
	return 0;
}

const struct ibckpt_vid *ibckpt_vidmap_find(const struct ibckpt_vidmap *m, uint32_t vid,
					    uint32_t gen)
{
	const struct ibckpt_vid *s = find_slot(m, vid);

	if (!s || (gen && s->gen != gen))
		return NULL;
	return s;
}

int ibckpt_vidmap_set_real(struct ibckpt_vidmap *m, uint32_t vid, uint32_t real)
{
	struct ibckpt_vid *s = find_slot(m, vid);

	if (!s)
		return ENOENT;
	s->real = real;
	return 0;
}
