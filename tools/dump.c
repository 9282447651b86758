// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt dump JOB [-o FILE]: the snapshots the providers of a frozen job
 * gave the module for its freeze, printed (text, or JSON with -j) or written
 * as they are, one after the other, to FILE. Each is validated first: the
 * bytes come from the frozen processes. Printed, each comes with the
 * kernel's own view of the process (kview.c), and the processes of the job
 * without a snapshot are listed too.
 *
 * ibckpt dump -D DIR [-o FILE]: the same, offline, for the snapshots a
 * checkpoint directory keeps (ckptdir.c): no module, no kernel view.
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
#include "kview.h"
#include "nl.h"
#include "rdma_res.h"
#include "restart.h"
#include "snapshot.h"

static int on_piece(struct nlattr **a, void *arg)
{
	struct cli_snaps *l = arg;
	struct cli_snap *s;
	uint32_t tgid, total, off, len;
	int kv = l->kv ? kv_take(a, l->kv) : 0;

	if (kv)
		return kv < 0 ? kv : 0;
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

void cli_snaps_free(struct cli_snaps *l)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].data);
	free(l->v);
}

/**
 * cli_get_snapshots() - the validated snapshots of a frozen job
 * @job: the job, or --id
 * @l: filled; cli_snaps_free() it
 * @what: what failed, for the messages
 *
 * Return: 0, or 1 when it could not (said on stderr).
 */
int cli_get_snapshots(struct cli_job *job, struct cli_snaps *l, const char *what)
{
	return cli_get_snapshots_kv(job, l, NULL, what);
}

int cli_get_snapshots_kv(struct cli_job *job, struct cli_snaps *l, struct kv_list *kv,
			 const char *what)
{
	char ext[256] = "", err_s[256];
	struct nl_msg *m;
	struct ibnl n;
	unsigned int i;
	int err;

	memset(l, 0, sizeof(*l));
	l->kv = kv;
	if (ibnl_open(&n, 0))
		return 1;
	m = ibnl_msg(&n, IBCKPT_CMD_SNAPSHOT_GET, NLM_F_DUMP);
	if (m && kv && nla_put_u32(m, IBCKPT_A_FLAGS, IBCKPT_SNAPSHOT_F_KVIEW)) {
		nlmsg_free(m);
		m = NULL;	/* ibnl_call() reports it */
	}
	err = cli_job_put(m, job);
	if (err) {
		nlmsg_free(m);
		ibnl_close(&n);
		cli_job_close();
		return err > 0 ? 1 : cli_fail(err, what, NULL);
	}
	err = ibnl_call(&n, m, on_piece, l, ext, sizeof(ext));
	ibnl_close(&n);
	cli_job_close();
	if (err) {
		cli_snaps_free(l);
		return cli_fail(err, what, cli_dump_why(err, ext));
	}
	if (kv)
		kv_finish(kv);
	if (l->bad || (kv && kv->bad)) {
		cli_snaps_free(l);
		fprintf(stderr, "ibckpt: %s: a snapshot changed while it was read; "
			"is the job still frozen?\n", what);
		return 1;
	}
	if (!l->n && (!kv || !kv->n)) {
		fprintf(stderr, "ibckpt: %s: no snapshot: the job is not frozen, none of its "
			"processes uses the ibckpt provider, or they are released (for a "
			"checkpoint: ibckpt reacquire)\n", what);
		return 1;
	}
	for (i = 0; i < l->n; i++) {
		if (l->v[i].have != l->v[i].total ||
		    snap_validate(l->v[i].data, l->v[i].total, err_s, sizeof(err_s))) {
			fprintf(stderr, "ibckpt: %s: snapshot of process %u is malformed: %s\n",
				what, l->v[i].tgid,
				l->v[i].have != l->v[i].total ? "truncated" : err_s);
			cli_snaps_free(l);
			return 1;
		}
	}
	return 0;
}

/* The kernel's view of process @tgid as the "kernel" member of its object. */
static void print_json_kernel(const struct kv_list *kv, unsigned int tgid)
{
	const struct kv_proc *k = kv_find(kv, tgid);

	if (k) {
		fputs(",\"kernel\":", stdout);
		kv_print_json(stdout, k, NULL);
	}
}

/*
 * The snapshots checkpoint directory @dir keeps (restart.rst), read offline,
 * in the order of its job file: every process it lists must have its
 * proc-PID.snap, a regular file (not a link) that snap_validate() accepts.
 * *@complete: whether the checkpoint completed (ibckpt-complete).
 * Return: 0, or 1 when it could not (said on stderr, @l empty).
 */
