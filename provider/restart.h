/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Release and reacquire (Documentation/restart.rst).
 *
 * A release tears down every vendor object of a quiesced process, behind
 * the same shadows: the process then holds nothing a checkpointer cannot
 * dump (no uverbs file, event file, device mapping). A reacquire opens the
 * devices again and re-creates every object from what its shadow recorded,
 * in three phases the CLI runs over every process of the job:
 *
 *   REACQUIRE  objects re-created, QPs at INIT with their receives posted
 *              again; each process tells its new identities (QPNs, rkeys,
 *              GIDs, LIDs), keyed by what the application knows;
 *   REMAP      every process's identities in: QPs to RTR (peers' new QPNs
 *              and addresses), AHs re-created;
 *   GO         QPs to RTS, logged sends posted again, gates open.
 *
 * From then on the context is 'remapped': posts translate keys and QPNs
 * (qp_post.c, qp_xlate.c, srq.c), polls translate QPNs back (cq.c).
 *
 * restart.c orchestrates; each object's file releases and re-creates its
 * own kind. Everything runs on the control thread, under ibckpt_ctx_lock,
 * with every gate closed: no application thread is inside a verb.
 */
#ifndef IBCKPT_RESTART_H
#define IBCKPT_RESTART_H

#include <linux/ibckpt_restart.h>
#include "ibckpt.h"

#define IBCKPT_MAX_GIDS	16		/* GIDs of port 1 peers may know us by */

/* What peers know a context by: kept from its first release on. */
struct ibckpt_ctx_ident {
	uint64_t vdev;			/* node GUID of the device first opened */
	union ibv_gid vgid[IBCKPT_MAX_GIDS];
	uint32_t ngid;
	uint16_t vlid;
	char devname[64];		/* the device it is open on now */
};

/* A message for the CLI: why a phase failed (restart.c). */
void ibckpt_restart_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ibckpt_restart_err_clear(void);	/* a phase starts with no reason yet */

/* A context's objects released, or re-created (restart.c's steps, for the tests too). */
void ibckpt_ctx_release_objects(struct ibckpt_context *ctx, bool again);
int ibckpt_ctx_recreate_objects(struct ibckpt_context *ctx);

/* Identities published by a reacquire (restart.c collects them). */
int ibckpt_ident_add(uint32_t kind, uint64_t vdev, uint32_t vid, uint32_t real,
		     const union ibv_gid *vgid, const union ibv_gid *gid);

/* remap.c: the identities of every process of the job, from REMAP. */
int ibckpt_remap_set(const struct ibckpt_ident *id, uint32_t n);
bool ibckpt_remap_find(uint32_t kind, uint64_t vdev, uint32_t vid, uint32_t *real);
bool ibckpt_remap_rkey(uint64_t vdev, uint32_t vkey, uint32_t *real);
bool ibckpt_remap_active(void);
bool ibckpt_remap_src_qp(uint32_t real, uint32_t *vid);
bool ibckpt_remap_taken(uint32_t kind, uint64_t vdev, uint32_t id);
bool ibckpt_id_taken(struct ibckpt_context *ctx, uint32_t kind, uint32_t id);
/*
 * remap.c's own kind, never on the wire: the index (bits 31-8) of an MR's
 * key the job translates, for new windows to avoid (ibckpt_remap_taken()).
 */
#define IBCKPT_ID_RKEY_INDEX	0x80000000u

/* Vendor objects a create holds aside while it looks for a free ID. */
#define IBCKPT_ID_TRIES	8
/* The device a destination (an address vector) belongs to; 0: not in the job. */
uint64_t ibckpt_remap_dev_of(const struct ibv_ah_attr *ah);
int ibckpt_remap_addrs(struct ibckpt_addrs *a);
void ibckpt_remap_clear(void);

/* The phases (restart.c), on the control thread; 0 or an errno. */
int ibckpt_release_prepare(uint32_t flags, const struct ibckpt_rpeer *peers, uint32_t npeers);
int ibckpt_release(uint32_t flags, const struct ibckpt_rpeer *peers, uint32_t npeers);
int ibckpt_reacquire(const struct ibckpt_rdev_map *map, uint32_t n,
		     struct ibckpt_ident **ids, uint32_t *nids);
int ibckpt_remap(const struct ibckpt_ident *ids, uint32_t n);
int ibckpt_go(void);
int ibckpt_unacquire(void);
extern unsigned int ibckpt_rctl_deadline_ms;
extern bool ibckpt_released;		/* between a release and its GO */
const char *ibckpt_restart_msg(void);

/* rctl.c: the restart channel's pipes (uapi/linux/ibckpt_restart.h). */
int ibckpt_rctl_open(void);
int ibckpt_rctl_fds(int *cmd, int *reply);
int ibckpt_rctl_wait_fd(void);
int ibckpt_control_reattach(void);	/* control.c */
bool ibckpt_fault_reacquire(void);	/* control.c: fault injection for tests */
bool ibckpt_rctl_serve(void);

