// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs. The vendor's QP carries our shadow as qp_context (async
 * events lead back to it) and is registered under its QPN in the context's
 * table, where completions find it to retire logged requests. The virtual
 * QPN is the real one until a restart.
 *
 * Posting logs each request before handing the list to the vendor, under
 * the queue's lock so that the log's order is the hardware queue's; what the
 * vendor refuses is forgotten again. UD requests and window binds name
 * shadows: the real objects are swapped in for the vendor and back from the
 * log before returning, so nothing is allocated per request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

static void qp_history_add(struct ibckpt_qp_history *h, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *m = &h->attr;

	if (mask & IBV_QP_STATE) {
		m->qp_state = a->qp_state;
		if (a->qp_state == IBV_QPS_RESET) {	/* a fresh start */
			memset(m, 0, sizeof(*m));
			h->mask = 0;
		}
	}
#define MERGE(bit, field) do { if (mask & (bit)) m->field = a->field; } while (0)
	MERGE(IBV_QP_CUR_STATE, cur_qp_state);
	MERGE(IBV_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
	MERGE(IBV_QP_ACCESS_FLAGS, qp_access_flags);
	MERGE(IBV_QP_PKEY_INDEX, pkey_index);
	MERGE(IBV_QP_PORT, port_num);
	MERGE(IBV_QP_QKEY, qkey);
	MERGE(IBV_QP_AV, ah_attr);
	MERGE(IBV_QP_PATH_MTU, path_mtu);
	MERGE(IBV_QP_TIMEOUT, timeout);
	MERGE(IBV_QP_RETRY_CNT, retry_cnt);
	MERGE(IBV_QP_RNR_RETRY, rnr_retry);
	MERGE(IBV_QP_RQ_PSN, rq_psn);
	MERGE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	MERGE(IBV_QP_ALT_PATH, alt_ah_attr);
	MERGE(IBV_QP_ALT_PATH, alt_pkey_index);
	MERGE(IBV_QP_ALT_PATH, alt_port_num);
	MERGE(IBV_QP_ALT_PATH, alt_timeout);
	MERGE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	MERGE(IBV_QP_SQ_PSN, sq_psn);
	MERGE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	MERGE(IBV_QP_PATH_MIG_STATE, path_mig_state);
	MERGE(IBV_QP_CAP, cap);
	MERGE(IBV_QP_DEST_QPN, dest_qp_num);
	MERGE(IBV_QP_RATE_LIMIT, rate_limit);
#undef MERGE
	h->mask |= mask;
	h->calls++;
}

static struct ibv_cq *real_cq(struct ibv_cq *cq)
{
	return cq ? to_icq(cq)->real : NULL;
}

/* The shadow's public part as libibverbs would fill it, from the vendor's QP. */
static void qp_shadow_init(struct ibckpt_qp *qp, struct ibckpt_context *ctx, void *qp_context)
{
	struct ibv_qp *q = &qp->vqp.qp;

	ibckpt_spin_init(&qp->sq_lock);
	ibckpt_spin_init(&qp->rq_lock);
	q->context = &ctx->vctx.context;
	q->qp_context = qp_context;
	q->handle = qp->real->handle;
	q->qp_num = qp->real->qp_num;
	qp->real_qpn = qp->real->qp_num;
	q->state = qp->real->state;
	q->qp_type = qp->real->qp_type;
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	ibckpt_qp_set_paths(qp);
}

/* Both create paths end here with an attribute set naming shadows. */
/*
 * The vendor's QP for a new shadow, with a QPN that is nobody's virtual QPN
 * (ibckpt_id_taken(): after a restart the vendor may hand out one that the
 * job's peers translate to another QP). A taken one is held while the
 * vendor is asked again, so that it does not hand the same out twice.
 */
static struct ibv_qp *create_fresh_qp(struct ibckpt_context *ctx, struct ibv_qp_init_attr_ex *ra)
{
	struct ibv_qp_init_attr_ex asked = *ra;
	struct ibv_qp *held[IBCKPT_ID_TRIES], *q;
	unsigned int n = 0;

	for (;;) {
		q = ibv_create_qp_ex(ctx->real, ra);
		if (!q || !ibckpt_id_taken(ctx, IBCKPT_ID_QPN, q->qp_num))
			break;
		ibckpt_dbg("create_qp: QPN %#x is a virtual QPN of the job: another", q->qp_num);
		if (n == IBCKPT_ID_TRIES) {
			ibv_destroy_qp(q);
			q = NULL;
			errno = EADDRINUSE;
			break;
		}
		held[n++] = q;
		*ra = asked;
	}
	while (n)
		if (ibv_destroy_qp(held[--n]))
			ibckpt_dbg("create_qp: a QP held aside could not be destroyed");
	return q;
}

static struct ibv_qp *qp_create(struct ibckpt_context *ctx, struct ibv_pd *ibpd,
				struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex ra = *attr;
	struct ibckpt_qp *qp;
	int err;

	bool tgt = attr->qp_type == IBV_QPT_XRC_RECV;

	if ((attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
				 IBV_QP_INIT_ATTR_CREATE_FLAGS |
				 IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     ibckpt_qpx_check(attr->send_ops_flags))) {
		/* RSS, newer post-send ops, ...: not stacked yet. */
		ibckpt_dbg("create_qp: comp_mask %#x send_ops_flags %#llx not stacked",
			   attr->comp_mask, (unsigned long long)attr->send_ops_flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = ibckpt_zalloc_lines(sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	ra.qp_context = qp;
	ra.pd = ibpd ? to_ipd(ibpd)->real : NULL;
	ra.send_cq = real_cq(attr->send_cq);
	ra.recv_cq = real_cq(attr->recv_cq);
	ra.srq = attr->srq ? to_isrq(attr->srq)->real : NULL;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) {
		qp->xrcd = attr->xrcd ? to_ixrcd(attr->xrcd) : NULL;
		ra.xrcd = qp->xrcd ? qp->xrcd->real : NULL;
	}
	qp->real = create_fresh_qp(ctx, &ra);
	if (!qp->real) {
		free(qp);
		return NULL;
	}
	attr->cap = ra.cap;	/* what the vendor granted */
	qp->init = *attr;
	qp->ctx = ctx;
	qp->srq = attr->srq ? to_isrq(attr->srq) : NULL;
	/* An XRC target QP has no queue of its own; an XRC sender no receive queue. */
	err = tgt ? 0 : ibckpt_wrlog_init(&qp->sq, IBCKPT_WRLOG_SQ,
					  ibckpt_wrlog_depth(ra.cap.max_send_wr),
					  ra.cap.max_send_sge, ra.cap.max_inline_data,
					  attr->sq_sig_all);
	qp->rq_logged = !qp->srq && !tgt && attr->qp_type != IBV_QPT_XRC_SEND;
	if (!err && qp->rq_logged)
		err = ibckpt_wrlog_init(&qp->rq, IBCKPT_WRLOG_RQ,
					ibckpt_wrlog_depth(ra.cap.max_recv_wr),
					ra.cap.max_recv_sge, 0, false);
	if (!err && !tgt && (attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER))
		qp->sq.max_hdr = attr->max_tso_header;	/* headers logged with their requests */
	if (!err && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		err = ibckpt_qpx_init(qp, attr->send_ops_flags, &ra.cap,
				      attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER ?
				      attr->max_tso_header : 0);
	if (!err && !tgt) {	/* a target's completions are its SRQs' (srq.c) */
		ibckpt_spin_lock(&ctx->qpn_lock);
		err = ibckpt_vidmap_insert(&ctx->qpns, qp->real->qp_num, qp->real->qp_num, qp,
					   &qp->qpn_gen);
		ibckpt_spin_unlock(&ctx->qpn_lock);
	}
	if (err) {
		ibv_destroy_qp(qp->real);
		ibckpt_wrlog_destroy(&qp->sq);
		ibckpt_wrlog_destroy(&qp->rq);
		ibckpt_qpx_free(qp->qpx);
		free(qp);
		errno = err;
		return NULL;
	}
	qp_shadow_init(qp, ctx, attr->qp_context);

	struct ibv_qp *q = &qp->vqp.qp;

	q->pd = ibpd;
	q->send_cq = attr->send_cq;
	q->recv_cq = attr->recv_cq;
	q->srq = attr->srq;
	ibckpt_obj_add(ctx, &qp->obj, IBCKPT_SNAP_QP);
	return q;
}

struct ibv_qp *ibckpt_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = ibpd;
	qp = qp_create(to_ictx(ibpd->context), ibpd, &ax);
	if (qp)
		attr->cap = ax.cap;
	return qp;
}

struct ibv_qp *ibckpt_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_pd *pd = attr->comp_mask & IBV_QP_INIT_ATTR_PD ? attr->pd : NULL;

	/* Only an XRC target QP has no PD (its XRC domain stands for it). */
	if (!pd && attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	return qp_create(to_ictx(context), pd, attr);
}

/*
 * Another process's (or our own) XRC target QP, opened in a shared domain:
 * a shadow with no queues, which only modify, query and destroy reach.
 */
struct ibv_qp *ibckpt_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr)
{
	struct ibckpt_context *ctx = to_ictx(context);
	struct ibv_qp_open_attr ra = *attr;
	struct ibckpt_qp *qp;

	if (!(attr->comp_mask & IBV_QP_OPEN_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return NULL;
	}
	qp = ibckpt_zalloc_lines(sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->xrcd = to_ixrcd(attr->xrcd);
	ra.xrcd = qp->xrcd->real;
	ra.qp_context = qp;
	ra.comp_mask |= IBV_QP_OPEN_ATTR_CONTEXT;
	qp->real = ibv_open_qp(ctx->real, &ra);
	if (!qp->real) {
		free(qp);
		return NULL;
	}
	qp->ctx = ctx;
	qp->opened = true;
	qp_shadow_init(qp, ctx, attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT ? attr->qp_context
									      : NULL);
	ibckpt_obj_add(ctx, &qp->obj, IBCKPT_SNAP_QP);
	return &qp->vqp.qp;
}

int ibckpt_destroy_qp(struct ibv_qp *ibqp)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_context *ctx = qp->ctx;
	uint32_t rqpn;
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	rqpn = qp->real->qp_num;
	ret = ibv_destroy_qp(qp->real);
	if (ret) {
		ibckpt_gate_exit(&ctx->gate);
		return ret;
	}
	ibckpt_spin_lock(&ctx->qpn_lock);	/* no poller finds it any more */
	if (qp->qpn_gen)
		ibckpt_vidmap_remove(&ctx->qpns, ibqp->qp_num, qp->qpn_gen);
	if (qp->rel.qpn_virt_gen)	/* restarted: its real QPN may be handed out again */
		ibckpt_vidmap_remove(&ctx->qpn_virt, rqpn, qp->rel.qpn_virt_gen);
	ibckpt_spin_unlock(&ctx->qpn_lock);
	ibckpt_qp_internal_gone(qp);		/* its completion still dropped */
	ibckpt_fence_put(qp);
	ibckpt_cq_forget_qp(ibqp->send_cq, qp);		/* nor retires into it */
	ibckpt_cq_forget_qp(ibqp->recv_cq, qp);
	pthread_mutex_lock(&ctx->lock);
	if (ctx->mw2)		/* type 2 windows may name it */
		ibckpt_mw_qp_gone(ctx, qp);
	pthread_mutex_unlock(&ctx->lock);
	ibckpt_obj_del(ctx, &qp->obj);
	ibckpt_gate_exit(&ctx->gate);
	/* its unread async events leave the pipe; the read ones are waited for */
	if (!ibckpt_async_put(ctx, ibqp, &qp->async_sent, &qp->async_seen))
		return 0;	/* the shadow stays: an event in the pipe names it */
	ibckpt_await_acks(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed, qp->async_sent);
	ibckpt_wrlog_destroy(&qp->sq);
	ibckpt_wrlog_destroy(&qp->rq);
	ibckpt_qpx_free(qp->qpx);
	free(qp->mcast);
	free(qp);
	return 0;
}

/*
 * Under sq_lock: the QP sends @psn next; what is logged now (posted before
 * RTS) goes out from there.
 */
static void qp_psn_base(struct ibckpt_qp *qp, uint32_t psn)
{
	qp->psn_base = (psn - qp->sq.psn_sum) & IBCKPT_PSN_MASK;
	qp->psn_based = true;
}

int ibckpt_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibv_qp_attr ra, *va = attr;
	int ret;

	/*
	 * Inside the gate: a snapshot reads the QP's state and history while
	 * closed, and a restart rewrites the translations used below.
	 */
	ret = ibckpt_gate_enter(&qp->ctx->gate);
	if (ret)
		return ret;
	/* Address vectors name virtual addresses (addr.h): the vendor gets real ones. */
	if (mask & (IBV_QP_AV | IBV_QP_ALT_PATH)) {
		ra = *attr;
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &ra.ah_attr);
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &ra.alt_ah_attr);
		va = &ra;
	}
	/* Restarted: the peer named is the one its application knows (restart.h). */
	if (qp->ctx->remapped && (mask & IBV_QP_DEST_QPN)) {
		const struct ibv_ah_attr *av = mask & IBV_QP_AV ? &attr->ah_attr :
					       &qp->hist.attr.ah_attr;
		uint32_t r;

		if (va != &ra) {
			ra = *attr;
			va = &ra;
		}
		qp->rel.peer_vdev = ibckpt_remap_dev_of(av);
		if (ibckpt_remap_find(IBCKPT_ID_QPN, qp->rel.peer_vdev, attr->dest_qp_num, &r))
			ra.dest_qp_num = r;
	}
	ret = ibv_modify_qp(qp->real, va, mask);
	if (!ret) {
		bool reset = (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET;

		/*
		 * An internal request is gone with the rest, its completion
		 * maybe in the CQ: an orphan, before its slot goes below (a
		 * poller meanwhile tells it by its slot, or as an orphan).
		 */
		if (reset) {
			ibckpt_qp_internal_forget(qp);
			ibckpt_fence_put(qp);
		}
		ibckpt_spin_lock(&qp->sq_lock);
		qp_history_add(&qp->hist, attr, mask);
		/* A reset empties the queues without completions: forget them too. */
		if (reset) {
			ibckpt_wrlog_reset(&qp->sq);
			qp->sq.psn_lost = false;
			qp->psn_based = false;
		}
		if (mask & IBV_QP_PATH_MTU)
			qp->sq.mtu_shift = (uint8_t)(7 + attr->path_mtu);	/* IBV_MTU_256: 1 */
		if (mask & IBV_QP_SQ_PSN)
			qp_psn_base(qp, attr->sq_psn);
		ibckpt_spin_unlock(&qp->sq_lock);
		if (reset && qp->rq_logged) {
			ibckpt_spin_lock(&qp->rq_lock);
			ibckpt_wrlog_reset(&qp->rq);
			ibckpt_spin_unlock(&qp->rq_lock);
		}
	}
	ibckpt_gate_exit(&qp->ctx->gate);
	return ret;
}

int ibckpt_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		    struct ibv_qp_init_attr *init)
{
	int ret = ibv_query_qp(to_iqp(ibqp)->real, attr, mask, init);

	if (!ret) {
		/* The vendor answered with its own objects and addresses: show ours. */
		ibckpt_ah_attr_to_virtual(&to_iqp(ibqp)->ctx->addrs, &attr->ah_attr);
		ibckpt_ah_attr_to_virtual(&to_iqp(ibqp)->ctx->addrs, &attr->alt_ah_attr);
		/* the peer's QPN the application named, not its new one */
		if (to_iqp(ibqp)->ctx->remapped)
			attr->dest_qp_num = to_iqp(ibqp)->hist.attr.dest_qp_num;
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
	}
	return ret;
}

