// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * forkcheck DEV [-s] [-t SECONDS] [-p FILE]: fork() of a verbs process
 * (provider/fork.c).
 *
 * The parent opens DEV: a PD, an MR, a CQ and an RC QP connected to itself
 * that a busy thread drives without pause (post a receive and a send, poll
 * both completions), and a second CQ on a completion channel with its own
 * looped-back QP. With the busy thread inside verbs, it forks. The child
 * moves to a process group of its own (so that a freeze can take it
 * alone), then:
 *  - with -s (stacked on ibckpt): every verb on an inherited object fails
 *    at once with EACCES (a poll, a post, a notification request), and
 *    ibv_close_device() of the inherited context succeeds;
 *  - opens DEV again, creates the same on a completion channel of its own
 *    and must get its completion event within 10 s (before the fix the
 *    forwarding state was the parent's: it could wait for ever);
 *  - writes its pid to FILE (-p), then repeats the round (arm, send to
 *    itself, wait for the event through the channel, poll) for SECONDS.
 * The parent meanwhile repeats the same rounds on its own channel, and its
 * busy thread keeps completing, until the child exits; it prints a progress
 * line ("forkcheck: parent: N rounds, ...") every second. A test freezes the
 * child's group and the parent's meanwhile (tests/vm/cases/39-provider-fork.sh).
 *
 * Prints "forkcheck: PASS" and exits 0, or "forkcheck: FAIL: ..." and exits
 * 1; 2 if the set-up failed. Nothing waits without a deadline: SIGALRM
 * ends a process that hangs all the same.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "../lib/verbs_util.h"
#define PROG "forkcheck"
#include "../lib/expect.h"

#define MSG		64
#define ROUND_MS	60000	/* one round, a freeze of the process included */

struct loop {			/* an RC QP sending to itself, and its CQ */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;	/* NULL: the CQ is polled only */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char buf[2 * MSG];
};

static const char *who = "parent";
static atomic_long busy_rounds;
static atomic_int busy_stop, busy_err;

static void on_alarm(int sig)
{
	static const char msg[] = "forkcheck: FAIL: timed out (a verb or an event hung)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void loop_init(struct loop *l, struct ibv_context *ctx, bool channel)
{
	union ibv_gid gid;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	const char *step;

	memset(l, 0, sizeof(*l));
	l->ctx = ctx;
	l->pd = ibv_alloc_pd(ctx);
	if (!l->pd)
		DIE("%s: alloc_pd", who);
	l->mr = ibv_reg_mr(l->pd, l->buf, sizeof(l->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!l->mr)
		DIE("%s: reg_mr", who);
	if (channel) {
		l->ch = ibv_create_comp_channel(ctx);
		if (!l->ch)
			DIE("%s: create_comp_channel", who);
	}
	l->cq = ibv_create_cq(ctx, 8, l, l->ch, 0);
	if (!l->cq)
		DIE("%s: create_cq", who);
	qa.send_cq = qa.recv_cq = l->cq;
	l->qp = ibv_create_qp(l->pd, &qa);
	if (!l->qp)
		DIE("%s: create_qp", who);
	if (ibv_query_gid(ctx, 1, 0, &gid))
		DIE("%s: query_gid", who);
	step = rc_loopback_connect(l->qp, &gid, 0);
	if (step)
		DIE("%s: QP to %s", who, step);
}

/* Post one receive and one send to itself. Return: 0 or the verb's error. */
static int loop_post(struct loop *l)
{
	struct ibv_sge rs = { (uintptr_t)l->buf, MSG, l->mr->lkey };
	struct ibv_sge ss = { (uintptr_t)(l->buf + MSG), MSG, l->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	int ret = ibv_post_recv(l->qp, &rwr, &rbad);

	return ret ? ret : ibv_post_send(l->qp, &swr, &sbad);
}

/* Poll until @n successful completions, within ROUND_MS. Return: NULL or what failed. */
static const char *loop_reap(struct loop *l, int n)
{
	double end = now_ms() + ROUND_MS;
	struct ibv_wc wc;
	int r;

	while (n > 0) {
		r = ibv_poll_cq(l->cq, 1, &wc);
		if (r < 0)
			return "poll_cq failed";
		if (r && wc.status != IBV_WC_SUCCESS)
			return ibv_wc_status_str(wc.status);
		n -= r;
		if (!r && now_ms() > end)
			return "completions missing";
	}
	return NULL;
}

/* One round through the completion channel. Return: NULL or what failed. */
static const char *channel_round(struct loop *l, int wait_ms)
{
	struct pollfd p = { .fd = l->ch->fd, .events = POLLIN };
	double end = now_ms() + wait_ms;
	struct ibv_cq *cq;
	void *cq_ctx;
	int r;

	if (ibv_req_notify_cq(l->cq, 0))
		return "req_notify_cq failed";
	if (loop_post(l))
		return "post failed";
	do {
		r = poll(&p, 1, 100);
		if (r < 0 && errno != EINTR)
			return "poll() of the channel failed";
	} while (r <= 0 && now_ms() < end);
	if (r <= 0)
		return "no completion event through the channel";
	if (ibv_get_cq_event(l->ch, &cq, &cq_ctx))
		return "get_cq_event failed";
	if (cq != l->cq || cq_ctx != l)
		return "the event names another CQ";
	ibv_ack_cq_events(cq, 1);
	return loop_reap(l, 2);
}

static void *busy(void *arg)
{
	struct loop *l = arg;
	const char *err;

	while (!atomic_load(&busy_stop)) {
		err = loop_post(l) ? "post failed" : loop_reap(l, 2);
		if (err) {
			fprintf(stderr, "forkcheck: parent's busy thread: %s\n", err);
			atomic_store(&busy_err, 1);
			return NULL;
		}
		atomic_fetch_add(&busy_rounds, 1);
	}
	return NULL;
}

/* The child's part; its exit status is the verdict. */
static void child(const char *dev, bool stacked, int seconds, const char *pidfile,
		  struct loop *inherited, struct loop *inherited_ch)
{
	struct ibv_context *ctx;
	struct ibv_wc wc;
	struct loop l;
	const char *err;
	double end;
	long rounds = 0;

	who = "child";
	setpgid(0, 0);		/* a freeze of the parent's group must not take it */
	alarm((unsigned int)seconds + 120);
	if (stacked) {
		/* the parent's objects: refused at once, nothing of the parent's touched */
		errno = 0;
		EXPECT(ibv_poll_cq(inherited->cq, 1, &wc) < 0 && errno == EACCES,
		       "child: poll_cq on the parent's CQ: not refused (errno %d)", errno);
		EXPECT(ibv_req_notify_cq(inherited_ch->cq, 0) == EACCES,
		       "child: req_notify_cq on the parent's CQ: not refused");
		EXPECT(loop_post(inherited) == EACCES, "child: post on the parent's QP: not refused");
		EXPECT(ibv_close_device(inherited->ctx) == 0,
		       "child: close of the inherited context failed");
	}
	ctx = open_named_device(dev);
	if (!ctx)
		DIE("child: open %s", dev);
	loop_init(&l, ctx, true);
	err = channel_round(&l, 10000);
	if (err) {
		printf("forkcheck: FAIL: child: first round on its own context: %s\n", err);
		exit(1);
	}
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
			DIE("child: %s", pidfile);
	}
	end = now_ms() + seconds * 1e3;
	do {
		err = channel_round(&l, ROUND_MS);
		if (err) {
			printf("forkcheck: FAIL: child: round %ld: %s\n", rounds + 1, err);
			exit(1);
		}
		rounds++;
	} while (now_ms() < end);
	printf("forkcheck: child: %ld rounds through its own channel%s\n", rounds,
	       stacked ? ", the parent's objects refused" : "");
	exit(failures ? 1 : 0);
}

int main(int argc, char **argv)
{
	int opt, seconds = 0, status, i;
	struct loop busy_l, ch_l;
	const char *pidfile = NULL, *err;
	struct ibv_context *ctx;
	bool stacked = false;
	long before, rounds = 0;
	pthread_t t;
	pid_t pid;
	double end, next_report;

	while ((opt = getopt(argc, argv, "st:p:")) != -1) {
		switch (opt) {
		case 's':
			stacked = true;
			break;
		case 't':
			seconds = atoi(optarg);
			break;
		case 'p':
			pidfile = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)seconds + 180);
	ctx = open_named_device(argv[optind]);
	if (!ctx)
		DIE("open %s", argv[optind]);
	loop_init(&busy_l, ctx, false);
	loop_init(&ch_l, ctx, true);
	err = channel_round(&ch_l, 10000);
	if (err) {
		printf("forkcheck: FAIL: parent before the fork: %s\n", err);
		return 1;
	}
	if (pthread_create(&t, NULL, busy, &busy_l))
		DIE("pthread_create");
	for (i = 0; i < 10000 && atomic_load(&busy_rounds) < 100; i++)
		usleep(1000);
	fflush(NULL);
	pid = fork();		/* the busy thread inside a verb, most likely */
	if (pid < 0)
		DIE("fork");
	if (!pid)
		child(argv[optind], stacked, seconds, pidfile, &busy_l, &ch_l);
	setpgid(pid, pid);	/* as the child does: whichever runs first */
	before = atomic_load(&busy_rounds);

	/*
	 * The parent goes on: its channel and its busy thread, until the child
	 * is done; a progress line a second shows it going on while the child
	 * is frozen.
	 */
	end = now_ms() + (seconds + 150) * 1e3;
	next_report = now_ms() + 1000;
	for (;;) {
		if (now_ms() >= next_report) {
			printf("forkcheck: parent: %ld rounds, busy thread %ld rounds\n", rounds,
			       atomic_load(&busy_rounds));
			next_report = now_ms() + 1000;
		}
		err = channel_round(&ch_l, ROUND_MS);
		if (err) {
			printf("forkcheck: FAIL: parent after the fork: round %ld: %s\n", rounds + 1,
			       err);
			kill(pid, SIGKILL);
			return 1;
		}
		rounds++;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now_ms() > end) {
			printf("forkcheck: FAIL: the child did not finish\n");
			kill(pid, SIGKILL);
			return 1;
		}
		usleep(10000);
	}
	atomic_store(&busy_stop, 1);
	pthread_join(t, NULL);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status 0x%x)",
	       status);
	EXPECT(!atomic_load(&busy_err), "the parent's busy thread failed");
	EXPECT(atomic_load(&busy_rounds) > before, "the parent's busy thread stopped at the fork");
	printf("forkcheck: parent: %ld rounds through its channel, busy thread %ld rounds "
	       "(%ld after the fork)\n", rounds, atomic_load(&busy_rounds),
	       atomic_load(&busy_rounds) - before);
	if (failures) {
		printf("forkcheck: FAIL: %d checks failed (see above)\n", failures);
		return 1;
	}
	printf("forkcheck: PASS\n");
	return 0;

usage:
	fprintf(stderr, "usage: forkcheck DEV [-s] [-t SECONDS] [-p PIDFILE]\n");
	return 2;
}
