// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz: a fuzzer of what ibckpt.ko offers user space, for the VM test bed
 * (tests/vm/cases/59-fuzz.sh, Documentation/testing.rst).
 *
 *   fuzz [--seed N] [--iterations M] [--time S] [--victim-file FILE] [-v]
 *
 * Both channels are fuzzed, from one process, its threads and children:
 *
 *  - the generic netlink family "ibckpt", over raw netlink sockets: every
 *    command number, known or not, as doit and as dump, random flags,
 *    attributes of every type missing, duplicated, truncated, oversized,
 *    wrongly nested or flagged, strings without NUL, extreme ids, "cgroup
 *    fds" that are no cgroup v2 directory (a file, a closed fd, /tmp, /proc,
 *    a cgroup v1 directory); several messages per datagram, lengths that lie,
 *    random bytes; dumps read in part, then abandoned by closing the socket.
 *    Every reply must parse: well-formed netlink, each attribute known with
 *    its size, errors that are negative errnos in NLMSG_ERROR (or DONE), an
 *    answer wherever one is due, the errno the header alone decides
 *    (EOPNOTSUPP for an unknown command or mode, EINVAL for a short header,
 *    ENOENT for no family), snapshot pieces that reassemble into what the
 *    provider gave;
 *  - the character device /dev/ibckpt: open/close, registration with every
 *    ABI and flag value, from threads and forked children, read() of every
 *    size, poll, blocking reads interrupted by signals, every ioctl number of
 *    the magic and others, with arguments at NULL, unmapped, misaligned,
 *    read-only, straddling or kernel addresses, natively and through the
 *    32-bit entry (int 0x80), QUIESCED and SNAPSHOT answers for sessions that
 *    never asked, write/mmap/splice/readv/lseek/epoll. Each result is checked
 *    against the documented answer.
 *
 * A "victim" child (a process group of its own, registered, with two
 * application threads) plays a provider that answers each freeze it is asked
 * for in random ways: good snapshots (up to the 64 MiB bound) and malformed
 * ones (0 bytes, short, bad header, over the bound, faulting), wrong
 * sessions, errors, twice, late or never. Something must freeze it: run
 * `ibckpt freeze --persist 5 PGID; ibckpt thaw PGID` in a loop, PGID from
 * --victim-file. When privileged, the fuzzer also freezes decoy children (a
 * process group, a session, a cgroup) and the victim itself; it never names
 * another process in a FREEZE, and thaws what it froze before it exits.
 *
 * Without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE, FREEZE, THAW and
 * SNAPSHOT_GET must be refused (EPERM for a well-formed request, never
 * success) and THREAD_GET must not say where threads are parked. With
 * them, a socket opened by root used by an unprivileged process, and one
 * opened by an unprivileged process used by root, must be refused too.
 *
 * The operations are a function of the seed (printed first): a failure is
 * replayed with --seed N --iterations M. What runs concurrently (the victim,
 * the freeze loop, the scheduler) is not replayed.
 *
 * Exit status: 0 if every check held, 1 if one failed ("FAIL" lines),
 * 2 for bad usage or when the module is not loaded, 3 if an operation hung.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/ibckpt.h>
#include <linux/ibckpt_snapshot.h>

/*
 * The module parses snapshots and reports its own view of their QPs
 * (snap_check.c, rdma_view.c) where the ABI has IBCKPT_SNAPSHOT_F_KVIEW: a
 * snapshot it refuses for what it says then counts as a failed answer.
 */
#ifdef IBCKPT_SNAPSHOT_F_KVIEW
#define KVIEW 1
#else
#define KVIEW 0
#endif

#define PG		4096u
#define SNAP_HDR	((uint32_t)sizeof(struct ibckpt_snap_hdr))
#define SNAP_PIECE	3072u	/* bytes of snapshot per SNAPSHOT_GET message (genl_snapshot.c) */
#define MAX_ERRNO	4095
#define PID_MAX_LIMIT	(4u * 1024 * 1024)
#define NOFAMILY	0xfff0	/* netlink types from here on name no family */
#define MAX_COOKIE	20	/* NETLINK_MAX_COOKIE_LEN */
#define RXBUF		(256u * 1024)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define PICK(a)		((a)[rnd(ARRAY_SIZE(a))])

/* ------------------------------------------------------------------ */
/* Randomness: xoshiro256**, one state per thread, seeded from --seed.  */
/* ------------------------------------------------------------------ */

struct rng {
	uint64_t s[4];
};

static _Thread_local struct rng R;

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		R.s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t r64(void)
{
	uint64_t *s = R.s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static uint32_t rnd(uint64_t n)
{
	return n ? (uint32_t)(r64() % n) : 0;
}

static bool chance(unsigned int pct)
{
	return rnd(100) < pct;
}

static void rbytes(void *p, size_t n)
{
	uint8_t *b = p;
	uint64_t v;

	for (; n >= 8; n -= 8, b += 8) {
		v = r64();
		memcpy(b, &v, 8);
	}
	if (n) {
		v = r64();
		memcpy(b, &v, n);
	}
}

/* ------------------------------------------------------------------ */
/* Failures and counters, shared with the children (one mapping).      */
/* ------------------------------------------------------------------ */

enum counter {
	ST_NL_MSGS, ST_NL_CLEAN, ST_NL_DUMPS, ST_NL_CUT, ST_NL_REPLIES, ST_NL_EPERM,
	ST_NL_LOSSY, ST_NL_SOCKETS, ST_FREEZE_OK, ST_THAW_OK, ST_SESSIONS_SEEN,
	ST_THREADS_SEEN, ST_PROCS_SEEN, ST_SNAP_PIECES, ST_SNAP_WHOLE, ST_SNAP_MATCHED,
	ST_CD_OPENS, ST_CD_REG_OK, ST_CD_IOCTLS, ST_CD_READS, ST_CD_COMPAT, ST_CD_MISC,
	ST_THREADS, ST_FORKS, ST_V_QUIESCE, ST_V_ANSWER_OK, ST_V_SNAP_OK, ST_V_SNAP_REFUSED,
	ST_V_THAW, ST_V_ABORT, ST_V_STALE, ST_V_EPERM, ST_SNAP_CUT, ST_CREDS, ST_N
};

static const char *const stat_name[ST_N] = {
	"nl-messages", "nl-clean", "nl-dumps", "nl-dumps-cut", "nl-replies", "nl-eperm",
	"nl-lossy", "nl-sockets", "freezes", "thaws", "sessions-seen",
	"threads-seen", "procs-seen", "snap-pieces", "snaps-whole", "snaps-matched",
	"cd-opens", "cd-registered", "cd-ioctls", "cd-reads", "cd-compat", "cd-misc",
	"thread-ops", "fork-ops", "v-quiesce", "v-answered", "v-snap-ok", "v-snap-refused",
	"v-thaw", "v-abort", "v-stale", "v-eperm", "snaps-cut", "share-creds",
};

struct shared {
	atomic_int failures;
	atomic_ulong st[ST_N];
	atomic_ulong nl_err[MAX_ERRNO + 1];
	/* the victim's last accepted snapshot, for the SNAPSHOT_GET reader */
	atomic_ullong v_session;	/* 0 while the fields below change */
	atomic_ullong v_len, v_hash, v_nrec;
	atomic_int v_pid;
};

static struct shared *SH;
static uint64_t SEED;
static unsigned long ITER;
static const char *volatile MAINOP = "setup";
static _Thread_local const char *OPN = "setup";
static bool VERBOSE;

#define STAT(x) atomic_fetch_add(&SH->st[x], 1)

static void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(int line, const char *fmt, ...)
{
	char m[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	n = atomic_fetch_add(&SH->failures, 1);
	if (n < 60)
		fprintf(stderr, "fuzz: FAIL seed %" PRIu64 " iteration %lu %s (pid %d, fuzz.c:%d): %s\n",
			SEED, ITER, OPN, (int)gettid(), line, m);
	else if (n == 60)
		fprintf(stderr, "fuzz: further failures are counted, not shown\n");
}

#define FAIL(...) failf(__LINE__, __VA_ARGS__)

static const char *en(int e)
{
	const char *s;

	if (!e)
		return "success";
	s = strerrorname_np(e < 0 ? -e : e);
	return s ? s : "E?";
}

/* @rc: 0 or -errno; @want: 0 or a positive errno. */
static bool expect(const char *what, long rc, int want)
{
	if (rc == -want)
		return true;
	FAIL("%s: got %s (%ld), expected %s", what, rc > 0 ? "a positive count" : en((int)rc),
	     rc, en(want));
	return false;
}

static bool expect_in(const char *what, long rc, const int *set, size_t n)
{
	char list[256] = "";
	size_t i, l = 0;

	for (i = 0; i < n; i++)
		if (rc == -set[i])
			return true;
	for (i = 0; i < n && l < sizeof(list) - 24; i++)
		l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%s", i ? "/" : "", en(set[i]));
	FAIL("%s: got %s (%ld), expected %s", what, rc > 0 ? "a positive count" : en((int)rc),
	     rc, list);
	return false;
}

#define EXPECT_IN(what, rc, ...) do {					\
		const int set_[] = { __VA_ARGS__ };			\
		expect_in(what, rc, set_, ARRAY_SIZE(set_));		\
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void msleep(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait for child @pid at most @secs; false (and killed) if it hung. */
static bool reap(pid_t pid, int secs, int *status)
{
	double end = now() + secs;
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (now() > end) {
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return false;
		}
		msleep(2);
	}
}

static void check_child(pid_t pid, const char *what, int secs)
{
	int st = 0;

	if (!reap(pid, secs, &st)) {
		FAIL("%s: child %d hung for %d s (killed)", what, (int)pid, secs);
		return;
	}
	if (WIFSIGNALED(st))
		FAIL("%s: child %d died of signal %d", what, (int)pid, WTERMSIG(st));
}

/* ------------------------------------------------------------------ */
/* Where arguments live: valid, misaligned, read-only, faulting.       */
/* ------------------------------------------------------------------ */

/* 4 pages: read-write, read-write, no access, read-only */
static uint8_t *ARENA, *ARENA32;
static uintptr_t UNMAPPED, UNMAPPED32;

enum pk { PK_VALID, PK_MISALIGNED, PK_RO, PK_STRADDLE, PK_NULL, PK_UNMAPPED, PK_KERNEL,
	  PK_NONCANON, PK_N };

static uint8_t *arena_map(bool low)
{
	uint8_t *a = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | (low ? MAP_32BIT : 0), -1, 0);
	struct ibckpt_register r = { .abi_version = IBCKPT_ABI_VERSION };

	if (a == MAP_FAILED)
		return NULL;
	rbytes(a, 4 * PG);
	/* the read-only page: a valid registration at 0, random bytes from 64 */
	memcpy(a + 3 * PG, &r, sizeof(r));
	mprotect(a + 2 * PG, PG, PROT_NONE);
	mprotect(a + 3 * PG, PG, PROT_READ);
	return a;
}

/*
 * An address for an argument of @size bytes of kind @k, holding @content
 * where it is writable; *faults: reading @size bytes there faults (only
 * when the kernel reaches the copy). For PK_RO the bytes are the page's:
 * read them back for the expectation.
 */
static uintptr_t arg_at(bool compat, enum pk k, const void *content, size_t size, bool *faults)
{
	uint8_t *a = compat ? ARENA32 : ARENA;
	uint8_t *p;
	size_t cut;

	*faults = false;
	if (size > 2 * PG - 8)
		size = 2 * PG - 8;
	switch (k) {
	case PK_VALID:
		p = a + rnd((2 * PG - size) / 8 + 1) * 8;
		break;
	case PK_MISALIGNED:
		p = a + 1 + rnd(7) + rnd((2 * PG - size - 8) / 8 + 1) * 8;
		break;
	case PK_RO:
		return (uintptr_t)(a + 3 * PG + (chance(50) ? 0 : 64));
	case PK_STRADDLE:
		if (size < 2)
			return 0;
		cut = 1 + rnd(size - 1);
		p = a + 2 * PG - cut;
		if (content)
			memcpy(p, content, cut);
		*faults = true;
		return (uintptr_t)p;
	case PK_NULL:
		*faults = size > 0;
		return 0;
	case PK_UNMAPPED:
		*faults = size > 0;
		return (compat ? UNMAPPED32 : UNMAPPED) + rnd(PG / 8) * 8;
	case PK_KERNEL:
		*faults = size > 0;
		return compat ? 0xfffff000u : 0xffff888000000000ull + rnd(1u << 20) * 8;
	default:
		*faults = size > 0;
		return compat ? 0xffffe000u : 0x0000800000000000ull + rnd(1u << 20) * 8;
	}
	if (content)
		memcpy(p, content, size);
	return (uintptr_t)p;
}

static enum pk pick_pk(void)
{
	return chance(55) ? PK_VALID : (enum pk)rnd(PK_N);
}

/*
 * Does access_ok(@addr, @n) hold? 1 yes, 0 no, -1 depends on the paging
 * mode (4 or 5 levels: TASK_SIZE_MAX is 2^47 or 2^56, less a page).
 */
static int access_known(uint64_t addr, uint64_t n)
{
	const uint64_t lo = (1ull << 47) - PG, hi = (1ull << 56) - PG;

	if (n > hi || addr > hi - n)
		return 0;
	if (n <= lo && addr <= lo - n)
		return 1;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Privilege, targets, descriptors.                                    */
/* ------------------------------------------------------------------ */

static bool PRIV;	/* CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE: expectations */
static bool SAFE;	/* started privileged: FREEZE only names our own children */
static pid_t VICTIM, DECOY_GRP, DECOY_SID, DECOY_CG;
static uint32_t SAFE_IDS[16];
static unsigned int NSAFE;
static int CGFDS[24];	/* candidate IBCKPT_A_CGROUP_FD values: fds of ours */
static unsigned int NCGFDS;
static char CGDIR[600];	/* our cgroup v2 directory, when privileged */
static uint64_t OURS[64];	/* sessions our FREEZE requests created */
static unsigned int NOURS;
static uint64_t KNOWN[32];	/* session ids seen anywhere */
static unsigned int NKNOWN, KNOWN_NEXT;

static bool has_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}

static void know_session(uint64_t id)
{
	for (unsigned int i = 0; i < NKNOWN; i++)
		if (KNOWN[i] == id)
			return;
	KNOWN[KNOWN_NEXT++ % ARRAY_SIZE(KNOWN)] = id;
	if (NKNOWN < ARRAY_SIZE(KNOWN))
		NKNOWN++;
}

static uint64_t known_session(void)
{
	return NKNOWN ? KNOWN[rnd(NKNOWN)] : 1 + rnd(8);
}

static const uint32_t U32S[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 255, 256, 1000, 4095, 4096, 65535, 65536,
	0x7ffffffe, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff,
	PID_MAX_LIMIT, PID_MAX_LIMIT + 1, IBCKPT_FREEZE_TIMEOUT_MAX_MS,
	IBCKPT_FREEZE_TIMEOUT_MAX_MS + 1, IBCKPT_WATCHDOG_MAX_MS, IBCKPT_WATCHDOG_MAX_MS + 1,
};

static uint32_t any_u32(void)
{
	return chance(60) ? PICK(U32S) : (uint32_t)r64();
}

static uint64_t any_u64(void)
{
	uint64_t k;

	switch (rnd(7)) {
	case 0:
		return 0;
	case 1:
	case 2:
		return known_session();
	case 3:
		k = known_session();
		return chance(50) ? k + 1 : k - 1;
	case 4:
		return UINT64_MAX;
	case 5:
		return 1ull << 63;
	default:
		return r64();
	}
}

/* A process, group or session id for a job: only our own children if SAFE. */
static uint32_t job_id(void)
{
	if (SAFE || chance(60))
		return SAFE_IDS[rnd(NSAFE)];
	return any_u32();
}

static bool safe_id(uint32_t v)
{
	for (unsigned int i = 0; i < NSAFE; i++)
		if (SAFE_IDS[i] == v)
			return true;
	return false;
}

static bool safe_fd(uint32_t v)
{
	for (unsigned int i = 0; i < NCGFDS; i++)
		if ((uint32_t)CGFDS[i] == v)
			return true;
	return false;
}

static uint32_t cgroup_fd(void)
{
	if (NCGFDS && (SAFE || chance(80)))
		return (uint32_t)CGFDS[rnd(NCGFDS)];
	return any_u32();
}

/* ------------------------------------------------------------------ */
/* Netlink: sockets, messages, the kernel's parse mirrored.            */
/* ------------------------------------------------------------------ */

static uint16_t FAMILY;
static int NODST = -1;	/* 1: send() without an address, 0: sendto(), -1: either */

struct nls {
	int fd;
	uint32_t portid;
	uint32_t seq;
	bool lossy;	/* a tiny receive buffer: replies may be dropped */
};

#define NSOCK 3
static struct nls SOCKS[NSOCK];

/* What the kernel says each command offers (GENL_CMD_CAP_DO, _DUMP). */
static uint8_t OPCAPS[256];

/* Which command has which mode, as this ABI says (the kernel is checked against it). */
static uint8_t abi_caps(unsigned int cmd)
{
	switch (cmd) {
	case IBCKPT_CMD_GET_VERSION:
	case IBCKPT_CMD_FREEZE:
	case IBCKPT_CMD_THAW:
		return GENL_CMD_CAP_DO;
	case IBCKPT_CMD_PROC_GET:
	case IBCKPT_CMD_SESSION_GET:
	case IBCKPT_CMD_THREAD_GET:
	case IBCKPT_CMD_SNAPSHOT_GET:
		return GENL_CMD_CAP_DUMP;
	}
	return 0;
}

/*
 * The modes the module offers for @cmd: the ABI's for the commands this
 * fuzzer knows; for one added to the ABI since, what the kernel says.
 */
static uint8_t cmd_caps(unsigned int cmd)
{
	return cmd <= IBCKPT_CMD_SNAPSHOT_GET ? abi_caps(cmd) : OPCAPS[cmd & 255];
}

static bool cmd_privileged(unsigned int cmd)
{
	return cmd == IBCKPT_CMD_FREEZE || cmd == IBCKPT_CMD_THAW ||
	       cmd == IBCKPT_CMD_SNAPSHOT_GET;
}

static void nl_close(struct nls *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static int nl_open(struct nls *s, bool random_opts)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK };
	socklen_t al = sizeof(a);
	int one = 1, v;

	memset(s, 0, sizeof(*s));
	s->fd = socket(AF_NETLINK, (random_opts && chance(20) ? SOCK_DGRAM : SOCK_RAW) |
		       SOCK_CLOEXEC, NETLINK_GENERIC);
	if (s->fd < 0)
		return -errno;
	if (random_opts && chance(10))
		a.nl_pid = 0x40000000u | rnd(1u << 20);
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a))) {
		a.nl_pid = 0;
		if (bind(s->fd, (struct sockaddr *)&a, sizeof(a))) {
			v = -errno;
			nl_close(s);
			return v;
		}
	}
	if (!random_opts || chance(70))
		setsockopt(s->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (!random_opts || chance(50))
		setsockopt(s->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (random_opts && chance(30))
		setsockopt(s->fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	if (random_opts && chance(5)) {
		v = 256 + (int)rnd(4096);
		setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
		s->lossy = true;
	}
	if (getsockname(s->fd, (struct sockaddr *)&a, &al)) {
		v = -errno;
		nl_close(s);
		return v;
	}
	s->portid = a.nl_pid;
	s->seq = 1 + rnd(1u << 30);
	STAT(ST_NL_SOCKETS);
	return 0;
}

struct mb {
	uint8_t *b;
	size_t len, cap;
};

static void *mb_put(struct mb *m, const void *p, size_t n)
{
	void *at;

	if (m->len + n + 8 > m->cap) {
		m->cap = (m->len + n + 8) * 2;
		m->b = realloc(m->b, m->cap);
		if (!m->b) {
			perror("fuzz: realloc");
			exit(2);
		}
	}
	at = m->b + m->len;
	if (p)
		memcpy(at, p, n);
	else
		memset(at, 0, n);
	m->len += n;
	return at;
}

static void mb_align(struct mb *m)
{
	if (m->len % 4)
		mb_put(m, NULL, 4 - m->len % 4);
}

/*
 * One attribute. When privileged, a 4-byte payload of a job id or cgroup fd
 * attribute is always one of ours, whatever the generator made: no request
 * may freeze a process we did not start.
 */
static void put_attr(struct mb *m, uint16_t type, const void *data, size_t n)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + n), .nla_type = type };
	uint16_t base = type & NLA_TYPE_MASK;
	uint8_t *p;
	uint32_t v;

	mb_put(m, &a, sizeof(a));
	p = mb_put(m, data, n);
	if (SAFE && n == 4 && (base == IBCKPT_A_PGID || base == IBCKPT_A_JOB_ID)) {
		memcpy(&v, p, 4);
		if (!safe_id(v)) {
			v = SAFE_IDS[rnd(NSAFE)];
			memcpy(p, &v, 4);
		}
	} else if (SAFE && n == 4 && base == IBCKPT_A_CGROUP_FD && NCGFDS) {
		memcpy(&v, p, 4);
		if (!safe_fd(v)) {
			v = (uint32_t)CGFDS[rnd(NCGFDS)];
			memcpy(p, &v, 4);
		}
	}
	mb_align(m);
}

