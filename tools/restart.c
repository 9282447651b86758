// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt release / reacquire / checkpoint (Documentation/restart.rst).
 *
 *   release -D DIR JOB    a frozen job's providers release every vendor
 *                         resource; DIR keeps what a reacquire needs
 *   reacquire -D DIR      every process of DIR re-creates its objects, the
 *                         job's new identities are exchanged, QPs are
 *                         brought back to RTS, the gates reopen
 *   checkpoint -D DIR --leave-running JOB
 *                         freeze, release, thaw, reacquire in place
 *
 * The CLI talks to each provider through its restart channel
 * (uapi/linux/ibckpt_restart.h) and is the job's rendezvous: it collects
 * every process's identities and hands the merged set to all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/ibckpt.h>
#include <linux/ibckpt_restart.h>
#include "cli.h"
#include "json.h"
#include "peers.h"
#include "rchan.h"
#include "snapshot.h"

#define JOB_FILE	"ibckpt-job"
#define JOB_VERSION	1
#define JOB_MAGIC	"ibckpt-job 1"
#define PHASE_MS	60000	/* a phase of one process: re-creating can take long */
#define CHECKPOINT_TRIES 5	/* freezes that may find requests in flight */

struct rjob {
	struct rchan *p;
	unsigned int n;
};

static void rjob_close(struct rjob *j)
{
	unsigned int i;

	for (i = 0; i < j->n; i++)
		rchan_close(&j->p[i]);
}

static void rjob_free(struct rjob *j)
{
	rjob_close(j);
	free(j->p);
	j->p = NULL;
	j->n = 0;
}

static int rjob_add(struct rjob *j, unsigned int pid, int cmd_fd, int reply_fd)
{
	struct rchan *p = realloc(j->p, (j->n + 1) * sizeof(*p));

	if (!p)
		return -1;
	j->p = p;
	j->p[j->n++] = (struct rchan){ .pid = pid, .cmd_fd = cmd_fd, .reply_fd = reply_fd,
				       .cmd = -1, .reply = -1 };
	return 0;
}

/* ---- the checkpoint directory ---- */

/*
 * A checkpoint directory is written by root and restored by root (criu
 * restores the credentials in its images): one that another user could
 * have planted or changed must not be used. Return: 0 if @dir is a
 * directory, not a symbolic link, owned by the caller or root, and
 * writable by nobody else; -1, said, otherwise.
 */
static int dir_trusted(const char *dir)
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

static int dir_make(const char *dir)
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return dir_trusted(dir);
}

static int write_file(const char *dir, const char *name, const void *buf, size_t len)
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

static int job_save(const char *dir, const struct rjob *j, const struct cli_snaps *l)
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
static int job_load(const char *dir, struct rjob *j)
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
		if (rjob_add(j, pid, cmd, reply))
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
	rjob_free(j);
	return -1;
}

/*
 * IBCKPT_TIMING=1 (make bench: tests/bench/restart-scale.sh): one line per
 * phase on stderr, "ibckpt: timing: PHASE MS ms", the time since the
 * previous call; @phase NULL only starts the clock.
 */
static void timing(const char *phase)
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

/* ---- the phases ---- */

static int rjob_open(struct rjob *j)
{
	char why[512];
	unsigned int i;

	for (i = 0; i < j->n; i++) {
		if (rchan_open(&j->p[i], why, sizeof(why))) {
			fprintf(stderr, "ibckpt: %s\n", why);
			rjob_close(j);
			return -1;
		}
	}
	return 0;
}

/*
 * REACQUIRE everywhere, the identities merged, REMAP everywhere (every QP
 * at RTR), then GO everywhere: no QP sends before its peer can receive.
 */
/*
 * A REACQUIRE or REMAP failed somewhere: every process undoes what it
 * re-created and is released as it was (each provider does the same on a
 * REACQUIRE of its own that failed), so that a new reacquire, with another
 * device map say, starts over. Not after a GO: a QP at RTS may have sent.
 */
static bool rjob_undone;	/* the last failed reacquire was undone everywhere */

static void rjob_abort(struct rjob *j)
{
	unsigned int i, undone = 0;
	char why[512];

	for (i = 0; i < j->n; i++) {
		if (rchan_call(&j->p[i], IBCKPT_RMSG_ABORT, 0, NULL, 0, PHASE_MS, NULL, NULL, why,
			       sizeof(why)))
			fprintf(stderr, "ibckpt: undoing the reacquire: %s\n", why);
		else
			undone++;
	}
	rjob_undone = undone == j->n;
}

