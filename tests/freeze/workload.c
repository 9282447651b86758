// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * workload: threads whose progress a test can watch from outside, for the
 * freeze tests. Every thread counts its iterations in a shared file.
 *
 *   workload run FILE NBUSY    NBUSY spinning threads, plus one each sleeping
 *                              in nanosleep, blocked in read(), in poll(), in
 *                              FUTEX_WAIT, and a feeder that wakes the blocked
 *                              ones every 10 ms. A blocked call that fails
 *                              (EINTR included) counts as an error.
 *   workload forker FILE       a thread that keeps creating short-lived
 *                              threads and a loop that keeps forking children
 *                              that exit at once
 *   workload vfork FILE SECS   the main thread waits in vfork() (an
 *                              uninterruptible wait) for SECS
 *   workload exec FILE         the main thread keeps creating a thread that
 *                              execs this program again at once (de_thread()
 *                              hands it the main thread's pid); each image
 *                              ticks once
 *   workload spawn FILE        keeps running /bin/true with posix_spawn()
 *                              (a vfork() until the exec) and waiting for it
 *   workload spin FILE N       N spinning threads (the main thread included)
 *   workload procs FILE N      N single-threaded spinning processes, one group
 *   workload sleepers FILE N   N threads (the main thread included) each
 *                              ticking once a second from nanosleep(), with
 *                              small stacks: thousands of them fit the VM
 *                              (waking every 10 ms, 8,192 threads swamp it)
 *   workload mover FILE HOW N [MS]
 *                              forks a child every 50 ms, N in all, each of
 *                              which leaves for a process group of its own
 *                              (HOW=pgrp), or alternately a group and a
 *                              session of its own (HOW=sid), and keeps
 *                              ticking (every MS ms, default 10) from there
 *   workload snap FILE         print "errors c0 c1 c2 ..." once
 *   workload ready FILE        exit 0 once the workload has started the
 *                              threads and processes its mode begins with
 *                              (the counters exist before the threads do)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXT 8300

extern char **environ;

struct shared {
	uint32_t nthreads;
	uint32_t ready;
	uint64_t errors;
	uint64_t count[MAXT];
	uint32_t futex_word;
};

static struct shared *sh;
static int pa[2], pb[2];

static struct shared *map(const char *path, int create)
{
	int fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0644);
	void *p;

	if (fd < 0 || (create && ftruncate(fd, sizeof(struct shared)))) {
		perror(path);
		exit(1);
	}
	p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void bad(const char *what)
{
	__atomic_add_fetch(&sh->errors, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "workload: %s: %s\n", what, strerror(errno));
}

static void tick(long i)
{
	__atomic_add_fetch(&sh->count[i], 1, __ATOMIC_RELAXED);
}

static void *busy(void *arg)
{
	for (;;)
		tick((long)arg);
	return NULL;
}

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (;;) {
		if (nanosleep(&ts, NULL))
			bad("nanosleep");
		tick((long)arg);
	}
	return NULL;
}

static void *idler(void *arg)
{
	struct timespec ts = { 1, 0 };

	for (;;) {
		if (nanosleep(&ts, NULL))
			bad("nanosleep");
		tick((long)arg);
	}
	return NULL;
}

static void *reader(void *arg)
{
	char c;

	for (;;) {
		if (read(pa[0], &c, 1) != 1)
			bad("read");
		tick((long)arg);
	}
	return NULL;
}

static void *poller(void *arg)
{
	struct pollfd p = { .fd = pb[0], .events = POLLIN };
	char c;

	for (;;) {
		if (poll(&p, 1, -1) != 1 || read(pb[0], &c, 1) != 1)
			bad("poll");
		tick((long)arg);
	}
	return NULL;
}

static void *waiter(void *arg)
{
	uint32_t seen = 0;

	for (;;) {
		long r = syscall(SYS_futex, &sh->futex_word, FUTEX_WAIT, seen, NULL, NULL, 0);

		if (r && errno != EAGAIN)
			bad("futex");
		seen = __atomic_load_n(&sh->futex_word, __ATOMIC_ACQUIRE);
		tick((long)arg);
	}
	return NULL;
}

static void *feeder(void *arg)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (;;) {
		nanosleep(&ts, NULL);
		if (write(pa[1], "x", 1) != 1 || write(pb[1], "y", 1) != 1)
			bad("write");
		__atomic_add_fetch(&sh->futex_word, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &sh->futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
		tick((long)arg);
	}
	return NULL;
}

static const char *exec_file;

/* A thread that is not the leader becomes the process's new image. */
static void *reexec(void *arg)
{
	char *args[] = { "workload", "exec", (char *)exec_file, "again", NULL };

	(void)arg;
	execv("/proc/self/exe", args);
	bad("execv");
	return NULL;
}

static void start(void *(*fn)(void *), long i)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, (void *)i)) {
		fprintf(stderr, "workload: pthread_create failed\n");
		exit(1);
	}
}

static void *ephemeral(void *arg)
{
	tick((long)arg);
	return NULL;
}

