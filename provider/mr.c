// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions. Virtual lkey/rkey equal the real ones at registration, so
 * posted SGEs and remote keys pass through untranslated until a restart.
 */
#include <errno.h>
#include <stdlib.h>
#include "ibckpt.h"

struct ibv_mr *ibckpt_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
			     int access)
{
	struct ibckpt_pd *pd = to_ipd(ibpd);
	struct ibckpt_mr *mr = calloc(1, sizeof(*mr));

	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->real = ibv_reg_mr_iova2(pd->real, addr, length, hca_va, (unsigned int)access);
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
	ibckpt_obj_add(to_ictx(ibpd->context), &mr->obj, IBCKPT_SNAP_MR);
	return &mr->vmr.ibv_mr;
}

int ibckpt_dereg_mr(struct verbs_mr *vmr)
{
	struct ibckpt_mr *mr = to_imr(&vmr->ibv_mr);
	struct ibckpt_context *ctx = to_ictx(vmr->ibv_mr.context);
	int ret;

	ibckpt_gate_enter(&ctx->gate);
	ret = ibv_dereg_mr(mr->real);
	if (!ret)
		ibckpt_obj_del(ctx, &mr->obj);
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(mr);
	return 0;
}
