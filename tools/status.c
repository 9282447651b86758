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
		printf("{\"processes\":[");
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
