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

static int job_chans_open(struct job_chans *j)
{
	char why[512];
	unsigned int i;

	for (i = 0; i < j->n; i++) {
		if (rchan_open(&j->p[i], why, sizeof(why))) {
			fprintf(stderr, "ibckpt: %s\n", why);
			job_chans_close(j);
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
static bool job_chans_undone;	/* the last failed reacquire was undone everywhere */

static void job_chans_abort(struct job_chans *j)
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
	job_chans_undone = undone == j->n;
}

/* Append @len bytes of identities to *@all. */
static int idents_add(struct ibckpt_ident **all, uint32_t *nall, const void *ids, size_t len)
{
	struct ibckpt_ident *n;

	if (len % sizeof(**all))
		return -1;
	if (!len)
		return 0;
	n = realloc(*all, *nall * sizeof(**all) + len);
	if (!n)
		return -1;
	*all = n;
	memcpy(n + *nall, ids, len);
	*nall += (uint32_t)(len / sizeof(**all));
	return 0;
}

struct idents_merge {
	struct ibckpt_ident *all;
	uint32_t n;
};

static int idents_of_node(void *arg, unsigned int rank, const void *data, size_t len)
{
	struct idents_merge *m = arg;

	(void)rank;
	return idents_add(&m->all, &m->n, data, len) ? 1 : 0;
}

/*
 * With @co (a job on several nodes), every node's processes reacquire, then
 * every node's identities go to every node (node 0 gathers them), each
 * phase ends at a barrier, and a failure anywhere undoes the reacquire on
 * every node.
 */
static int job_chans_reacquire(struct job_chans *j, const struct ibckpt_rdev_map *map,
			       uint32_t nmap, uint32_t *nids_out, struct coord *co)
{
	struct ibckpt_ident *all = NULL;
	struct coord_verdict v;
	uint32_t nall = 0, len;
	char why[512];
	unsigned int i;
	void *ids;
	int st = 0, rc = -1;

	for (i = 0; i < j->n && !st; i++) {
		st = rchan_call(&j->p[i], IBCKPT_RMSG_REACQUIRE, 0, map,
				nmap * (uint32_t)sizeof(*map), PHASE_MS, &ids, &len, why,
				sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: reacquire: %s\n", why);
			break;
		}
		if (idents_add(&all, &nall, ids, len)) {
			fprintf(stderr, "ibckpt: reacquire: process %u: malformed identities\n",
				j->p[i].pid);
			st = -1;
		}
		free(ids);
	}
	if (co) {
		struct idents_merge m = { 0 };

		if (nodes_vote(co, "reacquire", st ? 1 : 0, "its reacquire failed", all,
			       nall * sizeof(*all), COORD_GATHER, NULL, NULL, &v))
			goto abort;	/* here or elsewhere: every node undoes its own */
		st = coord_each(v.data, v.len, idents_of_node, &m);
		coord_verdict_free(&v);
		free(all);
		all = m.all;
		nall = m.n;
		if (st) {
			/* said at the next barrier, which every node passes */
			fprintf(stderr, "ibckpt: reacquire: the nodes' identities are malformed\n");
			st = 1;
		}
	} else if (st) {
		goto abort;
	}
	for (i = 0; i < j->n && !st; i++) {
		st = rchan_call(&j->p[i], IBCKPT_RMSG_REMAP, 0, all, nall * (uint32_t)sizeof(*all),
				PHASE_MS, NULL, NULL, why, sizeof(why));
		if (st)
			fprintf(stderr, "ibckpt: reacquire: %s\n", why);
	}
	if (nodes_vote(co, "remap", st ? 1 : 0, "its remap failed", NULL, 0, 0, NULL, NULL,
		       NULL) || st)
		goto abort;
	for (i = 0; i < j->n && !st; i++) {
		st = rchan_call(&j->p[i], IBCKPT_RMSG_GO, 0, NULL, 0, PHASE_MS, NULL, NULL, why,
				sizeof(why));
		if (st)
			fprintf(stderr, "ibckpt: reacquire: %s\n", why);
	}
	/* not undone: a QP at RTS may have sent */
	if (nodes_vote(co, "go", st ? 1 : 0, "a GO failed", NULL, 0, 0, NULL, NULL, NULL) || st)
		goto out;
	*nids_out = nall;
	rc = 0;
out:
	free(all);
	return rc;
abort:
	job_chans_abort(j);
	goto out;
}

/* Each snapshot's restart channel, in @j; -1 if a process has none (said). */
static int channels_of(const struct cli_snaps *l, struct job_chans *j)
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
		if (job_chans_add(j, l->v[i].tgid, (int)c->cmd_fd, (int)c->reply_fd))
			return -1;
	}
	return 0;
}