static int rjob_reacquire(struct rjob *j, const struct ibckpt_rdev_map *map, uint32_t nmap,
			  uint32_t *nids_out)
{
	struct ibckpt_ident *all = NULL;
	uint32_t nall = 0, len;
	char why[512];
	unsigned int i;
	void *ids;
	int st, rc = -1;

	for (i = 0; i < j->n; i++) {
		st = rchan_call(&j->p[i], IBCKPT_RMSG_REACQUIRE, 0, map,
				nmap * (uint32_t)sizeof(*map), PHASE_MS, &ids, &len, why,
				sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: reacquire: %s\n", why);
			goto abort;
		}
		if (len % sizeof(*all)) {
			fprintf(stderr, "ibckpt: reacquire: process %u: malformed identities\n",
				j->p[i].pid);
			free(ids);
			goto abort;
		}
		if (len) {
			struct ibckpt_ident *n = realloc(all, nall * sizeof(*all) + len);

			if (!n) {
				free(ids);
				goto abort;
			}
			all = n;
			memcpy(all + nall, ids, len);
			nall += len / (uint32_t)sizeof(*all);
		}
		free(ids);
	}
	for (i = 0; i < j->n; i++) {
		st = rchan_call(&j->p[i], IBCKPT_RMSG_REMAP, 0, all, nall * (uint32_t)sizeof(*all),
				PHASE_MS, NULL, NULL, why, sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: reacquire: %s\n", why);
			goto abort;
		}
	}
	for (i = 0; i < j->n; i++) {
		st = rchan_call(&j->p[i], IBCKPT_RMSG_GO, 0, NULL, 0, PHASE_MS, NULL, NULL, why,
				sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: reacquire: %s\n", why);
			goto out;
		}
	}
	*nids_out = nall;
	rc = 0;
out:
	free(all);
	return rc;
abort:
	rjob_abort(j);
	goto out;
}

/* Each snapshot's restart channel, in @j; -1 if a process has none (said). */
static int channels_of(const struct cli_snaps *l, struct rjob *j)
{
	unsigned int i;

	for (i = 0; i < l->n; i++) {
		const struct ibckpt_snap_control *c = NULL;
		const struct ibckpt_snap_hdr *h = (const void *)l->v[i].data;
		const unsigned char *p = l->v[i].data;
		size_t off = h->hdr_len;
		uint32_t k;

		for (k = 0; k < h->n_records; k++) {
			const struct ibckpt_snap_rec *r = (const void *)(p + off);

			if (r->type == IBCKPT_SNAP_CONTROL && r->len >= sizeof(*c))
				c = (const void *)(r + 1);
			off += sizeof(*r) + ((r->len + 7u) & ~7u);
		}
		if (!c || (int)c->cmd_fd < 0 || (int)c->reply_fd < 0) {
			fprintf(stderr, "ibckpt: process %u has no restart channel (its provider "
				"predates restart)\n", l->v[i].tgid);
			return -1;
		}
		if (c->released) {
			fprintf(stderr, "ibckpt: process %u is released already\n", l->v[i].tgid);
			return -1;
		}
		if (rjob_add(j, l->v[i].tgid, (int)c->cmd_fd, (int)c->reply_fd))
			return -1;
	}
	return 0;
}

/*
 * Release the frozen @job; DIR keeps the job. A refusal of any process
 * leaves the job as it was: the ones released are reacquired in place.
 * Return: 0, 1 (said), or 3 when requests were in flight (said; the job is
 * unchanged and a later freeze may find them arrived).
 */
static int release_job(struct cli_job *job, const char *dir, const char *what)
{
	struct cli_snaps l;
	struct rjob j = { 0 };
	const void **snaps;
	char why[512];
	unsigned int i, failed = 0;
	uint32_t nids;
	int st;

	if (cli_get_snapshots(job, &l, what))
		return 1;
	snaps = calloc(l.n, sizeof(*snaps));
	if (!snaps) {
		cli_snaps_free(&l);
		return 1;
	}
	for (i = 0; i < l.n; i++)
		snaps[i] = l.v[i].data;
	st = peers_check(snaps, l.n, why, sizeof(why));
	free(snaps);
	if (st) {
		fprintf(stderr, "ibckpt: %s: %s\n", what, why);
		cli_snaps_free(&l);
		return st == -2 ? 3 : 1;
	}
	if (channels_of(&l, &j) || dir_make(dir) || job_save(dir, &j, &l) || rjob_open(&j)) {
		cli_snaps_free(&l);
		rjob_free(&j);
		return 1;
	}
	cli_snaps_free(&l);
	/* every process agrees first: a refusal then changes nothing anywhere */
	for (i = 0; i < j.n; i++) {
		st = rchan_call(&j.p[i], IBCKPT_RMSG_PREPARE, IBCKPT_RREL_PEERS_CHECKED, NULL, 0,
				PHASE_MS, NULL, NULL, why, sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: %s: %s\n", what, why);
			rjob_free(&j);
			return 1;
		}
	}
	for (i = 0; i < j.n; i++) {
		st = rchan_call(&j.p[i], IBCKPT_RMSG_RELEASE, IBCKPT_RREL_PEERS_CHECKED, NULL, 0,
				PHASE_MS, NULL, NULL, why, sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: %s: %s\n", what, why);
			failed++;
			break;	/* what is released comes back: no more */
		}
	}
	if (failed) {
		/* nothing is left half-done: the ones released come back */
		if (rjob_reacquire(&j, NULL, 0, &nids))
			fprintf(stderr, "ibckpt: %s: and reacquiring in place failed: the job "
				"stays released (ibckpt reacquire -D %s)\n", what, dir);
		rjob_free(&j);
		return 1;
	}
	if (json) {
		printf("{\"released\":%u,\"dir\":", j.n);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%u process%s released (%s)\n", j.n, j.n == 1 ? "" : "es", dir);
	}
	rjob_free(&j);
	return 0;
}

