/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shadow objects of the stacking provider.
 *
 * The application only ever holds the structs below (first member: the
 * ibv_* struct libibverbs and the application see); each holds the vendor's
 * real object, which only the vendor and this provider see. Real objects are
 * created with their user context (qp_context, cq_context, srq_context) set
 * to their shadow, so that what the kernel hands back as a handle (events)
 * leads back to the shadow in O(1).
 *
 * Forwarding calls libibverbs' public API on the real objects: libibverbs
 * then does for the vendor exactly what it does for any application
 * (field set-up, fork protection, event accounting).
 */
#ifndef IBCKPT_PROVIDER_H
#define IBCKPT_PROVIDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <linux/ibckpt_snapshot.h>
#include "rdma_core_abi.h"
#include "compiler.h"
#include "addr.h"
#include "gate.h"
#include "spinlock.h"
#include "vcq.h"
#include "vidmap.h"
#include "wrlog.h"

#define ibckpt_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

extern bool ibckpt_debug;
#define ibckpt_dbg(fmt, ...) do {					\
	if (ibckpt_debug)						\
		fprintf(stderr, "ibckpt: " fmt "\n", ##__VA_ARGS__);	\
} while (0)

/* Provider statistics: proof that verbs go through us (IBCKPT_STATS=1). */
struct ibckpt_stats {
	atomic_ulong post_send, post_recv, post_srq_recv, poll_cq, wc, cq_events,
		async_events, objects, drained, quiesces;
};

/*
 * The data path's counts (posts, polls, completions) are kept only with
 * IBCKPT_STATS in the environment, by the counting data path verbs.c sets
 * over the verbs (counted always, every verb of every thread would write
 * the context's statistics line, and test a flag). ibckpt_stats_on is set
 * once, at load.
 */
extern bool ibckpt_stats_on;

/* Counting where no ops entry is called: window binds, the ibv_wr_* API. */
#define IBCKPT_COUNT(ctx, field, n)							\
	do {										\
		if (unlikely(ibckpt_stats_on))				\
			atomic_fetch_add_explicit(&(ctx)->stats.field, (n),		\
						  memory_order_relaxed);		\
	} while (0)

/*
 * Every shadow object is on its context's list (under the context's lock)
 * with a handle unique in the process: what a snapshot names it by.
 * type: enum ibckpt_snap_type.
 */
struct ibckpt_obj {
	struct ibckpt_obj *next, *prev;
	uint32_t id;
	uint32_t type;
};

struct ibckpt_device {
	struct verbs_device vdev;		/* libibverbs' view: the shadow */
	const struct verbs_device_ops *vendor;	/* found by vendor.c */
	const struct verbs_match_ent *vendor_match;
	struct verbs_device *real;		/* vendor's device */
	bool real_ready;			/* real's lazy set-up done; dev_lock (context.c) */
	uint32_t driver_id;
};

struct ibckpt_context {
	struct ibckpt_gate gate;		/* hot: first */
	struct ibckpt_context *next;		/* all contexts, under ibckpt_ctx_lock */
	bool remapped;				/* virtual != real IDs (after restart) */
	/* wc_flags of a receive that invalidated a key: the vendor's (mw.c) */
	unsigned int wc_inv;
	bool foreign;				/* a forked child's copy of its parent's (fork.c) */
	struct ibv_context *real;
	pthread_mutex_t lock;			/* cqs, objs */
	/* qpns, qpn_virt, xsrqs: a poll takes it only when its CQ's last_qp misses */
	struct ibckpt_spinlock qpn_lock;
	struct ibckpt_vidmap qpns;		/* virtual QPN -> shadow QP */
	struct ibckpt_vidmap xsrqs;		/* XRC SRQ handle -> shadow SRQ (srq.c) */
	struct ibckpt_spinlock key_lock;	/* lkeys, rkeys (keys.c) */
	/*
	 * Moved (by two, from 1: never 0) after every change of lkeys, under
	 * key_lock: a queue's cached translation (struct ibckpt_key_cache)
	 * holds only while it is the stamp it was filled at. 64 bits: it does
	 * not wrap. On a line of its own: every translated post reads it, and
	 * key_lock is written by every lookup of the tables (SRQ and UD posts,
	 * lists, a cache's miss).
	 */
	union {
		atomic_ulong key_stamp;
		char key_stamp_line[64];
	} __attribute__((aligned(64)));
	struct ibckpt_vidmap lkeys;		/* virtual lkey -> shadow MR */
	struct ibckpt_vidmap rkeys;		/* virtual rkey -> shadow MR */
	struct ibckpt_vidmap mw_virt;		/* window's virtual index -> real one, window */
	struct ibckpt_vidmap mw_real;		/* ... its real index -> virtual one, window */
	struct ibckpt_addrs addrs;		/* virtual LIDs and GIDs (addr.h) */
	struct ibckpt_cq *cqs;			/* its CQs, under lock */
	struct ibckpt_obj objs;			/* all its objects, under lock */
	uint32_t mw2;				/* its type 2 windows, under lock (mw.c) */
	atomic_uint mws;			/* its windows: a failed send looks for theirs */
	uint32_t id;
	bool gate_closed;			/* by the control thread */
	/* Restart (restart.h): by the control thread, gates closed. */
	struct ibckpt_vidmap qpn_virt;		/* real QPN -> virtual, once remapped */
	struct ibckpt_ctx_ident *ident;		/* what peers know it by; NULL before a release */
	struct ibckpt_stats stats;
	struct verbs_context vctx;		/* libibverbs' view; must be last */
};

