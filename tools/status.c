// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt status [PGID]: what the module knows about.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt.h>
#include "cli.h"
#include "json.h"

/*
 * Everything goes to a memory buffer, copied to stdout once complete: a
 * failure part way must not leave half a JSON document on stdout. In text
 * mode what was gathered before the failure is still printed.
 */
struct proc_list {
	FILE *out;
	unsigned int pgid;	/* filter, 0 = all */
	int n;
};

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

/* The job's processes, from its threads: sorted, each once. */
static void print_members(FILE *out, const struct cli_threads *t)
{
	unsigned int *v = malloc(sizeof(*v) * (t->n ? t->n : 1)), i, n = 0;

	if (!v)
		return;
	for (i = 0; i < t->n; i++)
		if (t->v[i].tgid)
			v[n++] = t->v[i].tgid;
	qsort(v, n, sizeof(*v), cmp_uint);
	fputs(json ? "\"members\":[" : "  members:", out);
	for (i = 0; i < n; i++)
		if (!i || v[i] != v[i - 1])
			fprintf(out, json ? "%s%u" : "%s%u", json ? (i ? "," : "") : " ", v[i]);
	fputs(json ? "]," : "\n", out);
	free(v);
}

static int on_proc(struct nlattr **a, void *arg)
{
	struct proc_list *l = arg;
	struct nlattr *p[IBCKPT_PROC_A_MAX + 1];
	unsigned int tgid, pgid, ctrl;
	const char *comm;

	if (!a[IBCKPT_A_PROC] ||
	    nla_parse_nested(p, IBCKPT_PROC_A_MAX, a[IBCKPT_A_PROC], NULL) ||
	    !p[IBCKPT_PROC_A_TGID] || !p[IBCKPT_PROC_A_PGID] || !p[IBCKPT_PROC_A_CTRL_TID])
		return -EBADMSG;
	tgid = nla_get_u32(p[IBCKPT_PROC_A_TGID]);
	pgid = nla_get_u32(p[IBCKPT_PROC_A_PGID]);
	ctrl = nla_get_u32(p[IBCKPT_PROC_A_CTRL_TID]);
	comm = p[IBCKPT_PROC_A_COMM] ? nla_get_string(p[IBCKPT_PROC_A_COMM]) : "";
	if (l->pgid && pgid != l->pgid)
		return 0;
	if (json) {
		fprintf(l->out, "%s{\"tgid\":%u,\"pgid\":%u,\"ctrl_tid\":%u,\"comm\":",
			l->n ? "," : "", tgid, pgid, ctrl);
		json_str(l->out, comm);
		fputc('}', l->out);
	} else {
		fprintf(l->out, "%s%-8u %-8u %-8u %s\n",
			l->n ? "" : "PID      PGID     CTRL     COMMAND\n", tgid, pgid, ctrl, comm);
	}
	l->n++;
	return 0;
}

/* Returns 0, or 1 after printing why the threads could not be listed. */
static int print_threads(FILE *out, struct ibnl *n, const struct cli_session *s)
{
	struct cli_threads t;
	char ext[256], what[64];
	unsigned int i;
	int err;

	err = cli_get_threads(n, s->id, &t, ext, sizeof(ext));
	if (err == -ENOENT) {	/* the session ended since it was listed */
		free(t.v);
		if (json)
			fputs("\"members\":[],\"thread_list\":[]", out);
		return 0;
	}
	if (err) {
		free(t.v);
		snprintf(what, sizeof(what), "cannot list the threads of session %llu",
			 (unsigned long long)s->id);
		return cli_fail(err, what, cli_dump_why(err, ext));
	}
	print_members(out, &t);
	if (json)
		fputs("\"thread_list\":[", out);
	else if (t.n)
		fprintf(out, "  TID      PID      STATE    WHERE\n");
	for (i = 0; i < t.n; i++) {
		const struct cli_thread *v = &t.v[i];

		if (json) {
			fprintf(out, "%s{\"tid\":%u,\"pid\":%u,\"state\":\"%s\",\"ip\":%llu",
				i ? "," : "", v->tid, v->tgid, cli_thread_state_name(v->state),
				(unsigned long long)v->ip);
			if (v->syscall >= 0)
				fprintf(out, ",\"syscall\":%d", v->syscall);
			fputc('}', out);
		} else {
			fprintf(out, "  %-8u %-8u %-8s", v->tid, v->tgid,
				cli_thread_state_name(v->state));
			if (v->state == IBCKPT_THREAD_PARKED && v->syscall >= 0)
				fprintf(out, " syscall %d, resumes at %#llx", v->syscall,
					(unsigned long long)v->ip);
			else if (v->state == IBCKPT_THREAD_PARKED && v->ip)
				fprintf(out, " user space at %#llx", (unsigned long long)v->ip);
			/* else: where it is is not for this user to see */
			fputc('\n', out);
		}
	}
	if (json)
		fputc(']', out);
	free(t.v);
	return 0;
}

