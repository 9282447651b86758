// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows (ibckpt.h, struct ibckpt_mw; restart.rst, "Memory
 * windows").
 *
 * A type 1 bind (ibv_bind_mw) is a send-queue request the vendor posts
 * itself: it is logged on the QP's send queue first, under the queue's lock,
 * like any posted request, so that its completion retires it in order. The
 * vendor chooses the new key byte. Type 2 binds, and type 1 ones the
 * application posts itself, are IBV_WR_BIND_MW requests (qp_post.c, qp_ex_post.c)
 * naming the key byte. Every bind and local invalidate posted here sets the
 * window's state (ibckpt_mw_moved()); a peer's send with invalidate sets it
 * when its receive completion is polled or drained (ibckpt_mw_wc()); one that
 * fails makes it unknown (ibckpt_mw_failed()) until the next one. At a
 * release every request has completed, so the state recorded is the
 * window's, or known to be unknown.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

#define MW_INDEX(k)	((k) >> 8)
#define IBCKPT_MW_BIND_MS	2000	/* a bind at a reacquire, waited for at most */

/* A key @vkey of the window (its key byte moved by binds) as the vendor knows it. */
static uint32_t mw_real_key(const struct ibckpt_mw *mw, uint32_t vkey)
{
	return (mw->ridx << 8) | ((vkey + mw->key_off) & 0xff);
}

/* ... and a vendor's key of it as the application knows it. */
static uint32_t mw_virt_key(const struct ibckpt_mw *mw, uint32_t rkey)
{
	return (mw->vrkey & ~0xffu) | ((rkey - mw->key_off) & 0xff);
}

/*
 * Under key_lock: the window's entry in @map (ctx->mw_virt by its virtual
 * index, ctx->mw_real by its real one), *@gen its generation. An entry a
 * window deallocated behind our back left is ours now (as ibckpt_key_add():
 * the newer holder wins).
 */
static int mw_map_add(struct ibckpt_vidmap *map, uint32_t idx, uint32_t other,
		      struct ibckpt_mw *mw, uint32_t *gen)
{
	int err = ibckpt_vidmap_insert(map, idx, other, mw, gen);

	if (err == EEXIST) {
		ibckpt_vidmap_remove(map, idx, 0);
		err = ibckpt_vidmap_insert(map, idx, other, mw, gen);
	}
	return err;
}

/* Under key_lock: the window's real index in ctx->mw_real. */
static int mw_real_add(struct ibckpt_context *ctx, struct ibckpt_mw *mw)
{
	return mw_map_add(&ctx->mw_real, mw->ridx, MW_INDEX(mw->vrkey), mw, &mw->ridx_gen);
}

static void mw_real_del(struct ibckpt_context *ctx, struct ibckpt_mw *mw)
{
	if (mw->real)
		ibckpt_vidmap_remove(&ctx->mw_real, mw->ridx, mw->ridx_gen);
}

/* Under key_lock: both entries, or none (an error). */
static int mw_maps_add(struct ibckpt_context *ctx, struct ibckpt_mw *mw)
{
	int err = mw_map_add(&ctx->mw_virt, MW_INDEX(mw->vrkey), MW_INDEX(mw->vrkey), mw,
			     &mw->vidx_gen);

	if (!err) {
		err = mw_real_add(ctx, mw);
		if (err)
			ibckpt_vidmap_remove(&ctx->mw_virt, MW_INDEX(mw->vrkey), mw->vidx_gen);
	}
	return err;
}

/*
 * The vendor's window for a new shadow, with an index that is nobody's
 * virtual one (see reg_fresh_mr() in mr.c); taken ones are held meanwhile.
 */
static struct ibv_mw *alloc_fresh_mw(struct ibckpt_context *ctx, struct ibv_pd *pd,
				     enum ibv_mw_type type)
{
	struct ibv_mw *held[IBCKPT_ID_TRIES], *m;
	unsigned int n = 0;