struct ibckpt_pd {
	struct ibv_pd ibv_pd;
	struct ibv_pd *real;
	struct ibckpt_obj obj;
};

struct ibckpt_mr {
	struct verbs_mr vmr;
	struct ibv_mr *real;
	struct ibckpt_obj obj;
	uint64_t iova;
	uint32_t lkey_gen, rkey_gen;		/* entries in ctx->lkeys, ctx->rkeys */
};

/*
 * A memory window. The application's rkey (ibv_mw.rkey) is virtual: a
 * 24-bit index, the same for the window's whole life, and a key byte that
 * each bind moves. Behind it the vendor's window has its own index (ridx),
 * and a key byte that differs from the virtual one by key_off: equal until a
 * restart, and for type 2 windows always (their binds name the byte). Both
 * indexes are in the context's tables (mw.c), so that a request or
 * completion naming either finds the window in O(1). The last bind posted,
 * or its invalidation, is the window's state at a release (every request
 * has completed then), unless it failed (unsure).
 */
struct ibckpt_mw {
	struct ibv_mw ibv_mw;
	struct ibv_mw *real;
	struct ibckpt_obj obj;
	struct ibv_mw_bind_info bind;		/* .mr: the shadow MR; NULL if unbound */
	struct ibckpt_qp *qp;			/* type 2, bound: the QP that bound it */
	uint32_t vrkey;				/* the key peers know (last bind's, virtual) */
	uint32_t vidx_gen, ridx_gen;		/* entries in ctx->mw_virt, ctx->mw_real */
	/*
	 * The vendor's window's index (its key's bits 31-8), set with it: what
	 * the tables' users read, under key_lock, never the vendor's window,
	 * which its binds write under a send queue's lock.
	 */
	uint32_t ridx;
	uint8_t key_off;			/* real key byte - virtual key byte */
	/*
	 * The last bind or invalidate of it failed, or may have (mw.c): its
	 * state is not known; cleared by the next one posted, or a peer's
	 * invalidation seen. Under key_lock.
	 */
	bool unsure;
};
struct ibckpt_ah {
	struct ibv_ah ibv_ah;
	struct ibv_ah *real;
	struct ibckpt_obj obj;
	struct ibv_ah_attr attr;		/* as created: for snapshots */
	uint64_t peer_vdev;			/* restart: its destination's device */
};

/*
 * An application completion channel we forward events into: its fd now reads
 * from our pipe, fed by the forwarder thread from 'real' (see channel.c).
 * The pipe is what identifies the channel: its address and fd number are
 * reused as soon as the application destroys it.
 */
struct ibckpt_channel {
	struct ibv_comp_channel *real;		/* on the real context */
	int pipe_wr;				/* events for the application's fd */
	dev_t pipe_dev;				/* the pipe's identity */
	ino_t pipe_ino;
	unsigned int users;			/* CQs bound to it */
};

struct ibckpt_cq {
	union {					/* libibverbs inits it (verbs_init_cq) */
		struct ibv_cq ibv_cq;
		struct ibv_cq_ex cq_ex;		/* ibv_create_cq_ex() shadows */
	};
	struct ibckpt_cq *next;			/* in ctx->cqs, under ctx->lock */
	struct ibv_cq_init_attr_ex init;	/* as created (restart); channel: the app's */
	struct ibv_cq *real;
	struct ibckpt_context *ctx;
	struct ibckpt_obj obj;
	struct ibckpt_channel *chan;
	/*
	 * vcq, last_qp and retirement through this CQ: the pollers of one CQ,
	 * and so the 'done' counters of the queues completing to it, are
	 * serialized by it; pollers of different CQs share nothing.
	 */
	struct ibckpt_spinlock lock __attribute__((aligned(64)));
	struct ibckpt_qp *last_qp;		/* last QP completions came for */
		/*
	 * What a poll or drain must do beyond retiring (IBCKPT_CQ_*): 0 but
	 * after a restart, in a context with type 2 windows, or while a
	 * provider-internal request is outstanding; else its completions are
	 * looked at one by one, out of line (cq.c). The one word a poll that
	 * found completions reads for all three, without a lock; changed
	 * with atomic operations, the internal bit under lock.
	 */
	atomic_uint slow;
	/*
	 * Provider-internal requests outstanding on the send queues that
	 * complete here (qp_internal.c), under lock: IBCKPT_CQ_INTERNAL while
	 * not 0, what a poll or drain finds retired one completion at a time
	 * and theirs taken out.
	 */
	uint32_t internal;
	/*
	 * Internal requests whose QP was reset or destroyed while they were
	 * outstanding (counted in 'internal' too): a completion the vendor
	 * made before is still to be dropped (qp_internal.c). Under lock.
	 */
	struct ibckpt_internal_tok *orphans;
	/*
	 * What drains took (cq.c), under lock; while any is left, the lock's
	 * flag says IBCKPT_Q_DRAINED to polls when the CQ is open (spinlock.h).
	 */
	struct ibckpt_vcq vcq;
	struct ibv_wc spill;			/* a drain's, the private queue full */
	bool spilled;
	atomic_bool armed;			/* notification requested, not delivered */
	struct ibv_wc cur;			/* cq_ex: the completion being read */
	uint64_t wc_flags;			/* cq_ex: as created */
	bool ex;				/* created by ibv_create_cq_ex() */
	/* Events, for destroy to wait for their acknowledgements (channel.c): */
	uint32_t events_sent;			/* in the channel or read; chan_lock */
	atomic_uint events_seen;		/* read (cq_event op) */
	atomic_uint async_seen;			/* IBV_EVENT_CQ_ERR read (async_event op) */
	uint32_t async_sent;			/* ... forwarded (channel.c, chan_lock) */
};

