// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack test cases on CQs: failed completions and the queue they belong
 * to, the drain and its spills, and the quiesce closing and opening the
 * queues around posts and polls.
 */
#include "stack_test.h"

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
void failed_completion_finds_its_queue(void)
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
 * A QP's completions retire only through its own CQs, which forget it at
 * its destroy: a destroyed QP's flush left in its CQ, its QPN handed out
 * again to a QP of another CQ, is left alone: the other CQ must not
 * remember the new QP, which its destroy would not make it forget (a use
 * after free).
 */
void stale_qpn_on_another_cq(void)
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
void drain_after_a_spill(void)
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
void poll_after_a_spill(void)
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
void drain_takes_everything(void)
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
void release_check_after_the_drain(void)
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
void release_beside_a_parked_lock_holder(void)
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
void remapped_poll_needs_no_context_lock(void)
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
void verbs_wait_at_a_closed_queue(void)
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
void close_beats_a_busy_poller(void)
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
void queues_closed_and_opened_whole(void)
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
void drained_cq_marked_on_its_flag(void)
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
