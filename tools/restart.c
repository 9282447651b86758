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
 * The directory is ckptdir.c's, criu is criu.c's, and the removal of a
 * restored job that failed killtree.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <linux/ibckpt.h>
#include <linux/ibckpt_restart.h>
#include "cli.h"
#include "json.h"
#include "peers.h"
#include "rchan.h"
#include "restart.h"
#include "snapshot.h"

#define PHASE_MS	60000	/* a phase of one process: re-creating can take long */
#define CHECKPOINT_TRIES 5	/* freezes that may find requests in flight */

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

	ckpt_timing(NULL);
	rjob_undone = false;
	if (job_load(dir, &j) || rjob_open(&j))
		goto out;
	if (rjob_reacquire(&j, map, nmap, &nids)) {
		if (rjob_undone && hint)
			fprintf(stderr, "ibckpt: the job is released as it was before this "
				"reacquire: ibckpt reacquire -D %s [--map ...] tries again\n", dir);
		goto out;
	}
	ckpt_timing("reacquire");
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
	ckpt_timing(NULL);
	rc = cmd_freeze(fargc, fargv);
	ckpt_timing("freeze");
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
	ckpt_timing("release");
	if (thaw_session(by_id.session))
		rc = 1;
	ckpt_timing("thaw");
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
		rc = job_load(dir, &j) || wait_unregistered(&j) || tree_save(dir, (pid_t)root) ||
		     criu_dump(dir, root) || write_file(dir, DONE_FILE, "", 0);
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
	if (tree_taken(dir))	/* the processes without a provider too */
		goto out;
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
