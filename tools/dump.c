// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt dump JOB [-o FILE]: the snapshots the providers of a frozen job
 * gave the module for its freeze, printed (text, or JSON with -j) or written
 * as they are, one after the other, to FILE. Each is validated first: the
 * bytes come from the frozen processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "json.h"
#include "nl.h"
#include "snapshot.h"

struct snap_buf {
	unsigned int tgid;
	unsigned char *data;
	uint32_t total;
	uint32_t have;
};

struct snaps {
	struct snap_buf *v;
	unsigned int n;
	int bad;		/* pieces out of order: a process changed mid-dump */
};

static int on_piece(struct nlattr **a, void *arg)
{
	struct snaps *l = arg;
	struct snap_buf *s;
	uint32_t tgid, total, off, len;

	if (!a[IBCKPT_A_SNAP_TGID] || !a[IBCKPT_A_SNAP_TOTAL] || !a[IBCKPT_A_SNAP_OFFSET] ||
	    !a[IBCKPT_A_SNAP_DATA])
		return -EBADMSG;
	tgid = nla_get_u32(a[IBCKPT_A_SNAP_TGID]);
	total = nla_get_u32(a[IBCKPT_A_SNAP_TOTAL]);
	off = nla_get_u32(a[IBCKPT_A_SNAP_OFFSET]);
	len = (uint32_t)nla_len(a[IBCKPT_A_SNAP_DATA]);
	if (total > IBCKPT_SNAP_MAX_LEN)
		return -EBADMSG;
	s = l->n ? &l->v[l->n - 1] : NULL;
	if (!s || s->tgid != tgid || s->have == s->total) {
		if (off) {
			l->bad = 1;
			return 0;
		}
		s = realloc(l->v, sizeof(*s) * (l->n + 1));
		if (!s)
			return -ENOMEM;
		l->v = s;
		s = &l->v[l->n++];
		memset(s, 0, sizeof(*s));
		s->tgid = tgid;
		s->total = total;
		s->data = malloc(total ? total : 1);
		if (!s->data)
			return -ENOMEM;
	}
	if (off != s->have || total != s->total || len > total - off) {
		l->bad = 1;
		return 0;
	}
	memcpy(s->data + off, nla_data(a[IBCKPT_A_SNAP_DATA]), len);
	s->have += len;
	return 0;
}

static void snaps_free(struct snaps *l)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].data);
	free(l->v);
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		CLI_JOB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	struct snaps l = { 0 };
	struct cli_job job = { 0 };
	char ext[256] = "", what[320], desc[288], err_s[256];
	unsigned int i;
	struct nl_msg *m;
	struct ibnl n;
	int c, err, rc = 0;
	FILE *f;

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;	/* 0: re-initialise, GNU argument permutation included */
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o') {
			out = optarg;
			continue;
		}
		err = cli_job_opt(c, optarg, &job);
		if (err <= 0)
			goto usage;
	}
	if (cli_job_finish(&job, argc, argv, optind, CLI_JOB_BY_ID))
		goto usage;
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot dump %s", desc);
	if (ibnl_open(&n, 0))
		return 1;
	m = ibnl_msg(&n, IBCKPT_CMD_SNAPSHOT_GET, NLM_F_DUMP);
	err = cli_job_put(m, &job);
	if (err) {
		nlmsg_free(m);
		ibnl_close(&n);
		cli_job_close();
		return err > 0 ? 1 : cli_fail(err, what, NULL);
	}
	err = ibnl_call(&n, m, on_piece, &l, ext, sizeof(ext));
	ibnl_close(&n);
	cli_job_close();
	if (err) {
		snaps_free(&l);
		return cli_fail(err, what, cli_dump_why(err, ext));
	}
	if (l.bad) {
		snaps_free(&l);
		fprintf(stderr, "ibckpt: %s: a snapshot changed while it was read; "
			"is the job still frozen?\n", what);
		return 1;
	}
	if (!l.n) {
		fprintf(stderr, "ibckpt: %s: no snapshot: the job is not frozen, or none of "
			"its processes uses the ibckpt provider\n", what);
		return 1;
	}
	for (i = 0; i < l.n; i++) {
		if (l.v[i].have != l.v[i].total ||
		    snap_validate(l.v[i].data, l.v[i].total, err_s, sizeof(err_s))) {
			fprintf(stderr, "ibckpt: %s: snapshot of process %u is malformed: %s\n",
				what, l.v[i].tgid, l.v[i].have != l.v[i].total ? "truncated" : err_s);
			snaps_free(&l);
			return 1;
		}
	}
	if (out) {
		/* snapshots hold addresses and keys: owner-only */
		c = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		f = c < 0 ? NULL : fdopen(c, "w");
		if (!f) {
			if (c >= 0)
				close(c);
			fprintf(stderr, "ibckpt: %s: %s\n", out, strerror(errno));
			snaps_free(&l);
			return 1;
		}
		for (i = 0; i < l.n; i++)
			if (fwrite(l.v[i].data, 1, l.v[i].total, f) != l.v[i].total)
				rc = 1;
		if (fclose(f) || rc) {
			fprintf(stderr, "ibckpt: %s: write failed\n", out);
			rc = 1;
		} else if (json) {
			putchar('{');
			if (job.type) {
				cli_job_json(stdout, &job);
				putchar(',');
			}
			printf("\"processes\":%u,\"file\":", l.n);
			json_str(stdout, out);
			printf("}\n");
		} else {
			printf("%u process snapshot%s of %s written to %s\n", l.n,
			       l.n == 1 ? "" : "s", desc, out);
		}
	} else if (json) {
		putchar('{');
		if (job.type) {
			cli_job_json(stdout, &job);
			putchar(',');
		}
		printf("\"processes\":[");
		for (i = 0; i < l.n; i++) {
			if (i)
				putchar(',');
			snap_print_json(stdout, l.v[i].data);
		}
		printf("]}\n");
	} else {
		for (i = 0; i < l.n; i++)
			snap_print_text(stdout, l.v[i].data);
	}
	snaps_free(&l);
	return rc;
usage:
	fprintf(stderr, "usage: ibckpt dump " CLI_JOB_USAGE " | --id SESSION [-o FILE]\n");
	return 2;
}
