// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mwcheck DEV_A DEV_B TRIGGER: memory windows of both types, bound,
 * invalidated and used by their peer, come back as they were after a
 * release and reacquire, twice (Documentation/restart.rst, "Memory
 * windows").
 *
 * Context A (DEV_A) owns a buffer and its windows; context B (DEV_B) is
 * the peer, which reaches them with RDMA WRITE and READ through the rkeys
 * A told it. Four RC pairs connect them: a1-b1 to a4-b4 (a type 2 window
 * answers only the QP that bound it). Before TRIGGER:
 *
 *   w1  type 1, bound with ibv_bind_mw() to A's bytes 0-63
 *   w2  type 2, bound through a1 (IBV_WR_BIND_MW, ibv_inc_rkey()) to 64-127
 *   w3  type 2, bound through a1 to 128-191, then invalidated (LOCAL_INV)
 *   w4  type 2, bound through a2 to 192-255, then invalidated by B's
 *       SEND_WITH_INV (its receive completion left unpolled: the release's
 *       drain must learn it)
 *   w5  type 1, never bound
 *   w6  type 2, bound through a3 to 384-447; then the pair a3-b3 is moved
 *       to the error state (the window stays bound to the failed QP)
 *   w7  type 2, bound through a1 to 448-511; a second bind of it through
 *       a4 fails (it is bound: memory management operation error, a4 in
 *       the error state, b4 moved there too); invalidated through a1 and
 *       bound again with the key the application kept (the vendor's window
 *       must be named by that key)
 *
 * and B writes through w1, w2 and w7 once. The program says "ready" and
 * waits for TRIGGER (the test checkpoints the process meanwhile), then: A's
 * receive completion says w4's rkey was invalidated; B writes through w1
 * and reads through w2 with the rkeys it knew, landing at the right bytes;
 * w6 is invalidated through a1 (valid, bound to the failed a3); w5 is bound
 * with a posted IBV_WR_BIND_MW (type 1, a key byte of A's choice) and a new
 * type 2 window w8 is made and bound through a1, B writing through both.
 * It says "ready2" and waits for TRIGGER.2 (a second checkpoint), then: B
 * writes through w5, w7 and w8 with the keys it knew; A binds w3 again
 * (ibv_inc_rkey() of the key it knows) and w1 elsewhere (ibv_bind_mw(), a
 * new key), B writes through both; B invalidates w2 with SEND_WITH_INV (A
 * sees w2's key); then B's write through w2 on a1-b1 and through w4 on
 * a2-b2 fail (remote access error), as they would have without a
 * checkpoint; every window is deallocated.
 * Exit 0 if all held, 1 if not, 2 if the set-up failed.
 */
#include <time.h>
#include <unistd.h>
#include "../lib/verbs_util.h"
#define PROG "mwcheck"
#include "../lib/expect.h"

#define ACC_REMOTE	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

#define PAIRS	4

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[PAIRS];
	struct ibv_mr *mr;
	union ibv_gid gid;
};

static char abuf[4096], bbuf[4096];

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))
		;
}

/* The next completion on @cq, within 10 s; 0 or -1 (none). */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, r;

	for (i = 0; i < 10000; i++) {
		r = ibv_poll_cq(cq, 1, wc);
		if (r < 0)
			DIE("poll_cq");
		if (r)
			return 0;
		sleep_ms(1);
	}
	return -1;
}

/* A signaled request on @qp, and its completion's status (-1: none came). */
static int post_wait(struct side *s, struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_wc *wc)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad))
		DIE("post_send opcode %d", wr->opcode);
	if (wait_wc(s->cq, wc))
		return -1;
	return wc->status;
}

static void side_open(struct side *s, const char *dev)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	s->ctx = open_named_device(dev);
	if (!s->ctx)
		DIE("open %s", dev);
	s->pd = ibv_alloc_pd(s->ctx);
	int i;

	s->cq = s->pd ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	if (!s->cq || ibv_query_gid(s->ctx, 1, 0, &s->gid))
		DIE("set-up on %s", dev);
	qa.send_cq = qa.recv_cq = s->cq;
	for (i = 0; i < PAIRS; i++) {
		s->qp[i] = ibv_create_qp(s->pd, &qa);
		if (!s->qp[i])
			DIE("create_qp on %s", dev);
	}
}

