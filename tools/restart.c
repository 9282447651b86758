// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt restart -D DIR and ibckpt reacquire -D DIR (Documentation/restart.rst):
 *
 *   reacquire -D DIR      every process of DIR re-creates its objects, the
 *                         job's new identities are exchanged, QPs are
 *                         brought back to RTS, the gates reopen
 *   restart -D DIR        criu restores the job of DIR (criu.c), which is
 *                         then reacquired; a restart that fails removes
 *                         what it restored (killtree.c)
 *
 * Both take the same command line and, for a job on several nodes, the
 * same parts of DIR (DIR/part.P); the reacquire itself is release.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "restart.h"
#include "snapshot.h"

/* One part of a checkpoint a restart takes: DIR, or DIR/part.P of a job on several nodes. */
struct restart_part {
	char dir[4200];
	unsigned int part;
	struct job_chans j;
	int lock;		/* held while the restart runs */
	pid_t root;		/* criu's restored root */
	bool restored;
};

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

static int reacquire_dir(const char *dir, const struct ibckpt_rdev_map *map, uint32_t nmap,
			 bool hint)
{
	struct job_chans j = { 0 };
	uint32_t nids;
	int rc = 1;

	if (!job_load(dir, &j))
		rc = reacquire_job(&j, dir, map, nmap, hint, NULL, &nids);
	if (!rc)
		reacquire_print(j.n, nids, dir, json);
	job_chans_free(&j);
	return rc;
}

/* restart's own options (reacquire has none) */
struct restart_opts {
	bool wait;			/* --wait: stay the job's parent (rwait.c) */
	const char *slurm;		/* --slurm JOBID: run as a step of that job */
	unsigned int slurm_job;
};

/*
 * reacquire's and restart's command line: -D DIR [--map DEV=DEV,...], and
 * restart's @ro. Return: 0, 1 (said: --slurm could not fan out) or 2 (said;
 * *map freed).
 */
static int dir_map_args(int argc, char **argv, const char *name, const char **dir,
			struct ibckpt_rdev_map **map, uint32_t *nmap, struct coord_opts *nopts,
			struct restart_opts *ro)
{
	enum { OPT_WAIT = 0x3000, OPT_SLURM };
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'D' },
		{ "map", required_argument, NULL, 'm' },
		NODES_OPTIONS,
		{ "part", required_argument, NULL, NODES_OPT_PART },
		{ "wait", no_argument, NULL, OPT_WAIT },
		{ "slurm", required_argument, NULL, OPT_SLURM },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int nodes = 1;
	int c, st;

	optind = 0;
	while ((c = getopt_long(argc, argv, "D:m:", opts, NULL)) != -1) {
		if (c == 'D') {
			*dir = optarg;
		} else if ((c == OPT_WAIT || c == OPT_SLURM) && ro) {
			ro->wait |= c == OPT_WAIT;
			if (c == OPT_SLURM && cli_slurm_id(optarg, &ro->slurm_job, NULL))
				goto usage;
			if (c == OPT_SLURM)
				ro->slurm = optarg;
		} else if (c == 'm' ? parse_map(optarg, map, nmap) :
			   nodes_opt(c, optarg, nopts) <= 0) {
			goto usage;
		}
	}
	if (!*dir || optind != argc)
		goto usage;
	if (ro && ro->slurm && (*dir)[0] != '/') {
		fprintf(stderr, "ibckpt: --slurm takes an absolute -D DIR (every node must find "
			"the same directory), not '%s'\n", *dir);
		free(*map);
		*map = NULL;
		return 1;
	}
	if (ro && ro->slurm) {
		/* every part on the node of its rank, each the job's parent there */
		st = nodes_load(*dir, &nodes);
		if (st < 0 ||
		    slurm_restart_finish(ro->slurm_job, nodes, st == 0, nopts, argc, argv)) {
			free(*map);
			*map = NULL;
			return 1;
		}
		ro->wait = true;
	}
	if (!nodes_finish(nopts))
		return 0;
usage:
	free(*map);
	*map = NULL;
	fprintf(stderr, "usage: ibckpt %s -D DIR [--map DEV=DEV,...] [" NODES_USAGE
		" [--part P]...]%s\n", name, ro ? " [--wait] [--slurm JOBID]" : "");
	return 2;
}

