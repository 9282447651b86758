// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cgroup_tree_root() (cgtree.c) on a directory laid out as a cgroup v2
 * hierarchy (cgroup.procs files, child directories) holding this test's own
 * processes: a checkpoint to disk finds the one tree a Slurm step's cgroup
 * holds, leaves out the ibckpt restart --wait that holds a restarted job
 * (by its name), a process gone since and a process read twice, and
 * refuses a cgroup of several trees or of none, saying which.
 */
#define UNIT_SUITE "cgtree"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../restart.h"
#include "../../tests/unit/unit.h"

static char top[64];

static void put(const char *sub, const pid_t *pids, unsigned int n)
{
	char path[256];
	unsigned int i;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s%s", top, *sub ? "/" : "", sub);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s%s%s/cgroup.procs", top, *sub ? "/" : "", sub);
	f = fopen(path, "w");
	if (!f)
		abort();
	for (i = 0; i < n; i++)
		fprintf(f, "%d\n", pids[i]);
	fclose(f);
}

/* A child that sleeps (exec'ed: not this program), or one that forks such a grandchild. */
static pid_t sleeper(void)
{
	char path[64], exe[256];
	ssize_t n;
	pid_t p = fork();
	int i;

	if (!p) {
		execlp("sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	/* until it runs sleep: before its exec it is this program */
	snprintf(path, sizeof(path), "/proc/%d/exe", p);
	for (i = 0; i < 5000; i++) {
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 6 && !memcmp(exe + n - 6, "/sleep", 6))
			break;
		usleep(1000);
	}
	return p;
}

/* A child named as an ibckpt restart --wait is (RWAIT_COMM), parent of @*child. */
static pid_t holder(pid_t *child)
{
	int fds[2];
	pid_t p;

	if (pipe(fds))
		abort();
	p = fork();
	if (!p) {
		pid_t c = sleeper();

		prctl(PR_SET_NAME, RWAIT_COMM, 0, 0, 0);
		if (write(fds[1], &c, sizeof(c)) != sizeof(c))
			_exit(1);
		pause();
		_exit(0);
	}
	if (read(fds[0], child, sizeof(*child)) != sizeof(*child))
		abort();
	close(fds[0]);
	close(fds[1]);
	return p;
}

static void reap(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static void clear(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/*", top);
	if (system(cmd))
		abort();
}

/* cgroup_tree_root(@path) with what it says on standard error in @said */
static int tree_root(const char *path, pid_t *root, char *said, size_t len)
{
	FILE *f = tmpfile();
	int saved = dup(2), rc;
	size_t n;

	if (!f || saved < 0)
		abort();
	fflush(stderr);
	dup2(fileno(f), 2);
	rc = cgroup_tree_root(path, root);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(said, 1, len - 1, f);
	said[n] = 0;
	fclose(f);
	return rc;
}

static void a_plain_tree_is_its_root(void)
{
	pid_t a = sleeper(), root = 0;
	char said[512];

	put("", (pid_t[]){ a }, 1);
	CHECK_EQ(tree_root(top, &root, said, sizeof(said)), 0);
	CHECK_EQ(root, a);
	reap(a);
	clear();
}

static void the_restart_waiter_is_left_out(void)
{
	pid_t w, c, root = 0;
	char said[512];

	/* the waiter and its child, in cgroups below as a Slurm step's */
	w = holder(&c);
	put("", (pid_t[]){ 0 }, 0);
	put("user", (pid_t[]){ w }, 1);
	put("user/task_0", (pid_t[]){ c }, 1);
	CHECK_EQ(tree_root(top, &root, said, sizeof(said)), 0);
	CHECK_EQ(root, c);
	reap(c);
	reap(w);
	clear();
}

static void a_parent_of_another_name_is_the_root(void)
{
	pid_t p, c, root = 0;
	char said[512];
	int fds[2];

	/* as the waiter, but not named so: an ordinary parent, the root */
	if (pipe(fds))
		abort();
	p = fork();
	if (!p) {
		c = sleeper();
		if (write(fds[1], &c, sizeof(c)) != sizeof(c))
			_exit(1);
		pause();
		_exit(0);
	}
	if (read(fds[0], &c, sizeof(c)) != sizeof(c))
		abort();
	close(fds[0]);
	close(fds[1]);
	put("", (pid_t[]){ p, c }, 2);
	CHECK_EQ(tree_root(top, &root, said, sizeof(said)), 0);
	CHECK_EQ(root, p);
	kill(c, SIGKILL);
	reap(p);
	clear();
}

static void several_trees_are_refused(void)
{
	pid_t a = sleeper(), b = sleeper(), root = 0;
	char said[512], two[64];

	put("", (pid_t[]){ a }, 1);
	put("x", (pid_t[]){ b }, 1);
	CHECK_EQ(tree_root(top, &root, said, sizeof(said)), -1);
	snprintf(two, sizeof(two), "holds 2 process trees (roots %d, %d)", a, b);
	CHECK(strstr(said, two));
	reap(a);
	reap(b);
	clear();
}

static void gone_or_read_twice_counts_no_more(void)
{
	pid_t a = sleeper(), gone = sleeper(), root = 0;
	char said[512];

	/* a process gone since the cgroup was read; one read in two cgroups */
	reap(gone);
	put("", (pid_t[]){ a, gone }, 2);
	put("moved", (pid_t[]){ a }, 1);
	CHECK_EQ(tree_root(top, &root, said, sizeof(said)), 0);
	CHECK_EQ(root, a);
	CHECK(!said[0]);
	reap(a);
	clear();
}

static void an_empty_or_missing_cgroup_is_refused(void)
{
	char path[96], said[512];
	pid_t root = 0;

	put("", (pid_t[]){ 0 }, 0);
	CHECK_EQ(tree_root(top, &root, said, sizeof(said)), -1);
	CHECK(strstr(said, "has no process"));
	snprintf(path, sizeof(path), "%s/nowhere", top);
	CHECK_EQ(tree_root(path, &root, said, sizeof(said)), -1);
	CHECK(strstr(said, "cannot read its processes"));
	clear();
}

int main(void)
{
	snprintf(top, sizeof(top), "/tmp/cgtree_test.XXXXXX");
	if (!mkdtemp(top))
		abort();
	RUN(a_plain_tree_is_its_root);
	RUN(the_restart_waiter_is_left_out);
	RUN(a_parent_of_another_name_is_the_root);
	RUN(several_trees_are_refused);
	RUN(gone_or_read_twice_counts_no_more);
	RUN(an_empty_or_missing_cgroup_is_refused);
	rmdir(top);
	return unit_done();
}