/* What each process's PREPARE and RELEASE carry: what its QPs' peers grant. */
struct rpeers {
	struct ibckpt_rpeer **v;
	uint32_t *n;
	unsigned int np;
};

static void rpeers_free(struct rpeers *r)
{
	unsigned int i;

	for (i = 0; i < r->np; i++)
		free(r->v[i]);
	free(r->v);
	free(r->n);
	memset(r, 0, sizeof(*r));
}

/* For each process of @l, from every snapshot of the job (@snaps). Return: 0 or -1. */
static int rpeers_of(struct rpeers *r, const struct cli_snaps *l, const void *const *snaps,
		     unsigned int nsnaps)
{
	unsigned int i;

	r->v = calloc(l->n ? l->n : 1, sizeof(*r->v));
	r->n = calloc(l->n ? l->n : 1, sizeof(*r->n));
	if (!r->v || !r->n) {
		rpeers_free(r);
		return -1;
	}
	r->np = l->n;
	for (i = 0; i < l->n; i++) {
		if (peers_access(snaps, nsnaps, l->v[i].tgid, &r->v[i], &r->n[i])) {
			fprintf(stderr, "ibckpt: out of memory\n");
			rpeers_free(r);
			return -1;
		}
	}
	return 0;
}

struct prep_arg {
	struct job_chans *j;
	const struct rpeers *peers;
};

static int prep_call(void *arg, unsigned int i, uint32_t flags, char *why, size_t whylen)
{
	const struct prep_arg *a = arg;

	return rchan_call(&a->j->p[i], IBCKPT_RMSG_PREPARE, flags, a->peers->v[i],
			  a->peers->n[i] * (uint32_t)sizeof(struct ibckpt_rpeer), PHASE_MS, NULL,
			  NULL, why, whylen);
}

/*
 * The job's snapshots checked pairwise (tools/peers.c), and what each
 * process's QPs' peers grant. @co: every node's, through node 0, which
 * sends them all to every node.
 * Return: 0, 1 (said), or 3 (requests in flight, said).
 */
static int peers_of(struct cli_snaps *l, const char *what, struct coord *co,
		    struct rpeers *peers)
{
	struct coord_verdict all = { 0 };
	const void **snaps;
	unsigned int i, n;
	char why[512];
	int st;

	if (co) {
		/* every node's QPs with every node's: node 0 checks them all */
		st = nodes_vote_peers(co, l, &all);
		if (st)
			return st;
		st = nodes_verdict_snaps(&all, &snaps, &n);
	} else {
		n = l->n;
		snaps = calloc(n ? n : 1, sizeof(*snaps));
		if (!snaps)
			return 1;
		for (i = 0; i < n; i++)
			snaps[i] = l->v[i].data;
		st = peers_check(snaps, n, why, sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: %s: %s\n", what, why);
			free(snaps);
			return st == -2 ? 3 : 1;
		}
	}
	if (!st)
		st = rpeers_of(peers, l, snaps, n) ? 1 : 0;
	free(snaps);
	coord_verdict_free(&all);
	/* this node alone: the others meet it at the next barrier */
	if (st && co)
		nodes_vote(co, "channels", 1, "cannot read the job's snapshots", NULL, 0, 0, NULL,
			   NULL, NULL);
	return st;
}

