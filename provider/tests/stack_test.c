// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The whole provider stacked on a fake vendor, under ASan + UBSan: the verbs
 * rxe on Debian's 6.1 kernel lacks, so that the VM can only show ibckpt
 * giving rxe's own error (XRC, atomic write through ibv_wr_*, TSO on raw
 * packet QPs), and the LID/GID translation that only a restart sets up.
 *
 * The provider's sources are linked in whole; the vendor is a verbs_context
 * whose ops are the fakes below, and the libibverbs calls that would need a
 * real device are defined here (the executable's definitions win).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include "../restart.h"
#define UNIT_SUITE "provider/stack"
#include "../../tests/unit/unit.h"

/* calloc() failing on purpose: the next calloc_fails calls (linked with --wrap=calloc). */
static int calloc_fails;
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	if (calloc_fails) {
		calloc_fails--;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* ---- the fake vendor ---- */

static struct verbs_context vendor;
static struct ibv_pd vendor_pd = { .context = &vendor.context, .handle = 1 };

struct fake_mw;
static struct ibv_cq_ex *fake_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a);

static struct {
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
} v;

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* What the vendor held back comes, behind what its CQ holds. */
static void vendor_delivers(void)
{
	memcpy(v.cqe + v.ncqe, v.held, (size_t)v.nheld * sizeof(v.held[0]));
	v.ncqe += v.nheld;
	v.nheld = 0;
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

/* The next QPN or key the vendor hands out: v.ids in turn, then @dflt. */
static uint32_t vendor_id(uint32_t dflt)
{
	return v.next_id < v.nids ? v.ids[v.next_id++] : dflt;
}

static void *fake_alloc(size_t size)
{
	void *p = calloc(1, size);

	CHECK(p != NULL);
	return p;
}

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

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *p, enum ibv_mw_type type)
{
	struct fake_mw *f = fake_alloc(sizeof(*f));
	unsigned int i;

	f->mw.context = p->context;
	f->mw.pd = p;
	f->mw.type = type;
	f->mw.rkey = f->key = vendor_id(0x8000110);
	for (i = 0; i < 16 && v.mws[i]; i++)
		;
	CHECK(i < 16);
	if (i < 16)
		v.mws[i] = f;
	return &f->mw;
}

static int fake_dealloc_mw(struct ibv_mw *m)
{
	uint32_t key = m->rkey;
	unsigned int i;

	if (v.mw_busy) {
		i = (unsigned int)v.mw_busy;
		v.mw_busy = 0;
		return (int)i;
	}
	for (i = 0; i < 16; i++)
		if (v.mws[i] == (struct fake_mw *)m)
			v.mws[i] = NULL;
	free(m);
	v.destroyed++;
	if (v.mw_freed)
		v.mw_freed(key);
	return 0;
}

/* The window with @key's index, NULL if none. */
static struct fake_mw *fake_mw_of_key(uint32_t key)
{
	unsigned int i;

	for (i = 0; i < 16; i++)
		if (v.mws[i] && v.mws[i]->key >> 8 == key >> 8)
			return v.mws[i];
	return NULL;
}

/* A bind executing on @q: the device's checks (rxe_bind_mw()), then its new state. */
static enum ibv_wc_status fake_mw_bind(struct ibv_qp *q, struct ibv_mw *m, uint32_t rkey,
				       const struct ibv_mw_bind_info *bi)
{
	struct fake_mw *f = (struct fake_mw *)m;

	if (m->rkey != f->key || v.mw_refuse ||
	    (m->type == IBV_MW_TYPE_2 && (f->bound || !bi->mr || !bi->length))) {
		v.mw_refuse -= v.mw_refuse > 0;
		v.mw_errs++;
		return IBV_WC_MW_BIND_ERR;
	}
	f->key = (f->key & ~0xffu) | (rkey & 0xff);
	f->bound = bi->mr && bi->length;
	f->mr = f->bound ? bi->mr : NULL;
	f->qp = f->bound && m->type == IBV_MW_TYPE_2 ? q : NULL;
	return IBV_WC_SUCCESS;
}

/*
 * An invalidate of @key (a LOCAL_INV on the device, or a peer's send with
 * invalidate that arrived): a window's frees it, if the key is the one it
 * has (rxe_invalidate_mw()); a key of no window's index is an MR's.
 */
static enum ibv_wc_status fake_mw_invalidate(uint32_t key)
{
	struct fake_mw *f = fake_mw_of_key(key);

	if (!f)
		return IBV_WC_SUCCESS;
	if (f->mw.type != IBV_MW_TYPE_2 || f->key != key) {
		v.mw_errs++;
		return IBV_WC_MW_BIND_ERR;
	}
	if (!f->bound)
		v.mw_oops++;
	f->bound = false;
	f->qp = NULL;
	f->mr = NULL;
	return IBV_WC_SUCCESS;
}

static struct ibv_xrcd *fake_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a)
{
	struct ibv_xrcd *x;

	if (v.fail) {
		errno = v.fail;
		return NULL;
	}
	v.xrcd_attr = *a;
	x = fake_alloc(sizeof(*x));
	x->context = c;
	return x;
}

static int fake_close_xrcd(struct ibv_xrcd *x)
{
	CHECK(x->context == &vendor.context);
	free(x);
	v.destroyed++;
	return 0;
}

static struct ibv_srq *fake_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *a)
{
	struct ibv_srq *s;

	if (v.fail) {
		errno = v.fail;
		return NULL;
	}
	v.srq_attr = *a;
	a->attr.max_wr = 8;
	a->attr.max_sge = 1;
	s = fake_alloc(sizeof(*s));
	s->context = c;
	s->srq_context = a->srq_context;
	s->handle = 40;
	return s;
}

static int fake_get_srq_num(struct ibv_srq *s, uint32_t *num)
{
	*num = 0x5000 + (uint32_t)(uintptr_t)s % 64;
	return 0;
}

static int fake_post_srq_recv(struct ibv_srq *s, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)s;
	*bad = NULL;
	for (; wr; wr = wr->next)
		v.srq_wr_id[v.srq_posts++ % 64] = wr->wr_id;
	return 0;
}

/* The vendor's own ibv_wr_* API: a batch is posted whole at wr_complete, or not at all. */
static void fake_wr_start(struct ibv_qp_ex *x)
{
	(void)x;
	v.aw_batch = 0;
	v.xn = 0;
	v.xsn = 0;
	memset(v.xs, 0, sizeof(v.xs));
}

static void x_call(char c)
{
	if (v.xsn < 31)
		v.xs[v.xsn++] = c;
}

static void fake_wr_send(struct ibv_qp_ex *x)
{
	v.x_wr_id = x->wr_id;
	if (v.xn < 16)
		v.xo[v.xn++] = 's';
	x_call('s');
}

static void fake_wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	(void)rkey;
	(void)addr;
	v.x_wr_id = x->wr_id;
	if (v.xn < 16)
		v.xo[v.xn++] = 'r';
	x_call('r');
}

/* The vendor's QP of one of its qp_ex. */
static struct ibv_qp *fake_qp_of(struct ibv_qp_ex *x)
{
	return &((struct verbs_qp *)((char *)x - offsetof(struct verbs_qp, qp_ex)))->qp;
}

/* A local operation of a wr_* batch executes at once (fake_post_send()'s rules). */
static void fake_x_local(struct ibv_qp_ex *x, enum ibv_wr_opcode op, enum ibv_wc_status st)
{
	if (st != IBV_WC_SUCCESS)
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = x->wr_id, .status = st,
						   .opcode = wc_opcode(op),
						   .qp_num = fake_qp_of(x)->qp_num };
}

static void fake_wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	fake_x_local(x, IBV_WR_LOCAL_INV, fake_mw_invalidate(rkey));
	v.send.invalidate_rkey = rkey;
	v.x_wr_id = x->wr_id;
	if (v.xn < 16)
		v.xo[v.xn++] = 'l';
	x_call('l');
}

static void fake_wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
			    const struct ibv_mw_bind_info *bi)
{
	fake_x_local(x, IBV_WR_BIND_MW, fake_mw_bind(fake_qp_of(x), mw, rkey, bi));
	v.x_wr_id = x->wr_id;
	v.send.bind_mw.mw = mw;
	v.send.bind_mw.rkey = rkey;
	v.send.bind_mw.bind_info = *bi;
	x_call('b');
}

static void fake_wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t srqn)
{
	(void)x;
	(void)srqn;
	x_call('x');
}

static void fake_wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t len)
{
	(void)x;
	(void)addr;
	(void)len;
	x_call('i');
}

static void fake_wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sge)
{
	(void)x;
	if (n)
		v.x_sge = sge[0];
	x_call('g');
}

static void fake_wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
				 const void *data)
{
	int i = v.naw + v.aw_batch++;

	CHECK(i < 4);
	if (i >= 4)
		return;
	(void)addr;
	v.aw_wr_id[i] = x->wr_id;
	v.aw_rkey[i] = rkey;
	memcpy(&v.aw_val[i], data, 8);
	if (v.xn < 16)
		v.xo[v.xn++] = 'a';
}

static int fake_wr_complete(struct ibv_qp_ex *x)
{
	int i;

	(void)x;
	if (v.wr_fail)
		return v.wr_fail;	/* nothing posted */
	for (i = 0; i < v.xn; i++)
		v.order[v.norder++ % 16] = v.xo[i];
	v.naw += v.aw_batch;
	return 0;
}

static struct ibv_qp *fake_qp(struct ibv_context *c, enum ibv_qp_type type, uint32_t qpn)
{
	struct verbs_qp *vq = fake_alloc(sizeof(*vq));
	struct ibv_qp *q = &vq->qp;

	q->context = c;
	q->qp_type = type;
	q->qp_num = qpn;
	q->state = IBV_QPS_RESET;
	vq->comp_mask = VERBS_QP_EX;
	vq->qp_ex.wr_start = fake_wr_start;
	vq->qp_ex.wr_send = fake_wr_send;
	vq->qp_ex.wr_rdma_read = fake_wr_rdma_read;
	vq->qp_ex.wr_local_inv = fake_wr_local_inv;
	vq->qp_ex.wr_bind_mw = fake_wr_bind_mw;
	vq->qp_ex.wr_set_xrc_srqn = fake_wr_set_xrc_srqn;
	vq->qp_ex.wr_set_inline_data = fake_wr_set_inline_data;
	vq->qp_ex.wr_set_sge_list = fake_wr_set_sge_list;
	vq->qp_ex.wr_atomic_write = fake_wr_atomic_write;
	vq->qp_ex.wr_complete = fake_wr_complete;
	return q;
}

/* As libibverbs' own. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *q)
{
	struct verbs_qp *vq = (struct verbs_qp *)q;

	return vq->comp_mask & VERBS_QP_EX ? &vq->qp_ex : NULL;
}

static struct ibv_qp *fake_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp *q;

	if (v.fail) {
		errno = v.fail;
		return NULL;
	}
	v.qps_made++;
	v.qp_attr = *a;
	a->cap.max_send_wr = a->qp_type == IBV_QPT_XRC_RECV ? 0 : 4;
	a->cap.max_send_sge = a->cap.max_send_sge > 1 ? 4 : 1;
	q = fake_qp(c, a->qp_type, vendor_id(a->qp_type == IBV_QPT_XRC_RECV ? 0x77 : 0x66));
	q->qp_context = a->qp_context;
	return q;
}

static struct ibv_qp *fake_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a)
{
	v.open_attr = *a;
	return fake_qp(c, a->qp_type, a->qp_num);
}

static int fake_bind_mw(struct ibv_qp *q, struct ibv_mw *m, struct ibv_mw_bind *b)
{
	uint32_t next = (m->rkey & ~0xffu) | ((m->rkey + 1) & 0xff);
	enum ibv_wc_status st = fake_mw_bind(q, m, next, &b->bind_info);

	m->rkey = next;
	v.mw_binds++;
	v.mw_bound_to = b->bind_info.mr;
	if (st != IBV_WC_SUCCESS || (b->send_flags & IBV_SEND_SIGNALED))
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = b->wr_id, .qp_num = q->qp_num,
						   .status = st, .opcode = IBV_WC_BIND_MW };
	return 0;
}

static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	if (q->qp_type == IBV_QPT_XRC_RECV) {	/* a target QP has no send queue */
		*bad = wr;
		return EINVAL;
	}
	if (v.send_fail && !v.send_fail_after--) {	/* the vendor's queue is full */
		*bad = wr;
		return v.send_fail;
	}
	v.send = *wr;
	if (wr->num_sge)
		v.send_sge = wr->sg_list[0];
	for (int i = 0; i < wr->num_sge && i < 4; i++)
		v.send_sges[i] = wr->sg_list[i];
	for (; wr; wr = wr->next) {
		enum ibv_wc_status st = IBV_WC_SUCCESS;

		v.order[v.norder++ % 16] = 's';
		v.sends++;
		if (q->state == IBV_QPS_ERR)	/* flushed */
			st = IBV_WC_WR_FLUSH_ERR;
		else if (wr->opcode == IBV_WR_BIND_MW)
			st = fake_mw_bind(q, wr->bind_mw.mw, wr->bind_mw.rkey,
					  &wr->bind_mw.bind_info);
		else if (wr->opcode == IBV_WR_LOCAL_INV)
			st = fake_mw_invalidate(wr->invalidate_rkey);
		if (st != IBV_WC_SUCCESS) {	/* an error completes, signaled or not */
			v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = wr->wr_id, .status = st,
							   .opcode = wc_opcode(wr->opcode),
							   .qp_num = q->qp_num };
			continue;
		}
		if (!v.hold || !(wr->send_flags & IBV_SEND_SIGNALED) || v.nheld == 8)
			continue;
		v.held[v.nheld++] = (struct ibv_wc){ .wr_id = wr->wr_id, .status = v.hold_status,
						     .opcode = wc_opcode(wr->opcode),
						     .qp_num = q->qp_num };
		v.hold_left = v.hold_polls;
	}
	*bad = NULL;
	return 0;
}

static int fake_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)q;
	if (v.recv_fail) {	/* the vendor's queue is full */
		*bad = wr;
		return v.recv_fail;
	}
	if (wr && wr->num_sge)
		v.recv_sge = wr->sg_list[0];
	for (int i = 0; wr && i < wr->num_sge && i < 4; i++)
		v.recv_sges[i] = wr->sg_list[i];
	for (; wr; wr = wr->next)
		v.recv_posts++;
	*bad = NULL;
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	int n;

	(void)cq;
	if (v.hold_left >= 0 && v.hold_left-- == 0)
		vendor_delivers();
	while (v.timed && v.nheld && now_ms() >= v.held_ms[0]) {
		v.cqe[v.ncqe++] = v.held[0];
		memmove(v.held, v.held + 1, (size_t)--v.nheld * sizeof(v.held[0]));
		memmove(v.held_ms, v.held_ms + 1, (size_t)v.nheld * sizeof(v.held_ms[0]));
	}
	n = ne < v.ncqe ? ne : v.ncqe;
	memcpy(wc, v.cqe, (size_t)n * sizeof(*wc));
	memmove(v.cqe, v.cqe + n, (size_t)(v.ncqe - n) * sizeof(*wc));
	v.ncqe -= n;
	return n;
}

static int fake_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a,
			   size_t len)
{
	(void)c;
	(void)port;
	memset(a, 0, len);
	a->lid = 9;
	a->sm_lid = 1;
	return 0;
}

/* A vendor that can do everything the ABI names. */
static int fake_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
				struct ibv_device_attr_ex *a, size_t size)
{
	struct ibv_device_attr_ex all;

	(void)c;
	(void)in;
	memset(&all, 0x5a, sizeof(all));
	memcpy(a, &all, size < sizeof(all) ? size : sizeof(all));
	return 0;
}

static void vendor_init(void)
{
	vendor.sz = sizeof(vendor);
	vendor.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vendor.open_xrcd = fake_open_xrcd;
	vendor.close_xrcd = fake_close_xrcd;
	vendor.create_srq_ex = fake_create_srq_ex;
	vendor.get_srq_num = fake_get_srq_num;
	vendor.create_qp_ex = fake_create_qp_ex;
	vendor.open_qp = fake_open_qp;
	vendor.query_port = fake_query_port;
	vendor.query_device_ex = fake_query_device_ex;
	vendor.create_cq_ex = fake_create_cq_ex;
	vendor.context.ops.post_srq_recv = fake_post_srq_recv;
	vendor.context.ops.post_send = fake_post_send;
	vendor.context.ops.alloc_mw = fake_alloc_mw;
	vendor.context.ops.dealloc_mw = fake_dealloc_mw;
	vendor.context.ops.bind_mw = fake_bind_mw;
	vendor.context.ops.post_recv = fake_post_recv;
	vendor.context.ops.poll_cq = fake_poll_cq;
}

/*
 * The vendor's completion channels and CQs. The kernel's event file is a
 * pipe the test writes the vendor's CQ pointer into (vendor_fires()); a CQ
 * counts the events read from it, and its destroy waits until they are
 * acknowledged, as libibverbs' ibv_cmd_destroy_cq() does with the kernel's
 * count.
 */
struct fake_channel {
	struct ibv_comp_channel ch;
	int kernel_wr;
};

struct fake_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cqx;	/* ibv_create_cq_ex()'s */
	};
	uint32_t reported;		/* under cq.mutex */
};

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	struct fake_channel *fc = fake_alloc(sizeof(*fc));
	int p[2];

	CHECK(c == &vendor.context);
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	fc->ch.context = c;
	fc->ch.fd = p[0];
	fc->kernel_wr = p[1];
	return &fc->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct fake_channel *fc = (struct fake_channel *)ch;

	close(fc->kernel_wr);
	close(ch->fd);
	free(fc);
	return 0;
}

/* libibverbs entry points that are not inline: the vendor's, here. */
struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct fake_cq *f = fake_alloc(sizeof(*f));
	struct ibv_cq *cq = &f->cq;

	(void)comp_vector;
	cq->context = c;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->cqe = v.cq_cap && cqe > v.cq_cap ? v.cq_cap : cqe;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	return cq;
}

/* An extended CQ: ibv_poll_cq() works on it (fake_poll_cq()), as on rxe's. */
static struct ibv_cq_ex *fake_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{
	struct ibv_cq *cq = ibv_create_cq(c, (int)a->cqe, a->cq_context, a->channel,
					  (int)a->comp_vector);

	return &((struct fake_cq *)cq)->cqx;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	CHECK(cq->context == &vendor.context);
	cq->cqe = cqe;
	return 0;
}

/* The vendor's CQ behind a shadow has an event on its channel. */
static void vendor_fires(struct ibv_cq *shadow)
{
	struct ibv_cq *real = to_icq(shadow)->real;
	uint64_t handle = (uintptr_t)real;

	CHECK(real->channel != NULL);
	CHECK_EQ(write(((struct fake_channel *)real->channel)->kernel_wr, &handle,
		       sizeof(handle)), sizeof(handle));
}

/*
 * As libibverbs' own (v44.0 verbs.c), compiled here so that ASan sees the
 * accesses: the CQ pointer read from the channel is dereferenced before
 * the provider's cq_event op runs; the vendor's kernel counts the event.
 */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	uint64_t handle;

	if (read(channel->fd, &handle, sizeof(handle)) != sizeof(handle))
		return -1;
	*cq = (struct ibv_cq *)(uintptr_t)handle;
	*cq_context = (*cq)->cq_context;
	if ((*cq)->context == &vendor.context) {
		pthread_mutex_lock(&(*cq)->mutex);
		((struct fake_cq *)*cq)->reported++;
		pthread_mutex_unlock(&(*cq)->mutex);
	} else {
		ibckpt_ctx_ops.cq_event(*cq);
	}
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/*
 * The vendor's async file: a pipe the test writes the kernel's records
 * into (vendor_raises()), whose element is the vendor's object.
 */
static int vendor_async_wr = -1;

struct async_desc {		/* struct ib_uverbs_async_event_desc */
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};

static void vendor_raises(enum ibv_event_type type, uint64_t element)
{
	struct async_desc d = { .element = element, .event_type = type };

	CHECK_EQ(write(vendor_async_wr, &d, sizeof(d)), sizeof(d));
}

/* As libibverbs' own (v44.0 device.c): the element is dereferenced later. */
int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev)
{
	struct async_desc d;

	if (read(c->async_fd, &d, sizeof(d)) != sizeof(d))
		return -1;
	ev->event_type = d.event_type;
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		ev->element.cq = (void *)(uintptr_t)d.element;
		break;
	case IBV_EVENT_QP_FATAL:
		ev->element.qp = (void *)(uintptr_t)d.element;
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		ev->element.srq = (void *)(uintptr_t)d.element;
		break;
	default:
		ev->element.port_num = (int)d.element;
		break;
	}
	if (c != &vendor.context)
		ibckpt_ctx_ops.async_event(c, ev);
	return 0;
}

/* As libibverbs' own (v44.0 device.c), for the same reason. */
void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *mutex;
	pthread_cond_t *cond;
	uint32_t *completed;

	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		mutex = &event->element.cq->mutex;
		cond = &event->element.cq->cond;
		completed = &event->element.cq->async_events_completed;
		break;
	case IBV_EVENT_QP_FATAL:
		mutex = &event->element.qp->mutex;
		cond = &event->element.qp->cond;
		completed = &event->element.qp->events_completed;
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		mutex = &event->element.srq->mutex;
		cond = &event->element.srq->cond;
		completed = &event->element.srq->events_completed;
		break;
	case IBV_EVENT_PORT_ACTIVE:
		return;
	default:		/* the test raises no other */
		CHECK(0);
		return;
	}
	pthread_mutex_lock(mutex);
	++*completed;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mutex);
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *p, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *q;

	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, a, sizeof(*a));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = p;
	q = fake_create_qp_ex(p->context, &ax);
	a->cap = ax.cap;
	return q;
}

/* A basic SRQ: libibverbs' ibv_create_srq_ex() takes this way for it. */
struct ibv_srq *ibv_create_srq(struct ibv_pd *p, struct ibv_srq_init_attr *a)
{
	struct ibv_srq_init_attr_ex ax = { .srq_context = a->srq_context, .attr = a->attr,
					   .comp_mask = IBV_SRQ_INIT_ATTR_PD, .pd = p };
	struct ibv_srq *s = fake_create_srq_ex(p->context, &ax);

	a->attr = ax.attr;
	return s;
}

int ibv_query_srq(struct ibv_srq *s, struct ibv_srq_attr *a)
{
	(void)s;
	*a = (struct ibv_srq_attr){ .max_wr = 8, .max_sge = 1 };
	return 0;
}

/*
 * Answers with what the last modify_qp set (the snapshot's queries too),
 * in the state of the QP asked about (which a test sets to play the
 * vendor's moves).
 */
int ibv_query_qp(struct ibv_qp *q, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *i)
{
	(void)mask;
	if (v.query_fail) {
		errno = v.query_fail;
		return v.query_fail;
	}
	*a = v.qp_attr_set;
	a->qp_state = q->state;
	memset(i, 0, sizeof(*i));
	return 0;
}

/* The QP's state follows; RTS only from RTR (or RTS, SQD), as the kernel has it. */
int ibv_modify_qp(struct ibv_qp *q, struct ibv_qp_attr *a, int mask)
{
	v.qp_attr_set = *a;
	if (!(mask & IBV_QP_STATE))
		return 0;
	if (a->qp_state == IBV_QPS_RTS && q->state != IBV_QPS_RTR && q->state != IBV_QPS_RTS &&
	    q->state != IBV_QPS_SQD) {
		errno = EINVAL;
		return EINVAL;
	}
	q->state = a->qp_state;
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *p, struct ibv_ah_attr *a)
{
	struct ibv_ah *ah = fake_alloc(sizeof(*ah));

	ah->context = p->context;
	ah->pd = p;
	v.ah_attr = *a;
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	v.destroyed++;
	return 0;
}

/* Device identity for the snapshot's device record: none here. */
__be64 ibv_get_device_guid(struct ibv_device *d)
{
	(void)d;
	return 0;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	(void)c;
	(void)port;
	(void)index;
	memset(gid, 0, sizeof(*gid));
	return 0;
}


int ibv_destroy_cq(struct ibv_cq *cq)
{
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed != ((struct fake_cq *)cq)->reported)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);
	free(cq);
	v.destroyed++;
	return 0;
}

int ibv_attach_mcast(struct ibv_qp *q, const union ibv_gid *gid, uint16_t lid)
{
	CHECK(q->context == &vendor.context);
	CHECK_EQ(lid, 0xc001);
	if (v.nmgid < 4)
		v.mgid[v.nmgid++] = *gid;
	return 0;
}

int ibv_detach_mcast(struct ibv_qp *q, const union ibv_gid *gid, uint16_t lid)
{
	int i;

	CHECK(q->context == &vendor.context);
	(void)lid;
	for (i = 0; i < v.nmgid; i++)
		if (!memcmp(&v.mgid[i], gid, sizeof(*gid)))
			v.mgid[i] = v.mgid[--v.nmgid];
	return 0;
}

int ibv_modify_srq(struct ibv_srq *s, struct ibv_srq_attr *a, int mask)
{
	CHECK(s->context == &vendor.context);
	if (mask & IBV_SRQ_LIMIT) {
		v.srq_armed = a->srq_limit;
		v.srq_arms++;
	}
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *s)
{
	CHECK(s->context == &vendor.context);
	free(s);
	v.destroyed++;
	return 0;
}

/* The vendor's PDs (libibverbs would call its alloc_pd op). */
struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct ibv_pd *p = fake_alloc(sizeof(*p));

	p->context = c;
	p->handle = 2;
	return p;
}

int ibv_dealloc_pd(struct ibv_pd *p)
{
	CHECK(p->context == &vendor.context);
	free(p);
	v.destroyed++;
	return 0;
}

/* The vendor's memory registration (libibverbs would call its reg_mr op). */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *p, void *addr, size_t len, uint64_t iova,
				unsigned int access)
{
	struct ibv_mr *m;

	if (v.reg_fail) {
		errno = v.reg_fail;
		v.reg_fail = 0;
		return NULL;
	}
	m = malloc(sizeof(*m));		/* not calloc: calloc_fails is the CQs' */
	CHECK(m != NULL);
	memset(m, 0, sizeof(*m));
	(void)iova;
	(void)access;
	m->context = p->context;
	m->pd = p;
	m->addr = addr;
	m->length = len;
	m->lkey = m->rkey = vendor_id(0x300);
	return m;
}

/* Does a window of the vendor's hold @mr (bound to it) or @qp (a type 2 one bound through it)? */
static bool fake_mw_holds(const struct ibv_mr *mr, const struct ibv_qp *qp)
{
	unsigned int i;

	for (i = 0; i < 16; i++)
		if (v.mws[i] && v.mws[i]->bound &&
		    ((mr && v.mws[i]->mr == mr) || (qp && v.mws[i]->qp == qp)))
			return true;
	return false;
}

/* rxe refuses an MR a window is bound to (IBA 10.6.7.2.6): counted, freed all the same. */
int ibv_dereg_mr(struct ibv_mr *m)
{
	CHECK(m->context == &vendor.context);
	v.mw_held += fake_mw_holds(m, NULL);
	free(m);
	v.destroyed++;
	return 0;
}