/* "rxe0=rxe1,rxe1=rxe0" */
static int parse_map(const char *s, struct ibckpt_rdev_map **map, uint32_t *n)
{
	char *copy = strdup(s), *tok, *save = NULL, *eq;
	struct ibckpt_rdev_map *m;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq || eq == tok || !eq[1] || (size_t)(eq - tok) >= sizeof(m->from) ||
		    strlen(eq + 1) >= sizeof(m->to)) {
			fprintf(stderr, "ibckpt: --map takes DEV=DEV[,DEV=DEV...], not '%s'\n", tok);
			free(copy);
			return -1;
		}
		m = realloc(*map, (*n + 1) * sizeof(*m));
		if (!m) {
			free(copy);
			return -1;
		}
		*map = m;
		m = &m[(*n)++];
		memset(m, 0, sizeof(*m));
		memcpy(m->from, tok, (size_t)(eq - tok));
		strcpy(m->to, eq + 1);
	}
	free(copy);
	return 0;
}

/* @hint: say how to retry if the job is left released (not for a restart: it kills it) */
static int reacquire_dir(const char *dir, const struct ibckpt_rdev_map *map, uint32_t nmap,
			 bool hint)
{
	struct rjob j = { 0 };
	uint32_t nids = 0;
	int rc = 1;

	timing(NULL);
	rjob_undone = false;
	if (job_load(dir, &j) || rjob_open(&j))
		goto out;
	if (rjob_reacquire(&j, map, nmap, &nids)) {
		if (rjob_undone && hint)
			fprintf(stderr, "ibckpt: the job is released as it was before this "
				"reacquire: ibckpt reacquire -D %s [--map ...] tries again\n", dir);
		goto out;
	}
	timing("reacquire");
	if (json) {
		printf("{\"reacquired\":%u,\"identities\":%u,\"dir\":", j.n, nids);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%u process%s reacquired, %u identities exchanged\n", j.n,
		       j.n == 1 ? "" : "es", nids);
	}
	rc = 0;
out:
	rjob_free(&j);
	return rc;
}

int cmd_release(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'D' },
		CLI_JOB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_job job = { 0 };
	char what[320], desc[288];
	const char *dir = NULL;
	int c, err;

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;
	while ((c = getopt_long(argc, argv, "D:", opts, NULL)) != -1) {
		if (c == 'D') {
			dir = optarg;
			continue;
		}
		err = cli_job_opt(c, optarg, &job);
		if (err <= 0)
			goto usage;
	}
	if (!dir || cli_job_finish(&job, argc, argv, optind, CLI_JOB_BY_ID))
		goto usage;
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot release %s", desc);
	return release_job(&job, dir, what);
usage:
	fprintf(stderr, "usage: ibckpt release -D DIR " CLI_JOB_USAGE " | --id SESSION\n");
	return 2;
}

/*
 * reacquire's and restart's command line: -D DIR [--map DEV=DEV,...].
 * Return: 0, or 2 (said; *map freed).
 */
static int dir_map_args(int argc, char **argv, const char *name, const char **dir,
			struct ibckpt_rdev_map **map, uint32_t *nmap)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'D' },
		{ "map", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "D:m:", opts, NULL)) != -1) {
		if (c == 'D')
			*dir = optarg;
		else if (c != 'm' || parse_map(optarg, map, nmap))
			goto usage;
	}
	if (*dir && optind == argc)
		return 0;
usage:
	free(*map);
	*map = NULL;
	fprintf(stderr, "usage: ibckpt %s -D DIR [--map DEV=DEV,...]\n", name);
	return 2;
}

