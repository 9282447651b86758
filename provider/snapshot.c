// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The process snapshot (uapi/linux/ibckpt_snapshot.h), built by the control
 * thread once it has quiesced: every gate is closed, so no application thread
 * is inside a verb and no object is being destroyed (destroys run inside the
 * gate); the caller holds ibckpt_ctx_lock, so no context comes or goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"
#include "snapshot_writer.h"

#define QP_ATTR_ALL (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | \
		     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		     IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | \
		     IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
		     IBV_QP_CAP | IBV_QP_DEST_QPN | IBV_QP_ACCESS_FLAGS)

/* VmPin of /proc/self/status, in bytes: memory pinned for DMA. */
static uint64_t pinned_bytes(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

_Static_assert(IBV_WR_BIND_MW == IBCKPT_SNAP_WR_BIND_MW, "uapi names verbs' bind opcode");
_Static_assert(IBV_SRQT_XRC == IBCKPT_SNAP_SRQT_XRC, "uapi names verbs' XRC SRQ type");
_Static_assert(IBV_WR_TSO == IBCKPT_SNAP_WR_TSO, "uapi names verbs' TSO opcode");

static uint32_t id_of_pd(struct ibv_pd *pd)
{
	return pd ? to_ipd(pd)->obj.id : 0;
}

static uint32_t id_of_cq(struct ibv_cq *cq)
{
	return cq ? to_icq(cq)->obj.id : 0;
}

static void add_device(struct snap_writer *w, struct ibckpt_context *ctx)
{
	struct ibckpt_snap_device *d = snapw_add(w, IBCKPT_SNAP_DEVICE, sizeof(*d));
	struct ibv_port_attr pa;
	union ibv_gid gid;

	if (!d)
		return;
	d->handle = ctx->id;
	/* the device it is open on (another after a restart with a device map) */
	snprintf(d->name, sizeof(d->name), "%s",
		 ctx->ident ? ctx->ident->devname : ctx->vctx.context.device->name);
	d->node_guid = ibv_get_device_guid(ctx->vctx.context.device);
	if (ctx->ident) {	/* restarted: what its peers know it by */
		d->port_lid = ctx->ident->vlid;
		memcpy(d->gid, ctx->ident->vgid[0].raw, sizeof(d->gid));
		return;
	}
	if (!ibv_query_port(ctx->real, 1, &pa))
		d->port_lid = pa.lid;
	if (!ibv_query_gid(ctx->real, 1, 0, &gid))
		memcpy(d->gid, gid.raw, sizeof(d->gid));
}

/*
 * The AHs, MWs and MRs of a context by the pointer the application holds.
 * A logged request names such objects by pointer, and an unsignaled request
 * can stay in the log after the object it names was destroyed: the snapshot
 * looks the pointer up here and never dereferences it.
 */
struct live_ent {
	uintptr_t p;
	uint32_t id;
};

struct live_set {
	struct live_ent *v;
	size_t n;
};

static int live_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct live_ent *)a)->p, y = ((const struct live_ent *)b)->p;

	return x < y ? -1 : x > y;
}

static int live_build(struct live_set *ls, struct ibckpt_context *ctx)
{
	struct ibckpt_obj *o;
	size_t n = 0;

	ls->n = 0;
	for (o = ctx->objs.next; o != &ctx->objs; o = o->next)
		n++;
	ls->v = malloc((n ? n : 1) * sizeof(*ls->v));
	if (!ls->v)
		return ENOMEM;
	for (o = ctx->objs.next; o != &ctx->objs; o = o->next) {
		uintptr_t p;

		switch (o->type) {
		case IBCKPT_SNAP_AH:
			p = (uintptr_t)&ibckpt_container_of(o, struct ibckpt_ah, obj)->ibv_ah;
			break;
		case IBCKPT_SNAP_MW:
			p = (uintptr_t)&ibckpt_container_of(o, struct ibckpt_mw, obj)->ibv_mw;
			break;
		case IBCKPT_SNAP_MR:
			p = (uintptr_t)&ibckpt_container_of(o, struct ibckpt_mr, obj)->vmr.ibv_mr;
			break;
		default:
			continue;
		}
		ls->v[ls->n++] = (struct live_ent){ .p = p, .id = o->id };
	}
	qsort(ls->v, ls->n, sizeof(*ls->v), live_cmp);
	return 0;
}

