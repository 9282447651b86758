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
	/* Keys and QPNs are often sequential: spread them (Knuth). */
	return v * 2654435761u;
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

static struct ibckpt_vid *find_slot(const struct ibckpt_vidmap *m, uint32_t vid)
{
	uint32_t i, mask;

	if (!m->size)
		return NULL;
	mask = m->size - 1;
	for (i = vid_hash(vid) & mask;; i = (i + 1) & mask) {
		struct ibckpt_vid *s = &m->slot[i];

		if (s->gen == VID_FREE)
			return NULL;
		if (s->gen != VID_DELETED && s->vid == vid)
			return s;
	}
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