static int ckpt_load(const char *dir, struct cli_snaps *l, int *complete)
{
	struct job_chans j = { 0 };
	char path[4200];
	unsigned int i;

	memset(l, 0, sizeof(*l));
	if (job_load(dir, &j))
		return 1;
	l->v = calloc(j.n, sizeof(*l->v));
	if (!l->v) {
		fprintf(stderr, "ibckpt: out of memory\n");
		job_chans_free(&j);
		return 1;
	}
	for (i = 0; i < j.n; i++, l->n++) {
		if (snap_load(dir, j.p[i].pid, &l->v[i])) {
			job_chans_free(&j);
			cli_snaps_free(l);
			memset(l, 0, sizeof(*l));
			return 1;
		}
	}
	job_chans_free(&j);
	snprintf(path, sizeof(path), "%s/" DONE_FILE, dir);
	*complete = !access(path, F_OK);
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "dir", required_argument, NULL, 'D' },
		CLI_JOB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *dir = NULL;
	struct cli_snaps l = { 0 };
	struct kv_list kv = { 0 };
	struct rres rr = { 0 };
	int have_rr = 0;
	struct cli_job job = { 0 };
	char what[320], desc[288];
	unsigned int i;
	int c, err, rc = 0, complete = 1;
	FILE *f;

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;	/* 0: re-initialise, GNU argument permutation included */
	while ((c = getopt_long(argc, argv, "o:D:", opts, NULL)) != -1) {
		if (c == 'o') {
			out = optarg;
			continue;
		}
		if (c == 'D') {
			dir = optarg;
			continue;
		}
		err = cli_job_opt(c, optarg, &job);
		if (err <= 0)
			goto usage;
	}
	if (cli_job_finish(&job, argc, argv, optind,
			   CLI_JOB_BY_ID | (dir ? CLI_JOB_OPTIONAL : 0)))
		goto usage;
	if (dir && (job.type || job.session || !*dir)) {
		fprintf(stderr, "ibckpt: %s\n", *dir ? "-D DIR dumps a checkpoint directory: "
			"name no job with it" : "-D needs a directory");
		goto usage;
	}
	if (slurm_job_finish(&job, NULL, NULL, SLURM_SUSPENDED_OK, argc, argv))
		return 1;
	if (dir) {
		/* offline: the module is not asked, there is no kernel view */
		if (ckpt_load(dir, &l, &complete))
			return 1;
		if (!complete)
			fprintf(stderr, "ibckpt: warning: %s is an incomplete checkpoint (no "
				"ibckpt-complete): dumped as it is\n", dir);
		snprintf(desc, sizeof(desc), "checkpoint %s", dir);
	} else {
		cli_job_describe(&job, desc, sizeof(desc));
		snprintf(what, sizeof(what), "cannot dump %s", desc);
		/* printed, with the kernel's own view; written, the snapshots alone */
		if (cli_get_snapshots_kv(&job, &l, out ? NULL : &kv, what)) {
			kv_free(&kv);
			return 1;
		}
	}
	/* the QPs and MRs of the processes without a snapshot: RDMA netlink's */
	for (i = 0; !out && !have_rr && i < kv.n; i++)
		if (kv.v[i].flags & IBCKPT_KPROC_F_NO_SNAPSHOT)
			have_rr = rres_collect(&rr) ? -1 : 1;
	if (out) {
		/* snapshots hold addresses and keys: owner-only */
		c = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		f = c < 0 ? NULL : fdopen(c, "w");
		if (!f) {
			if (c >= 0)
				close(c);
			fprintf(stderr, "ibckpt: %s: %s\n", out, strerror(errno));
			cli_snaps_free(&l);
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
			fputs(i ? ",{" : "{", stdout);
			snap_print_json_fields(stdout, l.v[i].data);
			print_json_kernel(&kv, l.v[i].tgid);
			printf("}\n");
		}
		printf("],\"without_snapshot\":[");
		for (i = 0, c = 0; i < kv.n; i++) {
			if (!(kv.v[i].flags & IBCKPT_KPROC_F_NO_SNAPSHOT))
				continue;
			printf("%s{\"tgid\":%u,\"kernel\":", c++ ? "," : "", kv.v[i].tgid);
			kv_print_json(stdout, &kv.v[i], have_rr > 0 ? &rr : NULL);
			putchar('}');
		}
		printf("]}\n");
	} else {
		for (i = 0; i < l.n; i++) {
			snap_print_text(stdout, l.v[i].data);
			if (kv_find(&kv, l.v[i].tgid))
				kv_print_text(stdout, kv_find(&kv, l.v[i].tgid), NULL);
		}
		for (i = 0; i < kv.n; i++) {
			if (!(kv.v[i].flags & IBCKPT_KPROC_F_NO_SNAPSHOT))
				continue;
			printf("process %u: no snapshot, pinned %llu bytes\n", kv.v[i].tgid,
			       (unsigned long long)kv.v[i].pinned);
			kv_print_text(stdout, &kv.v[i], have_rr > 0 ? &rr : NULL);
		}
	}
	cli_snaps_free(&l);
	kv_free(&kv);
	rres_free(&rr);
	return rc;
usage:
	fprintf(stderr, "usage: ibckpt dump " CLI_JOB_USAGE " | --id SESSION | -D DIR "
		"[-o FILE]\n");
	return 2;
}