/* The handle of the live object at p, 0 if none is there any more. */
static uint32_t live_id(const struct live_set *ls, const void *p)
{
	struct live_ent key = { .p = (uintptr_t)p };
	const struct live_ent *e;

	if (!p)
		return 0;
	e = bsearch(&key, ls->v, ls->n, sizeof(*ls->v), live_cmp);
	return e ? e->id : 0;
}

static void add_wrs(struct snap_writer *w, const struct live_set *ls,
		    const struct ibckpt_wrlog *log, uint32_t owner, uint32_t wq, bool ud)
{
	const struct ibckpt_wr *e;
	const struct ibv_sge *sge;
	const uint8_t *inl;
	uint32_t i, k;

	for (i = 0; (e = ibckpt_wrlog_at(log, i, &sge, &inl)) != NULL; i++) {
		bool tso = wq == IBCKPT_SNAP_WQ_SEND && e->opcode == IBV_WR_TSO;
		size_t len;
		struct ibckpt_snap_wr *r;
		struct ibckpt_snap_sge *s;

		if (e->retired)
			continue;
		len = sizeof(*r) + e->num_sge * sizeof(*s) + e->inline_len +
		      (tso ? e->tso.hdr_sz : 0);
		r = snapw_add(w, IBCKPT_SNAP_WR, len);
		if (!r)
			return;
		r->wr_id = e->wr_id;
		r->owner = owner;
		r->wq = wq;
		r->opcode = e->opcode;
		r->send_flags = e->send_flags;
		r->num_sge = e->num_sge;
		r->inline_len = e->inline_len;
		r->imm_data = e->imm_data;
		r->xrc_remote_srqn = e->remote_srqn;	/* 0 but on XRC send queues */
		if (wq != IBCKPT_SNAP_WQ_SEND) {
			/* receives: wr_id and SGEs only */
		} else if (ud) {
			r->ud_ah = live_id(ls, e->wr.ud.ah);
			r->ud_remote_qpn = e->wr.ud.remote_qpn;
			r->ud_remote_qkey = e->wr.ud.remote_qkey;
		} else if (e->opcode == IBV_WR_BIND_MW) {
			/* uapi: the window in ud_ah, its MR in swap, handles both */
			r->ud_ah = live_id(ls, e->bind_mw.mw);
			r->rkey = e->bind_mw.rkey;
			r->remote_addr = e->bind_mw.bind_info.addr;
			r->compare_add = e->bind_mw.bind_info.length;
			r->swap = live_id(ls, e->bind_mw.bind_info.mr);
			r->imm_data = e->bind_mw.bind_info.mw_access_flags;
		} else if (e->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   e->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			r->remote_addr = e->wr.atomic.remote_addr;
			r->rkey = e->wr.atomic.rkey;
			r->compare_add = e->wr.atomic.compare_add;
			r->swap = e->wr.atomic.swap;
		} else {
			r->remote_addr = e->wr.rdma.remote_addr;
			r->rkey = e->wr.rdma.rkey;
			/* ibv_wr_atomic_write()'s 8 bytes, where qp_ex.c staged them */
			if (e->opcode == IBV_WR_ATOMIC_WRITE)
				r->swap = e->wr.atomic.swap;
		}
		s = (struct ibckpt_snap_sge *)(r + 1);
		for (k = 0; k < e->num_sge; k++) {
			s[k].addr = sge[k].addr;
			s[k].length = sge[k].length;
			s[k].lkey = sge[k].lkey;
		}
		if (e->inline_len)
			memcpy(&s[e->num_sge], inl, e->inline_len);
		if (tso) {	/* uapi: the header's size and the MSS, its bytes last */
			r->remote_addr = 0;
			r->rkey = 0;
			r->compare_add = e->tso.hdr_sz;
			r->swap = e->tso.mss;
			if (e->tso.hdr_sz)
				memcpy((uint8_t *)&s[e->num_sge] + e->inline_len,
				       ibckpt_wrlog_tso_hdr(log, e), e->tso.hdr_sz);
		}
	}
}

/*
 * The real QPN behind the QP's virtual one, through the context's table
 * (XRC targets are not in it: their own).
 */
/* The vendor's QPN: the virtual one until a restart, another after. */
static uint32_t qpn_real(struct ibckpt_qp *qp)
{
	return qp->real->qp_num;
}

