// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A frozen job's release and its reacquire in place (Documentation/restart.rst):
 * the operations, which the checkpoint and the restart call too, and
 * `ibckpt release -D DIR JOB`.
 *
 * The CLI is the job's rendezvous: it checks the job's QPs pairwise
 * (peers.c), asks every process to PREPARE (prepare.c) before any
 * RELEASE, and at a reacquire hands every process the merged identities
 * of all of them (job_chans.c). The directory is ckptdir.c's.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt_restart.h>
#include "cli.h"
#include "json.h"
#include "peers.h"
#include "restart.h"

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
 * Release the frozen @job; @dir keeps the job, *@released says how many
 * processes it has. A refusal of any process
 * leaves the job as it was: the ones released are reacquired in place.
 * Return: 0, 1 (said), or 3 when requests were in flight (said; the job is
 * unchanged and a later freeze may find them arrived): the CLI's PSN check
 * found them, or, on one node, a provider refused with EBUSY (a signaled
 * send not completed, a request not transmitted yet, a fence behind a
 * READ or atomic not completed: restart.rst, "Exactly once"), or kept an
 * atomic fence outstanding after PREPARE_AGAIN more asks (prepare.c).
 */
int release_job(struct cli_job *job, const char *dir, const char *what, struct coord *co,
		unsigned int *released)
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
	st = job_chans_of(&l, &j) || dir_make(dir) || job_save(dir, &j, &l) || job_chans_open(&j);
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
void release_print(unsigned int n, const char *dir, bool as_json)
{
	if (as_json) {
		printf("{\"released\":%u,\"dir\":", n);
		json_str(stdout, dir);
		printf("}\n");
	} else {
		printf("%u process%s released (%s)\n", n, n == 1 ? "" : "es", dir);
	}
}

/*
 * Reacquire the processes of @j (loaded, not opened), of checkpoint @dir.
 * @hint: say how to retry if the job is left released (not for a restart:
 * it kills it). @co: a job on several nodes, the others reacquire too.
 */
int reacquire_job(struct job_chans *j, const char *dir, const struct ibckpt_rdev_map *map,
		  uint32_t nmap, bool hint, struct coord *co, uint32_t *nids)
{
	int rc = 1, st;

	ckpt_timing(NULL);
	j->undone = false;
	st = job_chans_open(j);
	if (nodes_vote(co, "open", st ? 1 : 0, "cannot reach its processes' providers", NULL, 0, 0,
		       NULL, NULL, NULL) || st)
		return 1;
	*nids = 0;
	if (job_chans_reacquire(j, map, nmap, nids, co)) {
		if (j->undone && hint)
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
void reacquire_print(unsigned int n, uint32_t nids, const char *dir, bool as_json)
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
