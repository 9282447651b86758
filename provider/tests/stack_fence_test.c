// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack test cases on the provider's internal requests and the fences a
 * release posts behind READs and atomics.
 */
#include "stack_test.h"

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
void internal_request_kept_from_the_application(void)
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
void internal_request_late(void)
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
void internal_request_flushed(void)
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

/*
 * restart.rst, "Exactly once": a release forgot an unsignaled RDMA READ
 * or atomic whose response was still to come. The release's checks now
 * post a fence behind them, only behind them: a zero-length READ with the
 * newest READ's key and address, or behind atomics alone a FETCH_AND_ADD
 * of 0 at the newest atomic's target into the provider's own MR, gone
 * once the fence completed. The fence's PSN is counted, its completion
 * retires what was before it and never reaches the application.
 */
void fence_behind_reads_and_atomics(void)
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
void fence_that_does_not_complete(void)
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
void fence_failing(void)
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
void fence_after_a_restart(void)
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
void no_fence_behind_a_refusal(void)
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
void poll_refills_behind_an_internal_completion(void)
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
void internal_request_orphaned(void)
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
void earlier_fences_waited_together(void)
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
void fence_mr_kept_while_outstanding(void)
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
void fence_chosen_from_what_the_peer_grants(void)
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
void fence_failure_is_said(void)
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
void atomic_fence_keeps_the_job_frozen(void)
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
void posted_fences_waited_behind_a_refusal(void)
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
void lasting_refusals_are_not_ebusy(void)
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
void no_fence_asked(void)
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
