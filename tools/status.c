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

struct proc_list {
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
	if (json)
		printf("%s{\"tgid\":%u,\"pgid\":%u,\"ctrl_tid\":%u,\"comm\":\"%s\"}",
		       l->n ? "," : "", tgid, pgid, ctrl, comm);
	else
		printf("%s%-8u %-8u %-8u %s\n", l->n ? "" : "PID      PGID     CTRL     COMMAND\n",
		       tgid, pgid, ctrl, comm);
	l->n++;
	return 0;
}

static void print_threads(struct ibnl *n, const struct cli_session *s)
{
	struct cli_threads t;
	char ext[256];
	unsigned int i;

	if (cli_get_threads(n, s->pgid, &t, ext, sizeof(ext))) {
		if (json)
			printf("[]");
		return;
	}
	if (json)
		printf("[");
	else if (t.n)
		printf("  TID      PID      STATE    WHERE\n");
	for (i = 0; i < t.n; i++) {
		const struct cli_thread *v = &t.v[i];

		if (json) {
			printf("%s{\"tid\":%u,\"pid\":%u,\"state\":\"%s\",\"ip\":%llu",
			       i ? "," : "", v->tid, v->tgid, cli_thread_state_name(v->state),
			       (unsigned long long)v->ip);
			if (v->syscall >= 0)
				printf(",\"syscall\":%d", v->syscall);
			printf("}");
		} else {
			printf("  %-8u %-8u %-8s", v->tid, v->tgid, cli_thread_state_name(v->state));
			if (v->state == IBCKPT_THREAD_PARKED && v->syscall >= 0)
				printf(" syscall %d, resumes at %#llx", v->syscall,
				       (unsigned long long)v->ip);
			else if (v->state == IBCKPT_THREAD_PARKED)
				printf(" user space at %#llx", (unsigned long long)v->ip);
			printf("\n");
		}
	}
	if (json)
		printf("]");
	free(t.v);
}

static int print_sessions(struct ibnl *n, unsigned int pgid)
{
	struct cli_sessions l;
	char ext[256];
	unsigned int i;
	int err;

	err = cli_get_sessions(n, pgid, &l, ext, sizeof(ext));
	if (err)
		return cli_fail(err, "cannot list freeze sessions", ext);
	if (json)
		printf("\"sessions\":[");
	for (i = 0; i < l.n; i++) {
		const struct cli_session *s = &l.v[i];

		if (json) {
			printf("%s{\"pgid\":%u,\"session\":%llu,\"state\":\"%s\",\"persist\":%s,"
			       "\"threads\":%u,\"parked\":%u,\"pending\":%u,\"exited\":%u,"
			       "\"freeze_us\":%.1f,\"thread_list\":", i ? "," : "", s->pgid,
			       (unsigned long long)s->id, cli_state_name(s->state),
			       s->flags & IBCKPT_FREEZE_F_PERSIST ? "true" : "false", s->threads,
			       s->parked, s->pending, s->exited, (double)s->freeze_ns / 1e3);
			print_threads(n, s);
			printf("}");
		} else {
			printf("process group %u: %s, %u threads: %u parked, %u pending, %u exited"
			       "%s (session %llu)\n", s->pgid, cli_state_name(s->state), s->threads,
			       s->parked, s->pending, s->exited,
			       s->flags & IBCKPT_FREEZE_F_PERSIST ? ", persistent" : "",
			       (unsigned long long)s->id);
			print_threads(n, s);
		}
	}
	if (json)
		printf("],");
	else if (!l.n)
		printf("no process group frozen%s\n", pgid ? " with that id" : "");
	free(l.v);
	return 0;
}

int cmd_status(int argc, char **argv)
{
	struct proc_list l = { .pgid = 0 };
	struct ibnl n;
	char ext[256];
	int err;

	if (argc > 2) {
		fprintf(stderr, "usage: ibckpt status [PGID]\n");
		return 2;
	}
	if (argc == 2 && cli_pgid(argv[1], &l.pgid))
		return 2;
	if (ibnl_open(&n, 0))
		return 1;
	if (json)
		printf("{");
	if (print_sessions(&n, l.pgid)) {
		ibnl_close(&n);
		return 1;
	}
	if (json)
		printf("\"processes\":[");
	err = ibnl_call(&n, ibnl_msg(&n, IBCKPT_CMD_PROC_GET, NLM_F_DUMP), on_proc, &l,
			ext, sizeof(ext));
	ibnl_close(&n);
	if (json)
		printf("]}\n");
	if (err)
		return cli_fail(err, "cannot list registered processes", ext);
	if (!json && !l.n)
		printf("no process registered%s\n", l.pgid ? " in that process group" : "");
	return 0;
}
