// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sharecreds: IBCKPT_IOC_SHARE_CREDS end to end, against the real consumer,
 * uverbs' legacy write() path and its ib_safe_file_access() check.
 *
 *   sharecreds /dev/infiniband/uverbsN      (as root; exit 0 = all as expected)
 *   sharecreds hold                         switch two threads that stay asleep,
 *                                           close /dev/ibckpt, print "posted",
 *                                           wait for a line on standard input,
 *                                           then wake them (their works run)
 *
 * The main thread opens the uverbs device and registers on /dev/ibckpt (it is
 * the control thread). Five threads, each asleep in read() on a pipe of its
 * own between commands, then make their credentials what CRIU's restorer
 * leaves behind:
 *   t0, t1  prctl(PR_SET_SECUREBITS, the current value)  new object, same content
 *   t2      capset() with the current sets                new object, same content
 *   t3      capset() without CAP_SYS_NICE in effective    new object, other content
 *   t4      setresuid(-1, -1, -1)                         6.1: a no-op, no new object
 *   t5      a Landlock domain (no mkfifo)                 new object, other LSM
 *                                                         state, the same secid
 * A legacy write() from t0..t3 and t5 fails with EACCES before the ioctl (it
 * passed before the threads changed anything); after it, t0, t1, t2 and t4
 * get through the check (GET_CONTEXT, then QUERY_DEVICE succeed), t3 and t5
 * still get EACCES, t3 still lacks CAP_SYS_NICE and t5 still may not create
 * a FIFO. The counts: 3 switched, 2 differ, 1 already shared; a second call:
 * 0, 2, 4. Without Landlock (not enabled), t5 changes nothing and counts as
 * shared.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/ibckpt.h>
#include <rdma/ib_user_verbs.h>

#define NTHREADS	6
#define T_DIFFER	3
#define T_NOOP		4
#define T_LANDLOCK	5

static int have_landlock = 1;

static int ufd = -1, cfd = -1;	/* uverbs, /dev/ibckpt */
static int reply[2];

struct worker {
	int id;
	int cmd[2];
	pthread_t th;
	volatile pid_t tid;
};

static struct worker workers[NTHREADS];

static int capget_sets(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capget, &h, d) ? -errno : 0;
}