/* An XRC domain; the vendor's may be shared with other processes (by file). */
struct ibckpt_xrcd {
	struct ibv_xrcd ibv_xrcd;
	struct ibv_xrcd *real;
	struct ibckpt_obj obj;
	int oflags;				/* as opened: for snapshots */
};

/*
 * A shared receive queue, basic or XRC. Receives posted to an XRC SRQ reach
 * the vendor with a tag for wr_id (srq.c): its completions name the XRC
 * target QP, which may belong to another process, so only the tag can lead
 * a completion back to its SRQ and slot.
 */
struct ibckpt_srq {
	struct ibv_srq ibv_srq;
	struct ibv_srq *real;
	struct ibckpt_obj obj;
	struct ibckpt_context *ctx;
	enum ibv_srq_type type;
	struct ibckpt_xrcd *xrcd;		/* XRC: its domain and CQ */
	struct ibckpt_cq *cq;
	uint32_t srq_num;			/* XRC: the vendor's, what senders name */
	uint32_t xsrq_gen;			/* XRC: entry in ctx->xsrqs */
	uint32_t srq_limit;			/* last armed */
	struct ibv_srq_init_attr_ex init;	/* as created (restart) */
	struct ibckpt_spinlock lock;		/* rq log */
	struct ibckpt_wrlog rq;
	atomic_uint async_seen;			/* async events read (async_event op) */
	uint32_t async_sent;			/* ... forwarded (channel.c, chan_lock) */
};

/* What a QP was when released, for its re-creation (restart.h). */
struct ibckpt_qp_rel {
	enum ibv_qp_state state;
	uint32_t sq_psn, rq_psn;
	uint64_t peer_vdev;			/* device of its RC/UC destination */
	uint32_t qpn_virt_gen;			/* entry in ctx->qpn_virt */
	bool at_rts;				/* moved to RTS before GO (ibckpt_qp_rts()) */
};

/*
 * A provider-internal request's token (qp_internal.c): its address is the
 * request's wr_id, unique while the token lives (until the completion was
 * seen, or cannot come any more), whatever becomes of the QP's shadow.
 */
struct ibckpt_internal_tok {
	struct ibckpt_internal_tok *next;	/* on its CQ's orphans */
	uint32_t qpn;				/* the vendor's QPN it was posted on */
};

/*
 * A provider-internal request on an application's send queue
 * (qp_internal.c): its slot and wr_id tell its completion from the
 * application's. Under the send CQ's lock.
 */
struct ibckpt_qp_internal {
	uint64_t wr_id;				/* the provider's: the token's address */
	struct ibckpt_internal_tok *tok;	/* while pending */
	uint32_t pos;				/* its slot in the send log, free-running */
	bool pending;				/* posted, its completion not seen yet */
	enum ibv_wc_status status;		/* the last one's, once completed */
};

/* The release's fence behind RDMA READs and atomics (fence.c). */
struct ibckpt_qp_fence {
	struct timespec at;			/* posted at (CLOCK_MONOTONIC) */
	unsigned int ms;			/* to be waited for this long at most */
	uint8_t kind;				/* enum ibckpt_fence_kind: planned or posted */
	bool planned;				/* by this release's checks, not posted yet */
	bool posted;				/* by this release, not waited for yet */
	struct ibv_send_wr wr;			/* the planned fence, the vendor's terms */
	struct ibckpt_qp *next;			/* on the list a release waits on */
	struct ibv_mr *mr;			/* an atomic fence's result lands in buf */
	void *buf;
};

/* The QP attributes given so far, merged: what a restart replays. */
struct ibckpt_qp_history {
	struct ibv_qp_attr attr;
	int mask;
	unsigned int calls;
};

