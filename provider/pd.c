// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Protection domains. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

struct ibv_pd *ibckpt_alloc_pd(struct ibv_context *context)
{
	struct ibckpt_context *ctx = to_ictx(context);
	struct ibckpt_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->real = ibv_alloc_pd(ctx->real);
	if (!pd->real) {
		free(pd);
		return NULL;
	}
	pd->ibv_pd.context = context;
	pd->ibv_pd.handle = pd->real->handle;
	ibckpt_obj_add(ctx, &pd->obj, IBCKPT_SNAP_PD);
	return &pd->ibv_pd;
}

int ibckpt_dealloc_pd(struct ibv_pd *ibpd)
{
	struct ibckpt_pd *pd = to_ipd(ibpd);
	struct ibckpt_context *ctx = to_ictx(ibpd->context);
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_dealloc_pd(pd->real);
	if (!ret)
		ibckpt_obj_del(ctx, &pd->obj);
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

/* Restart (restart.h): the vendor's PD goes, and comes back on the new context. */
void ibckpt_pd_release(struct ibckpt_pd *pd)
{
	if (pd->real && ibv_dealloc_pd(pd->real))
		ibckpt_dbg("release: the vendor kept a PD busy");
	pd->real = NULL;
}

int ibckpt_pd_recreate(struct ibckpt_pd *pd)
{
	pd->real = ibv_alloc_pd(to_ictx(pd->ibv_pd.context)->real);
	if (!pd->real) {
		ibckpt_restart_err("PD: %s", strerror(errno));
		return errno;
	}
	return 0;
}
