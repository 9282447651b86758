// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows. The application's MW is a shadow with the vendor's rkey.
 *
 * A type 1 bind (ibv_bind_mw) is a send-queue request the vendor posts
 * itself: it is logged on the QP's send queue first, under the queue's lock,
 * like any posted request, so that its completion retires it in order. The
 * vendor chooses the new rkey; the shadow takes it. Type 2 binds are posted
 * by the application as IBV_WR_BIND_MW requests (qp.c).
 */
#include <errno.h>
#include <stdlib.h>
#include "ibckpt.h"

struct ibv_mw *ibckpt_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ibckpt_context *ctx = to_ictx(ibpd->context);
	struct ibckpt_mw *mw = calloc(1, sizeof(*mw));
	int err;

	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->real = ibv_alloc_mw(to_ipd(ibpd)->real, type);
	if (!mw->real) {
		free(mw);
		return NULL;
	}
	mw->ibv_mw.context = ibpd->context;
	mw->ibv_mw.pd = ibpd;
	mw->ibv_mw.rkey = mw->real->rkey;
	mw->ibv_mw.handle = mw->real->handle;
	mw->ibv_mw.type = type;
	mw->bound_rkey = mw->real->rkey;
	err = ibckpt_key_add(ctx, &ctx->rkeys, mw->bound_rkey, mw, &mw->rkey_gen);
	if (err) {
		ibv_dealloc_mw(mw->real);
		free(mw);
		errno = err;
		return NULL;
	}
	ibckpt_obj_add(ctx, &mw->obj, IBCKPT_SNAP_MW);
	return &mw->ibv_mw;
}

int ibckpt_dealloc_mw(struct ibv_mw *ibmw)
{
	struct ibckpt_mw *mw = to_imw(ibmw);
	struct ibckpt_context *ctx = to_ictx(ibmw->context);
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_dealloc_mw(mw->real);
	if (!ret) {
		ibckpt_key_del(ctx, &ctx->rkeys, mw->bound_rkey, mw->rkey_gen);
		ibckpt_obj_del(ctx, &mw->obj);
	}
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/**
 * ibckpt_mw_bound() - remember a bind posted on a window
 * @mw: the shadow window
 * @bind: the bind as the application gave it (shadow MR)
 * @rkey: the rkey the window has once the bind completes
 *
 * Called with the posting QP's send-queue lock held, inside the gate.
 */
void ibckpt_mw_bound(struct ibckpt_mw *mw, const struct ibv_mw_bind_info *bind, uint32_t rkey)
{
	struct ibckpt_context *ctx = to_ictx(mw->ibv_mw.context);

	mw->bind = *bind;
	if (rkey == mw->bound_rkey)
		return;
	/* The window's key changes: so does its entry (the old key is gone). */
	ibckpt_key_del(ctx, &ctx->rkeys, mw->bound_rkey, mw->rkey_gen);
	mw->bound_rkey = rkey;
	if (ibckpt_key_add(ctx, &ctx->rkeys, rkey, mw, &mw->rkey_gen))
		mw->rkey_gen = 0;	/* no entry: the snapshot shows real rkey 0 */
}

int ibckpt_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *ibmw, struct ibv_mw_bind *mw_bind)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_mw *mw = to_imw(ibmw);
	struct ibckpt_context *ctx = qp->ctx;
	struct ibv_mw_bind rb = *mw_bind;
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = { .mw = ibmw, .rkey = ibmw->rkey, .bind_info = mw_bind->bind_info },
	};
	int ret;

	if (rb.bind_info.mr)
		rb.bind_info.mr = to_imr(rb.bind_info.mr)->real;
	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ibckpt_spin_lock(&qp->sq_lock);
	ret = ibckpt_wrlog_send(&qp->sq, &wr);
	if (!ret) {
		ret = ibv_bind_mw(qp->real, mw->real, &rb);
		if (ret) {
			ibckpt_wrlog_unpost(&qp->sq, 1);
		} else {
			/* The vendor picked the window's next rkey. */
			ibmw->rkey = mw->real->rkey;
			ibckpt_wrlog_newest(&qp->sq, 1)->bind_mw.rkey = ibmw->rkey;
			ibckpt_mw_bound(mw, &mw_bind->bind_info, ibmw->rkey);
		}
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_gate_exit(&ctx->gate);
	IBCKPT_COUNT(ctx, post_send, 1);
	return ret;
}
