// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Virtual memory keys of one context: the lkeys and rkeys of its MRs and the
 * rkeys of its memory windows, each virtual key -> (real key, shadow), with
 * a generation per entry (vidmap.h). A virtual key equals the real one when
 * it is handed out, so the data path never looks here; the snapshot reads
 * the real keys through these tables, and a restart rewrites them.
 *
 * Locking: ctx->key_lock protects both tables. It is taken alone, or inside
 * a send queue's lock (a posted window bind, a translation cache's miss),
 * never the other way round. Every change of lkeys moves ctx->key_stamp
 * under it (ibckpt_keys_moved()): the queues' caches of translated lkeys
 * (qp_post.c) hold only while it stands still.
 */
#include <errno.h>
#include "ibckpt.h"

/**
 * ibckpt_key_add() - enter a key handed out by the vendor
 * @ctx: the shadow context
 * @map: &ctx->lkeys or &ctx->rkeys
 * @key: the key, virtual = real
 * @obj: the shadow MR or MW holding it
 * @gen: set to the entry's generation, for ibckpt_key_del()
 *
 * A live entry with the same key belonged to an object whose key the
 * vendor has since given out again (a window rebound, a bind that failed
 * after it was posted): the newer holder wins, and the older one's
 * generation no longer matches. Return: 0 or ENOMEM.
 */
int ibckpt_key_add(struct ibckpt_context *ctx, struct ibckpt_vidmap *map, uint32_t key,
		   void *obj, uint32_t *gen)
{
	int err;

	ibckpt_spin_lock(&ctx->key_lock);
	err = ibckpt_vidmap_insert(map, key, key, obj, gen);
	if (err == EEXIST) {
		ibckpt_dbg("key %#x handed out again: the newer holder takes it", key);
		ibckpt_vidmap_remove(map, key, 0);
		err = ibckpt_vidmap_insert(map, key, key, obj, gen);
	}
	ibckpt_keys_moved(ctx);
	ibckpt_spin_unlock(&ctx->key_lock);
	return err;
}

/* Removes @key if it is still the entry of generation @gen. */
void ibckpt_key_del(struct ibckpt_context *ctx, struct ibckpt_vidmap *map, uint32_t key,
		    uint32_t gen)
{
	ibckpt_spin_lock(&ctx->key_lock);
	ibckpt_vidmap_remove(map, key, gen);
	ibckpt_keys_moved(ctx);
	ibckpt_spin_unlock(&ctx->key_lock);
}

/**
 * ibckpt_keys_moved() - the context's keys changed: cached translations go
 * @ctx: the context; its key_lock held
 *
 * Moves key_stamp by two: odd from 1, so never the 0 of an empty cache.
 * Release: a cache filled at the new stamp read the table as changed.
 */
void ibckpt_keys_moved(struct ibckpt_context *ctx)
{
	atomic_fetch_add_explicit(&ctx->key_stamp, 2, memory_order_release);
}

/* The real key behind virtual @key of generation @gen, 0 if there is none. */
uint32_t ibckpt_key_real(struct ibckpt_context *ctx, struct ibckpt_vidmap *map, uint32_t key,
			 uint32_t gen)
{
	uint32_t real;

	ibckpt_spin_lock(&ctx->key_lock);
	real = ibckpt_vidmap_real(map, key, gen);
	ibckpt_spin_unlock(&ctx->key_lock);
	return real;
}