/* rxe's type 2 window holds its QP (the destroy waits): counted, freed all the same. */
int ibv_destroy_qp(struct ibv_qp *q)
{
	CHECK(q->context == &vendor.context);
	v.mw_held += fake_mw_holds(NULL, q);
	free(q);
	v.destroyed++;
	if (v.destroyed_qp)
		v.destroyed_qp();
	return 0;
}

/* ---- the application's side ---- */

static struct ibckpt_context *ctx;
static struct ibckpt_pd pd;

/* Put ctx on (or take it off, from the head) the process's list, as a device open does. */
static void ctx_list(bool on)
{
	pthread_mutex_lock(&ibckpt_ctx_lock);
	if (on) {
		ctx->next = ibckpt_ctxs;
		ibckpt_ctxs = ctx;
	} else {
		ibckpt_ctxs = ctx->next;
	}
	pthread_mutex_unlock(&ibckpt_ctx_lock);
}

static void app_init(void)
{
	int p[2];

	memset(&v, 0, sizeof(v));
	ctx = fake_alloc(sizeof(*ctx));
	ibckpt_context_init(ctx, &vendor.context);
	pd.ibv_pd.context = &ctx->vctx.context;
	pd.real = &vendor_pd;
	/* the vendor's async file; ours starts as a duplicate, as libibverbs' */
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	vendor.context.async_fd = p[0];
	vendor_async_wr = p[1];
	ctx->vctx.context.async_fd = dup(p[0]);
	CHECK(ctx->vctx.context.async_fd >= 0);
	CHECK_EQ(ibckpt_async_open(ctx), 0);
}

static void app_fini(void)
{
	CHECK(ctx->objs.next == &ctx->objs);	/* every shadow gone */
	ibckpt_channel_cleanup(ctx);		/* as free_context */
	ibckpt_context_fini(ctx);
	close(ctx->vctx.context.async_fd);	/* verbs_uninit_context() */
	close(vendor.context.async_fd);
	close(vendor_async_wr);
	free(ctx);
}

/* Does the application's async file hold @n events (the forwarder's work)? */
static bool async_holds(unsigned int n)
{
	int i, bytes = -1;

	for (i = 0; i < 2000; i++) {
		CHECK_EQ(ioctl(ctx->vctx.context.async_fd, FIONREAD, &bytes), 0);
		if (bytes == (int)(n * sizeof(struct async_desc)))
			return true;
		usleep(1000);
	}
	return false;
}

static struct ibv_xrcd *open_xrcd(void)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = 7, .oflags = O_CREAT,
	};
	struct ibv_xrcd *x = ibckpt_open_xrcd(&ctx->vctx.context, &a);

	CHECK(x != NULL);
	return x;
}

static struct ibv_srq *xsrq(struct ibv_xrcd *x, struct ibv_cq *cq, void *app_context)
{
	struct ibv_srq_init_attr_ex a = {
		.srq_context = app_context,
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .pd = &pd.ibv_pd, .xrcd = x, .cq = cq,
	};
	struct ibv_srq *s = ibckpt_create_srq_ex(&ctx->vctx.context, &a);

	CHECK(s != NULL);
	return s;
}

static struct ibv_qp *tgt_qp(struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x,
	};
	struct ibv_qp *q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);

	CHECK(q != NULL);
	return q;
}

/* A sending QP (XRC or RC) on cq; send_ops_flags 0: no ibv_wr_* API. */
static struct ibv_qp *send_qp(struct ibv_cq *cq, enum ibv_qp_type type, uint64_t send_ops_flags)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 4, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd.ibv_pd,
		.send_ops_flags = send_ops_flags,
	};
	struct ibv_qp *q;

	if (send_ops_flags)
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);
	CHECK(q != NULL);
	CHECK(v.qp_attr.pd == &vendor_pd);
	CHECK_EQ(v.qp_attr.send_ops_flags, send_ops_flags);	/* the vendor's QP can */
	if (q)
		q->state = IBV_QPS_RTS;	/* as libibverbs' ibv_modify_qp() would leave it */
	return q;
}

/* The context's snapshot, as the control thread would build it (free() it). */
static void *snapshot(void)
{
	static struct ibv_device dev = { .name = "fake0" };
	void *buf = NULL;
	size_t len = 0;

	ctx->vctx.context.device = &dev;
	ibckpt_ctxs = ctx;
	CHECK_EQ(ibckpt_snapshot_build(1, 0, false, &buf, &len), 0);
	ibckpt_ctxs = NULL;
	return buf;
}

static void post_recv(struct ibv_srq *s, uint64_t wr_id, uint64_t addr)
{
	struct ibv_sge sge = { .addr = addr, .length = 64, .lkey = 1 };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_EQ(ibckpt_post_srq_recv(s, &wr, &bad), 0);
	CHECK_EQ(wr.wr_id, wr_id);		/* the application's list is as it was */
}

/* The vendor completes a receive of the XRC target QP, tagged as it was posted. */
static void vendor_completes(uint64_t tag, enum ibv_wc_status status)
{
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = tag, .status = status,
					   .opcode = IBV_WC_RECV, .qp_num = 0x77 };
}

/* The vendor only ever sees real objects; the application only shadows. */
static void objects_are_stacked(void)
{
	app_init();

	struct ibv_xrcd *x = open_xrcd();
	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	int app_ctx;

	CHECK(cq != NULL);
	CHECK(x->context == &ctx->vctx.context);
	CHECK(to_ixrcd(x)->real != x);
	CHECK_EQ(v.xrcd_attr.fd, 7);
	CHECK_EQ(v.xrcd_attr.oflags, O_CREAT);

	struct ibv_srq *s = xsrq(x, cq, &app_ctx);
	uint32_t num = 0;

	CHECK(v.srq_attr.xrcd == to_ixrcd(x)->real);
	CHECK(v.srq_attr.cq == to_icq(cq)->real);
	CHECK(v.srq_attr.pd == &vendor_pd);
	CHECK(v.srq_attr.srq_context == to_isrq(s));	/* async events lead back */
	CHECK(s->srq_context == &app_ctx);
	CHECK(s->context == &ctx->vctx.context);
	CHECK_EQ(ibckpt_get_srq_num(s, &num), 0);
	CHECK_EQ(num, to_isrq(s)->srq_num);
	CHECK(num != 0);

	struct ibv_qp *tgt = tgt_qp(x);

	CHECK(v.qp_attr.xrcd == to_ixrcd(x)->real);
	CHECK(v.qp_attr.pd == NULL);
	CHECK(v.qp_attr.qp_context == to_iqp(tgt));
	CHECK_EQ(tgt->qp_type, IBV_QPT_XRC_RECV);
	CHECK(ibckpt_vidmap_find(&ctx->qpns, 0x77, 0) == NULL);	/* completions: by tag */

	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT,
		.qp_num = 0x77, .xrcd = x, .qp_context = &app_ctx, .qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp *opened = ibckpt_open_qp(&ctx->vctx.context, &oa);
	struct ibv_sge sge = { 1, 1, 1 };
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	CHECK(opened != NULL);
	CHECK(v.open_attr.xrcd == to_ixrcd(x)->real);
	CHECK(v.open_attr.qp_context == to_iqp(opened));
	CHECK(opened->qp_context == &app_ctx);
	CHECK_EQ(opened->qp_num, 0x77);
	/* a target QP cannot send: the vendor says so, not the log */
	CHECK_EQ(ibckpt_post_send(opened, &swr, &bad), EINVAL);
	CHECK(bad == &swr);

	v.destroyed = 0;
	CHECK_EQ(ibckpt_destroy_qp(opened), 0);
	CHECK_EQ(ibckpt_destroy_qp(tgt), 0);
	CHECK_EQ(ibckpt_destroy_srq(s), 0);
	CHECK_EQ(ctx->xsrqs.live, 0);
	CHECK_EQ(ibckpt_close_xrcd(x), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	CHECK_EQ(v.destroyed, 5);
	app_fini();
}

/*
 * Two XRC SRQs on one CQ, both posting wr_id 1 (as ibv_xsrq_pingpong does):
 * each completion retires its own SRQ's request and returns the
 * application's wr_id. Searching by wr_id would retire the wrong SRQ's and
 * fill the other's log within a few rounds.
 */
static void completions_find_their_srq(void)
{
	app_init();

	struct ibv_xrcd *x = open_xrcd();
	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_srq *a = xsrq(x, cq, NULL), *b = xsrq(x, cq, NULL);
	struct ibv_qp *tgt = tgt_qp(x);
	struct ibv_wc wc[4];
	int round;

	post_recv(a, 1, 0xa000);
	post_recv(b, 1, 0xb000);
	CHECK(v.srq_wr_id[0] != 1 && v.srq_wr_id[1] != 1);	/* tags reach the vendor */
	CHECK(v.srq_wr_id[0] != v.srq_wr_id[1]);
	for (round = 0; round < 50; round++) {	/* only b ever completes */
		vendor_completes(v.srq_wr_id[(v.srq_posts - 1) % 64], IBV_WC_SUCCESS);
		CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
		CHECK_EQ(wc[0].wr_id, 1);
		CHECK_EQ(wc[0].qp_num, 0x77);
		post_recv(b, 1, 0xb000 + (uint64_t)round);
	}
	CHECK_EQ(ibckpt_wrlog_live(&to_isrq(a)->rq), 1);	/* a's never completed */
	CHECK_EQ(ibckpt_wrlog_live(&to_isrq(b)->rq), 1);

	const struct ibv_sge *sge;
	const struct ibckpt_wr *e = ibckpt_wrlog_at(&to_isrq(a)->rq, 0, &sge, NULL);

	CHECK(e != NULL);
	CHECK_EQ(e->wr_id, 1);
	CHECK_EQ(sge[0].addr, 0xa000);

	/* a flush retires by tag too; a tag completed twice matches nothing */
	uint64_t tag_a = v.srq_wr_id[0];

	vendor_completes(tag_a, IBV_WC_WR_FLUSH_ERR);
	vendor_completes(tag_a, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 2);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(wc[1].wr_id, tag_a);		/* not ours: left as the vendor gave it */
	CHECK_EQ(ibckpt_wrlog_live(&to_isrq(a)->rq), 0);
	CHECK_EQ(to_isrq(a)->rq.unmatched, 1);

	/* a freeze's drain gives the private queue the application's wr_id too */
	post_recv(b, 7, 0xb100);
	vendor_completes(v.srq_wr_id[(v.srq_posts - 1) % 64], IBV_WC_SUCCESS);
	uint32_t moved = 0;

	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);
	CHECK_EQ(moved, 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 7);

	/* a completion of some other, destroyed QP is left alone */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 42, .opcode = IBV_WC_RECV, .qp_num = 0x99 };
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 42);
	CHECK_EQ(ibckpt_wrlog_live(&to_isrq(b)->rq), 1);

	CHECK_EQ(ibckpt_destroy_qp(tgt), 0);
	CHECK_EQ(ibckpt_destroy_srq(a), 0);
	CHECK_EQ(ibckpt_destroy_srq(b), 0);
	CHECK_EQ(ibckpt_close_xrcd(x), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/* An XRC sender logs the SRQ number each request names, for a restart. */
static void sends_log_their_srqn(void)
{
	app_init();

	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_qp *q = send_qp(cq, IBV_QPT_XRC_SEND, 0);
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	CHECK(to_iqp(q)->rq.wr == NULL);	/* no receive queue to log */
	wr.qp_type.xrc.remote_srqn = 0x5123;
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.qp_type.xrc.remote_srqn, 0x5123);
	CHECK_EQ(v.send.wr_id, 9);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 1);
	CHECK_EQ(ibckpt_wrlog_newest(&to_iqp(q)->sq, 1)->remote_srqn, 0x5123);
	/* its completion is found by QPN, as any send's */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 9, .opcode = IBV_WC_SEND, .qp_num = 0x66 };
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 9);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/* A snapshot's records: the first (r NULL) or the one after r, NULL at the end. */
static const struct ibckpt_snap_rec *snap_next(const void *buf, const struct ibckpt_snap_rec *r)
{
	const struct ibckpt_snap_hdr *h = buf;
	const char *end = (const char *)buf + h->total_len;
	const char *p = r ? (const char *)(r + 1) + ((r->len + 7u) & ~7u)
			  : (const char *)buf + h->hdr_len;

	return p < end ? (const void *)p : NULL;
}

/*
 * The payload of the record of the given type and handle (0: the first of
 * the type); for WR records, the handle is the owner's and wr_id must match.
 */
static const void *snap_find_wr(const void *buf, uint16_t type, uint32_t handle, uint64_t wr_id)
{
	const struct ibckpt_snap_rec *r;

	for (r = snap_next(buf, NULL); r; r = snap_next(buf, r)) {
		const uint32_t *pl = (const void *)(r + 1);
		const struct ibckpt_snap_wr *w = (const void *)pl;

		if (r->type != type)
			continue;
		if (type == IBCKPT_SNAP_WR ? w->owner == handle && w->wr_id == wr_id
					   : !handle || pl[0] == handle)
			return pl;
	}
	return NULL;
}

static const void *snap_find(const void *buf, uint16_t type, uint32_t handle)
{
	return snap_find_wr(buf, type, handle, 0);
}

/* A snapshot names the domain, the SRQ's XRC identity and each request's SRQN. */
static void snapshot_names_xrc(void)
{
	app_init();

	struct ibv_xrcd *x = open_xrcd();
	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_srq *s = xsrq(x, cq, NULL);
	struct ibv_qp *tgt = tgt_qp(x);
	struct ibv_qp *snd = send_qp(cq, IBV_QPT_XRC_SEND, 0);
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = 0x77, .xrcd = x, .qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp *opened = ibckpt_open_qp(&ctx->vctx.context, &oa);
	void *buf;

	CHECK(opened != NULL);
	wr.qp_type.xrc.remote_srqn = 0x5321;
	CHECK_EQ(ibckpt_post_send(snd, &wr, &bad), 0);
	post_recv(s, 77, 0xc000);
	buf = snapshot();

	const struct ibckpt_snap_xrcd *rx = snap_find(buf, IBCKPT_SNAP_XRCD, 0);
	const struct ibckpt_snap_srq *rs = snap_find(buf, IBCKPT_SNAP_SRQ, 0);
	const struct ibckpt_snap_qp *rt = snap_find(buf, IBCKPT_SNAP_QP, to_iqp(tgt)->obj.id);
	const struct ibckpt_snap_qp *ro = snap_find(buf, IBCKPT_SNAP_QP, to_iqp(opened)->obj.id);
	const struct ibckpt_snap_wr *rw = snap_find_wr(buf, IBCKPT_SNAP_WR, to_iqp(snd)->obj.id, 9);

	CHECK(rx && rs && rt && ro && rw);
	if (rx && rs && rt && ro && rw) {
		CHECK_EQ(rx->handle, to_ixrcd(x)->obj.id);
		CHECK_EQ(rx->oflags, O_CREAT);
		CHECK_EQ(rs->srq_type, IBCKPT_SNAP_SRQT_XRC);
		CHECK_EQ(rs->xrcd, rx->handle);
		CHECK_EQ(rs->cq, to_icq(cq)->obj.id);
		CHECK_EQ(rs->srq_num, to_isrq(s)->srq_num);
		CHECK_EQ(rs->n_recv_wr, 1);
		CHECK_EQ(rt->xrcd, rx->handle);
		CHECK_EQ(rt->opened, 0);
		CHECK_EQ(ro->opened, 1);
		CHECK_EQ(ro->xrcd, rx->handle);
		CHECK_EQ(ro->qpn, 0x77);
		CHECK_EQ(rt->qpn, 0x77);	/* not in the QPN table: its own */
		CHECK_EQ(rt->n_send_wr + rt->n_recv_wr, 0);
		CHECK_EQ(rw->wr_id, 9);
		CHECK_EQ(rw->xrc_remote_srqn, 0x5321);
	}
	free(buf);
	CHECK_EQ(ibckpt_destroy_qp(snd), 0);
	CHECK_EQ(ibckpt_destroy_qp(opened), 0);
	CHECK_EQ(ibckpt_destroy_qp(tgt), 0);
	CHECK_EQ(ibckpt_destroy_srq(s), 0);
	CHECK_EQ(ibckpt_close_xrcd(x), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * ibv_wr_atomic_write() has no ibv_post_send() form: a batch with atomic
 * writes reaches the vendor's own ibv_wr_* API like any other, in the
 * batch's order, all logged; a refused batch is forgotten again.
 */
static void atomic_writes_reach_the_vendor_api(void)
{
	app_init();

	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_qp *q = send_qp(cq, IBV_QPT_RC,
				   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE);
	struct ibv_qp_ex *x = &to_iqp(q)->vqp.qp_ex;
	const struct ibckpt_snap_wr *rw;
	uint64_t one = 0x1111, two = 0x2222;
	void *buf;

	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 3, 0x1000, 8);
	x->wr_id = 2;
	ibv_wr_atomic_write(x, 0x70, 0x9000, &one);
	x->wr_id = 3;
	ibv_wr_atomic_write(x, 0x71, 0x9008, &two);
	x->wr_id = 4;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 3, 0x1000, 8);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(v.norder, 4);
	CHECK(!memcmp(v.order, "saas", 4));
	CHECK_EQ(v.naw, 2);
	CHECK_EQ(v.aw_wr_id[0], 2);
	CHECK_EQ(v.aw_rkey[1], 0x71);
	CHECK_EQ(v.aw_val[0], 0x1111);
	CHECK_EQ(v.aw_val[1], 0x2222);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 4);
	CHECK_EQ(ibckpt_wrlog_newest(&to_iqp(q)->sq, 2)->opcode, IBV_WR_ATOMIC_WRITE);
	CHECK_EQ(ibckpt_wrlog_newest(&to_iqp(q)->sq, 2)->wr.atomic.swap, 0x2222);

	/* the snapshot keeps what an atomic write writes */
	buf = snapshot();
	rw = snap_find_wr(buf, IBCKPT_SNAP_WR, to_iqp(q)->obj.id, 2);
	CHECK(rw != NULL);
	if (rw) {
		CHECK_EQ(rw->opcode, IBV_WR_ATOMIC_WRITE);
		CHECK_EQ(rw->wr_id, 2);
		CHECK_EQ(rw->rkey, 0x70);
		CHECK_EQ(rw->remote_addr, 0x9000);
		CHECK_EQ(rw->swap, 0x1111);
	}
	free(buf);

	/* the vendor refuses the run: nothing of it stays logged */
	v.wr_fail = EINVAL;
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, 0x70, 0x9000, &one);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 4);
	CHECK_EQ(v.naw, 2);
	v.wr_fail = 0;

	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * ibv_wr_complete() posts the whole batch or none of it (never the
 * requests before a vendor error in its middle, with the error returned):
 * a vendor that refuses the batch leaves nothing posted and nothing
 * logged.
 */
static void wr_complete_posts_all_or_none(void)
{
	app_init();

	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_qp *q = send_qp(cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	struct ibv_qp_ex *x = &to_iqp(q)->vqp.qp_ex;
	int i;

	v.norder = 0;
	v.wr_fail = EIO;
	ibv_wr_start(x);
	for (i = 0; i < 3; i++) {
		x->wr_id = 10 + (uint64_t)i;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 3, 0x1000, 8);
	}
	CHECK_EQ(ibv_wr_complete(x), EIO);
	CHECK_EQ(v.norder, 0);				/* none posted */
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);	/* none logged */
	v.wr_fail = 0;
	ibv_wr_start(x);
	for (i = 0; i < 3; i++) {
		x->wr_id = 20 + (uint64_t)i;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 3, 0x1000 + (uint64_t)i, 8);
	}
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(v.norder, 3);
	CHECK(!memcmp(v.order, "sss", 3));
	CHECK_EQ(v.x_wr_id, 22);
	CHECK_EQ(v.x_sge.addr, 0x1002);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 3);
	/*
	 * Below RTS refused before anything is queued: rxe would queue the
	 * batch, fail its doorbell, and run it at RTS behind the log's back.
	 */
	q->state = IBV_QPS_RTR;
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 3, 0x1000, 8);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(v.norder, 3);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 3);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * What a batch asks of the vendor's ibv_wr_* API: a local operation on an
 * XRC send QP gets no target SRQ (its WQE has no such segment: mlx5 would
 * write over it), and a read flagged inline still gets its SGE, where its
 * answer lands.
 */
static void wr_batch_setters(void)
{
	app_init();

	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_XRC_SEND,
		.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_inline_data = 16 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = &pd.ibv_pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	struct ibv_qp *q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);
	struct ibv_qp_ex *x = &to_iqp(q)->vqp.qp_ex;
	char buf[8] = "abcdefg";

	q->state = IBV_QPS_RTS;

	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 5);
	ibv_wr_set_inline_data(x, buf, 4);
	x->wr_id = 2;
	ibv_wr_local_inv(x, 0x77);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_INLINE;
	ibv_wr_rdma_read(x, 0x10, 0x2000);
	ibv_wr_set_xrc_srqn(x, 5);
	ibv_wr_set_sge(x, 3, (uintptr_t)buf, 4);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK(!strcmp(v.xs, "sxilrxg"));
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 3);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * After a restart (here: its mapping set by hand) the application's LIDs and
 * GIDs are virtual: address vectors reach the vendor real, and what the
 * vendor reports reaches the application virtual.
 */
static void addresses_are_translated(void)
{
	app_init();

	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_qp *q = send_qp(cq, IBV_QPT_RC, 0);
	union ibv_gid vg = { .raw = { 0xfe, 0x80, [15] = 1 } }, rg = { .raw = { 0xfe, 0x80, [15] = 2 } };
	struct ibv_ah_attr aa = { .dlid = 5, .is_global = 1, .port_num = 1, .grh.dgid = vg };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTR, .ah_attr = aa, .dest_qp_num = 3 };
	struct ibv_qp_init_attr init;
	struct ibv_port_attr pa;
	struct ibv_ah *ah;

	CHECK_EQ(ibckpt_addrs_map_lid(&ctx->addrs, 5, 9), 0);
	CHECK_EQ(ibckpt_addrs_map_gid(&ctx->addrs, &vg, &rg), 0);
	ah = ibckpt_create_ah(&pd.ibv_pd, &aa);
	CHECK(ah != NULL);
	CHECK_EQ(v.ah_attr.dlid, 9);
	CHECK(!memcmp(&v.ah_attr.grh.dgid, &rg, sizeof(rg)));
	CHECK_EQ(aa.dlid, 5);				/* the application's is untouched */
	CHECK_EQ(ibckpt_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN), 0);
	CHECK_EQ(v.qp_attr_set.ah_attr.dlid, 9);
	CHECK(!memcmp(&v.qp_attr_set.ah_attr.grh.dgid, &rg, sizeof(rg)));
	CHECK_EQ(to_iqp(q)->hist.attr.ah_attr.dlid, 5);	/* a restart replays these */
	memset(&qa, 0, sizeof(qa));
	CHECK_EQ(ibckpt_query_qp(q, &qa, IBV_QP_AV, &init), 0);
	CHECK_EQ(qa.ah_attr.dlid, 5);
	CHECK(!memcmp(&qa.ah_attr.grh.dgid, &vg, sizeof(vg)));
	CHECK_EQ(ibckpt_ctx_ops.query_port(&ctx->vctx.context, 1, &pa), 0);
	CHECK_EQ(pa.lid, 5);				/* the port's own, as the peers know it */
	CHECK_EQ(pa.sm_lid, 1);				/* not mapped: as it is */

	CHECK_EQ(ibckpt_destroy_ah(ah), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * TSO on a raw packet QP: the vendor gets the request as posted, the log and
 * the snapshot keep the header (the application may reuse it at once).
 */
static void tso_headers_are_logged(void)
{
	app_init();

	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
		.pd = &pd.ibv_pd, .max_tso_header = 64,
	};
	struct ibv_qp *q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);
	uint8_t hdr[54];
	struct ibv_sge sge = { .addr = 0x10000, .length = 9000, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_TSO,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	const struct ibckpt_snap_wr *rw;
	void *buf;

	CHECK(q != NULL);
	CHECK_EQ(v.qp_attr.max_tso_header, 64);
	memset(hdr, 0x42, sizeof(hdr));
	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = sizeof(hdr);
	wr.tso.mss = 1448;
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.opcode, IBV_WR_TSO);
	CHECK(v.send.tso.hdr == hdr);		/* the vendor copies it while posting */
	CHECK_EQ(v.send.tso.mss, 1448);
	memset(hdr, 0, sizeof(hdr));		/* reused */
	buf = snapshot();
	rw = snap_find_wr(buf, IBCKPT_SNAP_WR, to_iqp(q)->obj.id, 5);
	CHECK(rw != NULL);
	if (rw) {
		const uint8_t *h = (const uint8_t *)(rw + 1) + sizeof(struct ibckpt_snap_sge);

		CHECK_EQ(rw->opcode, IBCKPT_SNAP_WR_TSO);
		CHECK_EQ(rw->compare_add, 54);
		CHECK_EQ(rw->swap, 1448);
		CHECK_EQ(h[0], 0x42);
		CHECK_EQ(h[53], 0x42);
	}
	free(buf);
	/* a header larger than max_tso_header is refused before the vendor sees it */
	{
		uint8_t big[65];

		wr.tso.hdr = big;
		wr.tso.hdr_sz = sizeof(big);
		v.send.wr_id = 0;
		CHECK_EQ(ibckpt_post_send(q, &wr, &bad), EINVAL);
		CHECK(bad == &wr);
		CHECK_EQ(v.send.wr_id, 0);
		CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 1);
	}
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/* What is not stacked, or what the vendor refuses, fails as the vendor would. */
static void refusals(void)
{
	app_init();

	struct ibv_srq_init_attr_ex tm = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_TM, .pd = &pd.ibv_pd,
	};
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1 };
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_SEND };

	errno = 0;
	CHECK(ibckpt_create_srq_ex(&ctx->vctx.context, &tm) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(v.srq_attr.srq_type == 0);	/* the vendor was not asked */
	v.fail = ENOSYS;
	CHECK(ibckpt_open_xrcd(&ctx->vctx.context, &xa) == NULL);
	CHECK_EQ(errno, ENOSYS);
	v.fail = 0;
	errno = 0;
	CHECK(ibckpt_create_qp_ex(&ctx->vctx.context, &qa) == NULL);	/* no PD */
	CHECK_EQ(errno, EINVAL);
	app_fini();
}

/* ---- completion channels and events, as the application sees them ---- */

/*
 * The application's channel as ibv_create_comp_channel() makes it: a new
 * uverbs event file (an eventfd stands for it), in a struct at @at, so that
 * a channel re-created at the same address (glibc's tcache hands the freed
 * struct back) is made on purpose.
 */
static void app_channel(struct ibv_comp_channel *at)
{
	at->context = &ctx->vctx.context;
	at->fd = eventfd(0, EFD_CLOEXEC);
	at->refcnt = 0;
	CHECK(at->fd >= 0);
}

/* ibv_destroy_comp_channel() but for the free(): the address stays. */
static void app_channel_destroy(struct ibv_comp_channel *ch)
{
	CHECK_EQ(ch->refcnt, 0);
	close(ch->fd);
}

