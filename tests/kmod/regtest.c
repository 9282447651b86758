// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * regtest: exercise /dev/ibckpt registration as the provider's control
 * thread does, and its refusals.
 *
 *   regtest hold SECONDS       register, print "registered TGID", sleep
 *   regtest errors             check the refusals; exit 0 if all as expected
 *   regtest cycles N           open/register/close N times
 *   regtest forge DEV QPN [PD] answer each quiesce with a snapshot naming QP
 *                              QPN on DEV (in PD handle PD, default the one
 *                              it holds); print the module's verdicts
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/ibckpt.h>
#include <linux/ibckpt_snapshot.h>

static int reg(int fd, unsigned int abi, unsigned int flags)
{
	struct ibckpt_register r = { .abi_version = abi, .flags = flags };

	return ioctl(fd, IBCKPT_IOC_REGISTER, &r) ? -errno : 0;
}

static int expect(const char *what, int got, int want)
{
	if (got == want)
		return 0;
	fprintf(stderr, "regtest: %s: got %d (%s), expected %d\n", what, got,
		strerror(-got), want);
	return 1;
}

static int errors(void)
{
	struct ibckpt_event e;
	int fd, fd2, bad = 0, st;
	pid_t pid;

	fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return perror("open /dev/ibckpt"), 1;
	bad |= expect("read before register", read(fd, &e, sizeof(e)) < 0 ? -errno : 0,
		      -ENOTCONN);
	bad |= expect("wrong ABI", reg(fd, IBCKPT_ABI_VERSION + 1, 0), -EPROTO);
	bad |= expect("unknown flags", reg(fd, IBCKPT_ABI_VERSION, 1), -EINVAL);
	bad |= expect("bad ioctl", ioctl(fd, _IO(IBCKPT_IOC_MAGIC, 0x7f)) ? -errno : 0, -ENOTTY);
	pid = fork();
	if (pid == 0)	/* the fd belongs to the parent */
		_exit(reg(fd, IBCKPT_ABI_VERSION, 0) == -EPERM ? 0 : 1);
	waitpid(pid, &st, 0);
	bad |= expect("register from a forked child", WEXITSTATUS(st) ? -1 : 0, 0);
	bad |= expect("register", reg(fd, IBCKPT_ABI_VERSION, 0), 0);
	bad |= expect("register twice", reg(fd, IBCKPT_ABI_VERSION, 0), -EBUSY);
	/* one registration per process, not per file */
	fd2 = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	bad |= expect("register a second file", reg(fd2, IBCKPT_ABI_VERSION, 0), -EBUSY);
	close(fd2);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	bad |= expect("read with no event", read(fd, &e, sizeof(e)) < 0 ? -errno : 0, -EAGAIN);
	bad |= expect("short read", read(fd, &e, 4) < 0 ? -errno : 0, -EINVAL);
	close(fd);
	return bad;
}

/* Open /dev/ibckpt, register, say "registered PID"; the fd, or -1 (said). */
static int registered(int flags)
{
	int fd = open("/dev/ibckpt", O_RDWR | flags);

	if (fd < 0 || reg(fd, IBCKPT_ABI_VERSION, 0)) {
		perror("register");
		return -1;
	}
	printf("registered %d\n", (int)getpid());
	fflush(stdout);
	return fd;
}

/* The next quiesce request; false at a thaw, an abort or an error. */
static bool next_quiesce(int fd, struct ibckpt_event *e)
{
	while (read(fd, e, sizeof(*e)) == sizeof(*e)) {
		if (e->type == IBCKPT_EV_THAW || e->type == IBCKPT_EV_ABORT)
			return false;
		if (e->type == IBCKPT_EV_QUIESCE)
			return true;
	}
	return false;
}