/* Returns 0, or 1 after printing the error. */
static int print_sessions(FILE *out, struct ibnl *n, struct cli_job *filter)
{
	struct cli_sessions l;
	char ext[256] = "", desc[288], what[320];
	unsigned int i;
	int err;

	err = cli_get_sessions(n, filter, &l, ext, sizeof(ext));
	if (err) {
		free(l.v);
		if (err > 0)
			return 1;	/* the cgroup directory could not be opened: said */
		snprintf(what, sizeof(what), "cannot list freeze sessions of %s",
			 cli_job_describe(filter, desc, sizeof(desc)));
		return cli_fail(err, filter->type || filter->session ? what :
				"cannot list freeze sessions", cli_dump_why(err, ext));
	}
	if (json)
		fputs("\"sessions\":[", out);
	for (i = 0; i < l.n && !err; i++) {
		const struct cli_session *s = &l.v[i];

		if (json) {
			fprintf(out, "%s{", i ? "," : "");
			cli_job_json(out, &s->job);
			fprintf(out, ",\"session\":%llu,\"state\":\"%s\","
				"\"persist\":%s,\"procs\":%u,\"threads\":%u,\"parked\":%u,"
				"\"pending\":%u,\"exited\":%u,\"freeze_us\":%.1f,"
				"\"providers\":%u,\"quiesced\":%u,\"drained\":%llu,"
				"\"outstanding\":%u,\"quiesce_error\":%u,",
				(unsigned long long)s->id, cli_state_name(s->state),
				json_bool(s->flags & IBCKPT_FREEZE_F_PERSIST), s->procs, s->threads,
				s->parked, s->pending, s->exited, (double)s->freeze_ns / 1e3,
				s->providers, s->quiesced, (unsigned long long)s->drained,
				s->outstanding, s->quiesce_err);
			if (s->quiesce_err)
				fprintf(out, "\"quiesce_pid\":%u,", s->quiesce_pid);
			if (*s->quiesce_msg) {
				fputs("\"quiesce_message\":", out);
				json_str(out, s->quiesce_msg);
				fputc(',', out);
			}
			if (s->quiesce_has_qpn)
				fprintf(out, "\"quiesce_qpn\":%u,", s->quiesce_qpn);
			err = print_threads(out, n, s);
			fputc('}', out);
		} else {
			fprintf(out, "%s: %s, %u threads: %u parked, %u pending, "
				"%u exited%s (session %llu, %u processes)\n",
				cli_job_describe(&s->job, desc, sizeof(desc)),
				cli_state_name(s->state), s->threads, s->parked, s->pending,
				s->exited, s->flags & IBCKPT_FREEZE_F_PERSIST ? ", persistent" : "",
				(unsigned long long)s->id, s->procs);
			if (s->providers)
				fprintf(out, "  providers: %u asked, %u quiesced, %llu completions "
					"drained, %u sends outstanding\n", s->providers, s->quiesced,
					(unsigned long long)s->drained, s->outstanding);
			if (s->quiesce_err)
				fprintf(out, "  the provider of process %u could not quiesce (%s%s%s)\n",
					s->quiesce_pid, strerror((int)s->quiesce_err),
					*s->quiesce_msg ? ": " : "", s->quiesce_msg);
			err = print_threads(out, n, s);
		}
	}
	if (json)
		fputs("],", out);
	else if (!l.n && (filter->type || filter->session))
		fprintf(out, "%s is not frozen\n", cli_job_describe(filter, desc, sizeof(desc)));
	else if (!l.n)
		fprintf(out, "no job frozen\n");
	free(l.v);
	return err ? 1 : 0;
}

/* Write @len bytes of @buf to stdout; 0, or 1 after printing why not. */
static int emit(const char *buf, size_t len)
{
	if ((len && fwrite(buf, 1, len, stdout) != len) || fflush(stdout)) {
		fprintf(stderr, "ibckpt: cannot write the status: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = { CLI_JOB_OPTIONS, { 0 } };
	struct proc_list l = { .pgid = 0 };
	struct cli_job job = { 0 };
	struct ibnl n;
	char ext[256], *buf = NULL;
	size_t len = 0;
	int c, err, rc;

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		err = cli_job_opt(c, optarg, &job);
		if (err <= 0)
			goto usage;
	}
	if (cli_job_finish(&job, argc, argv, optind, CLI_JOB_BY_ID | CLI_JOB_OPTIONAL))
		goto usage;
	if (slurm_job_finish(&job, NULL, NULL, SLURM_SUSPENDED_OK, argc, argv))
		return 1;
	if (job.type == IBCKPT_JOB_PGRP)
		l.pgid = job.id;
	if (ibnl_open(&n, 0))
		return 1;
	l.out = open_memstream(&buf, &len);
	if (!l.out) {
		ibnl_close(&n);
		fprintf(stderr, "ibckpt: cannot buffer the status: %s\n", strerror(errno));
		return 1;
	}
	if (json)
		fputc('{', l.out);
	rc = print_sessions(l.out, &n, &job);
	if (!rc) {
		if (json)
			fputs("\"processes\":[", l.out);
		err = ibnl_call(&n, ibnl_msg(&n, IBCKPT_CMD_PROC_GET, NLM_F_DUMP), on_proc, &l,
				ext, sizeof(ext));
		if (err)
			rc = cli_fail(err, "cannot list registered processes", ext);
		else if (json)
			fputs("]}\n", l.out);
		else if (!l.n)
			fprintf(l.out, "no process registered%s\n",
				l.pgid ? " in that process group" : "");
	}
	ibnl_close(&n);
	if (fclose(l.out)) {
		free(buf);
		fprintf(stderr, "ibckpt: cannot buffer the status: %s\n", strerror(errno));
		return 1;
	}
	/* JSON: all or nothing; text: also what was gathered before an error */
	if (!rc || !json)
		rc |= emit(buf, len);
	free(buf);
	cli_job_close();
	return rc;
usage:
	fprintf(stderr, "usage: ibckpt status [" CLI_JOB_USAGE " | --id SESSION]\n");
	return 2;
}