/* ibv_create_cq(): the provider's op, then what verbs_init_cq() does. */
static struct ibv_cq *app_cq(struct ibv_comp_channel *ch, void *cq_context)
{
	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, ch, 0);

	CHECK(cq != NULL);
	if (!cq)
		abort();
	cq->context = &ctx->vctx.context;
	cq->channel = ch;
	cq->cq_context = cq_context;
	if (ch)
		ch->refcnt++;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	return cq;
}

/* ibv_destroy_cq(): the op, then the channel's count. */
static void app_destroy_cq(struct ibv_cq *cq)
{
	struct ibv_comp_channel *ch = cq->channel;

	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	if (ch)
		ch->refcnt--;
}

/*
 * The forwarder thread writes into the channel in its own time: whether the
 * channel holds exactly n events once it holds n or more (2 s at most).
 */
static bool channel_holds(struct ibv_comp_channel *ch, int n)
{
	int i, bytes;

	for (i = 0; i < 2000; i++) {
		if (!ioctl(ch->fd, FIONREAD, &bytes) && bytes >= n * 8)
			return bytes == n * 8;
		usleep(1000);
	}
	return false;
}

/*
 * A channel destroyed and created again at the same address is a new
 * channel: its CQ's events reach it. librdmacm destroys and creates two
 * channels per connection. Found by the old pointer, the new CQ was bound
 * to the dead channel's forwarding whenever the forwarder had not yet seen
 * the old one closed, and ibv_get_cq_event() waited forever.
 */
static void channel_recreated_at_same_address(void)
{
	static struct ibv_comp_channel ch;	/* one address for every channel */
	struct ibv_cq *cq, *got = NULL;
	void *got_ctx = NULL;
	int i, tag;

	app_init();
	for (i = 0; i < 200 && !unit_case_failed; i++) {
		app_channel(&ch);
		cq = app_cq(&ch, &tag);
		vendor_fires(cq);
		CHECK(channel_holds(&ch, 1));
		if (!unit_case_failed) {
			CHECK_EQ(ibv_get_cq_event(&ch, &got, &got_ctx), 0);
			CHECK(got == cq && got_ctx == &tag);
			ibv_ack_cq_events(cq, 1);
		}
		app_destroy_cq(cq);
		app_channel_destroy(&ch);
	}
	if (unit_case_failed)
		fprintf(stderr, "  cycle %d: the CQ's event never reached its channel\n", i);
	app_fini();
}

/*
 * A CQ destroyed with an event still unread in its channel, which it shares
 * with another CQ: the event goes with it (the kernel drops a destroyed
 * CQ's unread events), and the other CQ's stays. Left in the pipe, it gave
 * the next ibv_get_cq_event() a freed CQ.
 */
static void destroyed_cq_leaves_no_event(void)
{
	struct ibv_comp_channel ch;
	struct ibv_cq *a, *b, *got = NULL;
	void *got_ctx = NULL;
	int tag_a, tag_b;

	app_init();
	app_channel(&ch);
	a = app_cq(&ch, &tag_a);
	b = app_cq(&ch, &tag_b);
	vendor_fires(a);
	vendor_fires(b);
	CHECK(channel_holds(&ch, 2));
	app_destroy_cq(a);	/* returns at once: the application obtained none of a's */
	CHECK(channel_holds(&ch, 1));
	CHECK_EQ(ibv_get_cq_event(&ch, &got, &got_ctx), 0);
	CHECK(got == b && got_ctx == &tag_b);
	ibv_ack_cq_events(b, 1);
	app_destroy_cq(b);
	app_channel_destroy(&ch);
	app_fini();
}

/* An application's event thread: it obtains an event and acknowledges it 100 ms later. */
struct event_thread {
	pthread_t t;
	struct ibv_comp_channel *ch;	/* a completion event from it, or ... */
	struct ibv_async_event ev;	/* ... this async event */
	atomic_bool got, acked;
};

static void *event_thread_run(void *arg)
{
	struct event_thread *et = arg;
	struct ibv_cq *cq = NULL;
	void *cq_ctx;

	if (et->ch ? ibv_get_cq_event(et->ch, &cq, &cq_ctx) :
		     ibv_get_async_event(&ctx->vctx.context, &et->ev))
		return NULL;
	atomic_store(&et->got, true);
	usleep(100 * 1000);
	atomic_store(&et->acked, true);
	if (cq)
		ibv_ack_cq_events(cq, 1);
	else
		ibv_ack_async_event(&et->ev);
	return NULL;
}

static void event_thread_start(struct event_thread *et)
{
	int i;

	CHECK_EQ(pthread_create(&et->t, NULL, event_thread_run, et), 0);
	for (i = 0; i < 2000 && !atomic_load(&et->got); i++)
		usleep(1000);
	CHECK(atomic_load(&et->got));
}

/*
 * The vendor raises an async event of @real; the application's thread reads
 * it from its context (ibv_get_async_event(): the forwarder's record) and
 * acknowledges it late. Return: the object the application got.
 */
static void *async_event_acked_late(struct event_thread *et, enum ibv_event_type type, void *real)
{
	memset(et, 0, sizeof(*et));
	vendor_raises(type, (uintptr_t)real);
	event_thread_start(et);
	CHECK_EQ(et->ev.event_type, type);
	return et->ev.element.cq;	/* any member: the shadow it names */
}

/*
 * ibv_destroy_cq() returns once every completion event the application
 * obtained for the CQ is acknowledged, whichever thread acknowledges it, as
 * libibverbs promises; it returned at once, and the late
 * ibv_ack_cq_events() wrote into the freed CQ.
 */
static void destroy_cq_waits_for_the_ack(void)
{
	struct event_thread et = { 0 };
	struct ibv_comp_channel ch;
	struct ibv_cq *cq;

	app_init();
	app_channel(&ch);
	cq = app_cq(&ch, NULL);
	et.ch = &ch;
	vendor_fires(cq);
	event_thread_start(&et);
	app_destroy_cq(cq);
	CHECK(atomic_load(&et.acked));
	pthread_join(et.t, NULL);
	app_channel_destroy(&ch);
	app_fini();
}

/* The same for the async events of a QP, an SRQ and a CQ. */
static void destroy_waits_for_async_acks(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct event_thread et;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	app_init();
	cq = app_cq(NULL, NULL);
	qp = send_qp(cq, IBV_QPT_RC, 0);
	srq = ibckpt_create_srq(&pd.ibv_pd, &sa);
	CHECK(srq != NULL);

	CHECK(async_event_acked_late(&et, IBV_EVENT_QP_FATAL, to_iqp(qp)->real) == qp);
	CHECK_EQ(ibckpt_destroy_qp(qp), 0);
	CHECK(atomic_load(&et.acked));
	pthread_join(et.t, NULL);

	CHECK(async_event_acked_late(&et, IBV_EVENT_SRQ_LIMIT_REACHED,
				     to_isrq(srq)->real) == srq);
	CHECK_EQ(ibckpt_destroy_srq(srq), 0);
	CHECK(atomic_load(&et.acked));
	pthread_join(et.t, NULL);

	CHECK(async_event_acked_late(&et, IBV_EVENT_CQ_ERR, to_icq(cq)->real) == cq);
	app_destroy_cq(cq);
	CHECK(atomic_load(&et.acked));
	pthread_join(et.t, NULL);
	app_fini();
}

/*
 * An object destroyed with async events the application has not read
 * takes them out of the application's async file, as the kernel drops a
 * destroyed object's unread events; the other events stay, in order.
 * Without that, ibv_get_async_event() would return a freed shadow.
 */
static void destroyed_object_leaves_no_async_event(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	app_init();
	cq = app_cq(NULL, NULL);
	qp = send_qp(cq, IBV_QPT_RC, 0);
	srq = ibckpt_create_srq(&pd.ibv_pd, &sa);
	CHECK(srq != NULL);
	vendor_raises(IBV_EVENT_SRQ_LIMIT_REACHED, (uintptr_t)to_isrq(srq)->real);
	vendor_raises(IBV_EVENT_PORT_ACTIVE, 1);
	vendor_raises(IBV_EVENT_QP_FATAL, (uintptr_t)to_iqp(qp)->real);
	vendor_raises(IBV_EVENT_SRQ_LIMIT_REACHED, (uintptr_t)to_isrq(srq)->real);
	CHECK(async_holds(4));
	CHECK_EQ(ibckpt_destroy_srq(srq), 0);	/* returns: none of its events was read */
	CHECK(async_holds(2));
	CHECK_EQ(ibv_get_async_event(&ctx->vctx.context, &ev), 0);
	CHECK_EQ(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	CHECK_EQ(ev.element.port_num, 1);
	CHECK_EQ(ibv_get_async_event(&ctx->vctx.context, &ev), 0);
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
	CHECK(ev.element.qp == qp);
	ibv_ack_async_event(&ev);
	CHECK_EQ(ibckpt_destroy_qp(qp), 0);
	CHECK(async_holds(0));
	app_destroy_cq(cq);
	app_fini();
}

/*
 * The application reads its async file late: events beyond what the pipe
 * holds wait in the forwarder's backlog, as in the kernel's unbounded
 * queue, and come in order once it reads: none is lost.
 * A destroyed QP's events are taken out of the backlog too.
 */
static void full_async_pipe_loses_nothing(void)
{
	struct ibv_async_event ev;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int i, n = 700, bytes = -1;

	app_init();
	cq = app_cq(NULL, NULL);
	qp = send_qp(cq, IBV_QPT_RC, 0);
	/* one page: 256 records */
	CHECK_EQ(fcntl(ctx->vctx.context.async_fd, F_SETPIPE_SZ, 4096), 4096);
	for (i = 0; i < n; i++) {
		vendor_raises(IBV_EVENT_PORT_ACTIVE, (uint64_t)i);
		if (i == 400)
			vendor_raises(IBV_EVENT_QP_FATAL, (uintptr_t)to_iqp(qp)->real);
	}
	for (i = 0; i < 2000; i++) {	/* the forwarder took all of the vendor's */
		CHECK_EQ(ioctl(vendor.context.async_fd, FIONREAD, &bytes), 0);
		if (!bytes)
			break;
		usleep(1000);
	}
	CHECK_EQ(bytes, 0);
	CHECK(async_holds(256));
	CHECK_EQ(ibckpt_destroy_qp(qp), 0);	/* its unread event: out of the backlog */
	for (i = 0; i < n; i++) {
		int k;

		/* a record within 2 s (the forwarder refills the pipe once empty) */
		for (k = 0; k < 2000; k++) {
			CHECK_EQ(ioctl(ctx->vctx.context.async_fd, FIONREAD, &bytes), 0);
			if (bytes > 0)
				break;
			usleep(1000);
		}
		if (!bytes) {
			CHECK_EQ(i, n);		/* lost from here on */
			break;
		}
		CHECK_EQ(ibv_get_async_event(&ctx->vctx.context, &ev), 0);
		CHECK_EQ(ev.event_type, IBV_EVENT_PORT_ACTIVE);
		CHECK_EQ(ev.element.port_num, i);
	}
	CHECK(async_holds(0));
	app_destroy_cq(cq);
	app_fini();
}

/*
 * Object ids wrap after 2^32 creations: an id a live object holds is
 * skipped, 0 never given, a freed one may be given again: no two live
 * objects share a snapshot handle or an XRC tag.
 */
static void ids_skip_live_ones(void)
{
	struct ibv_xrcd *a, *b, *c, *d;
	uint32_t ia;

	app_init();
	a = open_xrcd();
	ia = to_ixrcd(a)->obj.id;
	CHECK(ia != 0);
	ibckpt_ids_skip_to(ia - 1);		/* the next one would be a's */
	b = open_xrcd();
	CHECK(to_ixrcd(b)->obj.id != ia);
	CHECK(to_ixrcd(b)->obj.id != ctx->id);
	ibckpt_ids_skip_to(UINT32_MAX - 1);
	c = open_xrcd();
	CHECK_EQ(to_ixrcd(c)->obj.id, UINT32_MAX);
	d = open_xrcd();			/* wrapped: not 0, nobody's */
	CHECK(to_ixrcd(d)->obj.id != 0);
	CHECK(to_ixrcd(d)->obj.id != ia && to_ixrcd(d)->obj.id != to_ixrcd(b)->obj.id);
	CHECK(to_ixrcd(d)->obj.id != ctx->id);
	CHECK_EQ(ibckpt_close_xrcd(a), 0);
	ibckpt_ids_skip_to(ia - 1);		/* a's is free again */
	a = open_xrcd();
	CHECK_EQ(to_ixrcd(a)->obj.id, ia);
	CHECK_EQ(ibckpt_close_xrcd(a), 0);
	CHECK_EQ(ibckpt_close_xrcd(b), 0);
	CHECK_EQ(ibckpt_close_xrcd(c), 0);
	CHECK_EQ(ibckpt_close_xrcd(d), 0);
	app_fini();
}

/*
 * Posts only read the application's requests (no UD AH or bind window
 * swapped in place and back, no list the log could not take whole cut in
 * place): lists in read-only memory
 * post, the vendor gets the real AH, and a list longer than the log is
 * posted up to where the log stopped, *bad naming the first one left.
 */
static void posts_leave_the_requests_alone(void)
{
	/* the logs of a QP granted 4 requests hold 64 (IBCKPT_WRLOG_MIN_DEPTH) */
	enum { CUT = 64, N = CUT + 2 };
	size_t pg = 4 * (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_send_wr *wr = mmap(NULL, pg, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *bad = NULL;
	struct ibv_sge *sge = (struct ibv_sge *)(wr + N + 1);
	struct ibv_ah_attr aa = { .dlid = 5, .port_num = 1 };
	struct ibv_qp *ud, *rc;
	struct ibv_cq *cq;
	struct ibv_ah *ah;
	int i;

	CHECK(wr != MAP_FAILED);
	CHECK((char *)(sge + 1) <= (char *)wr + pg);
	app_init();
	v.ids[0] = 0x66;				/* the two QPs' numbers */
	v.ids[1] = 0x67;
	v.nids = 2;
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	ud = send_qp(cq, IBV_QPT_UD, 0);
	ah = ibckpt_create_ah(&pd.ibv_pd, &aa);
	CHECK(ah != NULL);
	*sge = (struct ibv_sge){ .addr = 0x1000, .length = 8, .lkey = 3 };
	for (i = 0; i < N; i++)
		wr[i] = (struct ibv_send_wr){ .wr_id = (uint64_t)i, .sg_list = sge, .num_sge = 1,
					      .opcode = IBV_WR_SEND, .next = &wr[i + 1],
					      .wr.ud = { .ah = ah, .remote_qpn = 5, .remote_qkey = 7 } };
	wr[1].next = NULL;
	CHECK_EQ(mprotect(wr, pg, PROT_READ), 0);
	CHECK_EQ(ibckpt_post_send(ud, wr, &bad), 0);	/* a UD list */
	CHECK(v.send.wr.ud.ah == to_iah(ah)->real);
	CHECK_EQ(v.send.wr_id, 0);

	rc = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(mprotect(wr, pg, PROT_READ | PROT_WRITE), 0);
	wr[1].next = &wr[2];
	wr[N - 1].next = NULL;
	CHECK_EQ(mprotect(wr, pg, PROT_READ), 0);
	v.norder = 0;
	CHECK_EQ(ibckpt_post_send(rc, wr, &bad), ENOMEM);
	CHECK(bad == &wr[CUT]);
	CHECK_EQ(v.norder, CUT);			/* the first ones reached the vendor */
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(rc)->sq), CUT);
	CHECK(wr[CUT - 1].next == &wr[CUT]);

	/* a receive list longer than the log: the same */
	struct ibv_recv_wr *rl = (struct ibv_recv_wr *)(wr + N + 4);

	CHECK((char *)(rl + N) <= (char *)wr + pg);
	CHECK_EQ(mprotect(wr, pg, PROT_READ | PROT_WRITE), 0);
	for (i = 0; i < N; i++)
		rl[i] = (struct ibv_recv_wr){ .wr_id = 60 + (uint64_t)i, .sg_list = sge,
					      .num_sge = 1, .next = i < N - 1 ? &rl[i + 1] : NULL };
	CHECK_EQ(mprotect(wr, pg, PROT_READ), 0);
	v.recv_posts = 0;
	CHECK_EQ(ibckpt_post_recv(rc, rl, (struct ibv_recv_wr **)&bad), ENOMEM);
	CHECK((void *)bad == (void *)&rl[CUT]);
	CHECK_EQ(v.recv_posts, CUT);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(rc)->rq), CUT);

	/* XRC SRQ receives reach the vendor tagged; the application's keep their wr_id */
	struct ibv_recv_wr *rwr = (struct ibv_recv_wr *)(wr + N + 2), *rbad;
	struct ibv_xrcd *x = open_xrcd();
	struct ibv_srq *srq = xsrq(x, cq, NULL);

	CHECK((char *)(rwr + 2) <= (char *)wr + pg);
	CHECK_EQ(mprotect(wr, pg, PROT_READ | PROT_WRITE), 0);
	for (i = 0; i < 2; i++)
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 40 + (uint64_t)i, .sg_list = sge,
					       .num_sge = 1, .next = i ? NULL : &rwr[1] };
	CHECK_EQ(mprotect(wr, pg, PROT_READ), 0);
	CHECK_EQ(ibckpt_post_srq_recv(srq, rwr, &rbad), 0);
	CHECK_EQ(v.srq_posts, 2);
	CHECK(v.srq_wr_id[0] != 40 && v.srq_wr_id[1] != 41 && v.srq_wr_id[0] != v.srq_wr_id[1]);
	CHECK_EQ(ibckpt_destroy_srq(srq), 0);
	CHECK_EQ(ibckpt_close_xrcd(x), 0);

	CHECK_EQ(ibckpt_destroy_qp(rc), 0);
	CHECK_EQ(ibckpt_destroy_qp(ud), 0);
	CHECK_EQ(ibckpt_destroy_ah(ah), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
	munmap(wr, pg);
}

/*
 * After a restart the vendor may hand a new QP or MR a QPN or key that is
 * the virtual ID of another object: one the job's peers translate (the
 * job's table), or one of the context's own restored QPs. The new object
 * gets another from the vendor; kept, peers would reach the other object,
 * or its own QPN entry would be refused.
 */
static void new_objects_avoid_virtual_ids(void)
{
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xd, .vid = 0x66, .real = 0x99 },
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xd, .vid = 0x70, .real = 0x70 },
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xe, .vid = 0x71, .real = 0x98 },
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x500, .real = 0x777 },
		{ .kind = IBCKPT_ID_MW, .vdev = 0xd, .vid = 0x8000105, .real = 0x9000230 },
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x80006c1, .real = 0x301 },
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x80007c1, .real = 0x80007c1 },
	};
	static char buf[64];
	uint32_t gen, wgen;
	struct ibv_qp *qp, *qp2;
	struct ibv_mr *mr, *mr2;
	struct ibv_mw *mw, *mw2;
	static int own_mw;
	struct ibv_cq *cq;
	int own, i;

	app_init();
	cq = app_cq(NULL, NULL);
	v.ids[0] = 0x66;	/* before any restart every ID is free */
	v.nids = 1;
	qp = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(qp->qp_num, 0x66);
	CHECK_EQ(ibckpt_destroy_qp(qp), 0);

	ctx->ident = calloc(1, sizeof(*ctx->ident));
	CHECK(ctx->ident != NULL);
	ctx->ident->vdev = 0xd;
	ibckpt_ctx_set_remapped(ctx);
	CHECK_EQ(ibckpt_remap_set(job, 7), 0);
	/* the context's own restored QP is virtual 0x68 (real 0x90) */
	CHECK_EQ(ibckpt_vidmap_insert(&ctx->qpns, 0x68, 0x90, &own, &gen), 0);
	/* ... and its own restored window has index 0x80004 */
	CHECK_EQ(ibckpt_vidmap_insert(&ctx->mw_virt, 0x80004, 0x91111, &own_mw, &wgen), 0);

	memset(v.ids, 0, sizeof(v.ids));
	v.ids[0] = 0x66;	/* the job's, on this device */
	v.ids[1] = 0x68;	/* the context's own */
	v.ids[2] = 0x70;	/* the job's, standing for itself: free */
	v.nids = 3;
	v.next_id = 0;
	v.destroyed = 0;
	qp = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(qp->qp_num, 0x70);
	CHECK_EQ(v.destroyed, 2);	/* the two held aside */
	v.ids[0] = 0x71;	/* taken on another device only: free here */
	v.nids = 1;
	v.next_id = 0;
	qp2 = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(qp2->qp_num, 0x71);

	v.ids[0] = 0x500;	/* a peer's rkey 0x500 is the job's */
	v.ids[1] = 0x501;
	v.nids = 2;
	v.next_id = 0;
	v.destroyed = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL);
	CHECK_EQ(mr->lkey, 0x501);
	CHECK_EQ(mr->rkey, 0x501);
	CHECK_EQ(v.destroyed, 1);

	/* a window, or an MR, whose index a window of the job holds (0x80001: the job's) */
	v.ids[0] = 0x80001aa;
	v.ids[1] = 0x8000233;
	v.ids[2] = 0x80001bb;
	v.ids[3] = 0x80003cc;
	v.nids = 4;
	v.next_id = 0;
	v.destroyed = 0;
	mw = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL);
	CHECK_EQ(mw->rkey, 0x8000233);
	CHECK_EQ(v.destroyed, 1);
	mr2 = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr2 != NULL);
	CHECK_EQ(mr2->rkey, 0x80003cc);
	CHECK_EQ(v.destroyed, 2);
	/* ... or one of the context's own windows does */
	v.ids[0] = 0x80004ff;
	v.ids[1] = 0x8000555;
	v.nids = 2;
	v.next_id = 0;
	mw2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_1);
	CHECK(mw2 != NULL);
	CHECK_EQ(mw2->rkey, 0x8000555);
	CHECK_EQ(ibckpt_dealloc_mw(mw2), 0);
	/*
	 * ... or an MR key of the job that stands for another (0x80006c1):
	 * binds could give the window the MR's key byte, which peers translate
	 * to the MR; not one standing for itself (0x80007c1)
	 */
	v.ids[0] = 0x80006b0;
	v.ids[1] = 0x80007b0;
	v.nids = 2;
	v.next_id = 0;
	v.destroyed = 0;
	mw2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mw2 != NULL);
	CHECK_EQ(mw2->rkey, 0x80007b0);
	CHECK_EQ(v.destroyed, 1);
	CHECK_EQ(ibckpt_dealloc_mw(mw2), 0);
	CHECK_EQ(ibckpt_dealloc_mw(mw), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr2)->vmr), 0);

	/* a vendor that hands out nothing else: refused, nothing kept */
	for (i = 0; i <= IBCKPT_ID_TRIES; i++)
		v.ids[i] = 0x66;
	v.nids = IBCKPT_ID_TRIES + 1;
	v.next_id = 0;
	v.destroyed = 0;
	errno = 0;
	CHECK(ibckpt_create_qp(&pd.ibv_pd, &(struct ibv_qp_init_attr){
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 } }) == NULL);
	CHECK_EQ(errno, EADDRINUSE);
	CHECK_EQ(v.destroyed, IBCKPT_ID_TRIES + 1);
	v.nids = 0;

	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_vidmap_remove(&ctx->qpns, 0x68, gen), 0);
	CHECK_EQ(ibckpt_vidmap_remove(&ctx->mw_virt, 0x80004, wgen), 0);
	CHECK_EQ(ibckpt_destroy_qp(qp), 0);
	CHECK_EQ(ibckpt_destroy_qp(qp2), 0);
	app_destroy_cq(cq);
	ibckpt_remap_clear();
	app_fini();
}

/*
 * A CQ is re-created at the size the application has now, resized or not
 * (not at the size first asked for, which may be smaller than the queues
 * the application sized against it), and a device that grants less is
 * refused.
 */
static void cq_recreated_at_its_size(void)
{
	struct ibckpt_cq *cq;
	struct ibv_cq *c;

	app_init();
	c = app_cq(NULL, NULL);
	cq = to_icq(c);
	CHECK_EQ(ibckpt_resize_cq(c, 64), 0);
	CHECK_EQ(c->cqe, 64);
	ibckpt_cq_release(cq);
	CHECK_EQ(ibckpt_cq_recreate(cq), 0);
	CHECK_EQ(cq->real->cqe, 64);
	ibckpt_cq_release(cq);
	v.cq_cap = 32;
	CHECK_EQ(ibckpt_cq_recreate(cq), ENOSPC);
	CHECK(cq->real == NULL);
	v.cq_cap = 0;
	CHECK_EQ(ibckpt_cq_recreate(cq), 0);
	app_destroy_cq(c);
	app_fini();
}

/* An RC QP whose send and receive queues complete to scq and rcq. */
static struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd.ibv_pd,
	};
	struct ibv_qp *q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);

	CHECK(q != NULL);
	return q;
}

static void post_both(struct ibv_qp *q, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr swr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *rbad;

	CHECK_EQ(ibckpt_post_send(q, &swr, &sbad), 0);
	CHECK_EQ(ibckpt_post_recv(q, &rwr, &rbad), 0);
}

static void vendor_fails(uint64_t wr_id)
{
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = wr_id, .status = IBV_WC_WR_FLUSH_ERR,
					   .qp_num = 0x66 };
}

/*
 * A failed completion's opcode is undefined: its CQ names its queue, so
 * a receive's flush never retires the send with the same wr_id (the
 * receive would stay logged, to be posted again).
 */
static void failed_completion_finds_its_queue(void)
{
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *q;
	struct ibv_wc wc[2];

	app_init();
	scq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	rcq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	CHECK(scq && rcq);
	q = rc_qp(scq, rcq);
	post_both(q, 5);
	vendor_fails(5);			/* the receive, flushed */
	CHECK_EQ(ibckpt_poll_cq(rcq, 2, wc), 1);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->rq), 0);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 1);
	vendor_fails(5);			/* then the send */
	CHECK_EQ(ibckpt_poll_cq(scq, 2, wc), 1);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	CHECK_EQ(to_iqp(q)->sq.unmatched + to_iqp(q)->rq.unmatched, 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);

	/* one CQ for both: a wr_id the send queue does not hold is the receive's */
	q = rc_qp(scq, scq);
	post_both(q, 6);
	vendor_fails(6);			/* the send */
	vendor_fails(6);			/* the receive */
	CHECK_EQ(ibckpt_poll_cq(scq, 2, wc), 2);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->rq), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(scq), 0);
	CHECK_EQ(ibckpt_destroy_cq(rcq), 0);
	app_fini();
}

/*
 * IBCKPT_STATS counts through the counting ops set over the verbs; the
 * verbs themselves count nothing (the data path pays no test for it).
 */
