// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Virtual LIDs and GIDs: see addr.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "addr.h"

static uint32_t gid_hash(const union ibv_gid *g)
{
	uint32_t w[4], h = 0;
	int i;

	memcpy(w, g->raw, sizeof(w));
	for (i = 0; i < 4; i++)
		h = (h ^ w[i]) * 2654435761u;
	return h ^ (h >> 16);
}

static struct ibckpt_gid_ent *gid_slot(const struct ibckpt_gidmap *m, const union ibv_gid *key)
{
	uint32_t mask = m->size - 1, i;

	/* never full (at most half), so an unused slot ends every probe */
	for (i = gid_hash(key) & mask;; i = (i + 1) & mask)
		if (!m->slot[i].used || !memcmp(m->slot[i].key.raw, key->raw, sizeof(key->raw)))
			return &m->slot[i];
}

static int gidmap_grow(struct ibckpt_gidmap *m)
{
	struct ibckpt_gidmap n = { .size = m->size ? 2 * m->size : 16 };
	uint32_t i;

	n.slot = calloc(n.size, sizeof(*n.slot));
	if (!n.slot)
		return ENOMEM;
	for (i = 0; i < m->size; i++)
		if (m->slot[i].used)
			*gid_slot(&n, &m->slot[i].key) = m->slot[i];
	n.live = m->live;
	free(m->slot);
	*m = n;
	return 0;
}

static int gidmap_set(struct ibckpt_gidmap *m, const union ibv_gid *key, const union ibv_gid *val)
{
	struct ibckpt_gid_ent *e;

	if (2 * (m->live + 1) > m->size && gidmap_grow(m))
		return ENOMEM;
	e = gid_slot(m, key);
	if (!e->used)
		m->live++;
	e->key = *key;
	e->val = *val;
	e->used = true;
	return 0;
}

/* *g through m, unchanged if m has no entry for it. */
static void gidmap_apply(const struct ibckpt_gidmap *m, union ibv_gid *g)
{
	const struct ibckpt_gid_ent *e;

	if (!m->live)
		return;
	e = gid_slot(m, g);
	if (e->used)
		*g = e->val;
}

static int lid_set(struct ibckpt_vidmap *m, uint16_t from, uint16_t to)
{
	uint32_t gen;

	ibckpt_vidmap_remove(m, from, 0);
	return ibckpt_vidmap_insert(m, from, to, NULL, &gen);
}

static uint16_t lid_apply(const struct ibckpt_vidmap *m, uint16_t lid)
{
	const struct ibckpt_vid *v = ibckpt_vidmap_find(m, lid, 0);

	return v ? (uint16_t)v->real : lid;
}

void ibckpt_addrs_init(struct ibckpt_addrs *a)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	ibckpt_vidmap_init(&a->lid_real);
	ibckpt_vidmap_init(&a->lid_virt);
}

void ibckpt_addrs_destroy(struct ibckpt_addrs *a)
{
	ibckpt_vidmap_destroy(&a->lid_real);
	ibckpt_vidmap_destroy(&a->lid_virt);
	free(a->gid_real.slot);
	free(a->gid_virt.slot);
	pthread_mutex_destroy(&a->lock);
}

int ibckpt_addrs_map_lid(struct ibckpt_addrs *a, uint16_t vlid, uint16_t lid)
{
	int err;

	pthread_mutex_lock(&a->lock);
	err = lid_set(&a->lid_real, vlid, lid);
	if (!err)
		err = lid_set(&a->lid_virt, lid, vlid);
	atomic_store_explicit(&a->any, true, memory_order_release);
	pthread_mutex_unlock(&a->lock);
	return err;
}

int ibckpt_addrs_map_gid(struct ibckpt_addrs *a, const union ibv_gid *vgid,
			 const union ibv_gid *gid)
{
	int err;

	pthread_mutex_lock(&a->lock);
	err = gidmap_set(&a->gid_real, vgid, gid);
	if (!err)
		err = gidmap_set(&a->gid_virt, gid, vgid);
	atomic_store_explicit(&a->any, true, memory_order_release);
	pthread_mutex_unlock(&a->lock);
	return err;
}

static void ah_attr_apply(struct ibckpt_addrs *a, struct ibv_ah_attr *attr, bool to_real)
{
	if (!atomic_load_explicit(&a->any, memory_order_acquire))
		return;
	pthread_mutex_lock(&a->lock);
	attr->dlid = lid_apply(to_real ? &a->lid_real : &a->lid_virt, attr->dlid);
	if (attr->is_global)
		gidmap_apply(to_real ? &a->gid_real : &a->gid_virt, &attr->grh.dgid);
	pthread_mutex_unlock(&a->lock);
}

void ibckpt_ah_attr_to_real(struct ibckpt_addrs *a, struct ibv_ah_attr *attr)
{
	ah_attr_apply(a, attr, true);
}

void ibckpt_ah_attr_to_virtual(struct ibckpt_addrs *a, struct ibv_ah_attr *attr)
{
	ah_attr_apply(a, attr, false);
}

uint16_t ibckpt_lid_to_virtual(struct ibckpt_addrs *a, uint16_t lid)
{
	if (!atomic_load_explicit(&a->any, memory_order_acquire))
		return lid;
	pthread_mutex_lock(&a->lock);
	lid = lid_apply(&a->lid_virt, lid);
	pthread_mutex_unlock(&a->lock);
	return lid;
}