static void add_qp(struct snap_writer *w, const struct live_set *ls, struct ibckpt_qp *qp)
{
	struct ibv_qp *q = &qp->vqp.qp;
	struct ibckpt_snap_qp *r;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	bool ud = q->qp_type == IBV_QPT_UD;

	memset(&a, 0, sizeof(a));
	r = snapw_add(w, IBCKPT_SNAP_QP, sizeof(*r));
	if (!r)
		return;
	r->handle = qp->obj.id;
	r->pd = id_of_pd(q->pd);
	r->send_cq = id_of_cq(q->send_cq);
	r->recv_cq = id_of_cq(q->recv_cq);
	r->srq = qp->srq ? qp->srq->obj.id : 0;
	r->xrcd = qp->xrcd ? qp->xrcd->obj.id : 0;
	r->opened = qp->opened;
	r->qp_type = q->qp_type;
	r->vqpn = q->qp_num;
	r->qpn = qpn_real(qp);
	r->send_ops_flags = qp->qpx ? qp->qpx->flags : 0;
	if (!ibv_query_qp(qp->real, &a, QP_ATTR_ALL, &init)) {
		/* the addresses the application knows (equal until a restart) */
		ibckpt_ah_attr_to_virtual(&qp->ctx->addrs, &a.ah_attr);
		r->state = a.qp_state;
		r->dest_qpn = a.dest_qp_num;
		r->vdest_qpn = qp->ctx->remapped ? qp->hist.attr.dest_qp_num : a.dest_qp_num;
		r->sq_psn = a.sq_psn;
		r->rq_psn = a.rq_psn;
		r->qkey = a.qkey;
		r->access = a.qp_access_flags;
		r->path_mtu = a.path_mtu;
		r->timeout = a.timeout;
		r->retry_cnt = a.retry_cnt;
		r->rnr_retry = a.rnr_retry;
		r->min_rnr_timer = a.min_rnr_timer;
		r->max_rd_atomic = a.max_rd_atomic;
		r->max_dest_rd_atomic = a.max_dest_rd_atomic;
		r->port_num = a.port_num;
		r->sl = a.ah_attr.sl;
		r->is_global = a.ah_attr.is_global;
		r->sgid_index = a.ah_attr.grh.sgid_index;
		r->hop_limit = a.ah_attr.grh.hop_limit;
		r->dlid = a.ah_attr.dlid;
		r->pkey_index = a.pkey_index;
		memcpy(r->dgid, a.ah_attr.grh.dgid.raw, sizeof(r->dgid));
		r->max_send_wr = init.cap.max_send_wr;
		r->max_recv_wr = init.cap.max_recv_wr;
		r->max_send_sge = init.cap.max_send_sge;
		r->max_recv_sge = init.cap.max_recv_sge;
		r->max_inline_data = init.cap.max_inline_data;
		r->sq_sig_all = init.sq_sig_all;
	} else {
		r->state = q->state;
	}
	/* Queues without a log (SRQ, XRC) hold nothing of ours. */
	r->n_send_wr = qp->sq.wr ? (uint32_t)ibckpt_wrlog_live(&qp->sq) : 0;
	r->n_recv_wr = qp->rq_logged ? (uint32_t)ibckpt_wrlog_live(&qp->rq) : 0;
	r->n_modify = qp->hist.calls;
	/* r is invalid once more records are added */
	add_wrs(w, ls, &qp->sq, qp->obj.id, IBCKPT_SNAP_WQ_SEND, ud);
	add_wrs(w, ls, &qp->rq, qp->obj.id, IBCKPT_SNAP_WQ_RECV, false);
}