/*
 * Release the frozen @job; DIR keeps the job. A refusal of any process
 * leaves the job as it was: the ones released are reacquired in place.
 * Return: 0, 1 (said), or 3 when requests were in flight (said; the job is
 * unchanged and a later freeze may find them arrived): the CLI's PSN check
 * found them, or, on one node, a provider refused with EBUSY (a signaled
 * send not completed, a request not transmitted yet, a fence behind a
 * READ or atomic not completed: restart.rst, "Exactly once"), or kept an
 * atomic fence outstanding after PREPARE_AGAIN more asks (prepare.c).
 */
static int release_job(struct cli_job *job, const char *dir, const char *what,
		       struct coord *co, unsigned int *released)
{
	struct rpeers peers = { 0 };
	struct prep_arg pa;
	struct cli_snaps l;
	struct job_chans j = { 0 };
	char why[512];
	unsigned int i, failed = 0;
	uint32_t nids;
	int st;

	if (cli_get_snapshots(job, &l, what)) {
		nodes_vote(co, "peers", 1, "it has no snapshot of its part", NULL, 0, 0, NULL, NULL,
			   NULL);
		return 1;
	}
	st = peers_of(&l, what, co, &peers);
	if (st) {
		cli_snaps_free(&l);
		return st;
	}
	st = channels_of(&l, &j) || dir_make(dir) || job_save(dir, &j, &l) || job_chans_open(&j);
	cli_snaps_free(&l);
	if (nodes_vote(co, "channels", st, "cannot reach its processes' providers", NULL, 0, 0,
		       NULL, NULL, NULL) || st) {
		job_chans_free(&j);
		rpeers_free(&peers);
		return 1;
	}
	/* every process agrees first: a refusal then changes nothing anywhere */
	pa = (struct prep_arg){ .j = &j, .peers = &peers };
	st = prepare_job(j.n, prep_call, &pa, what);
	if (nodes_vote(co, "prepare", st ? 1 : 0, "a process refused its release", NULL, 0, 0,
		       NULL, NULL, NULL) || st) {
		job_chans_free(&j);
		rpeers_free(&peers);
		/* on several nodes every node would have to agree to freeze again: not yet */
		return !co && st == 3 ? 3 : 1;
	}
	for (i = 0; i < j.n; i++) {
		st = rchan_call(&j.p[i], IBCKPT_RMSG_RELEASE, IBCKPT_RREL_PEERS_CHECKED,
				peers.v[i], peers.n[i] * (uint32_t)sizeof(struct ibckpt_rpeer),
				PHASE_MS, NULL, NULL, why, sizeof(why));
		if (st) {
			fprintf(stderr, "ibckpt: %s: %s\n", what, why);
			failed++;
			break;	/* what is released comes back: no more */
		}
	}
	rpeers_free(&peers);
	if (nodes_vote(co, "release", failed ? 1 : 0, "a process's release failed", NULL, 0, 0,
		       NULL, NULL, NULL))
		failed++;
	if (failed) {
		/* nothing is left half-done: the ones released come back */
		if (job_chans_reacquire(&j, NULL, 0, &nids, co))
			fprintf(stderr, "ibckpt: %s: and reacquiring in place failed: the job "
				"stays released (ibckpt reacquire -D %s)\n", what, dir);
		job_chans_free(&j);
		return 1;
	}
	*released = j.n;
	job_chans_free(&j);
	return 0;
}