int cmd_reacquire(int argc, char **argv)
{
	struct ibckpt_rdev_map *map = NULL;
	const char *dir = NULL;
	uint32_t nmap = 0;
	int rc;

	if (dir_map_args(argc, argv, "reacquire", &dir, &map, &nmap))
		return 2;
	rc = reacquire_dir(dir, map, nmap, true);
	free(map);
	return rc;
}

/* ---- criu (Documentation/restart.rst: why stock criu works on a released job) ---- */

#define CRIU_DIR	"criu"		/* its images, under the checkpoint directory */
#define DONE_FILE	"ibckpt-complete"	/* written last: the checkpoint is whole */
#define PID_FILE	"restore.pid"	/* criu's: the restored root */

/*
 * Run criu with @args (NULL-terminated, after the program name), its output
 * in @log. Return: its exit status, or -1 if it could not run.
 */
static int run_criu(const char *const *args, const char *log)
{
	const char *criu = getenv("IBCKPT_CRIU") ? getenv("IBCKPT_CRIU") : "criu";
	const char *argv[32];
	int i, st, fd;
	pid_t pid;

	argv[0] = criu;
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		execvp(criu, (char *const *)argv);
		fprintf(stderr, "%s: %s\n", criu, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Quote criu's own errors from @log (its "Error (" lines, the last
 * CRIU_ERRORS of them): "see the log" alone sends every user digging.
 */
#define CRIU_ERRORS 4
static void criu_errors(const char *log)
{
	char line[512], last[CRIU_ERRORS][512];
	unsigned int n = 0, i;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "Error (") || strstr(line, "Error:"))
			snprintf(last[n++ % CRIU_ERRORS], sizeof(last[0]), "%s", line);
	fclose(f);
	for (i = n > CRIU_ERRORS ? n - CRIU_ERRORS : 0; i < n; i++)
		fprintf(stderr, "  criu: %s", last[i % CRIU_ERRORS]);
}

/* Does the process still hold /dev/ibckpt? (a released one drops it at the thaw) */
static bool holds_module(unsigned int pid)
{
	char path[64], link[64];
	struct dirent *d;
	bool held = false;
	ssize_t n;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/fd", pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!held && (d = readdir(dir)) != NULL) {
		char p[320];

		snprintf(p, sizeof(p), "%s/%s", path, d->d_name);
		n = readlink(p, link, sizeof(link) - 1);
		held = n > 0 && (link[n] = 0, !strcmp(link, "/dev/" IBCKPT_DEVICE_NAME));
	}
	closedir(dir);
	return held;
}

/* Wait (up to 5 s) until no process of @j holds /dev/ibckpt: criu could not dump it. */
static int wait_unregistered(const struct rjob *j)
{
	unsigned int i, tries;

	for (tries = 0; tries < 500; tries++) {
		for (i = 0; i < j->n && !holds_module(j->p[i].pid); i++)
			;
		if (i == j->n)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "ibckpt: process %u still holds /dev/%s after its release\n", j->p[i].pid,
		IBCKPT_DEVICE_NAME);
	return -1;
}

/*
 * criu dump of the released job, rooted at @root (criu takes a process and
 * its descendants). Its network lock is nftables': Debian's criu defaults
 * to iptables, which a minimal system lacks.
 */
static int criu_dump(const char *dir, unsigned int root)
{
	char images[4096], log[4200], tree[16];
	const char *args[] = { "dump", "-t", tree, "-D", images, "-v4", "--manage-cgroups=ignore",
			       "--tcp-established", "--network-lock", "nftables", NULL };
	int st;

	snprintf(tree, sizeof(tree), "%u", root);
	snprintf(images, sizeof(images), "%s/" CRIU_DIR, dir);
	snprintf(log, sizeof(log), "%s/dump.log", dir);
	if (dir_make(images))
		return -1;
	timing("unregister");
	st = run_criu(args, log);
	timing("dump");
	if (st) {
		fprintf(stderr, "ibckpt: criu dump failed (exit %d): see %s\n", st, log);
		criu_errors(log);
		return -1;
	}
	return 0;
}

/*
 * criu restore of the job; *@root is set to the restored root's pid, which
 * criu writes to DIR/restore.pid (0 if it cannot be read): a restart whose
 * reacquire fails kills the tree it restored. The pid file's path is made
 * absolute (criu takes a relative one in its work directory, the images),
 * and an earlier restart's goes first (criu creates it with O_EXCL).
 */