/* Under ctx->lock: @qp's entry for the group, or -1. */
static int mcast_find(const struct ibckpt_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	uint32_t i;

	for (i = 0; i < qp->nmcast; i++)
		if (qp->mcast[i].lid == lid && !memcmp(&qp->mcast[i].gid, gid, sizeof(*gid)))
			return (int)i;
	return -1;
}

/*
 * The groups are remembered: a re-created QP is attached to them again,
 * so that it keeps receiving multicast after a restart.
 */
int ibckpt_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	struct ibckpt_mcast *m;
	int ret;

	pthread_mutex_lock(&qp->ctx->lock);
	ret = ibv_attach_mcast(qp->real, gid, lid);
	if (!ret && mcast_find(qp, gid, lid) < 0) {
		m = realloc(qp->mcast, (qp->nmcast + 1) * sizeof(*m));
		if (!m) {
			ibv_detach_mcast(qp->real, gid, lid);
			ret = ENOMEM;
		} else {
			qp->mcast = m;
			qp->mcast[qp->nmcast++] = (struct ibckpt_mcast){ .gid = *gid, .lid = lid };
		}
	}
	pthread_mutex_unlock(&qp->ctx->lock);
	return ret;
}

int ibckpt_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	int ret, i;

	pthread_mutex_lock(&qp->ctx->lock);
	ret = ibv_detach_mcast(qp->real, gid, lid);
	i = ret ? -1 : mcast_find(qp, gid, lid);
	if (i >= 0)
		qp->mcast[i] = qp->mcast[--qp->nmcast];
	pthread_mutex_unlock(&qp->ctx->lock);
	return ret;
}

