// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The one process tree a cgroup's processes form: criu dumps a process and
 * its descendants, so a job named by its cgroup (--cgroup, --slurm) goes to
 * disk only if its processes are one tree. Its root is the one member whose
 * parent is not a member (a Slurm task's parent is slurmstepd, in the
 * step's other cgroup). An `ibckpt restart --wait` of the job, the parent
 * of the tree it restored (named RWAIT_COMM: rwait.c), is not the job's:
 * its child is the root. A member gone since the cgroup was read is left
 * out, and one read twice (moved between two cgroups below) counts once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

#define CGTREE_MAX_DEPTH	16	/* cgroups below the job's; Slurm's has 2 */

struct members {
	pid_t *pid, *ppid;
	unsigned int n, cap;
};

static int members_add(struct members *m, pid_t pid)
{
	pid_t *p, *pp;

	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		p = realloc(m->pid, m->cap * sizeof(*p));
		if (!p)
			return -1;
		m->pid = p;
		pp = realloc(m->ppid, m->cap * sizeof(*pp));
		if (!pp)
			return -1;
		m->ppid = pp;
	}
	m->pid[m->n] = pid;
	m->ppid[m->n++] = 0;
	return 0;
}

/* The processes of cgroup directory @dfd and of the cgroups below it, into @m. */
static int members_read(int dfd, struct members *m, int depth)
{
	char line[32];
	struct dirent *d;
	DIR *dir;
	FILE *f;
	int fd, sub, rc = 0;

	fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	f = fd < 0 ? NULL : fdopen(fd, "re");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (!rc && fgets(line, sizeof(line), f))
		rc = members_add(m, (pid_t)atoi(line));
	fclose(f);
	if (rc || depth == CGTREE_MAX_DEPTH)
		return rc;
	fd = dup(dfd);
	dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (!rc && (d = readdir(dir))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		sub = openat(dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			continue;	/* removed since */
		rc = members_read(sub, m, depth + 1);
		close(sub);
	}
	closedir(dir);
	return rc;
}

/* @pid's parent, and in @comm its name; 0 if it is gone. */
static pid_t parent_of(pid_t pid, char *comm, size_t len)
{
	char path[64], buf[1024], *p, *q;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "PID (COMM) STATE PPID ...": COMM may hold anything, ')' included */
	q = strchr(buf, '(');
	p = strrchr(buf, ')');
	if (!p || !q || p < q || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	snprintf(comm, len, "%.*s", (int)(p - q - 1), q + 1);
	return ppid;
}

static int member(const struct members *m, pid_t pid)
{
	unsigned int i;

	if (!pid)
		return 0;	/* a member left out, or no parent */
	for (i = 0; i < m->n; i++)
		if (m->pid[i] == pid)
			return 1;
	return 0;
}

/**
 * cgroup_tree_root() - the root of the one process tree cgroup @path holds
 * @path: a cgroup v2 directory (the cgroups below it included)
 * @root: set to the tree's root
 *
 * Return: 0; -1 (said) if the cgroup cannot be read, is empty, or holds
 * several trees (each root named).
 */
int cgroup_tree_root(const char *path, pid_t *root)
{
	struct members m = { 0 };
	bool *waiter = NULL;
	unsigned int i, j, nroots = 0;
	char comm[32];
	char roots[256] = "";
	size_t len = 0;
	int dfd, rc;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = dfd < 0 ? -1 : members_read(dfd, &m, 0);
	if (dfd >= 0)
		close(dfd);
	if (rc) {
		fprintf(stderr, "ibckpt: cgroup %s: cannot read its processes: %s\n", path,
			strerror(errno));
		goto out;
	}
	/* gone since, or read twice: left out (pid 0 is no member) */
	waiter = calloc(m.n ? m.n : 1, sizeof(*waiter));
	if (!waiter) {
		fprintf(stderr, "ibckpt: out of memory\n");
		rc = -1;
		goto out;
	}
	for (i = 0; i < m.n; i++) {
		for (j = 0; j < i && m.pid[j] != m.pid[i]; j++)
			;
		m.ppid[i] = j < i ? 0 : parent_of(m.pid[i], comm, sizeof(comm));
		if (!m.ppid[i])
			m.pid[i] = 0;
		waiter[i] = m.ppid[i] && !strcmp(comm, RWAIT_COMM);
	}
	/*
	 * An ibckpt restart --wait holding the job, its parent outside, is
	 * left out (its pid negated: no longer a member), its children are
	 * roots. Decided on the whole set first: one's being left out changes
	 * no other's.
	 */
	for (i = 0; i < m.n; i++)
		waiter[i] = waiter[i] && !member(&m, m.ppid[i]);
	for (i = 0; i < m.n; i++)
		if (waiter[i])
			m.pid[i] = -m.pid[i];
	for (i = 0; i < m.n; i++) {
		/* a root: its parent is outside the job, or is such an ibckpt */
		if (m.pid[i] <= 0 || member(&m, m.ppid[i]))
			continue;
		*root = m.pid[i];
		if (len < sizeof(roots) - 16)
			len += (size_t)snprintf(roots + len, sizeof(roots) - len, "%s%d",
						nroots ? ", " : "", m.pid[i]);
		nroots++;
	}
	rc = -1;
	if (!nroots)
		fprintf(stderr, "ibckpt: cgroup %s has no process\n", path);
	else if (nroots > 1)
		fprintf(stderr, "ibckpt: cgroup %s holds %u process trees (roots %s): a "
			"checkpoint to disk takes one (criu dumps a process and its "
			"descendants)\n", path, nroots, roots);
	else
		rc = 0;
out:
	free(waiter);
	free(m.pid);
	free(m.ppid);
	return rc;
}