	for (;;) {
		m = ibv_alloc_mw(pd, type);
		if (!m || !ibckpt_id_taken(ctx, IBCKPT_ID_MW, m->rkey))
			break;
		ibckpt_dbg("alloc_mw: key %#x is a virtual key of the job: another", m->rkey);
		if (n == IBCKPT_ID_TRIES) {
			ibv_dealloc_mw(m);
			m = NULL;
			errno = EADDRINUSE;
			break;
		}
		held[n++] = m;
	}
	while (n)
		if (ibv_dealloc_mw(held[--n]))
			ibckpt_dbg("alloc_mw: a window held aside could not be deallocated");
	return m;
}

struct ibv_mw *ibckpt_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ibckpt_context *ctx = to_ictx(ibpd->context);
	struct ibckpt_mw *mw = calloc(1, sizeof(*mw));
	int err;

	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->real = alloc_fresh_mw(ctx, to_ipd(ibpd)->real, type);
	if (!mw->real) {
		free(mw);
		return NULL;
	}
	mw->ibv_mw.context = ibpd->context;
	mw->ibv_mw.pd = ibpd;
	mw->ibv_mw.rkey = mw->real->rkey;
	mw->ibv_mw.handle = mw->real->handle;
	mw->ibv_mw.type = type;
	mw->vrkey = mw->real->rkey;
	mw->ridx = MW_INDEX(mw->real->rkey);
	ibckpt_spin_lock(&ctx->key_lock);
	err = mw_maps_add(ctx, mw);
	ibckpt_spin_unlock(&ctx->key_lock);
	if (err) {
		ibv_dealloc_mw(mw->real);
		free(mw);
		errno = err;
		return NULL;
	}
	ibckpt_obj_add(ctx, &mw->obj, IBCKPT_SNAP_MW);
	atomic_fetch_add_explicit(&ctx->mws, 1, memory_order_relaxed);
	/* a peer's send with invalidate can change a type 2 window: polls look */
	if (type == IBV_MW_TYPE_2) {
		pthread_mutex_lock(&ctx->lock);
		if (!ctx->mw2++)
			ibckpt_ctx_slow_polls(ctx, IBCKPT_CQ_WINDOWS, true);
		pthread_mutex_unlock(&ctx->lock);
	}
	return &mw->ibv_mw;
}