static void put_u32(struct mb *m, uint16_t type, uint32_t v)
{
	put_attr(m, type, &v, 4);
}

static void put_u64(struct mb *m, uint16_t type, uint64_t v)
{
	put_attr(m, type, &v, 8);
}

static void put_str(struct mb *m, uint16_t type, const char *s)
{
	put_attr(m, type, s, strlen(s) + 1);
}

static size_t nest_start(struct mb *m, uint16_t type)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN, .nla_type = type };
	size_t at = m->len;

	mb_put(m, &a, sizeof(a));
	return at;
}

static void nest_end(struct mb *m, size_t at)
{
	uint16_t len = (uint16_t)(m->len - at);

	memcpy(m->b + at, &len, 2);
}

static void rand_str(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s[i] = (char)(' ' + rnd(95));
}

static uint32_t timeout_val(void)
{
	static const uint32_t v[] = { 0, 1, 50, IBCKPT_FREEZE_TIMEOUT_MAX_MS,
				      IBCKPT_FREEZE_TIMEOUT_MAX_MS + 1, 0xffffffff };

	return chance(70) ? 200 + rnd(2000) : chance(60) ? PICK(v) : any_u32();
}

static uint32_t watchdog_val(void)
{
	static const uint32_t v[] = { 0, 1, 100, IBCKPT_WATCHDOG_MAX_MS,
				      IBCKPT_WATCHDOG_MAX_MS + 1, 0xffffffff };

	return chance(70) ? 200 + rnd(4000) : chance(60) ? PICK(v) : any_u32();
}

/* How a request names a job or a session; *sel: the session id named. */
static void put_selector(struct mb *m, uint64_t *sel)
{
	uint64_t id;

	switch (rnd(9)) {
	case 0:
	case 1:
		put_u32(m, IBCKPT_A_PGID, job_id());
		break;
	case 2:
	case 3:
		put_u32(m, IBCKPT_A_JOB_TYPE, IBCKPT_JOB_PGRP + rnd(3));
		put_u32(m, IBCKPT_A_JOB_ID, job_id());
		break;
	case 4:
		put_u32(m, IBCKPT_A_JOB_TYPE, IBCKPT_JOB_CGROUP);
		put_u32(m, IBCKPT_A_CGROUP_FD, cgroup_fd());
		break;
	case 5:
	case 6:
		id = any_u64();
		put_u64(m, IBCKPT_A_SESSION_ID, id);
		*sel = id;
		break;
	case 7:
		put_u32(m, IBCKPT_A_JOB_TYPE, IBCKPT_JOB_PGRP + rnd(4));
		break;
	default:	/* everything at once */
		put_u32(m, IBCKPT_A_PGID, job_id());
		put_u32(m, IBCKPT_A_JOB_TYPE, IBCKPT_JOB_PGRP + rnd(4));
		put_u32(m, IBCKPT_A_JOB_ID, job_id());
		put_u32(m, IBCKPT_A_CGROUP_FD, cgroup_fd());
		break;
	}
}

/* Attributes that pass the family's policy (values may still be refused). */
static bool KVIEW_ASKED;
static void (*ATTRS_HOOK)(struct mb *m, unsigned int cmd, uint64_t *sel);

static uint64_t clean_attrs(struct mb *m, unsigned int cmd)
{
	uint64_t sel = 0;

	KVIEW_ASKED = false;
	if (ATTRS_HOOK) {
		ATTRS_HOOK(m, cmd, &sel);
		return sel;
	}
	uint32_t flags;
	char s[48];
	size_t at;

	switch (cmd) {
	case IBCKPT_CMD_FREEZE:
		if (chance(95))
			put_selector(m, &sel);
		if (chance(70))
			put_u32(m, IBCKPT_A_TIMEOUT_MS, timeout_val());
		if (chance(60)) {
			flags = chance(75) ? IBCKPT_FREEZE_F_PERSIST : chance(50) ? 0 : any_u32();
			put_u32(m, IBCKPT_A_FLAGS, flags);
			if ((flags & IBCKPT_FREEZE_F_PERSIST) ? chance(90) : chance(10))
				put_u32(m, IBCKPT_A_WATCHDOG_MS, watchdog_val());
		}
		break;
	case IBCKPT_CMD_SNAPSHOT_GET:
		if (KVIEW && chance(50)) {
			flags = chance(90) ? 1 : any_u32();
			put_u32(m, IBCKPT_A_FLAGS, flags);
			KVIEW_ASKED = flags & 1;
		}
		/* fall through */
	case IBCKPT_CMD_THAW:
	case IBCKPT_CMD_SESSION_GET:
	case IBCKPT_CMD_THREAD_GET:
		if (chance(85))
			put_selector(m, &sel);
		break;
	}
	while (chance(12)) {	/* valid attributes the command ignores */
		switch (rnd(3)) {
		case 0:
			rand_str(s, rnd(sizeof(s) - 1));
			s[rnd(sizeof(s))] = 0;
			s[sizeof(s) - 1] = 0;
			put_str(m, IBCKPT_A_VERSION, s);
			break;
		case 1:
			put_u32(m, IBCKPT_A_ABI, any_u32());
			break;
		default:
			at = nest_start(m, IBCKPT_A_PROC | NLA_F_NESTED);
			if (chance(50))
				put_u32(m, IBCKPT_PROC_A_TGID, any_u32());
			nest_end(m, at);
			break;
		}
	}
	return sel;
}

enum ak { AK_GOOD, AK_SHORT, AK_LONG, AK_HUGE, AK_NONUL, AK_EMPTY, AK_GARBAGE_NEST,
	  AK_DEEP, AK_N };

static size_t good_len(uint16_t base)
{
	switch (base) {
	case IBCKPT_A_SESSION_ID:
		return 8;
	case IBCKPT_A_VERSION:
		return 1 + rnd(20);
	default:
		return 4;
	}
}

static void put_good(struct mb *m, uint16_t type)
{
	uint16_t base = type & NLA_TYPE_MASK;
	char s[40];
	size_t at;

	switch (base) {
	case IBCKPT_A_VERSION:
		rand_str(s, sizeof(s));
		s[rnd(sizeof(s))] = 0;
		put_attr(m, type, s, strlen(s) + 1);
		break;
	case IBCKPT_A_SESSION_ID:
		put_u64(m, type, any_u64());
		break;
	case IBCKPT_A_PGID:
	case IBCKPT_A_JOB_ID:
		put_u32(m, type, job_id());
		break;
	case IBCKPT_A_CGROUP_FD:
		put_u32(m, type, cgroup_fd());
		break;
	case IBCKPT_A_TIMEOUT_MS:
		put_u32(m, type, timeout_val());
		break;
	case IBCKPT_A_WATCHDOG_MS:
		put_u32(m, type, watchdog_val());
		break;
	case IBCKPT_A_JOB_TYPE:
		put_u32(m, type, chance(80) ? IBCKPT_JOB_PGRP + rnd(4) : any_u32());
		break;
	case IBCKPT_A_PROC:
	case IBCKPT_A_SESSION:
	case IBCKPT_A_THREAD:
		at = nest_start(m, type | (chance(80) ? NLA_F_NESTED : 0));
		for (unsigned int i = rnd(4); i; i--)
			put_u32(m, (uint16_t)(1 + rnd(8)), any_u32());
		nest_end(m, at);
		break;
	default:
		put_u32(m, type, any_u32());
		break;
	}
}

static void put_garbage_tlvs(struct mb *m, unsigned int n)
{
	struct nlattr a;
	uint8_t junk[64];

	while (n--) {
		a.nla_type = (uint16_t)r64();
		a.nla_len = (uint16_t)(chance(70) ? NLA_HDRLEN + rnd(sizeof(junk)) : rnd(100));
		mb_put(m, &a, sizeof(a));
		rbytes(junk, sizeof(junk));
		mb_put(m, junk, a.nla_len > NLA_HDRLEN ? rnd(a.nla_len - NLA_HDRLEN + 1) : 0);
		if (chance(80))
			mb_align(m);
	}
}

static void put_kind(struct mb *m, uint16_t type, enum ak k, unsigned int depth)
{
	uint16_t base = type & NLA_TYPE_MASK;
	size_t n, at;
	uint8_t *buf;

	switch (k) {
	case AK_GOOD:
		put_good(m, type);
		return;
	case AK_SHORT:
		n = good_len(base);
		n = n ? rnd(n) : 0;
		break;
	case AK_LONG:
		n = good_len(base) + 1 + rnd(64);
		break;
	case AK_HUGE:
		n = chance(80) ? 200 + rnd(4000) : 30000 + rnd(35000);
		break;
	case AK_NONUL:
		n = 1 + rnd(80);
		{
			char s[81];

			rand_str(s, n);
			put_attr(m, type, s, n);
		}
		return;
	case AK_EMPTY:
		put_attr(m, type, NULL, 0);
		return;
	case AK_GARBAGE_NEST:
		at = nest_start(m, type | (chance(70) ? NLA_F_NESTED : 0));
		put_garbage_tlvs(m, 1 + rnd(6));
		nest_end(m, at);
		mb_align(m);
		return;
	default:	/* nests in nests */
		at = nest_start(m, type | NLA_F_NESTED);
		if (depth < 60)
			put_kind(m, (uint16_t)(chance(70) ? rnd(IBCKPT_A_MAX + 2) : r64()) |
				 NLA_F_NESTED, chance(85) ? AK_DEEP : (enum ak)rnd(AK_DEEP), depth + 1);
		nest_end(m, at);
		return;
	}
	buf = malloc(n ? n : 1);
	rbytes(buf, n);
	put_attr(m, type, buf, n);
	free(buf);
}

static uint16_t pick_type(void)
{
	uint16_t t;

	if (chance(75))
		t = (uint16_t)rnd(IBCKPT_A_MAX + 3);
	else if (chance(70))
		t = (uint16_t)rnd(64);
	else
		t = (uint16_t)r64() & NLA_TYPE_MASK;
	if (chance(8))
		t |= NLA_F_NESTED;
	if (chance(5))
		t |= NLA_F_NET_BYTEORDER;
	return t;
}

static void fuzz_attrs(struct mb *m, unsigned int cmd)
{
	size_t start = m->len, last = m->len;
	unsigned int n = rnd(10);
	struct nlattr a;

	if (chance(40)) {
		clean_attrs(m, cmd);
		n = rnd(4);
	}
	while (n--) {
		last = m->len;
		put_kind(m, pick_type(), chance(40) ? AK_GOOD : (enum ak)rnd(AK_N), 0);
		if (chance(10) && m->len > last) {	/* the same attribute twice */
			size_t l = m->len - last;
			uint8_t *dup = malloc(l);

			memcpy(dup, m->b + last, l);
			mb_put(m, dup, l);
			free(dup);
		}
	}
	/* flip bytes (never in a privileged FREEZE: a flipped id is not ours) */
	if (m->len > start && chance(10) && !(SAFE && cmd == IBCKPT_CMD_FREEZE))
		for (unsigned int i = 1 + rnd(4); i; i--)
			m->b[start + rnd(m->len - start)] ^= (uint8_t)(1 + rnd(255));
	if (chance(5))	/* bytes that are no attribute */
		mb_put(m, "\x01\x02\x03", 1 + rnd(3));
	if (chance(5)) {	/* an attribute longer than the message */
		a.nla_len = (uint16_t)(NLA_HDRLEN + 4 + rnd(200));
		a.nla_type = pick_type();
		mb_put(m, &a, sizeof(a));
		mb_put(m, NULL, 4);
	}
}

/* What one message the kernel parses asked, and what it got. */
struct pend {
	size_t off;		/* in the datagram */
	uint32_t seq, len;
	uint16_t type, flags;
	uint8_t cmd;
	bool req;		/* NLM_F_REQUEST and not a control type */
	bool family;		/* for "ibckpt" */
	bool hdr_ok;		/* long enough for a genl header */
	bool dump;
	bool clean;		/* built by us, policy-valid attributes */
	int want, want2;	/* errno expected (0: success), -1 unknown; want2 also fine */
	bool done;
	int err;
	unsigned int data;
	uint64_t sel;		/* session selected by id, 0 if none */
	bool kview;		/* SNAPSHOT_GET asked for the kernel's view */
	/* SNAPSHOT_GET: the snapshot being reassembled */
	bool s_open;
	uint32_t s_tgid, s_total, s_next;
	uint64_t s_hash, s_session, s_nrec;
};

struct built {
	size_t off;
	bool clean;
	uint64_t sel;
	bool kview;
};

#define MAXP 48
struct xchg {
	struct nls *s;
	struct pend p[MAXP];
	unsigned int n;
	bool lossy;
	bool dump_running;	/* a dump may be running on the socket */
};

/* Build one request at the end of @m; *b says what it is. */
static void build_req(struct mb *m, struct nls *s, bool clean, int cmd_in, int dump_in,
		      struct built *b)
{
	struct nlmsghdr h = { 0 };
	struct genlmsghdr g = { .version = IBCKPT_GENL_VERSION };
	size_t start = m->len;
	unsigned int cmd;
	bool dump;
	uint32_t len;

	b->off = start;
	b->clean = clean;
	b->sel = 0;
	cmd = cmd_in >= 0 ? (unsigned int)cmd_in :
	      chance(88) ? rnd(IBCKPT_CMD_MAX + 3) : rnd(256);
	/* privileged, a command added since this fuzzer was written could act on anyone */
	if (SAFE && cmd > IBCKPT_CMD_SNAPSHOT_GET && OPCAPS[cmd & 255])
		cmd = IBCKPT_CMD_UNSPEC;
	if (dump_in >= 0)
		dump = dump_in;
	else if (cmd_caps(cmd) && chance(90))
		dump = cmd_caps(cmd) == GENL_CMD_CAP_DUMP;
	else
		dump = chance(50);
	h.nlmsg_type = FAMILY;
	h.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0) | (chance(85) ? NLM_F_ACK : 0);
	h.nlmsg_seq = s->seq++;
	g.cmd = (uint8_t)cmd;
	if (!clean) {
		if (chance(8))
			h.nlmsg_type = chance(50) ? (uint16_t)(NOFAMILY + rnd(16)) :
				       (uint16_t)rnd(NLMSG_MIN_TYPE);
		if (chance(15))
			h.nlmsg_flags ^= (uint16_t)(1u << rnd(16));
		if (chance(5))
			h.nlmsg_flags = (uint16_t)r64();
		if (chance(5))
			h.nlmsg_pid = (uint32_t)r64();
		if (chance(10))
			g.version = (uint8_t)r64();
		if (chance(10))
			g.reserved = (uint16_t)r64();
	}
	mb_put(m, &h, sizeof(h));
	mb_put(m, &g, sizeof(g));
	b->kview = !clean;
	if (clean) {
		b->sel = clean_attrs(m, cmd);
		b->kview = KVIEW_ASKED;
	} else if (chance(97)) {
		fuzz_attrs(m, cmd);
	}
	len = (uint32_t)(m->len - start);
	if (!clean && chance(10)) {	/* a length that lies */
		switch (rnd(5)) {
		case 0:
			len = rnd(NLMSG_HDRLEN);
			break;
		case 1:
			len = NLMSG_HDRLEN + rnd(GENL_HDRLEN);
			break;
		case 2:
			len = len > NLMSG_HDRLEN ? NLMSG_HDRLEN + rnd(len - NLMSG_HDRLEN) : len;
			break;
		case 3:
			len += 1 + rnd(64);
			break;
		default:
			len = (uint32_t)r64();
			break;
		}
	}
	memcpy(m->b + start, &len, 4);
	mb_align(m);
}

/*
 * The messages of @d as netlink_rcv_skb() walks them, with what each must
 * get. Where the walk meets a message we did not build (a lying length
 * made the kernel see one in our bytes), it is given a type that names no
 * other family, and, when privileged, a FREEZE among them is not a request.
 */
