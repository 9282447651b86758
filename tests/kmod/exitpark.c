// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * exitpark: a thread whose park work runs inside do_exit(), before
 * PF_EXITING is set, for
 * tests/vm/cases/70-freeze-exiting.sh. A traced thread is held at a
 * ptrace stop while a freeze queues its park work (a stopped thread is not
 * woken for it), then let go, so that the work runs where MODE says:
 *
 *   notify  held at the syscall-entry stop of its exit; let go, do_exit()
 *           reports PTRACE_EVENT_EXIT, and ptrace_notify() runs the
 *           thread's task works before it stops
 *   uring   held at the PTRACE_EVENT_EXIT stop, with an io_uring request
 *           in flight on an io_uring file (POLL_ADD on another ring: a
 *           "tracked" request); let go, io_uring_files_cancel() cancels it
 *           and runs the thread's task works (io_run_task_work())
 *   plain   held at the PTRACE_EVENT_EXIT stop, no io_uring: the work runs
 *           from exit_task_work(), after PF_EXITING (the control)
 *
 * HOW: "thread", the thread calls exit() while the main thread lives on
 * (nothing in the thread group says it is exiting, only its system call);
 * "group", it calls exit_group().
 *
 *   exitpark MODE HOW
 *
 * The job is a child process in a process group of its own: its main
 * thread sleeps in nanosleep() (it parks), its second thread T exits. This
 * program, the child's parent, traces T. It prints "ready PGID TID" once T
 * is held, then reads a line from standard input (the test has frozen the
 * job meanwhile and T's park work is pending), lets T go and prints within
 * 3 s "exit-event" (T stopped at its exit event, notify only) and
 * "exited" (T is gone), or "stuck" (T is neither: it parked inside
 * do_exit()). Then it reads another line (the job was thawed), waits for T
 * to exit (printing "exited" if it had not yet), kills the child and exits
 * 0; 1 on a setup failure, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>

enum mode { NOTIFY, URING, PLAIN };

static enum mode mode;
static int group;
static int ctl[2], info[2];

static void die(const char *what)
{
	fprintf(stderr, "exitpark: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Ring A polls ring B, which never becomes readable: a tracked request. */
static void uring_inflight(void)
{
	struct io_uring_params pa = { 0 }, pb = { 0 };
	struct io_uring_sqe *sqes, *sqe;
	unsigned int *tail, *array, mask, idx;
	int a, b;
	void *sq;

	a = (int)syscall(__NR_io_uring_setup, 4, &pa);
	b = (int)syscall(__NR_io_uring_setup, 4, &pb);
	if (a < 0 || b < 0)
		die("io_uring_setup");
	sq = mmap(NULL, pa.sq_off.array + pa.sq_entries * sizeof(unsigned int),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, a, IORING_OFF_SQ_RING);
	sqes = mmap(NULL, pa.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, a, IORING_OFF_SQES);
	if (sq == MAP_FAILED || sqes == MAP_FAILED)
		die("mmap io_uring");
	tail = (unsigned int *)((char *)sq + pa.sq_off.tail);
	array = (unsigned int *)((char *)sq + pa.sq_off.array);
	mask = *(unsigned int *)((char *)sq + pa.sq_off.ring_mask);
	idx = *tail & mask;
	sqe = &sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = b;
	sqe->poll32_events = POLLIN;
	sqe->user_data = 1;
	array[idx] = idx;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, a, 1, 0, 0, NULL, 0) != 1)
		die("io_uring_enter");
}

static void *leaver(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char c;

	(void)arg;
	if (mode == URING)
		uring_inflight();
	if (write(info[1], &tid, sizeof(tid)) != sizeof(tid))
		die("write");
	while (read(ctl[0], &c, 1) < 0 && errno == EINTR)
		;
	syscall(group ? SYS_exit_group : SYS_exit, 0);
	return NULL;
}

static void child(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	pthread_t t;

	setpgid(0, 0);
	if (pthread_create(&t, NULL, leaver, NULL))
		_exit(1);
	for (;;)
		nanosleep(&ts, NULL);
}

/* Wait for @tid's next event, at most @ms (-1: for ever); 0 if none came. */
static int wait_tid(pid_t tid, int *st, int ms)
{
	struct timespec ts = { 0, 1000 * 1000 };
	int i;

	for (i = 0; ms < 0 || i < ms; i++) {
		pid_t w = waitpid(tid, st, __WALL | WNOHANG);

		if (w == tid)
			return 1;
		if (w < 0)
			die("waitpid");
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int is_exit_event(int st)
{
	return WIFSTOPPED(st) && st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8));
}

/* notify: step T through its system calls until it enters exit()/exit_group(). */
static void hold_at_exit_entry(pid_t tid)
{
	struct __ptrace_syscall_info si;
	int st;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		die("PTRACE_INTERRUPT");
	if (waitpid(tid, &st, __WALL) != tid)
		die("waitpid");
	if (ptrace(PTRACE_SYSCALL, tid, 0, 0))
		die("PTRACE_SYSCALL");
	if (write(ctl[1], "g", 1) != 1)
		die("write");
	for (;;) {
		if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
			die("waitpid (T)");
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			memset(&si, 0, sizeof(si));
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(si), &si) <= 0)
				die("PTRACE_GET_SYSCALL_INFO");
			if (si.op == PTRACE_SYSCALL_INFO_ENTRY &&
			    si.entry.nr == (uint64_t)(group ? SYS_exit_group : SYS_exit))
				return;
		}
		if (ptrace(PTRACE_SYSCALL, tid, 0, 0))
			die("PTRACE_SYSCALL");
	}
}