int ibckpt_dealloc_mw(struct ibv_mw *ibmw)
{
	struct ibckpt_mw *mw = to_imw(ibmw);
	struct ibckpt_context *ctx = to_ictx(ibmw->context);
	int ret, err;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	/*
	 * Out of the tables first: a poller or a post that finds a window
	 * uses it under key_lock, and must not find a window the vendor
	 * freed. Back in them if the vendor keeps it.
	 */
	ibckpt_spin_lock(&ctx->key_lock);
	ibckpt_vidmap_remove(&ctx->mw_virt, MW_INDEX(mw->vrkey), mw->vidx_gen);
	mw_real_del(ctx, mw);
	ibckpt_spin_unlock(&ctx->key_lock);
	ret = ibv_dealloc_mw(mw->real);
	if (ret) {
		ibckpt_spin_lock(&ctx->key_lock);
		err = mw_maps_add(ctx, mw);
		ibckpt_spin_unlock(&ctx->key_lock);
		if (err)
			ibckpt_dbg("dealloc_mw: the vendor kept window %#x, its keys are not "
				   "translated any more: %s", mw->vrkey, strerror(err));
	} else {
		mw->real = NULL;
		ibckpt_obj_del(ctx, &mw->obj);
		atomic_fetch_sub_explicit(&ctx->mws, 1, memory_order_relaxed);
		if (ibmw->type == IBV_MW_TYPE_2) {	/* the last one: polls stop looking */
			pthread_mutex_lock(&ctx->lock);
			if (!--ctx->mw2)
				ibckpt_ctx_slow_polls(ctx, IBCKPT_CQ_WINDOWS, false);
			pthread_mutex_unlock(&ctx->lock);
		}
	}
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/**
 * ibckpt_mw_find() - the context's window a key names, by its index
 * @ctx: the context
 * @rkey: a key as the application knows it, or (@real) as the vendor does
 * @real: which
 *
 * Context: key_lock held (the window is not freed meanwhile).
 * Return: the window, or NULL if @rkey is no window's of @ctx.
 */
struct ibckpt_mw *ibckpt_mw_find(struct ibckpt_context *ctx, uint32_t rkey, bool real)
{
	const struct ibckpt_vid *v = ibckpt_vidmap_find(real ? &ctx->mw_real : &ctx->mw_virt,
							MW_INDEX(rkey), 0);

	return v ? v->obj : NULL;
}

/**
 * ibckpt_mw_bound() - remember a bind posted on a window
 * @mw: the shadow window
 * @bind: the bind as the application gave it (shadow MR); none, or zero
 *	bytes, unbinds
 * @rkey: the rkey the window has once the bind completes (virtual; its key
 *	byte, on the window's index)
 * @qp: the QP it was posted on
 *
 * Called with the posting QP's send-queue lock held, the queue open.
 */
void ibckpt_mw_bound(struct ibckpt_mw *mw, const struct ibv_mw_bind_info *bind, uint32_t rkey,
		     struct ibckpt_qp *qp)
{
	struct ibckpt_context *ctx = to_ictx(mw->ibv_mw.context);
	bool bound = bind->mr && bind->length;

	ibckpt_spin_lock(&ctx->key_lock);
	mw->bind = *bind;
	if (!bound)
		mw->bind.mr = NULL;
	/* the vendor takes the key byte alone: the index stays the window's */
	mw->vrkey = (mw->vrkey & ~0xffu) | (rkey & 0xff);
	mw->qp = bound && mw->ibv_mw.type == IBV_MW_TYPE_2 ? qp : NULL;
	mw->unsure = false;	/* this bind sets the state: unknown again only if it fails */
	ibckpt_spin_unlock(&ctx->key_lock);
}

/*
 * The vendor's window before a bind is posted on it: its key field is the
 * one the application's ibv_mw holds, translated. A vendor names the window
 * by that field (rdma-core 44's rxe posts it as the key the device must
 * hold, and Linux 6.1's rxe fails the bind otherwise), so it is what the
 * vendor would read without ibckpt: whatever the application keeps there,
 * as its binds complete or fail. A bind never moves it at its post, which
 * would leave it at a key the device never took if the bind failed.
 */
static void mw_real_key_set(struct ibckpt_mw *mw)
{
	mw->real->rkey = mw_real_key(mw, mw->ibv_mw.rkey);
}

/*
 * A bind request in the vendor's terms: its window and MR, the key byte it
 * names moved by the window's offset. Under the posting QP's send-queue lock.
 */
void ibckpt_mw_wr_real(const struct ibv_send_wr *src, struct ibv_send_wr *c)
{
	struct ibckpt_mw *mw = to_imw(src->bind_mw.mw);

	mw_real_key_set(mw);
	c->bind_mw.mw = mw->real;
	c->bind_mw.rkey = mw_real_key(mw, src->bind_mw.rkey);
	if (src->bind_mw.bind_info.mr)
		c->bind_mw.bind_info.mr = to_imr(src->bind_mw.bind_info.mr)->real;
}

/**
 * ibckpt_mw_moved() - a bind or local invalidate the vendor took: a window's state moves
 * @ctx: the QP's context
 * @wr: the request, as the application posted it
 * @qp: the QP
 *
 * A bind gives the window its range and key; a local invalidate of a
 * window's key unbinds it. Either is the window's state from now on: one
 * that failed before is forgotten (and this one, should it fail, makes the
 * state unknown again: ibckpt_mw_failed()). (The vendor's window keeps the
 * key it was posted with: ibckpt_mw_wr_real().)
 * Context: the send queue's lock held, the queue open.
 */
void ibckpt_mw_moved(struct ibckpt_context *ctx, const struct ibv_send_wr *wr,
		     struct ibckpt_qp *qp)
{
	struct ibckpt_mw *mw;

	if (wr->opcode == IBV_WR_BIND_MW) {
		mw = to_imw(wr->bind_mw.mw);
		ibckpt_mw_bound(mw, &wr->bind_mw.bind_info, wr->bind_mw.rkey, qp);
	} else if (wr->opcode == IBV_WR_LOCAL_INV) {
		ibckpt_spin_lock(&ctx->key_lock);
		mw = ibckpt_mw_find(ctx, wr->invalidate_rkey, false);
		if (mw) {
			mw->bind.mr = NULL;
			mw->qp = NULL;
			mw->unsure = false;
		}
		ibckpt_spin_unlock(&ctx->key_lock);
	}
}

/* ctx->wc_inv for a context on the vendor provider named @vendor (NULL: unknown). */
unsigned int ibckpt_mw_wc_inv(const char *vendor)
{
	return IBV_WC_WITH_INV | (vendor && !strcmp(vendor, "rxe") ? IBV_WC_IP_CSUM_OK : 0);
}

/**
 * ibckpt_mw_wc() - a completion that may have invalidated a window of ours
 * @ctx: the context of the CQ (it has type 2 windows: IBCKPT_CQ_WINDOWS)
 * @wc: a completion as the vendor returned it (its QPN translated already)
 *
 * A peer's send with invalidate unbinds the window, and the key the
 * completion names becomes the one the application knows. Debian's rxe
 * marks such a completion with the kernel's IB_WC_WITH_INVALIDATE bit
 * (1 << 2, IBV_WC_IP_CSUM_OK to libibverbs) instead of IBV_WC_WITH_INV: on
 * rxe either is taken (ctx->wc_inv), elsewhere IBV_WC_WITH_INV alone (mlx5
 * sets IBV_WC_IP_CSUM_OK on UD and raw packet receives, whose
 * invalidated_rkey is not written); the key is checked against the
 * window's own.
 * Context: the CQ's lock held, the CQ open.
 */
void ibckpt_mw_wc(struct ibckpt_context *ctx, struct ibv_wc *wc)
{
	struct ibckpt_mw *mw;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV ||
	    !(wc->wc_flags & ctx->wc_inv) || (wc->wc_flags & IBV_WC_WITH_IMM))
		return;
	ibckpt_spin_lock(&ctx->key_lock);
	mw = ibckpt_mw_find(ctx, wc->invalidated_rkey, true);
	if (mw && mw->real && mw_real_key(mw, mw->vrkey) == wc->invalidated_rkey) {
		mw->bind.mr = NULL;		/* free now, whatever came before */
		mw->qp = NULL;
		mw->unsure = false;
		wc->invalidated_rkey = mw_virt_key(mw, wc->invalidated_rkey);
	}
	ibckpt_spin_unlock(&ctx->key_lock);
}

