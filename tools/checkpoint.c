// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt checkpoint -D DIR [--leave-running] JOB (Documentation/restart.rst):
 * freeze (freeze.c), release (release.c), then criu dumps the job into DIR
 * (criu.c) and the job is gone, or with --leave-running it is thawed and
 * reacquired in place. On several nodes each node takes its part, DIR/part.P,
 * and node 0 marks the checkpoint whole once every part is written.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ibckpt.h>
#include "cli.h"
#include "json.h"
#include "restart.h"

#define CHECKPOINT_TRIES 5	/* freezes that may find requests in flight */

/*
 * Thaw the freeze session @id; as text, print it as `ibckpt thaw --id`
 * does. With -j the checkpoint prints its own report only: one JSON object.
 */
static int session_thaw(uint64_t id)
{
	struct cli_job by_id = { .session = id };
	double secs;

	if (thaw_session(id, &secs))
		return 1;
	if (!json)
		thaw_print(&by_id, secs, false);
	return 0;
}

/*
 * Freeze @job (persistent: the steps after are separate calls), release it,
 * thaw it: released or not, its threads run again, a released job's gates
 * stay closed. @keep: a released job stays frozen, for criu's pre-dump
 * action to thaw (criu_dump()); one not released is thawed. As text, the
 * freeze, the release and the thaw print their lines before the
 * checkpoint's report; with -j only the report is printed, one JSON object.
 * Return: release_job()'s, or 1.
 */
static int freeze_release(struct cli_job *job, const char *dir, const char *what,
			  unsigned long timeout_ms, uint64_t *session, struct coord *co, bool keep)
{
	/* the job as a freeze names it: a Slurm step is its cgroup on this node */
	struct cli_job fj = { .type = job->type, .id = job->id, .cgroup = job->cgroup };
	struct freeze_opts fo = { .timeout_ms = timeout_ms, .persist_s = 600 };
	struct cli_job by_id = { 0 };
	struct cli_session s;
	unsigned int released;
	char desc[288];
	struct ibnl n;
	int err, rc;

	ckpt_timing(NULL);
	if (ibnl_open(&n, 0)) {
		rc = 1;
	} else {
		rc = freeze_job(&n, &fj, &fo, &s);
		if (!rc && !json)
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
			session_thaw(by_id.session);
		return 1;
	}
	if (rc)
		return 1;
	ckpt_timing("frozen");
	rc = release_job(&by_id, dir, what, co, &released);
	if (!rc && !json)
		release_print(released, dir, false);
	ckpt_timing("release");
	err = keep && !rc ? 0 : session_thaw(by_id.session);
	/* every node goes on only if every node's part runs again */
	if (nodes_vote(co, "thawed", err ? 1 : 0, "its part did not thaw", NULL, 0, 0, NULL,
		       NULL, NULL) || err) {
		if (keep && !rc)	/* kept frozen for criu, which will not run */
			session_thaw(by_id.session);
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
	const char *dir = NULL, *part;
	unsigned long timeout_ms = 10000;
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
			if (freeze_timeout(optarg, &timeout_ms))
				return 2;
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
		rc = freeze_release(&job, part, what, timeout_ms, &by_id.session, co, !leave);
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
		if (rc && thaw_session_left(by_id.session, !json))
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
		if (!rc && !json)	/* as text, before the checkpoint's own report */
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