static __attribute__((noinline)) int post_send_xlate(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						      struct ibv_send_wr **bad);

/* ------------------------------------------------------------------ */
/* After a restart: one request, translated through the queue's caches  */
/* ------------------------------------------------------------------ */

/* SGEs a one-request translated post copies on its stack; more: the general path. */
#define IBCKPT_XL_SGES 4
/* What a send request below IBV_WR_LOCAL_INV means: up to its remote part. */
#define XL_SEND_MEANT offsetof(struct ibv_send_wr, qp_type)

/* Does send_xl() take @wr: one request of an RC/UC QP of a remapped context, few SGEs? */
static inline bool send_xl_takes(const struct ibckpt_qp *qp, const struct ibv_send_wr *wr)
{
	return (qp->fast & IBCKPT_POST_SEND_XL) && wr && !wr->next &&
	       (unsigned int)wr->opcode < IBV_WR_LOCAL_INV &&
	       (unsigned int)wr->num_sge <= IBCKPT_XL_SGES;
}

/* Does recv_xl() take @wr: one request of the QP's own receive queue, remapped? */
static inline bool recv_xl_takes(const struct ibckpt_qp *qp, const struct ibv_recv_wr *wr)
{
	return (qp->fast & IBCKPT_POST_RECV_XL) && wr && !wr->next &&
	       (unsigned int)wr->num_sge <= IBCKPT_XL_SGES;
}

/* The miss of lkey_real(): the context's table, under its key_lock. */
static __attribute__((noinline)) uint32_t lkey_miss(struct ibckpt_context *ctx,
						    struct ibckpt_key_cache *c, uint32_t key,
						    uint64_t stamp)
{
	uint32_t r = ibckpt_key_real(ctx, &ctx->lkeys, key, 0);

	c->stamp = stamp;
	c->vkey = key;
	c->real = r ? r : key;	/* no entry: a key made since, its own */
	return c->real;
}

/*
 * The real key behind one of the context's virtual lkeys, @c the queue's
 * cache (its lock held). The stamp is read before the table: acquire, so
 * that a miss's read of the table (under key_lock, whose acquire would let
 * an earlier load move after it) cannot come before it; with the writers'
 * release, an entry filled while a key changed is stale at once. (On x86
 * an acquire load is a plain one.)
 */
static inline uint32_t lkey_real(struct ibckpt_context *ctx, struct ibckpt_key_cache *c,
				 uint32_t key)
{
	uint64_t stamp = atomic_load_explicit(&ctx->key_stamp, memory_order_acquire);

	if (__builtin_expect(c->vkey == key && c->stamp == stamp, 1))
		return c->real;
	return lkey_miss(ctx, c, key, stamp);
}

/* Requests with other than one SGE: out of line, one SGE keeps few registers. */
static __attribute__((noinline)) void sges_real(struct ibckpt_context *ctx,
						struct ibckpt_key_cache *c, struct ibv_sge *dst,
						const struct ibv_sge *src, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		dst[i] = src[i];
		dst[i].lkey = lkey_real(ctx, c, src[i].lkey);
	}
}

/* @n SGEs from @src to @dst, their lkeys real: one, most requests', without a loop. */
static inline __attribute__((always_inline)) void sges_to_real(struct ibckpt_context *ctx,
								struct ibckpt_key_cache *c,
								struct ibv_sge *dst,
								const struct ibv_sge *src, int n)
{
	if (__builtin_expect(n == 1, 1)) {
		dst[0] = src[0];
		dst[0].lkey = lkey_real(ctx, c, dst[0].lkey);
	} else {
		sges_real(ctx, c, dst, src, n);
	}
}

/*
 * The peer's real key behind an rkey its application handed out
 * (ibckpt_remap_rkey()), through the send queue's cache: the job's table
 * changes only at a restart, which empties the cache.
 */
static uint32_t rkey_real(struct ibckpt_qp *qp, uint32_t key)
{
	struct ibckpt_key_cache *c = &qp->sq_rkey;
	uint64_t vdev = qp->rel.peer_vdev;
	uint32_t r;

	if (__builtin_expect(c->stamp && c->vkey == key && c->vdev == vdev, 1))
		return c->real;
	if (!ibckpt_remap_rkey(vdev, key, &r))
		r = key;	/* the job does not know it: the peer's own */
	*c = (struct ibckpt_key_cache){ .vdev = vdev, .stamp = 1, .vkey = key, .real = r };
	return r;
}

/*
 * One send request of an RC/UC QP after a restart, its opcode below
 * IBV_WR_LOCAL_INV and at most IBCKPT_XL_SGES SGEs: logged as the
 * application named it, posted as a copy in the vendor's terms (its lkeys,
 * and the remote key of an RDMA or atomic request). Under sq_lock, the
 * queue open. A request the vendor refuses is not logged; one it failed
 * without naming it was taken, as on the identity path.
 */
static inline __attribute__((always_inline)) int send_xl(struct ibckpt_qp *qp,
							  struct ibv_send_wr *wr,
							  struct ibv_send_wr **bad)
{
	struct ibv_sge s[IBCKPT_XL_SGES];
	struct ibv_send_wr c, *rbad = NULL;
	int ret;

	ret = ibckpt_wrlog_send_fast(&qp->sq, wr);
	if (__builtin_expect(ret != 0, 0)) {
		*bad = wr;
		return ret;
	}
	/* the rest (XRC, window and TSO fields): other opcodes' and QP types', 0 */
	memcpy(&c, wr, XL_SEND_MEANT);
	memset((char *)&c + XL_SEND_MEANT, 0, sizeof(c) - XL_SEND_MEANT);
	c.next = NULL;
	c.sg_list = s;
	sges_to_real(qp->ctx, &qp->sq_lkey, s, wr->sg_list, wr->num_sge);
	_Static_assert(IBV_WR_SEND == 2 && IBV_WR_SEND_WITH_IMM == 3, "one compare");
	if ((unsigned int)wr->opcode - IBV_WR_SEND > 1) {
		uint32_t *rkey = wr->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP ? &c.wr.atomic.rkey
									 : &c.wr.rdma.rkey;

		*rkey = rkey_real(qp, *rkey);
	}
	*bad = NULL;		/* as the identity path leaves it on success */
	ret = ibv_post_send(qp->real, &c, &rbad);
	if (__builtin_expect(ret != 0, 0) && rbad) {
		ibckpt_wrlog_unpost(&qp->sq, 1);
		*bad = wr;
	}
	return ret;
}

/* send_xl() for the general path (the identity ops' post_send after a restart). */
static __attribute__((noinline)) int post_send_xlate_one(struct ibckpt_qp *qp,
							 struct ibv_send_wr *wr,
							 struct ibv_send_wr **bad)
{
	return send_xl(qp, wr, bad);
}

/* The same for one receive request (its own receive queue, rq_lock held). */
static inline __attribute__((always_inline)) int recv_xl(struct ibckpt_qp *qp,
							  struct ibv_recv_wr *wr,
							  struct ibv_recv_wr **bad)
{
	struct ibv_sge s[IBCKPT_XL_SGES];
	struct ibv_recv_wr c = { .wr_id = wr->wr_id, .sg_list = s, .num_sge = wr->num_sge };
	struct ibv_recv_wr *rbad = NULL;
	int ret;

	ret = ibckpt_wrlog_recv_fast(&qp->rq, wr);
	if (__builtin_expect(ret != 0, 0)) {
		*bad = wr;
		return ret;
	}
	sges_to_real(qp->ctx, &qp->rq_lkey, s, wr->sg_list, wr->num_sge);
	*bad = NULL;
	ret = ibv_post_recv(qp->real, &c, &rbad);
	if (__builtin_expect(ret != 0, 0) && rbad) {
		ibckpt_wrlog_unpost(&qp->rq, 1);
		*bad = wr;
	}
	return ret;
}

