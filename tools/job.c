// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How a command names a job: PGID, --session SID, --tree PID, --cgroup PATH,
 * --slurm JOBID.STEP (a cgroup: slurm.c finds it), or (for the commands about
 * an existing freeze) --id SESSION.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt.h>
#include "cli.h"
#include "json.h"

static int parse_id(const char *s, const char *what, unsigned long long max,
		    unsigned long long *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || !v || v > max || *s == '-' || *s == '+') {
		fprintf(stderr, "ibckpt: '%s' is not a %s\n", s, what);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_pgid(const char *s, unsigned int *pgid)
{
	unsigned long long v;

	if (parse_id(s, "process group id", 0x3fffffff, &v))
		return -1;
	*pgid = (unsigned int)v;
	return 0;
}

static int job_set(struct cli_job *j, unsigned int type, const char *arg)
{
	static const char *const what[] = {
		[IBCKPT_JOB_PGRP] = "process group id", [IBCKPT_JOB_SESSION] = "session id",
		[IBCKPT_JOB_TREE] = "process id",
	};
	unsigned long long v;

	if (j->type || j->session) {
		fprintf(stderr, "ibckpt: name one job only\n");
		return -1;
	}
	j->type = type;
	if (type == IBCKPT_JOB_CGROUP) {
		if (!*arg) {
			fprintf(stderr, "ibckpt: --cgroup needs a directory\n");
			return -1;
		}
		j->cgroup = arg;
		return 0;
	}
	if (parse_id(arg, what[type], 0x3fffffff, &v))
		return -1;
	j->id = (unsigned int)v;
	return 0;
}

int cli_job_opt(int c, const char *arg, struct cli_job *j)
{
	unsigned long long v;

	switch (c) {
	case CLI_OPT_SESSION:
		return job_set(j, IBCKPT_JOB_SESSION, arg) ? -1 : 1;
	case CLI_OPT_TREE:
		return job_set(j, IBCKPT_JOB_TREE, arg) ? -1 : 1;
	case CLI_OPT_CGROUP:
		return job_set(j, IBCKPT_JOB_CGROUP, arg) ? -1 : 1;
	case CLI_OPT_SLURM:
		if (cli_slurm_id(arg, &j->slurm_job, &j->slurm_step) ||
		    job_set(j, IBCKPT_JOB_CGROUP, arg))
			return -1;
		j->cgroup = NULL;	/* this node's: slurm_job_finish() */
		j->slurm = arg;
		return 1;
	case CLI_OPT_ID:
		if (j->type || j->session) {
			fprintf(stderr, "ibckpt: name one job only\n");
			return -1;
		}
		if (parse_id(arg, "freeze session id", ~0ULL, &v))
			return -1;
		j->session = v;
		return 1;
	}
	return 0;
}

int cli_slurm_id(const char *s, unsigned int *job, unsigned int *step)
{
	unsigned long long v;
	char buf[48], *dot;

	snprintf(buf, sizeof(buf), "%s", s);
	dot = strchr(buf, '.');
	if (strlen(s) >= sizeof(buf) || !step != !dot) {
		fprintf(stderr, "ibckpt: '%s' is not a Slurm %s\n", s,
			step ? "job step (JOBID.STEP, e.g. 1234.0)" : "job id");
		return -1;
	}
	if (dot)
		*dot = 0;
	if (parse_id(buf, "Slurm job id", 0xffffffffu, &v))
		return -1;
	*job = (unsigned int)v;
	if (!dot)
		return 0;
	/* step 0 is a step: parse_id() takes no 0 */
	if (!strcmp(dot + 1, "0")) {
		*step = 0;
		return 0;
	}
	if (parse_id(dot + 1, "Slurm step id (a number)", 0xfffffff0u, &v))
		return -1;
	*step = (unsigned int)v;
	return 0;
}

int cli_job_negative(int argc, char **argv)
{
	int i;

	/* "-5" would reach getopt as an option: say what it is instead */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (argv[i][0] == '-' && argv[i][1] >= '0' && argv[i][1] <= '9') {
			fprintf(stderr, "ibckpt: '%s' is not a process group id\n", argv[i]);
			return -1;
		}
	return 0;
}

int cli_job_finish(struct cli_job *j, int argc, char **argv, int optind, int flags)
{
	if (optind < argc) {
		if (optind != argc - 1 || j->type || j->session) {
			fprintf(stderr, "ibckpt: name one job only\n");
			return -1;
		}
		if (job_set(j, IBCKPT_JOB_PGRP, argv[optind]))
			return -1;
	}
	if (j->session && !(flags & CLI_JOB_BY_ID)) {
		fprintf(stderr, "ibckpt: --id names an existing freeze; name the job to freeze\n");
		return -1;
	}
	if (!j->type && !j->session && !(flags & CLI_JOB_OPTIONAL)) {
		fprintf(stderr, "ibckpt: no job named (PGID, --session, --tree, --cgroup or "
			"--slurm)\n");
		return -1;
	}
	return 0;
}

const char *cli_job_describe(const struct cli_job *j, char *buf, size_t len)
{
	switch (j->type) {
	case IBCKPT_JOB_PGRP:
		snprintf(buf, len, "process group %u", j->id);
		break;
	case IBCKPT_JOB_SESSION:
		snprintf(buf, len, "session %u", j->id);
		break;
	case IBCKPT_JOB_TREE:
		snprintf(buf, len, "process tree of %u", j->id);
		break;
	case IBCKPT_JOB_CGROUP:
		if (j->slurm)
			snprintf(buf, len, "Slurm step %s", j->slurm);
		else
			snprintf(buf, len, "cgroup %s", j->cgroup);
		break;
	default:
		if (j->session)
			snprintf(buf, len, "freeze session %llu", (unsigned long long)j->session);
		else
			snprintf(buf, len, "every job");
	}
	return buf;
}

const char *cli_job_type_name(unsigned int type)
{
	static const char *const n[] = {
		[IBCKPT_JOB_PGRP] = "pgrp", [IBCKPT_JOB_SESSION] = "session",
		[IBCKPT_JOB_TREE] = "tree", [IBCKPT_JOB_CGROUP] = "cgroup",
	};

	return type < sizeof(n) / sizeof(n[0]) && n[type] ? n[type] : "unknown";
}

void cli_job_json(FILE *f, const struct cli_job *j)
{
	fprintf(f, "\"job\":{\"type\":\"%s\"", cli_job_type_name(j->type));
	if (j->type == IBCKPT_JOB_CGROUP) {
		fputs(",\"path\":", f);
		json_str(f, j->cgroup ? j->cgroup : "");
	} else {
		fprintf(f, ",\"id\":%u", j->id);
	}
	fputc('}', f);
	if (j->type == IBCKPT_JOB_PGRP)
		fprintf(f, ",\"pgid\":%u", j->id);
}

const char *cli_dump_why(int err, const char *ext)
{
	if (ext && *ext)
		return ext;
	/* a dump's refusal comes without the kernel's words (6.1): say them */
	switch (err) {
	case -EPERM:
		return "needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN";
	case -EACCES:
		return "the job has another user's process: needs CAP_SYS_ADMIN";
	case -ENOENT:
		return "the job is not frozen";
	case -ESRCH:
		return "no such job";
	case -EBADF:
		return "not a cgroup v2 directory";
	case -EAGAIN:	/* SNAPSHOT_GET: the job changed after the dump started */
		return "the job changed while its snapshots were read (a process left or "
		       "joined, or it was thawed); try again";
	}
	return ext;
}
