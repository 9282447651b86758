// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * criutest: a small process tree for checking that criu dump/restore keeps
 * what the restart of an RDMA job relies on (vm/60-criu-smoke).
 *
 *   criutest run DIR
 *
 * Started with setsid (it is then its session's and group's leader), it sets
 * up, at fixed, unusual descriptor numbers:
 *   - MEM_MB MiB of anonymous memory filled with a pattern, plus one shared
 *     anonymous page (MAP_SHARED) it shares with its child;
 *   - a pipe (both ends held, fds 40/41) holding PIPE_BYTES unread bytes;
 *   - an eventfd (fd 60) whose counter is EFD_VALUE;
 *   - a "wake" pipe (fds 50/51): a second thread blocks in read() on 50;
 *   - a child blocked in read() on a pipe (fds 70/71) the parent writes to.
 * It then writes DIR/state (shell variables: PID PGID SID TID CHILD WAKE_W ...)
 * and waits for its reader thread.
 *
 * The test dumps and restores the tree, then writes one byte 'x' into the
 * wake pipe by opening /proc/PID/fd/51. The reader thread's read() must
 * return that byte (not EINTR, not EOF). The main thread then checks its
 * pid, group and session against what it recorded, the memory, the pipe's
 * unread bytes, the eventfd counter, and wakes the child, which checks its
 * own pid, parent, group, session and memory and writes its verdict into the
 * shared page. DIR/result gets "ok" or "FAIL: ..." lines; the exit status is
 * 0 on success.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MEM_MB 8
#define PIPE_BYTES 20000
#define EFD_VALUE 0x1234567ULL
#define FD_PIPE_R 40
#define FD_PIPE_W 41
#define FD_WAKE_R 50
#define FD_WAKE_W 51
#define FD_EFD 60
#define FD_CHILD_R 70
#define FD_CHILD_W 71

static const char *dir;
static uint64_t *mem;
static size_t mem_words;
static char *shpage;
static pid_t my_pid, my_pgid, my_sid, child_pid;
static pid_t reader_tid;
static char reader_byte;
static int reader_err; /* errno of the failed read, -1 on EOF */
static char failures[4096];

static void failf(const char *fmt, ...)
{
	size_t n = strlen(failures);
	va_list ap;

	if (n + 8 >= sizeof(failures))
		return;
	n += snprintf(failures + n, sizeof(failures) - n, "FAIL: ");
	va_start(ap, fmt);
	n += vsnprintf(failures + n, sizeof(failures) - n, fmt, ap);
	va_end(ap);
	if (n + 1 < sizeof(failures))
		strcat(failures, "\n");
}

static void die(const char *what)
{
	perror(what);
	exit(3);
}