static __attribute__((noinline)) int post_recv_xlate_one(struct ibckpt_qp *qp,
							 struct ibv_recv_wr *wr,
							 struct ibv_recv_wr **bad)
{
	return recv_xl(qp, wr, bad);
}

/*
 * Requests that name shadows (UD sends their AH, window binds their window
 * and MR), or a list the log cut short: the vendor gets copies, with the
 * real objects in them and the list ending where the log did. The
 * application's requests are only read: another thread may post the same
 * ones at once, and they may be read-only, so nothing is changed in place,
 * not even for a moment. @n requests, logged, are posted in
 * chunks of IBCKPT_POST_CHUNK; a chunk the vendor refuses part of ends the
 * post there, with *@bad the application's request it refused. The binds
 * the vendor took are now the windows'. Return: 0 or the vendor's error;
 * *@posted: how many it took.
 */
static int post_send_copies(struct ibckpt_qp *qp, struct ibv_send_wr *wr, uint32_t n,
			    bool ud, struct ibv_send_wr **bad, uint32_t *posted)
{
	struct ibv_send_wr c[IBCKPT_POST_CHUNK], *w = wr, *first, *rbad;
	uint32_t i, k, took;
	int ret = 0;

	*posted = 0;
	while (*posted < n) {
		k = n - *posted < IBCKPT_POST_CHUNK ? n - *posted : IBCKPT_POST_CHUNK;
		first = w;
		for (i = 0; i < k; i++, w = w->next) {
			c[i] = *w;
			c[i].next = i + 1 < k ? &c[i + 1] : NULL;
			if (ud)
				c[i].wr.ud.ah = to_iah(w->wr.ud.ah)->real;
			else if (w->opcode == IBV_WR_BIND_MW)
				ibckpt_mw_wr_real(w, &c[i]);
		}
		rbad = NULL;
		ret = ibv_post_send(qp->real, c, &rbad);
		/* no request named: all taken (see ibckpt_wrlog_post_recv_list()) */
		took = ret && rbad ? (uint32_t)(rbad - c) : k;
		for (i = 0, w = first; i < took; i++, w = w->next)
			if (!ud)
				ibckpt_mw_posted(qp->ctx, w, qp);
		*posted += took;
		if (ret) {
			*bad = w;
			break;
		}
	}
	return ret;
}

/*
 * Lists, UD and window binds: under the send queue's lock, the queue open.
 * Out of line, so that the one-request path needs few registers.
 */
static __attribute__((noinline)) int post_send_list(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						     struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w, *rbad = NULL;
	uint32_t logged = 0, posted, binds = 0, invs = 0;
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	bool ud = type == IBV_QPT_UD;
	int ret, err = 0;

	if (!qp->sq.wr)		/* an XRC target: the vendor's answer */
		return ibv_post_send(qp->real, wr, bad);
	for (w = wr; w; w = w->next) {
		/* a TSO request's header is copied with it */
		err = w->opcode == IBV_WR_TSO ? ibckpt_wrlog_send(&qp->sq, w)
					      : ibckpt_wrlog_send_fast(&qp->sq, w);
		if (err)
			break;
		if (type == IBV_QPT_XRC_SEND)
			ibckpt_wrlog_newest(&qp->sq, 1)->remote_srqn = w->qp_type.xrc.remote_srqn;
		binds += w->opcode == IBV_WR_BIND_MW;
		invs += w->opcode == IBV_WR_LOCAL_INV;
		logged++;
	}
	if (err) {
		*bad = w;
		if (!logged)
			return err;
	}
	if (ud || binds || invs || err) {
		ret = post_send_copies(qp, wr, logged, ud, &rbad, &posted);
	} else {
		ret = ibv_post_send(qp->real, wr, &rbad);
		for (posted = 0, w = wr; ret && w && w != rbad; w = w->next)
			posted++;
		if (!ret)
			posted = logged;
	}
	ibckpt_wrlog_unpost(&qp->sq, logged - posted);
	if (!ret)
		return err;
	*bad = rbad;
	return ret;
}

/**
 * ibckpt_qp_set_paths() - which posts of a QP take the fast path
 * @qp: a QP, created; or any QP of a context just remapped (restart.c)
 */
void ibckpt_qp_set_paths(struct ibckpt_qp *qp)
{
	bool identity = !qp->ctx->remapped;

	qp->fast = 0;
	/* UD, raw packet and XRC QPs: types from IBV_QPT_UD up. */
	if (qp->sq.wr && qp->vqp.qp.qp_type < IBV_QPT_UD)
		qp->fast |= identity ? IBCKPT_POST_SEND : IBCKPT_POST_SEND_XL;
	if (qp->rq_logged)
		qp->fast |= identity ? IBCKPT_POST_RECV : IBCKPT_POST_RECV_XL;
	/* a restart: what the caches hold is the old one's */
	qp->sq_lkey.stamp = qp->sq_rkey.stamp = qp->rq_lkey.stamp = 0;
}

/* A post refused at the gate, or a vendor error: out of line, the fast path keeps its registers. */
static __attribute__((noinline, cold)) int post_send_refused(struct ibv_send_wr *wr,
							      struct ibv_send_wr **bad, int err)
{
	*bad = wr;
	return err;
}

static __attribute__((noinline)) int post_send_failed(struct ibckpt_qp *qp, struct ibv_send_wr **bad,
						      int ret)
{
	if (*bad)	/* else: taken, as post_send_list() reads it */
		ibckpt_wrlog_unpost(&qp->sq, 1);
	return ret;
}

/*
 * Everything but one request of an RC/UC QP of an identity context. Only
 * tests and tail calls: no frame of its own.
 */
static __attribute__((noinline)) int post_send_general(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						       struct ibv_send_wr **bad)
{
	if (__builtin_expect(qp->ctx->remapped, 0)) {
		if (send_xl_takes(qp, wr))
			return post_send_xlate_one(qp, wr, bad);
		return post_send_xlate(qp, wr, bad);
	}
	return post_send_list(qp, wr, bad);
}

/* The send queue found closed by a quiesce (quiesce.c): wait, then post. */
static __attribute__((noinline, cold)) int post_send_closed(struct ibckpt_qp *qp,
							     struct ibv_send_wr *wr,
							     struct ibv_send_wr **bad)
{
	int err;

	ibckpt_spin_unlock_raw(&qp->sq_lock);
	err = ibckpt_gate_wait_queue(&qp->ctx->gate, &qp->sq_lock.closed);
	if (err)
		return post_send_refused(wr, bad, err);
	/* a restart may have come meanwhile (either entry posts either way) */
	if (qp->ctx->remapped)
		return ibckpt_post_send_xl(&qp->vqp.qp, wr, bad);
	return ibckpt_post_send(&qp->vqp.qp, wr, bad);
}

/*
 * The body of both post_send entries: the queue's lock, the closed test
 * under it, and one request on the one-request path, identity (@xl false:
 * logged, then posted as it is) or translated (send_xl()); everything else
 * on the general path. Inline in each with @xl a constant. No fork test: a
 * forked child's ops of an inherited context lead elsewhere (fork.c).
 */
static inline __attribute__((always_inline)) int post_send_entry(struct ibv_qp *ibqp,
								  struct ibv_send_wr *wr,
								  struct ibv_send_wr **bad, bool xl)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	int ret;

	ibckpt_spin_lock_raw(&qp->sq_lock);
	if (__builtin_expect(ibckpt_q_closed(&qp->sq_lock.closed), 0))
		return post_send_closed(qp, wr, bad);
	if (xl) {
		if (__builtin_expect(send_xl_takes(qp, wr), 1))
			ret = send_xl(qp, wr, bad);
		else
			ret = post_send_general(qp, wr, bad);
	} else if (__builtin_expect(!(qp->fast & IBCKPT_POST_SEND) || !wr || wr->next ||
				    (unsigned int)wr->opcode >= IBV_WR_LOCAL_INV, 0)) {
		/*
		 * Opcodes from IBV_WR_LOCAL_INV up (local invalidates and window
		 * binds, which move a window's state, TSO, SEND_WITH_INV, atomic
		 * write, driver ones) take the general path: one compare.
		 */
		ret = post_send_general(qp, wr, bad);
	} else {
		/* One request naming no shadow: most posts. */
		ret = ibckpt_wrlog_send_fast(&qp->sq, wr);
		if (__builtin_expect(ret != 0, 0)) {
			*bad = wr;
		} else {
			*bad = NULL;	/* a vendor may fail without naming one */
			ret = ibv_post_send(qp->real, wr, bad);
			if (__builtin_expect(ret != 0, 0))
				ret = post_send_failed(qp, bad, ret);
		}
	}
	ibckpt_spin_unlock_raw(&qp->sq_lock);
	return ret;
}