static void walk(struct xchg *x, uint8_t *d, size_t n, const struct built *b, unsigned int nb)
{
	size_t off = 0, step;
	struct nlmsghdr h;
	struct pend *p;
	unsigned int i;
	uint16_t reserved, fl;
	bool ours;

	while (n - off >= NLMSG_ALIGN(NLMSG_HDRLEN) && x->n < MAXP) {
		memcpy(&h, d + off, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > n - off)
			return;
		ours = false;
		p = &x->p[x->n++];
		memset(p, 0, sizeof(*p));
		for (i = 0; i < nb; i++)
			if (b[i].off == off) {
				ours = true;
				p->clean = b[i].clean;
				p->sel = b[i].sel;
				p->kview = b[i].kview;
			}
		if (!ours && h.nlmsg_type >= NLMSG_MIN_TYPE && h.nlmsg_type != FAMILY &&
		    h.nlmsg_type < NOFAMILY) {
			h.nlmsg_type = FAMILY;
			memcpy(d + off + 4, &h.nlmsg_type, 2);
		}
		if (!ours && SAFE && h.nlmsg_type == FAMILY && h.nlmsg_len > NLMSG_HDRLEN &&
		    (d[off + NLMSG_HDRLEN] == IBCKPT_CMD_FREEZE ||
		     (d[off + NLMSG_HDRLEN] > IBCKPT_CMD_SNAPSHOT_GET &&
		      OPCAPS[d[off + NLMSG_HDRLEN]]))) {
			h.nlmsg_flags &= (uint16_t)~NLM_F_REQUEST;
			memcpy(d + off + 6, &h.nlmsg_flags, 2);
		}
		if (!ours)
			p->kview = true;	/* who knows what the bytes asked for */
		p->off = off;
		p->seq = h.nlmsg_seq;
		p->len = h.nlmsg_len;
		p->type = h.nlmsg_type;
		p->flags = h.nlmsg_flags;
		p->want = -1;
		p->want2 = -1;
		p->req = (h.nlmsg_flags & NLM_F_REQUEST) && h.nlmsg_type >= NLMSG_MIN_TYPE;
		if (!p->req) {
			p->want = 0;	/* acked if NLM_F_ACK, nothing else */
		} else if (h.nlmsg_type != FAMILY) {
			p->want = ENOENT;
		} else {
			p->family = true;
			if (h.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
				p->want = EINVAL;
			} else {
				p->hdr_ok = true;
				p->cmd = d[off + NLMSG_HDRLEN];
				p->dump = (h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
				memcpy(&reserved, d + off + NLMSG_HDRLEN + 2, 2);
				fl = p->dump ? h.nlmsg_flags & ~NLM_F_DUMP : h.nlmsg_flags;
				if (reserved || (fl & ~(NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO))) {
					/*
					 * genl_header_check(): the family sets no
					 * resv_start_op, so every command's header
					 * is checked, before the command is looked up
					 */
					p->want = EINVAL;
				} else if (!(cmd_caps(p->cmd) & (p->dump ? GENL_CMD_CAP_DUMP :
								 GENL_CMD_CAP_DO))) {
					p->want = EOPNOTSUPP;
				} else if (p->clean && !PRIV && cmd_privileged(p->cmd)) {
					p->want = EPERM;
					/* a dump start on a socket with one running */
					if (p->dump && x->dump_running)
						p->want2 = EBUSY;
				} else if (p->clean && p->cmd == IBCKPT_CMD_GET_VERSION) {
					p->want = 0;
				} else if (p->clean && p->cmd == IBCKPT_CMD_PROC_GET &&
					   !x->dump_running) {
					p->want = 0;
				}
				if (p->dump && (cmd_caps(p->cmd) & GENL_CMD_CAP_DUMP) &&
				    p->want != EPERM && p->want != EINVAL)
					x->dump_running = true;
			}
		}
		step = NLMSG_ALIGN(h.nlmsg_len);
		off += step > n - off ? n - off : step;
	}
}

static struct pend *find_pend(struct xchg *x, const struct nlmsghdr *h, const struct nlmsghdr *echo)
{
	struct pend *best = NULL;

	for (unsigned int i = 0; i < x->n; i++) {
		struct pend *p = &x->p[i];

		if (p->seq != h->nlmsg_seq)
			continue;
		if (echo && (echo->nlmsg_type != p->type || echo->nlmsg_flags != p->flags ||
			     echo->nlmsg_len != p->len))
			continue;
		if (!best || (best->done && !p->done))
			best = p;
	}
	return best;
}

enum { K_ANY, K_U32, K_U64, K_STR, K_NEST, K_BIN, K_PAD };

static const uint8_t TOP_SPEC[IBCKPT_A_MAX + 1] = {
	[IBCKPT_A_VERSION] = K_STR, [IBCKPT_A_ABI] = K_U32, [IBCKPT_A_PROC] = K_NEST,
	[IBCKPT_A_PGID] = K_U32, [IBCKPT_A_TIMEOUT_MS] = K_U32, [IBCKPT_A_FLAGS] = K_U32,
	[IBCKPT_A_WATCHDOG_MS] = K_U32, [IBCKPT_A_SESSION_ID] = K_U64,
	[IBCKPT_A_SESSION] = K_NEST, [IBCKPT_A_THREAD] = K_NEST, [IBCKPT_A_PAD] = K_PAD,
	[IBCKPT_A_SNAP_TGID] = K_U32, [IBCKPT_A_SNAP_TOTAL] = K_U32,
	[IBCKPT_A_SNAP_OFFSET] = K_U32, [IBCKPT_A_SNAP_DATA] = K_BIN,
	[IBCKPT_A_JOB_TYPE] = K_U32, [IBCKPT_A_JOB_ID] = K_U32, [IBCKPT_A_CGROUP_FD] = K_U32,
#if KVIEW
	[IBCKPT_A_KPROC] = K_NEST, [IBCKPT_A_KQP] = K_NEST,
#endif
};

static const uint8_t PROC_SPEC[IBCKPT_PROC_A_MAX + 1] = {
	[IBCKPT_PROC_A_TGID] = K_U32, [IBCKPT_PROC_A_PGID] = K_U32,
	[IBCKPT_PROC_A_CTRL_TID] = K_U32, [IBCKPT_PROC_A_COMM] = K_STR,
};

static const uint8_t SESSION_SPEC[IBCKPT_SESSION_A_MAX + 1] = {
	[IBCKPT_SESSION_A_ID] = K_U64, [IBCKPT_SESSION_A_PGID] = K_U32,
	[IBCKPT_SESSION_A_STATE] = K_U32, [IBCKPT_SESSION_A_FLAGS] = K_U32,
	[IBCKPT_SESSION_A_THREADS] = K_U32, [IBCKPT_SESSION_A_PARKED] = K_U32,
	[IBCKPT_SESSION_A_PENDING] = K_U32, [IBCKPT_SESSION_A_EXITED] = K_U32,
	[IBCKPT_SESSION_A_FREEZE_NS] = K_U64, [IBCKPT_SESSION_A_PAD] = K_PAD,
	[IBCKPT_SESSION_A_PROVIDERS] = K_U32, [IBCKPT_SESSION_A_QUIESCED] = K_U32,
	[IBCKPT_SESSION_A_DRAINED] = K_U64, [IBCKPT_SESSION_A_OUTSTANDING] = K_U32,
	[IBCKPT_SESSION_A_QUIESCE_ERR] = K_U32, [IBCKPT_SESSION_A_QUIESCE_PID] = K_U32,
	[IBCKPT_SESSION_A_JOB_TYPE] = K_U32, [IBCKPT_SESSION_A_JOB_ID] = K_U32,
	[IBCKPT_SESSION_A_CGROUP] = K_STR, [IBCKPT_SESSION_A_PROCS] = K_U32,
#if KVIEW
	[IBCKPT_SESSION_A_QUIESCE_MSG] = K_STR, [IBCKPT_SESSION_A_QUIESCE_QPN] = K_U32,
#endif
};

static const uint8_t THREAD_SPEC[IBCKPT_THREAD_A_MAX + 1] = {
	[IBCKPT_THREAD_A_TID] = K_U32, [IBCKPT_THREAD_A_TGID] = K_U32,
	[IBCKPT_THREAD_A_STATE] = K_U32, [IBCKPT_THREAD_A_USER_IP] = K_U64,
	[IBCKPT_THREAD_A_SYSCALL] = K_U32, [IBCKPT_THREAD_A_PAD] = K_PAD,
};

#if KVIEW
static const uint8_t KPROC_SPEC[IBCKPT_KPROC_A_MAX + 1] = {
	[IBCKPT_KPROC_A_FLAGS] = K_U32, [IBCKPT_KPROC_A_PINNED] = K_U64,
	[IBCKPT_KPROC_A_QPS] = K_U32, [IBCKPT_KPROC_A_PAD] = K_PAD,
};

static const uint8_t KQP_SPEC[IBCKPT_KQP_A_MAX + 1] = {
	[IBCKPT_KQP_A_HANDLE] = K_U32, [IBCKPT_KQP_A_DEVICE] = K_STR, [IBCKPT_KQP_A_QPN] = K_U32,
	[IBCKPT_KQP_A_OWNER] = K_U32, [IBCKPT_KQP_A_TYPE] = K_U32, [IBCKPT_KQP_A_PORT] = K_U32,
	[IBCKPT_KQP_A_STATE] = K_U32, [IBCKPT_KQP_A_DEST_QPN] = K_U32,
	[IBCKPT_KQP_A_SQ_PSN] = K_U32, [IBCKPT_KQP_A_RQ_PSN] = K_U32,
	[IBCKPT_KQP_A_QUERY_ERR] = K_U32,
};
#endif

/*
 * Parse attributes the kernel wrote: aligned, within bounds, each known
 * (1..@max), once, with its type's size. @tb gets them by type.
 */
static bool parse_attrs(const uint8_t *p, size_t len, const uint8_t *spec, unsigned int max,
			const struct nlattr **tb, const char *where)
{
	const struct nlattr *a;
	unsigned int t;
	size_t dl, step;
	bool ok = true;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (len) {
		if (len < NLA_HDRLEN) {
			FAIL("%s: %zu stray bytes after the attributes", where, len);
			return false;
		}
		a = (const struct nlattr *)p;
		if (a->nla_len < NLA_HDRLEN || a->nla_len > len) {
			FAIL("%s: attribute length %u with %zu bytes left", where, a->nla_len, len);
			return false;
		}
		t = a->nla_type & NLA_TYPE_MASK;
		dl = a->nla_len - NLA_HDRLEN;
		if (!t || t > max) {
			FAIL("%s: unknown attribute %u (%zu bytes)", where, t, dl);
			ok = false;
		} else {
			if (tb[t] && spec[t] != K_PAD) {
				FAIL("%s: attribute %u twice", where, t);
				ok = false;
			}
			tb[t] = a;
			switch (spec[t]) {
			case K_U32:
				ok &= dl == 4;
				break;
			case K_U64:
				ok &= dl == 8;
				break;
			case K_PAD:
				ok &= dl == 0;
				break;
			case K_STR:
				ok &= dl >= 1 && ((const char *)(a + 1))[dl - 1] == 0 &&
				      strlen((const char *)(a + 1)) == dl - 1;
				break;
			}
			if (!ok)
				FAIL("%s: attribute %u: %zu bytes, not its type's", where, t, dl);
			if (spec[t] != K_NEST && (a->nla_type & NLA_F_NESTED)) {
				FAIL("%s: attribute %u flagged nested", where, t);
				ok = false;
			}
		}
		step = NLA_ALIGN(a->nla_len);
		if (step > len) {
			FAIL("%s: last attribute not padded", where);
			return false;
		}
		p += step;
		len -= step;
	}
	return ok;
}

static uint32_t get32(const struct nlattr *a)
{
	uint32_t v = 0;

	if (a)
		memcpy(&v, a + 1, 4);
	return v;
}

static uint64_t get64(const struct nlattr *a)
{
	uint64_t v = 0;

	if (a)
		memcpy(&v, a + 1, 8);
	return v;
}

#define FNV	0x100000001b3ull
static uint64_t hstep(uint64_t h, const uint8_t *p, size_t n)
{
	uint64_t w;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * FNV;
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * FNV;
	}
	return h;
}

static void check_session(const struct pend *p, const struct nlattr *nest)
{
	const struct nlattr *t[IBCKPT_SESSION_A_MAX + 1];
	uint32_t st, jt;

	if (!nest) {
		FAIL("SESSION_GET reply without IBCKPT_A_SESSION");
		return;
	}
	if (!parse_attrs((const uint8_t *)(nest + 1), nest->nla_len - NLA_HDRLEN, SESSION_SPEC,
			 IBCKPT_SESSION_A_MAX, t, "session"))
		return;
	STAT(ST_SESSIONS_SEEN);
	if (!t[IBCKPT_SESSION_A_ID] || !t[IBCKPT_SESSION_A_STATE] ||
	    !t[IBCKPT_SESSION_A_JOB_TYPE] || !t[IBCKPT_SESSION_A_THREADS]) {
		FAIL("session without its id, state, job type or thread count");
		return;
	}
	know_session(get64(t[IBCKPT_SESSION_A_ID]));
	if (p->sel && get64(t[IBCKPT_SESSION_A_ID]) != p->sel)
		FAIL("SESSION_GET of session %" PRIu64 " lists session %" PRIu64, p->sel,
		     get64(t[IBCKPT_SESSION_A_ID]));
	st = get32(t[IBCKPT_SESSION_A_STATE]);
	jt = get32(t[IBCKPT_SESSION_A_JOB_TYPE]);
	if (st < IBCKPT_STATE_FREEZING || st > IBCKPT_STATE_ABORTED)
		FAIL("session state %u", st);
	if (jt < IBCKPT_JOB_PGRP || jt > IBCKPT_JOB_CGROUP)
		FAIL("session job type %u", jt);
	if (jt == IBCKPT_JOB_CGROUP && t[IBCKPT_SESSION_A_JOB_ID])
		FAIL("a cgroup session with a job id");
	if (t[IBCKPT_SESSION_A_CGROUP] && jt != IBCKPT_JOB_CGROUP)
		FAIL("a cgroup path in a job of type %u", jt);
	if (t[IBCKPT_SESSION_A_PGID] && jt != IBCKPT_JOB_PGRP)
		FAIL("a pgid in a job of type %u", jt);
	if (t[IBCKPT_SESSION_A_QUIESCE_PID] && !t[IBCKPT_SESSION_A_QUIESCE_ERR])
		FAIL("QUIESCE_PID without QUIESCE_ERR");
	if (t[IBCKPT_SESSION_A_QUIESCE_ERR] &&
	    (!get32(t[IBCKPT_SESSION_A_QUIESCE_ERR]) ||
	     get32(t[IBCKPT_SESSION_A_QUIESCE_ERR]) > MAX_ERRNO))
		FAIL("quiesce error %u is no errno", get32(t[IBCKPT_SESSION_A_QUIESCE_ERR]));
	if ((uint64_t)get32(t[IBCKPT_SESSION_A_PENDING]) + get32(t[IBCKPT_SESSION_A_PARKED]) +
	    get32(t[IBCKPT_SESSION_A_EXITED]) > get32(t[IBCKPT_SESSION_A_THREADS]))
		FAIL("session %" PRIu64 ": %u pending + %u parked + %u exited > %u threads",
		     get64(t[IBCKPT_SESSION_A_ID]), get32(t[IBCKPT_SESSION_A_PENDING]),
		     get32(t[IBCKPT_SESSION_A_PARKED]), get32(t[IBCKPT_SESSION_A_EXITED]),
		     get32(t[IBCKPT_SESSION_A_THREADS]));
	if (get32(t[IBCKPT_SESSION_A_QUIESCED]) > get32(t[IBCKPT_SESSION_A_PROVIDERS]))
		FAIL("session %" PRIu64 ": %u providers quiesced of %u asked",
		     get64(t[IBCKPT_SESSION_A_ID]), get32(t[IBCKPT_SESSION_A_QUIESCED]),
		     get32(t[IBCKPT_SESSION_A_PROVIDERS]));
	if (st == IBCKPT_STATE_FROZEN && !get64(t[IBCKPT_SESSION_A_FREEZE_NS]))
		FAIL("a frozen session with no freeze time");
}

static void check_thread(const struct nlattr *nest)
{
	const struct nlattr *t[IBCKPT_THREAD_A_MAX + 1];
	uint32_t st;

	if (!nest) {
		FAIL("THREAD_GET reply without IBCKPT_A_THREAD");
		return;
	}
	if (!parse_attrs((const uint8_t *)(nest + 1), nest->nla_len - NLA_HDRLEN, THREAD_SPEC,
			 IBCKPT_THREAD_A_MAX, t, "thread"))
		return;
	STAT(ST_THREADS_SEEN);
	st = get32(t[IBCKPT_THREAD_A_STATE]);
	if (!t[IBCKPT_THREAD_A_TID] || st < IBCKPT_THREAD_PENDING || st > IBCKPT_THREAD_EXITED)
		FAIL("thread without tid or with state %u", st);
	if (!PRIV && (t[IBCKPT_THREAD_A_USER_IP] || t[IBCKPT_THREAD_A_SYSCALL]))
		FAIL("THREAD_GET tells an unprivileged reader where thread %u is parked",
		     get32(t[IBCKPT_THREAD_A_TID]));
}

static void check_proc(const struct nlattr *nest)
{
	const struct nlattr *t[IBCKPT_PROC_A_MAX + 1];

	if (!nest) {
		FAIL("PROC_GET reply without IBCKPT_A_PROC");
		return;
	}
	if (!parse_attrs((const uint8_t *)(nest + 1), nest->nla_len - NLA_HDRLEN, PROC_SPEC,
			 IBCKPT_PROC_A_MAX, t, "proc"))
		return;
	STAT(ST_PROCS_SEEN);
	if (!get32(t[IBCKPT_PROC_A_TGID]) || !get32(t[IBCKPT_PROC_A_CTRL_TID]) ||
	    !t[IBCKPT_PROC_A_COMM] || t[IBCKPT_PROC_A_COMM]->nla_len - NLA_HDRLEN > 16)
		FAIL("registered process without tgid, control thread or comm");
}

/* The victim's last snapshot, if it is that of @session: its length and hash. */
static bool victim_snap(uint64_t session, uint64_t *len, uint64_t *hash, uint64_t *nrec)
{
	uint64_t a = atomic_load(&SH->v_session), b;

	if (a != session)
		return false;
	*len = atomic_load(&SH->v_len);
	*hash = atomic_load(&SH->v_hash);
	*nrec = atomic_load(&SH->v_nrec);
	b = atomic_load(&SH->v_session);
	return a == b;
}

static void check_piece(struct pend *p, const struct nlattr **tb)
{
	uint32_t tgid = get32(tb[IBCKPT_A_SNAP_TGID]), total = get32(tb[IBCKPT_A_SNAP_TOTAL]);
	uint32_t off = get32(tb[IBCKPT_A_SNAP_OFFSET]), n;
	const uint8_t *d;
	struct ibckpt_snap_hdr h;
	uint64_t len, hash, nrec;

	if (!tb[IBCKPT_A_SNAP_TGID] || !tb[IBCKPT_A_SNAP_TOTAL] || !tb[IBCKPT_A_SNAP_OFFSET] ||
	    !tb[IBCKPT_A_SNAP_DATA]) {
		FAIL("snapshot piece without tgid, total, offset or data");
		return;
	}
	STAT(ST_SNAP_PIECES);
	n = tb[IBCKPT_A_SNAP_DATA]->nla_len - NLA_HDRLEN;
	d = (const uint8_t *)(tb[IBCKPT_A_SNAP_DATA] + 1);
	if (!n || n > SNAP_PIECE || total < SNAP_HDR || total > IBCKPT_SNAP_MAX_LEN ||
	    off > total || n > total - off) {
		FAIL("snapshot piece of %u bytes at %u of %u", n, off, total);
		p->s_open = false;
		return;
	}
	if (p->s_open && tgid == p->s_tgid) {
		if (off != p->s_next || total != p->s_total) {
			FAIL("snapshot of %u: piece at %u of %u, expected %u of %u", tgid, off,
			     total, p->s_next, p->s_total);
			p->s_open = false;
			return;
		}
	} else {
		if (p->s_open)
			FAIL("snapshot of %u ends at %u of %u", p->s_tgid, p->s_next, p->s_total);
		if (off) {
			FAIL("snapshot of %u starts at %u", tgid, off);
			p->s_open = false;
			return;
		}
		p->s_open = true;
		p->s_tgid = tgid;
		p->s_total = total;
		p->s_hash = 0xcbf29ce484222325ull;
	}
	if (!off) {
		memcpy(&h, d, sizeof(h));
		if (h.magic != IBCKPT_SNAP_MAGIC || h.version != IBCKPT_SNAP_VERSION ||
		    h.total_len != total || h.tgid != tgid || (p->sel && h.session != p->sel))
			FAIL("snapshot of %u: header magic %#x version %u total %" PRIu64
			     " tgid %u session %" PRIu64 " (dump of %" PRIu64 ", total %u)",
			     tgid, h.magic, h.version, (uint64_t)h.total_len, h.tgid,
			     (uint64_t)h.session, p->sel, total);
		p->s_session = h.session;
		p->s_nrec = h.n_records;
		p->s_hash = hstep(p->s_hash, d + SNAP_HDR, n - SNAP_HDR);
	} else {
		p->s_hash = hstep(p->s_hash, d, n);
	}
	p->s_next = off + n;
	if (p->s_next < total)
		return;
	p->s_open = false;
	STAT(ST_SNAP_WHOLE);
	if ((pid_t)tgid == atomic_load(&SH->v_pid) && victim_snap(p->s_session, &len, &hash, &nrec)) {
		if (len != total || hash != p->s_hash || nrec != p->s_nrec)
			FAIL("snapshot of session %" PRIu64 ": dumped %u bytes hash %#" PRIx64
			     " records %" PRIu64 ", the provider gave %" PRIu64 " hash %#" PRIx64
			     " records %" PRIu64, p->s_session, total, p->s_hash, p->s_nrec, len,
			     hash, nrec);
		else
			STAT(ST_SNAP_MATCHED);
	}
}