static void stats_only_through_the_counting_ops(void)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	struct ibv_wc wc[4];

	app_init();
	ibckpt_stats_on = true;		/* as with IBCKPT_STATS: the ops count, not the verbs */
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	CHECK(cq != NULL);
	q = rc_qp(cq, cq);
	post_both(q, 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(atomic_load(&ctx->stats.post_send) + atomic_load(&ctx->stats.post_recv) +
		 atomic_load(&ctx->stats.poll_cq), 0);
	CHECK_EQ(ibckpt_counted_ops.post_send(q, &swr, &sbad), 0);
	CHECK_EQ(ibckpt_counted_ops.post_recv(q, &rwr, &rbad), 0);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_SEND, .qp_num = q->qp_num };
	CHECK_EQ(ibckpt_counted_ops.poll_cq(cq, 4, wc), 1);
	CHECK_EQ(ibckpt_counted_ops.poll_cq(cq, 4, wc), 0);
	CHECK_EQ(atomic_load(&ctx->stats.post_send), 1);
	CHECK_EQ(atomic_load(&ctx->stats.post_recv), 1);
	CHECK_EQ(atomic_load(&ctx->stats.poll_cq), 2);
	CHECK_EQ(atomic_load(&ctx->stats.wc), 1);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 1);	/* the counted ops did post */
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	ibckpt_stats_on = false;
	app_fini();
}

/*
 * A TSO request on a connected QP (not a valid opcode there; a vendor may
 * still take it) is logged by the full path, its header with it, or
 * refused: the one-request path would log it without setting the header's
 * size, which shares the slot with the atomic operands, and a later move
 * of the log's records would copy that many bytes, out of bounds.
 */
static void tso_on_a_connected_qp(void)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 4, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd.ibv_pd,
	};
	struct ibv_sge sge[4] = { { 0x1000, 8, 3 }, { 0x2000, 8, 3 }, { 0x3000, 8, 3 },
				  { 0x4000, 8, 3 } };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = sge, .num_sge = 1, .opcode = IBV_WR_TSO,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	int i;

	app_init();
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	a.send_cq = a.recv_cq = cq;
	q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);
	CHECK(q != NULL);
	w.wr.atomic.swap = 0xfff0;		/* what the slot's header size would read */
	w.tso.hdr_sz = 0;
	CHECK_EQ(ibckpt_post_send(q, &w, &bad), 0);	/* no header: logged whole */
	CHECK_EQ(ibckpt_wrlog_tso_hdr(&to_iqp(q)->sq, ibckpt_wrlog_newest(&to_iqp(q)->sq, 1)),
		 NULL);
	w.tso.hdr_sz = 64;			/* the QP takes no header */
	CHECK_EQ(ibckpt_post_send(q, &w, &bad), EINVAL);
	CHECK(bad == &w);
	/* requests with SGE lists: records that make the log's ring grow */
	w.opcode = IBV_WR_SEND;
	w.num_sge = 4;
	for (i = 0; i < 60; i++) {
		w.wr_id = 10 + (uint64_t)i;
		CHECK_EQ(ibckpt_post_send(q, &w, &bad), 0);
	}
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 61);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * A QP's completions retire only through its own CQs, which forget it at
 * its destroy: a destroyed QP's flush left in its CQ, its QPN handed out
 * again to a QP of another CQ, is left alone: the other CQ must not
 * remember the new QP, which its destroy would not make it forget (a use
 * after free).
 */
static void stale_qpn_on_another_cq(void)
{
	struct ibv_cq *a, *b;
	struct ibv_qp *x, *y;
	struct ibv_wc wc[2];

	app_init();
	a = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	b = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	CHECK(a && b);
	x = rc_qp(a, a);			/* QPN 0x66 on CQ a */
	post_both(x, 1);
	CHECK_EQ(ibckpt_destroy_qp(x), 0);	/* its flush still in CQ a */
	y = rc_qp(b, b);			/* QPN 0x66 again, on CQ b */
	post_both(y, 1);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .status = IBV_WC_WR_FLUSH_ERR, .qp_num = 0x66 };
	CHECK_EQ(ibckpt_poll_cq(a, 2, wc), 1);
	CHECK(to_icq(a)->last_qp == NULL);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(y)->sq), 1);	/* y's requests untouched */
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(y)->rq), 1);
	CHECK_EQ(ibckpt_destroy_qp(y), 0);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 2, .opcode = IBV_WC_SEND, .qp_num = 0x55 };
	CHECK_EQ(ibckpt_poll_cq(a, 2, wc), 1);
	CHECK_EQ(ibckpt_destroy_cq(a), 0);
	CHECK_EQ(ibckpt_destroy_cq(b), 0);
	app_fini();
}

/*
 * Two freezes, nothing polled between: the private queue (2) is full of the
 * first's completions (1, 2), and the second cannot grow it: 3 is held aside
 * (cq->spill), 4 stays in the vendor's CQ.
 */
static struct ibv_qp *spilled(struct ibv_cq **cq)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	uint32_t moved = 0;
	struct ibv_qp *q;
	int i;

	app_init();
	*cq = ibckpt_create_cq(&ctx->vctx.context, 2, NULL, 0);
	CHECK(*cq != NULL);
	q = rc_qp(*cq, *cq);
	for (i = 1; i <= 4; i++) {
		wr.wr_id = (uint64_t)i;
		CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = (uint64_t)i, .opcode = IBV_WC_SEND,
						   .qp_num = 0x66 };
		if (i == 2)
			CHECK_EQ(ibckpt_cq_drain(to_icq(*cq), &moved), 0);
	}
	calloc_fails = 1;
	CHECK_EQ(ibckpt_cq_drain(to_icq(*cq), &moved), ENOMEM);
	calloc_fails = 0;
	CHECK(to_icq(*cq)->spilled);
	CHECK_EQ(v.ncqe, 1);
	return q;
}

static void spilled_done(struct ibv_cq *cq, struct ibv_qp *q)
{
	struct ibv_wc wc[8];
	int i, n = ibckpt_poll_cq(cq, 8, wc);

	CHECK_EQ(n, 4);			/* once each, in order */
	for (i = 0; i < n; i++)
		CHECK_EQ(wc[i].wr_id, (uint64_t)i + 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 8, wc), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * A drain tried again before the application polled takes the held one and
 * the rest, or fails again: it never reports success with the vendor's CQ
 * unread.
 */
static void drain_after_a_spill(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *q = spilled(&cq);
	uint32_t moved = 0;

	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);
	CHECK_EQ(moved, 1);
	CHECK_EQ(v.ncqe, 0);
	CHECK(!to_icq(cq)->spilled);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	spilled_done(cq, q);
}

/* The application polls after the failed drain: the held one comes right behind the queue. */
static void poll_after_a_spill(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *q = spilled(&cq);

	spilled_done(cq, q);
}

/*
 * A second freeze finds the private queue full (nothing polled since the
 * first): what the vendor holds is taken anyway (left in the vendor's CQ,
 * its requests would stay in the logs, to be executed again by a
 * restart). Everything comes back once, in order.
 */
static void drain_takes_everything(void)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t moved = 0;
	int i;

	app_init();
	cq = ibckpt_create_cq(&ctx->vctx.context, 2, NULL, 0);
	CHECK(cq != NULL);
	CHECK_EQ(to_icq(cq)->vcq.size, 2);
	q = rc_qp(cq, cq);
	for (i = 1; i <= 3; i++) {
		wr.wr_id = (uint64_t)i;
		CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
	}
	for (i = 1; i <= 2; i++)
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = (uint64_t)i, .opcode = IBV_WC_SEND,
						   .qp_num = 0x66 };
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);	/* the first freeze */
	CHECK_EQ(moved, 2);
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);	/* full, the vendor's empty: */
	CHECK_EQ(to_icq(cq)->vcq.size, 2);			/* no growth */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 3, .opcode = IBV_WC_SEND, .qp_num = 0x66 };
	moved = 0;
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);	/* the second */
	CHECK_EQ(moved, 1);
	CHECK_EQ(v.ncqe, 0);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	moved = 0;						/* a third: nothing more, */
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);
	CHECK_EQ(moved, 0);
	CHECK_EQ(to_icq(cq)->vcq.size, 4);			/* and no growth */
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 3);
	for (i = 0; i < 3; i++)
		CHECK_EQ(wc[i].wr_id, (uint64_t)i + 1);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * A context on the process's list with one signaled send posted and its
 * completion still in the vendor's CQ, the context list's lock held: what
 * a release finds to drain.
 */
static struct ibv_qp *listed_with_one_send(struct ibv_cq **cq)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp *q;

	app_init();
	*cq = app_cq(NULL, NULL);
	q = send_qp(*cq, IBV_QPT_RC, 0);
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 7, .opcode = IBV_WC_SEND, .qp_num = 0x66 };
	pthread_mutex_lock(&ibckpt_ctx_lock);
	ctx->next = ibckpt_ctxs;
	ibckpt_ctxs = ctx;
	return q;
}

/* ...and after the release's drain: off the list; the completion comes from the private queue. */
static void unlisted_after_the_drain(struct ibv_cq *cq, struct ibv_qp *q)
{
	struct ibv_wc wc;

	ibckpt_ctxs = ctx->next;
	pthread_mutex_unlock(&ibckpt_ctx_lock);
	CHECK_EQ(v.ncqe, 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A signaled send whose completion reached the vendor's CQ after the
 * quiesce's drain has completed: the release's check must not count it as
 * outstanding: the check runs after the release's own drain, and does not
 * refuse with EBUSY. The completion goes to the private queue, for
 * the application, first.
 */
static void release_check_after_the_drain(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *q = listed_with_one_send(&cq);

	ibckpt_quiesced = true;
	CHECK_EQ(ibckpt_release_prepare(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	ibckpt_quiesced = false;
	unlisted_after_the_drain(cq, q);
}

/*
 * A thread the freeze parked between a post's or a poll's lock and its test
 * of the closed flag holds that queue's lock for as long as the job is
 * frozen. The control thread's release drains and plans under those locks
 * after the answer: it must not wait for such a thread (it would spin
 * there for good, and the release would never answer).
 */
static void release_beside_a_parked_lock_holder(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *q = listed_with_one_send(&cq);

	ibckpt_ctl_self = true;
	CHECK_EQ(ibckpt_ctx_close(ctx, 1000), 0);
	ibckpt_quiesced = true;
	/* parked in the middle of a poll and of a post, their locks taken */
	atomic_store(&to_icq(cq)->lock.locked, 1);
	atomic_store(&to_iqp(q)->sq_lock.locked, 1);
	alarm(20);
	CHECK_EQ(ibckpt_release_prepare(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	alarm(0);
	/* thawed: they see the flag, let go (the lock word is theirs) */
	atomic_store(&to_icq(cq)->lock.locked, 0);
	atomic_store(&to_iqp(q)->sq_lock.locked, 0);
	ibckpt_quiesced = false;
	ibckpt_ctx_open(ctx);
	ibckpt_ctl_self = false;
	unlisted_after_the_drain(cq, q);
}

/* A REACQUIRE's device map names are C strings: one without its NUL is refused. */
static void reacquire_map_names_terminated(void)
{
	struct ibckpt_rdev_map map[2] = { { "rxe0", "rxe1" }, { "rxe1", "" } };
	struct ibckpt_ident *ids;
	uint32_t n;

	memset(map[1].to, 'x', sizeof(map[1].to));
	CHECK_EQ(ibckpt_reacquire(map, 2, &ids, &n), EINVAL);
	memset(map[1].to, 0, sizeof(map[1].to));
	memset(map[0].from, 'y', sizeof(map[0].from));
	CHECK_EQ(ibckpt_reacquire(map, 2, &ids, &n), EINVAL);
	memcpy(map[0].from, "rxe0", 5);
	CHECK_EQ(ibckpt_reacquire(map, 2, &ids, &n), 0);	/* nothing released: nothing to do */
	CHECK_EQ(n, 0);
}

/*
 * The peers' PSN check shows the peer got every packet sent, not that
 * every request posted was sent. A request not started yet (behind a
 * fence, out of credits, or rewound by an RNR retry as hardware reports
 * it) leaves the QP's send PSN where the peer expects it, and a release
 * would forget it. So each logged request counts the PSNs it takes, and
 * the release is refused unless the QP's next PSN is past all of them.
 */
static void release_waits_for_unsent_requests(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024 };
	struct ibv_sge sge = { .addr = 0x1000, .length = 3000, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE }, *bad;
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PATH_MTU), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0xfffffe };
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);	/* unsignaled, 3 packets */
	/* the vendor reports the QP at the PSN before it (query_qp: the last modify's) */
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), EBUSY);
	v.qp_attr_set.sq_psn = 0;	/* two of its three packets out */
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), EBUSY);
	v.qp_attr_set.sq_psn = 1;	/* all out (the PSN wrapped) */
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A CLI that dies part way through a command must not hold the
 * control thread (which also answers the module): the rest of a payload
 * that does not come within the deadline is dropped and answered, with the
 * command's number, and the channel serves the next command.
 */
static void restart_channel_survives_a_dead_cli(void)
{
	struct ibckpt_rmsg h = { .magic = IBCKPT_RMSG_MAGIC, .type = IBCKPT_RMSG_REMAP,
				 .len = 100, .seq = 41 };
	struct ibckpt_rmsg r;
	char part[10] = { 0 }, msg[256];
	int cmd, rep, wfd, rfd;

	CHECK_EQ(ibckpt_rctl_open(), 0);
	CHECK_EQ(ibckpt_rctl_fds(&cmd, &rep), 0);
	wfd = dup(cmd);		/* the CLI's ends, as it opens them */
	rfd = dup(rep);
	ibckpt_rctl_deadline_ms = 300;
	CHECK_EQ(write(wfd, &h, sizeof(h)), (ssize_t)sizeof(h));
	CHECK_EQ(write(wfd, part, sizeof(part)), (ssize_t)sizeof(part));	/* then it died */
	CHECK(!ibckpt_rctl_serve());		/* returns: before, it waited for ever */
	CHECK_EQ(read(rfd, &r, sizeof(r)), (ssize_t)sizeof(r));
	CHECK_EQ(r.status, ETIMEDOUT);
	CHECK_EQ(r.seq, 41);
	CHECK_EQ(r.cmd, IBCKPT_RMSG_REMAP);
	CHECK(r.len > 0 && r.len < sizeof(msg));
	CHECK_EQ(read(rfd, msg, r.len), (ssize_t)r.len);
	/* the next CLI's command is read whole: nothing of the dead one's is left */
	h = (struct ibckpt_rmsg){ .magic = IBCKPT_RMSG_MAGIC, .type = IBCKPT_RMSG_GO, .seq = 42 };
	CHECK_EQ(write(wfd, &h, sizeof(h)), (ssize_t)sizeof(h));
	CHECK(!ibckpt_rctl_serve());		/* nothing released: GO has nothing to do */
	CHECK_EQ(read(rfd, &r, sizeof(r)), (ssize_t)sizeof(r));
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.seq, 42);
	close(wfd);
	close(rfd);
	ibckpt_rctl_deadline_ms = 5000;
}

/*
 * An SRQ's limit fires once (IBV_EVENT_SRQ_LIMIT_REACHED disarms it): a
 * re-created SRQ is armed again only if its limit had not fired, so it
 * raises no second event the application never asked for.
 */
static void srq_limit_fires_once_across_a_restart(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq_attr lim = { .srq_limit = 4 };
	struct ibv_async_event ev;
	struct ibv_srq *srq;

	app_init();
	srq = ibckpt_create_srq(&pd.ibv_pd, &sa);
	CHECK(srq != NULL);
	CHECK_EQ(ibckpt_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
	ibckpt_srq_release(to_isrq(srq));
	v.srq_arms = 0;
	CHECK_EQ(ibckpt_srq_recreate(to_isrq(srq)), 0);
	CHECK_EQ(v.srq_arms, 0);	/* armed once its receives are back */
	CHECK_EQ(ibckpt_srq_refill(to_isrq(srq)), 0);	/* not fired: armed again */
	CHECK_EQ(v.srq_arms, 1);
	CHECK_EQ(v.srq_armed, 4);
	vendor_raises(IBV_EVENT_SRQ_LIMIT_REACHED, (uintptr_t)to_isrq(srq)->real);
	CHECK(async_holds(1));
	CHECK_EQ(ibv_get_async_event(&ctx->vctx.context, &ev), 0);
	CHECK(ev.element.srq == srq);
	ibv_ack_async_event(&ev);
	ibckpt_srq_release(to_isrq(srq));
	v.srq_arms = 0;
	CHECK_EQ(ibckpt_srq_recreate(to_isrq(srq)), 0);
	CHECK_EQ(ibckpt_srq_refill(to_isrq(srq)), 0);	/* fired: not armed */
	CHECK_EQ(v.srq_arms, 0);
	CHECK_EQ(ibckpt_destroy_srq(srq), 0);
	app_fini();
}

/*
 * After a restart the keys a request invalidates are translated too: a
 * SEND_WITH_INV names the peer's (its device's table), a LOCAL_INV one of
 * the context's own; as the application's they would invalidate another
 * key, or fail.
 */
static void invalidated_keys_are_translated(void)
{
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x500, .real = 0x777 },
	};
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = 0x500 }, *bad;
	static int owner;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t gen;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(ibckpt_remap_set(job, 1), 0);
	ibckpt_ctx_set_remapped(ctx);
	to_iqp(q)->rel.peer_vdev = 0xd;
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0x777);
	/* one of ours: virtual 0x600 is real 0x601 now */
	CHECK_EQ(ibckpt_key_add(ctx, &ctx->rkeys, 0x600, &owner, &gen), 0);
	CHECK_EQ(ibckpt_vidmap_set_real(&ctx->rkeys, 0x600, 0x601), 0);
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.num_sge = 0;
	wr.invalidate_rkey = 0x600;
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0x601);
	ibckpt_key_del(ctx, &ctx->rkeys, 0x600, gen);
	ctx->remapped = false;
	ibckpt_remap_clear();
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * After a restart every key a request names is the application's, virtual:
 * the vendor gets its real one (the context's table for lkeys, the peer
 * device's for rkeys) and the application's request stays as it was. The
 * one-request paths translate through a cache per queue: a key
 * deregistered and handed out again, the peer changed, a second restart
 * must each be seen at once (a stale entry would give the vendor another
 * MR's key).
 */
/* A QP of the context that takes four SGEs a request (made before the restart). */
static struct ibv_qp *four_sge_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd.ibv_pd,
		.cap = { .max_send_wr = 4, .max_send_sge = 4, .max_recv_wr = 4, .max_recv_sge = 4 },
	};
	struct ibv_qp *q;

	v.ids[0] = 0x68;	/* a QPN of its own */
	v.nids = 1;
	v.next_id = 0;
	q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);
	v.nids = 0;
	CHECK(q != NULL);
	if (q)
		q->state = IBV_QPS_RTS;
	return q;
}

/* Three SGEs on @q, the context remapped with lkey 0x300 -> 0x301: each key its own. */
static void three_sges(struct ibv_qp *q,
		       int (*send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **),
		       int (*recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **))
{
	struct ibv_sge sg[3] = { { 0x1000, 8, 0x300 }, { 0x2000, 8, 0x444 }, { 0x3000, 8, 0x300 } };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = sg, .num_sge = 3, .opcode = IBV_WR_SEND },
			   *bad;
	struct ibv_recv_wr rw = { .wr_id = 6, .sg_list = sg, .num_sge = 3 }, *rbad;

	CHECK(to_iqp(q)->fast & IBCKPT_POST_SEND_XL);
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.num_sge, 3);
	CHECK_EQ(v.send_sges[0].lkey, 0x301);
	CHECK_EQ(v.send_sges[1].lkey, 0x444);
	CHECK_EQ(v.send_sges[2].lkey, 0x301);
	CHECK_EQ(v.send_sges[2].addr, 0x3000);
	CHECK_EQ(recv(q, &rw, &rbad), 0);
	CHECK_EQ(v.recv_sges[0].lkey, 0x301);
	CHECK_EQ(v.recv_sges[1].lkey, 0x444);
	CHECK_EQ(v.recv_sges[2].lkey, 0x301);
	CHECK_EQ(sg[0].lkey, 0x300);
}

static void translate_keys_through(bool xl)
{
	int (*send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **) =
		xl ? ibckpt_post_send_xl : ibckpt_post_send;
	int (*recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **) =
		xl ? ibckpt_post_recv_xl : ibckpt_post_recv;
	int (*poll)(struct ibv_cq *, int, struct ibv_wc *) = xl ? ibckpt_poll_cq_xl : ibckpt_poll_cq;
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x500, .real = 0x777 },
	}, job2[] = {
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x500, .real = 0x888 },
	};
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 0x300 }, two[2];
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE }, *bad, w2[2], aw;
	struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *rbad;
	static int owner, owner2;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t gen, gen2, live;
	struct ibv_qp *q4;
	int i;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	q4 = four_sge_qp(cq);
	/* virtual lkey 0x300 is real 0x301 now; the peer's rkey 0x500 is 0x777 */
	CHECK_EQ(ibckpt_key_add(ctx, &ctx->lkeys, 0x300, &owner, &gen), 0);
	CHECK_EQ(ibckpt_vidmap_set_real(&ctx->lkeys, 0x300, 0x301), 0);
	CHECK_EQ(ibckpt_remap_set(job, 1), 0);
	ibckpt_ctx_set_remapped(ctx);
	/* the context's data path now translates inline */
	CHECK(ctx->vctx.context.ops.post_send == ibckpt_post_send_xl);
	CHECK(ctx->vctx.context.ops.post_recv == ibckpt_post_recv_xl);
	CHECK(ctx->vctx.context.ops.poll_cq == ibckpt_poll_cq_xl);
	to_iqp(q)->rel.peer_vdev = 0xd;
	wr.wr.rdma.rkey = 0x500;
	for (i = 0; i < 2; i++) {	/* the second from the caches */
		v.send_sge.lkey = 0;
		CHECK_EQ(send(q, &wr, &bad), 0);
		CHECK_EQ(v.send_sge.lkey, 0x301);
		CHECK_EQ(v.send.wr.rdma.rkey, 0x777);
		CHECK_EQ(v.send.wr_id, 1);
		CHECK_EQ(recv(q, &rw, &rbad), 0);
		CHECK_EQ(v.recv_sge.lkey, 0x301);
	}
	CHECK_EQ(sge.lkey, 0x300);		/* the application's, untouched */
	CHECK_EQ(wr.wr.rdma.rkey, 0x500);
	/* three SGEs, on a QP that takes four: each key its own translation */
	three_sges(q4, send, recv);
	/* a key the context made since is its own; one the job does not know too */
	sge.lkey = 0x444;
	wr.wr.rdma.rkey = 0x501;
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send_sge.lkey, 0x444);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x501);
	/* 0x300 deregistered, then handed out again by the vendor: its own now */
	sge.lkey = 0x300;
	wr.wr.rdma.rkey = 0x500;
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(recv(q, &rw, &rbad), 0);
	ibckpt_key_del(ctx, &ctx->lkeys, 0x300, gen);
	CHECK_EQ(ibckpt_key_add(ctx, &ctx->lkeys, 0x300, &owner2, &gen2), 0);
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send_sge.lkey, 0x300);
	CHECK_EQ(recv(q, &rw, &rbad), 0);
	CHECK_EQ(v.recv_sge.lkey, 0x300);
	/* connected to a device whose keys the job does not know */
	to_iqp(q)->rel.peer_vdev = 0xe;
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x500);
	/* a second restart: the peer's key is another again */
	to_iqp(q)->rel.peer_vdev = 0xd;
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x777);
	CHECK_EQ(ibckpt_remap_set(job2, 1), 0);
	ibckpt_ctx_set_remapped(ctx);
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x888);
	/* the vendor refuses the copy: the application's request is named, not logged */
	live = ibckpt_wrlog_live(&to_iqp(q)->sq);
	v.send_fail = ENOMEM;
	v.send_fail_after = 0;
	bad = NULL;
	CHECK_EQ(send(q, &wr, &bad), ENOMEM);
	CHECK(bad == &wr);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), live);
	v.send_fail = 0;
	live = ibckpt_wrlog_live(&to_iqp(q)->rq);
	v.recv_fail = ENOMEM;
	rbad = NULL;
	CHECK_EQ(recv(q, &rw, &rbad), ENOMEM);
	CHECK(rbad == &rw);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->rq), live);
	v.recv_fail = 0;
	/* a read and an atomic: the remote key where each keeps it, nothing else moved */
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x888);
	aw = wr;
	aw.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	aw.wr.atomic.remote_addr = 0x2000;
	aw.wr.atomic.compare_add = 7;
	aw.wr.atomic.swap = 9;
	aw.wr.atomic.rkey = 0x500;
	CHECK_EQ(send(q, &aw, &bad), 0);
	CHECK_EQ(v.send.wr.atomic.rkey, 0x888);
	CHECK_EQ(v.send.wr.atomic.compare_add, 7);
	CHECK_EQ(v.send.wr.atomic.swap, 9);
	CHECK_EQ(v.send.wr.atomic.remote_addr, 0x2000);
	CHECK_EQ(aw.wr.atomic.rkey, 0x500);
	wr.opcode = IBV_WR_RDMA_WRITE;
	/* no SGE at all (a zero-length write): nothing to read behind sg_list */
	wr.num_sge = 0;
	wr.sg_list = NULL;
	CHECK_EQ(send(q, &wr, &bad), 0);
	CHECK_EQ(v.send.num_sge, 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x888);
	rw.num_sge = 0;
	rw.sg_list = NULL;
	CHECK_EQ(recv(q, &rw, &rbad), 0);
	wr.num_sge = 1;
	wr.sg_list = &sge;
	/* a list (the general path) the same */
	two[0] = two[1] = sge;
	w2[0] = w2[1] = wr;
	w2[0].sg_list = &two[0];
	w2[1].sg_list = &two[1];
	w2[0].next = &w2[1];
	w2[1].next = NULL;
	CHECK_EQ(send(q, w2, &bad), 0);
	CHECK_EQ(v.send_sge.lkey, 0x300);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x888);
	/* what the vendor completes names its QPN: the application's comes back */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_RDMA_WRITE,
					   .qp_num = to_iqp(q)->real_qpn };
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 2, .opcode = IBV_WC_RECV,
					   .qp_num = to_iqp(q)->real_qpn };
	CHECK_EQ(poll(cq, 4, wc), 2);
	CHECK_EQ(wc[0].qp_num, q->qp_num);
	CHECK_EQ(wc[1].qp_num, q->qp_num);
	ibckpt_key_del(ctx, &ctx->lkeys, 0x300, gen2);
	ctx->remapped = false;
	ibckpt_remap_clear();
	CHECK_EQ(ibckpt_destroy_qp(q4), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* Through the identity entries (their general paths) and the remapped context's. */
static void remapped_posts_translate_keys(void)
{
	translate_keys_through(false);
	translate_keys_through(true);
}

/*
 * With IBCKPT_STATS a restart keeps the counting ops (they call the
 * identity entries, which translate on their general paths): a switch
 * would stop the counts at the first restart.
 */
static void restart_keeps_counting_ops(void)
{
	struct ibv_context_ops before;

	app_init();
	ctx->vctx.context.ops.post_send = ibckpt_counted_ops.post_send;
	ctx->vctx.context.ops.post_recv = ibckpt_counted_ops.post_recv;
	ctx->vctx.context.ops.poll_cq = ibckpt_counted_ops.poll_cq;
	before = ctx->vctx.context.ops;
	ibckpt_stats_on = true;
	ibckpt_ctx_set_remapped(ctx);
	ibckpt_stats_on = false;
	CHECK(ctx->vctx.context.ops.post_send == before.post_send);
	CHECK(ctx->vctx.context.ops.post_recv == before.post_recv);
	CHECK(ctx->vctx.context.ops.poll_cq == before.poll_cq);
	ctx->remapped = false;
	app_fini();
}

/*
 * A reacquire publishes port 1's LID and its first 16 GIDs only: a QP on
 * another port or with a source GID past them is refused at the release
 * (not released, to fail at REMAP for good).
 */
static void release_refuses_unpublished_addresses(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 2 };
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), 0);
	ibckpt_restart_err_clear();
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "port 2") != NULL);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	q = send_qp(cq, IBV_QPT_RC, 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .ah_attr = { .is_global = 1,
		.port_num = 1, .grh = { .sgid_index = 17 } } };
	ibckpt_restart_err_clear();
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV), 0);
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "source GID index 17") != NULL);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* A connected QP whose PSNs the device cannot say is not released. */
static void release_needs_the_psns(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	v.query_fail = EIO;
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), 0);	/* RESET */
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE), 0);
	ibckpt_restart_err_clear();
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "cannot say its PSNs") != NULL);
	v.query_fail = 0;
	CHECK_EQ(ibckpt_qp_release_check(to_iqp(q), IBCKPT_RREL_PEERS_CHECKED), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * The real-time interval timer is held from a release to its GO (itimer.c):
 * an alarm() must neither run on while every verb waits nor be left to
 * Debian's criu 3.17, which drops a one-shot timer at a restore (perftest
 * -D restored spun for good waiting for its alarm). What was left comes
 * back at GO; one the application set while released is kept; none stays
 * none; a child forked while released sets none of its parent's.
 */