/* What `ibckpt release` prints: @n processes released into @dir. */
static void release_print(unsigned int n, const char *dir, bool as_json)
{
	if (as_json) {
		printf("{\"released\":%u,\"dir\":", n);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%u process%s released (%s)\n", n, n == 1 ? "" : "es", dir);
	}
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

/*
 * Reacquire the processes of @j (loaded, not opened), of checkpoint @dir.
 * @hint: say how to retry if the job is left released (not for a restart:
 * it kills it). @co: a job on several nodes, the others reacquire too.
 */
static int reacquire_job(struct job_chans *j, const char *dir, const struct ibckpt_rdev_map *map,
			 uint32_t nmap, bool hint, struct coord *co, uint32_t *nids)
{
	int rc = 1, st;

	ckpt_timing(NULL);
	job_chans_undone = false;
	st = job_chans_open(j);
	if (nodes_vote(co, "open", st ? 1 : 0, "cannot reach its processes' providers", NULL, 0, 0,
		       NULL, NULL, NULL) || st)
		return 1;
	*nids = 0;
	if (job_chans_reacquire(j, map, nmap, nids, co)) {
		if (job_chans_undone && hint)
			fprintf(stderr, "ibckpt: the job is released as it was before this "
				"reacquire: ibckpt reacquire -D %s [--map ...] tries again\n", dir);
		goto out;
	}
	ckpt_timing("reacquire");
	rc = 0;
out:
	return rc;
}

/* What `ibckpt reacquire` prints: @n processes of @dir reacquired, @nids identities. */
static void reacquire_print(unsigned int n, uint32_t nids, const char *dir, bool as_json)
{
	if (as_json) {
		printf("{\"reacquired\":%u,\"identities\":%u,\"dir\":", n, nids);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%u process%s reacquired, %u identities exchanged\n", n,
		       n == 1 ? "" : "es", nids);
	}
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
	unsigned int released;
	int c, err, rc;

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
	if (slurm_job_finish(&job, NULL, NULL, 0, argc, argv))
		return 1;
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot release %s", desc);
	rc = release_job(&job, dir, what, NULL, &released);
	if (!rc)
		release_print(released, dir, json);
	return rc;
usage:
	fprintf(stderr, "usage: ibckpt release -D DIR " CLI_JOB_USAGE " | --id SESSION\n");
	return 2;
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
static int parts_of(const char *dir, const struct coord_opts *nopts, struct rpart **parts,
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
		struct rpart *p = &(*parts)[i];

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

static void parts_free(struct rpart *parts, unsigned int n)
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
static int parts_job(const struct rpart *parts, unsigned int n, struct job_chans *all)
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
	struct rpart *parts = NULL;
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

/* Thaw the freeze session @id and print it as `ibckpt thaw --id` does (in JSON if @as_json). */
static int session_thaw(uint64_t id, bool as_json)
{
	struct cli_job by_id = { .session = id };
	double secs;

	if (thaw_session(id, &secs))
		return 1;
	thaw_print(&by_id, secs, as_json);
	return 0;
}

/*
 * Freeze @job (persistent: the steps after are separate calls), release it,
 * thaw it: released or not, its threads run again, a released job's gates
 * stay closed. @keep: a released job stays frozen, for criu's pre-dump
 * action to thaw (criu_dump()); one not released is thawed. The freeze, the
 * release and the thaw print their lines as text; the checkpoint prints its
 * own report after them (in JSON with -j).
 * Return: release_job()'s, or 1.
 */
static int freeze_release(struct cli_job *job, const char *dir, const char *what,
			  const char *timeout, uint64_t *session, struct coord *co, bool keep)
{
	/* the job as a freeze names it: a Slurm step is its cgroup on this node */
	struct cli_job fj = { .type = job->type, .id = job->id, .cgroup = job->cgroup };
	struct freeze_opts fo = { .persist_s = 600 };
	struct cli_job by_id = { 0 };
	struct cli_session s;
	unsigned int released;
	char desc[288];
	struct ibnl n;
	int err, rc;

	ckpt_timing(NULL);
	rc = freeze_timeout(timeout, &fo.timeout_ms) ? 1 : 0;
	if (!rc && ibnl_open(&n, 0)) {
		rc = 1;
	} else if (!rc) {
		rc = freeze_job(&n, &fj, &fo, &s);
		if (!rc)
			freeze_print(&s, cli_job_describe(&fj, desc, sizeof(desc)), true, false);
		ibnl_close(&n);
		cli_job_close();
	}
	ckpt_timing("freeze");
	if (!rc)
		by_id.session = *session = s.id;
	/* a job on several nodes: every node's part quiesced before any is released */
	if (nodes_vote(co, "frozen", rc, "its part did not freeze", NULL, 0, 0, NULL, NULL,
		       NULL)) {
		if (!rc)
			session_thaw(by_id.session, json);
		return 1;
	}
	if (rc)
		return 1;
	ckpt_timing("frozen");
	rc = release_job(&by_id, dir, what, co, &released);
	if (!rc)
		release_print(released, dir, false);
	ckpt_timing("release");
	err = keep && !rc ? 0 : session_thaw(by_id.session, false);
	/* every node goes on only if every node's part runs again */
	if (nodes_vote(co, "thawed", err ? 1 : 0, "its part did not thaw", NULL, 0, 0, NULL,
		       NULL, NULL) || err) {
		if (keep && !rc)	/* kept frozen for criu, which will not run */
			session_thaw(by_id.session, false);
		rc = 1;
	}
	ckpt_timing("thaw");
	return rc;
}

/*
 * The process criu dumps the job from: the group's, session's or tree's
 * leader, or the root of the one tree a cgroup's processes form.
 */
static int dump_root(const struct cli_job *job, unsigned int *root)
{
	pid_t pid;

	if (job->type == IBCKPT_JOB_CGROUP) {
		if (cgroup_tree_root(job->cgroup, &pid))
			return -1;
		*root = (unsigned int)pid;
		return 0;
	}
	if (job->type == IBCKPT_JOB_PGRP || job->type == IBCKPT_JOB_SESSION ||
	    job->type == IBCKPT_JOB_TREE) {
		*root = job->id;
		if (!kill((pid_t)job->id, 0) || errno == EPERM)
			return 0;
		fprintf(stderr, "ibckpt: checkpoint: the job's leader %u is gone: criu dumps a "
			"process and its descendants\n", job->id);
		return -1;
	}
	fprintf(stderr, "ibckpt: checkpoint to disk takes a process group, session, tree or "
		"cgroup (criu dumps a process and its descendants)\n");
	return -1;
}

/* Node 0, once every part is written: the checkpoint is whole (restart.rst). */
static int mark_complete(void *arg, const void *votes, size_t len, char *why, size_t whylen)
{
	char path[4200];

	(void)votes;
	(void)len;
	if (!write_file(arg, DONE_FILE, "", 0))
		return 0;
	snprintf(path, sizeof(path), "%s/" DONE_FILE, (const char *)arg);
	snprintf(why, whylen, "node 0 cannot write %.400s", path);
	return 1;
}

/* A checkpoint into @dir used before is not whole until it is written again. */
static int done_remove(const char *dir)
{
	char done[4200];

	snprintf(done, sizeof(done), "%s/" DONE_FILE, dir);
	if (unlink(done) && errno != ENOENT) {
		fprintf(stderr, "ibckpt: %s: %s\n", done, strerror(errno));
		return -1;
	}
	return 0;
}

/* A job on one node into a directory that held one on several: it is one now. */
static int nodes_remove(const char *dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/" NODES_FILE, dir);
	if (unlink(path) && errno != ENOENT) {
		fprintf(stderr, "ibckpt: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void ckpt_report(const char *desc, const char *dir, uint64_t session,
			const struct coord *co)
{
	if (json) {
		printf("{\"checkpointed\":true,\"session\":%llu,\"left_running\":false,",
		       (unsigned long long)session);
		if (co)
			printf("\"node\":%u,\"nodes\":%u,", co->rank, co->n);
		printf("\"dir\":");
		json_str(stdout, dir);
		printf("}\n");
	} else if (co) {
		printf("%s: node %u of %u: checkpoint %s written; the job is gone\n", desc,
		       co->rank, co->n, dir);
	} else {
		printf("%s: checkpoint %s written; the job is gone\n", desc, dir);
	}
}

/*
 * The dump of a job on several nodes: each node's criu, then a barrier in
 * criu's post-dump action (this ibckpt, run by criu: nodes.c), before criu kills the
 * dumped tree: on a failure anywhere every criu leaves its tree running
 * (restart.rst). A node whose criu failed before its action votes here.
 * Return: 0 if every node dumped, else 1.
 */
static int dump_nodes(const char *part, unsigned int root, uint64_t session, struct coord *co)
{
	char phase[80];
	struct coord_verdict v;
	int rc, st;

	snprintf(phase, sizeof(phase), "dumped.%u", ++co->seq);
	rc = nodes_post_dump_env(co, phase) || criu_dump(part, root, session);
	nodes_post_dump_env_clear();
	st = coord_verdict_get(co, phase, &v);
	if (st == 0) {
		/* criu failed before its post-dump action: this node votes */
		if (!rc)
			fprintf(stderr, "ibckpt: criu dumped without its post-dump action\n");
		coord_verdict_free(&v);
		st = coord_vote(co, phase, 1, "its criu dump failed", NULL, 0, 0, NULL, NULL, &v);
		st = st ? -1 : 1;
	}
	if (st < 0 || v.code) {
		if (v.by != co->rank || !rc)
			fprintf(stderr, "ibckpt: node %u: %s\n", v.by, v.why);
		coord_verdict_free(&v);
		return 1;
	}
	coord_verdict_free(&v);
	return rc ? 1 : 0;
}

int cmd_checkpoint(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'D' },
		{ "leave-running", no_argument, NULL, 'L' },
		{ "timeout", required_argument, NULL, 't' },
		NODES_OPTIONS,
		CLI_JOB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	char what[320], desc[288], pdir[4200];
	const char *dir = NULL, *timeout = "10000", *part;
	struct cli_job job = { 0 }, by_id = { 0 };
	int c, err, leave = 0, rc, attempt, nopart;
	struct coord_opts nopts = { 0 };
	struct coord cs, *co = NULL;
	unsigned int root = 0;
	struct job_chans j = { 0 };
	uint32_t nids;

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
			err = nodes_opt(c, optarg, &nopts);
			if (err < 0)
				goto usage;
			if (err)
				break;
			err = cli_job_opt(c, optarg, &job);
			if (err <= 0)
				goto usage;
		}
	}
	if (!dir || cli_job_finish(&job, argc, argv, optind, 0))
		goto usage;
	nopart = slurm_job_finish(&job, &nopts, dir, SLURM_FANOUT, argc, argv);
	if (nopart < 0)
		return 1;
	if (nodes_finish(&nopts))
		goto usage;
	part = dir;
	if (nopts.n) {
		/* DIR is every node's: this node's part is DIR/part.RANK */
		if (dir_make(dir) || coord_open(&cs, dir, &nopts))
			return 1;
		co = &cs;
		part_dir(pdir, sizeof(pdir), dir, nopts.rank);
		part = pdir;
	}
	/* no part of the Slurm step here (said): the others' next barrier fails at once */
	if (nopart) {
		nodes_vote(co, leave ? "frozen" : "start", 1,
			   "it has no part of the Slurm step to take", NULL, 0, 0, NULL, NULL,
			   NULL);
		return 1;
	}
	if (!leave && dump_root(&job, &root)) {
		nodes_vote(co, "start", 1, "the job's leader is gone", NULL, 0, 0, NULL, NULL,
			   NULL);
		return 1;
	}
	/* a checkpoint into a directory used before is not whole until it is written again */
	if (!leave) {
		rc = done_remove(part) || (co && !co->rank && (nodes_save(dir, co->n) ||
							      done_remove(dir))) ||
		     (!co && nodes_remove(dir));
		if (nodes_vote(co, "start", rc, "cannot write its part of the checkpoint", NULL, 0,
			       0, NULL, NULL, NULL) || rc)
			return 1;
	}
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot checkpoint %s", desc);

	/*
	 * Freeze, detached from this command (the steps below are separate
	 * calls), and release; requests still in flight between two QPs are
	 * waited out by freezing again a little later (on every node alike).
	 */
	for (attempt = 1;; attempt++) {
		rc = freeze_release(&job, part, what, timeout, &by_id.session, co, !leave);
		if (rc == 3 && attempt == CHECKPOINT_TRIES)
			fprintf(stderr, "ibckpt: %s: gave up after %d tries: requests still in "
				"flight; the job runs on\n", what, CHECKPOINT_TRIES);
		if (rc != 3 || attempt == CHECKPOINT_TRIES)
			break;
		fprintf(stderr, "ibckpt: %s: trying again (%d of %d)\n", what, attempt + 1,
			CHECKPOINT_TRIES);
		usleep(200000u * (unsigned int)attempt);
	}
	if (rc)
		return 1;
	if (!leave) {
		/*
		 * Still frozen: criu's pre-dump action thaws the job; each verb
		 * then waits at a gate, and criu seizes the threads at once.
		 */
		rc = tree_save(part, (pid_t)root);
		if (co) {
			if (nodes_vote(co, "predump", rc, "its job cannot be dumped", NULL, 0, 0,
				       NULL, NULL, NULL))
				rc = 1;
			if (!rc)
				rc = dump_nodes(part, root, by_id.session, co);
		} else if (!rc) {
			rc = criu_dump(part, root, by_id.session);
		}
		/* criu failed before its action: the job is still frozen */
		if (rc && thaw_session_left(by_id.session, json))
			fprintf(stderr, "ibckpt: %s: the job is left frozen "
				"(ibckpt thaw --id %llu)\n", what, (unsigned long long)by_id.session);
		if (!rc)
			rc = write_file(part, DONE_FILE, "", 0);
		if (co) {
			/* the parts are whole: node 0 marks the checkpoint whole, or fails it */
			if (nodes_vote(co, "written", rc, "cannot complete its part", NULL, 0, 0,
				       mark_complete, (void *)dir, NULL))
				rc = 1;
			if (!rc) {
				ckpt_report(desc, dir, by_id.session, co);
				return 0;
			}
			/* the dump may have failed after a node's criu killed its part */
			fprintf(stderr, "ibckpt: %s: %s is not a whole checkpoint\n", what, dir);
		}
		if (!rc) {
			ckpt_report(desc, dir, by_id.session, co);
			return 0;
		}
		fprintf(stderr, "ibckpt: %s: the job is reacquired and runs on\n", what);
	}
	if (job_load(part, &j)) {
		nodes_vote(co, "open", 1, "cannot read its part of the checkpoint", NULL, 0, 0,
			   NULL, NULL, NULL);
		rc = 1;
	} else {
		rc = reacquire_job(&j, part, NULL, 0, true, co, &nids);
		if (!rc)	/* as text, before the checkpoint's own report */
			reacquire_print(j.n, nids, part, false);
	}
	job_chans_free(&j);
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
		"[" NODES_USAGE "] " CLI_JOB_USAGE "\n");
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
static int part_check(struct rpart *p, const struct ibckpt_rdev_map *map, uint32_t nmap)
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
static void parts_kill(const char *dir, struct rpart *parts, unsigned int n)
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
	struct rpart *parts = NULL;
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
	if (!rc)	/* as text, before the restart's own report */
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