int main(int argc, char **argv)
{
	char line[64];
	pid_t pid, tid;
	int st, got, exited = 0;

	if (argc != 3 || (strcmp(argv[2], "thread") && strcmp(argv[2], "group")))
		goto usage;
	if (!strcmp(argv[1], "notify"))
		mode = NOTIFY;
	else if (!strcmp(argv[1], "uring"))
		mode = URING;
	else if (!strcmp(argv[1], "plain"))
		mode = PLAIN;
	else
		goto usage;
	group = !strcmp(argv[2], "group");
	if (pipe(ctl) || pipe(info))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid)
		child();
	setpgid(pid, pid);
	if (read(info[0], &tid, sizeof(tid)) != sizeof(tid))
		die("read");
	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACEEXIT | PTRACE_O_TRACESYSGOOD))
		die("PTRACE_SEIZE");
	if (mode == NOTIFY) {
		hold_at_exit_entry(tid);
	} else {
		if (write(ctl[1], "g", 1) != 1)
			die("write");
		if (waitpid(tid, &st, __WALL) != tid || !is_exit_event(st))
			die("waitpid (T's exit event)");
	}
	printf("ready %d %d\n", pid, tid);
	fflush(stdout);

	if (!fgets(line, sizeof(line), stdin))
		goto out;
	if (ptrace(PTRACE_CONT, tid, 0, 0))
		die("PTRACE_CONT");
	got = wait_tid(tid, &st, 3000);
	if (got && mode == NOTIFY && is_exit_event(st)) {
		printf("exit-event\n");
		fflush(stdout);
		if (ptrace(PTRACE_CONT, tid, 0, 0))
			die("PTRACE_CONT");
		got = wait_tid(tid, &st, 3000);
	}
	if (got && (WIFEXITED(st) || WIFSIGNALED(st))) {
		printf("exited\n");
		exited = 1;
	} else {
		printf("stuck\n");
	}
	fflush(stdout);

	if (!fgets(line, sizeof(line), stdin))
		goto out;
	while (!exited) {	/* let it go on however it stops, for 10 s */
		if (!wait_tid(tid, &st, 10000))
			break;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			printf("exited\n");
			exited = 1;
		} else if (ptrace(PTRACE_CONT, tid, 0, 0)) {
			break;
		}
	}
	fflush(stdout);
out:
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 0;
usage:
	fprintf(stderr, "usage: exitpark notify|uring|plain thread|group\n");
	return 2;
}