static int criu_restore(const char *dir, pid_t *root)
{
	char images[4096], log[4200], pidfile[4200], *abs;
	const char *args[] = { "restore", "-d", "-D", images, "-v4", "--pidfile", pidfile,
			       "--manage-cgroups=ignore", "--tcp-established", "--network-lock",
			       "nftables", NULL };
	int st, pid = 0;
	FILE *f;

	*root = 0;
	abs = realpath(dir, NULL);
	if (!abs) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(pidfile, sizeof(pidfile), "%s/" PID_FILE, abs);
	free(abs);
	if (unlink(pidfile) && errno != ENOENT) {
		fprintf(stderr, "ibckpt: %s: %s\n", pidfile, strerror(errno));
		return -1;
	}
	snprintf(images, sizeof(images), "%s/" CRIU_DIR, dir);
	snprintf(log, sizeof(log), "%s/restore.log", dir);
	timing(NULL);
	st = run_criu(args, log);
	timing("restore");
	if (st) {
		fprintf(stderr, "ibckpt: criu restore failed (exit %d): see %s\n", st, log);
		criu_errors(log);
		return -1;
	}
	f = fopen(pidfile, "re");
	if (f) {
		if (fscanf(f, "%d", &pid) == 1 && pid > 0)
			*root = pid;
		fclose(f);
	}
	return 0;
}

/* ---- a restart whose reacquire failed: the restored job goes ---- */

#define KILL_WAIT_MS	10000	/* until the killed job's pids are free again */
#define STOP_WAIT_MS	100	/* per process, until its threads are stopped */

struct pids {
	pid_t *v;
	unsigned int n;
};

/* @pid into @s, once. Return: 0, or -1 (out of memory). */
static int pids_add(struct pids *s, pid_t pid)
{
	unsigned int i;
	pid_t *v;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == pid)
			return 0;
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return -1;
	s->v = v;
	s->v[s->n++] = pid;
	return 0;
}

/* A zombie holds its pid until its parent (or init) reaps it: it exists. */
static bool pid_exists(pid_t pid)
{
	return !kill(pid, 0) || errno == EPERM;
}

/*
 * Each thread of @pid's state letter (/proc/PID/task/TID/stat), in @states
 * (at most @len - 1 of them). Return: false if @pid is gone.
 */
static bool thread_states(pid_t pid, char *states, size_t len)
{
	char path[80], buf[512], *p;
	struct dirent *d;
	size_t n = 0;
	DIR *tasks;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	tasks = opendir(path);
	if (!tasks)
		return false;
	while ((d = readdir(tasks)) != NULL && n + 1 < len) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		/* the command name may hold anything: the state follows its last ')' */
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		if (p && p[1] == ' ')
			states[n++] = p[2];
		fclose(f);
	}
	closedir(tasks);
	states[n] = 0;
	return true;
}

/*
 * @pid's children into @s, once every thread of it is stopped (or a moment
 * has passed): a thread in the middle of a fork when SIGSTOP came finishes
 * it, and its child must not appear behind the walk. The kernel lists
 * children per thread (the one that forked). Return: 0, or -1 (no memory).
 */
