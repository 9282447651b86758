// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The job's identities after a reacquire: for every device of every process
 * (by the node GUID the application first knew it by), which QPN, rkey, GID
 * and LID each virtual one is now.
 *
 * QPNs and keys are per device, and two devices hand out the same numbers
 * (two rxe devices both start their QPNs at 17): a peer's QPN or rkey is
 * only meaningful with its device, which the address vector that reaches it
 * names (a GID, or a LID without GRH).
 *
 * Written by REMAP with every gate closed, read by the translating posts
 * afterwards: no lock. Open addressing, at most half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

struct remap_ent {
	uint64_t vdev;
	uint32_t kind, vid, real;
	bool used;
};

static struct remap_ent *tab;
static uint32_t tab_size;		/* power of two */
/*
 * QPNs the other way, real -> virtual, for a UD completion's source QP:
 * the completion does not say which device sent it, so a real QPN two
 * devices of the job hand out is ambiguous (not translated).
 */
struct rqpn_ent {
	uint32_t real, vid;
	bool used, ambiguous;
};

static struct rqpn_ent *rtab;
static uint32_t rtab_size;		/* power of two */
static struct ibckpt_ident *addrs;	/* GID and LID entries */
static uint32_t naddrs;

static uint32_t remap_hash(uint32_t kind, uint64_t vdev, uint32_t vid)
{
	uint64_t h = vdev * 0x9e3779b97f4a7c15ull ^ ((uint64_t)kind << 32 | vid);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ h >> 32);
}

void ibckpt_remap_clear(void)
{
	free(tab);
	free(addrs);
	free(rtab);
	tab = NULL;
	addrs = NULL;
	rtab = NULL;
	tab_size = naddrs = rtab_size = 0;
}

static uint32_t rqpn_hash(uint32_t real)
{
	return remap_hash(IBCKPT_ID_QPN, 0, real);
}

static void rqpn_add(uint32_t real, uint32_t vid)
{
	uint32_t h;

	for (h = rqpn_hash(real) & (rtab_size - 1); rtab[h].used; h = (h + 1) & (rtab_size - 1)) {
		if (rtab[h].real == real) {
			rtab[h].ambiguous |= rtab[h].vid != vid;
			return;
		}
	}
	rtab[h] = (struct rqpn_ent){ .real = real, .vid = vid, .used = true };
}

/**
 * ibckpt_remap_src_qp() - the virtual QPN of a peer's QP by its real one
 * @real: a UD completion's source QP
 * @vid: set to the QPN the application knows it by
 *
 * Return: false if the job does not know @real, or knows it on two devices.
 */
bool ibckpt_remap_src_qp(uint32_t real, uint32_t *vid)
{
	uint32_t h;

	if (!rtab_size)
		return false;
	for (h = rqpn_hash(real) & (rtab_size - 1); rtab[h].used; h = (h + 1) & (rtab_size - 1)) {
		if (rtab[h].real == real) {
			*vid = rtab[h].vid;
			return !rtab[h].ambiguous;
		}
	}
	return false;
}

/* Under REMAP: tab's entry for (kind, vdev, vid), free or that one. */
static struct remap_ent *remap_slot(uint32_t kind, uint64_t vdev, uint32_t vid)
{
	uint32_t h;

	for (h = remap_hash(kind, vdev, vid) & (tab_size - 1); tab[h].used;
	     h = (h + 1) & (tab_size - 1))
		if (tab[h].kind == kind && tab[h].vdev == vdev && tab[h].vid == vid)
			break;
	return &tab[h];
}

/**
 * ibckpt_remap_set() - install the job's identities
 * @id: every process's entries, as REMAP carries them
 * @n: how many
 *
 * Return: 0, EINVAL for an unknown kind, ENOMEM.
 */
int ibckpt_remap_set(const struct ibckpt_ident *id, uint32_t n)
{
	uint32_t i, size = 16, nent = n;

	ibckpt_remap_clear();
	for (i = 0; i < n; i++)		/* an MR's key has an entry by its index too */
		nent += id[i].kind == IBCKPT_ID_RKEY;
	while (size < 2 * nent)
		size *= 2;
	tab = calloc(size, sizeof(*tab));
	addrs = calloc(n ? n : 1, sizeof(*addrs));
	rtab = calloc(size, sizeof(*rtab));
	if (!tab || !addrs || !rtab) {
		ibckpt_remap_clear();
		return ENOMEM;
	}
	tab_size = rtab_size = size;
	for (i = 0; i < n; i++) {
		const struct ibckpt_ident *e = &id[i];
		struct ibckpt_ident mw;
		struct remap_ent *t;

		switch (e->kind) {
		case IBCKPT_ID_GID:
		case IBCKPT_ID_LID:
			addrs[naddrs++] = *e;
			if (e->kind == IBCKPT_ID_GID)
				continue;
			break;
		case IBCKPT_ID_QPN:
		case IBCKPT_ID_RKEY:
			break;
		case IBCKPT_ID_MW:	/* by index: real index and key offset */
			mw = (struct ibckpt_ident){
				.kind = e->kind, .vdev = e->vdev, .vid = e->vid >> 8,
				.real = (e->real & ~0xffu) | ((e->real - e->vid) & 0xff) };
			e = &mw;
			break;
		default:
			ibckpt_remap_clear();
			return EINVAL;
		}
		t = remap_slot(e->kind, e->vdev, e->vid);
		*t = (struct remap_ent){ .vdev = e->vdev, .kind = e->kind, .vid = e->vid,
					 .real = e->real, .used = true };
		if (e->kind == IBCKPT_ID_QPN)
			rqpn_add(e->real, e->vid);
		if (e->kind != IBCKPT_ID_RKEY)
			continue;
		/*
		 * Its index: a new window must not take it (its binds may give
		 * it the MR's key byte, which peers translate to the MR), unless
		 * every MR key of the job on that index stands for itself.
		 */
		t = remap_slot(IBCKPT_ID_RKEY_INDEX, e->vdev, e->vid >> 8);
		if (!t->used)
			*t = (struct remap_ent){ .vdev = e->vdev, .kind = IBCKPT_ID_RKEY_INDEX,
						 .vid = e->vid >> 8, .used = true };
		t->real |= e->real != e->vid;
	}
	return 0;
}