static int capset_sets(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/*
 * A Landlock domain for this thread alone: it may not create FIFOs. Only
 * the LSM blob shows it (Landlock has no secid). -EOPNOTSUPP without
 * Landlock.
 */
static int landlock_self(void)
{
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_FIFO,
	};
	int fd, ret;

	fd = syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	ret = syscall(__NR_landlock_restrict_self, fd, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* 0 if this thread may create a FIFO in /tmp, or -errno. */
static int make_fifo(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/sharecreds.%d.fifo", getpid());
	if (mkfifo(path, 0600))
		return -errno;
	unlink(path);
	return 0;
}

/* Give this thread credentials as its role says; 0 or -errno. */
static int change_creds(int id)
{
	struct __user_cap_data_struct d[2];
	int sb, ret;

	switch (id) {
	case 0:
	case 1:
		sb = prctl(PR_GET_SECUREBITS);
		if (sb < 0)
			return -errno;
		return prctl(PR_SET_SECUREBITS, (unsigned long)sb) ? -errno : 0;
	case 2:
		ret = capget_sets(d);
		return ret ? ret : capset_sets(d);
	case T_DIFFER:
		ret = capget_sets(d);
		if (ret)
			return ret;
		d[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
		return capset_sets(d);
	case T_LANDLOCK:
		return landlock_self();
	default:
		return syscall(SYS_setresuid, -1, -1, -1) ? -errno : 0;
	}
}

/* A legacy uverbs command by write(); 0 if it was carried out, or -errno. */
static int uverbs_write(uint32_t command, void *resp, size_t resp_len)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		__aligned_u64 response;
	} w = {
		.hdr = { .command = command, .in_words = sizeof(w) / 4,
			 .out_words = (uint16_t)(resp_len / 4) },
		.response = (uintptr_t)resp,
	};
	ssize_t n = write(ufd, &w, sizeof(w));

	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(w) ? 0 : -EIO;
}

static int query_device(void)
{
	struct ib_uverbs_query_device_resp r;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = uverbs_write(IB_USER_VERBS_CMD_QUERY_DEVICE, &r, sizeof(r));
	if (!ret && (!r.max_qp || !r.phys_port_cnt))
		return -EBADMSG;	/* carried out, but answered nonsense */
	return ret;
}

static int get_context(void)
{
	struct ib_uverbs_get_context_resp r;

	memset(&r, 0, sizeof(r));
	return uverbs_write(IB_USER_VERBS_CMD_GET_CONTEXT, &r, sizeof(r));
}

/* 1 if CAP_SYS_NICE is in this thread's effective set, 0 if not, -errno. */
static int has_sys_nice(void)
{
	struct __user_cap_data_struct d[2];
	int ret = capget_sets(d);

	if (ret)
		return ret;
	return !!(d[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char c;

	w->tid = (pid_t)syscall(SYS_gettid);
	/* asleep in read() between commands: the work runs on the way out */
	while (read(w->cmd[0], &c, 1) == 1) {
		int r[2] = { w->id, 0 };

		switch (c) {
		case 'C':
			r[1] = change_creds(w->id);
			break;
		case 'Q':
			r[1] = query_device();
			break;
		case 'G':
			r[1] = get_context();
			break;
		case 'E':	/* not the control thread */
			r[1] = ioctl(cfd, IBCKPT_IOC_SHARE_CREDS, NULL) ? -errno : 0;
			break;
		case 'N':
			r[1] = has_sys_nice();
			break;
		case 'F':
			r[1] = make_fifo();
			break;
		case 'X':
			return NULL;
		}
		if (write(reply[1], r, sizeof(r)) != sizeof(r))
			abort();
	}
	return NULL;
}

/* Send command c to thread id; its result. */
static int ask(int id, char c)
{
	int r[2];

	if (write(workers[id].cmd[1], &c, 1) != 1 || read(reply[0], r, sizeof(r)) != sizeof(r) ||
	    r[0] != id) {
		fprintf(stderr, "sharecreds: thread %d did not answer\n", id);
		exit(1);
	}
	return r[1];
}

static int bad;

static void expect(const char *what, int id, int got, int want)
{
	if (got == want)
		return;
	fprintf(stderr, "sharecreds: %s, thread t%d: got %d (%s), expected %d (%s)\n", what, id,
		got, got < 0 ? strerror(-got) : "-", want, want < 0 ? strerror(-want) : "-");
	bad = 1;
}

/* Passed the f_cred check: anything but EACCES (EINVAL without a context). */
static void expect_not_eacces(const char *what, int id, int got)
{
	if (got != -EACCES)
		return;
	fprintf(stderr, "sharecreds: %s, thread t%d: EACCES\n", what, id);
	bad = 1;
}

static int share(struct ibckpt_share_creds *res)
{
	memset(res, 0xff, sizeof(*res));
	return ioctl(cfd, IBCKPT_IOC_SHARE_CREDS, res) ? -errno : 0;
}

static void expect_counts(const char *what, const struct ibckpt_share_creds *res,
			  unsigned int switched, unsigned int differ, unsigned int shared)
{
	printf("%s: switched %u differ %u shared %u\n", what, res->switched, res->differ,
	       res->shared);
	if (res->switched != switched || res->differ != differ || res->shared != shared ||
	    res->reserved) {
		fprintf(stderr, "sharecreds: %s: expected switched %u differ %u shared %u\n",
			what, switched, differ, shared);
		bad = 1;
	}
}

static void start_threads(void)
{
	int i;

	if (pipe2(reply, O_CLOEXEC)) {
		perror("pipe");
		exit(1);
	}
	for (i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		if (pipe2(workers[i].cmd, O_CLOEXEC) ||
		    pthread_create(&workers[i].th, NULL, worker_main, &workers[i])) {
			perror("thread");
			exit(1);
		}
	}
}

static void stop_threads(void)
{
	int i;

	for (i = 0; i < NTHREADS; i++) {
		if (write(workers[i].cmd[1], "X", 1) != 1)
			exit(1);
		pthread_join(workers[i].th, NULL);
	}
}

/*
 * Until thread id sleeps in read() (system call 0): a thread that has just
 * answered is on its way back there, and a work queued then would run at
 * once, on that way.
 */
static void wait_asleep_in_read(int id)
{
	char path[64], stat[256], sc[32];
	int i;

	for (i = 0; i < 1000; i++) {
		FILE *f;
		char *p = NULL;

		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)workers[id].tid);
		f = fopen(path, "r");
		if (f && fgets(stat, sizeof(stat), f))
			p = strrchr(stat, ')');
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)workers[id].tid);
		f = fopen(path, "r");
		if (f && (!fgets(sc, sizeof(sc), f)))
			sc[0] = 0;
		if (f)
			fclose(f);
		if (p && p[1] == ' ' && p[2] == 'S' && f && !strncmp(sc, "0 ", 2))
			return;
		usleep(1000);
	}
	fprintf(stderr, "sharecreds: thread t%d does not sleep in read()\n", id);
	exit(1);
}