/*
 * Under key_lock: the window a logged bind names, if it is still one of the
 * context's. A log entry can outlive its window (an unsignaled bind stays
 * logged until a later completion retires it, whatever became of the
 * window since), so its pointer is only compared, never followed: the
 * window is found by the index of the key the bind gave it, else (a bind
 * that named another index, whose key byte alone the vendor takes) among
 * the context's windows.
 */
static struct ibckpt_mw *mw_of_bind(struct ibckpt_context *ctx, const struct ibckpt_wr *e)
{
	const struct ibckpt_vidmap *m = &ctx->mw_virt;
	struct ibckpt_mw *mw = ibckpt_mw_find(ctx, e->bind_mw.rkey, false);
	uint32_t i;

	if (mw && &mw->ibv_mw == e->bind_mw.mw)
		return mw;
	for (i = 0; i < m->size; i++) {
		mw = m->slot[i].obj;
		if (m->slot[i].gen && m->slot[i].gen != ~0u && &mw->ibv_mw == e->bind_mw.mw)
			return mw;
	}
	return NULL;	/* deallocated since; or a provider-internal bind (real window) */
}

/*
 * A bind or local invalidate of a window completed in error (or was
 * flushed): whether it took effect is not known. A local invalidate names
 * its window by the key (the invalidate_rkey, in imm_data's place in the
 * log). Context: the send queue's lock held.
 */
