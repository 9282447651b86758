// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The checkpoint directory (Documentation/restart.rst): the job file, the
 * snapshots, what a directory must be to be trusted, the layout of a job
 * on several nodes, and reading it all back, for the restart commands and
 * for `ibckpt dump -D DIR`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/ibckpt_snapshot.h>
#include "restart.h"
#include "snapshot.h"

/* ---- the checkpoint directory ---- */

/*
 * A checkpoint directory is written by root and restored by root (criu
 * restores the credentials in its images): one that another user could
 * have planted or changed must not be used. Return: 0 if @dir is a
 * directory, not a symbolic link, owned by the caller or root, and
 * writable by nobody else; -1, said, otherwise.
 */
int dir_trusted(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st)) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, S_ISLNK(st.st_mode) ?
			"a symbolic link, not a checkpoint directory" : "not a directory");
		return -1;
	}
	if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		fprintf(stderr, "ibckpt: %s: owned by uid %u, mode %04o: a checkpoint directory "
			"must be the caller's (or root's) and writable by nobody else\n", dir,
			(unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

int dir_make(const char *dir)
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return dir_trusted(dir);
}

int write_file(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[4096];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* addresses and keys of the job: owner only; a planted link is not followed */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "ibckpt: %s: %s\n", path, strerror(errno));
		return -1;
	}
	ok = write(fd, buf, len) == (ssize_t)len;
	if (close(fd) || !ok) {
		fprintf(stderr, "ibckpt: %s: write failed\n", path);
		return -1;
	}
	return 0;
}

int job_save(const char *dir, const struct job_chans *j, const struct cli_snaps *l)
{
	char *text = NULL, name[64];
	size_t len = 0;
	unsigned int i;
	FILE *f;
	int rc;

	f = open_memstream(&text, &len);
	if (!f)
		return -1;
	fprintf(f, "%s\n", JOB_MAGIC);
	for (i = 0; i < j->n; i++)
		fprintf(f, "proc %u %d %d\n", j->p[i].pid, j->p[i].cmd_fd, j->p[i].reply_fd);
	fclose(f);
	rc = write_file(dir, JOB_FILE, text, len);
	free(text);
	for (i = 0; !rc && i < l->n; i++) {
		snprintf(name, sizeof(name), "proc-%u.snap", l->v[i].tgid);
		rc = write_file(dir, name, l->v[i].data, l->v[i].total);
	}
	return rc;
}

/* A checkpoint directory's job; 0, or -1 said (missing, foreign, corrupt). */
int job_load(const char *dir, struct job_chans *j)
{
	char path[4096], line[256];
	unsigned int pid, lineno = 1;
	int cmd, reply, end;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, JOB_FILE);
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "ibckpt: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (not a checkpoint directory of ibckpt)" : "");
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, "ibckpt-job ", 11)) {
		fprintf(stderr, "ibckpt: %s: not an ibckpt job file\n", path);
		goto bad;
	}
	if (strcmp(line, JOB_MAGIC "\n")) {
		line[strcspn(line, "\n")] = 0;
		fprintf(stderr, "ibckpt: %s: checkpoint format version %s, this ibckpt reads "
			"version %d\n", path, line + 11, JOB_VERSION);
		goto bad;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		end = 0;
		if (sscanf(line, "proc %u %d %d%n", &pid, &cmd, &reply, &end) != 3 ||
		    line[end] != '\n' || !pid || cmd < 0 || reply < 0) {
			fprintf(stderr, "ibckpt: %s:%u: malformed line\n", path, lineno);
			goto bad;
		}
		if (job_chans_add(j, pid, cmd, reply))
			goto bad;
	}
	fclose(f);
	if (!j->n) {
		fprintf(stderr, "ibckpt: %s: no process\n", path);
		return -1;
	}
	return 0;
bad:
	fclose(f);
	job_chans_free(j);
	return -1;
}

/*
 * IBCKPT_TIMING=1 (make bench: tests/bench/restart-scale.sh): one line per
 * phase on stderr, "ibckpt: timing: PHASE MS ms", the time since the
 * previous call; @phase NULL only starts the clock.
 */