/* Per object kind: check, release, re-create (each in its own file). */
int ibckpt_context_release(struct ibckpt_context *ctx);
int ibckpt_context_reopen(struct ibckpt_context *ctx, const char *name);
void ibckpt_pd_release(struct ibckpt_pd *pd);
int ibckpt_pd_recreate(struct ibckpt_pd *pd);
void ibckpt_mr_release(struct ibckpt_mr *mr);
int ibckpt_mr_recreate(struct ibckpt_mr *mr);
void ibckpt_cq_release(struct ibckpt_cq *cq);
int ibckpt_cq_recreate(struct ibckpt_cq *cq);
void ibckpt_channel_release(struct ibckpt_context *ctx);
struct ibv_comp_channel *ibckpt_channel_recreate(struct ibckpt_context *ctx,
						 struct ibckpt_channel *chan);
void ibckpt_srq_release(struct ibckpt_srq *srq);
int ibckpt_srq_recreate(struct ibckpt_srq *srq);
int ibckpt_srq_refill(struct ibckpt_srq *srq);
int ibckpt_qp_release_check(struct ibckpt_qp *qp, uint32_t flags);
/* itimer.c: the real-time interval timer, held from a release to GO */
void ibckpt_itimer_hold(void);
void ibckpt_itimer_resume(void);
void ibckpt_itimer_forget(void);

/* fence.c: the release's fence behind a QP's RDMA READs and atomics */
enum ibckpt_fence_kind {
	IBCKPT_FENCE_NONE,		/* not a fence's (another internal request) */
	IBCKPT_FENCE_WRITE,		/* zero-length RDMA WRITE: the peer grants writes */
	IBCKPT_FENCE_READ,		/* zero-length RDMA READ: ... reads */
	IBCKPT_FENCE_ATOMIC,		/* FETCH_AND_ADD of 0: ... atomics only */
};
int ibckpt_fence_plan(struct ibckpt_qp *qp, int peer);
void ibckpt_fence_unplan(struct ibckpt_qp *qp);
int ibckpt_fence_post(struct ibckpt_qp *qp);
int ibckpt_fences_wait(struct ibckpt_qp *list, bool earlier);
void ibckpt_fence_put(struct ibckpt_qp *qp);
int ibckpt_addr_publishable(const struct ibv_ah_attr *ah, const char *what);
void ibckpt_qp_unacquire(struct ibckpt_qp *qp);
void ibckpt_qp_release(struct ibckpt_qp *qp);
int ibckpt_qp_recreate(struct ibckpt_qp *qp);
struct ibv_cq *ibckpt_real_cq(struct ibv_cq *cq);
int ibckpt_qp_refill(struct ibckpt_qp *qp);
int ibckpt_qp_to_rtr(struct ibckpt_qp *qp);
void ibckpt_qp_set_paths(struct ibckpt_qp *qp);
void ibckpt_ctx_set_remapped(struct ibckpt_context *ctx);
int ibckpt_qp_to_rts(struct ibckpt_qp *qp);
int ibckpt_qp_rts(struct ibckpt_qp *qp);
int ibckpt_mw_release_check(struct ibckpt_mw *mw);
void ibckpt_mw_release(struct ibckpt_mw *mw);
int ibckpt_mw_recreate(struct ibckpt_mw *mw);
int ibckpt_mw_bind_type1(struct ibckpt_context *ctx);
int ibckpt_mw_rebind(struct ibckpt_mw *mw);
void ibckpt_ah_release(struct ibckpt_ah *ah);
int ibckpt_ah_recreate(struct ibckpt_ah *ah);

/* The translating path of a remapped context (qp_xlate.c, srq.c, cq.c). */
void ibckpt_sge_to_real(struct ibckpt_context *ctx, struct ibv_sge *dst,
			const struct ibv_sge *src, int n);
/* qp_xlate.c: one send request posted as a translated copy (sq_lock held) */
int ibckpt_post_one_xlate(struct ibckpt_qp *qp, const struct ibv_send_wr *src);
/* qp_xlate.c: a list logged and posted one by one, translated (sq_lock held) */
int ibckpt_post_send_xlate(struct ibckpt_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
struct ibckpt_recv_target {		/* a receive queue, for ibckpt_post_recv_xlate() */
	struct ibckpt_context *ctx;
	void *real;			/* the vendor's QP or SRQ */
	bool srq;
};
int ibckpt_post_recv_xlate(void *target, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int ibckpt_repost_recvs(struct ibckpt_wrlog *log, struct ibckpt_recv_target *t);
void ibckpt_wc_to_virtual(struct ibckpt_context *ctx, struct ibv_wc *wc, int n);
void ibckpt_wc_ud_source(struct ibckpt_context *ctx, const struct ibckpt_qp *qp,
			 struct ibv_wc *wc);

#endif