/*
 * Works that stay queued: t0 and t1 switch, then sleep in read() while
 * nothing pins the module but their works (TWA_RESUME does not wake them).
 */
static int hold(void)
{
	struct ibckpt_share_creds res;
	char line[16];

	start_threads();
	expect("change credentials", 0, ask(0, 'C'), 0);
	expect("change credentials", 1, ask(1, 'C'), 0);
	wait_asleep_in_read(0);
	wait_asleep_in_read(1);
	expect("share", 0, share(&res), 0);
	expect_counts("share", &res, 2, 0, NTHREADS - 2);
	close(cfd);
	printf("posted\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	/* woken: each runs its work on its way back to user mode */
	expect("after the work", 0, ask(0, 'N'), 1);
	expect("after the work", 1, ask(1, 'N'), 1);
	stop_threads();
	printf(bad ? "sharecreds: FAILED\n" : "sharecreds: ran\n");
	return bad;
}

int main(int argc, char **argv)
{
	struct ibckpt_register reg = { .abi_version = IBCKPT_ABI_VERSION };
	struct ibckpt_share_creds res;
	int i, fd2;

	if (argc != 2) {
		fprintf(stderr, "usage: sharecreds /dev/infiniband/uverbsN | hold\n");
		return 2;
	}
	if (has_sys_nice() != 1 || prctl(PR_GET_SECUREBITS) < 0) {
		fprintf(stderr, "sharecreds: needs root (CAP_SYS_NICE, CAP_SETPCAP)\n");
		return 77;
	}
	cfd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	if (cfd < 0)
		return perror("/dev/ibckpt"), 1;
	expect("share before register", 0, share(&res), -ENOTCONN);
	if (ioctl(cfd, IBCKPT_IOC_REGISTER, &reg))
		return perror("IBCKPT_IOC_REGISTER"), 1;
	if (!strcmp(argv[1], "hold"))
		return hold();
	ufd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (ufd < 0)
		return perror(argv[1]), 1;
	fd2 = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	if (fd2 < 0 || ioctl(fd2, IBCKPT_IOC_SHARE_CREDS, NULL) == 0 || errno != ENOTCONN) {
		fprintf(stderr, "sharecreds: an unregistered file: not ENOTCONN\n");
		bad = 1;
	}
	close(fd2);
	start_threads();

	/* created by the control thread: its object, the check passes */
	for (i = 0; i < NTHREADS; i++)
		expect_not_eacces("write() before anything", i, ask(i, 'Q'));
	for (i = 0; i < NTHREADS; i++) {
		int r = ask(i, 'C');

		if (i == T_LANDLOCK && r == -EOPNOTSUPP) {
			printf("no Landlock: t%d keeps the shared object\n", i);
			have_landlock = 0;
			continue;
		}
		expect("change credentials", i, r, 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		int r = ask(i, 'Q');

		if (i == T_NOOP)	/* 6.1's setresuid() commits nothing for a no-op */
			expect_not_eacces("write() after setresuid(-1, -1, -1)", i, r);
		else if (i == T_LANDLOCK && !have_landlock)
			expect_not_eacces("write() without Landlock", i, r);
		else
			expect("write() with an object of its own", i, r, -EACCES);
	}
	expect("share from another thread", 0, ask(0, 'E'), -EPERM);

	expect("share", 0, share(&res), 0);
	expect_counts("share", &res, 3, 1 + have_landlock, 2 - have_landlock);

	/* the threads ran their works on their way out of read() */
	expect("GET_CONTEXT after the share", 1, ask(1, 'G'), 0);
	for (i = 0; i < NTHREADS; i++) {
		int keeps = i == T_DIFFER || (i == T_LANDLOCK && have_landlock);

		expect("QUERY_DEVICE after the share", i, ask(i, 'Q'), keeps ? -EACCES : 0);
	}
	expect("CAP_SYS_NICE of the thread that dropped it", T_DIFFER, ask(T_DIFFER, 'N'), 0);
	expect("CAP_SYS_NICE of a thread that switched", 2, ask(2, 'N'), 1);
	expect("mkfifo in the Landlock domain", T_LANDLOCK, ask(T_LANDLOCK, 'F'),
	       have_landlock ? -EACCES : 0);
	expect("mkfifo in a thread that switched", 2, ask(2, 'F'), 0);

	expect("share again", 0, share(&res), 0);
	expect_counts("share again", &res, 0, 1 + have_landlock, 5 - have_landlock);
	expect("share, no counts wanted", 0,
	       ioctl(cfd, IBCKPT_IOC_SHARE_CREDS, NULL) ? -errno : 0, 0);

	stop_threads();
	printf(bad ? "sharecreds: FAILED\n" : "sharecreds: ok\n");
	return bad;
}