#if KVIEW
/* The kernel's view of a process of the dumped job: after its snapshot. */
static void check_kview(struct pend *p, const struct nlattr **tb)
{
	const struct nlattr *k[IBCKPT_KQP_A_MAX + IBCKPT_KPROC_A_MAX + 2];
	const struct nlattr *n = tb[IBCKPT_A_KPROC] ? tb[IBCKPT_A_KPROC] : tb[IBCKPT_A_KQP];
	bool proc = tb[IBCKPT_A_KPROC];

	if (!p->kview)
		FAIL("the kernel's view, not asked for");
	if (!tb[IBCKPT_A_SNAP_TGID] || (tb[IBCKPT_A_KPROC] && tb[IBCKPT_A_KQP]) ||
	    tb[IBCKPT_A_SNAP_DATA])
		FAIL("a kernel view message with tgid %s, KPROC %s, KQP %s, data %s",
		     tb[IBCKPT_A_SNAP_TGID] ? "yes" : "no", tb[IBCKPT_A_KPROC] ? "yes" : "no",
		     tb[IBCKPT_A_KQP] ? "yes" : "no", tb[IBCKPT_A_SNAP_DATA] ? "yes" : "no");
	if (p->s_open && get32(tb[IBCKPT_A_SNAP_TGID]) == p->s_tgid)
		FAIL("the kernel's view of %u in the middle of its snapshot (%u of %u)",
		     p->s_tgid, p->s_next, p->s_total);
	if (!parse_attrs((const uint8_t *)(n + 1), n->nla_len - NLA_HDRLEN,
			 proc ? KPROC_SPEC : KQP_SPEC, proc ? IBCKPT_KPROC_A_MAX : IBCKPT_KQP_A_MAX,
			 k, proc ? "kproc" : "kqp"))
		return;
	if (proc && (!k[IBCKPT_KPROC_A_FLAGS] || !k[IBCKPT_KPROC_A_QPS] ||
		     (get32(k[IBCKPT_KPROC_A_FLAGS]) & IBCKPT_KPROC_F_NO_SNAPSHOT &&
		      get32(k[IBCKPT_KPROC_A_QPS]))))
		FAIL("KPROC: flags %#x, %u QPs", get32(k[IBCKPT_KPROC_A_FLAGS]),
		     get32(k[IBCKPT_KPROC_A_QPS]));
	if (!proc && (!k[IBCKPT_KQP_A_HANDLE] || !k[IBCKPT_KQP_A_DEVICE] || !k[IBCKPT_KQP_A_QPN]))
		FAIL("KQP without handle, device or QPN");
}
#endif

static void know_ours(uint64_t id)
{
	if (NOURS < ARRAY_SIZE(OURS))
		OURS[NOURS++] = id;
}

static void check_data(struct pend *p, const struct nlmsghdr *h)
{
	const struct nlattr *tb[IBCKPT_A_MAX + 1];
	const struct genlmsghdr *g = NLMSG_DATA(h);
	char where[48];

	if (!p->req || !p->family || !p->hdr_ok || !cmd_caps(p->cmd)) {
		FAIL("a data reply (type %u) to a message that has none (type %u flags %#x cmd %u)",
		     h->nlmsg_type, p->type, p->flags, p->cmd);
		return;
	}
	if (h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN)) {
		FAIL("a reply of %u bytes has no genl header", h->nlmsg_len);
		return;
	}
	if (g->cmd != p->cmd || g->version != IBCKPT_GENL_VERSION)
		FAIL("reply cmd %u version %u to cmd %u", g->cmd, g->version, p->cmd);
	if (p->dump != !!(h->nlmsg_flags & NLM_F_MULTI))
		FAIL("reply flags %#x to a %s", h->nlmsg_flags, p->dump ? "dump" : "doit");
	if (p->done)
		FAIL("a reply after the final answer to seq %u", p->seq);
	if (!PRIV && cmd_privileged(p->cmd))
		FAIL("command %u answered without privilege", p->cmd);
	p->data++;
	snprintf(where, sizeof(where), "reply to cmd %u", p->cmd);
	if (!parse_attrs((const uint8_t *)g + GENL_HDRLEN, h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN),
			 TOP_SPEC, IBCKPT_A_MAX, tb, where))
		return;
	switch (p->cmd) {
	case IBCKPT_CMD_GET_VERSION:
		if (!tb[IBCKPT_A_VERSION] || get32(tb[IBCKPT_A_ABI]) != IBCKPT_ABI_VERSION)
			FAIL("GET_VERSION: no version, or ABI %u", get32(tb[IBCKPT_A_ABI]));
		break;
	case IBCKPT_CMD_PROC_GET:
		check_proc(tb[IBCKPT_A_PROC]);
		break;
	case IBCKPT_CMD_FREEZE:
		if (!tb[IBCKPT_A_SESSION_ID] || !get64(tb[IBCKPT_A_SESSION_ID])) {
			FAIL("FREEZE succeeded without a session id");
			break;
		}
		STAT(ST_FREEZE_OK);
		know_session(get64(tb[IBCKPT_A_SESSION_ID]));
		know_ours(get64(tb[IBCKPT_A_SESSION_ID]));
		break;
	case IBCKPT_CMD_SESSION_GET:
		check_session(p, tb[IBCKPT_A_SESSION]);
		break;
	case IBCKPT_CMD_THREAD_GET:
		check_thread(tb[IBCKPT_A_THREAD]);
		break;
	case IBCKPT_CMD_SNAPSHOT_GET:
#if KVIEW
		if (tb[IBCKPT_A_KPROC] || tb[IBCKPT_A_KQP]) {
			check_kview(p, tb);
			break;
		}
#endif
		check_piece(p, tb);
		break;
	default:	/* a command added to the ABI since: its attributes parsed */
		if (p->cmd > IBCKPT_CMD_MAX)
			FAIL("a reply to command %u", p->cmd);
	}
}

/* Extended ack attributes after an error or DONE. */
static void check_tlvs(const uint8_t *t, size_t len, const struct pend *p)
{
	const struct nlattr *a;
	size_t dl;

	while (len >= NLA_HDRLEN) {
		a = (const struct nlattr *)t;
		if (a->nla_len < NLA_HDRLEN || a->nla_len > len) {
			FAIL("extended ack: attribute length %u with %zu left", a->nla_len, len);
			return;
		}
		dl = a->nla_len - NLA_HDRLEN;
		switch (a->nla_type & NLA_TYPE_MASK) {
		case NLMSGERR_ATTR_MSG:
			if (!dl || ((const char *)(a + 1))[dl - 1])
				FAIL("extended ack message without NUL");
			break;
		case NLMSGERR_ATTR_OFFS:
			if (dl != 4 || get32(a) >= p->len)
				FAIL("extended ack offset %u in a message of %u", get32(a), p->len);
			break;
		case NLMSGERR_ATTR_COOKIE:
			if (dl > MAX_COOKIE)
				FAIL("extended ack cookie of %zu bytes", dl);
			if (dl == sizeof(struct ibckpt_busy) && p->cmd != IBCKPT_CMD_FREEZE)
				FAIL("a busy cookie for command %u", p->cmd);
			break;
		}
		len -= (size_t)NLA_ALIGN(a->nla_len) < len ? (size_t)NLA_ALIGN(a->nla_len) : len;
		t += NLA_ALIGN(a->nla_len);
	}
	if (len)
		FAIL("extended ack: %zu stray bytes", len);
}

static void got_final(struct pend *p, int err, const char *what)
{
	int e = -err;

	if (err > 0 || err < -MAX_ERRNO) {
		FAIL("%s carries %d, not a negative errno", what, err);
		return;
	}
	atomic_fetch_add(&SH->nl_err[e], 1);
	if (p->done)
		FAIL("a second final answer (%s) to seq %u", what, p->seq);
	p->done = true;
	p->err = e;
	if (e == EPERM)
		STAT(ST_NL_EPERM);
	if (p->cmd == IBCKPT_CMD_THAW && p->family && p->hdr_ok && !e && !p->dump)
		STAT(ST_THAW_OK);
	if (p->want >= 0 && e != p->want && e != p->want2)
		FAIL("%s: got %s, expected %s%s%s (type %u flags %#x cmd %u%s)", what, en(e),
		     en(p->want), p->want2 >= 0 ? " or " : "", p->want2 >= 0 ? en(p->want2) : "",
		     p->type, p->flags, p->cmd, p->clean ? ", well-formed" : "");
	if (!e && !PRIV && cmd_privileged(p->cmd) && p->family && p->hdr_ok && p->req &&
	    cmd_caps(p->cmd))
		FAIL("command %u succeeded without privilege", p->cmd);
}

static void rx_msg(struct xchg *x, const struct nlmsghdr *h)
{
	const struct nlmsgerr *e;
	struct pend *p;
	size_t off;
	int v;

	STAT(ST_NL_REPLIES);
	if (h->nlmsg_pid != x->s->portid)
		FAIL("reply for port %u on port %u", h->nlmsg_pid, x->s->portid);
	if (h->nlmsg_type == NLMSG_ERROR) {
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
			FAIL("NLMSG_ERROR of %u bytes", h->nlmsg_len);
			return;
		}
		e = NLMSG_DATA(h);
		p = find_pend(x, h, &e->msg);
		if (!p) {
			FAIL("NLMSG_ERROR %d for seq %u type %u flags %#x len %u, never sent",
			     e->error, h->nlmsg_seq, e->msg.nlmsg_type, e->msg.nlmsg_flags,
			     e->msg.nlmsg_len);
			return;
		}
		if (e->msg.nlmsg_seq != h->nlmsg_seq)
			FAIL("NLMSG_ERROR echoes seq %u in seq %u", e->msg.nlmsg_seq, h->nlmsg_seq);
		got_final(p, e->error, "NLMSG_ERROR");
		off = NLMSG_LENGTH(sizeof(*e));
		if (!(h->nlmsg_flags & NLM_F_CAPPED))
			off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
		if (off > h->nlmsg_len) {
			FAIL("NLMSG_ERROR of %u bytes echoes %u", h->nlmsg_len, e->msg.nlmsg_len);
			return;
		}
		if (h->nlmsg_flags & NLM_F_ACK_TLVS)
			check_tlvs((const uint8_t *)h + off, h->nlmsg_len - off, p);
		else if (h->nlmsg_len - off >= NLA_HDRLEN)
			FAIL("NLMSG_ERROR with %zu bytes after it", h->nlmsg_len - off);
		if (!e->error && p->req && p->family && p->hdr_ok && p->dump)
			FAIL("an ack of 0 to a dump");
		return;
	}
	p = find_pend(x, h, NULL);
	if (!p) {
		FAIL("message type %u for seq %u, never sent", h->nlmsg_type, h->nlmsg_seq);
		return;
	}
	if (h->nlmsg_type == NLMSG_DONE) {
		if (!p->req || !p->family || !p->dump || h->nlmsg_len < NLMSG_LENGTH(sizeof(int))) {
			FAIL("NLMSG_DONE (%u bytes) for a message that is no dump", h->nlmsg_len);
			return;
		}
		memcpy(&v, NLMSG_DATA(h), sizeof(v));
		got_final(p, v, "NLMSG_DONE");
		/*
		 * the process being dumped lost its snapshot between two rounds
		 * (it left, or a thaw): the dump must say so, never end as if
		 * complete
		 */
		if (p->s_open && v != -EAGAIN)
			FAIL("snapshot of %u ends at %u of %u with NLMSG_DONE %s, not EAGAIN",
			     p->s_tgid, p->s_next, p->s_total, en(-v));
		else if (p->s_open)
			STAT(ST_SNAP_CUT);
		off = NLMSG_LENGTH(sizeof(int));
		if (h->nlmsg_flags & NLM_F_ACK_TLVS)
			check_tlvs((const uint8_t *)h + NLMSG_ALIGN(off),
				   h->nlmsg_len - NLMSG_ALIGN(off), p);
		return;
	}
	if (h->nlmsg_type != FAMILY) {
		FAIL("message of type %u (flags %#x)", h->nlmsg_type, h->nlmsg_flags);
		return;
	}
	check_data(p, h);
}

static _Alignas(8) uint8_t RX[RXBUF];

/* One datagram, within @ms; 1 got one, 0 none, -1 the socket failed. */
static int x_recv(struct xchg *x, int ms, size_t bufsize)
{
	struct pollfd pfd = { .fd = x->s->fd, .events = POLLIN };
	struct iovec iov = { .iov_base = RX, .iov_len = bufsize };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	const struct nlmsghdr *h;
	ssize_t n;
	size_t left, step;
	int r;

	do {
		r = poll(&pfd, 1, ms);
	} while (r < 0 && errno == EINTR);
	if (r <= 0)
		return 0;
	n = recvmsg(x->s->fd, &mh, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		if (errno == ENOBUFS) {	/* replies dropped: nothing to say about them */
			x->lossy = true;
			STAT(ST_NL_LOSSY);
			return 1;
		}
		FAIL("recvmsg: %s", en(-errno));
		return -1;
	}
	if (mh.msg_flags & MSG_TRUNC) {
		x->lossy = true;
		STAT(ST_NL_LOSSY);
		return 1;
	}
	if (!n)
		return 1;
	h = (const struct nlmsghdr *)RX;
	left = (size_t)n;
	while (left >= sizeof(*h)) {
		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > left) {
			FAIL("reply header length %u with %zu bytes left", h->nlmsg_len, left);
			return 1;
		}
		rx_msg(x, h);
		step = NLMSG_ALIGN(h->nlmsg_len);
		if (step > left)
			step = left;
		left -= step;
		h = (const struct nlmsghdr *)((const uint8_t *)h + step);
	}
	if (left)
		FAIL("%zu stray bytes after the replies", left);
	return 1;
}

static bool x_dump_open(const struct xchg *x)
{
	for (unsigned int i = 0; i < x->n; i++) {
		const struct pend *p = &x->p[i];

		if (p->req && p->family && p->hdr_ok && p->dump && !p->done &&
		    (cmd_caps(p->cmd) & GENL_CMD_CAP_DUMP))
			return true;
	}
	return false;
}

/* Send @d (messages described by @b) on @x's socket; false if not sent. */
static bool x_send(struct xchg *x, uint8_t *d, size_t n, const struct built *b, unsigned int nb)
{
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	unsigned int first = x->n;
	ssize_t r;

	walk(x, d, n, b, nb);
	/*
	 * Without an address, the socket's opener must hold the capability
	 * too; with one (NETLINK_SKB_DST), only the sender.
	 */
	if (NODST > 0 || (NODST < 0 && chance(30)))
		r = send(x->s->fd, d, n, 0);
	else
		r = sendto(x->s->fd, d, n, 0, (struct sockaddr *)&k, sizeof(k));
	STAT(ST_NL_MSGS);
	if (r < 0) {
		/* too large for the socket's buffer, or out of memory: nothing sent */
		if (errno != EMSGSIZE && errno != ENOBUFS && errno != ENOMEM &&
		    !(errno == ENODATA && !n))
			FAIL("sendto %zu bytes: %s", n, en(-errno));
		x->n = first;
		return false;
	}
	for (unsigned int i = first; i < x->n; i++) {
		if (x->p[i].clean)
			STAT(ST_NL_CLEAN);
		if (x->p[i].dump && x->p[i].hdr_ok)
			STAT(ST_NL_DUMPS);
	}
	return true;
}

/*
 * Read the answers: all of them, or (@cut >= 0) @cut datagrams, after which
 * the socket is closed under whatever dump runs. Then check that every
 * message that must be answered was (unless replies were dropped).
 */
static void x_finish(struct xchg *x, int cut, size_t bufsize)
{
	int got = 0, r;
	double end = now() + 5;

	for (;;) {
		if (got > 4000 && cut < 0)	/* enough of a long dump: leave the rest */
			cut = got;
		if (cut >= 0 && got >= cut) {
			if (x_dump_open(x))
				STAT(ST_NL_CUT);
			nl_close(x->s);
			nl_open(x->s, true);
			return;
		}
		r = x_recv(x, x_dump_open(x) ? 500 : 0, bufsize);
		if (r < 0)
			break;
		if (r) {
			got++;
			end = now() + 5;	/* a long dump is no hung one */
			continue;
		}
		if (!x_dump_open(x) || now() > end)
			break;
	}
	if (x->lossy || x->s->lossy) {
		nl_close(x->s);
		nl_open(x->s, true);
		return;
	}
	for (unsigned int i = 0; i < x->n; i++) {
		struct pend *p = &x->p[i];
		bool due = (p->flags & NLM_F_ACK) || p->want > 0 ||
			   (p->req && p->family && p->hdr_ok && p->dump) ||
			   /* refused, so answered, even without NLM_F_ACK */
			   (!PRIV && p->req && p->family && p->hdr_ok && cmd_privileged(p->cmd) &&
			    (cmd_caps(p->cmd) & (p->dump ? GENL_CMD_CAP_DUMP : GENL_CMD_CAP_DO)));

		if (due && !p->done)
			FAIL("no answer to type %u flags %#x cmd %u seq %u (%s)", p->type, p->flags,
			     p->cmd, p->seq, p->dump ? "dump" : "doit");
		if (p->done && !p->err && p->clean && p->cmd == IBCKPT_CMD_GET_VERSION &&
		    !p->dump && p->data != 1)
			FAIL("GET_VERSION answered with %u replies", p->data);
	}
	if (x_dump_open(x)) {	/* failed above; do not leave it to the next user */
		nl_close(x->s);
		nl_open(x->s, true);
	}
}

static struct nls *pick_sock(void)
{
	struct nls *s = &SOCKS[rnd(NSOCK)];

	if (s->fd < 0 && nl_open(s, true))
		return NULL;
	return s;
}

/* Requests, clean or fuzzed, one to three in a datagram. */
static void nl_requests(bool clean, int cmd, int dump, int cut)
{
	struct nls *s = pick_sock();
	struct built b[4];
	struct mb m = { 0 };
	struct xchg *x;
	unsigned int n = chance(85) ? 1 : 2 + rnd(2), i;

	if (!s)
		return;
	x = calloc(1, sizeof(*x));
	x->s = s;
	for (i = 0; i < n; i++)
		build_req(&m, s, clean, cmd, dump, &b[i]);
	if (!clean && chance(5))
		m.len = rnd(m.len + 1);	/* cut the datagram anywhere */
	if (x_send(x, m.b, m.len, b, n))
		x_finish(x, cut, chance(95) ? RXBUF : 64 + rnd(8192));
	free(m.b);
	free(x);
}

static void op_nl_fuzz(void)
{
	nl_requests(false, -1, -1, chance(5) ? (int)rnd(3) : -1);
}

static void op_nl_clean(void)
{
	int cmd = chance(92) ? (int)(1 + rnd(IBCKPT_CMD_MAX)) : (int)rnd(256);

	nl_requests(true, cmd, -1, -1);
}