int ibckpt_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return post_send_entry(ibqp, wr, bad, false);
}

/**
 * ibckpt_post_send_xl() - post_send of a remapped context
 * @ibqp: the shadow QP
 * @wr: the application's requests, naming virtual keys
 * @bad: set to the first request not posted
 *
 * ibckpt_post_send() with one request of an RC/UC QP translated inline
 * (send_xl()): a restart sets it in the context's ops
 * (ibckpt_ctx_set_remapped()), so that a translated post costs no more
 * calls than an identity one. Everything else takes the general path, as
 * there. Return: 0 or an errno.
 */
int ibckpt_post_send_xl(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return post_send_entry(ibqp, wr, bad, true);
}


static int vendor_post_recv(void *real, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(real, wr, bad);
}

/* The receive path of a remapped context but one request: logged, then translated. */
static __attribute__((noinline)) int post_recv_list(struct ibckpt_qp *qp, struct ibv_recv_wr *wr,
						    struct ibv_recv_wr **bad)
{
	struct ibckpt_recv_target t = { .ctx = qp->ctx, .real = qp->real };

	return ibckpt_wrlog_post_recv_list(&qp->rq, &t, ibckpt_post_recv_xlate, wr, bad);
}

/*
 * A receive queue without a log (SRQ, XRC), or a remapped context's: under
 * rq_lock. Only tests and tail calls: no frame of its own.
 */
static __attribute__((noinline)) int post_recv_general(struct ibckpt_qp *qp, struct ibv_recv_wr *wr,
						       struct ibv_recv_wr **bad)
{
	if (!qp->rq_logged)	/* the vendor's answer, unlogged */
		return ibv_post_recv(qp->real, wr, bad);
	if (recv_xl_takes(qp, wr))
		return post_recv_xlate_one(qp, wr, bad);
	return post_recv_list(qp, wr, bad);
}

static __attribute__((noinline, cold)) int post_recv_refused(struct ibv_recv_wr *wr,
							      struct ibv_recv_wr **bad, int err)
{
	*bad = wr;
	return err;
}

/* The receive queue found closed by a quiesce (quiesce.c): wait, then post. */
static __attribute__((noinline, cold)) int post_recv_closed(struct ibckpt_qp *qp,
							     struct ibv_recv_wr *wr,
							     struct ibv_recv_wr **bad)
{
	int err;

	ibckpt_spin_unlock_raw(&qp->rq_lock);
	err = ibckpt_gate_wait_queue(&qp->ctx->gate, &qp->rq_lock.closed);
	if (err)
		return post_recv_refused(wr, bad, err);
	if (qp->ctx->remapped)
		return ibckpt_post_recv_xl(&qp->vqp.qp, wr, bad);
	return ibckpt_post_recv(&qp->vqp.qp, wr, bad);
}

/* The body of both post_recv entries, as post_send_entry() for sends. */
static inline __attribute__((always_inline)) int post_recv_entry(struct ibv_qp *ibqp,
								  struct ibv_recv_wr *wr,
								  struct ibv_recv_wr **bad, bool xl)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	int ret;

	ibckpt_spin_lock_raw(&qp->rq_lock);
	if (__builtin_expect(ibckpt_q_closed(&qp->rq_lock.closed), 0))
		return post_recv_closed(qp, wr, bad);
	if (xl) {
		if (__builtin_expect(recv_xl_takes(qp, wr), 1))
			ret = recv_xl(qp, wr, bad);
		else
			ret = post_recv_general(qp, wr, bad);
	} else if (__builtin_expect(!(qp->fast & IBCKPT_POST_RECV), 0)) {
		ret = post_recv_general(qp, wr, bad);
	} else {
		ret = ibckpt_wrlog_post_recv(&qp->rq, qp->real, vendor_post_recv, wr, bad);
	}
	ibckpt_spin_unlock_raw(&qp->rq_lock);
	return ret;
}

int ibckpt_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_entry(ibqp, wr, bad, false);
}

/**
 * ibckpt_post_recv_xl() - post_recv of a remapped context
 * @ibqp: the shadow QP
 * @wr: the application's requests, naming virtual keys
 * @bad: set to the first request not posted
 *
 * ibckpt_post_recv() with one request on the QP's own receive queue
 * translated inline (recv_xl()), as ibckpt_post_send_xl() for sends.
 * Return: 0 or an errno.
 */
int ibckpt_post_recv_xl(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_entry(ibqp, wr, bad, true);
}


/**
 * ibckpt_qp_lookup() - the QP a completion is for, NULL if none
 * @ctx: context of the CQ
 * @cq: the CQ; its lock is held
 * @wc: the completion (its QPN virtual, as the table's)
 *
 * The miss path of ibckpt_qp_retire(), under the context's qpn_lock: the
 * CQ remembers the QP for the next ones. A completion of no QP of the
 * context's is an XRC SRQ's (retired by its tag here) or a destroyed QP's.
 */
struct ibckpt_qp *ibckpt_qp_lookup(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
				   struct ibv_wc *wc)
{
	const struct ibckpt_vid *v;
	struct ibckpt_qp *qp = NULL;

	ibckpt_spin_lock(&ctx->qpn_lock);
	v = ibckpt_vidmap_find(&ctx->qpns, wc->qp_num, 0);
	if (v) {
		qp = v->obj;
		/*
		 * Remembered only by its own CQs, which forget it at its
		 * destroy; on another CQ it is a destroyed QP's completion,
		 * its QPN handed out again since.
		 */
		if (qp->vqp.qp.send_cq == &cq->ibv_cq || qp->vqp.qp.recv_cq == &cq->ibv_cq)
			cq->last_qp = qp;
		else
			qp = NULL;
	} else {
		ibckpt_xsrq_retire(ctx, wc);
	}
	ibckpt_spin_unlock(&ctx->qpn_lock);
	return qp;
}

/*
 * Under sq_lock: a send request failed (or was flushed), before its
 * completion retires (through the oldest live request with its wr_id,
 * wrlog.h). Which one failed is not known when several live requests carry
 * that wr_id (an application may give any): every request before the
 * oldest of them completed, and from it on each may be the one that failed
 * or one flushed behind it (the queue is in error now, so every later one
 * is flushed). Each bind and local invalidate from there to the newest
 * request leaves its window's state unknown (mw.c), until the window's
 * next bind or invalidate. Requests looked at by an earlier failure of the
 * queue are not looked at again (qp->mw_marked): a flush of a whole queue
 * costs its length, not its square. Nothing to do in a context without
 * windows.
 */
static void failed_send_windows(struct ibckpt_qp *qp, uint64_t wr_id)
{
	struct ibckpt_wrlog *log = &qp->sq;
	const struct ibckpt_wr *e;
	uint32_t pos;

	if (!atomic_load_explicit(&qp->ctx->mws, memory_order_relaxed) ||
	    !ibckpt_wrlog_find(log, wr_id, &pos))	/* settles */
		return;
	if ((int32_t)(qp->mw_marked - pos) > 0)
		pos = qp->mw_marked;
	for (; pos != log->tail; pos++) {
		e = ibckpt_wrlog_at(log, pos - log->head, NULL, NULL);
		if (e->opcode == IBV_WR_BIND_MW || e->opcode == IBV_WR_LOCAL_INV)
			ibckpt_mw_failed(qp->ctx, e);
	}
	qp->mw_marked = log->tail;
}

/**
 * ibckpt_qp_retire_exact() - the slow path of ibckpt_qp_retire()
 * @qp: the completion's QP
 * @cq: the CQ it came from
 * @wc: a failed completion, or a receive completion of a QP with an SRQ
 *
 * A failed completion's opcode is undefined (ibv_poll_cq(3)). The CQ tells
 * its queue when the QP's send and receive queues complete to different
 * CQs. On one CQ shared by both, a wr_id the send queue holds is taken as
 * the send queue's, else it is the receive side's (a wr_id both queues hold
 * cannot be told apart there). SRQ receives retire by wr_id under the
 * SRQ's lock.
 */
