// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs resources of one side: a PD, one MR over the whole region, a send CQ
 * (always polled), a receive CQ (on a completion channel for the server),
 * an SRQ shared by every RC QP, the RC QPs and one UD QP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "traffic.h"

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l;
	struct ibv_context *c = NULL;
	int i, n;

	l = ibv_get_device_list(&n);
	if (!l)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	return c;
}

static int qpn_map_init(struct tctx *t)
{
	uint32_t cap = 16;

	while (cap < 4u * (uint32_t)t->o.nqp)
		cap <<= 1;
	t->qpn_map_mask = cap - 1;
	t->qpn_to_idx_keys = calloc(cap, sizeof(uint32_t));
	t->qpn_to_idx_vals = calloc(cap, sizeof(uint16_t));
	if (!t->qpn_to_idx_keys || !t->qpn_to_idx_vals)
		return -1;
	/* QPN 0 is never an RC QP's number, so 0 marks a free slot */
	return 0;
}

static void qpn_map_add(struct tctx *t, uint32_t qpn, int idx)
{
	uint32_t h = (qpn * 2654435761u) & t->qpn_map_mask;

	while (t->qpn_to_idx_keys[h])
		h = (h + 1) & t->qpn_map_mask;
	t->qpn_to_idx_keys[h] = qpn;
	t->qpn_to_idx_vals[h] = (uint16_t)idx;
}

int tqp_index(const struct tctx *t, uint32_t qpn)
{
	uint32_t h = (qpn * 2654435761u) & t->qpn_map_mask;

	while (t->qpn_to_idx_keys[h]) {
		if (t->qpn_to_idx_keys[h] == qpn)
			return t->qpn_to_idx_vals[h];
		h = (h + 1) & t->qpn_map_mask;
	}
	return -1;
}

int tpost_srq_recv(struct tctx *t, uint64_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)tl_srq_slot(t, i),
		.length = (uint32_t)t->o.msg_size,
		.lkey = t->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i % (uint64_t)t->srq_depth, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_srq_recv(t->srq, &wr, &bad);
}

int tpost_ud_recv(struct tctx *t, uint64_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)tl_ud_recv_slot(t, i),
		.length = (uint32_t)t->o.msg_size + 40,
		.lkey = t->mr->lkey,
	};
	/* bit 63 tells UD receives from SRQ receives on the shared CQ */
	struct ibv_recv_wr wr = { .wr_id = (1ull << 63) | (i % (uint64_t)t->ud_depth),
				  .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(t->udqp, &wr, &bad);
}