static void qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		DIE("QP %u to the error state", qp->qp_num);
}

/* Wait for @path to exist. */
static void wait_for(const char *path)
{
	while (access(path, F_OK))
		sleep_ms(50);
}

/* An RDMA WRITE of @len bytes from B's @boff to @rkey at @addr, on pair @p. */
#define A(off) ((uint64_t)(uintptr_t)abuf + (off))

static int b_write(struct side *b, int p, uint32_t rkey, uint64_t addr, int boff, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)bbuf + boff, len, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .wr = { .rdma = { .remote_addr = addr, .rkey = rkey } } };
	struct ibv_wc wc;

	return post_wait(b, b->qp[p], &wr, &wc);
}

static int b_read(struct side *b, int p, uint32_t rkey, uint64_t addr, int boff, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)bbuf + boff, len, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 101, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .wr = { .rdma = { .remote_addr = addr, .rkey = rkey } } };
	struct ibv_wc wc;

	return post_wait(b, b->qp[p], &wr, &wc);
}

/* B sends with invalidate of @rkey on pair @p into A's receive; A's completion not polled. */
static void b_send_inv(struct side *b, int p, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)bbuf + 4000, 8, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 102, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = rkey };
	struct ibv_wc wc;

	EXPECT(post_wait(b, b->qp[p], &wr, &wc) == IBV_WC_SUCCESS,
	       "send with invalidate of %#x: %s", rkey, ibv_wc_status_str(wc.status));
}

static void a_post_recv(struct side *a, int p, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)abuf + 4000 + 16 * p, 16, a->mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(a->qp[p], &rw, &bad))
		DIE("post_recv");
}

/* A's receive completion: a send that invalidated @rkey. */
static void a_expect_inv(struct side *a, uint32_t rkey, const char *what)
{
	struct ibv_wc wc;

	if (wait_wc(a->cq, &wc)) {
		EXPECT(0, "%s: no receive completion", what);
		return;
	}
	EXPECT(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
	       "%s: receive completion %s, opcode %d", what, ibv_wc_status_str(wc.status),
	       wc.opcode);
	/* Debian's rxe sets the kernel's IB_WC_WITH_INVALIDATE, 1 << 2, not IBV_WC_WITH_INV */
	EXPECT(wc.wc_flags & (IBV_WC_WITH_INV | 1 << 2), "%s: not marked invalidating (flags %#x)",
	       what, wc.wc_flags);
	EXPECT(wc.invalidated_rkey == rkey, "%s: invalidated rkey %#x, not %#x", what,
	       wc.invalidated_rkey, rkey);
}

/* A type 2 bind through @qp of @mw, key ibv_inc_rkey() of the one it has. */
static int bind2(struct side *a, struct ibv_qp *qp, struct ibv_mw *mw, uint64_t off)
{
	struct ibv_send_wr wr = {
		.wr_id = 200, .opcode = IBV_WR_BIND_MW,
		.bind_mw = { .mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
			     .bind_info = { .mr = a->mr, .addr = (uintptr_t)abuf + off,
					    .length = 64, .mw_access_flags = ACC_REMOTE } },
	};
	struct ibv_wc wc;
	int st = post_wait(a, qp, &wr, &wc);

	if (st == IBV_WC_SUCCESS)
		mw->rkey = wr.bind_mw.rkey;	/* the application keeps its window's key */
	return st;
}

/* A posted type 1 bind (IBV_WR_BIND_MW), key byte @key of the application's choice. */
static int bind1_posted(struct side *a, struct ibv_mw *mw, uint32_t key, uint64_t off)
{
	struct ibv_send_wr wr = {
		.wr_id = 203, .opcode = IBV_WR_BIND_MW,
		.bind_mw = { .mw = mw, .rkey = key,
			     .bind_info = { .mr = a->mr, .addr = (uintptr_t)abuf + off,
					    .length = 64, .mw_access_flags = ACC_REMOTE } },
	};
	struct ibv_wc wc;
	int st = post_wait(a, a->qp[0], &wr, &wc);

	if (st == IBV_WC_SUCCESS)
		mw->rkey = key;
	return st;
}

