/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fake vendor the stack test stacks the provider on (fake_vendor.c):
 * its state, which the cases set and read, its windows, and the calls that
 * make it complete, fire a completion event or raise an async event.
 */
#ifndef IBCKPT_FAKE_VENDOR_H
#define IBCKPT_FAKE_VENDOR_H

#include "../restart.h"

/*
 * The vendor's windows, as Linux 6.1's rxe keeps them (rxe_mw.c): keys from
 * v.ids (else 0x8000110), index in bits 31-8. The device's key moves only
 * when a bind executes, and a bind names the window by the key its ibv_mw
 * holds when posted (rdma-core 44's rxe: mw_rkey) or fails; a type 2 window
 * is bound only when free, to a range, answers the QP that bound it, and a
 * local or remote invalidate frees it; a type 1 bind through ibv_bind_mw()
 * takes the next key byte and moves the ibv_mw's key at its post ("user has
 * to undo this if he gets an error wc"). Binds and invalidates execute at
 * their post; one that fails completes in error, signaled or not. A local
 * invalidate of a free type 2 window is counted in v.mw_oops: 6.1's rxe
 * dereferences its NULL QP.
 */
struct fake_mw {
	struct ibv_mw mw;
	uint32_t key;			/* the device's */
	bool bound;			/* type 2: VALID (else FREE); type 1: to a range */
	struct ibv_qp *qp;		/* type 2, bound: its QP */
	struct ibv_mr *mr;
};

/* What the vendor was given, and what it does next: the cases set and read it. */
struct fake_vendor {
	struct ibv_xrcd_init_attr xrcd_attr;
	struct ibv_srq_init_attr_ex srq_attr;
	struct ibv_qp_init_attr_ex qp_attr;
	struct ibv_qp_open_attr open_attr;
	uint64_t srq_wr_id[64];		/* wr_ids the vendor's SRQs were given */
	unsigned int srq_posts;
	unsigned int recv_posts;	/* receives the vendor's QPs were given */
	struct ibv_sge recv_sge;	/* ... the last one's first SGE */
	struct ibv_sge recv_sges[4];	/* ... its first four */
	int recv_fail;			/* errno for the next post_recv, 0: take it */
	struct ibv_send_wr send;	/* last request the vendor's QP was given */
	struct ibv_sge send_sge;
	struct ibv_sge send_sges[4];	/* the last request's first four SGEs */
	struct ibv_wc cqe[16];		/* what the vendor's CQ returns next */
	int ncqe;
	int destroyed;
	int fail;			/* errno for the next create, 0: succeed */
	char order[16];			/* 's': a send, 'a': an atomic write, as posted */
	int norder;
	uint64_t aw_val[4], aw_wr_id[4];
	uint32_t aw_rkey[4];
	int naw, aw_batch;		/* atomic writes completed / in the open batch */
	int wr_fail;			/* errno for the next wr_complete */
	void (*destroyed_qp)(void);	/* run by ibv_destroy_qp() once it freed the QP */
	char xo[16];			/* the open wr_* batch: 's' a send, 'a' an atomic write */
	int xn;
	char xs[32];			/* ... every call: s a r l (ops), x i g (setters) */
	int xsn;
	uint64_t x_wr_id;		/* the batch's last request */
	struct ibv_sge x_sge;		/* ... and its first SGE */
	struct ibv_ah_attr ah_attr;	/* last create_ah's */
	struct ibv_qp_attr qp_attr_set;	/* last modify_qp's */
	int cq_cap;			/* the most CQ entries the vendor grants, 0: any */
	int query_fail;			/* errno for query_qp, 0: answer */
	union ibv_gid mgid[4];		/* the groups the vendor's QPs are attached to */
	int nmgid;
	uint32_t srq_armed;		/* the last limit armed on a vendor SRQ */
	int mw_binds;			/* ibv_bind_mw() calls */
	struct ibv_mr *mw_bound_to;	/* ... the last one's MR */
	struct fake_mw *mws[16];	/* the vendor's windows (fake_mw_bind()) */
	int mw_errs;			/* binds and local invalidates that failed */
	int mw_refuse;			/* binds the device refuses next (an MR without bind access) */
	int mw_busy;			/* errno for the next dealloc_mw, 0: free it */
	int mw_held;			/* MRs deregistered, QPs destroyed with a window on them */
	int qps_made;			/* QPs the vendor created */
	void (*mw_freed)(uint32_t key);	/* run by ibv_dealloc_mw() once it freed the window */
	int mw_oops;			/* local invalidates of a free type 2 window */
	int srq_arms;			/* how many times one was armed */
	uint32_t ids[16];		/* the QPNs or keys the vendor hands out next */
	int nids, next_id;
	int sends;			/* send requests the vendor's QPs were given */
	/*
	 * hold: each signaled send request posted gets a completion (status
	 * hold_status), held back, with what the test put in held[] before,
	 * until hold_polls more polls of a vendor CQ after its post (-1:
	 * until vendor_delivers())
	 */
	bool hold;
	int hold_polls;
	int hold_left;			/* polls to go, -1: none counted */
	enum ibv_wc_status hold_status;
	struct ibv_wc held[8];
	int nheld;
	int send_fail;			/* errno of a post_send after send_fail_after more */
	int send_fail_after;
	int reg_fail;			/* errno for the next reg_mr, 0: register */
	/* timed: held[i] comes once CLOCK_MONOTONIC passed held_ms[i] (held in order) */
	bool timed;
	uint64_t held_ms[8];
};

struct async_desc {		/* struct ib_uverbs_async_event_desc */
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};

extern struct fake_vendor v;
extern struct verbs_context vendor;
extern struct ibv_pd vendor_pd;
extern int vendor_async_wr;		/* the write end of the vendor's async file */
extern int calloc_fails;

void vendor_init(void);
void *fake_alloc(size_t size);
uint64_t now_ms(void);
void vendor_delivers(void);
void vendor_fires(struct ibv_cq *shadow);
void vendor_raises(enum ibv_event_type type, uint64_t element);
struct fake_mw *fake_mw_of_key(uint32_t key);
enum ibv_wc_status fake_mw_invalidate(uint32_t key);

#endif