void ibckpt_qp_retire_exact(struct ibckpt_qp *qp, const struct ibckpt_cq *cq,
			    const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS;

	if (!ok && qp->vqp.qp.send_cq == &cq->ibv_cq) {
		bool found;

		ibckpt_spin_lock(&qp->sq_lock);
		failed_send_windows(qp, wc->wr_id);
		found = ibckpt_wrlog_complete(&qp->sq, wc->wr_id, false);
		ibckpt_spin_unlock(&qp->sq_lock);
		if (found || qp->vqp.qp.recv_cq != &cq->ibv_cq)
			return;
	}
	if (qp->srq) {
		ibckpt_spin_lock(&qp->srq->lock);
		ibckpt_wrlog_complete(&qp->srq->rq, wc->wr_id, ok);
		ibckpt_spin_unlock(&qp->srq->lock);
	} else if (qp->rq_logged) {
		ibckpt_wrlog_done(&qp->rq);
	}
}

/* ------------------------------------------------------------------ */
/* Restart (restart.h)                                                 */
/* ------------------------------------------------------------------ */

/* SGEs name virtual lkeys; one without an entry is a key made since (its own). */
void ibckpt_sge_to_real(struct ibckpt_context *ctx, struct ibv_sge *dst,
			const struct ibv_sge *src, int n)
{
	uint32_t r;
	int i;

	for (i = 0; i < n; i++) {
		dst[i] = src[i];
		r = ibckpt_key_real(ctx, &ctx->lkeys, src[i].lkey, 0);
		if (r)
			dst[i].lkey = r;
	}
}

/**
 * ibckpt_post_recv_xlate() - post receives to a remapped context's queue
 * @target: struct ibckpt_recv_target
 * @wr: the list, logged already; the application's, left as it is
 * @bad: set to the first request not posted
 *
 * One request at a time, each a translated copy. Return: 0 or the vendor's error.
 */
int ibckpt_post_recv_xlate(void *target, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibckpt_recv_target *t = target;
	struct ibv_recv_wr *w, *rbad;
	int ret;

	for (w = wr; w; w = w->next) {
		struct ibv_sge s[w->num_sge > 0 ? w->num_sge : 1];
		struct ibv_recv_wr c = { .wr_id = w->wr_id, .sg_list = s, .num_sge = w->num_sge };

		ibckpt_sge_to_real(t->ctx, s, w->sg_list, w->num_sge);
		ret = t->srq ? ibv_post_srq_recv(t->real, &c, &rbad) : ibv_post_recv(t->real, &c, &rbad);
		if (ret) {
			*bad = w;
			return ret;
		}
	}
	return 0;
}

/*
 * One of this context's remote keys, an MR's or a window's, as the vendor
 * knows it now: an MR's whole first, then a window's by its index, as its
 * peers translate it (ibckpt_remap_rkey()).
 */
static uint32_t local_key_real(struct ibckpt_context *ctx, uint32_t key)
{
	struct ibckpt_mw *mw;
	uint32_t r;

	ibckpt_spin_lock(&ctx->key_lock);
	r = ibckpt_vidmap_real(&ctx->rkeys, key, 0);
	if (!r && (mw = ibckpt_mw_find(ctx, key, false)) != NULL)
		r = (mw->ridx << 8) | ((key + mw->key_off) & 0xff);
	ibckpt_spin_unlock(&ctx->key_lock);
	return r ? r : key;
}

static bool wr_has_rkey(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/**
 * ibckpt_send_wr_real() - a send request in the vendor's terms
 * @qp: the shadow QP it is posted on (its send queue's lock held)
 * @src: the request as the application names things: shadow AH, window
 *	and MR; after a restart virtual keys and QPNs
 * @c: set to a copy, alone (next NULL): the vendor's AH, window and MR,
 *	and in a remapped context lkeys to this context's new ones, the remote
 *	key and UD destination QPN to the peer device's
 * @s: room for @src's SGEs (a remapped context's copy points here)
 */
void ibckpt_send_wr_real(struct ibckpt_qp *qp, const struct ibv_send_wr *src,
			 struct ibv_send_wr *c, struct ibv_sge *s)
{
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	uint32_t r;

	*c = *src;
	c->next = NULL;
	if (ud)
		c->wr.ud.ah = to_iah(src->wr.ud.ah)->real;
	else if (src->opcode == IBV_WR_BIND_MW)
		ibckpt_mw_wr_real(src, c);	/* the key byte too, remapped or not */
	if (!qp->ctx->remapped)
		return;
	c->sg_list = s;
	ibckpt_sge_to_real(qp->ctx, s, src->sg_list, src->num_sge);
	if (ud) {
		struct ibckpt_ah *ah = to_iah(src->wr.ud.ah);

		if (ibckpt_remap_find(IBCKPT_ID_QPN, ah->peer_vdev, src->wr.ud.remote_qpn, &r))
			c->wr.ud.remote_qpn = r;
	} else if (wr_has_rkey(src->opcode)) {
		bool atomic = src->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			      src->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
		uint32_t *rkey = atomic ? &c->wr.atomic.rkey : &c->wr.rdma.rkey;

		if (ibckpt_remap_rkey(qp->rel.peer_vdev, *rkey, &r))
			*rkey = r;
	}
	/* the key to invalidate: the peer's (SEND_WITH_INV) or one of ours (LOCAL_INV) */
	if (src->opcode == IBV_WR_SEND_WITH_INV &&
	    ibckpt_remap_rkey(qp->rel.peer_vdev, src->invalidate_rkey, &r))
		c->invalidate_rkey = r;
	else if (src->opcode == IBV_WR_LOCAL_INV)
		c->invalidate_rkey = local_key_real(qp->ctx, src->invalidate_rkey);
}

/* One send request of a remapped context, posted as a translated copy. */
static int post_one_xlate(struct ibckpt_qp *qp, const struct ibv_send_wr *src)
{
	struct ibv_sge s[src->num_sge > 0 ? src->num_sge : 1];
	struct ibv_send_wr c, *rbad;

	ibckpt_send_wr_real(qp, src, &c, s);
	return ibv_post_send(qp->real, &c, &rbad);
}

/* The send path of a remapped context: logged, then posted one by one, translated. */
static __attribute__((noinline)) int post_send_xlate(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						      struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w;
	int ret;

	for (w = wr; w; w = w->next) {
		if (w->opcode == IBV_WR_TSO) {
			*bad = w;	/* not kept across a restart (restart.rst) */
			return EOPNOTSUPP;
		}
		ret = ibckpt_wrlog_send_fast(&qp->sq, w);
		if (!ret) {
			ret = post_one_xlate(qp, w);
			if (ret)
				ibckpt_wrlog_unpost(&qp->sq, 1);
			else
				ibckpt_mw_posted(qp->ctx, w, qp);
		}
		if (ret) {
			*bad = w;
			return ret;
		}
	}
	return 0;
}

/*
 * The peers' check proves that the peer received every packet this QP
 * sent; not that every request posted was sent. One posted but not started
 * (behind a fence, out of read credits, its receiver out of receives: an
 * RNR retry rewinds the send PSN to what the peer expects) or sent in part
 * would be forgotten by the release. Each logged request took its packets'
 * PSNs (wrlog.h): the QP's next PSN must be the one after all of them.
 * Return: 0, EBUSY (with the reason), or EOPNOTSUPP if the device cannot
 * say.
 */
static int qp_sends_transmitted(struct ibckpt_qp *qp, uint32_t live)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	uint32_t want;
	bool known;

	ibckpt_spin_lock(&qp->sq_lock);
	known = qp->psn_based && !qp->sq.psn_lost;
	want = (qp->psn_base + qp->sq.psn_sum) & IBCKPT_PSN_MASK;
	ibckpt_spin_unlock(&qp->sq_lock);
	if (!known)	/* sends logged before the QP had an MTU: the peers' check only */
		return 0;
	if (ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, &init)) {
		/* not EBUSY: freezing again would not make the device say */
		ibckpt_restart_err("QP %u: the device cannot say its next PSN (%s): its unsignaled "
				   "requests cannot be shown transmitted", qp->vqp.qp.qp_num,
				   strerror(errno));
		return EOPNOTSUPP;
	}
	if (a.qp_state != IBV_QPS_RTS || a.sq_psn == want)
		return 0;
	ibckpt_restart_err("QP %u: %u unsignaled requests are not all transmitted (next PSN "
			   "%#x, %#x once they are): its peer may be out of receives (RNR)",
			   qp->vqp.qp.qp_num, live, a.sq_psn, want);
	return EBUSY;
}