static void *spawner(void *arg)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	pthread_t t;

	for (;;) {
		if (pthread_create(&t, NULL, ephemeral, (void *)2) || pthread_join(t, NULL))
			bad("thread churn");
		tick((long)arg);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long i, n;

	if (argc == 3 && !strcmp(argv[1], "snap")) {
		sh = map(argv[2], 0);
		printf("%llu", (unsigned long long)sh->errors);
		for (i = 0; i < (long)sh->nthreads; i++)
			printf(" %llu", (unsigned long long)sh->count[i]);
		printf("\n");
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "ready")) {
		sh = map(argv[2], 0);
		return __atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) ? 0 : 1;
	}
	if (argc == 4 && !strcmp(argv[1], "run")) {
		sh = map(argv[2], 1);
		n = atol(argv[3]);
		if (n < 0 || n + 6 > MAXT || pipe(pa) || pipe(pb))
			return 2;
		sh->nthreads = (uint32_t)(n + 5);
		for (i = 0; i < n; i++)
			start(busy, i);
		start(sleeper, n);
		start(reader, n + 1);
		start(poller, n + 2);
		start(waiter, n + 3);
		start(feeder, n + 4);
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		pause();
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "spin")) {
		sh = map(argv[2], 1);
		n = atol(argv[3]);
		if (n < 1 || n > MAXT)
			return 2;
		sh->nthreads = (uint32_t)n;
		for (i = 1; i < n; i++)
			start(busy, i);
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		busy((void *)0);
	}
	if (argc == 4 && !strcmp(argv[1], "sleepers")) {
		pthread_attr_t a;
		pthread_t t;

		sh = map(argv[2], 1);
		n = atol(argv[3]);
		if (n < 1 || n > MAXT || pthread_attr_init(&a) ||
		    pthread_attr_setstacksize(&a, 64 * 1024))
			return 2;
		sh->nthreads = (uint32_t)n;
		for (i = 1; i < n; i++)
			if (pthread_create(&t, &a, idler, (void *)i)) {
				fprintf(stderr, "workload: thread %ld: cannot create\n", i);
				return 1;
			}
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		idler((void *)0);
	}
	if (argc == 4 && !strcmp(argv[1], "procs")) {
		sh = map(argv[2], 1);
		n = atol(argv[3]);
		if (n < 1 || n > MAXT)
			return 2;
		sh->nthreads = (uint32_t)n;
		for (i = 1; i < n; i++)
			if (fork() == 0)
				busy((void *)i);
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		busy((void *)0);
	}
	if (argc == 3 && !strcmp(argv[1], "forker")) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		pid_t c;

		sh = map(argv[2], 1);
		sh->nthreads = 3;
		start(spawner, 1);
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		for (;;) {
			c = fork();
			if (c == 0)
				_exit(0);
			if (c < 0 || waitpid(c, NULL, 0) != c)
				bad("fork");
			tick(0);
			nanosleep(&ts, NULL);
		}
	}
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "mover")) {
		/*
		 * A tick every 10 ms by default: eighty processes waking
		 * every millisecond keep an emulated CPU busy with nothing
		 * else.
		 */
		long every = argc == 6 ? atol(argv[5]) : 10;
		struct timespec spawn = { 0, 50 * 1000 * 1000 }, ms = { 0, every * 1000 * 1000 };
		int sid = !strcmp(argv[3], "sid");
		uint32_t slot;

		sh = map(argv[2], 1);
		n = atol(argv[4]);
		if (n < 0 || n + 1 > MAXT || (!sid && strcmp(argv[3], "pgrp")) ||
		    every < 1 || every > 999)
			return 2;
		sh->nthreads = 1;
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		for (i = 0; i < n; i++) {
			/* the slot first: a frozen parent adds none */
			slot = __atomic_fetch_add(&sh->nthreads, 1, __ATOMIC_RELAXED);
			if (fork() == 0) {
				if ((sid && i % 2) ? setsid() < 0 : setpgid(0, 0))
					bad("leaving the group");
				for (;;) {
					tick(slot);
					nanosleep(&ms, NULL);
				}
			}
			tick(0);
			nanosleep(&spawn, NULL);
		}
		for (;;) {
			tick(0);
			nanosleep(&ms, NULL);
		}
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "exec")) {
		pthread_t t;

		sh = map(argv[2], argc == 3);
		sh->nthreads = 1;
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		exec_file = argv[2];
		tick(0);
		for (;;)
			if (pthread_create(&t, NULL, reexec, NULL) || pthread_join(t, NULL))
				bad("exec thread");
	}
	if (argc == 3 && !strcmp(argv[1], "spawn")) {
		char *args[] = { "true", NULL };
		pid_t c;
		int st;

		sh = map(argv[2], 1);
		sh->nthreads = 1;
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		for (;;) {
			if (posix_spawn(&c, "/bin/true", NULL, NULL, args, environ) ||
			    waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
				bad("posix_spawn");
			tick(0);
		}
	}
	if (argc == 4 && !strcmp(argv[1], "vfork")) {
		sh = map(argv[2], 1);
		sh->nthreads = 1;
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
		if (vfork() == 0) {
			sleep((unsigned int)atoi(argv[3]));
			_exit(0);
		}
		tick(0);
		pause();
		return 0;
	}
	fprintf(stderr, "usage: workload run FILE NBUSY | forker FILE | vfork FILE SECS | "
		"exec FILE | spawn FILE | spin FILE N | procs FILE N | sleepers FILE N | "
		"mover FILE pgrp|sid N [MS] | snap FILE | ready FILE\n");
	return 2;
}