static void op_nl_dump_cut(void)
{
	static const int dumps[] = { IBCKPT_CMD_PROC_GET, IBCKPT_CMD_SESSION_GET,
				     IBCKPT_CMD_THREAD_GET, IBCKPT_CMD_SNAPSHOT_GET };

	nl_requests(chance(70), PICK(dumps), 1, (int)rnd(4));
}

static void op_nl_garbage(void)
{
	struct nls *s = pick_sock();
	struct xchg *x;
	uint8_t d[512];
	size_t n = rnd(sizeof(d));
	struct nlmsghdr h;

	if (!s)
		return;
	rbytes(d, n);
	if (n >= sizeof(h) && chance(70)) {	/* a header the kernel reads on */
		memcpy(&h, d, sizeof(h));
		h.nlmsg_len = (uint32_t)(sizeof(h) + rnd(n - sizeof(h) + 1));
		h.nlmsg_type = chance(80) ? FAMILY : h.nlmsg_type;
		memcpy(d, &h, sizeof(h));
	}
	x = calloc(1, sizeof(*x));
	x->s = s;
	if (x_send(x, d, n, NULL, 0))
		x_finish(x, -1, RXBUF);
	free(x);
}

static void op_nl_reopen(void)
{
	struct nls *s = &SOCKS[rnd(NSOCK)];

	nl_close(s);
	nl_open(s, true);
}

/* A dump, a second one on the same socket while the first runs, the rest. */
static void op_nl_two_dumps(void)
{
	static const int dumps[] = { IBCKPT_CMD_PROC_GET, IBCKPT_CMD_SESSION_GET,
				     IBCKPT_CMD_THREAD_GET, IBCKPT_CMD_SNAPSHOT_GET };
	struct nls *s = pick_sock();
	struct built b;
	struct mb m = { 0 };
	struct xchg *x;
	unsigned int i;

	if (!s)
		return;
	x = calloc(1, sizeof(*x));
	x->s = s;
	for (i = 0; i < 2; i++) {
		m.len = 0;
		build_req(&m, s, chance(80), PICK(dumps), 1, &b);
		b.off = 0;
		if (!x_send(x, m.b, m.len, &b, 1))
			break;
		if (!i)
			x_recv(x, 100, 4096);	/* one datagram of the first */
	}
	x_finish(x, chance(30) ? (int)rnd(3) : -1, RXBUF);
	free(m.b);
	free(x);
}

/* Requests about the victim's job: its group, its tree, a session by id. */
static void victim_attrs(struct mb *m, unsigned int cmd, uint64_t *sel)
{
	switch (rnd(4)) {
	case 0:
	case 1:
		put_u32(m, IBCKPT_A_PGID, (uint32_t)VICTIM);
		break;
	case 2:
		put_u32(m, IBCKPT_A_JOB_TYPE, chance(50) ? IBCKPT_JOB_PGRP : IBCKPT_JOB_TREE);
		put_u32(m, IBCKPT_A_JOB_ID, (uint32_t)VICTIM);
		break;
	default:
		*sel = known_session();
		put_u64(m, IBCKPT_A_SESSION_ID, *sel);
		break;
	}
	if (cmd == IBCKPT_CMD_FREEZE) {
		put_u32(m, IBCKPT_A_TIMEOUT_MS, 200 + rnd(3000));
		if (chance(70)) {
			put_u32(m, IBCKPT_A_FLAGS, IBCKPT_FREEZE_F_PERSIST);
			put_u32(m, IBCKPT_A_WATCHDOG_MS, 500 + rnd(4000));
		}
	}
	if (cmd == IBCKPT_CMD_SNAPSHOT_GET && KVIEW && chance(60)) {
		put_u32(m, IBCKPT_A_FLAGS, 1);
		KVIEW_ASKED = true;
	}
}

/* Freeze the victim (or find it frozen by the loop), look at it, thaw it. */
static void op_nl_victim(void)
{
	static const int cmds[] = { IBCKPT_CMD_FREEZE, IBCKPT_CMD_SESSION_GET,
				    IBCKPT_CMD_THREAD_GET, IBCKPT_CMD_SNAPSHOT_GET,
				    IBCKPT_CMD_THAW };
	struct nls *s = pick_sock();
	struct built b;
	struct mb m = { 0 };
	struct xchg *x;
	bool dump;

	if (!s || VICTIM <= 0)
		return;
	ATTRS_HOOK = victim_attrs;
	for (unsigned int i = 0; i < ARRAY_SIZE(cmds); i++) {
		if ((!i && chance(40)) || (i == 4 && chance(50)))
			continue;
		if (i == 1)
			msleep(rnd(300));	/* time to freeze */
		dump = cmd_caps((unsigned int)cmds[i]) == GENL_CMD_CAP_DUMP;
		x = calloc(1, sizeof(*x));
		x->s = s;
		m.len = 0;
		build_req(&m, s, true, cmds[i], dump, &b);
		if (x_send(x, m.b, m.len, &b, 1))
			x_finish(x, dump && chance(25) ? (int)rnd(4) : -1, RXBUF);
		free(x);
		if (s->fd < 0)
			break;
	}
	ATTRS_HOOK = NULL;
	free(m.b);
}

/* One clean request of @cmd on @s, expecting @want (as PRIV says). */
static void nl_one(struct nls *s, int cmd, int dump)
{
	struct built b;
	struct mb m = { 0 };
	struct xchg *x = calloc(1, sizeof(*x));

	x->s = s;
	build_req(&m, s, true, cmd, dump, &b);
	if (x_send(x, m.b, m.len, &b, 1))
		x_finish(x, -1, RXBUF);
	free(m.b);
	free(x);
}

static void drop_privileges(void)
{
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534)) {
		FAIL("cannot become nobody: %s", en(-errno));
		_exit(1);
	}
	PRIV = false;
}

/*
 * netlink_ns_capable(): the sender needs the capability, and so does the
 * socket's opener unless the message names its destination (sendto()). Root's
 * socket used by nobody, and nobody's socket written to by root without an
 * address (the confused deputy: a privileged program whose output is a
 * netlink socket), must get EPERM for each privileged command.
 */
static void op_nl_creds(void)
{
	struct nls s;
	int sv[2], fd = -1;
	pid_t pid;
	char cb[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb,
			     .msg_controllen = sizeof(cb) };
	struct cmsghdr *c;
	uint64_t cseed = r64();
	struct sockaddr_nl a;
	socklen_t al = sizeof(a);

	if (nl_open(&s, false))
		return;
	pid = fork();
	if (!pid) {
		rng_seed(cseed);
		OPN = "nl-creds child (root's socket)";
		alarm(60);
		drop_privileges();
		nl_one(&s, IBCKPT_CMD_FREEZE, 0);
		nl_one(&s, IBCKPT_CMD_THAW, 0);
		nl_one(&s, IBCKPT_CMD_SNAPSHOT_GET, 1);
		_exit(0);
	}
	check_child(pid, "root's socket used by nobody", 60);
	nl_close(&s);

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return;
	pid = fork();
	if (!pid) {
		alarm(30);
		drop_privileges();
		if (nl_open(&s, false))
			_exit(1);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &s.fd, sizeof(int));
		_exit(sendmsg(sv[1], &mh, 0) == 1 ? 0 : 1);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &mh, 0) == 1 && (c = CMSG_FIRSTHDR(&mh)) && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	close(sv[0]);
	check_child(pid, "nobody's socket", 30);
	if (fd < 0) {
		FAIL("nobody's netlink socket did not arrive");
		return;
	}
	memset(&s, 0, sizeof(s));
	s.fd = fd;
	getsockname(fd, (struct sockaddr *)&a, &al);
	s.portid = a.nl_pid;
	s.seq = 1;
	PRIV = false;
	NODST = 1;
	OPN = "nl-creds (nobody's socket, no address)";
	nl_one(&s, IBCKPT_CMD_FREEZE, 0);
	nl_one(&s, IBCKPT_CMD_THAW, 0);
	nl_one(&s, IBCKPT_CMD_SNAPSHOT_GET, 1);
	PRIV = true;
	NODST = 0;
	OPN = "nl-creds (nobody's socket, sendto)";
	nl_one(&s, (int)(IBCKPT_CMD_FREEZE + rnd(2)), 0);
	NODST = -1;
	nl_close(&s);
}

/*
 * Find the family; check what the kernel says it offers against the ABI:
 * version, highest attribute, each command's modes.
 */
static int resolve_family(void)
{
	struct {
		struct nlmsghdr h;
		struct genlmsghdr g;
		uint8_t a[64];
	} q = { 0 };
	struct nls s;
	struct nlattr *na;
	const struct nlmsghdr *h;
	const struct nlattr *a, *op, *o;
	uint8_t seen[256] = { 0 };
	ssize_t n;
	int err = -ENOENT;
	uint32_t id, fl;

	if (nl_open(&s, false))
		return -errno;
	q.h.nlmsg_type = GENL_ID_CTRL;
	q.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	q.h.nlmsg_seq = 1;
	q.g.cmd = CTRL_CMD_GETFAMILY;
	q.g.version = 2;
	na = (struct nlattr *)q.a;
	na->nla_type = CTRL_ATTR_FAMILY_NAME;
	na->nla_len = (uint16_t)(NLA_HDRLEN + sizeof(IBCKPT_GENL_NAME));
	memcpy(na + 1, IBCKPT_GENL_NAME, sizeof(IBCKPT_GENL_NAME));
	q.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + NLA_ALIGN(na->nla_len));
	if (send(s.fd, &q, q.h.nlmsg_len, 0) < 0)
		goto out;
	for (;;) {
		n = recv(s.fd, RX, sizeof(RX), 0);
		if (n <= 0)
			goto out;
		for (h = (const void *)RX; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				err = ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
				if (err || FAMILY)
					goto out;
				continue;
			}
			if (h->nlmsg_type != GENL_ID_CTRL)
				continue;
			a = (const void *)((const uint8_t *)NLMSG_DATA(h) + GENL_HDRLEN);
			for (size_t l = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN); l >= NLA_HDRLEN &&
			     a->nla_len >= NLA_HDRLEN && a->nla_len <= l;
			     l -= (size_t)NLA_ALIGN(a->nla_len) < l ? (size_t)NLA_ALIGN(a->nla_len) : l,
			     a = (const void *)((const uint8_t *)a + NLA_ALIGN(a->nla_len))) {
				switch (a->nla_type & NLA_TYPE_MASK) {
				case CTRL_ATTR_FAMILY_ID:
					memcpy(&FAMILY, a + 1, 2);
					break;
				case CTRL_ATTR_VERSION:
					if (get32(a) != IBCKPT_GENL_VERSION)
						FAIL("family version %u", get32(a));
					break;
				case CTRL_ATTR_MAXATTR:
					if (get32(a) != IBCKPT_A_MAX)
						FAIL("family maxattr %u, the ABI's is %u", get32(a),
						     IBCKPT_A_MAX);
					break;
				case CTRL_ATTR_OPS:
					for (op = a + 1; (const uint8_t *)op + NLA_HDRLEN <=
					     (const uint8_t *)a + a->nla_len && op->nla_len >= NLA_HDRLEN;
					     op = (const void *)((const uint8_t *)op +
								 NLA_ALIGN(op->nla_len))) {
						id = fl = 0;
						for (o = op + 1; (const uint8_t *)o + NLA_HDRLEN <=
						     (const uint8_t *)op + op->nla_len &&
						     o->nla_len >= NLA_HDRLEN;
						     o = (const void *)((const uint8_t *)o +
									NLA_ALIGN(o->nla_len))) {
							if ((o->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_OP_ID)
								id = get32(o);
							if ((o->nla_type & NLA_TYPE_MASK) ==
							    CTRL_ATTR_OP_FLAGS)
								fl = get32(o);
						}
						if (id < 256)
							seen[id] |= fl & (GENL_CMD_CAP_DO |
									  GENL_CMD_CAP_DUMP);
					}
					break;
				}
			}
		}
	}
out:
	nl_close(&s);
	if (!FAMILY)
		return err ? err : -ENOENT;
	memcpy(OPCAPS, seen, sizeof(OPCAPS));
	for (unsigned int c = 0; c < 256; c++)
		if ((c <= IBCKPT_CMD_SNAPSHOT_GET || c > IBCKPT_CMD_MAX) && seen[c] != abi_caps(c))
			FAIL("the family offers command %u as %#x, the ABI says %#x", c, seen[c],
			     abi_caps(c));
	return 0;
}

/* ------------------------------------------------------------------ */
/* /dev/ibckpt: a pool of files and what each must answer.             */
/* ------------------------------------------------------------------ */

struct cd {
	int fd;
	int oflags;
	pid_t owner;		/* the process that opened it */
	bool reg;		/* this file holds the process's registration */
	bool ctrl_main;		/* registered by the main thread */
};

#define NCD 6
static struct cd CD[NCD];

static bool mine(const struct cd *c)
{
	return c->owner == getpid();
}

static bool process_registered(void)
{
	for (int i = 0; i < NCD; i++)
		if (CD[i].fd >= 0 && CD[i].reg && mine(&CD[i]))
			return true;
	return false;
}

static bool is_path(const struct cd *c)
{
	return c->oflags & O_PATH;
}

static void cd_close(struct cd *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->reg = false;
}

static const int OFLAGS[] = { O_RDWR, O_RDWR, O_RDWR, O_RDWR, O_RDONLY, O_RDONLY, O_WRONLY,
			      O_RDWR | O_NONBLOCK, O_PATH };

static int cd_open(struct cd *c, int flags)
{
	c->fd = open("/dev/ibckpt", flags | O_CLOEXEC);
	c->oflags = flags;
	c->owner = getpid();
	c->reg = false;
	c->ctrl_main = false;
	if (c->fd < 0) {
		if (errno != EMFILE && errno != ENFILE)
			FAIL("open /dev/ibckpt (flags %#x): %s", flags, en(-errno));
		return -1;
	}
	STAT(ST_CD_OPENS);
	return 0;
}

static struct cd *pick_cd(bool open_one)
{
	struct cd *c = &CD[rnd(NCD)];

	if (c->fd < 0 && open_one)
		cd_open(c, PICK(OFLAGS));
	return c->fd >= 0 ? c : NULL;
}

static int want_register(const struct cd *c, bool faults, const struct ibckpt_register *r)
{
	if (is_path(c))
		return EBADF;
	if (faults)
		return EFAULT;
	if (r->abi_version != IBCKPT_ABI_VERSION)
		return EPROTO;
	if (r->flags)
		return EINVAL;
	if (!mine(c))
		return EPERM;	/* the file belongs to the process that opened it */
	if (c->reg || process_registered())
		return EBUSY;
	return 0;
}

static bool i_am_ctrl(const struct cd *c)
{
	return mine(c) && c->ctrl_main && gettid() == getpid();
}

static int want_quiesced(const struct cd *c, bool faults, const struct ibckpt_quiesced *q)
{
	if (is_path(c))
		return EBADF;
	if (!c->reg)
		return ENOTCONN;
	if (!i_am_ctrl(c))
		return EPERM;
	if (faults)
		return EFAULT;
	if (q->status > MAX_ERRNO)
		return EINVAL;
	return ESRCH;	/* no freeze ever asks the fuzzer itself */
}

static int want_snapshot(const struct cd *c, bool faults, const struct ibckpt_snapshot_arg *a)
{
	if (is_path(c))
		return EBADF;
	if (!c->reg)
		return ENOTCONN;
	if (!i_am_ctrl(c))
		return EPERM;
	if (faults)
		return EFAULT;
	if (a->len < SNAP_HDR)
		return EINVAL;
	if (a->len > IBCKPT_SNAP_MAX_LEN)
		return EFBIG;
	return ESRCH;
}

static void rand_register(struct ibckpt_register *r)
{
	static const uint32_t abi[] = { IBCKPT_ABI_VERSION, IBCKPT_ABI_VERSION,
					IBCKPT_ABI_VERSION, 0, IBCKPT_ABI_VERSION + 1, 0xffffffff };

	r->abi_version = chance(80) ? PICK(abi) : (uint32_t)r64();
	r->flags = chance(80) ? 0 : chance(50) ? 1u << rnd(32) : (uint32_t)r64();
}

static void rand_quiesced(struct ibckpt_quiesced *q)
{
	static const uint32_t st[] = { 0, 0, 0, 1, 5, MAX_ERRNO, MAX_ERRNO + 1, 0xffffffff };

	q->session = any_u64();
	q->status = chance(85) ? PICK(st) : (uint32_t)r64();
	q->n_outstanding = (uint32_t)r64();
	q->n_drained = r64();
}

static uint64_t snap_len_val(void)
{
	static const uint64_t v[] = { 0, 1, SNAP_HDR - 1, SNAP_HDR, SNAP_HDR + 1, 4096,
				      IBCKPT_SNAP_MAX_LEN, IBCKPT_SNAP_MAX_LEN + 1ull,
				      1ull << 32, (1ull << 32) + SNAP_HDR, 1ull << 63, UINT64_MAX };

	return chance(70) ? PICK(v) : r64() >> rnd(64);
}

static void rand_snapshot(struct ibckpt_snapshot_arg *a, bool compat)
{
	struct ibckpt_snap_hdr h = { .magic = IBCKPT_SNAP_MAGIC, .version = IBCKPT_SNAP_VERSION,
				     .hdr_len = SNAP_HDR };
	bool f;

	a->session = any_u64();
	a->len = snap_len_val();
	h.session = a->session;
	h.total_len = a->len;
	a->addr = arg_at(compat, pick_pk(), &h, sizeof(h), &f);
}

static void note_register(struct cd *c, int rc)
{
	if (rc)
		return;
	STAT(ST_CD_REG_OK);
	c->reg = true;
	c->ctrl_main = gettid() == getpid();
}

/* The ioctls the ABI defines; -1 for another number. */
static int known_ioctl(unsigned long cmd)
{
	if (cmd == IBCKPT_IOC_REGISTER)
		return 0;
	if (cmd == IBCKPT_IOC_QUIESCED)
		return 1;
	if (cmd == IBCKPT_IOC_SNAPSHOT)
		return 2;
#ifdef IBCKPT_IOC_SHARE_CREDS
	if (cmd == IBCKPT_IOC_SHARE_CREDS)
		return 3;
#define NKNOWN_IOC 4
#else
#define NKNOWN_IOC 3
#endif
	return -1;
}

/* IBCKPT_IOC_* with a random argument, through @sys (native or int 0x80). */
typedef long (*ioctl_fn)(int fd, unsigned long cmd, uintptr_t arg);