void ckpt_timing(const char *phase)
{
	static struct timespec last;
	const char *on = getenv("IBCKPT_TIMING");
	struct timespec now;

	if (!on || strcmp(on, "1"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (phase)
		fprintf(stderr, "ibckpt: timing: %s %.1f ms\n", phase,
			(double)(now.tv_sec - last.tv_sec) * 1e3 +
			(double)(now.tv_nsec - last.tv_nsec) / 1e6);
	last = now;
}

/* ---- ibckpt dump -D DIR: the checkpoint directory read offline ---- */

/* DIR/proc-PID.snap into @s: a regular file, not a link, that snap_validate() accepts. */
int snap_load(const char *dir, unsigned int pid, struct cli_snap *s)
{
	char path[4200], err[256] = "";
	unsigned char *buf = NULL;
	struct stat st;
	size_t have = 0;
	ssize_t n = 0;
	int fd = -1;

	snprintf(path, sizeof(path), "%s/proc-%u.snap", dir, pid);
	/* lstat first: a FIFO or a device is never opened */
	if (lstat(path, &st)) {
		snprintf(err, sizeof(err), "%s", strerror(errno));
	} else if (S_ISLNK(st.st_mode)) {
		snprintf(err, sizeof(err), "a symbolic link, not a snapshot file");
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(err, sizeof(err), "not a regular file");
	} else if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 ||
		   fstat(fd, &st)) {
		snprintf(err, sizeof(err), "%s", strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(err, sizeof(err), "not a regular file");
	} else if (st.st_size > (off_t)IBCKPT_SNAP_MAX_LEN) {
		snprintf(err, sizeof(err), "%lld bytes, a snapshot is at most %u",
			 (long long)st.st_size, IBCKPT_SNAP_MAX_LEN);
	} else if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
		snprintf(err, sizeof(err), "out of memory");
	} else {
		while (have < (size_t)st.st_size) {
			n = read(fd, buf + have, (size_t)st.st_size - have);
			if (n > 0)
				have += (size_t)n;
			else if (!n || errno != EINTR)
				break;
		}
		if (n < 0)
			snprintf(err, sizeof(err), "%s", strerror(errno));
		else if (snap_validate(buf, have, err, sizeof(err)) && !err[0])
			snprintf(err, sizeof(err), "malformed snapshot");
	}
	if (fd >= 0)
		close(fd);
	if (err[0]) {
		fprintf(stderr, "ibckpt: %s: %s\n", path, err);
		free(buf);
		return -1;
	}
	*s = (struct cli_snap){ .tgid = pid, .data = buf, .total = (uint32_t)have,
				.have = (uint32_t)have };
	return 0;
}

/* ---- the checkpoint directory of a job on several nodes ---- */

void part_dir(char *buf, size_t len, const char *dir, unsigned int part)
{
	snprintf(buf, len, "%s/" PART_PREFIX "%u", dir, part);
}

int nodes_save(const char *dir, unsigned int n)
{
	char text[64];
	int len = snprintf(text, sizeof(text), NODES_MAGIC "\nnodes %u\n", n);

	return write_file(dir, NODES_FILE, text, (size_t)len);
}

/* Return: 0 and *@n for a job on several nodes, 1 for one on one node, -1 (said). */
int nodes_load(const char *dir, unsigned int *n)
{
	char path[4200], line[64];
	unsigned int v;
	int end = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" NODES_FILE, dir);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 1;
		fprintf(stderr, "ibckpt: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || strcmp(line, NODES_MAGIC "\n") ||
	    !fgets(line, sizeof(line), f) || sscanf(line, "nodes %u%n", &v, &end) != 1 ||
	    line[end] != '\n' || !v || v > COORD_MAX_NODES) {
		fclose(f);
		fprintf(stderr, "ibckpt: %s: not an ibckpt nodes file (corrupt, or another "
			"version's)\n", path);
		return -1;
	}
	fclose(f);
	*n = v;
	return 0;
}