/*
 * Staging of the ibv_wr_* API (qp_ex.c): the requests built since
 * ibv_wr_start(), posted by ibv_wr_complete(). Used by one thread at a
 * time, as the API requires; no lock of its own.
 */
struct ibckpt_qpx {
	uint64_t flags;				/* send_ops_flags, as created */
	struct ibv_send_wr *wr;			/* alloc slots, up to max */
	struct ibv_sge *sge;			/* max_sge per slot (at least one) */
	uint8_t *inl;				/* max_inline bytes per slot */
	uint8_t *hdr;				/* TSO: max_hdr bytes per slot */
	uint32_t n, alloc, max, max_sge, max_inline, max_hdr;
	int err;				/* first error since wr_start */
	struct ibv_send_wr scratch;		/* absorbs setters after an error */
	struct ibv_sge scratch_sge;
};

/*
 * A queue pair. XRC target QPs (created or opened) have no queue of their
 * own: no logs, and no entry in ctx->qpns (their completions are their XRC
 * SRQs', found by tag).
 */
struct ibckpt_mcast {
	union ibv_gid gid;
	uint16_t lid;
};

/*
 * After a restart, the last key a queue translated (qp_post.c): written and read
 * under the queue's lock, so no other thread's line. An lkey entry holds
 * while its stamp is the context's key_stamp; an rkey entry names the peer
 * device it was found for (a restart empties both: ibckpt_qp_set_paths()).
 * stamp 0: empty.
 */
struct ibckpt_key_cache {
	uint64_t vdev;		/* rkeys: the peer's device */
	uint64_t stamp;		/* lkeys: ctx->key_stamp when filled; rkeys: 1 */
	uint32_t vkey;
	uint32_t real;
};

struct ibckpt_qp {
	struct verbs_qp vqp;
	struct ibv_qp *real;
	struct ibckpt_context *ctx;
	struct ibckpt_srq *srq;
	struct ibckpt_xrcd *xrcd;		/* XRC target QPs */
	bool opened;				/* by ibv_open_qp(), not created (snapshots) */
	bool rq_logged;				/* its own receive queue, in rq */
	/*
	 * Which posts take a one-request path, decided once: at the create,
	 * and at a restart (ibckpt_qp_set_paths()). IBCKPT_POST_SEND, _RECV:
	 * identity IDs; _SEND_XL, _RECV_XL: a remapped context's, translated
	 * (inline in the entries a restart sets, qp_post.c); none: the general
	 * path (types from UD up, queues without a log).
	 */
	uint8_t fast;
	/*
	 * The vendor's QPN, kept in the shadow: a poller after a restart
	 * compares completions with it while a destroy may already have freed
	 * the vendor's QP (cq.c). Written with qp->real (create, recreate).
	 */
	uint32_t real_qpn;
	struct ibckpt_obj obj;
	/*
	 * Each queue's lock and log on lines of their own, apart from the
	 * fields above that posters and pollers of both queues read, so that
	 * a thread posting sends, one posting receives and one polling take
	 * no line from each other (pollers write 'done': wrlog.h).
	 */
	struct ibckpt_spinlock sq_lock __attribute__((aligned(64)));	/* sq log, caches */
	struct ibckpt_wrlog sq;
	struct ibckpt_key_cache sq_lkey, sq_rkey;
	struct ibckpt_spinlock rq_lock __attribute__((aligned(64)));	/* rq log, cache */
	struct ibckpt_wrlog rq;
	struct ibckpt_key_cache rq_lkey;
	struct ibckpt_qp_history hist;
	struct ibv_qp_init_attr_ex init;	/* as created, caps as granted (restart) */
	struct ibckpt_qp_rel rel;		/* restart: the state at the release */
	/*
	 * Connected QPs: its next PSN once every logged send is transmitted is
	 * psn_base + sq.psn_sum (both under sq_lock); psn_based once the QP
	 * was given a send PSN (RTS).
	 */
	uint32_t psn_base;
	bool psn_based;
	/* multicast groups it is attached to (restart: attached again); ctx->lock */
	struct ibckpt_mcast *mcast;
	uint32_t nmcast;
	uint32_t qpn_gen;
	struct ibckpt_qpx *qpx;			/* ibv_wr_* API, NULL if not asked for */
	atomic_uint async_seen;			/* async events read (async_event op) */
	uint32_t async_sent;			/* ... forwarded (channel.c, chan_lock) */
	struct ibckpt_qp_internal internal;
	struct ibckpt_qp_fence fence;
	uint32_t mw_marked;			/* send log position windows were marked up to (qp.c) */
};

/* cq->slow: why a CQ's completions are looked at one by one (cq.c) */
#define IBCKPT_CQ_REMAPPED	1u	/* its context's QPNs are virtual: translated back */
#define IBCKPT_CQ_WINDOWS	2u	/* ... has type 2 windows: a receive may invalidate one */
#define IBCKPT_CQ_INTERNAL	4u	/* a provider-internal request's completion to drop */

