// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fake vendor the stack test stacks the provider on: a verbs_context
 * whose ops are the fakes below, and the libibverbs calls that would need a
 * real device, defined here (the executable's definitions win). What the
 * vendor was given and does next is v (fake_vendor.h).
 */
#include "stack_test.h"

/* calloc() failing on purpose: the next calloc_fails calls (linked with --wrap=calloc). */
int calloc_fails;
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

struct verbs_context vendor;
struct ibv_pd vendor_pd = { .context = &vendor.context, .handle = 1 };

static struct ibv_cq_ex *fake_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a);

struct fake_vendor v;

uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* What the vendor held back comes, behind what its CQ holds. */
void vendor_delivers(void)
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

void *fake_alloc(size_t size)
{
	void *p = calloc(1, size);

	CHECK(p != NULL);
	return p;
}

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
struct fake_mw *fake_mw_of_key(uint32_t key)
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
enum ibv_wc_status fake_mw_invalidate(uint32_t key)
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

void vendor_init(void)
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
void vendor_fires(struct ibv_cq *shadow)
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
int vendor_async_wr = -1;

void vendor_raises(enum ibv_event_type type, uint64_t element)
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