static int local_inv(struct side *a, struct ibv_qp *qp, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 201, .opcode = IBV_WR_LOCAL_INV,
				  .invalidate_rkey = rkey };
	struct ibv_wc wc;

	return post_wait(a, qp, &wr, &wc);
}

static int bind1(struct side *a, struct ibv_mw *mw, uint64_t off)
{
	struct ibv_mw_bind b = {
		.wr_id = 202, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = a->mr, .addr = (uintptr_t)abuf + off, .length = 64,
			       .mw_access_flags = ACC_REMOTE },
	};
	struct ibv_wc wc;

	if (ibv_bind_mw(a->qp[0], mw, &b))
		DIE("ibv_bind_mw");
	if (wait_wc(a->cq, &wc))
		return -1;
	return wc.status;
}

/* B writes @text (16 bytes) through @rkey to A's @off on pair @p: it lands there. */
static void b_writes(struct side *b, int p, uint32_t rkey, uint64_t off, const char *text,
		     const char *what)
{
	int st;

	memcpy(bbuf, text, 16);
	st = b_write(b, p, rkey, A(off), 0, 16);
	EXPECT(st == IBV_WC_SUCCESS, "write through %s's %#x: %s", what, rkey,
	       ibv_wc_status_str(st));
	EXPECT(!memcmp(abuf + off, text, 16), "%s's write landed elsewhere", what);
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	struct ibv_mw *w1, *w2, *w3, *w4, *w5, *w6, *w7, *w8;
	uint32_t k1, k2, k4, k5, k7;
	struct ibv_send_wr bwr;
	struct ibv_wc wc;
	char trigger2[4096];
	const char *step;
	int i, st;

	if (argc != 4 || strlen(argv[3]) > sizeof(trigger2) - 3) {
		fprintf(stderr, "usage: mwcheck DEV_A DEV_B TRIGGER\n");
		return 2;
	}
	snprintf(trigger2, sizeof(trigger2), "%s.2", argv[3]);
	side_open(&a, argv[1]);
	side_open(&b, argv[2]);
	a.mr = ibv_reg_mr(a.pd, abuf, sizeof(abuf), IBV_ACCESS_LOCAL_WRITE | ACC_REMOTE |
			  IBV_ACCESS_MW_BIND);
	b.mr = ibv_reg_mr(b.pd, bbuf, sizeof(bbuf), IBV_ACCESS_LOCAL_WRITE);
	if (!a.mr || !b.mr)
		DIE("reg_mr");
	for (i = 0; i < PAIRS; i++) {
		step = rc_connect(a.qp[i], b.qp[i]->qp_num, &b.gid, ACC_REMOTE);
		if (!step)
			step = rc_connect(b.qp[i], a.qp[i]->qp_num, &a.gid, 0);
		if (step)
			DIE("pair %d to %s", i, step);
	}
	w1 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_1);
	w2 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	w3 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	w4 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	w5 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_1);
	w6 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	w7 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	if (!w1 || !w2 || !w3 || !w4 || !w5 || !w6 || !w7)
		DIE("alloc_mw");
	if (bind1(&a, w1, 0) || bind2(&a, a.qp[0], w2, 64) || bind2(&a, a.qp[0], w3, 128) ||
	    bind2(&a, a.qp[1], w4, 192) || bind2(&a, a.qp[2], w6, 384) ||
	    bind2(&a, a.qp[0], w7, 448))
		DIE("binds");
	/* a3 fails after binding w6 (its peer with it: both in the error state) */
	qp_to_err(a.qp[2]);
	qp_to_err(b.qp[2]);
	/* a bind of w7, bound, through a4 fails; a4 is in the error state then */
	k7 = w7->rkey;
	bwr = (struct ibv_send_wr){
		.wr_id = 204, .opcode = IBV_WR_BIND_MW,
		.bind_mw = { .mw = w7, .rkey = ibv_inc_rkey(k7),
			     .bind_info = { .mr = a.mr, .addr = (uintptr_t)abuf + 448,
					    .length = 64, .mw_access_flags = ACC_REMOTE } } };
	st = post_wait(&a, a.qp[3], &bwr, &wc);
	EXPECT(st == IBV_WC_MW_BIND_ERR, "a bind of bound w7: %s", ibv_wc_status_str(st));
	qp_to_err(b.qp[3]);
	/* ... its key is the one the application kept: invalidated, bound again */
	st = local_inv(&a, a.qp[0], w7->rkey);
	EXPECT(st == IBV_WC_SUCCESS, "invalidating w7 after a failed bind: %s",
	       ibv_wc_status_str(st));
	st = bind2(&a, a.qp[0], w7, 448);
	EXPECT(st == IBV_WC_SUCCESS, "binding w7 again after a failed bind: %s",
	       ibv_wc_status_str(st));
	k7 = w7->rkey;
	if (failures)
		return 1;
	if (local_inv(&a, a.qp[0], w3->rkey))
		DIE("local invalidate");
	a_post_recv(&a, 1, 301);
	b_send_inv(&b, 1, w4->rkey);	/* A's completion waits in its CQ */
	memset(bbuf, 'x', 64);
	if (b_write(&b, 0, w1->rkey, A(0), 0, 16) || b_write(&b, 0, w2->rkey, A(64), 0, 16) ||
	    b_write(&b, 0, k7, A(448), 0, 16))
		DIE("writes before the trigger");
	EXPECT(!memcmp(abuf, "xxxxxxxxxxxxxxxx", 16) && !memcmp(abuf + 64, bbuf, 16),
	       "writes before the trigger did not land");
	k1 = w1->rkey;
	k2 = w2->rkey;
	k4 = w4->rkey;
	k5 = w5->rkey;
	printf("ready w1 %#x w2 %#x w3 %#x w4 %#x w5 %#x w6 %#x w7 %#x\n", k1, k2, w3->rkey, k4,
	       k5, w6->rkey, k7);
	fflush(stdout);
	wait_for(argv[3]);

	a_expect_inv(&a, k4, "w4, invalidated before the trigger");
	/* the peer's old keys land where they did */
	memcpy(bbuf, "through window 1", 16);
	st = b_write(&b, 0, k1, A(8), 0, 16);
	EXPECT(st == IBV_WC_SUCCESS, "write through w1's %#x: %s", k1, ibv_wc_status_str(st));
	EXPECT(!memcmp(abuf + 8, "through window 1", 16), "w1's write landed elsewhere");
	memcpy(abuf + 100, "read through w2", 16);
	st = b_read(&b, 0, k2, A(100), 100, 16);
	EXPECT(st == IBV_WC_SUCCESS, "read through w2's %#x: %s", k2, ibv_wc_status_str(st));
	EXPECT(!memcmp(bbuf + 100, "read through w2", 16), "w2's read came from elsewhere");
	EXPECT(w1->rkey == k1 && w2->rkey == k2 && w4->rkey == k4 && w5->rkey == k5,
	       "the application's keys changed: %#x %#x %#x %#x", w1->rkey, w2->rkey, w4->rkey,
	       w5->rkey);
	/* w6 is bound to the failed a3: invalidated through a1 (free, 6.1's rxe would oops) */
	st = local_inv(&a, a.qp[0], w6->rkey);
	EXPECT(st == IBV_WC_SUCCESS, "invalidating w6 (bound through the failed a3): %s",
	       ibv_wc_status_str(st));
	/* a type 1 bind posted, its key byte A's; a window made now */
	st = bind1_posted(&a, w5, ibv_inc_rkey(k5), 512);
	EXPECT(st == IBV_WC_SUCCESS, "binding w5 with IBV_WR_BIND_MW: %s", ibv_wc_status_str(st));
	b_writes(&b, 0, w5->rkey, 520, "w5, type 1 post", "w5");
	w8 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	if (!w8)
		DIE("alloc_mw after the checkpoint");
	st = bind2(&a, a.qp[0], w8, 576);
	EXPECT(st == IBV_WC_SUCCESS, "binding the new w8: %s", ibv_wc_status_str(st));
	b_writes(&b, 0, w8->rkey, 580, "w8, new window!", "w8");
	if (failures)
		return 1;
	k5 = w5->rkey;
	printf("ready2 w5 %#x w8 %#x\n", k5, w8->rkey);
	fflush(stdout);
	wait_for(trigger2);

	/* a second checkpoint: the keys B knew, those of windows bound or made since too */
	b_writes(&b, 0, k5, 530, "w5 twice over!!", "w5");
	b_writes(&b, 0, k7, 456, "w7 twice over!!", "w7");
	b_writes(&b, 0, w8->rkey, 590, "w8 twice over!!", "w8");
	EXPECT(w5->rkey == k5 && w7->rkey == k7, "the application's keys changed: %#x %#x",
	       w5->rkey, w7->rkey);
	/* w3, invalidated, bound again with the next key; w1 elsewhere */
	st = bind2(&a, a.qp[0], w3, 256);
	EXPECT(st == IBV_WC_SUCCESS, "binding w3 again: %s", ibv_wc_status_str(st));
	memcpy(bbuf, "through window 3", 16);
	st = b_write(&b, 0, w3->rkey, A(260), 0, 16);
	EXPECT(st == IBV_WC_SUCCESS, "write through w3's new %#x: %s", w3->rkey,
	       ibv_wc_status_str(st));
	EXPECT(!memcmp(abuf + 260, "through window 3", 16), "w3's write landed elsewhere");
	st = bind1(&a, w1, 320);
	EXPECT(st == IBV_WC_SUCCESS, "binding w1 again: %s", ibv_wc_status_str(st));
	EXPECT(w1->rkey != k1 && (w1->rkey >> 8) == (k1 >> 8), "w1's key after a bind: %#x, was %#x",
	       w1->rkey, k1);
	memcpy(bbuf, "w1 bound again!!", 16);
	st = b_write(&b, 0, w1->rkey, A(330), 0, 16);
	EXPECT(st == IBV_WC_SUCCESS, "write through w1's new %#x: %s", w1->rkey,
	       ibv_wc_status_str(st));
	EXPECT(!memcmp(abuf + 330, "w1 bound again!!", 16), "w1's new write landed elsewhere");
	/* the peer invalidates w2: A sees the key it knows */
	a_post_recv(&a, 0, 302);
	b_send_inv(&b, 0, k2);
	a_expect_inv(&a, k2, "w2, invalidated after the trigger");
	/* invalidated windows refuse their peer, as before */
	st = b_write(&b, 0, k2, A(64), 0, 8);
	EXPECT(st == IBV_WC_REM_ACCESS_ERR, "write through invalidated w2: %s",
	       ibv_wc_status_str(st));
	st = b_write(&b, 1, k4, A(192), 0, 8);
	EXPECT(st == IBV_WC_REM_ACCESS_ERR, "write through invalidated w4: %s",
	       ibv_wc_status_str(st));
	if (failures)
		return 1;
	/* windows first: rxe's type 2 window holds the QP that bound it */
	if (ibv_dealloc_mw(w1) || ibv_dealloc_mw(w2) || ibv_dealloc_mw(w3) ||
	    ibv_dealloc_mw(w4) || ibv_dealloc_mw(w5) || ibv_dealloc_mw(w6) ||
	    ibv_dealloc_mw(w7) || ibv_dealloc_mw(w8))
		DIE("dealloc_mw");
	for (i = 0; i < PAIRS; i++)
		if (ibv_destroy_qp(a.qp[i]) || ibv_destroy_qp(b.qp[i]))
			DIE("destroy_qp");
	if (ibv_dereg_mr(a.mr) || ibv_dereg_mr(b.mr) || ibv_destroy_cq(a.cq) ||
	    ibv_destroy_cq(b.cq) || ibv_dealloc_pd(a.pd) || ibv_dealloc_pd(b.pd) ||
	    ibv_close_device(a.ctx) || ibv_close_device(b.ctx))
		DIE("tear-down");
	printf("mwcheck: windows of both types kept their binds, keys and invalidations\n");
	return 0;
}