static int snapshot(int fd, uint64_t session, uint32_t tgid)
{
	struct ibckpt_snap_hdr h = {
		.magic = IBCKPT_SNAP_MAGIC, .version = IBCKPT_SNAP_VERSION,
		.hdr_len = sizeof(h), .tgid = tgid, .session = session,
		.total_len = sizeof(h), .pinned_bytes = 1ull << 40,
	};
	struct ibckpt_snapshot_arg a = {
		.session = session, .addr = (uintptr_t)&h, .len = sizeof(h),
	};

	return ioctl(fd, IBCKPT_IOC_SNAPSHOT, &a) ? -errno : 0;
}

/*
 * Play a provider that answers each quiesce request with a forged identity
 * (another process id, 1 TiB pinned) and tries to give its snapshot again,
 * before and after the answer; prints
 * "snapshot refusals ok" or what went wrong, until a thaw.
 */
static int answer(void)
{
	struct ibckpt_quiesced q = { 0 };
	struct ibckpt_event e;
	int fd, bad = 0;

	fd = registered(O_CLOEXEC);
	if (fd < 0)
		return 1;
	while (next_quiesce(fd, &e)) {
		bad |= expect("snapshot of another session", snapshot(fd, e.session + 1, 1), -ESRCH);
		bad |= expect("snapshot", snapshot(fd, e.session, 1), 0);
		bad |= expect("snapshot again", snapshot(fd, e.session, 1), -EALREADY);
		q.session = e.session;
		bad |= expect("answer", ioctl(fd, IBCKPT_IOC_QUIESCED, &q) ? -errno : 0, 0);
		bad |= expect("snapshot after the answer", snapshot(fd, e.session, 1), -EALREADY);
		printf("snapshot refusals %s\n", bad ? "FAILED" : "ok");
		fflush(stdout);
	}
	return bad;
}

/* Append a record to the snapshot being built in @b (@off: its length). */
static void *add_rec(unsigned char *b, size_t *off, uint16_t type, uint32_t len)
{
	struct ibckpt_snap_rec *r = (void *)(b + *off);
	struct ibckpt_snap_hdr *h = (void *)b;

	r->type = type;
	r->len = len;
	*off += sizeof(*r) + ((len + 7) & ~7u);
	h->n_records++;
	return r + 1;
}

/*
 * A snapshot of one device DEV with a PD (handle 2) and an RC QP in state
 * RTS with number QPN in PD handle @pd: a provider's claim, for the module
 * to check against the RDMA core.
 */
static int forged_snapshot(int fd, uint64_t session, const char *dev, uint32_t qpn,
			   uint32_t pd)
{
	static unsigned char b[1024];
	struct ibckpt_snap_hdr *h = (void *)b;
	struct ibckpt_snap_device *d;
	struct ibckpt_snap_pd *p;
	struct ibckpt_snap_qp *q;
	struct ibckpt_snapshot_arg a;
	size_t off = sizeof(*h);

	memset(b, 0, sizeof(b));
	h->magic = IBCKPT_SNAP_MAGIC;
	h->version = IBCKPT_SNAP_VERSION;
	h->hdr_len = sizeof(*h);
	h->session = session;
	d = add_rec(b, &off, IBCKPT_SNAP_DEVICE, sizeof(*d));
	d->handle = 1;
	snprintf(d->name, sizeof(d->name), "%s", dev);
	p = add_rec(b, &off, IBCKPT_SNAP_PD, sizeof(*p));
	p->handle = 2;
	p->device = 1;
	q = add_rec(b, &off, IBCKPT_SNAP_QP, sizeof(*q));
	q->handle = 3;
	q->pd = pd;
	q->qp_type = 2;		/* IBV_QPT_RC */
	q->state = 3;		/* IBV_QPS_RTS */
	q->vqpn = qpn;
	q->qpn = qpn;
	h->total_len = off;
	a = (struct ibckpt_snapshot_arg){ .session = session, .addr = (uintptr_t)b, .len = off };
	return ioctl(fd, IBCKPT_IOC_SNAPSHOT, &a) ? -errno : 0;
}

