// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles: the application's AH names a shadow; UD sends swap in the
 * real one. The vendor's is created with the destination translated to the
 * real address (addr.h); the shadow keeps the application's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

struct ibv_ah *ibckpt_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct ibckpt_ah *ah = calloc(1, sizeof(*ah));
	struct ibv_ah_attr ra = *attr;

	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ibckpt_ah_attr_to_real(&to_ictx(ibpd->context)->addrs, &ra);
	ah->real = ibv_create_ah(to_ipd(ibpd)->real, &ra);
	if (!ah->real) {
		free(ah);
		return NULL;
	}
	ah->ibv_ah.context = ibpd->context;
	ah->ibv_ah.pd = ibpd;
	ah->ibv_ah.handle = ah->real->handle;
	ah->attr = *attr;
	if (to_ictx(ibpd->context)->remapped)	/* UD destinations to translate (restart.h) */
		ah->peer_vdev = ibckpt_remap_dev_of(attr);
	ibckpt_obj_add(to_ictx(ibpd->context), &ah->obj, IBCKPT_SNAP_AH);
	return &ah->ibv_ah;
}

int ibckpt_destroy_ah(struct ibv_ah *ibah)
{
	struct ibckpt_ah *ah = to_iah(ibah);
	struct ibckpt_context *ctx = to_ictx(ibah->context);
	int ret;

	/* Destroys run inside the gate: a snapshot walks the objects while closed. */
	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_destroy_ah(ah->real);
	if (!ret)
		ibckpt_obj_del(ctx, &ah->obj);
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(ah);
	return 0;
}

/* Restart (restart.h): re-created at REMAP, once its destination's address is known. */
void ibckpt_ah_release(struct ibckpt_ah *ah)
{
	if (ah->real && ibv_destroy_ah(ah->real))
		ibckpt_dbg("release: the vendor kept an AH busy");
	ah->real = NULL;
}

int ibckpt_ah_recreate(struct ibckpt_ah *ah)
{
	struct ibckpt_context *ctx = to_ictx(ah->ibv_ah.context);
	struct ibv_ah_attr ra = ah->attr;

	ibckpt_ah_attr_to_real(&ctx->addrs, &ra);
	ah->real = ibv_create_ah(to_ipd(ah->ibv_ah.pd)->real, &ra);
	if (!ah->real) {
		ibckpt_restart_err("AH: %s", strerror(errno));
		return errno;
	}
	ah->ibv_ah.handle = ah->real->handle;
	ah->peer_vdev = ibckpt_remap_dev_of(&ah->attr);
	return 0;
}
