// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack test cases on QP posts: the ibv_wr_* API (atomic writes, batches,
 * setters), TSO requests and their log, and posts that leave the
 * application's requests alone.
 */
#include "stack_test.h"

/*
 * ibv_wr_atomic_write() has no ibv_post_send() form: a batch with atomic
 * writes reaches the vendor's own ibv_wr_* API like any other, in the
 * batch's order, all logged; a refused batch is forgotten again.
 */
void atomic_writes_reach_the_vendor_api(void)
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
void wr_complete_posts_all_or_none(void)
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
void wr_batch_setters(void)
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
 * TSO on a raw packet QP: the vendor gets the request as posted, the log and
 * the snapshot keep the header (the application may reuse it at once).
 */
void tso_headers_are_logged(void)
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

/*
 * Posts only read the application's requests (no UD AH or bind window
 * swapped in place and back, no list the log could not take whole cut in
 * place): lists in read-only memory
 * post, the vendor gets the real AH, and a list longer than the log is
 * posted up to where the log stopped, *bad naming the first one left.
 */
void posts_leave_the_requests_alone(void)
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
 * A TSO request on a connected QP (not a valid opcode there; a vendor may
 * still take it) is logged by the full path, its header with it, or
 * refused: the one-request path would log it without setting the header's
 * size, which shares the slot with the atomic operands, and a later move
 * of the log's records would copy that many bytes, out of bounds.
 */
void tso_on_a_connected_qp(void)
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