void ibckpt_mw_failed(struct ibckpt_context *ctx, const struct ibckpt_wr *e)
{
	struct ibckpt_mw *mw = NULL;

	ibckpt_spin_lock(&ctx->key_lock);
	if (e->opcode == IBV_WR_BIND_MW)
		mw = mw_of_bind(ctx, e);
	else if (e->opcode == IBV_WR_LOCAL_INV)
		mw = ibckpt_mw_find(ctx, e->imm_data, false);
	if (mw)
		mw->unsure = true;
	ibckpt_spin_unlock(&ctx->key_lock);
}

/* The context's first window after @o (&ctx->objs: its first), or NULL; as its callers walk the list. */
static struct ibckpt_mw *mw_next(struct ibckpt_context *ctx, struct ibckpt_obj *o)
{
	for (o = o->next; o != &ctx->objs; o = o->next)
		if (o->type == IBCKPT_SNAP_MW)
			return ibckpt_container_of(o, struct ibckpt_mw, obj);
	return NULL;
}

#define for_each_mw(ctx, mw) \
	for ((mw) = mw_next(ctx, &(ctx)->objs); (mw); (mw) = mw_next(ctx, &(mw)->obj))

/* A QP is destroyed: type 2 windows it bound answer nobody now. ctx->lock held. */
void ibckpt_mw_qp_gone(struct ibckpt_context *ctx, struct ibckpt_qp *qp)
{
	struct ibckpt_mw *mw;

	for_each_mw(ctx, mw) {
		ibckpt_spin_lock(&ctx->key_lock);	/* as pollers write it */
		if (mw->qp == qp)
			mw->qp = NULL;
		ibckpt_spin_unlock(&ctx->key_lock);
	}
}

/*
 * An MR is deregistered, ctx->lock held: a window bound to it (a vendor
 * that lets it go; rxe refuses) is in a state of the vendor's, and its
 * bind names an MR that is gone: unknown, until its next bind or
 * invalidate (the release refuses it meanwhile, and never follows the MR).
 */
