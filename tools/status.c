// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt status [PGID]: what the module knows about.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt.h>
#include "cli.h"
#include "json.h"

int cli_pgid(const char *s, unsigned int *pgid)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v == 0 || v > 0x3fffffff || *s == '-' || *s == '+') {
		fprintf(stderr, "ibckpt: '%s' is not a process group id\n", s);
		return -1;
	}
	*pgid = (unsigned int)v;
	return 0;
}

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

	err = cli_get_threads(n, s->pgid, &t, ext, sizeof(ext));
	if (err == -ENOENT) {	/* the session ended since it was listed */
		free(t.v);
		if (json)
			fputs("[]", out);
		return 0;
	}
	if (err) {
		free(t.v);
		snprintf(what, sizeof(what), "cannot list the threads of process group %u",
			 s->pgid);
		return cli_fail(err, what, ext);
	}
	if (json)
		fputc('[', out);
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
			else if (v->state == IBCKPT_THREAD_PARKED)
				fprintf(out, " user space at %#llx", (unsigned long long)v->ip);
			fputc('\n', out);
		}
	}
	if (json)
		fputc(']', out);
	free(t.v);
	return 0;
}

/* Returns 0, or 1 after printing the error. */
static int print_sessions(FILE *out, struct ibnl *n, unsigned int pgid)
{
	struct cli_sessions l;
	char ext[256];
	unsigned int i;
	int err;

	err = cli_get_sessions(n, pgid, &l, ext, sizeof(ext));
	if (err) {
		free(l.v);
		return cli_fail(err, "cannot list freeze sessions", ext);
	}
	if (json)
		fputs("\"sessions\":[", out);
	for (i = 0; i < l.n && !err; i++) {
		const struct cli_session *s = &l.v[i];

		if (json) {
			fprintf(out, "%s{\"pgid\":%u,\"session\":%llu,\"state\":\"%s\","
				"\"persist\":%s,\"threads\":%u,\"parked\":%u,\"pending\":%u,"
				"\"exited\":%u,\"freeze_us\":%.1f,\"providers\":%u,"
				"\"quiesced\":%u,\"drained\":%llu,\"outstanding\":%u,"
				"\"quiesce_error\":%u,\"thread_list\":", i ? "," : "",
				s->pgid, (unsigned long long)s->id, cli_state_name(s->state),
				json_bool(s->flags & IBCKPT_FREEZE_F_PERSIST), s->threads,
				s->parked, s->pending, s->exited, (double)s->freeze_ns / 1e3,
				s->providers, s->quiesced, (unsigned long long)s->drained,
				s->outstanding, s->quiesce_err);
			err = print_threads(out, n, s);
			fputc('}', out);
		} else {
			fprintf(out, "process group %u: %s, %u threads: %u parked, %u pending, "
				"%u exited%s (session %llu)\n", s->pgid, cli_state_name(s->state),
				s->threads, s->parked, s->pending, s->exited,
				s->flags & IBCKPT_FREEZE_F_PERSIST ? ", persistent" : "",
				(unsigned long long)s->id);
			if (s->providers)
				fprintf(out, "  providers: %u asked, %u quiesced, %llu completions "
					"drained, %u sends outstanding\n", s->providers, s->quiesced,
					(unsigned long long)s->drained, s->outstanding);
			err = print_threads(out, n, s);
		}
	}
	if (json)
		fputs("],", out);
	else if (!l.n)
		fprintf(out, "no process group frozen%s\n", pgid ? " with that id" : "");
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
	struct proc_list l = { .pgid = 0 };
	struct ibnl n;
	char ext[256], *buf = NULL;
	size_t len = 0;
	int err, rc;

	if (argc > 2) {
		fprintf(stderr, "usage: ibckpt status [PGID]\n");
		return 2;
	}
	if (argc == 2 && cli_pgid(argv[1], &l.pgid))
		return 2;
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
	rc = print_sessions(l.out, &n, l.pgid);
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
	return rc;
}