#define IBCKPT_POST_SEND	1u	/* qp->fast: RC/UC with a send log, identity IDs */
#define IBCKPT_POST_RECV	2u	/* qp->fast: its own receive log, identity IDs */
#define IBCKPT_POST_SEND_XL	4u	/* ... RC/UC with a send log, remapped: translated */
#define IBCKPT_POST_RECV_XL	8u	/* ... its own receive log, remapped: translated */

/* What an async event's element is, as ibv_get_async_event() decodes it. */
enum ibckpt_async_obj {
	IBCKPT_ASYNC_PORT,		/* port and device events: a port number */
	IBCKPT_ASYNC_CQ,
	IBCKPT_ASYNC_QP,
	IBCKPT_ASYNC_SRQ,
	IBCKPT_ASYNC_WQ,
};

static inline enum ibckpt_async_obj ibckpt_async_obj(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return IBCKPT_ASYNC_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return IBCKPT_ASYNC_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return IBCKPT_ASYNC_SRQ;
	case IBV_EVENT_WQ_FATAL:
		return IBCKPT_ASYNC_WQ;
	default:
		return IBCKPT_ASYNC_PORT;
	}
}

static inline struct ibckpt_device *to_idev(struct ibv_device *d)
{
	return ibckpt_container_of(d, struct ibckpt_device, vdev.device);
}

static inline struct ibckpt_context *to_ictx(struct ibv_context *c)
{
	return ibckpt_container_of(c, struct ibckpt_context, vctx.context);
}

static inline struct ibckpt_pd *to_ipd(struct ibv_pd *p)
{
	return ibckpt_container_of(p, struct ibckpt_pd, ibv_pd);
}

static inline struct ibckpt_mr *to_imr(struct ibv_mr *m)
{
	return ibckpt_container_of(m, struct ibckpt_mr, vmr.ibv_mr);
}

static inline struct ibckpt_mw *to_imw(struct ibv_mw *m)
{
	return ibckpt_container_of(m, struct ibckpt_mw, ibv_mw);
}

static inline struct ibckpt_ah *to_iah(struct ibv_ah *a)
{
	return ibckpt_container_of(a, struct ibckpt_ah, ibv_ah);
}

static inline struct ibckpt_cq *to_icq(struct ibv_cq *c)
{
	return ibckpt_container_of(c, struct ibckpt_cq, ibv_cq);
}

/* Does @cq hold completions a drain took, to be polled first? Under its lock. */
static inline bool ibckpt_cq_drained(const struct ibckpt_cq *cq)
{
	return !ibckpt_vcq_empty(&cq->vcq) || cq->spilled;
}

static inline struct ibckpt_cq *to_icq_ex(struct ibv_cq_ex *c)
{
	return ibckpt_container_of(c, struct ibckpt_cq, cq_ex);
}

static inline struct ibckpt_srq *to_isrq(struct ibv_srq *s)
{
	return ibckpt_container_of(s, struct ibckpt_srq, ibv_srq);
}

static inline struct ibckpt_xrcd *to_ixrcd(struct ibv_xrcd *x)
{
	return ibckpt_container_of(x, struct ibckpt_xrcd, ibv_xrcd);
}

static inline struct ibckpt_qp *to_iqp(struct ibv_qp *q)
{
	return ibckpt_container_of(q, struct ibckpt_qp, vqp.qp);
}

/*
 * Zeroed memory starting on a cache line, for the objects whose fields are
 * laid out on lines of their own (QPs and SRQs: their logs' 'done'), which
 * calloc() would start anywhere. Freed with free(). NULL without memory.
 */
static inline void *ibckpt_zalloc_lines(size_t size)
{
	void *p;

	if (posix_memalign(&p, 64, size))
		return NULL;
	return memset(p, 0, size);
}

/* context.c: object lists */
void ibckpt_obj_add(struct ibckpt_context *ctx, struct ibckpt_obj *obj, uint32_t type);
void ibckpt_obj_del(struct ibckpt_context *ctx, struct ibckpt_obj *obj);

/* ids.c: object ids */
uint32_t ibckpt_new_id(void);
void ibckpt_id_put(uint32_t id);
void ibckpt_ids_skip_to(uint32_t id);

/* keys.c: virtual lkeys and rkeys */
int ibckpt_key_add(struct ibckpt_context *ctx, struct ibckpt_vidmap *map, uint32_t key,
		   void *obj, uint32_t *gen);
void ibckpt_key_del(struct ibckpt_context *ctx, struct ibckpt_vidmap *map, uint32_t key,
		    uint32_t gen);
uint32_t ibckpt_key_real(struct ibckpt_context *ctx, struct ibckpt_vidmap *map, uint32_t key,
			 uint32_t gen);
void ibckpt_keys_moved(struct ibckpt_context *ctx);

/* snapshot.c */
int ibckpt_snapshot_build(uint64_t session, uint32_t outstanding, bool incomplete, void **buf,
			  size_t *len);

/* context.c: every open context */
extern pthread_mutex_t ibckpt_ctx_lock;
extern struct ibckpt_context *ibckpt_ctxs;
extern struct ibckpt_context *ibckpt_foreign_ctxs;