static void real_timer_held_while_released(void)
{
	struct itimerval t = { .it_value = { .tv_sec = 100 } }, now;
	static const struct itimerval off;
	int status;
	pid_t pid;

	app_init();
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	ibckpt_quiesced = true;
	CHECK_EQ(ibckpt_release(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	CHECK(ibckpt_released);
	CHECK_EQ(getitimer(ITIMER_REAL, &now), 0);
	CHECK(!now.it_value.tv_sec && !now.it_value.tv_usec);	/* off while released */
	CHECK_EQ(ibckpt_go(), 0);
	CHECK_EQ(getitimer(ITIMER_REAL, &now), 0);
	CHECK(now.it_value.tv_sec > 90 && now.it_value.tv_sec <= 100);	/* what was left */
	CHECK(!now.it_interval.tv_sec && !now.it_interval.tv_usec);

	/* set again by the application while released: its own stays */
	CHECK_EQ(ibckpt_release(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	t.it_value.tv_sec = 7;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	CHECK_EQ(ibckpt_go(), 0);
	CHECK_EQ(getitimer(ITIMER_REAL, &now), 0);
	CHECK(now.it_value.tv_sec <= 7);

	/* a child forked while released has none of its parent's to set at its GO */
	t.it_value.tv_sec = 100;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	CHECK_EQ(ibckpt_release(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	fflush(stdout);
	pid = fork();
	if (!pid) {
		ibckpt_released = true;		/* a release of its own, no timer */
		_exit(ibckpt_go() || getitimer(ITIMER_REAL, &now) || now.it_value.tv_sec ? 1 : 0);
	}
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(ibckpt_go(), 0);

	/* none at the release: none after GO */
	CHECK_EQ(setitimer(ITIMER_REAL, &off, NULL), 0);
	CHECK_EQ(ibckpt_release(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	CHECK_EQ(ibckpt_go(), 0);
	CHECK_EQ(getitimer(ITIMER_REAL, &now), 0);
	CHECK(!now.it_value.tv_sec && !now.it_value.tv_usec);
	ibckpt_quiesced = false;
	app_fini();
}

/* A re-created QP is attached to its multicast groups again. */
static void multicast_groups_come_back(void)
{
	union ibv_gid g1 = { .raw = { 0xff, 0x0e, [15] = 1 } }, g2 = { .raw = { 0xff, 0x0e, [15] = 2 } };
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	ctx->ident = calloc(1, sizeof(*ctx->ident));	/* as a release leaves it */
	CHECK(ctx->ident != NULL);
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_UD, 0);
	CHECK_EQ(ibckpt_attach_mcast(q, &g1, 0xc001), 0);
	CHECK_EQ(ibckpt_attach_mcast(q, &g2, 0xc001), 0);
	CHECK_EQ(ibckpt_detach_mcast(q, &g1, 0xc001), 0);
	CHECK_EQ(v.nmgid, 1);
	ibckpt_qp_release(to_iqp(q));
	v.nmgid = 0;			/* the vendor's QP and its attachments are gone */
	to_iqp(q)->rel.state = IBV_QPS_RESET;
	CHECK_EQ(ibckpt_qp_recreate(to_iqp(q)), 0);
	CHECK_EQ(v.nmgid, 1);		/* g2 again, g1 not */
	CHECK(!memcmp(&v.mgid[0], &g2, sizeof(g2)));
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	ibckpt_remap_clear();
	app_fini();
}

/*
 * After a restart a UD receive's source QP and LID are the ones the
 * application knows (the sender's virtual QPN, found by its real one when
 * only one device of the job hands it out; the LID through the address
 * translation). Before, the sender's new QPN leaked to the application.
 */
static void ud_source_is_translated(void)
{
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xd, .vid = 0x44, .real = 0x99 },
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xd, .vid = 0x45, .real = 0x97 },
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xe, .vid = 0x46, .real = 0x97 },
	};
	struct ibv_wc wc[3];
	struct ibv_cq *cq;
	struct ibv_qp *ud, *rc;
	int i;

	app_init();
	cq = app_cq(NULL, NULL);
	ud = send_qp(cq, IBV_QPT_UD, 0);
	v.ids[0] = 0x67;
	v.nids = 1;
	v.next_id = 0;
	rc = send_qp(cq, IBV_QPT_RC, 0);
	v.nids = 0;
	CHECK_EQ(ibckpt_remap_set(job, 3), 0);
	CHECK_EQ(ibckpt_addrs_map_lid(&ctx->addrs, 5, 9), 0);
	ibckpt_ctx_set_remapped(ctx);
	/* the identity entry's general path, then the remapped context's own */
	for (i = 0; i < 2; i++) {
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_RECV,
						   .qp_num = 0x66, .src_qp = 0x99, .slid = 9 };
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 2, .opcode = IBV_WC_RECV,
						   .qp_num = 0x66, .src_qp = 0x97,
						   .slid = 9 };	/* two devices' */
		v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 3, .opcode = IBV_WC_RECV,
						   .qp_num = 0x67, .src_qp = 0x99,
						   .slid = 9 };	/* not UD */
		CHECK_EQ((i ? ibckpt_poll_cq_xl : ibckpt_poll_cq)(cq, 3, wc), 3);
		CHECK_EQ(wc[0].src_qp, 0x44);
		CHECK_EQ(wc[0].slid, 5);
		CHECK_EQ(wc[1].src_qp, 0x97);
		CHECK_EQ(wc[1].slid, 5);	/* the UD QP's second: its last QP's, UD too */
		CHECK_EQ(wc[2].src_qp, 0x99);
		CHECK_EQ(wc[2].slid, 9);
	}
	ctx->remapped = false;
	ibckpt_remap_clear();
	CHECK_EQ(ibckpt_destroy_qp(ud), 0);
	CHECK_EQ(ibckpt_destroy_qp(rc), 0);
	app_destroy_cq(cq);
	app_fini();
}

struct remapped_poller {
	struct ibv_cq *cq;
	int got;
	struct ibv_wc wc;
	atomic_bool done;
};

static void *remapped_poll(void *arg)
{
	struct remapped_poller *p = arg;
	struct ibv_wc wc[2];

	p->got = ibckpt_poll_cq(p->cq, 2, wc);
	p->wc = wc[0];
	atomic_store(&p->done, true);
	return NULL;
}

static struct ibv_cq *dying_cq;
static int dying_got;

/* Run by the vendor's destroy, its QP freed: another thread polls. */
static void poll_meanwhile(void)
{
	struct remapped_poller p = { .cq = dying_cq };
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, remapped_poll, &p), 0);
	pthread_join(t, NULL);
	dying_got = p.got;
}

/*
 * After a restart the CQ's last QP translates its completions: a poll of
 * them takes no context-wide lock (issue #14: every poll took the
 * context's QPN-table lock, a line all pollers of the context wrote). The
 * test holds that lock while another thread polls.
 */
static void remapped_poll_needs_no_context_lock(void)
{
	struct remapped_poller p = { 0 };
	struct ibv_wc wc[2];
	pthread_t t;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	int i;

	app_init();
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	q = rc_qp(cq, cq);
	/* as a reacquire leaves it: the vendor's QPN is another one now */
	to_iqp(q)->real->qp_num = 0x99;
	to_iqp(q)->real_qpn = 0x99;
	CHECK_EQ(ibckpt_vidmap_insert(&ctx->qpn_virt, 0x99, q->qp_num, to_iqp(q),
				      &to_iqp(q)->rel.qpn_virt_gen), 0);
	ibckpt_ctx_set_remapped(ctx);
	post_both(q, 1);
	post_both(q, 2);
	post_both(q, 3);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_SEND, .qp_num = 0x99 };
	CHECK_EQ(ibckpt_poll_cq(cq, 2, wc), 1);		/* the first: through the table */
	CHECK_EQ(wc[0].qp_num, q->qp_num);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 2, .opcode = IBV_WC_SEND, .qp_num = 0x99 };
	ibckpt_spin_lock(&ctx->qpn_lock);
	p.cq = cq;
	CHECK_EQ(pthread_create(&t, NULL, remapped_poll, &p), 0);
	for (i = 0; i < 2000 && !atomic_load(&p.done); i++)
		usleep(1000);
	CHECK(atomic_load(&p.done));			/* it did not wait for the lock */
	ibckpt_spin_unlock(&ctx->qpn_lock);
	pthread_join(t, NULL);
	CHECK_EQ(p.got, 1);
	CHECK_EQ(p.wc.qp_num, q->qp_num);		/* translated by the cached QP */
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 1);	/* the first two retired */
	/*
	 * A poll while the QP is being destroyed, after the vendor freed its
	 * QP: the cached shadow's own copy of the vendor's QPN is compared,
	 * never qp->real->qp_num, which is freed memory then.
	 */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 3, .opcode = IBV_WC_SEND, .qp_num = 0x99 };
	dying_cq = cq;
	v.destroyed_qp = poll_meanwhile;
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	v.destroyed_qp = NULL;
	CHECK_EQ(dying_got, 1);
	ctx->remapped = false;
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/* An application thread posting to both queues of a QP, or polling a CQ, at closed queues. */
struct closed_verb {
	struct ibv_qp *q;
	struct ibv_cq *cq;
	int got;			/* the poll's */
	struct ibv_wc wc;
	int sret, rret;			/* the posts' */
	atomic_bool done;
};

static void *closed_poll(void *arg)
{
	struct closed_verb *c = arg;
	struct ibv_wc wc[2];

	c->got = ibckpt_poll_cq(c->cq, 2, wc);
	c->wc = wc[0];
	atomic_store(&c->done, true);
	return NULL;
}

static void *closed_post(void *arg)
{
	struct closed_verb *c = arg;
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *rbad;

	c->sret = ibckpt_post_send(c->q, &swr, &sbad);
	c->rret = ibckpt_post_recv(c->q, &rwr, &rbad);
	atomic_store(&c->done, true);
	return NULL;
}

/* Does @done stay false for 100 ms? */
static bool stays_waiting(atomic_bool *done)
{
	int i;

	for (i = 0; i < 100 && !atomic_load(done); i++)
		usleep(1000);
	return !atomic_load(done);
}

/*
 * Posts and polls enter no gate (issue #14): the quiesce closes each queue
 * under its lock. A poller and a poster arriving at closed queues wait,
 * reaching neither the vendor's poll nor its posts, while the control
 * thread drains; once the context opens they go on, the poll returning
 * what the drain moved.
 */
static void verbs_wait_at_a_closed_queue(void)
{
	struct closed_verb p = { 0 }, s = { 0 };
	pthread_t tp, ts;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t k = 0;

	app_init();
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	q = rc_qp(cq, cq);
	post_both(q, 1);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_SEND, .qp_num = q->qp_num };
	CHECK_EQ(ibckpt_ctx_close(ctx, 1000), 0);
	CHECK(ctx->gate_closed);
	p.cq = cq;
	s.q = q;
	CHECK_EQ(pthread_create(&tp, NULL, closed_poll, &p), 0);
	CHECK_EQ(pthread_create(&ts, NULL, closed_post, &s), 0);
	CHECK(stays_waiting(&p.done));
	CHECK(stays_waiting(&s.done));
	CHECK_EQ(v.ncqe, 1);			/* the poller is not in the vendor's poll */
	CHECK_EQ(v.sends, 1);			/* nor the poster in its posts */
	CHECK_EQ(v.recv_posts, 1);
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &k), 0);	/* as a quiesce does meanwhile */
	CHECK_EQ(k, 1);
	ibckpt_ctx_open(ctx);
	CHECK(!ctx->gate_closed);
	alarm(20);	/* a waiter that takes the CQ's drained mark for closed waits on */
	pthread_join(tp, NULL);
	pthread_join(ts, NULL);
	alarm(0);
	CHECK_EQ(p.got, 1);			/* what the drain moved */
	CHECK_EQ(p.wc.wr_id, 1);
	CHECK_EQ(s.sret, 0);
	CHECK_EQ(s.rret, 0);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(v.recv_posts, 2);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

struct busy_poller {
	struct ibv_cq *cq;
	atomic_uint polls;
	atomic_bool stop;
};

static void *busy_poll(void *arg)
{
	struct busy_poller *b = arg;
	struct ibv_wc wc;

	while (!atomic_load(&b->stop)) {
		ibckpt_poll_cq(b->cq, 1, &wc);
		atomic_fetch_add(&b->polls, 1);
	}
	return NULL;
}

/*
 * A thread polling an empty CQ in a busy loop holds its lock most of the
 * time: the close still takes it, and the poller stops until the open.
 */
static void close_beats_a_busy_poller(void)
{
	struct busy_poller b = { 0 };
	unsigned int n;
	pthread_t t;

	app_init();
	b.cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	CHECK_EQ(pthread_create(&t, NULL, busy_poll, &b), 0);
	while (atomic_load(&b.polls) < 1000)
		usleep(100);
	CHECK_EQ(ibckpt_ctx_close(ctx, 2000), 0);
	usleep(10000);
	n = atomic_load(&b.polls);
	usleep(50000);
	CHECK(atomic_load(&b.polls) - n <= 1);	/* waiting at the closed CQ */
	atomic_store(&b.stop, true);
	ibckpt_ctx_open(ctx);
	pthread_join(t, NULL);
	CHECK_EQ(ibckpt_destroy_cq(b.cq), 0);
	app_fini();
}

struct closed_create {
	struct ibv_cq *cq;
	atomic_bool done;
};

static void *create_meanwhile(void *arg)
{
	struct closed_create *c = arg;

	c->cq = ibckpt_create_cq(&ctx->vctx.context, 4, NULL, 0);
	atomic_store(&c->done, true);
	return NULL;
}

/*
 * A CQ created while the context is closed waits at the gate, is born
 * when the queues are open again, and the next quiesce closes it with the
 * others. A quiesce that finds a queue's lock held (a thread stopped inside
 * a post or poll) gives up and leaves every queue and the gate open.
 */
static void queues_closed_and_opened_whole(void)
{
	struct closed_create c = { 0 };
	struct closed_verb p = { 0 };
	struct ibckpt_cq *icq;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	pthread_t t;

	app_init();
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	q = rc_qp(cq, cq);
	CHECK_EQ(ibckpt_ctx_close(ctx, 1000), 0);
	CHECK_EQ(atomic_load(&to_iqp(q)->sq_lock.closed), 1);
	CHECK_EQ(atomic_load(&to_iqp(q)->rq_lock.closed), 1);
	CHECK_EQ(atomic_load(&to_icq(cq)->lock.closed), 1);
	CHECK_EQ(pthread_create(&t, NULL, create_meanwhile, &c), 0);
	CHECK(stays_waiting(&c.done));		/* at the gate */
	ibckpt_ctx_open(ctx);
	pthread_join(t, NULL);
	CHECK(c.cq != NULL);
	icq = to_icq(c.cq);
	CHECK_EQ(atomic_load(&icq->lock.closed), 0);
	CHECK_EQ(ibckpt_ctx_close(ctx, 1000), 0);
	CHECK_EQ(atomic_load(&icq->lock.closed), 1);	/* on the list: closed with the others */
	p.cq = c.cq;
	CHECK_EQ(pthread_create(&t, NULL, closed_poll, &p), 0);
	CHECK(stays_waiting(&p.done));
	ibckpt_ctx_open(ctx);
	pthread_join(t, NULL);
	CHECK_EQ(p.got, 0);

	/*
	 * a poller stopped inside the vendor's poll of the last queue: the
	 * quiesce gives up, the queues it closed before open again
	 */
	ibckpt_spin_lock(&icq->lock);
	CHECK_EQ(ibckpt_ctx_close(ctx, 30), ETIMEDOUT);
	ibckpt_spin_unlock(&icq->lock);
	CHECK(!ctx->gate_closed);
	CHECK_EQ(atomic_load(&ctx->gate.closed), 0);
	CHECK_EQ(atomic_load(&to_iqp(q)->sq_lock.closed), 0);
	CHECK_EQ(atomic_load(&to_iqp(q)->rq_lock.closed), 0);
	CHECK_EQ(atomic_load(&to_icq(cq)->lock.closed), 0);
	CHECK_EQ(atomic_load(&icq->lock.closed), 0);
	post_both(q, 1);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(c.cq), 0);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/* A completion of no QP's (left alone by the retirement) in the vendor's CQ. */
static void vendor_has(uint64_t wr_id)
{
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = wr_id, .opcode = IBV_WC_RECV, .qp_num = 0x99 };
}

/*
 * A CQ's private queue is found by its polls' one test of the lock's flag
 * (spinlock.h): a drain marks the CQ IBCKPT_Q_DRAINED (at once when open,
 * at the opening when closed); polls serve the private queue first and
 * then unmark it; a quiesce that gives up leaves the mark as it found it;
 * the control thread's lock of a marked, open CQ is a real one.
 */
static void drained_cq_marked_on_its_flag(void)
{
	struct ibckpt_cq *icq;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	uint32_t moved = 0;

	app_init();
	cq = ibckpt_create_cq(&ctx->vctx.context, 16, NULL, 0);
	icq = to_icq(cq);
	/* drained while open (a provider-internal request's wait): marked at once */
	vendor_has(1);
	CHECK_EQ(ibckpt_cq_drain(icq, &moved), 0);
	CHECK_EQ(moved, 1);
	CHECK_EQ(atomic_load(&icq->lock.closed), IBCKPT_Q_DRAINED);
	vendor_has(2);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, wc), 1);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(atomic_load(&icq->lock.closed), 0);	/* served: polls test nothing more */
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 2);

	/* drained while closed: closed it stays, marked when it opens */
	vendor_has(3);
	CHECK_EQ(ibckpt_ctx_close(ctx, 1000), 0);
	CHECK_EQ(ibckpt_cq_drain(icq, &moved), 0);
	CHECK_EQ(atomic_load(&icq->lock.closed), IBCKPT_Q_CLOSED);
	ibckpt_ctx_open(ctx);
	CHECK_EQ(atomic_load(&icq->lock.closed), IBCKPT_Q_DRAINED);
	vendor_has(4);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 2);
	CHECK_EQ(wc[0].wr_id, 3);
	CHECK_EQ(wc[1].wr_id, 4);
	CHECK_EQ(atomic_load(&icq->lock.closed), 0);

	/* a quiesce that gives up (a poller stopped in the vendor's poll): still marked */
	vendor_has(5);
	CHECK_EQ(ibckpt_cq_drain(icq, &moved), 0);
	ibckpt_spin_lock(&icq->lock);
	CHECK_EQ(ibckpt_ctx_close(ctx, 30), ETIMEDOUT);
	ibckpt_spin_unlock(&icq->lock);
	CHECK_EQ(atomic_load(&icq->lock.closed), IBCKPT_Q_DRAINED);
	/* open and marked: the control thread's lock is a real one */
	ibckpt_ctl_self = true;
	CHECK(!ibckpt_spin_owned(&icq->lock));
	ibckpt_ctl_self = false;
	vendor_has(6);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 2);
	CHECK_EQ(wc[0].wr_id, 5);
	CHECK_EQ(wc[1].wr_id, 6);
	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	app_fini();
}

/*
 * query_device_ex does not advertise what ibckpt refuses to stack (issue
 * #14: applications fall back instead of failing), and writes no byte past
 * an older application's shorter struct.
 */
static void device_caps_match_what_is_stacked(void)
{
	struct ibv_device_attr_ex a;
	size_t short_size = offsetof(struct ibv_device_attr_ex, rss_caps);
	char *buf = malloc(short_size + 16);

	app_init();
	CHECK_EQ(ibckpt_query_device_ex(&ctx->vctx.context, NULL, &a, sizeof(a)), 0);
	CHECK_EQ(a.rss_caps.supported_qpts, 0);
	CHECK_EQ(a.rss_caps.max_rwq_indirection_tables, 0);
	CHECK_EQ(a.max_wq_type_rq, 0);
	CHECK_EQ(a.tm_caps.max_num_tags, 0);
	CHECK_EQ(a.max_dm_size, 0);
	CHECK_EQ(a.completion_timestamp_mask, 0);
	CHECK_EQ(a.hca_core_clock, 0);
	CHECK(a.odp_caps.general_caps != 0);		/* what is stacked stays */
	CHECK(a.tso_caps.max_tso != 0);
	CHECK(buf != NULL);
	memset(buf, 0x11, short_size + 16);
	CHECK_EQ(ibckpt_query_device_ex(&ctx->vctx.context, NULL, (void *)buf, short_size), 0);
	CHECK_EQ(buf[short_size], 0x11);		/* nothing past the caller's struct */
	CHECK_EQ(buf[short_size + 15], 0x11);
	free(buf);
	app_fini();
}

/* ---- fork() (fork.c) ---- */

/* How many of the process's descriptors are the file @fd is (a pipe's two ends: 2). */
static int same_file_fds(int fd)
{
	struct stat want, st;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d != NULL);
	if (!d || fstat(fd, &want))
		return -1;
	while ((e = readdir(d))) {
		int i = atoi(e->d_name);

		if (e->d_name[0] != '.' && i != dirfd(d) && !fstat(i, &st) &&
		    st.st_dev == want.st_dev && st.st_ino == want.st_ino)
			n++;
	}
	closedir(d);
	return n;
}

static struct ibv_qp *fork_parent_qp;
static struct ibv_cq_ex *fork_parent_cqx;
static struct ibv_srq *fork_parent_srq;

/*
 * The child's part of fork_child_gets_its_own(); its exit status says
 * whether every check passed. SIGALRM ends it if a verb hangs.
 */
static void forked_child(struct ibckpt_context *parent_ctx, struct ibv_cq *parent_cq,
			 struct ibv_comp_channel *parent_ch)
{
	struct ibv_comp_channel ch;
	struct ibv_cq *cq, *got;
	struct ibv_wc wc;
	void *got_ctx;

	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND }, *sbad = NULL;
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;

	alarm(10);
	/* inherited: foreign, walked by no quiesce of the child's */
	CHECK(ibckpt_ctxs == NULL);
	CHECK(ibckpt_foreign_ctxs == parent_ctx);
	CHECK(parent_ctx->foreign);
	CHECK_EQ(atomic_load(&parent_ctx->gate.closed), IBCKPT_GATE_FOREIGN);
	/*
	 * Refused at once, as the application calls them (libibverbs' inline
	 * calls through the context's ops): the parent's thread inside the
	 * gate and its qpn_lock are not here, and the queues' locks were
	 * copied held from the parent's poller and posters. The parent's ops
	 * were the entries a restart sets (a restarted parent's).
	 */
	CHECK(parent_ctx->vctx.context.ops.post_send != ibckpt_post_send_xl);
	errno = 0;
	CHECK_EQ(ibv_poll_cq(parent_cq, 1, &wc), -1);
	CHECK_EQ(errno, EACCES);
	CHECK_EQ(ibv_post_send(fork_parent_qp, &swr, &sbad), EACCES);
	CHECK(sbad == &swr);
	CHECK_EQ(ibv_post_recv(fork_parent_qp, &rwr, &rbad), EACCES);
	CHECK(rbad == &rwr);
	rbad = NULL;
	CHECK_EQ(ibv_post_srq_recv(fork_parent_srq, &rwr, &rbad), EACCES);
	CHECK(rbad == &rwr);
	/* an extended CQ's polls are its own pointers, not the context's ops */
	CHECK_EQ(ibv_start_poll(fork_parent_cqx, &(struct ibv_poll_cq_attr){ 0 }), EACCES);
	CHECK_EQ(ibckpt_gated_ops.req_notify_cq(parent_cq, 0), EACCES);
	CHECK_EQ(ibckpt_destroy_cq(parent_cq), EACCES);
	errno = 0;
	CHECK(ibckpt_create_cq(&parent_ctx->vctx.context, 4, NULL, 0) == NULL);
	CHECK_EQ(errno, EACCES);
	CHECK(ibckpt_gated_ops.alloc_pd(&parent_ctx->vctx.context) == NULL);
	CHECK_EQ(errno, EACCES);
	/* ibckpt's end of the parent's channel is closed; the application's stays */
	CHECK_EQ(same_file_fds(parent_ch->fd), 1);

	/* a context of its own: its channel's events reach it (a forwarder of its own) */
	app_init();
	ctx_list(true);
	app_channel(&ch);
	cq = app_cq(&ch, &ch);
	CHECK_EQ(same_file_fds(ch.fd), 2);		/* read end and ibckpt's write end */
	vendor_fires(cq);
	CHECK(channel_holds(&ch, 1));
	CHECK_EQ(ibv_get_cq_event(&ch, &got, &got_ctx), 0);
	CHECK(got == cq);
	CHECK(got_ctx == &ch);
	ibv_ack_cq_events(cq, 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 0);
	app_destroy_cq(cq);
	app_channel_destroy(&ch);
	_exit(unit_case_failed);	/* no exit handlers: the parent's state is not ours to free */
}

/*
 * fork() with parent threads inside verbs (the gate counts one, and it
 * holds the context's qpn_lock, as a poll does; others hold a CQ's lock
 * and a QP's queue locks, inside the vendor's poll and posts, which enter
 * no gate): the child's copy of the context is foreign, every verb on it
 * refused at once; a context the child opens works, its completion channel
 * included. The parent goes on.
 */