static long native_ioctl(int fd, unsigned long cmd, uintptr_t arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static void cd_known_ioctl(struct cd *c, unsigned int which, ioctl_fn sys, bool compat)
{
	struct ibckpt_register r, rr;
	struct ibckpt_quiesced q, qq;
	struct ibckpt_snapshot_arg a, aa;
	enum pk k = pick_pk();
	uintptr_t at;
	bool f;
	long rc;
	int want;
	char what[96];

	STAT(ST_CD_IOCTLS);
	switch (which) {
	case 0:
		rand_register(&r);
		at = arg_at(compat, k, &r, sizeof(r), &f);
		if (!f && at)
			memcpy(&rr, (void *)at, sizeof(rr));
		else
			rr = r;
		want = want_register(c, f, &rr);
		rc = sys(c->fd, IBCKPT_IOC_REGISTER, at);
		snprintf(what, sizeof(what), "REGISTER abi %u flags %#x at %#lx",
			 rr.abi_version, rr.flags, (unsigned long)at);
		if (expect(what, rc, want))
			note_register(c, (int)rc);
		else if (!rc)
			note_register(c, 0);
		break;
	case 1:
		rand_quiesced(&q);
		at = arg_at(compat, k, &q, sizeof(q), &f);
		if (!f && at)
			memcpy(&qq, (void *)at, sizeof(qq));
		else
			qq = q;
		want = want_quiesced(c, f, &qq);
		rc = sys(c->fd, IBCKPT_IOC_QUIESCED, at);
		snprintf(what, sizeof(what), "QUIESCED session %" PRIu64 " status %u at %#lx",
			 (uint64_t)qq.session, qq.status, (unsigned long)at);
		expect(what, rc, want);
		break;
#ifdef IBCKPT_IOC_SHARE_CREDS
	case 3:	/* only the control thread; the counts are written if asked for */
		at = arg_at(compat, k, NULL, sizeof(struct ibckpt_share_creds), &f);
		want = is_path(c) ? EBADF : !c->reg ? ENOTCONN : !i_am_ctrl(c) ? EPERM :
		       at && (f || k == PK_RO) ? EFAULT : 0;
		rc = sys(c->fd, IBCKPT_IOC_SHARE_CREDS, at);
		snprintf(what, sizeof(what), "SHARE_CREDS at %#lx", (unsigned long)at);
		expect(what, rc, want);
		break;
#endif
	case 2:
		rand_snapshot(&a, compat);
		at = arg_at(compat, k, &a, sizeof(a), &f);
		if (!f && at)
			memcpy(&aa, (void *)at, sizeof(aa));
		else
			aa = a;
		want = want_snapshot(c, f, &aa);
		rc = sys(c->fd, IBCKPT_IOC_SNAPSHOT, at);
		snprintf(what, sizeof(what), "SNAPSHOT session %" PRIu64 " len %" PRIu64 " at %#lx",
			 (uint64_t)aa.session, (uint64_t)aa.len, (unsigned long)at);
		expect(what, rc, want);
		break;
	}
}

/* ioctls the VFS answers itself for any file; never sent: FIFREEZE and co. */
static bool vfs_ioctl_type(unsigned int type)
{
	return type == 'f' || type == 'X' || type == 0x94 || type == 'T' || type == 0;
}

static unsigned long rand_ioctl_cmd(void)
{
	unsigned int dir = rnd(4), size = chance(70) ? rnd(64) : rnd(1u << 14);
	unsigned int type, nr;

	if (chance(60)) {
		type = IBCKPT_IOC_MAGIC;
		nr = chance(60) ? rnd(8) : rnd(256);
	} else {
		do
			type = rnd(256);
		while (vfs_ioctl_type(type));
		nr = rnd(256);
	}
	return _IOC(dir, type, nr, size);
}

static void cd_other_ioctl(struct cd *c, unsigned long cmd, ioctl_fn sys, bool compat)
{
	bool f;
	uintptr_t at = arg_at(compat, pick_pk(), NULL, 64, &f);
	char what[64];

	STAT(ST_CD_IOCTLS);
	snprintf(what, sizeof(what), "ioctl %#lx", cmd);
	expect(what, sys(c->fd, cmd, at), is_path(c) ? EBADF : ENOTTY);
}

static void op_cd_ioctl(void)
{
	struct cd *c = pick_cd(true);
	unsigned long cmd;

	if (!c)
		return;
	if (chance(40)) {
		cd_known_ioctl(c, rnd(NKNOWN_IOC), native_ioctl, false);
		return;
	}
	cmd = rand_ioctl_cmd();
	if (known_ioctl(cmd) >= 0)
		cmd ^= _IOC(0, 0, 0, 1);
	cd_other_ioctl(c, cmd, native_ioctl, false);
}

static void op_cd_register(void)
{
	struct cd *c = pick_cd(true);

	if (c)
		cd_known_ioctl(c, 0, native_ioctl, false);
}

static void op_cd_answer(void)
{
	struct cd *c = pick_cd(true);

	if (c)
		cd_known_ioctl(c, 1 + rnd(2), native_ioctl, false);
}

static void op_cd_open(void)
{
	struct cd *c = &CD[rnd(NCD)];

	cd_close(c);
	cd_open(c, PICK(OFLAGS));
}

static void op_cd_close(void)
{
	cd_close(&CD[rnd(NCD)]);
}

/* Every number of the magic, each direction, several sizes, at random addresses. */
static void ioctl_sweep(struct cd *c)
{
	static const unsigned int sizes[] = { 0, 4, 8, 12, 16, 24, 32, 48 };
	unsigned long cmd;

	for (unsigned int nr = 0; nr < 256; nr++)
		for (unsigned int dir = 0; dir < 4; dir++)
			for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
				cmd = _IOC(dir, IBCKPT_IOC_MAGIC, nr, sizes[i]);
				if (known_ioctl(cmd) >= 0)
					cd_known_ioctl(c, (unsigned int)known_ioctl(cmd), native_ioctl,
						       false);
				else
					cd_other_ioctl(c, cmd, native_ioctl, false);
			}
}

/* ---- reads ---- */

static void on_usr1(int sig)
{
	(void)sig;
}

/* read(), interrupted every @period_ms by SIGUSR1 (blocked outside). */
static long read_interrupted(int fd, void *buf, size_t n, unsigned int period_ms)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1 };
	struct itimerspec its = { 0 };
	struct timespec zero = { 0 };
	sigset_t s;
	timer_t t;
	long r;

	sev._sigev_un._tid = gettid();	/* sigev_notify_thread_id */
	if (timer_create(CLOCK_MONOTONIC, &sev, &t))
		return -errno;
	its.it_value.tv_nsec = (long)period_ms * 1000000;
	its.it_interval = its.it_value;
	timer_settime(t, 0, &its, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	r = read(fd, buf, n);
	r = r < 0 ? -errno : r;
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	timer_delete(t);
	while (sigtimedwait(&s, NULL, &zero) == SIGUSR1)
		;
	return r;
}

static void set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static size_t read_size(void)
{
	static const size_t v[] = { 0, 1, 8, 15, 16, 16, 16, 17, 24, 32, 4096, 1u << 20,
				    1ull << 30, 1ull << 40, SIZE_MAX / 2, SIZE_MAX };

	return chance(85) ? PICK(v) : rnd(1u << 16);
}

/* What read(@c, @buf, @n) must answer in a process nobody asks to quiesce. */
static int want_read(const struct cd *c, uintptr_t buf, size_t n, bool block, int *alt)
{
	int ok;

	*alt = -1;
	if (is_path(c) || (c->oflags & O_ACCMODE) == O_WRONLY)
		return EBADF;
	ok = access_known(buf, n);
	if (!ok)
		return EFAULT;
	if ((ssize_t)n < 0)
		return EINVAL;
	if (ok < 0)
		*alt = EFAULT;
	if (!c->reg)
		return ENOTCONN;
	if (n < sizeof(struct ibckpt_event))
		return EINVAL;
	return block ? EINTR : EAGAIN;
}

static void cd_read(struct cd *c, bool block)
{
	size_t n = read_size();
	bool f;
	uintptr_t buf = arg_at(false, pick_pk(), NULL, 0, &f);
	int want, alt;
	long r;
	char what[80];

	STAT(ST_CD_READS);
	if (chance(70))
		buf = (uintptr_t)ARENA;
	want = want_read(c, buf, n, block, &alt);
	if (!is_path(c))
		set_nonblock(c->fd, !block);
	r = block ? read_interrupted(c->fd, (void *)buf, n, 5 + rnd(20)) :
		    (read(c->fd, (void *)buf, n) < 0 ? -errno : 0);
	snprintf(what, sizeof(what), "read(%zu bytes at %#lx%s)", n, (unsigned long)buf,
		 block ? ", blocking" : "");
	if (r > 0)
		FAIL("%s: an event (%ld bytes) for a process no freeze asked", what, r);
	else if (alt >= 0)
		EXPECT_IN(what, r, want, alt);
	else
		expect(what, r, want);
}

static void op_cd_read(void)
{
	struct cd *c = pick_cd(true);

	if (c)
		cd_read(c, false);
}

static void op_cd_block(void)
{
	struct cd *c = pick_cd(true);

	if (c)
		cd_read(c, true);
}

static void op_cd_poll(void)
{
	struct cd *c = pick_cd(true);
	struct pollfd p;
	short want;
	int r;

	if (!c)
		return;
	p.fd = c->fd;
	p.events = (short)(chance(80) ? POLLIN : POLLIN | POLLOUT | POLLPRI);
	p.revents = 0;
	r = poll(&p, 1, (int)rnd(15));
	want = is_path(c) ? POLLNVAL : c->reg ? 0 : POLLERR;
	if (r < 0 || p.revents != want)
		FAIL("poll (%s): %d, revents %#x, expected %#x", c->reg ? "registered" : "not registered",
		     r, p.revents, want);
}

/* ---- threads ---- */

struct tctx {
	uint64_t seed;
	int shared;		/* pool index of the shared file */
	pthread_barrier_t *b1, *b2;
	int attempts, ok;	/* registrations tried, succeeded */
	bool on_shared;		/* the success was on the shared file */
	int own;
};

static void *thread_fn(void *arg)
{
	struct tctx *t = arg;
	struct ibckpt_register r = { .abi_version = IBCKPT_ABI_VERSION };
	struct ibckpt_quiesced q = { 0 };
	struct ibckpt_event e;
	int fd = CD[t->shared].fd, rc;

	rng_seed(t->seed);
	OPN = "cd-threads (thread)";
	t->own = -1;
	if (chance(40))
		t->own = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	pthread_barrier_wait(t->b1);
	switch (rnd(4)) {
	case 0:
	case 1:
		if (fd >= 0 && !is_path(&CD[t->shared])) {
			t->attempts++;
			rc = ioctl(fd, IBCKPT_IOC_REGISTER, &r) ? -errno : 0;
			if (!rc) {
				t->ok++;
				t->on_shared = true;
			} else if (rc != -EBUSY) {
				FAIL("a thread's REGISTER of a shared file: %s", en(rc));
			}
		}
		break;
	case 2:
		if (t->own >= 0) {
			t->attempts++;
			rc = ioctl(t->own, IBCKPT_IOC_REGISTER, &r) ? -errno : 0;
			if (!rc)
				t->ok++;
			else if (rc != -EBUSY)
				FAIL("a thread's REGISTER of its own file: %s", en(rc));
		}
		break;
	default:
		if (fd >= 0 && !is_path(&CD[t->shared])) {
			q.session = any_u64();
			rc = ioctl(fd, IBCKPT_IOC_QUIESCED, &q) ? -errno : 0;
			EXPECT_IN("a thread's QUIESCED", rc, ENOTCONN, EPERM, ESRCH);
		}
		break;
	}
	if (t->own >= 0 && chance(50)) {
		set_nonblock(t->own, true);
		rc = read(t->own, &e, sizeof(e)) < 0 ? -errno : 0;
		EXPECT_IN("a thread's read of its own file", rc, ENOTCONN, EAGAIN);
	}
	/* nobody closes before everybody tried: at most one registration */
	pthread_barrier_wait(t->b2);
	if (t->own >= 0)
		close(t->own);
	return NULL;
}

static void op_cd_threads(void)
{
	unsigned int n = 2 + rnd(5), i;
	pthread_t th[8];
	struct tctx t[8];
	pthread_barrier_t b1, b2;
	int attempts = 0, ok = 0, shared = (int)rnd(NCD), who = -1;
	bool before = process_registered();

	STAT(ST_THREADS);
	if (CD[shared].fd < 0)
		cd_open(&CD[shared], O_RDWR);
	pthread_barrier_init(&b1, NULL, n);
	pthread_barrier_init(&b2, NULL, n);
	for (i = 0; i < n; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].seed = r64();
		t[i].shared = shared;
		t[i].b1 = &b1;
		t[i].b2 = &b2;
		if (pthread_create(&th[i], NULL, thread_fn, &t[i])) {
			FAIL("pthread_create");
			exit(1);
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		attempts += t[i].attempts;
		ok += t[i].ok;
		if (t[i].ok && t[i].on_shared)
			who = (int)i;
	}
	pthread_barrier_destroy(&b1);
	pthread_barrier_destroy(&b2);
	if (ok != (attempts && !before ? 1 : 0))
		FAIL("%u threads: %d of %d registrations succeeded, %s registered before", n, ok,
		     attempts, before ? "one" : "none");
	if (who >= 0) {
		CD[shared].reg = true;
		CD[shared].ctrl_main = false;	/* its control thread is gone */
	}
}

/* A thread blocked in read() while the main thread closes its file. */
struct rctx {
	int fd;
	atomic_bool stop;
	int last;
};

static void *reader_fn(void *arg)
{
	struct rctx *r = arg;
	struct ibckpt_event e;
	long rc;

	OPN = "cd-close-reading (reader)";
	while (!atomic_load(&r->stop)) {
		rc = read_interrupted(r->fd, &e, sizeof(e), 10);
		r->last = (int)rc;
		if (rc != -EINTR && rc != -EBADF) {
			FAIL("a blocking read on a closing file: %s (%ld)", en((int)rc), rc);
			break;
		}
	}
	return NULL;
}

static void op_cd_close_reading(void)
{
	struct cd *c = pick_cd(false);
	struct rctx r = { 0 };
	pthread_t t;

	if (!c || !c->reg || is_path(c) || (c->oflags & O_ACCMODE) == O_WRONLY)
		return;
	set_nonblock(c->fd, false);
	r.fd = c->fd;
	if (pthread_create(&t, NULL, reader_fn, &r))
		return;
	msleep(5 + rnd(20));
	cd_close(c);	/* the file lives on until the read returns */
	msleep(rnd(20));
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
}

#ifdef IBCKPT_IOC_SHARE_CREDS
/*
 * IBCKPT_IOC_SHARE_CREDS with other threads: one that shares the main
 * thread's credentials object, one with an identical object of its own
 * (capset() of the same sets), one whose credentials differ (a thread keyring
 * of its own, or, privileged, CAP_SYS_ADMIN dropped from its effective set).
 * The counts must say so, and the one that differs must keep what it has.
 */
struct cctx {
	pthread_barrier_t *b1, *b2;
	int how;	/* 0 shares, 1 same content, 2 keyring, 3 capability dropped */
};

static int caps_of_thread(struct __user_cap_data_struct *d)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return (int)syscall(SYS_capget, &h, d);
}

static void *creds_thread(void *arg)
{
	struct cctx *t = arg;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	OPN = "cd-share-creds (thread)";
	caps_of_thread(d);
	if (t->how == 1 || t->how == 3) {	/* this thread only: no glibc broadcast */
		if (t->how == 3)
			d[0].effective &= ~(1u << CAP_SYS_ADMIN);
		if (syscall(SYS_capset, &h, d))
			FAIL("capset: %s", en(-errno));
	} else if (t->how == 2 && syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */,
					  -1 /* KEY_SPEC_THREAD_KEYRING */, 1) < 0) {
		t->how = 0;	/* no keyrings: it shares */
	}
	pthread_barrier_wait(t->b1);
	pthread_barrier_wait(t->b2);	/* the ioctl's work runs on the way out */
	if (t->how == 3 && (caps_of_thread(d), d[0].effective & (1u << CAP_SYS_ADMIN)))
		FAIL("a thread that dropped CAP_SYS_ADMIN has it again after SHARE_CREDS");
	if (t->how == 2 && syscall(SYS_keyctl, 0, -1, 0) < 0)
		FAIL("a thread lost its thread keyring to SHARE_CREDS");
	return NULL;
}

static void op_cd_share_creds(void)
{
	struct ibckpt_share_creds res;
	struct cd *c = NULL;
	struct cctx t[3];
	pthread_t th[3];
	pthread_barrier_t b1, b2;
	unsigned int n = 1 + rnd(3), i, want[4] = { 0 };
	long rc;

	for (i = 0; i < NCD && !c; i++)
		if (CD[i].fd >= 0 && CD[i].reg && i_am_ctrl(&CD[i]))
			c = &CD[i];
	if (!c) {
		op_cd_register();
		return;
	}
	STAT(ST_CREDS);
	pthread_barrier_init(&b1, NULL, n + 1);
	pthread_barrier_init(&b2, NULL, n + 1);
	for (i = 0; i < n; i++) {
		t[i].b1 = &b1;
		t[i].b2 = &b2;
		t[i].how = (int)rnd(has_cap(CAP_SYS_ADMIN) ? 4 : 3);
		if (pthread_create(&th[i], NULL, creds_thread, &t[i])) {
			FAIL("pthread_create");
			exit(1);
		}
	}
	pthread_barrier_wait(&b1);
	memset(&res, 0xff, sizeof(res));
	rc = ioctl(c->fd, IBCKPT_IOC_SHARE_CREDS, chance(80) ? &res : NULL) ? -errno : 0;
	expect("SHARE_CREDS with other threads", rc, 0);
	for (i = 0; i < n; i++)
		want[t[i].how]++;
	if (!rc && res.switched != 0xffffffff &&
	    (res.shared != want[0] || res.switched != want[1] || res.differ != want[2] + want[3]))
		FAIL("SHARE_CREDS: switched %u, differ %u, shared %u; expected %u, %u, %u",
		     res.switched, res.differ, res.shared, want[1], want[2] + want[3], want[0]);
	pthread_barrier_wait(&b2);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&b1);
	pthread_barrier_destroy(&b2);
}
#endif

/* ---- forked children ---- */

static void child_ops(unsigned int nops)
{
	struct ibckpt_register r = { .abi_version = IBCKPT_ABI_VERSION };
	struct cd *c;

	while (nops--) {
		switch (rnd(6)) {
		case 0:	/* the parent's file is the parent's */
			c = pick_cd(false);
			if (c && !mine(c))
				expect("REGISTER of an inherited file",
				       ioctl(c->fd, IBCKPT_IOC_REGISTER, &r) ? -errno : 0,
				       is_path(c) ? EBADF : EPERM);
			break;
		case 1:
			c = pick_cd(false);
			if (c)
				cd_known_ioctl(c, rnd(NKNOWN_IOC), native_ioctl, false);
			break;
		case 2:
			c = pick_cd(false);
			if (c)
				cd_read(c, chance(20));
			break;
		case 3:	/* a file of its own */
			c = &CD[rnd(NCD)];
			if (c->fd < 0 || !mine(c)) {
				cd_close(c);
				if (cd_open(c, O_RDWR))
					break;
			}
			cd_known_ioctl(c, 0, native_ioctl, false);
			break;
		case 4:
			c = pick_cd(false);
			if (c)
				cd_close(c);
			break;
		default:
			op_cd_poll();
			break;
		}
	}
	if (chance(30))	/* leave the files to exit */
		_exit(0);
	for (int i = 0; i < NCD; i++)
		cd_close(&CD[i]);
}

static void op_cd_fork(void)
{
	uint64_t cseed = r64();
	unsigned int nops = 1 + rnd(8);
	pid_t pid;

	STAT(ST_FORKS);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		rng_seed(cseed);
		OPN = "cd-fork (child)";
		alarm(30);
		for (int i = 0; i < NSOCK; i++)
			nl_close(&SOCKS[i]);
		child_ops(nops);
		_exit(0);
	}
	check_child(pid, "cd-fork", 30);
}

/* ---- the rest of a file's operations ---- */

