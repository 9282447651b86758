// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions. Virtual lkey/rkey equal the real ones at registration, so
 * posted SGEs and remote keys pass through untranslated until a restart;
 * both are entered in the context's key tables (keys.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

/*
 * The vendor's MR for a new shadow, with keys that are nobody's virtual
 * keys (see create_fresh_qp() in qp.c); the vendor is asked again while it
 * hands out taken ones, which are held meanwhile.
 */
static struct ibv_mr *reg_fresh_mr(struct ibckpt_context *ctx, struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, unsigned int access)
{
	struct ibv_mr *held[IBCKPT_ID_TRIES], *m;
	unsigned int n = 0;

	for (;;) {
		m = ibv_reg_mr_iova2(pd, addr, length, hca_va, access);
		if (!m || (!ibckpt_id_taken(ctx, IBCKPT_ID_RKEY, m->lkey) &&
			   !ibckpt_id_taken(ctx, IBCKPT_ID_RKEY, m->rkey)))
			break;
		ibckpt_dbg("reg_mr: key %#x/%#x is a virtual key of the job: another",
			   m->lkey, m->rkey);
		if (n == IBCKPT_ID_TRIES) {
			ibv_dereg_mr(m);
			m = NULL;
			errno = EADDRINUSE;
			break;
		}
		held[n++] = m;
	}
	while (n)
		if (ibv_dereg_mr(held[--n]))
			ibckpt_dbg("reg_mr: an MR held aside could not be deregistered");
	return m;
}

struct ibv_mr *ibckpt_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
			     int access)
{
	struct ibckpt_context *ctx = to_ictx(ibpd->context);
	struct ibckpt_pd *pd = to_ipd(ibpd);
	struct ibckpt_mr *mr = calloc(1, sizeof(*mr));
	int err;

	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->real = reg_fresh_mr(ctx, pd->real, addr, length, hca_va, (unsigned int)access);
	if (!mr->real) {
		free(mr);
		return NULL;
	}
	mr->vmr.ibv_mr.context = ibpd->context;
	mr->vmr.ibv_mr.pd = ibpd;
	mr->vmr.ibv_mr.addr = addr;
	mr->vmr.ibv_mr.length = length;
	mr->vmr.ibv_mr.handle = mr->real->handle;
	mr->vmr.ibv_mr.lkey = mr->real->lkey;
	mr->vmr.ibv_mr.rkey = mr->real->rkey;
	mr->vmr.mr_type = IBV_MR_TYPE_MR;
	mr->vmr.access = access;
	mr->iova = hca_va;
	err = ibckpt_key_add(ctx, &ctx->lkeys, mr->real->lkey, mr, &mr->lkey_gen);
	if (!err) {
		err = ibckpt_key_add(ctx, &ctx->rkeys, mr->real->rkey, mr, &mr->rkey_gen);
		if (err)
			ibckpt_key_del(ctx, &ctx->lkeys, mr->real->lkey, mr->lkey_gen);
	}
	if (err) {
		ibv_dereg_mr(mr->real);
		free(mr);
		errno = err;
		return NULL;
	}
	ibckpt_obj_add(ctx, &mr->obj, IBCKPT_SNAP_MR);
	return &mr->vmr.ibv_mr;
}

int ibckpt_dereg_mr(struct verbs_mr *vmr)
{
	struct ibckpt_mr *mr = to_imr(&vmr->ibv_mr);
	struct ibckpt_context *ctx = to_ictx(vmr->ibv_mr.context);
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_dereg_mr(mr->real);
	if (!ret) {
		if (atomic_load_explicit(&ctx->mws, memory_order_relaxed)) {
			pthread_mutex_lock(&ctx->lock);	/* a window bound to it: unknown */
			ibckpt_mw_mr_gone(ctx, mr);
			pthread_mutex_unlock(&ctx->lock);
		}
		ibckpt_key_del(ctx, &ctx->lkeys, vmr->ibv_mr.lkey, mr->lkey_gen);
		ibckpt_key_del(ctx, &ctx->rkeys, vmr->ibv_mr.rkey, mr->rkey_gen);
		ibckpt_obj_del(ctx, &mr->obj);
	}
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(mr);
	return 0;
}

/* Restart (restart.h): unpinned at release; at the same address after. */
void ibckpt_mr_release(struct ibckpt_mr *mr)
{
	if (mr->real && ibv_dereg_mr(mr->real))
		ibckpt_dbg("release: the vendor kept an MR busy");
	mr->real = NULL;
}

/*
 * The same range, I/O address and access, in the same PD: the application
 * and its peers keep the keys they know, which now stand for the new ones.
 */
int ibckpt_mr_recreate(struct ibckpt_mr *mr)
{
	struct ibv_mr *m = &mr->vmr.ibv_mr;
	struct ibckpt_context *ctx = to_ictx(m->context);
	int err;

	mr->real = ibv_reg_mr_iova2(to_ipd(m->pd)->real, m->addr, m->length, mr->iova,
				    (unsigned int)mr->vmr.access);
	if (!mr->real) {
		err = errno;
		ibckpt_restart_err("MR at %p (%zu bytes): %s", m->addr, m->length,
				   strerror(err));
		return err;
	}
	ibckpt_spin_lock(&ctx->key_lock);
	ibckpt_vidmap_set_real(&ctx->lkeys, m->lkey, mr->real->lkey);
	ibckpt_vidmap_set_real(&ctx->rkeys, m->rkey, mr->real->rkey);
	ibckpt_keys_moved(ctx);
	ibckpt_spin_unlock(&ctx->key_lock);
	m->handle = mr->real->handle;
	return ibckpt_ident_add(IBCKPT_ID_RKEY, ctx->ident->vdev, m->rkey, mr->real->rkey,
				NULL, NULL);
}