/**
 * ibckpt_remap_find() - what a peer's identity is now
 * @kind: IBCKPT_ID_QPN, IBCKPT_ID_RKEY or IBCKPT_ID_LID
 * @vdev: the peer's device
 * @vid: the identity the application knows
 * @real: set to the identity now
 *
 * Return: false if the job does not know it (a peer outside the job).
 */
bool ibckpt_remap_find(uint32_t kind, uint64_t vdev, uint32_t vid, uint32_t *real)
{
	uint32_t h;

	if (!tab_size)
		return false;
	for (h = remap_hash(kind, vdev, vid) & (tab_size - 1); tab[h].used;
	     h = (h + 1) & (tab_size - 1)) {
		if (tab[h].kind == kind && tab[h].vdev == vdev && tab[h].vid == vid) {
			*real = tab[h].real;
			return true;
		}
	}
	return false;
}

/**
 * ibckpt_remap_rkey() - what a peer's rkey is now
 * @vdev: the peer's device
 * @vkey: an rkey its application handed out: an MR's, or a window's with
 *	whatever key byte its binds gave it since
 * @real: set to the key to name now
 *
 * An MR's key is found whole; a window's by its index, its key byte moved
 * by the window's offset (IBCKPT_ID_MW). Two lookups at most: O(1).
 * Return: false if the job does not know it.
 */
bool ibckpt_remap_rkey(uint64_t vdev, uint32_t vkey, uint32_t *real)
{
	uint32_t r;

	if (ibckpt_remap_find(IBCKPT_ID_RKEY, vdev, vkey, real))
		return true;
	if (!ibckpt_remap_find(IBCKPT_ID_MW, vdev, vkey >> 8, &r))
		return false;
	*real = (r & ~0xffu) | ((vkey + r) & 0xff);
	return true;
}

/* Has the process been through a REMAP (a table of the job's identities)? */
bool ibckpt_remap_active(void)
{
	return tab_size != 0;
}

/**
 * ibckpt_remap_taken() - does the job know @id as another object's virtual ID?
 * @kind: IBCKPT_ID_QPN, IBCKPT_ID_RKEY, IBCKPT_ID_MW (@id's index taken
 *	by a window's), or IBCKPT_ID_RKEY_INDEX (@id's index taken by an MR's
 *	key)
 * @vdev: the device it is on
 * @id: an ID the vendor just handed out for a new object
 *
 * A new object's virtual ID is its real one. If the job's table has @id as
 * a virtual ID of that device standing for another real one (an object
 * restored, destroyed since or not), a peer would translate @id to that
 * object: the new object must not keep it.
 * Return: true if it is taken.
 */
bool ibckpt_remap_taken(uint32_t kind, uint64_t vdev, uint32_t id)
{
	uint32_t real;

	if (kind == IBCKPT_ID_MW)	/* a window standing for itself: same index, same byte */
		return ibckpt_remap_find(kind, vdev, id >> 8, &real) && real != (id & ~0xffu);
	if (kind == IBCKPT_ID_RKEY_INDEX)
		return ibckpt_remap_find(kind, vdev, id >> 8, &real) && real;
	return ibckpt_remap_find(kind, vdev, id, &real) && real != id;
}

/**
 * ibckpt_remap_dev_of() - the device an address vector reaches
 * @ah: a destination as the application gave it (virtual)
 *
 * Return: the device's vdev, 0 if no process of the job has that address.
 */
uint64_t ibckpt_remap_dev_of(const struct ibv_ah_attr *ah)
{
	uint32_t i;

	for (i = 0; i < naddrs; i++) {
		const struct ibckpt_ident *e = &addrs[i];

		if (ah->is_global ? e->kind == IBCKPT_ID_GID &&
				    !memcmp(e->vgid, ah->grh.dgid.raw, 16) :
				    e->kind == IBCKPT_ID_LID && e->vid == ah->dlid)
			return e->vdev;
	}
	return 0;
}

/**
 * ibckpt_remap_addrs() - point a context's address translation at the job's
 * @a: the context's tables (addr.h)
 *
 * Every GID and LID of the job, the context's own included: the
 * application keeps naming the ones it knew. Return: 0 or ENOMEM (an
 * address left out would reach the virtual one).
 */
int ibckpt_remap_addrs(struct ibckpt_addrs *a)
{
	uint32_t i;
	int err = 0;

	for (i = 0; i < naddrs && !err; i++) {
		const struct ibckpt_ident *e = &addrs[i];

		if (e->kind == IBCKPT_ID_GID)
			err = ibckpt_addrs_map_gid(a, (const union ibv_gid *)e->vgid,
						   (const union ibv_gid *)e->gid);
		else
			err = ibckpt_addrs_map_lid(a, (uint16_t)e->vid, (uint16_t)e->real);
	}
	return err;
}