void ibckpt_mw_mr_gone(struct ibckpt_context *ctx, struct ibckpt_mr *mr)
{
	struct ibckpt_mw *mw;

	for_each_mw(ctx, mw) {
		ibckpt_spin_lock(&ctx->key_lock);
		if (mw->bind.mr == &mr->vmr.ibv_mr) {
			mw->bind.mr = NULL;
			mw->qp = NULL;
			mw->unsure = true;
		}
		ibckpt_spin_unlock(&ctx->key_lock);
	}
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
		mw_real_key_set(mw);	/* the vendor binds from the key the application holds */
		ret = ibv_bind_mw(qp->real, mw->real, &rb);
		if (ret) {
			ibckpt_wrlog_unpost(&qp->sq, 1);
		} else {
			/* The vendor picked the window's next key: the application's is moved along. */
			ibmw->rkey = mw_virt_key(mw, mw->real->rkey);
			ibckpt_wrlog_newest(&qp->sq, 1)->bind_mw.rkey = ibmw->rkey;
			ibckpt_mw_bound(mw, &mw_bind->bind_info, ibmw->rkey, qp);
		}
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_gate_exit(&ctx->gate);
	IBCKPT_COUNT(ctx, post_send, 1);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Restart (restart.h)                                                 */
/* ------------------------------------------------------------------ */

/**
 * ibckpt_mw_release_check() - can the window be released and rebuilt?
 * @mw: a window of a quiesced process (every request completed)
 *
 * Its state must be known (the last bind or invalidate of it did not
 * fail: every request has completed now), and a bound type 2 window must
 * have the QP that bound it, at RTS or in the error state: it is bound
 * again through that QP (ibckpt_mw_rebind()).
 * Return: 0 or EOPNOTSUPP (said).
 */
int ibckpt_mw_release_check(struct ibckpt_mw *mw)
{
	const struct ibckpt_qp *qp = mw->qp;

	if (mw->unsure) {
		ibckpt_restart_err("memory window %#x: its last bind or invalidate failed: its "
				   "state is not known until it is bound or invalidated again",
				   mw->vrkey);
		return EOPNOTSUPP;
	}
	if (mw->ibv_mw.type != IBV_MW_TYPE_2 || !mw->bind.mr)
		return 0;
	/* at RTS when it bound the window (or the bind failed), in the error state since */
	if (!qp || qp->vqp.qp.qp_type != IBV_QPT_RC || !(qp->hist.mask & IBV_QP_STATE) ||
	    (qp->hist.attr.qp_state != IBV_QPS_RTS && qp->hist.attr.qp_state != IBV_QPS_SQD &&
	     qp->hist.attr.qp_state != IBV_QPS_ERR)) {
		ibckpt_restart_err("memory window %#x: bound through a QP that is %s", mw->vrkey,
				   qp ? "not an RC QP at RTS or in the error state (reset since?)"
				      : "gone");
		return EOPNOTSUPP;
	}
	return 0;
}

/* The vendor's window goes; its bind stays in the shadow. */
void ibckpt_mw_release(struct ibckpt_mw *mw)
{
	struct ibckpt_context *ctx = to_ictx(mw->ibv_mw.context);

	if (!mw->real)
		return;
	ibckpt_spin_lock(&ctx->key_lock);
	mw_real_del(ctx, mw);
	ibckpt_spin_unlock(&ctx->key_lock);
	if (ibv_dealloc_mw(mw->real))
		ibckpt_dbg("release: the vendor kept a window busy");
	mw->real = NULL;
}

/**
 * ibckpt_mw_recreate() - the window again, on its re-created PD, unbound
 * @mw: a released window
 *
 * A bound type 2 window's key byte will be the one peers know (its rebind
 * names it); a type 1 window's is the vendor's (ibckpt_mw_bind_type1()), and
 * so is an unbound type 2 window's: the vendor allocated it with a byte of
 * its own, which the application's next bind must name.
 * Return: 0 or an errno.
 */
int ibckpt_mw_recreate(struct ibckpt_mw *mw)
{
	struct ibckpt_context *ctx = to_ictx(mw->ibv_mw.context);
	int err;

	mw->real = ibv_alloc_mw(to_ipd(mw->ibv_mw.pd)->real, mw->ibv_mw.type);
	if (!mw->real) {
		err = errno;
		ibckpt_restart_err("memory window %#x: %s", mw->vrkey, strerror(err));
		return err;
	}
	mw->ibv_mw.handle = mw->real->handle;
	/*
	 * The rebind of a bound type 2 window names the byte peers know; any
	 * other window keeps the vendor's byte until a bind of the
	 * application's (a type 1 one until its rebind just after).
	 */
	mw->key_off = mw->ibv_mw.type == IBV_MW_TYPE_2 && mw->bind.mr ? 0 :
		      (uint8_t)((mw->real->rkey - mw->vrkey) & 0xff);
	mw->ridx = MW_INDEX(mw->real->rkey);
	ibckpt_spin_lock(&ctx->key_lock);
	err = mw_real_add(ctx, mw);
	ibckpt_spin_unlock(&ctx->key_lock);
	if (err)
		ibckpt_restart_err("memory window %#x: %s", mw->vrkey, strerror(err));
	return err;
}

/*
 * A private RC QP on @pd connected to itself, at RTS, with its own CQ: what
 * type 1 windows are bound through (a bind sends nothing).
 */
struct priv_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void priv_qp_close(struct priv_qp *p)
{
	if (p->qp && ibv_destroy_qp(p->qp))
		ibckpt_dbg("reacquire: the private QP could not be destroyed");
	if (p->cq && ibv_destroy_cq(p->cq))
		ibckpt_dbg("reacquire: the private CQ could not be destroyed");
	p->qp = NULL;
	p->cq = NULL;
}

/*
 * INIT -> RTR, connected to itself on port 1 (its LID, its first GID if it
 * has one): a QP that is to bind windows and send nothing. @a: the other
 * RTR attributes (path MTU, responder's ones, rq_psn); its address and
 * state are set here. Return: 0 or -1 (errno).
 */
static int rtr_to_self(struct ibckpt_context *ctx, struct ibv_qp *q, struct ibv_qp_attr *a)
{
	union ibv_gid gid, zero = { 0 };
	struct ibv_port_attr pa;
	int i;

	if (ibv_query_port(ctx->real, 1, &pa))
		return -1;
	a->qp_state = IBV_QPS_RTR;
	a->dest_qp_num = q->qp_num;
	memset(&a->ah_attr, 0, sizeof(a->ah_attr));
	a->ah_attr.port_num = 1;
	a->ah_attr.dlid = pa.lid;
	for (i = 0; i < IBCKPT_MAX_GIDS && i < pa.gid_tbl_len; i++) {
		if (!ibv_query_gid(ctx->real, 1, i, &gid) && memcmp(&gid, &zero, sizeof(gid))) {
			a->ah_attr.is_global = 1;
			a->ah_attr.grh.dgid = gid;
			a->ah_attr.grh.sgid_index = (uint8_t)i;
			a->ah_attr.grh.hop_limit = 1;
			break;
		}
	}
	return ibv_modify_qp(q, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER) ? -1 : 0;
}

static int priv_qp_open(struct ibckpt_context *ctx, struct ibv_pd *pd, struct priv_qp *p)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_MW_BIND };

	p->cq = ibv_create_cq(ctx->real, 2, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = p->cq;
	p->qp = p->cq ? ibv_create_qp(pd, &ia) : NULL;
	if (!p->qp)
		return errno ? errno : EIO;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return errno ? errno : EIO;
	memset(&a, 0, sizeof(a));
	a.path_mtu = IBV_MTU_256;
	if (rtr_to_self(ctx, p->qp, &a))
		return errno ? errno : EIO;
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return errno ? errno : EIO;
	return 0;
}