static uint64_t pattern(uint64_t i)
{
	/* splitmix64 of the index: every word differs, nothing is zero-filled */
	uint64_t z = i + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned char pipe_byte(size_t i)
{
	return (unsigned char)(i * 131 + 7);
}

/* how many words of the pattern area differ from the pattern */
static size_t mem_bad(void)
{
	size_t i, bad = 0;

	for (i = 0; i < mem_words; i++)
		bad += mem[i] != pattern(i);
	return bad;
}

/* put a new descriptor for what `fd` refers to at `want`, close `fd` */
static void place(int fd, int want)
{
	if (dup2(fd, want) != want)
		die("dup2");
	close(fd);
}

static void write_file(const char *name, const char *text)
{
	char path[4096], tmp[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		die(tmp);
	if (rename(tmp, path))
		die(path);
}

static void *reader(void *arg)
{
	char c;
	ssize_t n;

	(void)arg;
	__atomic_store_n(&reader_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	n = read(FD_WAKE_R, &c, 1);
	if (n == 1)
		reader_byte = c;
	else
		reader_err = n == 0 ? -1 : errno;
	return NULL;
}

static void child_main(void)
{
	pid_t parent = my_pid;
	char c;
	ssize_t n;
	size_t bad;

	close(FD_CHILD_W);
	n = read(FD_CHILD_R, &c, 1);
	if (n != 1) {
		snprintf(shpage, 256, "child: read() returned %zd (%s)", n,
			 n < 0 ? strerror(errno) : "EOF");
		_exit(1);
	}
	if (getppid() != parent || getpgid(0) != parent || getsid(0) != parent) {
		snprintf(shpage, 256, "child: ppid %d pgid %d sid %d, expected %d",
			 (int)getppid(), (int)getpgid(0), (int)getsid(0), (int)parent);
		_exit(1);
	}
	bad = mem_bad();
	if (bad) {
		snprintf(shpage, 256, "child: %zu memory words differ", bad);
		_exit(1);
	}
	snprintf(shpage, 256, "child ok");
	_exit(0);
}

static void check_pipe(void)
{
	static unsigned char buf[PIPE_BYTES + 64];
	size_t got = 0, i;
	ssize_t n;
	struct stat st;

	if (fstat(FD_PIPE_R, &st) || !S_ISFIFO(st.st_mode) ||
	    fstat(FD_PIPE_W, &st) || !S_ISFIFO(st.st_mode)) {
		failf("fds %d/%d are not a pipe any more", FD_PIPE_R, FD_PIPE_W);
		return;
	}
	if (fcntl(FD_PIPE_R, F_SETFL, O_NONBLOCK))
		failf("fcntl(%d): %s", FD_PIPE_R, strerror(errno));
	for (;;) {
		n = read(FD_PIPE_R, buf + got, sizeof(buf) - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf))
			break;
	}
	if (got != PIPE_BYTES) {
		failf("the pipe held %zu unread bytes, expected %d", got, PIPE_BYTES);
		return;
	}
	for (i = 0; i < got; i++)
		if (buf[i] != pipe_byte(i)) {
			failf("pipe byte %zu differs", i);
			return;
		}
	/* and the pipe still works both ways */
	if (write(FD_PIPE_W, "z", 1) != 1 || read(FD_PIPE_R, buf, 1) != 1 || buf[0] != 'z')
		failf("the restored pipe does not carry a new byte");
}

static void check_eventfd(void)
{
	char link[64], path[64];
	ssize_t n;
	uint64_t v = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", FD_EFD);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	if (strcmp(link, "anon_inode:[eventfd]")) {
		failf("fd %d is '%s', not an eventfd", FD_EFD, link);
		return;
	}
	n = read(FD_EFD, &v, sizeof(v));
	if (n != sizeof(v) || v != EFD_VALUE)
		failf("eventfd read %zd: counter %#llx, expected %#llx", n,
		      (unsigned long long)v, (unsigned long long)EFD_VALUE);
	/* nonblocking and now zero */
	if (read(FD_EFD, &v, sizeof(v)) != -1 || errno != EAGAIN)
		failf("eventfd not empty (or blocking) after the read");
}

int main(int argc, char **argv)
{
	int p[2], efd, status;
	pthread_t th;
	size_t i;
	char state[1024];
	pid_t w;

	if (argc != 3 || strcmp(argv[1], "run")) {
		fprintf(stderr, "usage: criutest run DIR\n");
		return 2;
	}
	dir = argv[2];
	/* a dead child must give a verdict, not a silent death on its pipe */
	signal(SIGPIPE, SIG_IGN);
	my_pid = getpid();
	my_pgid = getpgid(0);
	my_sid = getsid(0);

	mem_words = (size_t)MEM_MB << 17;
	mem = mmap(NULL, mem_words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	shpage = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || shpage == MAP_FAILED)
		die("mmap");
	for (i = 0; i < mem_words; i++)
		mem[i] = pattern(i);
	strcpy(shpage, "child has not reported");

	if (pipe(p))
		die("pipe");
	place(p[0], FD_PIPE_R);
	place(p[1], FD_PIPE_W);
	{
		static unsigned char buf[PIPE_BYTES];

		for (i = 0; i < PIPE_BYTES; i++)
			buf[i] = pipe_byte(i);
		if (write(FD_PIPE_W, buf, PIPE_BYTES) != PIPE_BYTES)
			die("write pipe");
	}
	if (pipe(p))
		die("pipe");
	place(p[0], FD_WAKE_R);
	place(p[1], FD_WAKE_W);
	if (pipe(p))
		die("pipe");
	place(p[0], FD_CHILD_R);
	place(p[1], FD_CHILD_W);
	efd = eventfd(0, EFD_NONBLOCK);
	if (efd < 0)
		die("eventfd");
	place(efd, FD_EFD);
	{
		uint64_t v = EFD_VALUE;

		if (write(FD_EFD, &v, sizeof(v)) != sizeof(v))
			die("write eventfd");
	}

	child_pid = fork();
	if (child_pid < 0)
		die("fork");
	if (child_pid == 0)
		child_main();
	close(FD_CHILD_R);

	if (pthread_create(&th, NULL, reader, NULL))
		die("pthread_create");
	while (!__atomic_load_n(&reader_tid, __ATOMIC_SEQ_CST))
		usleep(1000);

	snprintf(state, sizeof(state),
		 "PID=%d\nPGID=%d\nSID=%d\nTID=%d\nCHILD=%d\n"
		 "PIPE_R=%d\nPIPE_W=%d\nWAKE_R=%d\nWAKE_W=%d\nEFD=%d\nCHILD_R=%d\nCHILD_W=%d\n",
		 (int)my_pid, (int)my_pgid, (int)my_sid, (int)reader_tid, (int)child_pid,
		 FD_PIPE_R, FD_PIPE_W, FD_WAKE_R, FD_WAKE_W, FD_EFD, FD_CHILD_R, FD_CHILD_W);
	write_file("state", state);
	printf("criutest: pid %d ready\n", (int)my_pid);
	fflush(stdout);

	if (pthread_join(th, NULL))
		die("pthread_join");

	/* restored (or not): check everything, the reader's byte first */
	if (reader_err)
		failf("the blocked read() ended with %s", reader_err < 0 ? "EOF" : strerror(reader_err));
	else if (reader_byte != 'x')
		failf("the blocked read() returned byte %#x, expected 'x'", (unsigned char)reader_byte);
	if (getpid() != my_pid || getpgid(0) != my_pgid || getsid(0) != my_sid)
		failf("pid/pgid/sid %d/%d/%d, expected %d/%d/%d", (int)getpid(), (int)getpgid(0),
		      (int)getsid(0), (int)my_pid, (int)my_pgid, (int)my_sid);
	if (my_pgid != my_pid || my_sid != my_pid)
		failf("not started with setsid (pgid %d, sid %d)", (int)my_pgid, (int)my_sid);
	i = mem_bad();
	if (i)
		failf("%zu of %zu memory words differ", i, mem_words);
	check_pipe();
	check_eventfd();

	if (write(FD_CHILD_W, "c", 1) != 1)
		failf("cannot wake the child: %s", strerror(errno));
	w = waitpid(child_pid, &status, 0);
	if (w != child_pid)
		failf("waitpid(%d): %s", (int)child_pid, strerror(errno));
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		failf("child %d: status %#x: %s", (int)child_pid, status, shpage);
	else if (strcmp(shpage, "child ok"))
		failf("the shared page says '%s'", shpage);

	write_file("result", failures[0] ? failures : "ok\n");
	fputs(failures[0] ? failures : "criutest: ok\n", stdout);
	return failures[0] ? 1 : 0;
}