static void add_cq(struct snap_writer *w, struct ibckpt_cq *cq)
{
	struct ibckpt_snap_cq *r = snapw_add(w, IBCKPT_SNAP_CQ, sizeof(*r));
	const struct ibv_wc *wc;
	uint32_t i;

	if (!r)
		return;
	r->handle = cq->obj.id;
	r->device = cq->ctx->id;
	r->cqe = (uint32_t)cq->ibv_cq.cqe;
	r->n_drained = ibckpt_vcq_count(&cq->vcq);
	r->comp_channel = cq->chan != NULL;
	r->armed = atomic_load(&cq->armed);
	r->ex = cq->ex;
	r->wc_flags = cq->wc_flags;
	for (i = 0; (wc = ibckpt_vcq_at(&cq->vcq, i)) != NULL; i++) {
		struct ibckpt_snap_wc *s = snapw_add(w, IBCKPT_SNAP_WC, sizeof(*s));

		if (!s)
			return;
		s->wr_id = wc->wr_id;
		s->cq = cq->obj.id;
		s->status = wc->status;
		s->opcode = wc->opcode;
		s->vendor_err = wc->vendor_err;
		s->byte_len = wc->byte_len;
		s->imm_data = wc->imm_data;
		s->qp_num = wc->qp_num;
		s->src_qp = wc->src_qp;
		s->wc_flags = wc->wc_flags;
		s->pkey_index = wc->pkey_index;
		s->slid = wc->slid;
		s->sl = wc->sl;
		s->dlid_path_bits = wc->dlid_path_bits;
	}
}

static void add_object(struct snap_writer *w, const struct live_set *ls,
		       struct ibckpt_context *ctx, struct ibckpt_obj *o)
{
	switch (o->type) {
	case IBCKPT_SNAP_PD: {
		struct ibckpt_snap_pd *r = snapw_add(w, IBCKPT_SNAP_PD, sizeof(*r));

		if (r) {
			r->handle = o->id;
			r->device = ctx->id;
		}
		break;
	}
	case IBCKPT_SNAP_MR: {
		struct ibckpt_mr *mr = ibckpt_container_of(o, struct ibckpt_mr, obj);
		struct ibckpt_snap_mr *r = snapw_add(w, IBCKPT_SNAP_MR, sizeof(*r));

		if (r) {
			r->handle = o->id;
			r->pd = id_of_pd(mr->vmr.ibv_mr.pd);
			r->addr = (uintptr_t)mr->vmr.ibv_mr.addr;
			r->length = mr->vmr.ibv_mr.length;
			r->iova = mr->iova;
			r->access = (uint32_t)mr->vmr.access;
			r->vlkey = mr->vmr.ibv_mr.lkey;
			r->vrkey = mr->vmr.ibv_mr.rkey;
			/* real keys as a restart finds them: through the tables */
			r->lkey = ibckpt_key_real(ctx, &ctx->lkeys, r->vlkey, mr->lkey_gen);
			r->rkey = ibckpt_key_real(ctx, &ctx->rkeys, r->vrkey, mr->rkey_gen);
		}
		break;
	}
	case IBCKPT_SNAP_MW: {
		struct ibckpt_mw *mw = ibckpt_container_of(o, struct ibckpt_mw, obj);
		struct ibckpt_snap_mw *r = snapw_add(w, IBCKPT_SNAP_MW, sizeof(*r));

		if (r) {
			r->handle = o->id;
			r->pd = id_of_pd(mw->ibv_mw.pd);
			r->type = mw->ibv_mw.type;
			ibckpt_spin_lock(&ctx->key_lock);
			r->vrkey = mw->vrkey;
			r->rkey = mw->real ? (mw->ridx << 8) |
					     ((mw->vrkey + mw->key_off) & 0xff) : 0;
			r->mr = mw->bind.mr ? to_imr(mw->bind.mr)->obj.id : 0;
			r->qp = mw->qp ? mw->qp->obj.id : 0;
			ibckpt_spin_unlock(&ctx->key_lock);
			r->addr = mw->bind.addr;
			r->length = mw->bind.length;
			r->access = mw->bind.mw_access_flags;
		}
		break;
	}
	case IBCKPT_SNAP_AH: {
		struct ibckpt_ah *ah = ibckpt_container_of(o, struct ibckpt_ah, obj);
		struct ibckpt_snap_ah *r = snapw_add(w, IBCKPT_SNAP_AH, sizeof(*r));

		if (r) {
			r->handle = o->id;
			r->pd = id_of_pd(ah->ibv_ah.pd);
			r->dlid = ah->attr.dlid;
			r->sl = ah->attr.sl;
			r->is_global = ah->attr.is_global;
			r->port_num = ah->attr.port_num;
			r->sgid_index = ah->attr.grh.sgid_index;
			r->hop_limit = ah->attr.grh.hop_limit;
			memcpy(r->dgid, ah->attr.grh.dgid.raw, sizeof(r->dgid));
		}
		break;
	}
	case IBCKPT_SNAP_SRQ: {
		struct ibckpt_srq *srq = ibckpt_container_of(o, struct ibckpt_srq, obj);
		struct ibckpt_snap_srq *r = snapw_add(w, IBCKPT_SNAP_SRQ, sizeof(*r));
		struct ibv_srq_attr a;

		if (!r)
			break;
		r->handle = o->id;
		r->pd = id_of_pd(srq->ibv_srq.pd);
		r->srq_limit = srq->srq_limit;
		if (!ibv_query_srq(srq->real, &a)) {
			r->max_wr = a.max_wr;
			r->max_sge = a.max_sge;
		}
		r->n_recv_wr = (uint32_t)ibckpt_wrlog_live(&srq->rq);
		r->srq_type = srq->type;
		r->xrcd = srq->xrcd ? srq->xrcd->obj.id : 0;
		r->cq = srq->cq ? srq->cq->obj.id : 0;
		r->srq_num = srq->srq_num;
		add_wrs(w, ls, &srq->rq, o->id, IBCKPT_SNAP_WQ_SRQ, false);
		break;
	}
	case IBCKPT_SNAP_XRCD: {
		struct ibckpt_xrcd *xrcd = ibckpt_container_of(o, struct ibckpt_xrcd, obj);
		struct ibckpt_snap_xrcd *r = snapw_add(w, IBCKPT_SNAP_XRCD, sizeof(*r));

		if (r) {
			r->handle = o->id;
			r->device = ctx->id;
			r->oflags = (uint32_t)xrcd->oflags;
		}
		break;
	}
	case IBCKPT_SNAP_CQ:
		add_cq(w, ibckpt_container_of(o, struct ibckpt_cq, obj));
		break;
	case IBCKPT_SNAP_QP:
		add_qp(w, ls, ibckpt_container_of(o, struct ibckpt_qp, obj));
		break;
	}
}