static void fork_child_gets_its_own(void)
{
	struct ibv_context_ops ops;
	struct ibckpt_context *pctx;
	struct ibv_comp_channel ch;
	struct ibv_cq *cq, *got;
	struct ibv_wc wc;
	void *got_ctx;
	int status = -1;
	pid_t pid;

	app_init();
	pctx = ctx;
	ctx_list(true);
	app_channel(&ch);
	cq = app_cq(&ch, NULL);
	CHECK_EQ(same_file_fds(ch.fd), 2);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 9, .qp_num = 0x1234 };

	fork_parent_qp = rc_qp(cq, cq);
	fork_parent_cqx = ibckpt_create_cq_ex(&ctx->vctx.context,
					      &(struct ibv_cq_init_attr_ex){ .cqe = 4 });
	CHECK(fork_parent_cqx != NULL);
	fork_parent_srq = ibckpt_create_srq(&pd.ibv_pd, &(struct ibv_srq_init_attr){
		.attr = { .max_wr = 8, .max_sge = 1 } });
	CHECK(fork_parent_srq != NULL);
	/* the translating entries, as a restart sets them: the child's are neither */
	ops = ctx->vctx.context.ops;
	ctx->vctx.context.ops.post_send = ibckpt_post_send_xl;
	ctx->vctx.context.ops.post_recv = ibckpt_post_recv_xl;
	ctx->vctx.context.ops.poll_cq = ibckpt_poll_cq_xl;
	ctx->vctx.context.ops.post_srq_recv = ibckpt_post_srq_recv;	/* as context.c's */

	CHECK_EQ(ibckpt_gate_enter(&ctx->gate), 0);
	ibckpt_spin_lock(&ctx->qpn_lock);
	/* as a poller inside the vendor's poll and posters inside its posts */
	ibckpt_spin_lock(&to_icq(cq)->lock);
	ibckpt_spin_lock(&to_icq_ex(fork_parent_cqx)->lock);
	ibckpt_spin_lock(&to_isrq(fork_parent_srq)->lock);
	ibckpt_spin_lock(&to_iqp(fork_parent_qp)->sq_lock);
	ibckpt_spin_lock(&to_iqp(fork_parent_qp)->rq_lock);
	fflush(stdout);
	pid = fork();
	if (!pid)
		forked_child(pctx, cq, &ch);
	ctx->vctx.context.ops = ops;
	ibckpt_spin_unlock(&to_iqp(fork_parent_qp)->rq_lock);
	ibckpt_spin_unlock(&to_iqp(fork_parent_qp)->sq_lock);
	ibckpt_spin_unlock(&to_isrq(fork_parent_srq)->lock);
	ibckpt_spin_unlock(&to_icq_ex(fork_parent_cqx)->lock);
	ibckpt_spin_unlock(&to_icq(cq)->lock);
	ibckpt_spin_unlock(&ctx->qpn_lock);
	ibckpt_gate_exit(&ctx->gate);
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (WIFSIGNALED(status))
		fprintf(stderr, "  the child died of signal %d (a verb hung)\n", WTERMSIG(status));

	/* the parent's context is its own still */
	CHECK(!ctx->foreign);
	CHECK(ibckpt_ctxs == ctx);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 9);
	vendor_fires(cq);
	CHECK(channel_holds(&ch, 1));
	CHECK_EQ(ibv_get_cq_event(&ch, &got, &got_ctx), 0);
	CHECK(got == cq);
	ibv_ack_cq_events(cq, 1);
	CHECK_EQ(ibckpt_destroy_qp(fork_parent_qp), 0);
	CHECK_EQ(ibckpt_destroy_cq(ibv_cq_ex_to_cq(fork_parent_cqx)), 0);
	CHECK_EQ(ibckpt_destroy_srq(fork_parent_srq), 0);
	app_destroy_cq(cq);
	app_channel_destroy(&ch);
	ctx_list(false);
	app_fini();
}

/* Events fired and consumed in a loop: the forwarder holds chan_lock for each. */
struct event_churn {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	atomic_int stop, fired, got;
	pthread_t fire, read;
};

static void *churn_fire(void *arg)
{
	struct event_churn *c = arg;

	while (!atomic_load(&c->stop)) {
		/* a bounded backlog: the pipes stay far from full */
		if (atomic_load(&c->fired) - atomic_load(&c->got) < 64) {
			vendor_fires(c->cq);
			atomic_fetch_add(&c->fired, 1);
		} else {
			usleep(100);
		}
	}
	return NULL;
}

static void *churn_read(void *arg)
{
	struct event_churn *c = arg;
	struct pollfd p = { .fd = c->ch->fd, .events = POLLIN };
	struct ibv_cq *got;
	void *got_ctx;
	int idle = 0;

	/* until stopped and every event fired came, or 2 s without one */
	while (!atomic_load(&c->stop) || atomic_load(&c->got) < atomic_load(&c->fired)) {
		if (poll(&p, 1, 10) <= 0) {
			if (++idle >= 200)
				break;
			continue;
		}
		idle = 0;
		if (ibv_get_cq_event(c->ch, &got, &got_ctx))
			continue;
		ibv_ack_cq_events(got, 1);
		atomic_fetch_add(&c->got, 1);
	}
	return NULL;
}

/*
 * fork() again and again while events stream through the forwarder (which
 * holds chan_lock around each): prepare never deadlocks with it, and every
 * child finds the forwarding state empty and the parent's context foreign,
 * however the fork fell; the parent's stream loses no event.
 */
static void fork_while_forwarding(void)
{
	struct event_churn c = { 0 };
	struct ibv_comp_channel ch;
	int i, status;
	pid_t pid;

	app_init();
	ctx_list(true);
	app_channel(&ch);
	c.ch = &ch;
	c.cq = app_cq(&ch, NULL);
	CHECK_EQ(pthread_create(&c.fire, NULL, churn_fire, &c), 0);
	CHECK_EQ(pthread_create(&c.read, NULL, churn_read, &c), 0);
	for (i = 0; i < 40; i++) {
		usleep(2000);
		fflush(stdout);
		pid = fork();
		if (!pid) {
			alarm(10);
			CHECK(ibckpt_ctxs == NULL);
			CHECK(ibckpt_foreign_ctxs == ctx && ctx->foreign);
			CHECK_EQ(same_file_fds(ch.fd), 1);	/* ibckpt's write end: closed */
			/* free locks, whatever the parent's threads held at the fork */
			ibckpt_channel_cleanup(ctx);		/* chan_lock */
			pthread_mutex_lock(&ibckpt_ctx_lock);
			pthread_mutex_unlock(&ibckpt_ctx_lock);
			_exit(unit_case_failed);
		}
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&c.stop, 1);
	pthread_join(c.fire, NULL);
	pthread_join(c.read, NULL);
	CHECK(atomic_load(&c.fired) > 40);
	CHECK_EQ(atomic_load(&c.got), atomic_load(&c.fired));
	app_destroy_cq(c.cq);
	app_channel_destroy(&ch);
	ctx_list(false);
	app_fini();
}

/* An RC QP on cq at RTS, path MTU 1024, sending from PSN 0x100 (the vendor says so too). */
static struct ibv_qp *rts_qp(struct ibv_cq *cq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024 };
	struct ibv_qp *q = send_qp(cq, IBV_QPT_RC, 0);

	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PATH_MTU), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 1 };
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), 0);
	return q;
}

/* A QP reset by the application taken to RTS again, as rts_qp() did. */
static bool rts_qp_again(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT };

	if (ibckpt_modify_qp(q, &a, IBV_QP_STATE))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024 };
	if (ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PATH_MTU))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 1 };
	return !ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT);
}

/* The application posts one request of 8 bytes (a READ or atomic from the peer's 0x5000). */
static void app_post(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t wr_id, unsigned int flags)
{
	static uint64_t buf;
	struct ibv_sge sge = { .addr = (uintptr_t)&buf, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP)
		wr.wr.atomic = (__typeof__(wr.wr.atomic)){ .remote_addr = 0x5008, .rkey = 0x77,
							   .compare_add = 1 };
	else
		wr.wr.rdma = (__typeof__(wr.wr.rdma)){ .remote_addr = 0x5000, .rkey = 0x77 };
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
}

static void app_post_recv(struct ibv_qp *q, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_EQ(ibckpt_post_recv(q, &wr, &bad), 0);
}

/* The wr_id the provider gives its internal requests on q (its token's). */
static uint64_t internal_wr_id(struct ibv_qp *q)
{
	return ibckpt_qp_internal_wr_id(to_iqp(q));
}

/*
 * A provider-internal request (qp_internal.c) is logged like the
 * application's: its PSNs are counted, its completion retires the
 * unsignaled requests before it, and the completion itself is dropped by
 * the drain; a receive completion with the same wr_id, drained meanwhile,
 * is the application's and reaches it.
 */
static void internal_request_kept_from_the_application(void)
{
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_READ,
				 .wr.rdma = { .remote_addr = 0x5000, .rkey = 0x77 } };
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t sum;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	app_post_recv(q, internal_wr_id(q));
	app_post(q, IBV_WR_RDMA_WRITE, 5, 0);			/* unsignaled: live */
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 1);
	sum = qp->sq.psn_sum;
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = internal_wr_id(q), .opcode = IBV_WC_RECV,
					   .qp_num = 0x66 };
	v.hold = true;
	v.hold_polls = 2;				/* two empty drains before it comes */
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 1000), 0);
	CHECK_EQ(v.send.wr_id, internal_wr_id(q));	/* the vendor got it as it was given */
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_READ);
	CHECK_EQ(v.send.num_sge, 0);
	CHECK(v.send.send_flags & IBV_SEND_SIGNALED);
	CHECK_EQ(qp->sq.psn_sum, (sum + 1) & IBCKPT_PSN_MASK);	/* a zero-length READ: one */
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);	/* the WRITE retired with it */
	CHECK_EQ(ibckpt_wrlog_live(&qp->rq), 0);
	CHECK_EQ(to_icq(cq)->internal, 0);
	CHECK(!ibckpt_qp_internal_pending(qp));
	CHECK_EQ(qp->sq.unmatched, 0);
	/* the application gets its receive, and only that */
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, internal_wr_id(q));
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * An internal request that did not complete in time stays outstanding:
 * the application polls again (a refused release, thawed), posts a
 * signaled request with the very wr_id, and the vendor completes all: one
 * of the application's with that wr_id before the internal request, the
 * internal one, the new one. The application's poll gets its own two
 * completions and not the internal one's.
 */
static void internal_request_late(void)
{
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_READ };
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t moved = 0;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	v.hold = true;
	v.hold_polls = -1;
	app_post(q, IBV_WR_SEND, internal_wr_id(q), IBV_SEND_SIGNALED);
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 20), ETIMEDOUT);
	CHECK(ibckpt_qp_internal_pending(qp));
	CHECK_EQ(ibckpt_qp_internal_post(qp, &w), EBUSY);	/* one at a time */
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	app_post(q, IBV_WR_SEND, internal_wr_id(q), IBV_SEND_SIGNALED);
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 2);
	CHECK_EQ(wc[0].wr_id, internal_wr_id(q));
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[1].wr_id, internal_wr_id(q));
	CHECK_EQ(wc[1].opcode, IBV_WC_SEND);
	CHECK(!ibckpt_qp_internal_pending(qp));
	CHECK_EQ(to_icq(cq)->internal, 0);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);
	CHECK_EQ(qp->sq.unmatched, 0);
	/* and the next one is taken */
	v.hold_polls = 0;
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 1000), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	/*
	 * a QP destroyed with one outstanding: an orphan of the CQ until a
	 * drain finds the vendor's CQ empty; then its polls go the usual way
	 */
	v.hold_polls = -1;
	CHECK_EQ(ibckpt_qp_internal_post(qp, &w), 0);
	CHECK_EQ(to_icq(cq)->internal, 1);
	CHECK_EQ(atomic_load(&to_icq(cq)->slow), IBCKPT_CQ_INTERNAL);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(to_icq(cq)->internal, 1);
	CHECK(to_icq(cq)->orphans != NULL);
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);
	CHECK_EQ(to_icq(cq)->internal, 0);
	CHECK_EQ(atomic_load(&to_icq(cq)->slow), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * The QP fails: the application's request gets its error, the internal
 * one its flush. Same wr_id for both: the flush that retires the
 * application's slot is the application's, the internal one's is dropped,
 * and the wait says it failed (EIO).
 */
static void internal_request_flushed(void)
{
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_READ };
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	app_post(q, IBV_WR_RDMA_READ, internal_wr_id(q), 0);
	CHECK_EQ(ibckpt_qp_internal_post(qp, &w), 0);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = internal_wr_id(q), .qp_num = 0x66,
					   .status = IBV_WC_RETRY_EXC_ERR };
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = internal_wr_id(q), .qp_num = 0x66,
					   .status = IBV_WC_WR_FLUSH_ERR };
	CHECK_EQ(ibckpt_qp_internal_wait(qp, 1000), EIO);
	CHECK_EQ(qp->internal.status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(wc[0].wr_id, internal_wr_id(q));
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* A PREPARE on ctx, frozen, with what the CLI says the QPs' peers grant. */
static int prepare_peers(const struct ibckpt_rpeer *peers, uint32_t n, uint32_t flags)
{
	int err;

	pthread_mutex_lock(&ibckpt_ctx_lock);
	ctx->next = ibckpt_ctxs;
	ibckpt_ctxs = ctx;
	ibckpt_quiesced = true;
	err = ibckpt_release_prepare(IBCKPT_RREL_PEERS_CHECKED | flags, peers, n);
	ibckpt_quiesced = false;
	ibckpt_ctxs = ctx->next;
	pthread_mutex_unlock(&ibckpt_ctx_lock);
	return err;
}

/* The release's checks on ctx, frozen (every check of a PREPARE), no word on peers. */
static int prepare(void)
{
	return prepare_peers(NULL, 0, 0);
}

/* The next PSN the vendor reports for q: every request logged sent. */
static void all_sent(struct ibv_qp *q)
{
	v.qp_attr_set.sq_psn = (to_iqp(q)->psn_base + to_iqp(q)->sq.psn_sum) & IBCKPT_PSN_MASK;
}

/*
 * restart.rst, "Exactly once": a release forgot an unsignaled RDMA READ
 * or atomic whose response was still to come. The release's checks now
 * post a fence behind them, only behind them: a zero-length READ with the
 * newest READ's key and address, or behind atomics alone a FETCH_AND_ADD
 * of 0 at the newest atomic's target into the provider's own MR, gone
 * once the fence completed. The fence's PSN is counted, its completion
 * retires what was before it and never reaches the application.
 */
static void fence_behind_reads_and_atomics(void)
{
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;
	int destroyed;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	v.hold = true;
	v.hold_polls = 1;			/* its completion at the second poll */
	app_post(q, IBV_WR_RDMA_WRITE, 1, 0);
	all_sent(q);
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 1);			/* a WRITE has no fence */
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 1);

	app_post(q, IBV_WR_RDMA_READ, 2, 0);
	app_post(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 0);
	all_sent(q);
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 4);
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_READ);	/* behind a READ, a READ */
	CHECK_EQ(v.send.num_sge, 0);
	CHECK_EQ(v.send.wr.rdma.remote_addr, 0x5000);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x77);
	CHECK_EQ(v.send.wr_id, internal_wr_id(q));
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);	/* all retired by it */
	CHECK_EQ((qp->psn_base + qp->sq.psn_sum) & IBCKPT_PSN_MASK, 0x104);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(to_icq(cq)->internal, 0);

	destroyed = v.destroyed;
	app_post(q, IBV_WR_ATOMIC_CMP_AND_SWP, 4, 0);
	all_sent(q);
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 6);
	CHECK_EQ(v.send.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	CHECK_EQ(v.send.wr.atomic.compare_add, 0);
	CHECK_EQ(v.send.wr.atomic.remote_addr, 0x5008);
	CHECK_EQ(v.send.wr.atomic.rkey, 0x77);
	CHECK_EQ(v.send.num_sge, 1);
	CHECK_EQ(v.send_sge.length, 8);
	CHECK_EQ(v.send_sge.lkey, 0x300);		/* the provider's MR ... */
	CHECK(qp->fence.mr == NULL);			/* ... gone again */
	CHECK_EQ(v.destroyed, destroyed + 1);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);

	/* nothing live: no fence */
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 6);
	CHECK_EQ(qp->sq.unmatched, 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A fence that does not complete in time refuses the release (EBUSY),
 * naming the QP, and changes nothing the application sees: its READ is
 * still logged, nothing is in its CQ. The next try waits for that fence
 * again and posts no other; once its completion comes (the application
 * polls, thawed) the READ is retired and the fence's completion dropped,
 * and a release goes on.
 */
static void fence_that_does_not_complete(void)
{
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);			/* timeout 1: a fence may take ~0.1 s */
	qp = to_iqp(q);
	v.hold = true;
	v.hold_polls = -1;
	app_post(q, IBV_WR_RDMA_READ, 2, 0);
	all_sent(q);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EBUSY);
	CHECK(strstr(ibckpt_restart_msg(), "QP 102: the fence") != NULL);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 2);	/* the READ and the fence */
	CHECK_EQ(ibckpt_wrlog_at(&qp->sq, 0, NULL, NULL)->wr_id, 2);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EBUSY);
	CHECK(strstr(ibckpt_restart_msg(), "earlier try") != NULL);
	CHECK_EQ(v.sends, 2);
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A fence completing in error: the QP failed, the application gets its
 * READ's error (and not the fence's flush), and the release goes on.
 */
static void fence_failing(void)
{
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	app_post(q, IBV_WR_RDMA_READ, 2, 0);
	all_sent(q);
	v.hold = true;
	v.hold_polls = 0;
	v.hold_status = IBV_WC_WR_FLUSH_ERR;
	v.hold_left = -1;		/* the READ's error comes with the fence's flush */
	v.held[v.nheld++] = (struct ibv_wc){ .wr_id = 2, .status = IBV_WC_RETRY_EXC_ERR,
					     .qp_num = 0x66 };
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(qp->internal.status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* After a restart the fence names the peer's new key, as the READ went out with. */
static void fence_after_a_restart(void)
{
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_RKEY, .vdev = 0xd, .vid = 0x77, .real = 0x777 },
	};
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	CHECK_EQ(ibckpt_remap_set(job, 1), 0);
	ibckpt_ctx_set_remapped(ctx);
	to_iqp(q)->rel.peer_vdev = 0xd;
	app_post(q, IBV_WR_RDMA_READ, 2, 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x777);
	all_sent(q);
	v.hold = true;
	v.hold_polls = 0;
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_READ);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x777);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	ctx->remapped = false;
	ibckpt_remap_clear();
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}


/*
 * A fence is posted only once every check of every QP passed. QP 102's
 * atomic needs one, QP 103's signaled SEND has not completed: the release
 * is refused, and no FETCH_AND_ADD 0 was posted on QP 102 to run at the
 * peer after the thaw (PREPARE never returns with one outstanding behind
 * another QP's refusal).
 */
static void no_fence_behind_a_refusal(void)
{
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q1, *q2;

	app_init();
	cq = app_cq(NULL, NULL);
	v.ids[0] = 102;
	v.ids[1] = 103;
	v.nids = 2;
	q1 = rts_qp(cq);
	q2 = rts_qp(cq);
	v.hold = true;
	v.hold_polls = -1;
	app_post(q1, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0);
	app_post(q2, IBV_WR_SEND, 2, IBV_SEND_SIGNALED);
	all_sent(q1);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EBUSY);
	CHECK(strstr(ibckpt_restart_msg(), "QP 103: 1 signaled sends have not completed") != NULL);
	CHECK_EQ(v.sends, 2);				/* no fence */
	CHECK(!ibckpt_qp_internal_pending(to_iqp(q1)));
	CHECK(to_iqp(q1)->fence.mr == NULL);
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_EQ(ibckpt_destroy_qp(q1), 0);
	CHECK_EQ(ibckpt_destroy_qp(q2), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A poll whose vendor batch held a late internal completion polls the
 * vendor again for what it dropped: ibv_poll_cq(cq, 1) with the fence's
 * completion and the application's SEND behind it returns the SEND, not
 * 0 (an event-driven application would sleep on it, and a cq_ex poll of
 * one would say ENOENT). Also behind completions the private queue served
 * first.
 */
static void poll_refills_behind_an_internal_completion(void)
{
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_READ };
	struct ibv_wc wc[4], d = { .wr_id = 5, .opcode = IBV_WC_RECV, .qp_num = 0x66 };
	struct ibckpt_qp *qp;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t moved = 0;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	v.hold = true;
	v.hold_polls = -1;
	app_post(q, IBV_WR_RDMA_READ, 1, 0);
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 20), ETIMEDOUT);
	app_post(q, IBV_WR_SEND, 9, IBV_SEND_SIGNALED);
	vendor_delivers();				/* the fence's, then the SEND's */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, wc), 1);
	CHECK_EQ(wc[0].wr_id, 9);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK(!ibckpt_qp_internal_pending(qp));
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);

	/* one drained completion first, then the vendor's for the rest */
	app_post_recv(q, 5);
	v.cqe[v.ncqe++] = d;
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 20), ETIMEDOUT);
	app_post(q, IBV_WR_SEND, 10, IBV_SEND_SIGNALED);
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 2, wc), 2);
	CHECK_EQ(wc[0].wr_id, 5);
	CHECK_EQ(wc[1].wr_id, 10);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * An internal request outstanding when the application resets or
 * destroys its QP, its completion already in the vendor's CQ (rxe takes
 * nothing out of a CQ at either): the completion is dropped when polled
 * (the application never gets it, with the provider's wr_id, and it
 * retires no request of the reset log). One whose completion
 * never came goes at the next drain that empties the CQ with the gate
 * closed.
 */
static void internal_request_orphaned(void)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_READ };
	struct ibckpt_qp *qp;
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint32_t moved = 0;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	v.hold = true;
	v.hold_polls = -1;
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 20), ETIMEDOUT);
	vendor_delivers();
	CHECK_EQ(ibckpt_modify_qp(q, &reset, IBV_QP_STATE), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(to_icq(cq)->internal, 0);

	/* reset before it completed: it never does; the application's go on */
	CHECK(rts_qp_again(q));
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 20), ETIMEDOUT);
	v.nheld = 0;
	CHECK_EQ(ibckpt_modify_qp(q, &reset, IBV_QP_STATE), 0);
	CHECK_EQ(to_icq(cq)->internal, 1);
	CHECK(rts_qp_again(q));
	app_post(q, IBV_WR_SEND, 7, IBV_SEND_SIGNALED);
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 7);
	CHECK_EQ(to_icq(cq)->internal, 1);
	CHECK_EQ(ibckpt_cq_drain(to_icq(cq), &moved), 0);
	CHECK_EQ(to_icq(cq)->internal, 0);

	/* destroyed, its completion in the CQ: the next QP's polls never see it */
	CHECK_EQ(ibckpt_qp_post_internal(qp, &w, 20), ETIMEDOUT);
	vendor_delivers();
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	q = rts_qp(cq);
	app_post(q, IBV_WR_SEND, 8, IBV_SEND_SIGNALED);
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 8);
	CHECK_EQ(to_icq(cq)->internal, 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)((t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/*
 * The fences of an earlier try are waited for together, with one
 * deadline: four QPs whose fences (each may take ~0.1 s, timeout 1)
 * complete 90, 180, 270 and 360 ms into the next try hold it back ~0.1 s,
 * refused for QP 103's (one after another, each its full time from the
 * end of the one before, they would take 0.36 s, and N such QPs would
 * pass the CLI's 60 s).
 */
static void earlier_fences_waited_together(void)
{
	struct ibv_qp *q[4];
	struct ibv_wc wc[8];
	struct timespec t0;
	struct ibv_cq *cq;
	uint64_t ms, t;
	int i;

	app_init();
	cq = app_cq(NULL, NULL);
	for (i = 0; i < 4; i++)
		v.ids[i] = 102 + (uint32_t)i;
	v.nids = 4;
	for (i = 0; i < 4; i++)
		q[i] = rts_qp(cq);
	v.hold = true;
	v.hold_polls = -1;
	for (i = 0; i < 4; i++)
		app_post(q[i], IBV_WR_RDMA_READ, 1, 0);
	all_sent(q[0]);				/* the same PSNs for all four */
	CHECK_EQ(prepare(), EBUSY);
	CHECK_EQ(v.sends, 8);
	CHECK_EQ(v.nheld, 4);
	v.timed = true;
	t = now_ms();
	for (i = 0; i < 4; i++)
		v.held_ms[i] = t + 90 * (uint64_t)(i + 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EBUSY);
	ms = ms_since(&t0);
	CHECK(ms >= 100);
	CHECK(ms < 250);
	CHECK(strstr(ibckpt_restart_msg(), "QP 103: the fence of an earlier try") != NULL);
	CHECK_EQ(v.sends, 8);
	v.timed = false;
	vendor_delivers();
	CHECK_EQ(ibckpt_poll_cq(cq, 8, wc), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(ibckpt_destroy_qp(q[i]), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A wait that cannot drain (no memory for the private queue) does not
 * know whether the atomic fence completed: its MR stays registered for the
 * response still to land (which must not meet a dead lkey), and goes once
 * the fence completed.
 */
static void fence_mr_kept_while_outstanding(void)
{
	struct ibv_wc fill = { .wr_id = 99, .opcode = IBV_WC_RECV, .qp_num = 0x66 }, wc[32];
	struct ibckpt_cq *icq;
	struct ibckpt_qp *qp;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	int err;

	app_init();
	cq = app_cq(NULL, NULL);
	icq = to_icq(cq);
	q = rts_qp(cq);
	qp = to_iqp(q);
	app_post(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0);
	all_sent(q);
	while (ibckpt_vcq_count(&icq->vcq) < icq->vcq.size)	/* drained, not polled */
		CHECK_EQ(ibckpt_vcq_push(&icq->vcq, &fill, 1), 0);
	app_post_recv(q, 5);
	v.hold = true;
	v.hold_polls = 0;
	v.hold_left = -1;
	v.held[v.nheld++] = (struct ibv_wc){ .wr_id = 5, .opcode = IBV_WC_RECV, .qp_num = 0x66 };
	calloc_fails = 1;				/* the private queue cannot grow */
	err = prepare();
	calloc_fails = 0;
	CHECK_EQ(err, EINPROGRESS);		/* an atomic fence: asked again, frozen */
	CHECK_EQ(v.sends, 2);
	CHECK(ibckpt_qp_internal_pending(qp));
	CHECK(qp->fence.mr != NULL);
	while (ibckpt_poll_cq(cq, 32, wc) > 0)
		;
	CHECK(!ibckpt_qp_internal_pending(qp));
	CHECK_EQ(prepare(), 0);
	CHECK(qp->fence.mr == NULL);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* A prepare with QP q's peer granting @access (IBV_ACCESS_REMOTE_*). */
static int prepare_granted(struct ibv_qp *q, unsigned int access)
{
	struct ibckpt_rpeer p = { .qp = to_iqp(q)->obj.id, .access = access };

	return prepare_peers(&p, 1, 0);
}

/*
 * The fence is chosen from what the peer grants (PREPARE's
 * payload, read by the CLI from the peer's snapshot), so that the peer
 * cannot refuse it: a zero-length WRITE if it grants writes (a WRITE sent
 * again is only acknowledged again), else a zero-length READ naming the
 * newest READ's key and address (an atomic's behind atomics alone: rxe
 * looks the key up again when the READ is sent again), else a
 * FETCH_AND_ADD of 0; nothing fitting, a lasting refusal (not a READ
 * behind a READ, FETCH_AND_ADD behind atomics, whatever the peer grants).
 */
static void fence_chosen_from_what_the_peer_grants(void)
{
	const unsigned int rw = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	struct ibckpt_qp *qp;
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	qp = to_iqp(q);
	v.hold = true;
	v.hold_polls = 0;
	app_post(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0);
	app_post(q, IBV_WR_RDMA_READ, 2, 0);
	all_sent(q);
	CHECK_EQ(prepare_granted(q, rw | IBV_ACCESS_REMOTE_ATOMIC), 0);
	CHECK_EQ(v.sends, 3);
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_WRITE);
	CHECK_EQ(v.send.num_sge, 0);
	CHECK(qp->fence.mr == NULL);
	CHECK_EQ(ibckpt_wrlog_live(&qp->sq), 0);

	app_post(q, IBV_WR_RDMA_READ, 3, 0);
	all_sent(q);
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC), 0);
	CHECK_EQ(v.sends, 5);
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_READ);
	CHECK_EQ(v.send.num_sge, 0);
	CHECK_EQ(v.send.wr.rdma.remote_addr, 0x5000);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x77);

	app_post(q, IBV_WR_ATOMIC_CMP_AND_SWP, 4, 0);	/* atomics alone, reads granted */
	all_sent(q);
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC), 0);
	CHECK_EQ(v.sends, 7);
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_READ);
	CHECK_EQ(v.send.wr.rdma.remote_addr, 0x5008);	/* the atomic's */
	CHECK_EQ(v.send.wr.rdma.rkey, 0x77);

	app_post(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0);	/* atomics only granted */
	all_sent(q);
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_ATOMIC), 0);
	CHECK_EQ(v.sends, 9);
	CHECK_EQ(v.send.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	CHECK_EQ(v.send.wr.atomic.compare_add, 0);
	CHECK_EQ(v.send.wr.atomic.remote_addr, 0x5008);
	CHECK_EQ(v.send_sge.lkey, 0x300);
	CHECK(qp->fence.mr == NULL);

	/* a READ behind which the peer grants nothing a fence can use */
	app_post(q, IBV_WR_RDMA_READ, 6, 0);
	all_sent(q);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_ATOMIC), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "QP 102: its peer grants remote atomics only") != NULL);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare_granted(q, 0), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "grants no remote access") != NULL);
	CHECK_EQ(v.sends, 10);				/* no fence */
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_WRITE), 0);
	CHECK_EQ(v.send.opcode, IBV_WR_RDMA_WRITE);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A fence that fails itself (not a flush: the peer refused it) put the QP
 * in error; the release is refused saying so (EIO, a refusal no retry
 * cures), and does not go on as if the QP had failed by itself. Its READ
 * completed before it, and is retired.
 */
