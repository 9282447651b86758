// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * shadowcheck: the pointers libibverbs hands an application are the ones it
 * created, on every path that does not go through a provider op: completion
 * events (ibv_get_cq_event), async events (ibv_get_async_event), query_qp's
 * init attributes. Runs the same with and without ibckpt; through ibckpt it
 * proves that no vendor object leaks out.
 *
 * One RC QP on an SRQ, connected to itself over GID index 0; SRQ limit armed
 * so that two receives consumed raise IBV_EVENT_SRQ_LIMIT_REACHED.
 *
 *   shadowcheck DEVICE
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "../lib/verbs_util.h"
#define PROG "shadowcheck"
#include "../lib/expect.h"

static int wait_fd(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = NULL;
	int i, cq_tag, qp_tag, srq_tag;
	char buf[8][64];

	if (argc != 2) {
		fprintf(stderr, "usage: shadowcheck DEVICE\n");
		return 2;
	}
	ctx = open_named_device(argv[1]);
	if (!ctx)
		DIE("cannot open %s", argv[1]);

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 16, &cq_tag, ch, 0) : NULL;

	if (!mr || !cq)
		DIE("pd/mr/channel/cq");
	EXPECT(cq->context == ctx && cq->channel == ch && cq->cq_context == &cq_tag,
	       "CQ fields are not the application's");

	struct ibv_srq_init_attr sa = { .srq_context = &srq_tag,
					.attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);

	if (!srq)
		DIE("create_srq");
	EXPECT(srq->srq_context == &srq_tag && srq->pd == pd, "SRQ fields");

	struct ibv_qp_init_attr qa = {
		.qp_context = &qp_tag, .send_cq = cq, .recv_cq = cq, .srq = srq,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 }, .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (!qp)
		DIE("create_qp");
	EXPECT(qp->context == ctx && qp->pd == pd && qp->send_cq == cq && qp->srq == srq &&
	       qp->qp_context == &qp_tag, "QP fields are not the application's");

	/* Connect the QP to itself. */
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, 0, &gid))
		DIE("query_gid");
	const char *step = rc_loopback_connect(qp, &gid, IBV_ACCESS_LOCAL_WRITE);

	if (step)
		DIE("%s", step);
	struct ibv_qp_attr a;

	EXPECT(qp->state == IBV_QPS_RTS, "QP state %d after RTS", qp->state);

	struct ibv_qp_init_attr qi;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi))
		DIE("query_qp");
	EXPECT(a.qp_state == IBV_QPS_RTS && a.dest_qp_num == qp->qp_num, "query_qp attributes");
	EXPECT(qi.send_cq == cq && qi.recv_cq == cq && qi.srq == srq &&
	       qi.qp_context == &qp_tag, "query_qp returned objects that are not the application's");

	/* Four receives on the SRQ, limit 3: two messages raise the limit event. */
	for (i = 0; i < 4; i++) {
		struct ibv_sge s = { (uintptr_t)buf[i], 64, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &r, &bad))
			DIE("post_srq_recv");
	}
	struct ibv_srq_attr sl = { .srq_limit = 3 };

	if (ibv_modify_srq(srq, &sl, IBV_SRQ_LIMIT))
		DIE("modify_srq");
	if (ibv_req_notify_cq(cq, 0))
		DIE("req_notify_cq");
	for (i = 0; i < 2; i++) {
		struct ibv_sge s = { (uintptr_t)buf[4 + i], 16, mr->lkey };
		struct ibv_send_wr w = { .wr_id = 200 + i, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		snprintf(buf[4 + i], 16, "message %d", i);
		if (ibv_post_send(qp, &w, &bad))
			DIE("post_send");
	}

	/* The completion event names the application's CQ and context. */
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	EXPECT(wait_fd(ch->fd, 5000) == 1, "no completion event within 5 s");
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		DIE("get_cq_event");
	EXPECT(ev_cq == cq, "completion event for CQ %p, expected %p", (void *)ev_cq, (void *)cq);
	EXPECT(ev_ctx == &cq_tag, "completion event context %p, expected %p", ev_ctx,
	       (void *)&cq_tag);
	ibv_ack_cq_events(cq, 1);

	/* Two sends and two receives complete, in order per queue. */
	struct ibv_wc wc[8];
	int got = 0, sends = 0, recvs = 0;

	for (i = 0; i < 5000 && got < 4; i++) {
		int k, r = ibv_poll_cq(cq, 8, wc);

		EXPECT(r >= 0, "poll_cq %d", r);
		for (k = 0; k < r; k++) {
			EXPECT(wc[k].status == IBV_WC_SUCCESS, "completion status %s",
			       ibv_wc_status_str(wc[k].status));
			EXPECT(wc[k].qp_num == qp->qp_num, "completion for QPN %u", wc[k].qp_num);
			if (wc[k].opcode == IBV_WC_SEND)
				EXPECT(wc[k].wr_id == (uint64_t)(200 + sends++), "send wr_id");
			else
				EXPECT(wc[k].wr_id == (uint64_t)(100 + recvs++), "recv wr_id");
		}
		got += r > 0 ? r : 0;
		if (got < 4)
			wait_fd(-1, 1);
	}
	EXPECT(got == 4, "%d completions, expected 4", got);
	EXPECT(!strcmp(buf[0], "message 0") && !strcmp(buf[1], "message 1"), "payloads");

	/* The async event names the application's SRQ. */
	struct ibv_async_event ev;

	EXPECT(wait_fd(ctx->async_fd, 5000) == 1, "no async event within 5 s");
	if (ibv_get_async_event(ctx, &ev))
		DIE("get_async_event");
	EXPECT(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED, "async event %s",
	       ibv_event_type_str(ev.event_type));
	if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
		EXPECT(ev.element.srq == srq, "SRQ event for %p, expected %p",
		       (void *)ev.element.srq, (void *)srq);
	ibv_ack_async_event(&ev);

	if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq) || ibv_destroy_cq(cq) ||
	    ibv_destroy_comp_channel(ch) || ibv_dereg_mr(mr) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		DIE("teardown");
	if (failures)
		return 1;
	printf("shadowcheck: ok\n");
	return 0;
}