/* The restart channel (rctl.c), if the process has one. */
static void add_control(struct snap_writer *w)
{
	struct ibckpt_snap_control *r;
	int cmd, reply;

	if (ibckpt_rctl_fds(&cmd, &reply))
		return;
	r = snapw_add(w, IBCKPT_SNAP_CONTROL, sizeof(*r));
	if (r) {
		r->cmd_fd = (uint32_t)cmd;
		r->reply_fd = (uint32_t)reply;
		r->released = ibckpt_released;
		r->caps = IBCKPT_SNAP_CAP_ID_MW;
	}
}

/**
 * ibckpt_snapshot_build() - snapshot every context of the process
 * @session: the freeze session
 * @outstanding: sends not seen to complete when the drain ended
 * @incomplete: the drain's bound was reached with signaled sends outstanding
 * @buf: set to the snapshot (free() it)
 * @len: set to its length
 *
 * Objects come in creation order per context, so a PD precedes its MRs and a
 * CQ the QPs that use it. Return: 0 or a positive errno.
 */
int ibckpt_snapshot_build(uint64_t session, uint32_t outstanding, bool incomplete, void **buf,
			  size_t *len)
{
	struct ibckpt_context *ctx;
	struct ibckpt_snap_hdr *h;
	struct snap_writer w;
	struct ibckpt_obj *o;
	int ret;

	if (snapw_init(&w, (uint32_t)getpid(), session))
		return ENOMEM;
	/* Released (restart.h): nothing of the vendor's to describe. */
	for (ctx = ibckpt_released ? NULL : ibckpt_ctxs; ctx; ctx = ctx->next) {
		struct live_set ls;

		add_device(&w, ctx);
		pthread_mutex_lock(&ctx->lock);
		if (live_build(&ls, ctx)) {
			pthread_mutex_unlock(&ctx->lock);
			snapw_free(&w);
			return ENOMEM;
		}
		for (o = ctx->objs.next; o != &ctx->objs; o = o->next)
			add_object(&w, &ls, ctx, o);
		pthread_mutex_unlock(&ctx->lock);
		free(ls.v);
	}
	add_control(&w);
	h = snapw_hdr(&w);
	if (h) {
		h->pinned_bytes = pinned_bytes();
		h->outstanding = outstanding;
		if (incomplete)
			h->flags |= IBCKPT_SNAP_F_INCOMPLETE_DRAIN;
	}
	ret = snapw_finish(&w);
	if (ret) {
		snapw_free(&w);
		return -ret;
	}
	*buf = w.buf;
	*len = w.len;
	return 0;
}