static void fence_failure_is_said(void)
{
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	app_post(q, IBV_WR_RDMA_READ, 2, 0);
	all_sent(q);
	v.hold = true;
	v.hold_polls = 0;
	v.hold_status = IBV_WC_REM_ACCESS_ERR;
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_WRITE), EIO);
	CHECK(strstr(ibckpt_restart_msg(), "QP 102: its fence (zero-length WRITE) failed: "
		     "remote access error") != NULL);
	CHECK(strstr(ibckpt_restart_msg(), "the QP is in error") != NULL);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A FETCH_AND_ADD 0 still outstanding when a PREPARE ends must not run
 * after a thaw (rxe's add is not atomic with the peer's CPU stores):
 * EINPROGRESS, which the CLI answers by asking again with the job frozen
 * (not EBUSY, on which the CLI thaws). It stays so, behind a NO_FENCE
 * PREPARE too, until it completed.
 */
static void atomic_fence_keeps_the_job_frozen(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	v.hold = true;
	v.hold_polls = -1;
	app_post(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0);
	all_sent(q);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_ATOMIC), EINPROGRESS);
	CHECK(strstr(ibckpt_restart_msg(), "QP 102: its fence, a FETCH_AND_ADD of 0") != NULL);
	CHECK(to_iqp(q)->fence.mr != NULL);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare_peers(NULL, 0, IBCKPT_RREL_NO_FENCE), EINPROGRESS);
	CHECK(strstr(ibckpt_restart_msg(), "QP 102: its fence, a FETCH_AND_ADD of 0") != NULL);
	CHECK_EQ(v.sends, 2);
	vendor_delivers();
	CHECK_EQ(prepare_granted(q, IBV_ACCESS_REMOTE_ATOMIC), 0);
	CHECK(to_iqp(q)->fence.mr == NULL);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A fence that cannot be posted (QP 103's queue full) after QP 102's
 * was: QP 102's is waited for before the refusal, which is a
 * lasting one (ENOSPC: freezing again does not empty a queue), never left
 * outstanding behind it.
 */
static void posted_fences_waited_behind_a_refusal(void)
{
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_qp *q1, *q2;

	app_init();
	cq = app_cq(NULL, NULL);
	v.ids[0] = 102;
	v.ids[1] = 103;
	v.nids = 2;
	q1 = rts_qp(cq);
	q2 = rts_qp(cq);
	v.hold = true;
	v.hold_polls = 2;			/* QP 102's fence: at the third poll */
	app_post(q1, IBV_WR_RDMA_READ, 1, 0);
	app_post(q2, IBV_WR_RDMA_READ, 2, 0);
	all_sent(q1);
	v.send_fail = ENOMEM;
	v.send_fail_after = 1;
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), ENOSPC);
	CHECK(strstr(ibckpt_restart_msg(), "QP 103: its send queue has no room for a fence") !=
	      NULL);
	CHECK_EQ(v.sends, 3);
	CHECK(!ibckpt_qp_internal_pending(to_iqp(q1)));	/* waited for */
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q1)->sq), 0);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q2)->sq), 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibckpt_destroy_qp(q1), 0);
	CHECK_EQ(ibckpt_destroy_qp(q2), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * What freezing again cannot cure is not EBUSY, so the CLI
 * does not thaw and freeze five times for it: a QP whose state cannot be
 * queried, one at SQD with a READ outstanding, the fence's MR refused.
 * And the first lasting refusal is told, not an EBUSY found before it.
 */
static void lasting_refusals_are_not_ebusy(void)
{
	struct ibv_qp_attr port2 = { .port_num = 2 };
	struct ibv_cq *cq;
	struct ibv_qp *q, *q2;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	app_post(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0);
	all_sent(q);
	v.query_fail = EIO;
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "cannot say its next PSN") != NULL);
	v.query_fail = 0;
	to_iqp(q)->real->state = IBV_QPS_SQD;
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "outstanding in state 4 (not RTS)") != NULL);
	to_iqp(q)->real->state = IBV_QPS_RTS;
	v.reg_fail = EFAULT;
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EFAULT);
	CHECK(strstr(ibckpt_restart_msg(), "the fence's memory cannot be registered") != NULL);
	CHECK_EQ(v.sends, 1);

	/* an EBUSY (QP 102's signaled SEND), then a lasting refusal (QP 103's port) */
	app_post(q, IBV_WR_SEND, 2, IBV_SEND_SIGNALED);
	v.ids[0] = 103;
	v.nids = 1;
	v.next_id = 0;
	q2 = rts_qp(cq);
	CHECK_EQ(ibckpt_modify_qp(q2, &port2, IBV_QP_PORT), 0);
	ibckpt_restart_err_clear();
	CHECK_EQ(prepare(), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "on port 2") != NULL);
	CHECK_EQ(ibckpt_destroy_qp(q2), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* IBCKPT_RREL_NO_FENCE: the checks only, no fence posted (another process refused). */
static void no_fence_asked(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	v.hold = true;
	v.hold_polls = 0;
	app_post(q, IBV_WR_RDMA_READ, 1, 0);
	all_sent(q);
	CHECK_EQ(prepare_peers(NULL, 0, IBCKPT_RREL_NO_FENCE), 0);
	CHECK_EQ(v.sends, 1);
	CHECK(!to_iqp(q)->fence.planned);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 1);
	CHECK_EQ(prepare(), 0);
	CHECK_EQ(v.sends, 2);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}


/* ---- memory windows (restart.rst, "Memory windows") ---- */

static struct ibv_cq *app_cq_last;	/* a CQ for the vendor's hooks to poll */

static struct ibv_send_wr bind_wr(struct ibv_mw *mw, struct ibv_mr *mr, uint32_t rkey, void *addr)
{
	return (struct ibv_send_wr){
		.wr_id = 1, .opcode = IBV_WR_BIND_MW,
		.bind_mw = { .mw = mw, .rkey = rkey,
			     .bind_info = { .mr = mr, .addr = (uintptr_t)addr, .length = 64,
					    .mw_access_flags = IBV_ACCESS_REMOTE_WRITE } },
	};
}

static int post1(struct ibv_qp *q, struct ibv_send_wr wr)
{
	struct ibv_send_wr *bad;

	return ibckpt_post_send(q, &wr, &bad);
}

/* A peer's send that invalidated @rkey, as the vendor reports it (rxe's flag, 1 << 2). */
static void peer_invalidates(uint32_t rkey, unsigned int flags)
{
	struct fake_mw *f = fake_mw_of_key(rkey);

	if (!(flags & IBV_WC_WITH_IMM) && f && f->key == rkey)	/* the device's window is free */
		fake_mw_invalidate(rkey);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 9, .opcode = IBV_WC_RECV, .qp_num = 0x66,
					   .wc_flags = flags, .invalidated_rkey = rkey };
}

/*
 * A window's state is its last bind or invalidate: binds posted (type 2)
 * or through ibv_bind_mw() (type 1), a local invalidate (which leaves the
 * one-request path for it), a peer's send with invalidate seen at the poll
 * (by IBV_WC_WITH_INV or rxe's bit, the key checked; one with immediate
 * data is not); a bind that fails makes it unknown, and the release then
 * refuses the process.
 */
static void windows_follow_binds_and_invalidations(void)
{
	static char buf[256];
	struct ibv_mw *w1, *w2;
	struct ibv_mr *mr;
	struct ibv_cq *cq, *cq2;
	struct ibv_qp *q;
	struct ibv_wc wc;
	struct ibv_mw_bind b = { .wr_id = 3, .send_flags = IBV_SEND_SIGNALED };

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	app_post_recv(q, 20);
	app_post_recv(q, 21);
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.ids[2] = 0x80002b0;
	v.nids = 3;
	v.next_id = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(mr != NULL);
	CHECK_EQ(atomic_load(&to_icq(cq)->slow), 0);
	w2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(w2 != NULL);
	/* a peer can invalidate it: polls look, on every CQ of the context */
	CHECK_EQ(atomic_load(&to_icq(cq)->slow), IBCKPT_CQ_WINDOWS);
	cq2 = app_cq(NULL, NULL);
	CHECK_EQ(atomic_load(&to_icq(cq2)->slow), IBCKPT_CQ_WINDOWS);
	CHECK_EQ(w2->rkey, 0x80001a0);

	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);
	CHECK(v.send.bind_mw.mw == to_imw(w2)->real);
	CHECK(v.send.bind_mw.bind_info.mr == to_imr(mr)->real);
	CHECK_EQ(v.send.bind_mw.rkey, 0x80001a1);
	CHECK_EQ(to_imw(w2)->real->rkey, 0x80001a0);	/* named by the key it had */
	CHECK_EQ(((struct fake_mw *)to_imw(w2)->real)->key, 0x80001a1);
	CHECK(to_imw(w2)->bind.mr == mr);
	CHECK(to_imw(w2)->qp == to_iqp(q));
	w2->rkey = 0x80001a1;				/* as the application does */

	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 2, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = 0x80001a1 }), 0);
	CHECK_EQ(v.send.opcode, IBV_WR_LOCAL_INV);
	CHECK(to_imw(w2)->bind.mr == NULL);
	CHECK(to_imw(w2)->qp == NULL);

	CHECK_EQ(post1(q, bind_wr(w2, mr, 0x80001a2, buf)), 0);
	CHECK(to_imw(w2)->bind.mr == mr);
	w2->rkey = 0x80001a2;
	/*
	 * A vendor other than rxe: IBV_WC_IP_CSUM_OK is a checksum's (mlx5 sets
	 * it on UD and raw packet receives), invalidated_rkey not written
	 */
	ctx->wc_inv = ibckpt_mw_wc_inv("mlx5");
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 9, .opcode = IBV_WC_RECV, .qp_num = 0x66,
					   .wc_flags = IBV_WC_IP_CSUM_OK,
					   .invalidated_rkey = 0x80001a2 };
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w2)->bind.mr == mr);
	ctx->wc_inv = ibckpt_mw_wc_inv("rxe");		/* Debian's rxe: bit 2 is the invalidation */
	peer_invalidates(0x80001a2, IBV_WC_GRH | IBV_WC_IP_CSUM_OK);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w2)->bind.mr == NULL);
	CHECK_EQ(wc.invalidated_rkey, 0x80001a2);

	CHECK_EQ(post1(q, bind_wr(w2, mr, 0x80001a3, buf)), 0);
	w2->rkey = 0x80001a3;
	peer_invalidates(0x80001a3, IBV_WC_WITH_IMM);	/* immediate data, not a key */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w2)->bind.mr == mr);
	peer_invalidates(0x80001a7, IBV_WC_WITH_INV);	/* a key it does not have */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w2)->bind.mr == mr);

	w1 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_1);
	CHECK(w1 != NULL);
	b.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf + 64,
						 .length = 64,
						 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK(v.mw_bound_to == to_imr(mr)->real);
	CHECK_EQ(w1->rkey, 0x80002b1);		/* the vendor's next key */
	CHECK_EQ(to_imw(w1)->vrkey, 0x80002b1);
	CHECK(to_imw(w1)->bind.mr == mr);
	CHECK(to_imw(w1)->qp == NULL);		/* a type 1 window answers any QP */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 3);

	/* a bind that fails (the window is bound): whether it took effect is not known */
	CHECK_EQ(v.mw_errs, 0);
	CHECK_EQ(post1(q, bind_wr(w2, mr, 0x80001a4, buf)), 0);
	CHECK_EQ(v.mw_errs, 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_MW_BIND_ERR);
	CHECK(to_imw(w2)->unsure);
	CHECK(!to_imw(w1)->unsure);
	ctx_list(true);
	ibckpt_quiesced = true;
	CHECK_EQ(ibckpt_release_prepare(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "state is not known") != NULL);
	ibckpt_quiesced = false;
	ctx_list(false);

	/* not for ever: a later invalidate that completes makes it known again */
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 4, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w2->rkey }), 0);
	CHECK_EQ(v.mw_errs, 1);
	CHECK(!to_imw(w2)->unsure);
	CHECK(to_imw(w2)->bind.mr == NULL);
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w2)), 0);
	/* ... so does a bind, and a peer's invalidation of its key */
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);
	w2->rkey = ibv_inc_rkey(w2->rkey);
	CHECK(!to_imw(w2)->unsure);
	/* a local invalidate of a key it had before fails */
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 5, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w2->rkey - 1 }), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_MW_BIND_ERR);
	CHECK(to_imw(w2)->unsure);
	peer_invalidates(w2->rkey, IBV_WC_WITH_INV);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(!to_imw(w2)->unsure);
	CHECK(to_imw(w2)->bind.mr == NULL);
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w2)), 0);

	CHECK_EQ(ibckpt_dealloc_mw(w1), 0);
	CHECK_EQ(atomic_load(&to_icq(cq2)->slow), IBCKPT_CQ_WINDOWS);
	CHECK_EQ(ibckpt_dealloc_mw(w2), 0);
	/* the last type 2 window gone: polls retire as before */
	CHECK_EQ(atomic_load(&to_icq(cq)->slow), 0);
	CHECK_EQ(atomic_load(&to_icq(cq2)->slow), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq2);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A bind that fails leaves the device's key where it was; the application
 * keeps its ibv_mw.rkey (type 2), or undoes what the vendor moved at the
 * post (type 1, rxe's "user has to undo this"), and its next bind names
 * the window by that key, through ibckpt as without: it succeeds (rxe
 * refuses a bind naming another key than the device's).
 */
static void failed_bind_leaves_the_window_key(void)
{
	static char buf[256];
	struct ibv_mw_bind b = { .wr_id = 3, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *w1, *w2;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	struct ibv_wc wc;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.ids[2] = 0x80002b0;
	v.nids = 3;
	v.next_id = 0;
	v.mw_errs = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	w2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	w1 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_1);
	CHECK(mr && w1 && w2);

	/* type 2: bound; a second bind fails (not free); invalidated; bound again */
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);
	w2->rkey = ibv_inc_rkey(w2->rkey);			/* 0x80001a1 */
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);
	CHECK_EQ(v.mw_errs, 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_MW_BIND_ERR);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 2, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w2->rkey }), 0);
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);
	CHECK_EQ(v.mw_errs, 1);					/* the vendor took it */
	CHECK_EQ(v.send.bind_mw.mw->rkey, 0x80001a1);
	CHECK_EQ(((struct fake_mw *)to_imw(w2)->real)->key, 0x80001a2);
	CHECK_EQ(to_imw(w2)->vrkey, 0x80001a2);

	/* type 1 through ibv_bind_mw(): one that fails is undone by the application */
	b.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf,
						 .length = 64,
						 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(w1->rkey, 0x80002b1);
	v.mw_refuse = 1;
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_MW_BIND_ERR);
	CHECK_EQ(w1->rkey, 0x80002b2);				/* moved at the post, as rxe's */
	CHECK_EQ(((struct fake_mw *)to_imw(w1)->real)->key, 0x80002b1);
	w1->rkey = 0x80002b1;					/* undone */
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(w1->rkey, 0x80002b2);
	CHECK_EQ(((struct fake_mw *)to_imw(w1)->real)->key, 0x80002b2);
	CHECK_EQ(v.mw_errs, 2);

	CHECK_EQ(ibckpt_dealloc_mw(w1), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w2), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A log entry outlives its window: an unsignaled bind stays logged until a
 * later completion retires it. The window deallocated, a failed send with
 * the bind's wr_id (whose range starts at the bind) must not reach the
 * freed shadow (ASan: heap-use-after-free); a live window is still found,
 * even by a bind that named another index than its own (the vendor takes
 * the key byte alone).
 */
static void failed_send_after_a_window_is_gone(void)
{
	static char buf[64];
	struct ibv_send_wr wr;
	struct ibv_mw *w, *w2;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	struct ibv_wc wc;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.ids[2] = 0x80002b0;
	v.nids = 3;
	v.next_id = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	w = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	w2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w && w2);
	CHECK_EQ(post1(q, bind_wr(w, mr, ibv_inc_rkey(w->rkey), buf)), 0);	/* wr_id 1, unsignaled */
	CHECK_EQ(ibckpt_dealloc_mw(w), 0);
	app_post(q, IBV_WR_SEND, 1, IBV_SEND_SIGNALED);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .status = IBV_WC_RETRY_EXC_ERR,
					   .qp_num = 0x66 };
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);

	/* a bind naming index 0x12345 for the window at 0x80002, flushed */
	wr = bind_wr(w2, mr, 0x12345b1, buf);
	wr.wr_id = 7;
	CHECK_EQ(post1(q, wr), 0);
	CHECK_EQ(to_imw(w2)->vrkey, 0x80002b1);
	CHECK(!to_imw(w2)->unsure);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 7, .status = IBV_WC_WR_FLUSH_ERR,
					   .qp_num = 0x66 };
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w2)->unsure);

	CHECK_EQ(ibckpt_dealloc_mw(w2), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A failed completion names its request by wr_id alone, and several live
 * requests may carry it: every bind and invalidate from the oldest of them
 * on may be the one that failed, or flushed behind it. (1) An unsignaled
 * SEND with wr_id 1 completed (silently), then a type 1 bind with wr_id 1
 * fails: its window's state is unknown, though the oldest live request with
 * that wr_id is the SEND. (2) The other way round, a bind with wr_id 1 that
 * completed and a SEND with it that fails: the window is marked too (which
 * one failed cannot be told), and its next bind makes it known again. (3) A
 * LOCAL_INV behind a failed request is flushed: marked by the failure
 * already, with its own wr_id.
 */
static void failed_completion_with_a_shared_wr_id(void)
{
	static char buf[256];
	struct ibv_mw_bind b = { .wr_id = 1 };
	struct ibv_mw *w1, *w2;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	struct ibv_wc wc;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.ids[2] = 0x80002b0;
	v.nids = 3;
	v.next_id = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	w2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	w1 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_1);
	CHECK(mr && w1 && w2);
	b.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf, .length = 64,
						 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };

	/* (1) */
	app_post(q, IBV_WR_SEND, 1, 0);
	v.mw_refuse = 1;
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_MW_BIND_ERR);
	CHECK(to_imw(w1)->unsure);
	CHECK(to_imw(w1)->bind.mr == mr);		/* as posted, but not known */
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w1)), EOPNOTSUPP);

	/* (2): the QP again (reset: the log forgets its requests) */
	CHECK_EQ(ibckpt_modify_qp(q, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET },
				  IBV_QP_STATE), 0);
	ibckpt_destroy_qp(q);
	q = rts_qp(cq);
	w1->rkey = 0x80002b0;				/* its failed bind undone */
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);		/* unsignaled: no completion */
	CHECK(!to_imw(w1)->unsure);
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);	/* wr_id 1 */
	w2->rkey = ibv_inc_rkey(w2->rkey);
	app_post(q, IBV_WR_SEND, 1, IBV_SEND_SIGNALED);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .status = IBV_WC_REM_ACCESS_ERR,
					   .qp_num = 0x66 };
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w1)->unsure && to_imw(w2)->unsure);
	/* (3): a LOCAL_INV posted meanwhile is flushed: known unknown at once */
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK(!to_imw(w1)->unsure);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 6, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w2->rkey }), 0);
	CHECK(!to_imw(w2)->unsure);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .status = IBV_WC_WR_FLUSH_ERR,
					   .qp_num = 0x66 };	/* the SEND's flush */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w1)->unsure && to_imw(w2)->unsure);
	CHECK_EQ(to_iqp(q)->mw_marked, to_iqp(q)->sq.tail);	/* not looked at again */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .status = IBV_WC_WR_FLUSH_ERR,
					   .qp_num = 0x66 };	/* the bind's */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 6, .status = IBV_WC_WR_FLUSH_ERR,
					   .qp_num = 0x66 };	/* the LOCAL_INV's */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(ibckpt_wrlog_live(&to_iqp(q)->sq), 0);
	CHECK(to_imw(w1)->unsure && to_imw(w2)->unsure);
	/* ... until each is bound or invalidated again */
	CHECK_EQ(ibckpt_modify_qp(q, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET },
				  IBV_QP_STATE), 0);
	ibckpt_destroy_qp(q);
	q = rts_qp(cq);
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 7, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w2->rkey }), 0);
	CHECK(!to_imw(w1)->unsure && !to_imw(w2)->unsure);
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w1)), 0);
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w2)), 0);

	CHECK_EQ(ibckpt_dealloc_mw(w1), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w2), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A poller on another thread, between the vendor's free of a window and the
 * rest of ibckpt_dealloc_mw(): a peer's invalidation of its key, seen.
 */
static void poller_meets_freed_window(uint32_t key)
{
	struct ibv_wc wc = { .opcode = IBV_WC_RECV, .wc_flags = IBV_WC_WITH_INV,
			     .invalidated_rkey = key };

	ibckpt_spin_lock(&to_icq(app_cq_last)->lock);
	ibckpt_mw_wc(ctx, &wc);
	ibckpt_spin_unlock(&to_icq(app_cq_last)->lock);
	CHECK_EQ(wc.invalidated_rkey, key);		/* no window of ours now */
}

/*
 * A window leaves the tables before the vendor frees it (a poller that
 * found it there would read the freed vendor window: ASan's
 * heap-use-after-free); and comes back to them when the vendor keeps it.
 */
static void dealloc_races_a_poller(void)
{
	static char buf[64];
	struct ibv_mw *w;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	struct ibv_wc wc;

	app_init();
	cq = app_cq_last = app_cq(NULL, NULL);
	q = rts_qp(cq);
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.nids = 2;
	v.next_id = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	w = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w);
	CHECK_EQ(post1(q, bind_wr(w, mr, ibv_inc_rkey(w->rkey), buf)), 0);
	w->rkey = ibv_inc_rkey(w->rkey);

	/* the vendor keeps it: still ours, its keys translated */
	v.mw_busy = EBUSY;
	CHECK_EQ(ibckpt_dealloc_mw(w), EBUSY);
	peer_invalidates(0x80001a1, IBV_WC_WITH_INV);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK(to_imw(w)->bind.mr == NULL);
	CHECK_EQ(post1(q, bind_wr(w, mr, ibv_inc_rkey(w->rkey), buf)), 0);
	w->rkey = ibv_inc_rkey(w->rkey);

	v.mw_freed = poller_meets_freed_window;
	CHECK_EQ(ibckpt_dealloc_mw(w), 0);
	v.mw_freed = NULL;

	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_cq_last = NULL;
	app_fini();
}

/*
 * Windows released and re-created: a type 2 window keeps its key byte on
 * its new index and is bound again through its own QP with an internal
 * request (an application's completion met on the way is kept for it); a
 * type 1 window is bound again through a private QP, its key byte the
 * vendor's, its offset carried. Afterwards the application's binds,
 * invalidates and completions speak the keys it knows, and a peer's
 * window is reached by index.
 */
