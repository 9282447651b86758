// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Posting to a queue pair: the post_send and post_recv entries, their fast
 * and general paths. This is the hot path, kept in one file so that the
 * compiler sees every helper the entries inline.
 *
 * Posting logs each request before handing the list to the vendor, under
 * the queue's lock so that the log's order is the hardware queue's; what the
 * vendor refuses is forgotten again. UD requests and window binds name
 * shadows: the real objects are swapped in for the vendor and back from the
 * log before returning, so nothing is allocated per request.
 */
#include <string.h>
#include "restart.h"

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
static NOINLINE uint32_t lkey_miss(struct ibckpt_context *ctx,
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

	if (likely(c->vkey == key && c->stamp == stamp))
		return c->real;
	return lkey_miss(ctx, c, key, stamp);
}

/* Requests with other than one SGE: out of line, one SGE keeps few registers. */
static NOINLINE void sges_real(struct ibckpt_context *ctx,
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
static inline ALWAYS_INLINE void sges_to_real(struct ibckpt_context *ctx,
								struct ibckpt_key_cache *c,
								struct ibv_sge *dst,
								const struct ibv_sge *src, int n)
{
	if (likely(n == 1)) {
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

	if (likely(c->stamp && c->vkey == key && c->vdev == vdev))
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
static inline ALWAYS_INLINE int send_xl(struct ibckpt_qp *qp,
							  struct ibv_send_wr *wr,
							  struct ibv_send_wr **bad)
{
	struct ibv_sge s[IBCKPT_XL_SGES];
	struct ibv_send_wr c, *rbad = NULL;
	int ret;

	ret = ibckpt_wrlog_send_fast(&qp->sq, wr);
	if (unlikely(ret != 0)) {
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
	if (unlikely(ret != 0) && rbad) {
		ibckpt_wrlog_unpost(&qp->sq, 1);
		*bad = wr;
	}
	return ret;
}

/* send_xl() for the general path (the identity ops' post_send after a restart). */
static NOINLINE int post_send_xlate_one(struct ibckpt_qp *qp,
							 struct ibv_send_wr *wr,
							 struct ibv_send_wr **bad)
{
	return send_xl(qp, wr, bad);
}

/* The same for one receive request (its own receive queue, rq_lock held). */
static inline ALWAYS_INLINE int recv_xl(struct ibckpt_qp *qp,
							  struct ibv_recv_wr *wr,
							  struct ibv_recv_wr **bad)
{
	struct ibv_sge s[IBCKPT_XL_SGES];
	struct ibv_recv_wr c = { .wr_id = wr->wr_id, .sg_list = s, .num_sge = wr->num_sge };
	struct ibv_recv_wr *rbad = NULL;
	int ret;

	ret = ibckpt_wrlog_recv_fast(&qp->rq, wr);
	if (unlikely(ret != 0)) {
		*bad = wr;
		return ret;
	}
	sges_to_real(qp->ctx, &qp->rq_lkey, s, wr->sg_list, wr->num_sge);
	*bad = NULL;
	ret = ibv_post_recv(qp->real, &c, &rbad);
	if (unlikely(ret != 0) && rbad) {
		ibckpt_wrlog_unpost(&qp->rq, 1);
		*bad = wr;
	}
	return ret;
}

static NOINLINE int post_recv_xlate_one(struct ibckpt_qp *qp,
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
static NOINLINE int post_send_list(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
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
static NOINLINE COLD int post_send_refused(struct ibv_send_wr *wr,
							      struct ibv_send_wr **bad, int err)
{
	*bad = wr;
	return err;
}

static NOINLINE int post_send_failed(struct ibckpt_qp *qp, struct ibv_send_wr **bad,
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
static NOINLINE int post_send_general(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
						       struct ibv_send_wr **bad)
{
	if (unlikely(qp->ctx->remapped)) {
		if (send_xl_takes(qp, wr))
			return post_send_xlate_one(qp, wr, bad);
		return ibckpt_post_send_xlate(qp, wr, bad);
	}
	return post_send_list(qp, wr, bad);
}

/* The send queue found closed by a quiesce (quiesce.c): wait, then post. */
static NOINLINE COLD int post_send_closed(struct ibckpt_qp *qp,
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
static inline ALWAYS_INLINE int post_send_entry(struct ibv_qp *ibqp,
								  struct ibv_send_wr *wr,
								  struct ibv_send_wr **bad, bool xl)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	int ret;

	ibckpt_spin_lock_raw(&qp->sq_lock);
	if (unlikely(ibckpt_q_closed(&qp->sq_lock.closed)))
		return post_send_closed(qp, wr, bad);
	if (xl) {
		if (likely(send_xl_takes(qp, wr)))
			ret = send_xl(qp, wr, bad);
		else
			ret = post_send_general(qp, wr, bad);
	} else if (unlikely(!(qp->fast & IBCKPT_POST_SEND) || !wr || wr->next ||
			    (unsigned int)wr->opcode >= IBV_WR_LOCAL_INV)) {
		/*
		 * Opcodes from IBV_WR_LOCAL_INV up (local invalidates and window
		 * binds, which move a window's state, TSO, SEND_WITH_INV, atomic
		 * write, driver ones) take the general path: one compare.
		 */
		ret = post_send_general(qp, wr, bad);
	} else {
		/* One request naming no shadow: most posts. */
		ret = ibckpt_wrlog_send_fast(&qp->sq, wr);
		if (unlikely(ret != 0)) {
			*bad = wr;
		} else {
			*bad = NULL;	/* a vendor may fail without naming one */
			ret = ibv_post_send(qp->real, wr, bad);
			if (unlikely(ret != 0))
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
static NOINLINE int post_recv_list(struct ibckpt_qp *qp, struct ibv_recv_wr *wr,
						    struct ibv_recv_wr **bad)
{
	struct ibckpt_recv_target t = { .ctx = qp->ctx, .real = qp->real };

	return ibckpt_wrlog_post_recv_list(&qp->rq, &t, ibckpt_post_recv_xlate, wr, bad);
}

/*
 * A receive queue without a log (SRQ, XRC), or a remapped context's: under
 * rq_lock. Only tests and tail calls: no frame of its own.
 */
static NOINLINE int post_recv_general(struct ibckpt_qp *qp, struct ibv_recv_wr *wr,
						       struct ibv_recv_wr **bad)
{
	if (!qp->rq_logged)	/* the vendor's answer, unlogged */
		return ibv_post_recv(qp->real, wr, bad);
	if (recv_xl_takes(qp, wr))
		return post_recv_xlate_one(qp, wr, bad);
	return post_recv_list(qp, wr, bad);
}

static NOINLINE COLD int post_recv_refused(struct ibv_recv_wr *wr,
							      struct ibv_recv_wr **bad, int err)
{
	*bad = wr;
	return err;
}

/* The receive queue found closed by a quiesce (quiesce.c): wait, then post. */
static NOINLINE COLD int post_recv_closed(struct ibckpt_qp *qp,
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
static inline ALWAYS_INLINE int post_recv_entry(struct ibv_qp *ibqp,
								  struct ibv_recv_wr *wr,
								  struct ibv_recv_wr **bad, bool xl)
{
	struct ibckpt_qp *qp = to_iqp(ibqp);
	int ret;

	ibckpt_spin_lock_raw(&qp->rq_lock);
	if (unlikely(ibckpt_q_closed(&qp->rq_lock.closed)))
		return post_recv_closed(qp, wr, bad);
	if (xl) {
		if (likely(recv_xl_takes(qp, wr)))
			ret = recv_xl(qp, wr, bad);
		else
			ret = post_recv_general(qp, wr, bad);
	} else if (unlikely(!(qp->fast & IBCKPT_POST_RECV))) {
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