/*
 * The release keeps the PSNs the QP is at (ibckpt_qp_release()); one whose
 * device cannot say would come back at the PSNs it was first given, which
 * its peer passed long ago. Return: 0 or EOPNOTSUPP (said: not
 * EBUSY, which a checkpoint would try again).
 */
static int qp_psns_readable(struct ibckpt_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (qp->vqp.qp.qp_type == IBV_QPT_UD || !(qp->hist.mask & IBV_QP_STATE) ||
	    qp->hist.attr.qp_state < IBV_QPS_RTR || qp->hist.attr.qp_state == IBV_QPS_ERR)
		return 0;
	if (!ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &init))
		return 0;
	ibckpt_restart_err("QP %u: the device cannot say its PSNs (%s): it cannot be released",
			   qp->vqp.qp.qp_num, strerror(errno));
	return EOPNOTSUPP;
}

/**
 * ibckpt_qp_release_check() - can the QP be released without losing a request?
 * @qp: the QP, quiesced
 * @flags: IBCKPT_RREL_*
 *
 * A signaled send not completed after the drain would have to be guessed
 * about. Unsignaled sends after the last signaled one complete without a
 * trace: they executed if the peer's expected PSN has passed them, which
 * the CLI checked when it says so (IBCKPT_RREL_PEERS_CHECKED). An RDMA
 * READ or atomic among them has a response to come back: an RC QP gets a
 * fence behind them (fence.c) once every QP passed its checks; a fence of
 * an earlier try still outstanding was waited for before (it is a
 * signaled request not completed).
 * Return: 0, EOPNOTSUPP, EBUSY (with the reason for the CLI).
 */
int ibckpt_qp_release_check(struct ibckpt_qp *qp, uint32_t flags)
{
	enum ibv_qp_type t = qp->vqp.qp.qp_type;
	uint32_t live, sig;

	if (qp->opened || qp->xrcd || (t != IBV_QPT_RC && t != IBV_QPT_UC && t != IBV_QPT_UD)) {
		ibckpt_restart_err("QP %u: type %d%s cannot be released yet", qp->vqp.qp.qp_num, t,
				   qp->opened ? " (opened)" : "");
		return EOPNOTSUPP;
	}
	if ((qp->hist.mask & IBV_QP_PORT) && qp->hist.attr.port_num > 1) {
		ibckpt_restart_err("QP %u on port %u: only port 1 is reacquired yet",
				   qp->vqp.qp.qp_num, qp->hist.attr.port_num);
		return EOPNOTSUPP;
	}
	if ((qp->hist.mask & IBV_QP_AV) &&
	    ibckpt_addr_publishable(&qp->hist.attr.ah_attr, "a QP"))
		return EOPNOTSUPP;
	ibckpt_spin_lock(&qp->sq_lock);
	live = ibckpt_wrlog_live(&qp->sq);
	sig = ibckpt_wrlog_signaled(&qp->sq);
	ibckpt_spin_unlock(&qp->sq_lock);
	if (sig) {
		ibckpt_restart_err("QP %u: %u signaled sends have not completed", qp->vqp.qp.qp_num,
				   sig);
		return EBUSY;
	}
	if (live && t != IBV_QPT_UD && !(flags & IBCKPT_RREL_PEERS_CHECKED)) {
		ibckpt_restart_err("QP %u: %u unsignaled sends may not have executed (peers not "
				   "checked)", qp->vqp.qp.qp_num, live);
		return EBUSY;
	}
	if (live && t != IBV_QPT_UD)
		return qp_sends_transmitted(qp, live);
	return qp_psns_readable(qp);
}

/*
 * Keeps what the re-creation needs: the state and PSNs now (ibv_query_qp),
 * then destroys the vendor's QP. Its trailing unsignaled sends executed
 * (ibckpt_qp_release_check()) or, on UD, went out: they are forgotten.
 */
void ibckpt_qp_release(struct ibckpt_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (!ibv_query_qp(qp->real, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &init)) {
		qp->rel.state = a.qp_state;
		qp->rel.sq_psn = a.sq_psn;
		qp->rel.rq_psn = a.rq_psn;
	} else {
		qp->rel.state = qp->hist.attr.qp_state;
		qp->rel.sq_psn = qp->hist.attr.sq_psn;
		qp->rel.rq_psn = qp->hist.attr.rq_psn;
	}
	ibckpt_spin_lock(&qp->sq_lock);
	ibckpt_wrlog_reset(&qp->sq);
	ibckpt_spin_unlock(&qp->sq_lock);
	ibckpt_qp_unacquire(qp);
}

/**
 * ibckpt_qp_unacquire() - destroy the vendor's QP, keep what the release kept
 * @qp: a QP released, or re-created since (an aborted reacquire)
 *
 * Its state and PSNs at the release and its logged receives stay, for the
 * next re-creation.
 */
void ibckpt_qp_unacquire(struct ibckpt_qp *qp)
{
	struct ibckpt_context *ctx = qp->ctx;
	uint32_t rqpn;

	if (!qp->real)
		return;
	rqpn = qp->real->qp_num;
	if (ibv_destroy_qp(qp->real))
		ibckpt_dbg("release: the vendor kept QP %u busy", qp->vqp.qp.qp_num);
	qp->real = NULL;
	qp->rel.at_rts = false;
	ibckpt_spin_lock(&ctx->qpn_lock);
	if (qp->rel.qpn_virt_gen)
		ibckpt_vidmap_remove(&ctx->qpn_virt, rqpn, qp->rel.qpn_virt_gen);
	qp->rel.qpn_virt_gen = 0;
	ibckpt_spin_unlock(&ctx->qpn_lock);
	ibckpt_qp_internal_forget(qp);
	ibckpt_fence_put(qp);
	ibckpt_cq_forget_qp(qp->vqp.qp.send_cq, qp);
	ibckpt_cq_forget_qp(qp->vqp.qp.recv_cq, qp);
}

/* RESET -> INIT, as the application did it (its merged history). */
static int qp_to_init(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = h->pkey_index,
				 .port_num = h->port_num, .qp_access_flags = h->qp_access_flags,
				 .qkey = h->qkey };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->vqp.qp.qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp->real, &a, mask);
}

/**
 * ibckpt_qp_recreate() - the QP again, at INIT (its receives: ibckpt_qp_refill())
 * @qp: a released QP; its PD, CQs and SRQ are re-created
 *
 * The same attributes; the device must grant at least the capacities it
 * granted before. The new QPN is published for the peers.
 * Return: 0 or an errno.
 */
int ibckpt_qp_recreate(struct ibckpt_qp *qp)
{
	struct ibckpt_context *ctx = qp->ctx;
	struct ibv_qp_init_attr_ex a = qp->init;
	struct ibv_qp *q = &qp->vqp.qp;
	uint32_t i;
	int err;

	a.qp_context = qp;
	a.pd = to_ipd(q->pd)->real;
	a.send_cq = real_cq(q->send_cq);
	a.recv_cq = real_cq(q->recv_cq);
	a.srq = q->srq ? to_isrq(q->srq)->real : NULL;
	qp->real = ibv_create_qp_ex(ctx->real, &a);
	if (!qp->real) {
		ibckpt_restart_err("QP %u: %s", q->qp_num, strerror(errno));
		return errno;
	}
	if (a.cap.max_send_wr < qp->init.cap.max_send_wr ||
	    a.cap.max_recv_wr < qp->init.cap.max_recv_wr ||
	    a.cap.max_send_sge < qp->init.cap.max_send_sge ||
	    a.cap.max_recv_sge < qp->init.cap.max_recv_sge ||
	    a.cap.max_inline_data < qp->init.cap.max_inline_data) {
		ibckpt_restart_err("QP %u: the device grants less than before (send %u/%u, "
				   "recv %u/%u, inline %u/%u)", q->qp_num, a.cap.max_send_wr,
				   qp->init.cap.max_send_wr, a.cap.max_recv_wr,
				   qp->init.cap.max_recv_wr, a.cap.max_inline_data,
				   qp->init.cap.max_inline_data);
		return EINVAL;
	}
	q->handle = qp->real->handle;
	qp->real_qpn = qp->real->qp_num;
	ibckpt_spin_lock(&ctx->qpn_lock);
	err = ibckpt_vidmap_insert(&ctx->qpn_virt, qp->real->qp_num, q->qp_num, qp,
				   &qp->rel.qpn_virt_gen);
	ibckpt_spin_unlock(&ctx->qpn_lock);
	if (!err)
		err = ibckpt_ident_add(IBCKPT_ID_QPN, ctx->ident->vdev, q->qp_num,
				       qp->real->qp_num, NULL, NULL);
	if (err)
		return err;
	for (i = 0; i < qp->nmcast; i++) {	/* the groups it was in */
		if (ibv_attach_mcast(qp->real, &qp->mcast[i].gid, qp->mcast[i].lid)) {
			ibckpt_restart_err("QP %u: attaching to a multicast group again: %s",
					   q->qp_num, strerror(errno));
			return errno ? errno : EIO;
		}
	}
	if (qp->rel.state == IBV_QPS_RESET)
		return 0;
	err = qp_to_init(qp);
	if (err)
		ibckpt_restart_err("QP %u: to INIT: %s", q->qp_num, strerror(err));
	return err;
}