static int pids_children(struct pids *s, pid_t pid)
{
	char path[80], states[256];
	unsigned int waited;
	struct dirent *d;
	DIR *tasks;
	FILE *f;
	int child, rc = 0;

	for (waited = 0; waited < STOP_WAIT_MS; waited++) {
		if (!thread_states(pid, states, sizeof(states)))
			return 0;
		if (!states[strspn(states, "tTZX")])
			break;
		usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	tasks = opendir(path);
	if (!tasks)
		return 0;
	while (!rc && (d = readdir(tasks)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (!rc && fscanf(f, "%d", &child) == 1)
			rc = pids_add(s, child);
		fclose(f);
	}
	closedir(tasks);
	return rc;
}

/*
 * Kill what criu restored: @root (0: not known) and the job's processes of
 * @j (absent before the restore: criu's), with every descendant, then wait
 * until each pid is free again. Every process is stopped before its
 * children are read and none is killed before all are stopped: a parent
 * killed first hands its children to init, out of the walk's reach, and a
 * shell of the job never runs again to react (to write an exit status).
 * Return: the number of processes killed, or -1 if one may be left (said).
 */
static int kill_restored(pid_t root, const struct rjob *j)
{
	unsigned int i, tries, left = 0, killed = 0;
	struct pids s = { 0 };
	char states[64];
	int rc = 0;

	if (!root)
		fprintf(stderr, "ibckpt: criu wrote no %s: the job's processes with a provider "
			"and their descendants are killed, the restored root may be left\n",
			PID_FILE);
	if (root && pids_add(&s, root))
		rc = -1;
	for (i = 0; !rc && i < j->n; i++)
		rc = pids_add(&s, (pid_t)j->p[i].pid);
	/* s grows behind i: every child found is stopped and walked in turn */
	for (i = 0; !rc && i < s.n; i++) {
		if (kill(s.v[i], SIGSTOP))
			continue;	/* gone; any other failure is the SIGKILL's to tell */
		rc = pids_children(&s, s.v[i]);
	}
	if (rc)
		fprintf(stderr, "ibckpt: out of memory: some of the restored job may be left\n");
	for (i = 0; i < s.n; i++) {
		if (!kill(s.v[i], SIGKILL))
			killed++;
		else if (errno != ESRCH) {
			fprintf(stderr, "ibckpt: cannot kill process %d: %s\n", s.v[i],
				strerror(errno));
			rc = -1;
		}
	}
	for (tries = 0; tries < KILL_WAIT_MS / 10; tries++) {
		for (left = 0, i = 0; i < s.n; i++)
			left += pid_exists(s.v[i]);
		if (!left)
			break;
		usleep(10000);
	}
	for (i = 0; left && i < s.n; i++) {
		if (!pid_exists(s.v[i]))
			continue;
		if (!thread_states(s.v[i], states, sizeof(states)))
			states[0] = 0;
		fprintf(stderr, "ibckpt: process %d is still there %d s after SIGKILL (its "
			"threads' states: %s)\n", s.v[i], KILL_WAIT_MS / 1000,
			states[0] ? states : "?");
		rc = -1;
	}
	free(s.v);
	return rc ? -1 : (int)killed;
}

/* The job's selector as command-line arguments, for the freeze and thaw commands. */
static int job_args(const struct cli_job *job, char *idbuf, size_t len, char **argv)
{
	snprintf(idbuf, len, "%u", job->id);
	switch (job->type) {
	case IBCKPT_JOB_PGRP:
		argv[0] = idbuf;
		return 1;
	case IBCKPT_JOB_SESSION:
		argv[0] = "--session";
		break;
	case IBCKPT_JOB_TREE:
		argv[0] = "--tree";
		break;
	case IBCKPT_JOB_CGROUP:
		argv[0] = "--cgroup";
		argv[1] = (char *)job->cgroup;
		return 2;
	default:
		return 0;
	}
	argv[1] = idbuf;
	return 2;
}

static int thaw_session(uint64_t id)
{
	char idbuf[32], *argv[] = { "thaw", "--id", idbuf, NULL };

	snprintf(idbuf, sizeof(idbuf), "%llu", (unsigned long long)id);
	return cmd_thaw(3, argv);
}

/*
 * Freeze @job (detached from this command: the steps after are separate
 * calls), release it, thaw it: released or not, its threads run again, a
 * released job's gates stay closed. Return: release_job()'s, or 1.
 */
static int freeze_release(struct cli_job *job, const char *dir, const char *what,
			  const char *timeout, uint64_t *session)
{
	struct cli_job by_id = { 0 };
	struct cli_sessions l = { 0 };
	char idbuf[32], ext[256], *fargv[10];
	int fargc, err, rc, saved_json = json;
	struct ibnl n;

	fargv[0] = "freeze";
	fargv[1] = "--persist";
	fargv[2] = "600";
	fargv[3] = "--timeout";
	fargv[4] = (char *)timeout;
	fargc = 5 + job_args(job, idbuf, sizeof(idbuf), fargv + 5);
	fargv[fargc] = NULL;
	json = 0;	/* one report, the caller's */
	timing(NULL);
	rc = cmd_freeze(fargc, fargv);
	timing("freeze");
	json = saved_json;
	if (rc)
		return 1;
	if (ibnl_open(&n, 0))
		return 1;
	err = cli_get_sessions(&n, job, &l, ext, sizeof(ext));
	ibnl_close(&n);
	cli_job_close();
	if (err || l.n != 1) {
		fprintf(stderr, "ibckpt: %s: the freeze's session is gone\n", what);
		free(l.v);
		return 1;
	}
	by_id.session = *session = l.v[0].id;
	free(l.v);
	json = 0;
	rc = release_job(&by_id, dir, what);
	timing("release");
	if (thaw_session(by_id.session))
		rc = 1;
	timing("thaw");
	json = saved_json;
	return rc;
}

/* The process criu dumps the job from: the group's, session's or tree's leader. */
static int dump_root(const struct cli_job *job, unsigned int *root)
{
	if (job->type == IBCKPT_JOB_PGRP || job->type == IBCKPT_JOB_SESSION ||
	    job->type == IBCKPT_JOB_TREE) {
		*root = job->id;
		if (!kill((pid_t)job->id, 0) || errno == EPERM)
			return 0;
		fprintf(stderr, "ibckpt: checkpoint: the job's leader %u is gone: criu dumps a "
			"process and its descendants\n", job->id);
		return -1;
	}
	fprintf(stderr, "ibckpt: checkpoint to disk takes a process group, session or tree "
		"(criu dumps a process and its descendants); --leave-running takes any job\n");
	return -1;
}

int cmd_checkpoint(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'D' },
		{ "leave-running", no_argument, NULL, 'L' },
		{ "timeout", required_argument, NULL, 't' },
		CLI_JOB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	char what[320], desc[288];
	const char *dir = NULL, *timeout = "10000";
	struct cli_job job = { 0 }, by_id = { 0 };
	int c, err, leave = 0, saved_json = json, rc, attempt;
	unsigned int root = 0;
	struct rjob j = { 0 };

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;
	while ((c = getopt_long(argc, argv, "D:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'D':
			dir = optarg;
			break;
		case 'L':
			leave = 1;
			break;
		case 't':
			timeout = optarg;
			break;
		default:
			err = cli_job_opt(c, optarg, &job);
			if (err <= 0)
				goto usage;
		}
	}
	if (!dir || cli_job_finish(&job, argc, argv, optind, 0))
		goto usage;
	if (!leave && dump_root(&job, &root))
		return 1;
	/* a checkpoint into a directory used before is not whole until it is written again */
	if (!leave) {
		char done[4200];

		snprintf(done, sizeof(done), "%s/" DONE_FILE, dir);
		if (unlink(done) && errno != ENOENT) {
			fprintf(stderr, "ibckpt: %s: %s\n", done, strerror(errno));
			return 1;
		}
	}
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot checkpoint %s", desc);

	/*
	 * Freeze, detached from this command (the steps below are separate
	 * calls), and release; requests still in flight between two QPs are
	 * waited out by freezing again a little later.
	 */
	for (attempt = 1;; attempt++) {
		rc = freeze_release(&job, dir, what, timeout, &by_id.session);
		if (rc != 3 || attempt == CHECKPOINT_TRIES)
			break;
		fprintf(stderr, "ibckpt: %s: trying again (%d of %d)\n", what, attempt + 1,
			CHECKPOINT_TRIES);
		usleep(200000u * (unsigned int)attempt);
	}
	if (rc)
		return 1;
	if (!leave) {
		/* criu seizes the threads; none is inside a verb, each verb waits at a gate */
		rc = job_load(dir, &j) || wait_unregistered(&j) || criu_dump(dir, root) ||
		     write_file(dir, DONE_FILE, "", 0);
		rjob_free(&j);
		if (!rc) {
			if (json) {
				printf("{\"checkpointed\":true,\"session\":%llu,\"left_running\":false,"
				       "\"dir\":", (unsigned long long)by_id.session);
				json_str(stdout, dir);
				printf("}\n");
			} else {
				printf("%s: checkpoint %s written; the job is gone\n", desc, dir);
			}
			return 0;
		}
		fprintf(stderr, "ibckpt: %s: the job is reacquired and runs on\n", what);
	}
	json = 0;
	rc = reacquire_dir(dir, NULL, 0, true);
	json = saved_json;
	if (rc || !leave)
		return 1;
	if (json) {
		printf("{\"checkpointed\":true,\"session\":%llu,\"left_running\":true,\"dir\":",
		       (unsigned long long)by_id.session);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%s: checkpoint %s: released and reacquired in place\n", desc, dir);
	}
	return 0;
usage:
	fprintf(stderr, "usage: ibckpt checkpoint -D DIR [--leave-running] [--timeout MS] "
		CLI_JOB_USAGE "\n");
	return 2;
}

/* Each process's devices, by its saved snapshot: do they exist (after the map)? */
struct dev_check {
	const struct ibckpt_rdev_map *map;
	uint32_t nmap;
	unsigned int pid;
	int missing;
};

static void check_device(const struct ibckpt_snap_rec *r, const void *pl, void *arg)
{
	const struct ibckpt_snap_device *d = pl;
	struct dev_check *c = arg;
	const char *name = d->name;
	char path[160];
	uint32_t i;

	if (r->type != IBCKPT_SNAP_DEVICE || c->missing)
		return;
	for (i = 0; i < c->nmap; i++)
		if (!strncmp(c->map[i].from, d->name, sizeof(c->map[i].from)))
			name = c->map[i].to;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%.64s", name);
	if (access(path, F_OK)) {
		fprintf(stderr, "ibckpt: process %u used device %.64s%s%s, which does not exist "
			"here (--map it to one that does)\n", c->pid, d->name,
			name != d->name ? ", mapped to " : "", name != d->name ? name : "");
		c->missing = 1;
	}
}

static int snap_load(const char *dir, unsigned int pid, struct cli_snap *s);

static int devices_present(const char *dir, const struct rjob *j,
			   const struct ibckpt_rdev_map *map, uint32_t nmap)
{
	unsigned int i;

	for (i = 0; i < j->n; i++) {
		struct dev_check c = { .map = map, .nmap = nmap, .pid = j->p[i].pid };
		struct cli_snap s;

		/* a regular file, no link, that snap_validate() accepts */
		if (snap_load(dir, j->p[i].pid, &s))
			return -1;
		snap_foreach(s.data, check_device, &c);
		free(s.data);
		if (c.missing)
			return -1;
	}
	return 0;
}

int cmd_restart(int argc, char **argv)
{
	struct ibckpt_rdev_map *map = NULL;
	struct rjob j = { 0 };
	char path[4200];
	const char *dir = NULL;
	uint32_t nmap = 0;
	unsigned int i;
	int rc = 1, saved_json, lock = -1, killed;
	pid_t root;

	if (dir_map_args(argc, argv, "restart", &dir, &map, &nmap))
		return 2;
	if (job_load(dir, &j))
		goto out;
	/* criu restores, as root, what the images say: nobody else may have written them */
	if (dir_trusted(dir))
		goto out;
	snprintf(path, sizeof(path), "%s/" DONE_FILE, dir);
	if (access(path, F_OK)) {
		fprintf(stderr, "ibckpt: %s: an incomplete checkpoint (no %s): not restarted\n",
			dir, DONE_FILE);
		goto out;
	}
	/* one restart of a directory at a time; the lock goes with this command */
	snprintf(path, sizeof(path), "%s/" JOB_FILE, dir);
	lock = open(path, O_RDONLY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB)) {
		fprintf(stderr, "ibckpt: %s: %s\n", dir, lock < 0 ? strerror(errno) :
			"being restarted by another ibckpt");
		goto out;
	}
	for (i = 0; i < j.n; i++) {
		if (!kill((pid_t)j.p[i].pid, 0) || errno == EPERM) {
			fprintf(stderr, "ibckpt: process %u exists: the job still runs, or its pid "
				"is taken (criu restores the same pids)\n", j.p[i].pid);
			goto out;
		}
	}
	if (devices_present(dir, &j, map, nmap))
		goto out;
	snprintf(path, sizeof(path), "%s/" CRIU_DIR, dir);
	if (dir_trusted(path))
		goto out;
	if (criu_restore(dir, &root))
		goto out;
	saved_json = json;
	json = 0;
	rc = reacquire_dir(dir, map, nmap, false);
	json = saved_json;
	if (rc) {
		/*
		 * Nothing is left half-running (restored, its verbs waiting
		 * forever): the restored job goes, and the checkpoint, which
		 * neither criu nor the reacquire changed, can be restarted again.
		 */
		killed = kill_restored(root, &j);
		if (killed >= 0)
			fprintf(stderr, "ibckpt: cannot restart %s: its reacquire failed (above) "
				"after criu restored it; the restored job was killed (%d "
				"processes); %s is unchanged and can be restarted again\n", dir,
				killed, dir);
		else
			fprintf(stderr, "ibckpt: cannot restart %s: its reacquire failed (above) "
				"after criu restored it, and the restored job could not be "
				"killed entirely (above); %s is unchanged and can be restarted "
				"again once those processes are gone\n", dir, dir);
		goto out;
	}
	if (json) {
		printf("{\"restarted\":%u,\"dir\":", j.n);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%u process%s restarted from %s\n", j.n, j.n == 1 ? "" : "es", dir);
	}
out:
	if (lock >= 0)
		close(lock);
	rjob_free(&j);
	free(map);
	return rc;
}

/* ---- ibckpt dump -D DIR: the checkpoint directory read offline ---- */

/* DIR/proc-PID.snap into @s: a regular file, not a link, that snap_validate() accepts. */
static int snap_load(const char *dir, unsigned int pid, struct cli_snap *s)
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

int cli_ckpt_load(const char *dir, struct cli_snaps *l, int *complete)
{
	struct rjob j = { 0 };
	char path[4200];
	unsigned int i;

	memset(l, 0, sizeof(*l));
	if (job_load(dir, &j))
		return 1;
	l->v = calloc(j.n, sizeof(*l->v));
	if (!l->v) {
		fprintf(stderr, "ibckpt: out of memory\n");
		rjob_free(&j);
		return 1;
	}
	for (i = 0; i < j.n; i++, l->n++) {
		if (snap_load(dir, j.p[i].pid, &l->v[i])) {
			rjob_free(&j);
			cli_snaps_free(l);
			memset(l, 0, sizeof(*l));
			return 1;
		}
	}
	rjob_free(&j);
	snprintf(path, sizeof(path), "%s/" DONE_FILE, dir);
	*complete = !access(path, F_OK);
	return 0;
}