/* A type 1 bind through the private QP, waited for. Return: 0 or an errno. */
static int priv_bind(struct priv_qp *p, struct ibckpt_mw *mw)
{
	struct ibv_mw_bind b = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
				 .bind_info = mw->bind };
	struct ibv_wc wc;
	int i, n = 0;

	b.bind_info.mr = to_imr(mw->bind.mr)->real;
	if (ibv_bind_mw(p->qp, mw->real, &b))
		return errno ? errno : EIO;
	for (i = 0; i < 2000 && !n; i++) {
		n = ibv_poll_cq(p->cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	if (n <= 0)
		return ETIMEDOUT;
	return wc.status == IBV_WC_SUCCESS ? 0 : EIO;
}

static int by_pd(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)(*(struct ibckpt_mw *const *)a)->ibv_mw.pd;
	uintptr_t y = (uintptr_t)(*(struct ibckpt_mw *const *)b)->ibv_mw.pd;

	return x < y ? -1 : x > y;
}

/* Type 1 windows @v[0..n), one PD's, bound again through one private QP of it. */
static int bind_type1_of_pd(struct ibckpt_context *ctx, struct ibckpt_mw **v, size_t n)
{
	struct priv_qp p = { 0 };
	size_t i;
	int err;

	err = priv_qp_open(ctx, to_ipd(v[0]->ibv_mw.pd)->real, &p);
	if (err)
		ibckpt_restart_err("memory window %#x: a QP to bind it through: %s", v[0]->vrkey,
				   strerror(err));
	for (i = 0; i < n && !err; i++) {
		err = priv_bind(&p, v[i]);
		if (err)
			ibckpt_restart_err("memory window %#x: binding it again: %s", v[i]->vrkey,
					   strerror(err));
		else
			v[i]->key_off = (uint8_t)((v[i]->real->rkey - v[i]->vrkey) & 0xff);
	}
	priv_qp_close(&p);
	return err;
}

/*
 * Type 1 windows bound at the release are bound again, to the same range,
 * through a private QP of their PD (one per PD, whatever the order the
 * windows were made in): the vendor picks the key byte, and the window's
 * key offset follows from it. Then every window's identity is published.
 * Return: 0 or an errno.
 */