/*
 * fork.c: the pthread_atfork handlers, and each file's part of them (the
 * order of the locks: fork.c).
 */
enum ibckpt_fork_phase {
	IBCKPT_FORK_PREPARE,		/* take the file's global lock */
	IBCKPT_FORK_PARENT,		/* release it */
	IBCKPT_FORK_CHILD,		/* reset what is the parent's, release it */
};
void ibckpt_fork_init(void);
void ibckpt_context_atfork(enum ibckpt_fork_phase ph);	/* ibckpt_ctx_lock */
void ibckpt_device_atfork(enum ibckpt_fork_phase ph);	/* dev_lock (context.c) */
void ibckpt_ids_atfork(enum ibckpt_fork_phase ph);	/* ids_lock (ids.c), the last one */
void ibckpt_control_atfork(enum ibckpt_fork_phase ph);	/* ctl_lock */
void ibckpt_channel_atfork(enum ibckpt_fork_phase ph);	/* chan_lock */
void ibckpt_vendor_atfork(enum ibckpt_fork_phase ph);	/* the vendor cache's lock */
void ibckpt_rctl_atfork_child(void);			/* under ibckpt_ctx_lock */

/* control.c */
extern bool ibckpt_quiesced;

/*
 * quiesce.c: a context's gate and its queues' closed flags. Posts and polls
 * enter no gate: each takes its queue's lock and tests the queue's flag
 * under it (ibckpt_q_closed()); a closed queue sends the verb to
 * ibckpt_gate_wait_queue() and back. A forked child's inherited context
 * refuses them before any lock: through its ops (verbs.c's foreign data path),
 * or, in entries the ops do not lead to, ibckpt_ctx_refuses().
 */
int ibckpt_ctx_close(struct ibckpt_context *ctx, unsigned int timeout_ms);
void ibckpt_ctx_open(struct ibckpt_context *ctx);

/* Under the queue's lock; acquire: an opening is a release store without the lock. */
static inline bool ibckpt_q_closed(const atomic_uint *closed)
{
	return atomic_load_explicit(closed, memory_order_acquire) != 0;
}

/*
 * Inherited by a forked child (fork.c): its queues' locks may be copied
 * held. Tested by the data-path entries that are not the context's ops
 * (extended CQs' polls, ibv_wr_* batches); the child's ops of an inherited
 * context refuse before any entry is reached (fork.c).
 */
static inline bool ibckpt_ctx_refuses(const struct ibckpt_context *ctx)
{
	return atomic_load_explicit(&ctx->gate.closed, memory_order_relaxed) ==
	       IBCKPT_GATE_FOREIGN;
}

void ibckpt_control_start(void);
int ibckpt_cq_drain(struct ibckpt_cq *cq, uint32_t *moved);
void ibckpt_cq_forget_qp(struct ibv_cq *ibcq, struct ibckpt_qp *qp);
void ibckpt_cq_internal(struct ibckpt_cq *cq, int d);
void ibckpt_ctx_slow_polls(struct ibckpt_context *ctx, unsigned int bit, bool on);

/* verbs.c: what libibverbs calls (its header has the table of states) */
extern const struct verbs_context_ops ibckpt_ctx_ops;

enum ibckpt_datapath_kind {
	IBCKPT_DP_IDENTITY,
	IBCKPT_DP_REMAPPED,
	IBCKPT_DP_COUNTED,
	IBCKPT_DP_FOREIGN,
	IBCKPT_DP_NR
};

/**
 * struct ibckpt_datapath - the entries libibverbs calls through a
 *	context's struct ibv_context_ops on every post and poll
 * @post_send: ibv_post_send()
 * @post_recv: ibv_post_recv()
 * @post_srq_recv: ibv_post_srq_recv()
 * @poll_cq: ibv_poll_cq()
 */
struct ibckpt_datapath {
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad);
	int (*poll_cq)(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
};

extern const struct ibckpt_datapath ibckpt_datapaths[IBCKPT_DP_NR];
void ibckpt_ctx_set_ops(struct ibckpt_context *ctx);
void ibckpt_ctx_set_datapath(struct ibckpt_context *ctx);

/* vendor.c */
const struct verbs_device_ops *ibckpt_vendor_find(uint32_t driver_id,
						  const struct verbs_match_ent **match);

/* context.c */
struct verbs_context *ibckpt_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					   void *private_data);
void ibckpt_context_init(struct ibckpt_context *ctx, struct ibv_context *real);
void ibckpt_context_fini(struct ibckpt_context *ctx);
void ibckpt_free_context(struct ibv_context *context);
void ibckpt_async_event(struct ibv_context *context, struct ibv_async_event *event);
int ibckpt_query_port(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr);
int ibckpt_query_device_ex(struct ibv_context *context,
			   const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size);