static void windows_come_back_after_a_release(void)
{
	uint32_t gen;
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_MW, .vdev = 0xe, .vid = 0x70001f0, .real = 0x7100230 },
	};
	static char buf[256];
	struct ibv_mw *w1, *w2, *w3;
	struct ibv_mw_bind b = { .wr_id = 3, .send_flags = IBV_SEND_SIGNALED };
	struct ibckpt_mw *m1, *m2;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = 0 };
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	struct ibv_wc wc;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	app_post_recv(q, 20);
	app_post_recv(q, 21);
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.ids[2] = 0x80002b0;
	v.ids[3] = 0x80003c0;
	v.nids = 4;
	v.next_id = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	w2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	w1 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_1);
	w3 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w1 && w2 && w3);
	m1 = to_imw(w1);
	m2 = to_imw(w2);
	CHECK_EQ(post1(q, bind_wr(w2, mr, 0x80001a1, buf)), 0);
	w2->rkey = 0x80001a1;
	b.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf + 64,
						 .length = 64,
						 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(ibckpt_mw_release_check(m2), 0);
	CHECK_EQ(ibckpt_mw_release_check(m1), 0);

	v.destroyed = 0;
	ibckpt_mw_release(m2);
	ibckpt_mw_release(m1);
	ibckpt_mw_release(to_imw(w3));
	CHECK_EQ(v.destroyed, 3);
	CHECK(m1->bind.mr == mr && m2->bind.mr == mr);	/* the binds stay in the shadows */

	ctx->ident = calloc(1, sizeof(*ctx->ident));
	CHECK(ctx->ident != NULL);
	ctx->ident->vdev = 0xd;
	v.ids[0] = 0x9000666;
	v.ids[1] = 0x9000555;
	v.ids[2] = 0x9000777;
	v.nids = 3;
	v.next_id = 0;
	CHECK_EQ(ibckpt_mw_recreate(m2), 0);
	CHECK_EQ(ibckpt_mw_recreate(m1), 0);
	CHECK_EQ(ibckpt_mw_recreate(to_imw(w3)), 0);
	CHECK_EQ(m2->key_off, 0);
	v.mw_binds = 0;
	CHECK_EQ(ibckpt_mw_bind_type1(ctx), 0);
	CHECK_EQ(v.mw_binds, 1);			/* w1 only: bound, type 1 */
	CHECK_EQ(m1->real->rkey, 0x9000556);
	CHECK_EQ(m1->key_off, (uint8_t)(0x56 - 0xb1));
	CHECK_EQ(w1->rkey, 0x80002b1);			/* the application's keys stay */
	CHECK_EQ(w2->rkey, 0x80001a1);

	/* type 2 through its QP; an application's completion on the way stays its own */
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 20, .opcode = IBV_WC_RECV, .qp_num = 0x66 };
	v.hold = true;					/* its completion at the next poll */
	v.hold_polls = 0;
	to_iqp(q)->rel.state = IBV_QPS_RTS;		/* as the release found it */
	CHECK_EQ(ibckpt_mw_rebind(m2), 0);
	v.hold = false;
	CHECK(q->state == IBV_QPS_RTS && to_iqp(q)->rel.at_rts);
	CHECK(v.send.bind_mw.mw == m2->real);
	CHECK_EQ(v.send.bind_mw.rkey, 0x90006a1);	/* the key byte peers know */
	CHECK(v.send.bind_mw.bind_info.mr == to_imr(mr)->real);
	CHECK_EQ(m2->real->rkey, 0x90006a1);
	CHECK_EQ(ibckpt_mw_rebind(to_imw(w3)), 0);	/* unbound: nothing to do */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 20);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 0);	/* the internal one is not the application's */
	to_iqp(q)->rel.at_rts = false;

	/* restarted: the application's keys are translated */
	ibckpt_ctx_set_remapped(ctx);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 5, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = 0x80001a1 }), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0x90006a1);
	CHECK(m2->bind.mr == NULL);
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf)), 0);
	CHECK_EQ(v.send.bind_mw.rkey, 0x90006a2);
	CHECK(v.send.bind_mw.mw == m2->real);
	w2->rkey = 0x80001a2;
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);	/* the vendor's next, seen as ours */
	CHECK_EQ(((struct fake_mw *)m1->real)->key, 0x9000557);
	CHECK_EQ(w1->rkey, 0x80002b2);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(v.mw_errs, 0);
	peer_invalidates(0x90006a2, IBV_WC_WITH_INV);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.invalidated_rkey, 0x80001a2);	/* the key the application knows */
	CHECK(m2->bind.mr == NULL);

	/* a key both an MR's whole and a window's by index: the MR's, as peers see it */
	CHECK_EQ(ibckpt_vidmap_insert(&ctx->mw_virt, 0x3, 0x3, m1, &gen), 0);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 8, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = mr->rkey }), 0);
	CHECK_EQ(v.send.invalidate_rkey, mr->rkey);
	CHECK_EQ(ibckpt_vidmap_remove(&ctx->mw_virt, 0x3, gen), 0);

	/* a peer's window, by its index, whatever key byte its binds gave it */
	CHECK_EQ(ibckpt_remap_set(job, 1), 0);
	to_iqp(q)->rel.peer_vdev = 0xe;
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 6, .opcode = IBV_WR_RDMA_WRITE,
						 .sg_list = &sge, .num_sge = 1,
						 .wr = { .rdma = { .remote_addr = 8,
								   .rkey = 0x70001f3 } } }), 0);
	CHECK_EQ(v.send.wr.rdma.rkey, 0x7100233);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 7, .opcode = IBV_WR_SEND_WITH_INV,
						 .sg_list = &sge, .num_sge = 1,
						 .invalidate_rkey = 0x70001f4 }), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0x7100234);

	ctx->remapped = false;
	ibckpt_remap_clear();
	CHECK_EQ(ibckpt_dealloc_mw(w1), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w2), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w3), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/* An RC QP of the application on cq connected to QP @dest of the device at LID 5, at RTS. */
static struct ibv_qp *connected_qp(struct ibv_cq *cq, uint32_t dest)
{
	struct ibv_qp *q = send_qp(cq, IBV_QPT_RC, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND };

	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = dest, .rq_psn = 0x200,
				  .ah_attr = { .dlid = 5, .port_num = 1 } };
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_AV), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 14 };
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), 0);
	return q;
}

/* The vendor's window behind a shadow, as the fake device keeps it. */
static struct fake_mw *dev_mw(struct ibv_mw *w)
{
	return (struct fake_mw *)to_imw(w)->real;
}

/*
 * A checkpoint of the process's objects, on the fake vendor whose device is
 * not closed: restart.c's release of the objects, their re-creation, REMAP
 * (the peer QPs 0x77 and 0x79 on device 0xe at LID 5 are 0x78 and 0x7a
 * now) and GO. @abort: the first REMAP is undone (as an ABORT does) and the
 * reacquire starts over. @ids: the vendor's QPNs and keys for the objects
 * in the order they are re-created.
 */
static void checkpoint_objects(const uint32_t *ids, int nids, bool abort)
{
	const struct ibckpt_ident job[] = {
		{ .kind = IBCKPT_ID_LID, .vdev = 0xe, .vid = 5, .real = 5 },
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xe, .vid = 0x77, .real = 0x78 },
		{ .kind = IBCKPT_ID_QPN, .vdev = 0xe, .vid = 0x79, .real = 0x7a },
	};
	int round;

	ibckpt_quiesced = true;
	CHECK_EQ(ibckpt_release_prepare(IBCKPT_RREL_PEERS_CHECKED, NULL, 0), 0);
	if (ibckpt_restart_msg()[0])
		fprintf(stderr, "  release: %s\n", ibckpt_restart_msg());
	v.mw_held = 0;
	ibckpt_ctx_release_objects(ctx, false);
	CHECK_EQ(v.mw_held, 0);		/* no MR nor QP went with a window on it */
	ibckpt_released = true;
	for (round = abort ? 0 : 1; round < 2; round++) {
		memcpy(v.ids, ids, (size_t)nids * sizeof(*ids));
		v.nids = nids;
		v.next_id = 0;
		CHECK_EQ(ibckpt_ctx_recreate_objects(ctx), 0);
		v.hold = true;			/* the rebinds complete at the next poll */
		v.hold_polls = 0;
		CHECK_EQ(ibckpt_remap(job, 3), 0);
		v.hold = false;
		if (!round) {			/* ABORT: released as before */
			v.mw_held = 0;
			ibckpt_ctx_release_objects(ctx, true);
			CHECK_EQ(v.mw_held, 0);
		}
	}
	CHECK_EQ(ibckpt_go(), 0);
	CHECK(!ibckpt_released);
	ibckpt_quiesced = false;
}

/*
 * Windows through restart.c's release, reacquire, REMAP and GO, twice, the
 * second time with the first REMAP aborted. The windows go before the MRs
 * they are bound to and the QPs that bound them; a type 1 window is bound
 * again at the re-creation (private QP), a type 2 window at REMAP through
 * its own QP; one whose QP failed after its bind is bound to it again and
 * the QP put back in the error state. Afterwards: a LOCAL_INV of that one
 * through another QP (which 6.1's rxe would oops on for a free window), a
 * type 1 bind posted with IBV_WR_BIND_MW, a type 2 one, a peer's
 * invalidation, a window made after the restart.
 */
static void windows_through_a_restart(void)
{
	/* in creation order: windows (first: their MR and QPs come after), QPs, MR */
	static const uint32_t ids1[] = { 0x90002e0, 0x90001d0, 0x90003f0, 0x86, 0x87, 0x400,
					 0x88 };
	static const uint32_t ids2[] = { 0xa0002e0, 0xa0001d0, 0xa0003f0, 0x96, 0x97, 0x500,
					 0xa0004f0, 0x98 };
	static struct ibv_device dev = { .name = "fake0" };
	static char buf[256];
	struct ibv_mw_bind b = { .wr_id = 3, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *w1, *w2, *w3, *w4;
	struct ibv_send_wr wr;
	struct ibv_qp *q, *q2;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_wc wc;

	app_init();
	ctx->vctx.context.device = &dev;
	ctx->ident = calloc(1, sizeof(*ctx->ident));
	CHECK(ctx->ident != NULL);
	ctx->ident->vdev = 0xd;
	ctx_list(true);
	cq = app_cq(NULL, NULL);
	v.ids[0] = 0x80002b0;
	v.ids[1] = 0x80001a0;
	v.ids[2] = 0x80003c0;
	v.ids[3] = 0x66;
	v.ids[4] = 0x67;
	v.ids[5] = 0x300;
	v.nids = 6;
	w1 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_1);
	w2 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	w3 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	q = connected_qp(cq, 0x77);
	q2 = connected_qp(cq, 0x79);
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(mr && w1 && w2 && w3);
	b.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf, .length = 64,
						 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	CHECK_EQ(ibckpt_bind_mw(q, w1, &b), 0);			/* 0x80002b1 */
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf + 64)), 0);
	w2->rkey = ibv_inc_rkey(w2->rkey);				/* 0x80001a1 */
	CHECK_EQ(post1(q2, bind_wr(w3, mr, ibv_inc_rkey(w3->rkey), buf + 128)), 0);
	w3->rkey = ibv_inc_rkey(w3->rkey);				/* 0x80003c1 */
	to_iqp(q2)->real->state = IBV_QPS_ERR;			/* its peer went */
	CHECK_EQ(v.mw_errs, 0);

	checkpoint_objects(ids1, 7, false);
	CHECK(dev_mw(w1)->bound && dev_mw(w1)->mr == to_imr(mr)->real);
	CHECK(dev_mw(w2)->bound && dev_mw(w2)->qp == to_iqp(q)->real);
	CHECK(dev_mw(w3)->bound && dev_mw(w3)->qp == to_iqp(q2)->real);
	CHECK_EQ(dev_mw(w2)->key, 0x90001a1);		/* the key byte peers know */
	CHECK_EQ(dev_mw(w3)->key, 0x90003c1);
	CHECK_EQ(dev_mw(w1)->key, 0x90002e1);		/* the vendor's next byte */
	CHECK_EQ(to_iqp(q)->real->state, IBV_QPS_RTS);
	CHECK_EQ(to_iqp(q2)->real->state, IBV_QPS_ERR);	/* failed again */
	CHECK_EQ(v.mw_errs, 0);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 0);	/* the rebinds were not the application's */

	/* the window of the failed QP is valid: invalidated through the other one */
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 4, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w3->rkey }), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0x90003c1);
	CHECK_EQ(v.mw_oops, 0);
	CHECK(!dev_mw(w3)->bound && !to_imw(w3)->bind.mr);
	/* a type 1 bind posted, its key byte the application's plus the offset */
	wr = bind_wr(w1, mr, 0x80002c5, buf);
	CHECK_EQ(post1(q, wr), 0);
	CHECK_EQ(v.send.bind_mw.rkey, 0x90002f5);
	CHECK_EQ(dev_mw(w1)->key, 0x90002f5);
	w1->rkey = 0x80002c5;
	/* type 2: invalidated, bound again; a peer's invalidation seen */
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 5, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w2->rkey }), 0);
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf + 64)), 0);
	w2->rkey = ibv_inc_rkey(w2->rkey);				/* 0x80001a2 */
	CHECK_EQ(dev_mw(w2)->key, 0x90001a2);
	peer_invalidates(0x90001a2, IBV_WC_WITH_INV);
	CHECK_EQ(ibckpt_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.invalidated_rkey, 0x80001a2);
	CHECK(!to_imw(w2)->bind.mr && !dev_mw(w2)->bound);
	CHECK_EQ(post1(q, bind_wr(w2, mr, ibv_inc_rkey(w2->rkey), buf + 64)), 0);
	w2->rkey = ibv_inc_rkey(w2->rkey);				/* 0x80001a3 */
	/* a window made now keeps the vendor's key */
	v.ids[0] = 0x90005a0;
	v.nids = 1;
	v.next_id = 0;
	w4 = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(w4 != NULL);
	CHECK_EQ(w4->rkey, 0x90005a0);
	CHECK_EQ(post1(q, bind_wr(w4, mr, ibv_inc_rkey(w4->rkey), buf + 192)), 0);
	w4->rkey = ibv_inc_rkey(w4->rkey);
	CHECK_EQ(v.mw_errs, 0);

	/* a second checkpoint, its first REMAP aborted: the same keys on new indexes */
	all_sent(q);
	checkpoint_objects(ids2, 8, true);
	CHECK_EQ(v.mw_errs, 0);
	CHECK_EQ(dev_mw(w1)->key >> 8, 0xa0002);
	CHECK(dev_mw(w1)->bound);
	CHECK(dev_mw(w2)->bound && dev_mw(w2)->qp == to_iqp(q)->real);
	CHECK_EQ(dev_mw(w2)->key, 0xa0001a3);
	CHECK(!dev_mw(w3)->bound);
	CHECK(dev_mw(w4)->bound && dev_mw(w4)->qp == to_iqp(q)->real);
	CHECK_EQ(dev_mw(w4)->key, 0xa0004a1);
	CHECK_EQ(w1->rkey, 0x80002c5);			/* the application's keys stay */
	CHECK_EQ(w4->rkey, 0x90005a1);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 6, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w4->rkey }), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0xa0004a1);
	CHECK_EQ(v.mw_oops, 0);
	/* w3, free at the release: its vendor's byte kept (0xf0), bound by its key */
	CHECK_EQ(post1(q, bind_wr(w3, mr, ibv_inc_rkey(w3->rkey), buf + 128)), 0);
	CHECK_EQ(dev_mw(w3)->key, 0xa0003f1);
	w3->rkey = ibv_inc_rkey(w3->rkey);
	CHECK_EQ(post1(q, (struct ibv_send_wr){ .wr_id = 7, .opcode = IBV_WR_LOCAL_INV,
						 .invalidate_rkey = w3->rkey }), 0);
	CHECK_EQ(v.send.invalidate_rkey, 0xa0003f1);
	CHECK_EQ(v.mw_errs, 0);

	ctx->remapped = false;
	ibckpt_remap_clear();
	CHECK_EQ(ibckpt_dealloc_mw(w1), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w2), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w3), 0);
	CHECK_EQ(ibckpt_dealloc_mw(w4), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_qp(q2), 0);
	app_destroy_cq(cq);
	ctx_list(false);
	app_fini();
}

/*
 * Type 1 windows of two PDs, made in turn: bound again through one private
 * QP per PD (they were opened and closed at each change of PD).
 */
static void type1_windows_rebound_per_pd(void)
{
	static char buf[64];
	struct ibv_mw_bind b = { .wr_id = 3 };
	struct ibv_mw *w[3];
	struct ibv_pd *pd2;
	struct ibv_mr *mr, *mr2;
	struct ibv_cq *cq;
	struct ibv_qp *q, *q2;
	struct ibv_qp_init_attr_ex qa;
	int i;

	static const uint32_t ids[] = { 0x66, 0x67, 0x300, 0x301, 0x8000100, 0x8000200,
					0x8000300 };

	app_init();
	ctx->ident = calloc(1, sizeof(*ctx->ident));
	CHECK(ctx->ident != NULL);
	ctx->ident->vdev = 0xd;
	memcpy(v.ids, ids, sizeof(ids));
	v.nids = 7;
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	pd2 = ibckpt_alloc_pd(&ctx->vctx.context);
	CHECK(pd2 != NULL);
	qa = (struct ibv_qp_init_attr_ex){
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 4, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd2 };
	q2 = ibckpt_create_qp_ex(&ctx->vctx.context, &qa);
	CHECK(q2 != NULL);
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_MW_BIND);
	mr2 = ibckpt_reg_mr(pd2, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_MW_BIND);
	for (i = 0; i < 3; i++) {
		w[i] = ibckpt_alloc_mw(i == 1 ? pd2 : &pd.ibv_pd, IBV_MW_TYPE_1);
		CHECK(w[i] != NULL);
		b.bind_info = (struct ibv_mw_bind_info){ .mr = i == 1 ? mr2 : mr,
							 .addr = (uintptr_t)buf, .length = 8 };
		CHECK_EQ(ibckpt_bind_mw(i == 1 ? q2 : q, w[i], &b), 0);
	}
	v.ids[0] = 0x9000100;
	v.ids[1] = 0x9000200;
	v.ids[2] = 0x9000300;
	v.ids[3] = 0x68;
	v.ids[4] = 0x69;
	v.nids = 5;
	v.next_id = 0;
	for (i = 0; i < 3; i++) {
		ibckpt_mw_release(to_imw(w[i]));
		CHECK_EQ(ibckpt_mw_recreate(to_imw(w[i])), 0);
	}
	v.qps_made = 0;
	CHECK_EQ(ibckpt_mw_bind_type1(ctx), 0);
	CHECK_EQ(v.qps_made, 2);
	for (i = 0; i < 3; i++)
		CHECK(dev_mw(w[i])->bound);
	CHECK(dev_mw(w[1])->mr == to_imr(mr2)->real);

	for (i = 0; i < 3; i++)
		CHECK_EQ(ibckpt_dealloc_mw(w[i]), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr2)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_qp(q2), 0);
	CHECK_EQ(ibckpt_dealloc_pd(pd2), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * An MR deregistered under a bound window (a vendor that lets it; rxe
 * does not): the window's state is the vendor's, its bind names nothing:
 * unknown until bound or invalidated again, never followed.
 */
static void mr_gone_under_a_window(void)
{
	static char buf[64];
	struct ibv_mw *w;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = rts_qp(cq);
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_MW_BIND);
	w = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w);
	CHECK_EQ(post1(q, bind_wr(w, mr, ibv_inc_rkey(w->rkey), buf)), 0);
	w->rkey = ibv_inc_rkey(w->rkey);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK(to_imw(w)->bind.mr == NULL && to_imw(w)->qp == NULL);
	CHECK(to_imw(w)->unsure);
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w)), EOPNOTSUPP);
	CHECK_EQ(ibckpt_dealloc_mw(w), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

/*
 * A peer's invalidation seen through an extended CQ (ibv_start_poll(),
 * ibv_wc_read_invalidated_rkey()) after a restart: the window is unbound,
 * and the key read is the one the application knows.
 */
static void invalidation_through_an_extended_cq(void)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_IMM |
							 IBV_WC_EX_WITH_QP_NUM };
	struct ibv_poll_cq_attr pa = { 0 };
	static char buf[64];
	struct ibv_cq_ex *cqx;
	struct ibv_mw *w;
	struct ibv_mr *mr;
	struct ibv_qp *q;

	app_init();
	cqx = ibckpt_create_cq_ex(&ctx->vctx.context, &ca);
	CHECK(cqx != NULL);
	q = rts_qp(ibv_cq_ex_to_cq(cqx));
	v.ids[0] = 0x300;
	v.ids[1] = 0x80001a0;
	v.nids = 2;
	v.next_id = 0;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_MW_BIND);
	w = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w);
	/* released and re-created on another index, the same key byte (type 2) */
	ibckpt_mw_release(to_imw(w));
	v.ids[0] = 0x90005a0;
	v.nids = 1;
	v.next_id = 0;
	CHECK_EQ(ibckpt_mw_recreate(to_imw(w)), 0);
	ibckpt_ctx_set_remapped(ctx);
	CHECK_EQ(post1(q, bind_wr(w, mr, ibv_inc_rkey(w->rkey), buf)), 0);
	w->rkey = ibv_inc_rkey(w->rkey);
	CHECK_EQ(dev_mw(w)->key, 0x90005a1);
	peer_invalidates(0x90005a1, IBV_WC_WITH_INV);
	CHECK_EQ(ibv_start_poll(cqx, &pa), 0);
	CHECK_EQ(cqx->wr_id, 9);
	CHECK(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_INV);
	CHECK_EQ(ibv_wc_read_invalidated_rkey(cqx), 0x80001a1);
	CHECK_EQ(ibv_next_poll(cqx), ENOENT);
	ibv_end_poll(cqx);
	CHECK(to_imw(w)->bind.mr == NULL);

	ctx->remapped = false;
	CHECK_EQ(ibckpt_dealloc_mw(w), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK_EQ(ibckpt_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	app_fini();
}

/* A type 2 window whose QP is gone cannot be bound again: the release refuses it. */
static void window_of_a_destroyed_qp_is_refused(void)
{
	static char buf[64];
	struct ibv_mw *w;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, 0);
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_MW_BIND);
	w = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w);
	CHECK_EQ(post1(q, bind_wr(w, mr, ibv_inc_rkey(w->rkey), buf)), 0);
	CHECK(to_imw(w)->qp == to_iqp(q));
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	CHECK(to_imw(w)->qp == NULL);
	ibckpt_restart_err_clear();
	CHECK_EQ(ibckpt_mw_release_check(to_imw(w)), EOPNOTSUPP);
	CHECK(strstr(ibckpt_restart_msg(), "gone") != NULL);
	ibckpt_restart_err_clear();
	CHECK_EQ(ibckpt_dealloc_mw(w), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	app_destroy_cq(cq);
	app_fini();
}


/* A bind through the ibv_wr_* API after a restart: translated, and the window's state moves. */
static void wr_api_binds_a_window_after_a_restart(void)
{
	static char buf[64];
	struct ibv_mw_bind_info bi = { .addr = (uintptr_t)buf, .length = 64,
				       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp_ex *x;
	struct ibv_mw *w;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *q;

	app_init();
	cq = app_cq(NULL, NULL);
	q = send_qp(cq, IBV_QPT_RC, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV);
	x = &to_iqp(q)->vqp.qp_ex;
	mr = ibckpt_reg_mr(&pd.ibv_pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_MW_BIND);
	v.ids[0] = 0x80001a0;
	v.nids = 1;
	v.next_id = 0;
	w = ibckpt_alloc_mw(&pd.ibv_pd, IBV_MW_TYPE_2);
	CHECK(mr && w);
	/* as a reacquire leaves it: another index, the same key byte */
	to_imw(w)->real->rkey = 0x90005a0;
	((struct fake_mw *)to_imw(w)->real)->key = 0x90005a0;
	to_imw(w)->ridx = 0x90005;
	ibckpt_ctx_set_remapped(ctx);
	bi.mr = mr;
	ibv_wr_start(x);
	x->wr_id = 30;
	ibv_wr_bind_mw(x, w, 0x80001a1, &bi);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK(v.send.bind_mw.mw == to_imw(w)->real);
	CHECK_EQ(v.send.bind_mw.rkey, 0x90005a1);
	CHECK(v.send.bind_mw.bind_info.mr == to_imr(mr)->real);
	CHECK(to_imw(w)->bind.mr == mr);
	CHECK_EQ(to_imw(w)->vrkey, 0x80001a1);
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 0x80001a1);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK(to_imw(w)->bind.mr == NULL);
	ctx->remapped = false;
	CHECK_EQ(ibckpt_dealloc_mw(w), 0);
	CHECK_EQ(ibckpt_dereg_mr(&to_imr(mr)->vmr), 0);
	CHECK_EQ(ibckpt_destroy_qp(q), 0);
	app_destroy_cq(cq);
	app_fini();
}

int main(void)
{
	vendor_init();
	RUN(objects_are_stacked);
	RUN(completions_find_their_srq);
	RUN(sends_log_their_srqn);
	RUN(snapshot_names_xrc);
	RUN(atomic_writes_reach_the_vendor_api);
	RUN(wr_complete_posts_all_or_none);
	RUN(wr_batch_setters);
	RUN(addresses_are_translated);
	RUN(tso_headers_are_logged);
	RUN(refusals);
	RUN(channel_recreated_at_same_address);
	RUN(destroyed_cq_leaves_no_event);
	RUN(destroy_cq_waits_for_the_ack);
	RUN(destroy_waits_for_async_acks);
	RUN(destroyed_object_leaves_no_async_event);
	RUN(new_objects_avoid_virtual_ids);
	RUN(cq_recreated_at_its_size);
	RUN(full_async_pipe_loses_nothing);
	RUN(ids_skip_live_ones);
	RUN(posts_leave_the_requests_alone);
	RUN(failed_completion_finds_its_queue);
	RUN(stats_only_through_the_counting_ops);
	RUN(tso_on_a_connected_qp);
	RUN(drain_takes_everything);
	RUN(drain_after_a_spill);
	RUN(poll_after_a_spill);
	RUN(stale_qpn_on_another_cq);
	RUN(release_check_after_the_drain);
	RUN(release_beside_a_parked_lock_holder);
	RUN(reacquire_map_names_terminated);
	RUN(release_waits_for_unsent_requests);
	RUN(restart_channel_survives_a_dead_cli);
	RUN(srq_limit_fires_once_across_a_restart);
	RUN(invalidated_keys_are_translated);
	RUN(remapped_posts_translate_keys);
	RUN(restart_keeps_counting_ops);
	RUN(release_refuses_unpublished_addresses);
	RUN(release_needs_the_psns);
	RUN(real_timer_held_while_released);
	RUN(multicast_groups_come_back);
	RUN(ud_source_is_translated);
	RUN(remapped_poll_needs_no_context_lock);
	RUN(verbs_wait_at_a_closed_queue);
	RUN(queues_closed_and_opened_whole);
	RUN(drained_cq_marked_on_its_flag);
	RUN(close_beats_a_busy_poller);
	RUN(device_caps_match_what_is_stacked);
	RUN(fork_child_gets_its_own);
	RUN(fork_while_forwarding);
	RUN(internal_request_kept_from_the_application);
	RUN(internal_request_late);
	RUN(internal_request_flushed);
	RUN(fence_behind_reads_and_atomics);
	RUN(fence_that_does_not_complete);
	RUN(fence_failing);
	RUN(fence_after_a_restart);
	RUN(no_fence_behind_a_refusal);
	RUN(poll_refills_behind_an_internal_completion);
	RUN(internal_request_orphaned);
	RUN(earlier_fences_waited_together);
	RUN(fence_mr_kept_while_outstanding);
	RUN(fence_chosen_from_what_the_peer_grants);
	RUN(fence_failure_is_said);
	RUN(atomic_fence_keeps_the_job_frozen);
	RUN(posted_fences_waited_behind_a_refusal);
	RUN(lasting_refusals_are_not_ebusy);
	RUN(no_fence_asked);
	RUN(windows_follow_binds_and_invalidations);
	RUN(failed_bind_leaves_the_window_key);
	RUN(failed_send_after_a_window_is_gone);
	RUN(failed_completion_with_a_shared_wr_id);
	RUN(dealloc_races_a_poller);
	RUN(windows_come_back_after_a_release);
	RUN(window_of_a_destroyed_qp_is_refused);
	RUN(windows_through_a_restart);
	RUN(type1_windows_rebound_per_pd);
	RUN(mr_gone_under_a_window);
	RUN(invalidation_through_an_extended_cq);
	RUN(wr_api_binds_a_window_after_a_restart);
	return unit_done();
}