/*
 * Play a provider that claims a QP it may not have: print "snapshot: VERDICT"
 * and "answer: VERDICT" (strerror, or "accepted") for each quiesce request,
 * until a thaw or an abort.
 */
static int forge(const char *dev, uint32_t qpn, uint32_t pd)
{
	struct ibckpt_quiesced q = { 0 };
	struct ibckpt_event e;
	int fd, r;

	fd = registered(O_CLOEXEC);
	if (fd < 0)
		return 1;
	while (next_quiesce(fd, &e)) {
		r = forged_snapshot(fd, e.session, dev, qpn, pd);
		printf("snapshot: %s\n", r ? strerror(-r) : "accepted");
		q.session = e.session;
		r = ioctl(fd, IBCKPT_IOC_QUIESCED, &q) ? -errno : 0;
		printf("answer: %s\n", r ? strerror(-r) : "accepted");
		fflush(stdout);
	}
	return 0;
}

static volatile unsigned long ticks;

static void *ticker(void *arg)
{
	FILE *f = arg;

	for (;;) {
		ticks++;
		rewind(f);
		fprintf(f, "%lu\n", ticks);
		fflush(f);
		usleep(1000);
	}
	return NULL;
}

/*
 * A registered process whose control thread (exempt from freezes) starts a
 * thread after it answered the quiesce request, once the job is frozen
 * (the module looks at a frozen job again): that thread counts in FILE
 * and must be parked.
 */
static int cloner(const char *file)
{
	struct ibckpt_quiesced q = { 0 };
	struct ibckpt_event e;
	pthread_t t;
	FILE *f;
	int fd;

	f = fopen(file, "w");
	fd = registered(O_CLOEXEC);
	if (!f || fd < 0)
		return 1;
	while (next_quiesce(fd, &e)) {
		q.session = e.session;
		if (ioctl(fd, IBCKPT_IOC_QUIESCED, &q))
			return perror("answer"), 1;
		usleep(500000);	/* frozen by now: nothing else of us runs */
		if (pthread_create(&t, NULL, ticker, f))
			return 1;
		printf("thread started\n");
		fflush(stdout);
	}
	pause();
	return 0;
}

/*
 * A provider that dies when asked to quiesce, while a child it forked still
 * holds its /dev/ibckpt file: the registration is
 * not released, no answer comes; the freeze must not wait for one.
 */
static int dies(void)
{
	struct ibckpt_event e;
	int fd;

	fd = registered(0);	/* no O_CLOEXEC: the child keeps it */
	if (fd < 0)
		return 1;
	if (fork() == 0) {
		for (;;)
			pause();
	}
	if (next_quiesce(fd, &e))
		_exit(0);
	return 1;
}

int main(int argc, char **argv)
{
	int fd, i, n;

	if (argc == 3 && !strcmp(argv[1], "hold")) {
		fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
		if (fd < 0 || reg(fd, IBCKPT_ABI_VERSION, 0))
			return perror("register"), 1;
		printf("registered %d\n", (int)getpid());
		fflush(stdout);
		sleep((unsigned int)atoi(argv[2]));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "errors"))
		return errors();
	if (argc == 2 && !strcmp(argv[1], "answer"))
		return answer();
	if (argc == 3 && !strcmp(argv[1], "cloner"))
		return cloner(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "dies"))
		return dies();
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "forge"))
		return forge(argv[2], (uint32_t)strtoul(argv[3], NULL, 0),
			     argc == 5 ? (uint32_t)strtoul(argv[4], NULL, 0) : 2);
	if (argc == 3 && !strcmp(argv[1], "cycles")) {
		n = atoi(argv[2]);
		for (i = 0; i < n; i++) {
			fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
			if (fd < 0 || reg(fd, IBCKPT_ABI_VERSION, 0))
				return perror("register"), 1;
			close(fd);
		}
		return 0;
	}
	fprintf(stderr, "usage: regtest hold SECONDS | errors | answer | cloner FILE | dies | "
		"cycles N | forge DEV QPN [PD]\n");
	return 2;
}
