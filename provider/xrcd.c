// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC domains. The vendor's domain is opened with the application's file
 * descriptor and flags, so processes sharing a domain through a file share
 * the vendor's, with or without ibckpt on either side.
 */
#include <errno.h>
#include <stdlib.h>
#include "ibckpt.h"

struct ibv_xrcd *ibckpt_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	struct ibckpt_context *ctx = to_ictx(context);
	struct ibckpt_xrcd *xrcd = calloc(1, sizeof(*xrcd));

	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	xrcd->real = ibv_open_xrcd(ctx->real, attr);
	if (!xrcd->real) {
		free(xrcd);
		return NULL;
	}
	xrcd->oflags = attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS ? attr->oflags : 0;
	xrcd->ibv_xrcd.context = context;
	ibckpt_obj_add(ctx, &xrcd->obj, IBCKPT_SNAP_XRCD);
	return &xrcd->ibv_xrcd;
}

int ibckpt_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct ibckpt_xrcd *xrcd = to_ixrcd(ibxrcd);
	struct ibckpt_context *ctx = to_ictx(ibxrcd->context);
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_close_xrcd(xrcd->real);
	if (!ret)
		ibckpt_obj_del(ctx, &xrcd->obj);
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(xrcd);
	return 0;
}