static void op_cd_misc(void)
{
	struct cd *c = pick_cd(true);
	uint8_t b[64];
	struct iovec iov[3];
	struct epoll_event ev = { .events = EPOLLIN };
	int acc, p[2], ep, fd2;
	long r;
	bool rd, wr;

	if (!c)
		return;
	STAT(ST_CD_MISC);
	acc = c->oflags & O_ACCMODE;
	rd = !is_path(c) && acc != O_WRONLY;
	wr = !is_path(c) && acc != O_RDONLY;
	switch (rnd(9)) {
	case 0:
		r = write(c->fd, b, rnd(sizeof(b))) < 0 ? -errno : 0;
		expect("write", r, wr ? EINVAL : EBADF);
		break;
	case 1:
		r = lseek(c->fd, (off_t)rnd(100), (int)rnd(3)) < 0 ? -errno : 0;
		expect("lseek", r, is_path(c) ? EBADF : ESPIPE);
		break;
	case 2:
		r = pread(c->fd, b, sizeof(b), 0) < 0 ? -errno : 0;
		expect("pread", r, is_path(c) ? EBADF : ESPIPE);
		break;
	case 3:
		r = mmap(NULL, PG, PROT_READ, MAP_SHARED, c->fd, 0) == MAP_FAILED ? -errno : 0;
		if (is_path(c))
			expect("mmap", r, EBADF);
		else
			expect("mmap", r, rd ? ENODEV : EACCES);
		break;
	case 4:	/* one ->read per iovec */
		iov[0] = (struct iovec){ b, 16 };
		iov[1] = (struct iovec){ b + 16, rnd(20) };
		iov[2] = (struct iovec){ b + 40, 16 };
		if (!is_path(c))
			set_nonblock(c->fd, true);
		r = readv(c->fd, iov, 3) < 0 ? -errno : 0;
		expect("readv", r, !rd ? EBADF : c->reg ? EAGAIN : ENOTCONN);
		break;
	case 5:
		if (pipe2(p, O_CLOEXEC))
			break;
		r = splice(c->fd, NULL, p[1], NULL, 64, SPLICE_F_NONBLOCK) < 0 ? -errno : 0;
		expect("splice", r, rd ? EINVAL : EBADF);
		r = sendfile(p[1], c->fd, NULL, 64) < 0 ? -errno : 0;
		EXPECT_IN("sendfile", r, EINVAL, EBADF, ESPIPE);
		close(p[0]);
		close(p[1]);
		break;
	case 6:
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0)
			break;
		r = epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0 ? -errno : 0;
		expect("epoll_ctl", r, is_path(c) ? EBADF : 0);
		if (!r) {
			r = epoll_wait(ep, &ev, 1, (int)rnd(5));
			if (r != (c->reg ? 0 : 1) || (r == 1 && ev.events != EPOLLERR))
				FAIL("epoll_wait: %ld, events %#x (%s)", r, ev.events,
				     c->reg ? "registered" : "not registered");
		}
		if (chance(50))
			cd_close(c);	/* the file goes while epoll watches it */
		close(ep);
		break;
	case 7:	/* a duplicate shares the file and its registration */
		fd2 = dup(c->fd);
		if (fd2 < 0)
			break;
		{
			struct cd d = *c;

			d.fd = fd2;
			cd_known_ioctl(&d, rnd(NKNOWN_IOC), native_ioctl, false);
			if (d.reg && !c->reg)
				c->reg = true, c->ctrl_main = d.ctrl_main;
		}
		close(fd2);
		break;
	default:
		flock(c->fd, LOCK_EX | LOCK_NB);
		flock(c->fd, LOCK_UN);
		r = fcntl(c->fd, F_SETLEASE, F_RDLCK) < 0 ? -errno : 0;
		EXPECT_IN("F_SETLEASE", r, EINVAL, EBADF, EAGAIN, EACCES);
		r = ioctl(c->fd, FIONREAD, b) < 0 ? -errno : 0;
		expect("FIONREAD", r, is_path(c) ? EBADF : ENOTTY);
		break;
	}
}

/* ---- the 32-bit entry ---- */

#if defined(__x86_64__)
static long int80(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile ("int $0x80"
			  : "=a" (ret)
			  : "a" (nr), "b" (a), "c" (b), "d" (c)
			  : "memory", "r8", "r9", "r10", "r11");
	return (int)ret;
}

static long compat_ioctl(int fd, unsigned long cmd, uintptr_t arg)
{
	return int80(54, fd, (long)(uint32_t)cmd, (long)(uint32_t)arg);	/* __NR_ioctl */
}

static void op_cd_compat(void)
{
	struct cd *c = pick_cd(true);
	unsigned long cmd;
	size_t n;
	uintptr_t buf;
	int want, alt;
	long r;

	if (!c || !ARENA32)
		return;
	STAT(ST_CD_COMPAT);
	switch (rnd(3)) {
	case 0:
		cd_known_ioctl(c, rnd(NKNOWN_IOC), compat_ioctl, true);
		break;
	case 1:
		do
			cmd = _IOC(rnd(4), IBCKPT_IOC_MAGIC, rnd(256), rnd(64));
		while (known_ioctl(cmd) >= 0);
		cd_other_ioctl(c, cmd, compat_ioctl, true);
		break;
	default:
		n = chance(80) ? 16 : rnd(64);
		buf = (uintptr_t)ARENA32 + rnd(PG);
		want = want_read(c, buf, n, false, &alt);
		if (!is_path(c))
			set_nonblock(c->fd, true);
		r = int80(3, c->fd, (long)buf, (long)n);	/* __NR_read */
		expect("a 32-bit read", r > 0 ? 1 : r, want);
		break;
	}
}
#else
static void op_cd_compat(void)
{
}
#endif

/* ------------------------------------------------------------------ */
/* The victim: a provider that answers freezes in random ways.         */
/* ------------------------------------------------------------------ */

static int VFD = -1;
static uint8_t *VBIG;	/* IBCKPT_SNAP_MAX_LEN + a page, no access unless used */
static const size_t VBIG_LEN = IBCKPT_SNAP_MAX_LEN + PG;

static void *victim_spin(void *arg)
{
	struct ibckpt_quiesced q = { 0 };
	struct ibckpt_snapshot_arg a = { 0 };
	struct ibckpt_register r = { .abi_version = IBCKPT_ABI_VERSION };
	uint8_t b[16];
	volatile unsigned long n = 0;
	uint64_t seed = (uint64_t)(uintptr_t)arg;

	rng_seed(seed);
	OPN = "victim (application thread)";
	for (;;) {
		for (unsigned int i = 0; i < 200000; i++)
			n++;
		/* only the control thread speaks for the process */
		q.session = any_u64();
		a.session = q.session;
		a.len = SNAP_HDR;
		a.addr = (uintptr_t)b;
		expect("QUIESCED from an application thread",
		       ioctl(VFD, IBCKPT_IOC_QUIESCED, &q) ? -errno : 0, EPERM);
		expect("SNAPSHOT from an application thread",
		       ioctl(VFD, IBCKPT_IOC_SNAPSHOT, &a) ? -errno : 0, EPERM);
		expect("a second REGISTER of the process",
		       ioctl(VFD, IBCKPT_IOC_REGISTER, &r) ? -errno : 0, EBUSY);
		/* shorter than an event: refused before an event is taken */
		expect("a short read from an application thread",
		       read(VFD, b, rnd(sizeof(struct ibckpt_event))) < 0 ? -errno : 0, EINVAL);
		STAT(ST_V_EPERM);
		msleep(1 + rnd(5));
	}
	return NULL;
}

static void *victim_sleep(void *arg)
{
	(void)arg;
	for (;;)
		msleep(3);
	return NULL;
}

/* Append a record of @type with @len payload bytes (random), padded to 8. */
static void *snap_rec(uint8_t *buf, size_t *off, uint32_t *n, uint16_t type, uint32_t len)
{
	struct ibckpt_snap_rec r = { .type = type, .len = len };
	uint8_t *p;

	memcpy(buf + *off, &r, sizeof(r));
	p = buf + *off + sizeof(r);
	rbytes(p, len < 256 ? len : 256);
	*off += sizeof(r) + ((len + 7u) & ~7u);
	(*n)++;
	return p;
}

enum snapkind {
	SK_VALID,	/* well framed, no QP: accepted */
	SK_QP,		/* a QP the RDMA core must be asked about */
	SK_FRAME,	/* framing broken (the module parses records) */
	SK_HDR,		/* header broken */
	SK_FLIP,	/* a valid one with bytes flipped: anything */
	SK_SHORT,	/* shorter than a header */
	SK_LONG,	/* over the bound */
	SK_FAULT,	/* not readable */
	SK_SESSION,	/* for another session (the argument) */
};

/*
 * Give a snapshot for @s: well framed (a header, DEVICE, PD, QP and CONTROL
 * records as @k asks, WC records up to the length), then broken as @k says.
 * @already: it gave one or answered (EALREADY, once the arguments pass).
 * Return: the answer; *counted: the module took it for the process's answer.
 */
static long victim_snapshot(uint64_t s, enum snapkind k, bool already, bool *counted)
{
	static const char *const devs[] = { "rxe0", "rxe1", "rxe9", "lo", "" };
	struct ibckpt_snap_hdr h = { .magic = IBCKPT_SNAP_MAGIC, .version = IBCKPT_SNAP_VERSION,
				     .hdr_len = SNAP_HDR, .session = s };
	struct ibckpt_snapshot_arg a = { .session = s };
	struct ibckpt_snap_device *dev;
	struct ibckpt_snap_pd *pd;
	struct ibckpt_snap_qp *qp;
	struct ibckpt_snap_rec *r;
	uint8_t *buf;
	size_t cap, off = SNAP_HDR, fill, chunk;
	uint32_t n = 0, hd = 1 + rnd(100), hp = 1 + rnd(100);
	bool big, released = false, max = k == SK_VALID && chance(3);
	long rc;
	int want[4] = { -1, -1, -1, -1 };

	*counted = false;
	fill = max ? IBCKPT_SNAP_MAX_LEN - SNAP_HDR :
	       chance(20) ? 0 : chance(80) ? 64 + 8 * rnd(1000) : 64 + 8 * rnd(1u << 17);
	cap = SNAP_HDR + 512 + fill;
	big = cap > (2u << 20);
	if (big) {
		buf = VBIG;
		mprotect(VBIG, VBIG_LEN, PROT_READ | PROT_WRITE);
	} else {
		buf = calloc(1, cap);
	}
	if (k == SK_QP || (k != SK_VALID && chance(30))) {
		dev = snap_rec(buf, &off, &n, IBCKPT_SNAP_DEVICE, sizeof(*dev));
		dev->handle = hd;
		memset(dev->name, 0, sizeof(dev->name));
		strcpy(dev->name, chance(90) ? PICK(devs) : "mlx5_0");
		if (!dev->name[0])
			rand_str(dev->name, 1 + rnd(sizeof(dev->name) - 1));
		pd = snap_rec(buf, &off, &n, IBCKPT_SNAP_PD, sizeof(*pd));
		pd->handle = hp;
		pd->device = hd;
		qp = snap_rec(buf, &off, &n, IBCKPT_SNAP_QP, sizeof(*qp));
		qp->handle = 1 + rnd(100);
		qp->pd = hp;
		qp->xrcd = 0;
		qp->qpn = chance(30) ? 1 : chance(30) ? rnd(64) : (uint32_t)r64() & 0xffffff;
		qp->qp_type = chance(70) ? 2 : rnd(12);
		qp->state = rnd(7);
	}
#if KVIEW
	if (!max && chance(15)) {	/* a process that released its vendor resources */
		struct ibckpt_snap_control *c = snap_rec(buf, &off, &n, IBCKPT_SNAP_CONTROL,
							 sizeof(*c));

		c->released = chance(70);
		released = c->released;
	}
#endif
	while (fill >= 64) {	/* WC records: checked for their framing only */
		chunk = fill <= 4096 || max ? fill : 64 + 8 * rnd((fill - 64) / 8 + 1);
		if (fill - chunk && fill - chunk < 64)
			chunk = fill;
		snap_rec(buf, &off, &n, IBCKPT_SNAP_WC, (uint32_t)(chunk - 8 - (chunk >= 72 ? rnd(8) : 0)));
		fill -= chunk;
	}
	h.total_len = off;
	h.n_records = n;
	h.tgid = (uint32_t)r64();	/* the module stamps the truth */
	h.pinned_bytes = 1ull << 40;
	h.flags = (uint32_t)r64();
	memcpy(buf, &h, sizeof(h));
	a.len = off;
	a.addr = (uintptr_t)buf;
	switch (k) {
	case SK_FRAME:
		switch (rnd(8)) {
		case 0:	/* a record past the end */
			((struct ibckpt_snap_hdr *)buf)->n_records++;
			break;
		case 1:	/* bytes after the last record */
			((struct ibckpt_snap_hdr *)buf)->n_records = n ? n - 1 : 0;
			if (!n)
				((struct ibckpt_snap_hdr *)buf)->total_len = a.len = off + 8;
			break;
		case 2:	/* the header's length */
			((struct ibckpt_snap_hdr *)buf)->hdr_len = chance(50) ? SNAP_HDR - 8 :
								  SNAP_HDR + 1 + rnd(7);
			break;
		default:	/* the first record: type, length */
			if (!n) {
				snap_rec(buf, &off, &n, IBCKPT_SNAP_WC, 56);
				((struct ibckpt_snap_hdr *)buf)->n_records = n;
				((struct ibckpt_snap_hdr *)buf)->total_len = a.len = off;
			}
			r = (struct ibckpt_snap_rec *)(buf + SNAP_HDR);
			if (chance(50))
				r->type = chance(50) ? 0 : (uint16_t)(__IBCKPT_SNAP_TYPE_MAX + rnd(1000));
			else
				r->len = chance(50) ? rnd(8) : (uint32_t)a.len + (uint32_t)rnd(1u << 20);
			break;
		}
		break;
	case SK_HDR:
		switch (rnd(4)) {
		case 0:
			((struct ibckpt_snap_hdr *)buf)->magic ^= 1u << rnd(32);
			break;
		case 1:
			((struct ibckpt_snap_hdr *)buf)->version = (uint16_t)(2 + rnd(100));
			break;
		case 2:
			((struct ibckpt_snap_hdr *)buf)->total_len += 1 + rnd(100);
			break;
		default:
			((struct ibckpt_snap_hdr *)buf)->session ^= 1 + rnd(3);
			break;
		}
		break;
	case SK_FLIP:
		for (unsigned int i = 1 + rnd(6); i; i--)
			buf[rnd(a.len)] ^= (uint8_t)(1 + rnd(255));
		break;
	case SK_SHORT:
		a.len = rnd(SNAP_HDR);
		break;
	case SK_LONG:
		a.len = chance(50) ? IBCKPT_SNAP_MAX_LEN + 1ull : r64() | (1ull << 40);
		break;
	case SK_FAULT:
		if (chance(50)) {
			a.addr = chance(50) ? 0 : UNMAPPED;
		} else {	/* the bound, only its first pages readable */
			if (!big)
				free(buf);
			buf = VBIG;
			big = true;
			mprotect(VBIG, VBIG_LEN, PROT_NONE);
			mprotect(VBIG, 2 * PG, PROT_READ | PROT_WRITE);
			h.total_len = a.len = IBCKPT_SNAP_MAX_LEN;
			memcpy(VBIG, &h, sizeof(h));
			a.addr = (uintptr_t)VBIG;
		}
		break;
	case SK_SESSION:	/* far from s: see victim_quiesce() */
		a.session = chance(50) ? 0 : s + (1ull << 40) + rnd(5);
		break;
	default:
		break;
	}
	if (a.len >= SNAP_HDR && a.len <= off && a.addr == (uintptr_t)buf) {
		/* what the dump reader must find, if the module keeps it */
		atomic_store(&SH->v_session, 0);
		atomic_store(&SH->v_len, a.len);
		atomic_store(&SH->v_hash, hstep(0xcbf29ce484222325ull, buf + SNAP_HDR,
						a.len - SNAP_HDR));
		atomic_store(&SH->v_nrec, ((struct ibckpt_snap_hdr *)buf)->n_records);
	}
	rc = ioctl(VFD, IBCKPT_IOC_SNAPSHOT, &a) ? -errno : 0;
	if (!rc)
		atomic_store(&SH->v_session, s);
	if (big) {
		madvise(VBIG, VBIG_LEN, MADV_DONTNEED);
		mprotect(VBIG, VBIG_LEN, PROT_NONE);
	} else {
		free(buf);
	}
	/* what each must get (ESRCH too: the session may have ended meanwhile) */
	switch (k) {
	case SK_VALID:
		want[0] = 0, want[1] = ENOMEM;
		break;
	case SK_QP:
		if (!KVIEW || released)
			want[0] = 0;
		else	/* rxe has no QP of ours: no such device, no such QP, a kernel QP */
			want[0] = EPROTO, want[1] = EINVAL;
		break;
	case SK_FRAME:
		want[0] = KVIEW ? EINVAL : 0;
		break;
	case SK_HDR:
		want[0] = EINVAL;
		break;
	case SK_FLIP:
		want[0] = 0, want[1] = EINVAL, want[2] = EPROTO;
		break;
	case SK_SHORT:
		expect("SNAPSHOT shorter than its header", rc, EINVAL);
		return rc;
	case SK_LONG:
		expect("SNAPSHOT over the bound", rc, EFBIG);
		return rc;
	case SK_FAULT:
		want[0] = EFAULT;
		break;
	case SK_SESSION:
		expect("SNAPSHOT for another session", rc, ESRCH);
		return rc;
	}
	if (already)
		want[0] = EALREADY, want[1] = want[2] = -1;
	want[3] = ESRCH;
	if (rc != -ESRCH && rc != -want[0] && rc != -want[1] && rc != -want[2])
		FAIL("SNAPSHOT (kind %d, %" PRIu64 " bytes, %u records): got %s, expected %s%s%s",
		     k, (uint64_t)a.len, n, en((int)rc), en(want[0]),
		     want[1] >= 0 ? " or " : "", want[1] >= 0 ? en(want[1]) : "");
	/* refused for what it says: the process failed to quiesce */
	*counted = KVIEW && (rc == -EINVAL || rc == -EPROTO);
	if (rc)
		STAT(ST_V_SNAP_REFUSED);
	return rc;
}

static long v_answer(uint64_t s, uint32_t status)
{
	struct ibckpt_quiesced q = { .session = s, .status = status,
				     .n_outstanding = rnd(10), .n_drained = rnd(1000) };

	return ioctl(VFD, IBCKPT_IOC_QUIESCED, &q) ? -errno : 0;
}

static enum snapkind pick_snapkind(void)
{
	unsigned int x = rnd(100);

	return x < 45 ? SK_VALID : x < 57 ? SK_QP : x < 67 ? SK_FRAME : x < 74 ? SK_HDR :
	       x < 80 ? SK_FLIP : x < 85 ? SK_SHORT : x < 90 ? SK_LONG : x < 95 ? SK_FAULT :
	       SK_SESSION;
}