/* Held by alloc_context(); closed from a release to its reacquire (restart.h). */
extern struct ibckpt_gate ibckpt_open_gate;
/* A destroy waits until the events the application obtained are acknowledged. */
void ibckpt_await_acks(pthread_mutex_t *mutex, pthread_cond_t *cond, const uint32_t *acked,
		       uint32_t obtained);

/* channel.c: the forwarding of completion events (the control thread's, if any) */
struct fwd_chan;
struct pollfd;
struct ibckpt_fwd_poll {
	struct pollfd *pfd;
	struct fwd_chan **seen;
	unsigned int n, cap;
	unsigned long gen;
};
unsigned int ibckpt_fwd_build(struct ibckpt_fwd_poll *f, bool control);
void ibckpt_fwd_handle(struct ibckpt_fwd_poll *f);
int ibckpt_fwd_orphaned(void);
int ibckpt_fwd_init(void);
void ibckpt_fwd_flush(struct ibckpt_context *ctx);
int ibckpt_async_open(struct ibckpt_context *ctx);
void ibckpt_async_reopen(struct ibckpt_context *ctx);
bool ibckpt_async_put(struct ibckpt_context *ctx, const void *element, uint32_t *sent,
		      atomic_uint *seen);
void ibckpt_channel_notify(struct ibckpt_cq *cq);
bool ibckpt_control_forwards(void);	/* control.c */

/* channel.c */
int ibckpt_channel_get(struct ibckpt_context *ctx, struct ibv_comp_channel *app,
		       struct ibckpt_channel **out);
bool ibckpt_channel_put(struct ibckpt_cq *cq);
void ibckpt_channel_cleanup(struct ibckpt_context *ctx);

/* per-object verbs, one file each */
struct ibv_pd *ibckpt_alloc_pd(struct ibv_context *context);
int ibckpt_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *ibckpt_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			     int access);
int ibckpt_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *ibckpt_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int ibckpt_dealloc_mw(struct ibv_mw *mw);
int ibckpt_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
void ibckpt_mw_bound(struct ibckpt_mw *mw, const struct ibv_mw_bind_info *bind, uint32_t rkey,
		     struct ibckpt_qp *qp);
struct ibckpt_mw *ibckpt_mw_find(struct ibckpt_context *ctx, uint32_t rkey, bool real);
void ibckpt_mw_wr_real(const struct ibv_send_wr *src, struct ibv_send_wr *c);
void ibckpt_mw_moved(struct ibckpt_context *ctx, const struct ibv_send_wr *wr,
		     struct ibckpt_qp *qp);

/*
 * A request the vendor took: a bind or a local invalidate moves a window
 * (ibckpt_mw_moved()); any other costs one compare, not a call (the
 * translating path after a restart asks for each request).
 */
static inline void ibckpt_mw_posted(struct ibckpt_context *ctx, const struct ibv_send_wr *wr,
				    struct ibckpt_qp *qp)
{
	_Static_assert(IBV_WR_BIND_MW == IBV_WR_LOCAL_INV + 1, "one compare");
	if ((unsigned int)wr->opcode - IBV_WR_LOCAL_INV <= 1)
		ibckpt_mw_moved(ctx, wr, qp);
}
void ibckpt_mw_wc(struct ibckpt_context *ctx, struct ibv_wc *wc);
void ibckpt_mw_failed(struct ibckpt_context *ctx, const struct ibckpt_wr *e);
void ibckpt_mw_qp_gone(struct ibckpt_context *ctx, struct ibckpt_qp *qp);
void ibckpt_mw_mr_gone(struct ibckpt_context *ctx, struct ibckpt_mr *mr);
unsigned int ibckpt_mw_wc_inv(const char *vendor);
struct ibv_ah *ibckpt_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int ibckpt_destroy_ah(struct ibv_ah *ah);
typedef struct ibv_cq *(*ibckpt_make_cq_fn)(struct ibckpt_cq *cq,
					    struct ibv_comp_channel *real_channel, void *arg);
struct ibckpt_cq *ibckpt_cq_create(struct ibckpt_context *ctx,
				   const struct ibv_cq_init_attr_ex *init, bool ex,
				   ibckpt_make_cq_fn make, void *arg);
