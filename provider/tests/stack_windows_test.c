// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack test cases on memory windows: binds and invalidations followed, and
 * windows through a release and a restart.
 */
#include "stack_test.h"

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
void windows_follow_binds_and_invalidations(void)
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
void failed_bind_leaves_the_window_key(void)
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
void failed_send_after_a_window_is_gone(void)
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
void failed_completion_with_a_shared_wr_id(void)
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
void dealloc_races_a_poller(void)
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
void windows_come_back_after_a_release(void)
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
void windows_through_a_restart(void)
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
void type1_windows_rebound_per_pd(void)
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
void mr_gone_under_a_window(void)
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
void invalidation_through_an_extended_cq(void)
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
void window_of_a_destroyed_qp_is_refused(void)
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
void wr_api_binds_a_window_after_a_restart(void)
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
