// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A job's processes and their restart channels (uapi/linux/ibckpt_restart.h):
 * the set, read from the job's snapshots or its checkpoint directory, opened
 * and closed, and the reacquire sent through all of them at once (REACQUIRE,
 * the identities exchanged, REMAP, GO, or ABORT). For a job on several
 * nodes each phase ends at the nodes' barrier (nodes_vote()).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt_restart.h>
#include <linux/ibckpt_snapshot.h>
#include "restart.h"

void job_chans_close(struct job_chans *j)
{
	unsigned int i;

	for (i = 0; i < j->n; i++)
		rchan_close(&j->p[i]);
}

void job_chans_free(struct job_chans *j)
{
	job_chans_close(j);
	free(j->p);
	j->p = NULL;
	j->n = 0;
}

/* Add process @pid, its channel at its descriptors @cmd_fd and @reply_fd. Return: 0 or -1. */
int job_chans_add(struct job_chans *j, unsigned int pid, int cmd_fd, int reply_fd)
{
	struct rchan *p = realloc(j->p, (j->n + 1) * sizeof(*p));

	if (!p)
		return -1;
	j->p = p;
	j->p[j->n++] = (struct rchan){ .pid = pid, .cmd_fd = cmd_fd, .reply_fd = reply_fd,
				       .cmd = -1, .reply = -1 };
	return 0;
}

/* Open every process's channel. Return: 0, or -1 (said; none is left open). */
int job_chans_open(struct job_chans *j)
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
 * A REACQUIRE or REMAP failed somewhere: every process undoes what it
 * re-created and is released as it was (each provider does the same on a
 * REACQUIRE of its own that failed), so that a new reacquire, with another
 * device map say, starts over. Not after a GO: a QP at RTS may have sent.
 */
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
	j->undone = undone == j->n;
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
 * REACQUIRE everywhere, the identities merged, REMAP everywhere (every QP
 * at RTR), then GO everywhere: no QP sends before its peer can receive.
 * With @co (a job on several nodes), every node's processes reacquire, then
 * every node's identities go to every node (node 0 gathers them), each
 * phase ends at a barrier, and a failure anywhere undoes the reacquire on
 * every node.
 */
int job_chans_reacquire(struct job_chans *j, const struct ibckpt_rdev_map *map,
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
int job_chans_of(const struct cli_snaps *l, struct job_chans *j)
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