struct ibv_cq *ibckpt_create_cq(struct ibv_context *context, int cqe,
				struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *ibckpt_create_cq_ex(struct ibv_context *context,
				      struct ibv_cq_init_attr_ex *attr);
int ibckpt_destroy_cq(struct ibv_cq *cq);
int ibckpt_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibckpt_poll_cq_xl(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibckpt_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void ibckpt_cq_event(struct ibv_cq *cq);
int ibckpt_resize_cq(struct ibv_cq *cq, int cqe);
struct ibv_srq *ibckpt_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int ibckpt_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int ibckpt_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int ibckpt_destroy_srq(struct ibv_srq *srq);
int ibckpt_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int ibckpt_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_srq *ibckpt_create_srq_ex(struct ibv_context *context,
				     struct ibv_srq_init_attr_ex *attr);
void ibckpt_xsrq_retire(struct ibckpt_context *ctx, struct ibv_wc *wc);
struct ibv_xrcd *ibckpt_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr);
int ibckpt_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_qp *ibckpt_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr);
struct ibv_qp *ibckpt_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *ibckpt_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
int ibckpt_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int ibckpt_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		    struct ibv_qp_init_attr *init);
int ibckpt_destroy_qp(struct ibv_qp *qp);
int ibckpt_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int ibckpt_post_send_xl(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
void ibckpt_send_wr_real(struct ibckpt_qp *qp, const struct ibv_send_wr *src,
			 struct ibv_send_wr *c, struct ibv_sge *s);
int ibckpt_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int ibckpt_post_recv_xl(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int ibckpt_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int ibckpt_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);

/* qp_ex.c: the ibv_wr_* API on shadow QPs */
int ibckpt_qpx_check(uint64_t flags);
int ibckpt_qpx_init(struct ibckpt_qp *qp, uint64_t flags, const struct ibv_qp_cap *cap,
		    uint32_t max_tso_header);
void ibckpt_qpx_free(struct ibckpt_qpx *s);
/* Bytes the staging holds now. */
size_t ibckpt_qpx_bytes(const struct ibckpt_qpx *s);
/* qp_ex_post.c: a batch to the vendor's ibv_wr_* API, whole or not at all */
int ibckpt_qpx_post(struct ibckpt_qp *qp, struct ibv_send_wr *wr);

/* qp_internal.c: provider-internal requests on an application's QP */
int ibckpt_qp_internal_post(struct ibckpt_qp *qp, struct ibv_send_wr *wr);
int ibckpt_qp_internal_wait(struct ibckpt_qp *qp, unsigned int timeout_ms);
int ibckpt_qp_post_internal(struct ibckpt_qp *qp, struct ibv_send_wr *wr,
			    unsigned int timeout_ms);
int ibckpt_qp_internal_check(struct ibckpt_qp *qp, bool *pending, enum ibv_wc_status *status);
bool ibckpt_qp_internal_pending(struct ibckpt_qp *qp);
uint64_t ibckpt_qp_internal_wr_id(struct ibckpt_qp *qp);
void ibckpt_qp_internal_forget(struct ibckpt_qp *qp);
void ibckpt_qp_internal_gone(struct ibckpt_qp *qp);
bool ibckpt_cq_orphan(struct ibckpt_cq *cq, const struct ibv_wc *wc);
void ibckpt_cq_orphans_drop(struct ibckpt_cq *cq);
bool ibckpt_qp_retire_checked(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
			      struct ibv_wc *wc);

/* Retiring the logged request a completion reports (cq.c polls, qp.c owns the logs). */
struct ibckpt_qp *ibckpt_qp_lookup(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
				    struct ibv_wc *wc);
void ibckpt_qp_retire_exact(struct ibckpt_qp *qp, const struct ibckpt_cq *cq,
			    const struct ibv_wc *wc);

static inline void ibckpt_qp_retire_into(struct ibckpt_qp *qp, const struct ibckpt_cq *cq,
					 struct ibv_wc *wc);

/**
 * ibckpt_qp_retire() - retire the logged request a completion reports
 * @ctx: context of the CQ
 * @cq: the CQ it came from; its lock is held (the pollers of each queue are
 *	serialized, and a QP this CQ remembers cannot go away: its destroy
 *	forgets it under this lock, ibckpt_cq_forget_qp())
 * @wc: a completion as the vendor returned it; an XRC SRQ's gets the
 *	application's wr_id back
 *
 * Inline in the poll loop: a successful completion of a send queue, or of a
 * receive queue without SRQ, is only counted (wrlog.h settles it later).
 * Completions mostly come in runs for one QP, and a CQ mostly serves one:
 * the CQ's last QP is tried first, and the context's table (qpn_lock) only
 * when it is another.
 */
static inline void ibckpt_qp_retire(struct ibckpt_context *ctx, struct ibckpt_cq *cq,
				    struct ibv_wc *wc)
{
	struct ibckpt_qp *qp = cq->last_qp;

	if (unlikely(!qp || qp->vqp.qp.qp_num != wc->qp_num)) {
		qp = ibckpt_qp_lookup(ctx, cq, wc);
		if (!qp)	/* an XRC SRQ's (retired there), or a destroyed QP's */
			return;
	}
	ibckpt_qp_retire_into(qp, cq, wc);
}

/* The second half of ibckpt_qp_retire(): @qp is the completion's QP, @cq's lock held. */
static inline void ibckpt_qp_retire_into(struct ibckpt_qp *qp, const struct ibckpt_cq *cq,
					 struct ibv_wc *wc)
{
	if (likely(wc->status == IBV_WC_SUCCESS)) {
		if (!(wc->opcode & IBV_WC_RECV)) {
			ibckpt_wrlog_done(&qp->sq);
			return;
		}
		if (!qp->srq) {
			ibckpt_wrlog_done(&qp->rq);
			return;
		}
	}
	ibckpt_qp_retire_exact(qp, cq, wc);
}

#endif
