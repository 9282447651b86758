// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cgroup_tree_root() (cgtree.c) on a directory laid out as a cgroup v2
 * hierarchy (cgroup.procs files, child directories) holding this test's own
 * processes: a checkpoint to disk finds the one tree a Slurm step's cgroup
 * holds, leaves out the ibckpt restart --wait that holds a restarted job,
 * and refuses a cgroup of several trees or of none.
 */
#define UNIT_SUITE "cgtree"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A child running this very program (as an ibckpt restart --wait would), parent of @*child. */
static pid_t holder(pid_t *child)
{
	int fds[2];
	pid_t p;

	if (pipe(fds))
		abort();
	p = fork();
	if (!p) {
		pid_t c = sleeper();

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

static void one_tree_found_below_its_cgroups(void)
{
	pid_t w, c, root = 0;

	/* a task with a child in a cgroup below: the task is the root */
	w = holder(&c);
	put("", (pid_t[]){ w }, 1);
	put("user", (pid_t[]){ 0 }, 0);
	put("user/task_0", (pid_t[]){ c }, 1);
	/* w runs this program, as an ibckpt restart --wait: left out, its child is the root */
	CHECK_EQ(cgroup_tree_root(top, &root), 0);
	CHECK_EQ(root, c);
	reap(w);
	waitpid(-1, NULL, WNOHANG);
	clear();
}

static void a_plain_tree_is_its_root(void)
{
	pid_t a = sleeper(), root = 0;

	put("", (pid_t[]){ a }, 1);
	CHECK_EQ(cgroup_tree_root(top, &root), 0);
	CHECK_EQ(root, a);
	reap(a);
	clear();
}

static void several_trees_are_refused(void)
{
	pid_t a = sleeper(), b = sleeper(), root = 0;

	put("", (pid_t[]){ a }, 1);
	put("x", (pid_t[]){ b }, 1);
	CHECK_EQ(cgroup_tree_root(top, &root), -1);
	reap(a);
	reap(b);
	clear();
}

static void an_empty_or_missing_cgroup_is_refused(void)
{
	char path[96];
	pid_t root = 0;

	put("", (pid_t[]){ 0 }, 0);
	CHECK_EQ(cgroup_tree_root(top, &root), -1);
	snprintf(path, sizeof(path), "%s/nowhere", top);
	CHECK_EQ(cgroup_tree_root(path, &root), -1);
	clear();
}

int main(void)
{
	snprintf(top, sizeof(top), "/tmp/cgtree_test.XXXXXX");
	if (!mkdtemp(top))
		abort();
	RUN(a_plain_tree_is_its_root);
	RUN(one_tree_found_below_its_cgroups);
	RUN(several_trees_are_refused);
	RUN(an_empty_or_missing_cgroup_is_refused);
	rmdir(top);
	return unit_done();
}
