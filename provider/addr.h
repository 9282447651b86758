/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Virtual LIDs and GIDs of a context.
 *
 * The application learns addresses (its port's LID from query_port, GIDs
 * from the kernel) and names them in address vectors: modify_qp's primary
 * and alternate paths, create_ah. After a restart on other ports they are
 * no longer the real ones, its own nor its peers'. So every address vector
 * the application gives goes to the vendor translated virtual -> real, and
 * every address the vendor gives back (query_port's LIDs, query_qp's
 * vectors) comes to the application real -> virtual. A restart rewrites the
 * mappings; an address without one is its own translation, which is all
 * there is until then ('any' is false, and nothing is looked up).
 *
 * Local GIDs cannot be virtualised by a provider: ibv_query_gid() asks the
 * kernel through libibverbs, not the provider (rdma-core 44).
 *
 * Locking: the tables change under 'lock' and are read under it; only
 * control-path verbs translate (never a post or a poll).
 */
#ifndef IBCKPT_ADDR_H
#define IBCKPT_ADDR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <infiniband/verbs.h>
#include "vidmap.h"

/* GID -> GID, open addressing, at most half full; entries are replaced, never removed. */
struct ibckpt_gidmap {
	struct ibckpt_gid_ent {
		union ibv_gid key, val;
		bool used;
	} *slot;
	uint32_t size;			/* power of two, 0 before the first set */
	uint32_t live;
};

struct ibckpt_addrs {
	pthread_mutex_t lock;
	atomic_bool any;		/* a mapping was ever set */
	struct ibckpt_vidmap lid_real;	/* virtual LID -> real */
	struct ibckpt_vidmap lid_virt;	/* real LID -> virtual */
	struct ibckpt_gidmap gid_real;	/* virtual GID -> real */
	struct ibckpt_gidmap gid_virt;	/* real GID -> virtual */
};

void ibckpt_addrs_init(struct ibckpt_addrs *a);
void ibckpt_addrs_destroy(struct ibckpt_addrs *a);

/* A restart's mapping: the application's vlid/vgid stand for lid/gid now. 0 or ENOMEM. */
int ibckpt_addrs_map_lid(struct ibckpt_addrs *a, uint16_t vlid, uint16_t lid);
int ibckpt_addrs_map_gid(struct ibckpt_addrs *a, const union ibv_gid *vgid,
			 const union ibv_gid *gid);

/* An address vector's destination (dlid; dgid if global), either way. */
void ibckpt_ah_attr_to_real(struct ibckpt_addrs *a, struct ibv_ah_attr *attr);
void ibckpt_ah_attr_to_virtual(struct ibckpt_addrs *a, struct ibv_ah_attr *attr);

/* A LID the vendor reports (a port's own, its SM's), as the application knows it. */
uint16_t ibckpt_lid_to_virtual(struct ibckpt_addrs *a, uint16_t lid);

#endif