/*
 * The parts of DIR this node takes: DIR itself for a job on one node, DIR/part.P
 * for each P of --part (default: this node's rank) for a job on several.
 * Return: 0, or -1 (said).
 */
static int parts_of(const char *dir, const struct coord_opts *nopts, struct restart_part **parts,
		    unsigned int *n, unsigned int *nparts)
{
	unsigned int i, total = 0;
	int st = nodes_load(dir, &total);

	*parts = NULL;
	*n = 0;
	if (st < 0)
		return -1;
	if (st > 0 && nopts->n) {
		fprintf(stderr, "ibckpt: %s: the checkpoint of a job on one node: no --node\n",
			dir);
		return -1;
	}
	if (st == 0 && !nopts->n) {
		fprintf(stderr, "ibckpt: %s: the checkpoint of a job on %u nodes: run this on each "
			"with --node RANK/N --run ID (restart.rst)\n", dir, total);
		return -1;
	}
	*nparts = nopts->n ? total : 1;
	*n = nopts->n ? (nopts->nparts ? nopts->nparts : 1) : 1;
	*parts = calloc(*n, sizeof(**parts));
	if (!*parts)
		return -1;
	for (i = 0; i < *n; i++) {
		struct restart_part *p = &(*parts)[i];

		p->lock = -1;
		p->part = nopts->n ? (nopts->nparts ? nopts->part[i] : nopts->rank) : 0;
		if (nopts->n && p->part >= total) {
			fprintf(stderr, "ibckpt: %s: no part %u: the job had %u nodes\n", dir,
				p->part, total);
			return -1;
		}
		if (nopts->n)
			part_dir(p->dir, sizeof(p->dir), dir, p->part);
		else
			snprintf(p->dir, sizeof(p->dir), "%s", dir);
	}
	return 0;
}

static void parts_free(struct restart_part *parts, unsigned int n)
{
	unsigned int i;

	for (i = 0; parts && i < n; i++) {
		if (parts[i].lock >= 0)
			close(parts[i].lock);
		job_chans_free(&parts[i].j);
	}
	free(parts);
}

/* Every part's processes, in one job @all (its channels not opened). */
static int parts_job(const struct restart_part *parts, unsigned int n, struct job_chans *all)
{
	unsigned int i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < parts[i].j.n; k++)
			if (job_chans_add(all, parts[i].j.p[k].pid, parts[i].j.p[k].cmd_fd,
					  parts[i].j.p[k].reply_fd))
				return -1;
	return 0;
}

/* With @nopts: a coordination in @dir, in @cs; NULL without. */
static struct coord *coord_of(const char *dir, const struct coord_opts *nopts, struct coord *cs)
{
	if (!nopts->n)
		return NULL;
	if (coord_open(cs, dir, nopts))
		return (struct coord *)-1;
	return cs;
}

