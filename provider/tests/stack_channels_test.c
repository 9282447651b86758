// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stack test cases on completion channels and async events as the
 * application sees them, and on fork().
 */
#include "stack_test.h"

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
void channel_recreated_at_same_address(void)
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
void destroyed_cq_leaves_no_event(void)
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
void destroy_cq_waits_for_the_ack(void)
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
void destroy_waits_for_async_acks(void)
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
void destroyed_object_leaves_no_async_event(void)
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
void full_async_pipe_loses_nothing(void)
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
	CHECK_EQ(ibckpt_ctx_ops.req_notify_cq(parent_cq, 0), EACCES);
	CHECK_EQ(ibckpt_destroy_cq(parent_cq), EACCES);
	errno = 0;
	CHECK(ibckpt_create_cq(&parent_ctx->vctx.context, 4, NULL, 0) == NULL);
	CHECK_EQ(errno, EACCES);
	CHECK(ibckpt_ctx_ops.alloc_pd(&parent_ctx->vctx.context) == NULL);
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
void fork_child_gets_its_own(void)
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
void fork_while_forwarding(void)
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