/**
 * ibckpt_qp_refill() - the re-created QP's own receives posted again
 * @qp: re-created by ibckpt_qp_recreate(), as every MR of the process
 *
 * After every object is back, as an SRQ's (ibckpt_srq_refill()).
 * Return: 0 or an errno.
 */
int ibckpt_qp_refill(struct ibckpt_qp *qp)
{
	struct ibckpt_recv_target t = { .ctx = qp->ctx, .real = qp->real };

	if (qp->rel.state == IBV_QPS_RESET || !qp->rq_logged)
		return 0;
	return ibckpt_repost_recvs(&qp->rq, &t);
}

static bool qp_state_reached(const struct ibckpt_qp *qp, enum ibv_qp_state s)
{
	enum ibv_qp_state r = qp->rel.state;

	/* SQD and SQE are RTS with a send queue stopped: RTS again. */
	if (r == IBV_QPS_SQD || r == IBV_QPS_SQE)
		r = IBV_QPS_RTS;
	return r != IBV_QPS_ERR && r != IBV_QPS_UNKNOWN && r >= s;
}

/**
 * ibckpt_qp_to_rtr() - INIT -> RTR with the peer's new QPN and address
 * @qp: a re-created QP; the job's identities are installed
 *
 * Return: 0, ENOENT if its peer is not in the job, or the vendor's error.
 */
int ibckpt_qp_to_rtr(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE, ret;

	if (!qp_state_reached(qp, IBV_QPS_RTR))
		return 0;
	if (qp->vqp.qp.qp_type != IBV_QPT_UD) {
		qp->rel.peer_vdev = ibckpt_remap_dev_of(&h->ah_attr);
		if (!qp->rel.peer_vdev ||
		    !ibckpt_remap_find(IBCKPT_ID_QPN, qp->rel.peer_vdev, h->dest_qp_num,
				       &a.dest_qp_num)) {
			ibckpt_restart_err("QP %u: its peer QP %u is not in the job",
					   qp->vqp.qp.qp_num, h->dest_qp_num);
			return ENOENT;
		}
		a.ah_attr = h->ah_attr;
		ibckpt_ah_attr_to_real(&qp->ctx->addrs, &a.ah_attr);
		a.path_mtu = h->path_mtu;
		a.rq_psn = qp->rel.rq_psn;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->vqp.qp.qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = h->max_dest_rd_atomic;
			a.min_rnr_timer = h->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	ret = ibv_modify_qp(qp->real, &a, mask);
	if (ret)
		ibckpt_restart_err("QP %u: to RTR: %s", qp->vqp.qp.qp_num, strerror(ret));
	ibckpt_dbg("QP %u: RTR: real QPN %u, peer %u, rq_psn %#x", qp->vqp.qp.qp_num,
		   qp->real->qp_num, a.dest_qp_num, a.rq_psn);
	return ret;
}

/* A logged send request, as the application posted it. */
static void wr_from_log(const struct ibckpt_wr *e, const struct ibv_sge *sge,
			const uint8_t *inl, struct ibv_send_wr *w, struct ibv_sge *inl_sge)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = e->wr_id;
	w->opcode = (enum ibv_wr_opcode)e->opcode;
	w->send_flags = e->send_flags;
	w->imm_data = e->imm_data;
	w->wr = e->wr;
	if (e->inline_len) {	/* its bytes, copied at post time */
		*inl_sge = (struct ibv_sge){ .addr = (uintptr_t)inl, .length = e->inline_len };
		w->sg_list = inl_sge;
		w->num_sge = 1;
		w->send_flags |= IBV_SEND_INLINE;
	} else {
		w->sg_list = (struct ibv_sge *)sge;
		w->num_sge = e->num_sge;
	}
}

/**
 * ibckpt_qp_rts() - a re-created QP, RTR -> RTS, nothing posted
 * @qp: a QP at RTR (REMAP: to bind windows through it), or already moved
 *
 * Return: 0 or an errno (said).
 */
int ibckpt_qp_rts(struct ibckpt_qp *qp)
{
	const struct ibv_qp_attr *h = &qp->hist.attr;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = qp->rel.sq_psn };
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN, ret;

	if (qp->rel.at_rts)
		return 0;
	if (qp->vqp.qp.qp_type == IBV_QPT_RC) {
		a.timeout = h->timeout;
		a.retry_cnt = h->retry_cnt;
		a.rnr_retry = h->rnr_retry;
		a.max_rd_atomic = h->max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	ret = ibv_modify_qp(qp->real, &a, mask);
	if (ret) {
		struct ibv_qp_init_attr ia;
		struct ibv_qp_attr cur;

		/* where the vendor's QP is: the reason is often there */
		if (ibv_query_qp(qp->real, &cur, IBV_QP_STATE, &ia))
			cur.qp_state = (enum ibv_qp_state)-1;
		ibckpt_restart_err("QP %u: to RTS from state %d (sq_psn %#x, rd_atomic %u): %s",
				   qp->vqp.qp.qp_num, (int)cur.qp_state, a.sq_psn,
				   a.max_rd_atomic, strerror(ret));
		return ret;
	}
	qp->rel.at_rts = true;
	return 0;
}

/**
 * ibckpt_qp_to_rts() - RTR -> RTS, then the sends still logged, again
 * @qp: a QP at RTR (or at RTS already: ibckpt_qp_rts()); every QP of the
 *	job is
 *
 * Return: 0 or an errno.
 */
int ibckpt_qp_to_rts(struct ibckpt_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	const struct ibckpt_wr *e;
	const struct ibv_sge *sge;
	const uint8_t *inl;
	uint32_t i;
	int ret;

	if (qp->rel.state == IBV_QPS_ERR)
		return ibv_modify_qp(qp->real, &a, IBV_QP_STATE);
	if (!qp_state_reached(qp, IBV_QPS_RTS))
		return 0;
	ret = ibckpt_qp_rts(qp);
	qp->rel.at_rts = false;
	if (ret)
		return ret;
	ibckpt_spin_lock(&qp->sq_lock);
	ibckpt_wrlog_settle(&qp->sq);
	/* the logged sends go out again from the PSN due */
	e = ibckpt_wrlog_at(&qp->sq, 0, NULL, NULL);
	qp->psn_base = (qp->rel.sq_psn - (e ? e->psn_start : qp->sq.psn_sum)) & IBCKPT_PSN_MASK;
	qp->psn_based = true;
	for (i = 0; !ret && (e = ibckpt_wrlog_at(&qp->sq, i, &sge, &inl)) != NULL; i++) {
		struct ibv_send_wr w;
		struct ibv_sge one;

		wr_from_log(e, sge, inl, &w, &one);
		ibckpt_dbg("QP %u: again: wr_id %#llx opcode %d flags %#x sges %d psn %#x rkey %#x",
			   qp->vqp.qp.qp_num, (unsigned long long)w.wr_id, w.opcode,
			   w.send_flags, w.num_sge,
			   (e->psn_start + qp->psn_base) & IBCKPT_PSN_MASK, w.wr.rdma.rkey);
		ret = post_one_xlate(qp, &w);
	}
	ibckpt_spin_unlock(&qp->sq_lock);
	if (ret)
		ibckpt_restart_err("QP %u: posting a logged send again: %s", qp->vqp.qp.qp_num,
				   strerror(ret));
	return ret;
}