int ibckpt_mw_bind_type1(struct ibckpt_context *ctx)
{
	struct ibckpt_mw **v = NULL, *mw;
	size_t n = 0, cap = 0, i, j;
	int err = 0;

	for_each_mw(ctx, mw) {
		if (mw->ibv_mw.type != IBV_MW_TYPE_1 || !mw->bind.mr)
			continue;
		if (n == cap) {
			struct ibckpt_mw **nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

			if (!nv) {
				free(v);
				ibckpt_restart_err("memory windows: out of memory");
				return ENOMEM;
			}
			v = nv;
		}
		v[n++] = mw;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_pd);
	for (i = 0; i < n && !err; i = j) {
		for (j = i + 1; j < n && v[j]->ibv_mw.pd == v[i]->ibv_mw.pd; j++)
			;
		err = bind_type1_of_pd(ctx, v + i, j - i);
	}
	free(v);
	if (err)
		return err;
	for_each_mw(ctx, mw) {
		err = ibckpt_ident_add(IBCKPT_ID_MW, ctx->ident->vdev, mw->vrkey,
				       mw_real_key(mw, mw->vrkey), NULL, NULL);
		if (err)
			break;
	}
	return err;
}

/*
 * A QP that was in the error state at the release, re-created at INIT,
 * to RTS for a bind: to RTR connected to itself (its peer may be gone;
 * nothing is posted, nothing sent), then RTS with its history's attributes
 * (ibckpt_qp_rts()). Return: 0 or an errno.
 */
static int failed_qp_rts(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .path_mtu = h->path_mtu ? h->path_mtu : IBV_MTU_256,
				 .rq_psn = qp->rel.rq_psn,
				 .max_dest_rd_atomic = h->max_dest_rd_atomic,
				 .min_rnr_timer = h->min_rnr_timer };

	if (rtr_to_self(qp->ctx, qp->real, &a))
		return errno ? errno : EIO;
	return ibckpt_qp_rts(qp);
}

/**
 * ibckpt_mw_rebind() - a bound type 2 window, bound again through its QP
 * @mw: a re-created window
 *
 * At REMAP, every QP of the process at RTR and no request posted anywhere
 * in the job: its QP goes to RTS (a bind sends nothing) and the bind is an
 * internal request, its completion kept from the application. The key is
 * the one peers know, on the new index.
 *
 * A QP in the error state at the release stays at INIT through REMAP and
 * goes to the error state at GO; its window was bound to it all the same
 * (valid: a LOCAL_INV through another QP of the PD takes it, and reaches
 * nothing through it). So it is bound exactly so: the QP goes to RTS
 * connected to itself, the window is bound, and the QP goes to the error
 * state at once, before any process of the job posts (left free instead,
 * the application's LOCAL_INV of it would fail and take its QP to the
 * error state, and Linux 6.1's rxe dereferences a free type 2 window's
 * NULL QP in rxe_do_invalidate_mw()).
 * Return: 0 or an errno (said).
 */
int ibckpt_mw_rebind(struct ibckpt_mw *mw)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_BIND_MW,
		.bind_mw = { .mw = mw->real, .bind_info = mw->bind },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibckpt_qp *qp = mw->qp;
	bool failed;
	uint32_t key;
	int err;

	if (mw->ibv_mw.type != IBV_MW_TYPE_2 || !mw->bind.mr)
		return 0;
	key = mw_real_key(mw, mw->vrkey);
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info.mr = to_imr(mw->bind.mr)->real;
	failed = qp->rel.state == IBV_QPS_ERR;
	if (failed)
		err = failed_qp_rts(qp);
	else if (qp->rel.state == IBV_QPS_RTS || qp->rel.state == IBV_QPS_SQD)
		err = ibckpt_qp_rts(qp);
	else
		err = EINVAL;	/* ibckpt_mw_release_check() let no other through */
	if (!err)
		err = ibckpt_qp_post_internal(qp, &wr, IBCKPT_MW_BIND_MS);
	if (failed && qp->rel.at_rts) {
		qp->rel.at_rts = false;
		if (ibv_modify_qp(qp->real, &a, IBV_QP_STATE) && !err)
			err = errno ? errno : EIO;
	}
	if (err) {
		ibckpt_restart_err("memory window %#x: binding it again through QP %u%s: %s",
				   mw->vrkey, qp->vqp.qp.qp_num,
				   failed ? " (in the error state)" : "", strerror(err));
		return err;
	}
	mw->real->rkey = key;
	return 0;
}