int cmd_reacquire(int argc, char **argv)
{
	struct ibckpt_rdev_map *map = NULL;
	struct coord_opts nopts = { 0 };
	struct restart_part *parts = NULL;
	struct job_chans all = { 0 };
	unsigned int n = 0, total, i;
	const char *dir = NULL;
	struct coord cs, *co;
	uint32_t nmap = 0, nids;
	int rc = 1, st = 0;

	if (dir_map_args(argc, argv, "reacquire", &dir, &map, &nmap, &nopts, NULL))
		return 2;
	co = coord_of(dir, &nopts, &cs);
	if (co == (struct coord *)-1)
		goto out;
	if (!co) {
		rc = reacquire_dir(dir, map, nmap, true);
		goto out;
	}
	st = parts_of(dir, &nopts, &parts, &n, &total);
	for (i = 0; !st && i < n; i++)
		st = job_load(parts[i].dir, &parts[i].j);
	if (!st)
		st = parts_job(parts, n, &all);
	if (nodes_vote(co, "loaded", st ? 1 : 0, "cannot read its part of the checkpoint", NULL, 0,
		       0, NULL, NULL, NULL) || st)
		goto out;
	rc = reacquire_job(&all, dir, map, nmap, true, co, &nids);
	if (!rc)
		reacquire_print(all.n, nids, dir, json);
out:
	job_chans_free(&all);
	parts_free(parts, n);
	free(map);
	return rc;
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

static int devices_present(const char *dir, const struct job_chans *j,
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

/*
 * Can @p be restored here? Its job, a whole checkpoint by a trusted hand,
 * no restart of it under way (its lock is taken and kept), its pids free,
 * its devices present. Return: 0, or -1 (said).
 */
static int part_check(struct restart_part *p, const struct ibckpt_rdev_map *map, uint32_t nmap)
{
	char path[4300];
	unsigned int i;

	if (job_load(p->dir, &p->j))
		return -1;
	/* criu restores, as root, what the images say: nobody else may have written them */
	if (dir_trusted(p->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/" DONE_FILE, p->dir);
	if (access(path, F_OK)) {
		fprintf(stderr, "ibckpt: %s: an incomplete checkpoint (no %s): not restarted\n",
			p->dir, DONE_FILE);
		return -1;
	}
	/* one restart of a directory at a time; the lock goes with this command */
	snprintf(path, sizeof(path), "%s/" JOB_FILE, p->dir);
	p->lock = open(path, O_RDONLY | O_CLOEXEC);
	if (p->lock < 0 || flock(p->lock, LOCK_EX | LOCK_NB)) {
		fprintf(stderr, "ibckpt: %s: %s\n", p->dir, p->lock < 0 ? strerror(errno) :
			"being restarted by another ibckpt");
		return -1;
	}
	for (i = 0; i < p->j.n; i++) {
		if (pid_taken((pid_t)p->j.p[i].pid)) {
			fprintf(stderr, "ibckpt: process %u exists: the job still runs, or its pid "
				"is taken (criu restores the same pids)\n", p->j.p[i].pid);
			return -1;
		}
	}
	if (tree_taken(p->dir))	/* the processes without a provider too */
		return -1;
	if (devices_present(p->dir, &p->j, map, nmap))
		return -1;
	snprintf(path, sizeof(path), "%s/" CRIU_DIR, p->dir);
	return dir_trusted(path);
}

/* Node 0, at a restart on several nodes: is every part restored by exactly one node? */
struct parts_cover {
	unsigned int total;
	unsigned int *by;	/* per part: 0, or its node + 1 */
	char *why;
	size_t whylen;
};

static int cover_node(void *arg, unsigned int rank, const void *data, size_t len)
{
	struct parts_cover *c = arg;
	const uint32_t *part = data;
	size_t i;

	for (i = 0; i < len / sizeof(*part); i++) {
		if (part[i] >= c->total) {
			snprintf(c->why, c->whylen, "node %u restores part %u: the job had %u",
				 rank, part[i], c->total);
			return 1;
		}
		if (c->by[part[i]]) {
			snprintf(c->why, c->whylen, "part %u is restored by node %u and node %u",
				 part[i], c->by[part[i]] - 1u, rank);
			return 1;
		}
		c->by[part[i]] = rank + 1;
	}
	return 0;
}

static int parts_cover(void *arg, const void *votes, size_t len, char *why, size_t whylen)
{
	struct parts_cover c = { .total = *(const unsigned int *)arg, .why = why,
				 .whylen = whylen };
	unsigned int i;
	int rc;

	c.by = calloc(c.total, sizeof(*c.by));
	if (!c.by) {
		snprintf(why, whylen, "out of memory");
		return 1;
	}
	rc = coord_each(votes, len, cover_node, &c);
	for (i = 0; !rc && i < c.total; i++) {
		if (!c.by[i]) {
			snprintf(why, whylen, "no node restores part %u (--part)", i);
			rc = 1;
		}
	}
	free(c.by);
	return rc;
}

/* Remove what this node restored of a restart that failed. */
static void parts_kill(const char *dir, struct restart_part *parts, unsigned int n)
{
	unsigned int i;
	int killed;

	for (i = 0; i < n; i++) {
		if (!parts[i].restored)
			continue;
		killed = kill_restored(parts[i].root, &parts[i].j);
		if (killed >= 0)
			fprintf(stderr, "ibckpt: cannot restart %s: the restored job was killed (%d "
				"processes); %s is unchanged and can be restarted again\n",
				parts[i].dir, killed, dir);
		else
			fprintf(stderr, "ibckpt: cannot restart %s: the restored job could not be "
				"killed entirely (above); %s is unchanged and can be restarted "
				"again once those processes are gone\n", parts[i].dir, dir);
	}
}

int cmd_restart(int argc, char **argv)
{
	struct ibckpt_rdev_map *map = NULL;
	struct coord_opts nopts = { 0 };
	struct restart_part *parts = NULL;
	struct job_chans all = { 0 };
	const char *dir = NULL;
	struct coord cs, *co;
	char path[4200];
	uint32_t nmap = 0, nids, mine[COORD_MAX_PARTS];
	struct restart_opts ro = { 0 };
	pid_t roots[COORD_MAX_PARTS];
	unsigned int i, n = 0, total = 0;
	int rc = 1, st;

	st = dir_map_args(argc, argv, "restart", &dir, &map, &nmap, &nopts, &ro);
	if (st)
		return st;
	if (ro.wait && rwait_prepare())
		return 1;
	co = coord_of(dir, &nopts, &cs);
	if (co == (struct coord *)-1)
		goto out;
	st = parts_of(dir, &nopts, &parts, &n, &total);
	if (!st && co) {
		/* the job of several nodes: whole only if node 0 marked it so */
		snprintf(path, sizeof(path), "%s/" DONE_FILE, dir);
		st = dir_trusted(dir);
		if (!st && access(path, F_OK)) {
			fprintf(stderr, "ibckpt: %s: an incomplete checkpoint (no %s): not "
				"restarted\n", dir, DONE_FILE);
			st = -1;
		}
	}
	for (i = 0; !st && i < n; i++) {
		st = part_check(&parts[i], map, nmap);
		mine[i] = parts[i].part;
	}
	if (nodes_vote(co, "checked", st ? 1 : 0, "its part cannot be restored here", mine,
		       st ? 0 : n * sizeof(mine[0]), 0, parts_cover, &total, NULL) || st)
		goto out;
	for (i = 0; !st && i < n; i++) {
		st = criu_restore(parts[i].dir, &parts[i].root);
		parts[i].restored = !st;
	}
	if (!st)
		st = parts_job(parts, n, &all);
	if (nodes_vote(co, "restored", st ? 1 : 0, "its criu restore failed", NULL, 0, 0, NULL,
		       NULL, NULL) || st) {
		parts_kill(dir, parts, n);
		goto out;
	}
	rc = reacquire_job(&all, dir, map, nmap, false, co, &nids);
	if (!rc && !json)	/* as text, before the restart's own report */
		reacquire_print(all.n, nids, dir, false);
	if (rc) {
		/*
		 * Nothing is left half-running (restored, its verbs waiting
		 * forever): the restored job goes, and the checkpoint, which
		 * neither criu nor the reacquire changed, can be restarted again.
		 */
		fprintf(stderr, "ibckpt: cannot restart %s: its reacquire failed (above) after "
			"criu restored it\n", dir);
		parts_kill(dir, parts, n);
		goto out;
	}
	if (json) {
		printf("{\"restarted\":%u,", all.n);
		if (co)
			printf("\"node\":%u,\"nodes\":%u,", co->rank, co->n);
		printf("\"dir\":");
		json_str(stdout, dir);
		printf("}\n");
	} else if (co) {
		printf("node %u of %u: %u process%s restarted from %s\n", co->rank, co->n, all.n,
		       all.n == 1 ? "" : "es", dir);
	} else {
		printf("%u process%s restarted from %s\n", all.n, all.n == 1 ? "" : "es", dir);
	}
	for (i = 0; i < n; i++)
		roots[i] = parts[i].root;
out:
	job_chans_free(&all);
	parts_free(parts, n);
	free(map);
	/*
	 * Nothing of the restart held open while the job runs, its run
	 * closed as passed: the job's own exit status is not the restart's.
	 */
	if (!rc && ro.wait) {
		if (co)
			coord_close(co, true);
		rc = rwait(roots, n);
	}
	return rc;
}