static void victim_quiesce(uint64_t s)
{
	bool counted = false, done = false, c2;
	unsigned int b = rnd(100);
	long rc;

	if (chance(30))
		msleep(rnd(200));
	/* a snapshot, maybe two (only one is kept) */
	for (unsigned int i = chance(70) ? 1 + (chance(20) ? 1 : 0) : 0; i; i--) {
		rc = victim_snapshot(s, done ? SK_VALID : pick_snapkind(), done, &c2);
		if (done)
			EXPECT_IN("a second SNAPSHOT", rc, EALREADY, ESRCH);
		else if (!rc)
			STAT(ST_V_SNAP_OK);
		done |= !rc || c2;
		counted |= c2;
	}
	if (b < 5)
		return;	/* never answers: the freeze times out */
	if (b < 10) {	/* fails: the freeze aborts */
		rc = v_answer(s, 1 + rnd(MAX_ERRNO));
		if (counted)
			EXPECT_IN("QUIESCED with an error, after a refused snapshot", rc, EALREADY, ESRCH);
		else
			EXPECT_IN("QUIESCED with an error", rc, 0, ESRCH);
	} else {
		if (b < 15)
			expect("QUIESCED with a status that is no errno",
			       v_answer(s, MAX_ERRNO + 1 + rnd(1000)), EINVAL);
		/*
		 * not s + 1: a victim late with an old request may already be
		 * asked for the next session (seen on the debug kernel: the
		 * "other" answer counted, and the next request's answer was
		 * then EALREADY)
		 */
		if (b < 22)
			expect("QUIESCED for another session",
			       v_answer(chance(50) ? s + (1ull << 40) + rnd(5) : 0, 0), ESRCH);
		rc = v_answer(s, 0);
		if (counted)
			EXPECT_IN("QUIESCED after a refused snapshot", rc, EALREADY, ESRCH);
		else
			EXPECT_IN("QUIESCED", rc, 0, ESRCH);
	}
	if (!rc)
		STAT(ST_V_ANSWER_OK);
	if ((!rc || counted) && chance(20))
		EXPECT_IN("QUIESCED twice", v_answer(s, 0), EALREADY, ESRCH);
	if ((!rc || counted) && chance(20))
		EXPECT_IN("SNAPSHOT after the answer", victim_snapshot(s, SK_VALID, true, &c2),
			  EALREADY, ESRCH);
}

static void victim_run(uint64_t seed, int ready)
{
	struct ibckpt_register r = { .abi_version = IBCKPT_ABI_VERSION };
	struct ibckpt_event e;
	uint64_t cur = 0, last = 0;
	struct pollfd p;
	pthread_t t;
	size_t n;
	long rc;
	unsigned int mode;
	bool valid;

	rng_seed(seed);
	OPN = "victim";
	setpgid(0, 0);
	VBIG = mmap(NULL, VBIG_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	VFD = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	if (VBIG == MAP_FAILED || VFD < 0 || ioctl(VFD, IBCKPT_IOC_REGISTER, &r)) {
		FAIL("the victim cannot register: %s", en(-errno));
		_exit(1);
	}
	atomic_store(&SH->v_pid, getpid());
	pthread_create(&t, NULL, victim_spin, (void *)(uintptr_t)r64());
	pthread_create(&t, NULL, victim_sleep, NULL);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	close(ready);
	for (;;) {
		static const size_t sizes[] = { 16, 16, 16, 16, 24, 32, 4096, 1u << 20 };

		n = chance(90) ? PICK(sizes) : rnd(16);
		mode = rnd(3);
		if (mode == 0) {	/* poll, then read what is there */
			p.fd = VFD;
			p.events = POLLIN;
			if (poll(&p, 1, (int)rnd(50)) <= 0)
				continue;
			if (p.revents != POLLIN)
				FAIL("the victim's poll: revents %#x", p.revents);
			set_nonblock(VFD, true);
			rc = read(VFD, ARENA, n);
			rc = rc < 0 ? -errno : rc;
		} else if (mode == 1) {
			set_nonblock(VFD, true);
			rc = read(VFD, ARENA, n);
			rc = rc < 0 ? -errno : rc;
			if (rc == -EAGAIN) {
				msleep(rnd(20));
				continue;
			}
		} else {
			set_nonblock(VFD, false);
			rc = read_interrupted(VFD, ARENA, n, 100);
			if (rc == -EINTR)
				continue;
		}
		if (n < sizeof(e)) {
			expect("a short read", rc, EINVAL);
			continue;
		}
		if (rc != sizeof(e)) {
			FAIL("the victim's read of %zu: %ld (%s)", n, rc, rc < 0 ? en((int)rc) : "");
			continue;
		}
		memcpy(&e, ARENA, sizeof(e));
		if (e.flags)
			FAIL("event flags %#x", e.flags);
		switch (e.type) {
		case IBCKPT_EV_QUIESCE:
			STAT(ST_V_QUIESCE);
			if (cur)
				FAIL("asked to quiesce for session %" PRIu64 " while %" PRIu64
				     " has not ended", (uint64_t)e.session, cur);
			if (e.session <= last)
				FAIL("asked to quiesce for session %" PRIu64 " after %" PRIu64,
				     (uint64_t)e.session, last);
			cur = last = e.session;
			victim_quiesce(cur);
			break;
		case IBCKPT_EV_THAW:
		case IBCKPT_EV_ABORT:
			STAT(e.type == IBCKPT_EV_THAW ? ST_V_THAW : ST_V_ABORT);
			if (e.session != cur)
				FAIL("end of session %" PRIu64 ", the one asked is %" PRIu64,
				     (uint64_t)e.session, cur);
			cur = 0;
			if (chance(30)) {	/* a late answer, a late snapshot */
				STAT(ST_V_STALE);
				expect("QUIESCED after the session ended", v_answer(e.session, 0),
				       ESRCH);
				expect("SNAPSHOT after the session ended",
				       victim_snapshot(e.session, SK_VALID, false, &valid), ESRCH);
			}
			break;
		default:
			FAIL("event type %u (session %" PRIu64 ")", e.type, (uint64_t)e.session);
		}
	}
}

static pid_t spawn_victim(const char *file)
{
	uint64_t seed = r64();
	int p[2];
	char c;
	pid_t pid;
	FILE *f;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (!pid) {
		close(p[0]);
		alarm(0);
		victim_run(seed, p[1]);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1) {
		FAIL("the victim did not start");
		close(p[0]);
		return -1;
	}
	close(p[0]);
	setpgid(pid, pid);
	if (file) {
		f = fopen(file, "w");
		if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f))
			FAIL("cannot write %s", file);
	}
	return pid;
}

/* A child that only ticks: in a group of its own, a session of its own, or @cg. */
static pid_t spawn_decoy(int how, const char *cg)
{
	pid_t pid;
	char path[600];
	int fd;

	fflush(NULL);
	pid = fork();
	if (pid)
		return pid;
	alarm(0);
	if (how == 0)
		setpgid(0, 0);
	else if (how == 1)
		setsid();
	if (cg) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(1);
		close(fd);
		setpgid(0, 0);
	}
	for (;;)
		msleep(5);
}

/* ------------------------------------------------------------------ */
/* Setup, the loop, cleanup.                                           */
/* ------------------------------------------------------------------ */

static void add_cgfd(int fd)
{
	if (fd >= 0 && NCGFDS < ARRAY_SIZE(CGFDS))
		CGFDS[NCGFDS++] = fd;
}

static void find_mount(const char *type, char *out, size_t len)
{
	char dev[256], dir[400], fs[64];
	FILE *f = fopen("/proc/self/mounts", "r");

	out[0] = 0;
	if (!f)
		return;
	while (fscanf(f, "%255s %399s %63s %*[^\n]", dev, dir, fs) == 3)
		if (!strcmp(fs, type)) {
			snprintf(out, len, "%s", dir);
			break;
		}
	fclose(f);
}

static void setup_fds(void)
{
	char cg2[400], cg1[400], d[700];
	int fd, p[2];

	find_mount("cgroup2", cg2, sizeof(cg2));
	find_mount("cgroup", cg1, sizeof(cg1));
	if (cg2[0]) {
		add_cgfd(open(cg2, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (SAFE) {
			snprintf(CGDIR, sizeof(CGDIR), "%s/ibckpt-fuzz.%d", cg2, (int)getpid());
			if (mkdir(CGDIR, 0755)) {
				CGDIR[0] = 0;
			} else {
				snprintf(d, sizeof(d), "%s/empty", CGDIR);
				mkdir(d, 0755);
				add_cgfd(open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
				add_cgfd(open(d, O_PATH | O_CLOEXEC));
				snprintf(d, sizeof(d), "%s/decoy", CGDIR);
				mkdir(d, 0755);
				DECOY_CG = spawn_decoy(2, d);
				add_cgfd(open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
				add_cgfd(open(CGDIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
			}
		}
	}
	if (cg1[0])
		add_cgfd(open(cg1, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	add_cgfd(open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	add_cgfd(open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	add_cgfd(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	add_cgfd(open("/dev/null", O_RDONLY | O_CLOEXEC));
	add_cgfd(open("/proc/self/status", O_RDONLY | O_CLOEXEC));
	if (!pipe2(p, O_CLOEXEC)) {
		add_cgfd(p[0]);
		add_cgfd(p[1]);
	}
	add_cgfd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);	/* a number that is closed */
	if (fd >= 0) {
		close(fd);
		if (NCGFDS < ARRAY_SIZE(CGFDS))
			CGFDS[NCGFDS++] = fd + 100;
		if (NCGFDS < ARRAY_SIZE(CGFDS))
			CGFDS[NCGFDS++] = 1000;
	}
}

static void setup_safe_ids(void)
{
	pid_t ids[] = { VICTIM, DECOY_GRP, DECOY_SID, DECOY_CG, getpid(), getpgrp(), getsid(0), 1 };
	uint32_t never[] = { 0, PID_MAX_LIMIT, PID_MAX_LIMIT + 1, 0x7fffffff, 0x80000000,
			     0xffffffff };

	for (size_t i = 0; i < ARRAY_SIZE(ids); i++)
		if (ids[i] > 0)
			SAFE_IDS[NSAFE++] = (uint32_t)ids[i];
	for (size_t i = 0; i < ARRAY_SIZE(never); i++)
		SAFE_IDS[NSAFE++] = never[i];
}

struct op {
	const char *name;
	void (*fn)(void);
	unsigned int weight;
	bool priv_only;
};

static const struct op OPS[] = {
	{ "nl-fuzz", op_nl_fuzz, 24, false },
	{ "nl-clean", op_nl_clean, 14, false },
	{ "nl-dump-cut", op_nl_dump_cut, 6, false },
	{ "nl-garbage", op_nl_garbage, 3, false },
	{ "nl-reopen", op_nl_reopen, 2, false },
	{ "nl-two-dumps", op_nl_two_dumps, 2, false },
	{ "nl-creds", op_nl_creds, 1, true },
	{ "nl-victim", op_nl_victim, 6, false },
	{ "cd-open", op_cd_open, 5, false },
	{ "cd-close", op_cd_close, 4, false },
	{ "cd-register", op_cd_register, 6, false },
	{ "cd-ioctl", op_cd_ioctl, 10, false },
	{ "cd-answer", op_cd_answer, 6, false },
	{ "cd-read", op_cd_read, 8, false },
	{ "cd-block", op_cd_block, 2, false },
	{ "cd-poll", op_cd_poll, 3, false },
	{ "cd-threads", op_cd_threads, 3, false },
	{ "cd-fork", op_cd_fork, 3, false },
	{ "cd-close-reading", op_cd_close_reading, 1, false },
	{ "cd-misc", op_cd_misc, 4, false },
	{ "cd-compat", op_cd_compat, 3, false },
#ifdef IBCKPT_IOC_SHARE_CREDS
	{ "cd-share-creds", op_cd_share_creds, 2, false },
#endif
};

static void on_alarm(int sig)
{
	char m[160];
	int n;

	(void)sig;
	n = snprintf(m, sizeof(m), "fuzz: seed %" PRIu64 " iteration %lu (%s): stuck for 60 s\n",
		     SEED, ITER, MAINOP);
	if (write(2, m, (size_t)n) < 0)
		_exit(3);
	_exit(3);
}

static void usage(void)
{
	fprintf(stderr, "usage: fuzz [--seed N] [--iterations M] [--time SECS] "
		"[--victim-file FILE] [-v]\n");
	exit(2);
}

static void cleanup(void)
{
	struct nls s;
	int st;

	MAINOP = "cleanup";
	OPN = "cleanup";
	alarm(120);
	if (SAFE && !nl_open(&s, false)) {
		PRIV = true;
		for (unsigned int i = 0; i < NOURS; i++) {
			struct mb m = { 0 };
			struct {
				struct nlmsghdr h;
				struct genlmsghdr g;
			} q = { { 0 }, { .cmd = IBCKPT_CMD_THAW, .version = 1 } };
			struct sockaddr_nl k = { .nl_family = AF_NETLINK };

			q.h.nlmsg_type = FAMILY;
			q.h.nlmsg_flags = NLM_F_REQUEST;
			mb_put(&m, &q, sizeof(q));
			put_u64(&m, IBCKPT_A_SESSION_ID, OURS[i]);
			((struct nlmsghdr *)m.b)->nlmsg_len = (uint32_t)m.len;
			sendto(s.fd, m.b, m.len, 0, (struct sockaddr *)&k, sizeof(k));
			while (recv(s.fd, RX, sizeof(RX), MSG_DONTWAIT) > 0)
				;
			free(m.b);
		}
		nl_close(&s);
	}
	for (int i = 0; i < NSOCK; i++)
		nl_close(&SOCKS[i]);
	for (int i = 0; i < NCD; i++)
		cd_close(&CD[i]);
	pid_t kids[] = { VICTIM, DECOY_GRP, DECOY_SID, DECOY_CG };

	for (size_t i = 0; i < ARRAY_SIZE(kids); i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (size_t i = 0; i < ARRAY_SIZE(kids); i++)
		if (kids[i] > 0 && !reap(kids[i], 30, &st))
			FAIL("child %d did not die", (int)kids[i]);
	if (CGDIR[0]) {
		char d[700];

		for (int i = 0; i < 100; i++) {
			snprintf(d, sizeof(d), "%s/decoy", CGDIR);
			rmdir(d);
			snprintf(d, sizeof(d), "%s/empty", CGDIR);
			rmdir(d);
			if (!rmdir(CGDIR) || errno == ENOENT)
				break;
			msleep(20);
		}
	}
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, iters = 0;
	double secs = 0, t0, el;
	bool have_seed = false;
	const char *vfile = NULL;
	unsigned int total = 0, w, i;
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t s;
	int err, fails;
	struct cd *c;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--seed") && a + 1 < argc) {
			seed = strtoull(argv[++a], NULL, 0);
			have_seed = true;
		} else if (!strcmp(argv[a], "--iterations") && a + 1 < argc) {
			iters = strtoull(argv[++a], NULL, 0);
		} else if (!strcmp(argv[a], "--time") && a + 1 < argc) {
			secs = strtod(argv[++a], NULL);
		} else if (!strcmp(argv[a], "--victim-file") && a + 1 < argc) {
			vfile = argv[++a];
		} else if (!strcmp(argv[a], "-v") || !strcmp(argv[a], "--verbose")) {
			VERBOSE = true;
		} else {
			usage();
		}
	}
	if (!iters && !secs)
		secs = 10;
	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
	}
	SEED = seed;
	rng_seed(seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (SH == MAP_FAILED) {
		perror("fuzz: mmap");
		return 2;
	}
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	signal(SIGPIPE, SIG_IGN);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	PRIV = has_cap(CAP_SYS_ADMIN) || has_cap(CAP_CHECKPOINT_RESTORE);
	SAFE = PRIV;
	printf("fuzz: seed %" PRIu64 " (replay: --seed %" PRIu64 "), %s, uid %d\n", seed, seed,
	       PRIV ? "privileged" : "unprivileged", (int)getuid());

	ARENA = arena_map(false);
	ARENA32 = arena_map(true);
	/*
	 * A page no access reaches, kept reserved: a hole left by munmap() is
	 * handed to the next one-page mmap() of the process (the fuzzer then
	 * expected EFAULT from memory that had become readable).
	 */
	UNMAPPED = (uintptr_t)mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ARENA32)
		UNMAPPED32 = (uintptr_t)mmap(NULL, PG, PROT_NONE,
					     MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (!ARENA) {
		perror("fuzz: mmap");
		return 2;
	}
	err = resolve_family();
	if (err) {
		fprintf(stderr, "fuzz: the generic netlink family \"%s\" is not there (%s): "
			"is ibckpt.ko loaded?\n", IBCKPT_GENL_NAME, en(err));
		return 2;
	}
	if (access("/dev/ibckpt", R_OK | W_OK)) {
		fprintf(stderr, "fuzz: /dev/ibckpt: %s\n", strerror(errno));
		return 2;
	}

	/* children first: they must not hold our sockets and files */
	VICTIM = spawn_victim(vfile);
	DECOY_GRP = spawn_decoy(0, NULL);
	DECOY_SID = spawn_decoy(1, NULL);
	setup_fds();
	setup_safe_ids();
	for (i = 0; i < NSOCK; i++)
		SOCKS[i].fd = -1;
	for (i = 0; i < NCD; i++)
		CD[i].fd = -1;
	printf("fuzz: family %#x, victim pgid %d, decoys %d %d %d, %u candidate cgroup fds\n",
	       FAMILY, (int)VICTIM, (int)DECOY_GRP, (int)DECOY_SID, (int)DECOY_CG, NCGFDS);

	/* sweeps: every command in both modes; every ioctl number of the magic */
	MAINOP = OPN = "sweep";
	alarm(120);
	for (int cmd = 0; cmd < 256; cmd++)
		for (int dump = 0; dump < 2; dump++) {
			if (SOCKS[0].fd < 0 && nl_open(&SOCKS[0], false))
				break;
			{
				struct built b;
				struct mb m = { 0 };
				struct xchg *x = calloc(1, sizeof(*x));

				x->s = &SOCKS[0];
				build_req(&m, &SOCKS[0], true, cmd, dump, &b);
				/* no selector: nothing is frozen by a sweep */
				if (cmd == IBCKPT_CMD_FREEZE)
					m.len = b.off + NLMSG_HDRLEN + GENL_HDRLEN,
					((struct nlmsghdr *)m.b)->nlmsg_len = (uint32_t)m.len;
				if (x_send(x, m.b, m.len, &b, 1))
					x_finish(x, -1, RXBUF);
				free(m.b);
				free(x);
			}
		}
	c = &CD[0];
	cd_open(c, O_RDWR);
	ioctl_sweep(c);
	cd_close(c);
	cd_open(c, O_RDWR);
	cd_known_ioctl(c, 0, native_ioctl, false);
	ioctl_sweep(c);

	for (i = 0; i < ARRAY_SIZE(OPS); i++)
		total += OPS[i].priv_only && !PRIV ? 0 : OPS[i].weight;
	t0 = now();
	for (ITER = 0; !iters || ITER < iters; ITER++) {
		el = now() - t0;
		if (secs && el >= secs)
			break;
		w = rnd(total);
		for (i = 0; i < ARRAY_SIZE(OPS); i++) {
			if (OPS[i].priv_only && !PRIV)
				continue;
			if (w < OPS[i].weight)
				break;
			w -= OPS[i].weight;
		}
		MAINOP = OPN = OPS[i].name;
		if (VERBOSE)
			printf("fuzz: %lu %s\n", ITER, OPS[i].name);
		alarm(60);
		OPS[i].fn();
	}
	el = now() - t0;
	alarm(0);
	cleanup();
	if (vfile)
		unlink(vfile);

	fails = atomic_load(&SH->failures);
	printf("fuzz: seed %" PRIu64 ": %lu iterations in %.1f s (%s), %d failures\n", seed, ITER,
	       el, PRIV ? "privileged" : "unprivileged", fails);
	printf("fuzz: counts:");
	for (i = 0; i < ST_N; i++)
		printf(" %s=%lu", stat_name[i], atomic_load(&SH->st[i]));
	printf("\nfuzz: netlink errors:");
	for (i = 0; i <= MAX_ERRNO; i++)
		if (atomic_load(&SH->nl_err[i]))
			printf(" %s=%lu", i ? en((int)i) : "0", atomic_load(&SH->nl_err[i]));
	printf("\n");
	if (fails)
		printf("fuzz: FAILED: replay with --seed %" PRIu64 " --iterations %lu\n", seed, ITER);
	return fails ? 1 : 0;
}