static int create_qps(struct tctx *t)
{
	struct ibv_qp_init_attr ia;
	int i;

	for (i = 0; i < t->o.nqp; i++) {
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = t->scq;
		ia.recv_cq = t->rcq;
		ia.srq = t->srq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = (uint32_t)t->sq_depth;
		ia.cap.max_send_sge = 1;
		ia.cap.max_inline_data = (uint32_t)t->max_inline;
		t->qps[i].qp = ibv_create_qp(t->pd, &ia);
		if (!t->qps[i].qp) {
			terr(t, "ibv_create_qp(RC %d): %s", i, strerror(errno));
			return -1;
		}
		t->qps[i].psn = (uint32_t)(lrand48() & 0xffffff);
		t->qps[i].sq = calloc((size_t)t->sq_depth, sizeof(struct tsq_ent));
		if (!t->qps[i].sq)
			return -1;
		qpn_map_add(t, t->qps[i].qp->qp_num, i);
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = t->scq;
	ia.recv_cq = t->rcq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = (uint32_t)t->ud_depth;
	ia.cap.max_recv_wr = (uint32_t)t->ud_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	t->udqp = ibv_create_qp(t->pd, &ia);
	if (!t->udqp) {
		terr(t, "ibv_create_qp(UD): %s", strerror(errno));
		return -1;
	}
	t->udsq = calloc((size_t)t->ud_depth, sizeof(struct tsq_ent));
	return t->udsq ? 0 : -1;
}

static int ud_to_rts(struct tctx *t)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = (uint8_t)t->o.ib_port,
		.qkey = 0x11111111,
	};

	if (ibv_modify_qp(t->udqp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(t->udqp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(t->udqp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int tres_open(struct tctx *t)
{
	struct ibv_srq_init_attr sa;
	struct ibv_port_attr pa;
	uint64_t i;
	int depth;

	t->ctx = open_dev(t->o.dev);
	if (!t->ctx) {
		terr(t, "cannot open RDMA device '%s'", t->o.dev);
		return -1;
	}
	if (ibv_query_port(t->ctx, (uint8_t)t->o.ib_port, &pa) ||
	    ibv_query_gid(t->ctx, (uint8_t)t->o.ib_port, t->o.gid_index, &t->gid)) {
		terr(t, "cannot query port %d / gid %d of %s", t->o.ib_port, t->o.gid_index,
		     t->o.dev);
		return -1;
	}
	t->lid = pa.lid;
	/* send queue: window data messages + reads/atomics/acks in flight */
	t->sq_depth = 4 * t->o.window;
	t->srq_depth = 2 * t->o.nqp * t->o.window + 64;
	t->ud_depth = 2 * t->o.window;
	t->max_inline = 64;
	t->qps = calloc((size_t)t->o.nqp, sizeof(*t->qps));
	if (!t->qps || qpn_map_init(t))
		return -1;
	t->buf_len = tl_size(t);
	t->buf = mmap(NULL, t->buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->buf == MAP_FAILED) {
		t->buf = NULL;
		return -1;
	}
	for (i = 0; i < (uint64_t)t->o.nqp; i++)
		tread_pattern(t->buf + tl_read_off(t, (int)i), (int)i, (size_t)t->o.msg_size);

	t->pd = ibv_alloc_pd(t->ctx);
	if (!t->pd)
		return terr(t, "ibv_alloc_pd: %s", strerror(errno)), -1;
	t->mr = ibv_reg_mr(t->pd, t->buf, t->buf_len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (!t->mr)
		return terr(t, "ibv_reg_mr: %s", strerror(errno)), -1;
	if (t->o.server) {
		t->chan = ibv_create_comp_channel(t->ctx);
		if (!t->chan)
			return terr(t, "ibv_create_comp_channel: %s", strerror(errno)), -1;
	}
	depth = t->o.nqp * t->sq_depth + t->ud_depth + 16;
	t->scq = ibv_create_cq(t->ctx, depth, NULL, NULL, 0);
	t->rcq = ibv_create_cq(t->ctx, t->srq_depth + t->ud_depth + 16, NULL, t->chan, 0);
	if (!t->scq || !t->rcq)
		return terr(t, "ibv_create_cq: %s", strerror(errno)), -1;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = (uint32_t)t->srq_depth;
	sa.attr.max_sge = 1;
	t->srq = ibv_create_srq(t->pd, &sa);
	if (!t->srq)
		return terr(t, "ibv_create_srq: %s", strerror(errno)), -1;
	if (create_qps(t) || ud_to_rts(t))
		return terr(t, "UD/RC QP setup failed: %s", strerror(errno)), -1;
	for (i = 0; i < (uint64_t)t->srq_depth; i++)
		if (tpost_srq_recv(t, i))
			return terr(t, "ibv_post_srq_recv: %s", strerror(errno)), -1;
	for (i = 0; i < (uint64_t)t->ud_depth; i++)
		if (tpost_ud_recv(t, i))
			return terr(t, "ibv_post_recv(UD): %s", strerror(errno)), -1;
	t->ud_recv_posted = (uint64_t)t->ud_depth;
	if (t->chan && ibv_req_notify_cq(t->rcq, 0))
		return terr(t, "ibv_req_notify_cq: %s", strerror(errno)), -1;
	return 0;
}

int tres_connect(struct tctx *t, const struct tpeer_qp *peer)
{
	struct ibv_ah_attr ah = {
		.is_global = 1,
		.port_num = (uint8_t)t->o.ib_port,
		.dlid = (uint16_t)t->peer.lid,
		.grh = { .hop_limit = 1, .sgid_index = (uint8_t)t->o.gid_index },
	};
	int i;

	memcpy(ah.grh.dgid.raw, t->peer.gid, 16);
	for (i = 0; i < t->o.nqp; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .port_num = (uint8_t)t->o.ib_port,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_REMOTE_ATOMIC,
		};
		struct ibv_qp *qp = t->qps[i].qp;

		t->qps[i].peer = peer[i];
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
			return terr(t, "QP %d to INIT: %s", i, strerror(errno)), -1;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = peer[i].qpn;
		a.rq_psn = peer[i].psn;
		a.max_dest_rd_atomic = 8;
		a.min_rnr_timer = 1;
		a.ah_attr = ah;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
			return terr(t, "QP %d to RTR: %s", i, strerror(errno)), -1;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		/*
		 * 537 ms per try, 7 retries: soft-RoCE under emulation on a
		 * busy host can go half a second without answering, which
		 * 67 ms (timeout 14) turned into a retry-exceeded error.
		 */
		a.timeout = 17;
		a.retry_cnt = 7;
		a.rnr_retry = 7;	/* infinite: a frozen receiver is not an error */
		a.sq_psn = t->qps[i].psn;
		a.max_rd_atomic = 8;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			return terr(t, "QP %d to RTS: %s", i, strerror(errno)), -1;
	}
	t->ah = ibv_create_ah(t->pd, &ah);
	if (!t->ah)
		return terr(t, "ibv_create_ah: %s", strerror(errno)), -1;
	return 0;
}

void tres_close(struct tctx *t)
{
	int i;

	if (t->ah)
		ibv_destroy_ah(t->ah);
	for (i = 0; t->qps && i < t->o.nqp; i++) {
		if (t->qps[i].qp)
			ibv_destroy_qp(t->qps[i].qp);
		free(t->qps[i].sq);
	}
	if (t->udqp)
		ibv_destroy_qp(t->udqp);
	if (t->srq)
		ibv_destroy_srq(t->srq);
	if (t->scq)
		ibv_destroy_cq(t->scq);
	if (t->rcq)
		ibv_destroy_cq(t->rcq);
	if (t->chan)
		ibv_destroy_comp_channel(t->chan);
	if (t->mr)
		ibv_dereg_mr(t->mr);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->ctx)
		ibv_close_device(t->ctx);
	if (t->buf)
		munmap(t->buf, t->buf_len);
	free(t->qps);
	free(t->udsq);
	free(t->qpn_to_idx_keys);
	free(t->qpn_to_idx_vals);
}
