// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack test cases on the objects: shadows over the vendor's, XRC domains,
 * SRQs and their snapshot records, what is refused, object ids, the
 * device's caps and the counting ops.
 */
#include "stack_test.h"

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

/* The vendor completes a receive of the XRC target QP, tagged as it was posted. */
static void vendor_completes(uint64_t tag, enum ibv_wc_status status)
{
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = tag, .status = status,
					   .opcode = IBV_WC_RECV, .qp_num = 0x77 };
}

/* The vendor only ever sees real objects; the application only shadows. */
void objects_are_stacked(void)
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
void completions_find_their_srq(void)
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
void sends_log_their_srqn(void)
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

/* A snapshot names the domain, the SRQ's XRC identity and each request's SRQN. */
void snapshot_names_xrc(void)
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

/* What is not stacked, or what the vendor refuses, fails as the vendor would. */
void refusals(void)
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

/*
 * Object ids wrap after 2^32 creations: an id a live object holds is
 * skipped, 0 never given, a freed one may be given again: no two live
 * objects share a snapshot handle or an XRC tag.
 */
void ids_skip_live_ones(void)
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
 * IBCKPT_STATS counts through the counting ops set over the verbs; the
 * verbs themselves count nothing (the data path pays no test for it).
 */
void stats_only_through_the_counting_ops(void)
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
	CHECK_EQ(ibckpt_datapaths[IBCKPT_DP_COUNTED].post_send(q, &swr, &sbad), 0);
	CHECK_EQ(ibckpt_datapaths[IBCKPT_DP_COUNTED].post_recv(q, &rwr, &rbad), 0);
	v.cqe[v.ncqe++] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_SEND, .qp_num = q->qp_num };
	CHECK_EQ(ibckpt_datapaths[IBCKPT_DP_COUNTED].poll_cq(cq, 4, wc), 1);
	CHECK_EQ(ibckpt_datapaths[IBCKPT_DP_COUNTED].poll_cq(cq, 4, wc), 0);
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
 * query_device_ex does not advertise what ibckpt refuses to stack (issue
 * #14: applications fall back instead of failing), and writes no byte past
 * an older application's shorter struct.
 */
void device_caps_match_what_is_stacked(void)
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
