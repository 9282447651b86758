// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A job on several nodes (Documentation/restart.rst, "A job on several
 * nodes"): the options that place this ibckpt among the nodes, the barriers
 * the commands pass (coord.c underneath), and criu's post-dump action, which
 * holds every node's dumped job until every node has dumped. The checkpoint
 * directory's layout for several nodes is ckptdir.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "peers.h"
#include "restart.h"
#include "snapshot.h"

/*
 * One of NODES_OPTIONS (or --part) into @o. Return: 1 if taken, 0 if @c is
 * not one of them, -1 if its value is bad (said).
 */
int nodes_opt(int c, const char *arg, struct coord_opts *o)
{
	unsigned long v;
	char *end;

	switch (c) {
	case NODES_OPT_NODE:
		if (coord_parse_node(arg, &o->rank, &o->n)) {
			fprintf(stderr, "ibckpt: --node takes RANK/N, 0 <= RANK < N <= %u, not "
				"'%s'\n", COORD_MAX_NODES, arg);
			return -1;
		}
		return 1;
	case NODES_OPT_RUN:
		o->run = arg;
		return 1;
	case NODES_OPT_TIMEOUT:
	case NODES_OPT_PART:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' ||
		    (c == NODES_OPT_TIMEOUT && (v == 0 || v > 86400000ul)) ||
		    (c == NODES_OPT_PART && v >= COORD_MAX_NODES)) {
			fprintf(stderr, "ibckpt: %s takes %s, not '%s'\n",
				c == NODES_OPT_PART ? "--part" : "--node-timeout",
				c == NODES_OPT_PART ? "a node's rank" :
						      "milliseconds (1 to 86400000)",
				arg);
			return -1;
		}
		if (c == NODES_OPT_TIMEOUT) {
			o->timeout_ms = (unsigned int)v;
			return 1;
		}
		if (o->nparts == COORD_MAX_PARTS) {
			fprintf(stderr, "ibckpt: at most %u --part\n", COORD_MAX_PARTS);
			return -1;
		}
		o->part[o->nparts++] = (unsigned int)v;
		return 1;
	}
	return 0;
}

/*
 * After the options: --run defaults to the Slurm step this runs in (every
 * node's srun task sees the same one). Return: 0, or -1 (said).
 */
int nodes_finish(struct coord_opts *o)
{
	static char slurm[96];
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");

	if (!o->n) {
		if (o->run || o->timeout_ms || o->nparts) {
			fprintf(stderr, "ibckpt: --run, --node-timeout and --part go with --node\n");
			return -1;
		}
		return 0;
	}
	if (!o->run && job && step) {
		snprintf(slurm, sizeof(slurm), "slurm-%.40s.%.40s", job, step);
		o->run = slurm;
	}
	if (!o->run) {
		fprintf(stderr, "ibckpt: --node needs --run ID, the same on every node and new for "
			"each operation (in a Slurm step it is the step's)\n");
		return -1;
	}
	return 0;
}

/*
 * nodes_vote() - this node's word @rc (0, or a failure said already, @msg the
 * others' summary of it) at the next barrier of @co, called @name
 * @data, @len, @flags, @decide, @arg, @out: as coord_vote()'s
 *
 * Every node passes the same barriers in the same order (each verdict is
 * the same everywhere), so the barriers are numbered. A failure elsewhere
 * is said here, naming its node.
 * Return: 0 if every node agreed; the verdict's code (1 or more) if not;
 * @rc itself without @co (a job on one node).
 */
int nodes_vote(struct coord *co, const char *name, int rc, const char *msg, const void *data,
	       size_t len, unsigned int flags, coord_decide_fn decide, void *arg,
	       struct coord_verdict *out)
{
	struct coord_verdict v;
	char phase[96];
	int code;

	if (!co)
		return rc;
	snprintf(phase, sizeof(phase), "%.64s.%u", name, ++co->seq);
	if (!coord_vote(co, phase, rc ? 1 : 0, msg, data, len, flags, decide, arg, &v)) {
		if (out)
			*out = v;
		else
			coord_verdict_free(&v);
		return 0;
	}
	if (v.by != co->rank || !rc)
		fprintf(stderr, "ibckpt: node %u: %s\n", v.by, v.why);
	code = v.code > 0 ? v.code : 1;
	coord_verdict_free(&v);
	return code;
}

/* ---- every node's QPs checked against every node's (node 0) ---- */

/* In a node's vote: each snapshot after one of these, padded to 8 bytes. */
struct snap_item {
	uint32_t len;
	uint32_t pad;
};

struct peers_all {
	const void **v;
	unsigned int n, cap;
	char *why;
	size_t whylen;
};

static int peers_node(void *arg, unsigned int rank, const void *data, size_t len)
{
	struct peers_all *a = arg;
	const unsigned char *p = data;
	size_t off = 0;
	char err[256];

	while (off < len) {
		struct snap_item it;

		if (len - off < sizeof(it))
			goto bad;
		memcpy(&it, p + off, sizeof(it));
		off += sizeof(it);
		if (it.len > len - off)
			goto bad;
		err[0] = 0;
		if (snap_validate(p + off, it.len, err, sizeof(err))) {
			snprintf(a->why, a->whylen, "node %u sent a malformed snapshot: %s", rank,
				 err);
			return 1;
		}
		if (a->n == a->cap) {
			const void **v = realloc(a->v, (a->cap * 2 + 16) * sizeof(*v));

			if (!v)
				goto bad;
			a->v = v;
			a->cap = a->cap * 2 + 16;
		}
		a->v[a->n++] = p + off;
		off += ((size_t)it.len + 7u) & ~(size_t)7u;
	}
	return 0;
bad:
	snprintf(a->why, a->whylen, "node %u: its snapshots are malformed", rank);
	return 1;
}

/* Node 0: peers_check() over every node's snapshots; 3 when requests are in flight. */
static int peers_decide(void *arg, const void *votes, size_t len, char *why, size_t whylen)
{
	struct peers_all a = { .why = why, .whylen = whylen };
	int st;

	(void)arg;
	if (coord_each(votes, len, peers_node, &a)) {
		free(a.v);
		return 1;
	}
	st = peers_check(a.v, a.n, why, whylen);
	free(a.v);
	return st == -2 ? 3 : st ? 1 : 0;
}

/*
 * Before a release on several nodes: node 0 checks every QP of every node
 * against its peer, wherever that runs. @all: every node's snapshots, for
 * what each QP's peer grants (nodes_verdict_snaps(); coord_verdict_free() it).
 * Return: 0, 1 (refused, said), or 3 (requests in flight: every node
 * freezes again).
 */
int nodes_vote_peers(struct coord *co, const struct cli_snaps *l, struct coord_verdict *all)
{
	size_t len = 0, off = 0;
	unsigned char *buf;
	unsigned int i;
	int st;

	for (i = 0; i < l->n; i++)
		len += sizeof(struct snap_item) + (((size_t)l->v[i].total + 7u) & ~(size_t)7u);
	buf = calloc(1, len ? len : 1);
	if (!buf)
		return nodes_vote(co, "peers", 1, "out of memory", NULL, 0, 0, NULL, NULL, NULL);
	for (i = 0; i < l->n; i++) {
		struct snap_item it = { .len = l->v[i].total };

		memcpy(buf + off, &it, sizeof(it));
		off += sizeof(it);
		memcpy(buf + off, l->v[i].data, l->v[i].total);
		off += ((size_t)l->v[i].total + 7u) & ~(size_t)7u;
	}
	st = nodes_vote(co, "peers", 0, NULL, buf, len, COORD_GATHER, peers_decide, NULL, all);
	free(buf);
	return st == 3 ? 3 : st ? 1 : 0;
}

/*
 * Every node's snapshots in nodes_vote_peers()'s verdict, checked as node 0
 * checked them: *@snaps points into @all (free() the array only).
 * Return: 0, or 1 (said).
 */
int nodes_verdict_snaps(const struct coord_verdict *all, const void ***snaps, unsigned int *n)
{
	char why[256];
	struct peers_all a = { .why = why, .whylen = sizeof(why) };

	*snaps = NULL;
	*n = 0;
	if (coord_each(all->data, all->len, peers_node, &a)) {
		fprintf(stderr, "ibckpt: the nodes' snapshots: %s\n", why);
		free(a.v);
		return 1;
	}
	*snaps = a.v;
	*n = a.n;
	return 0;
}

/* ---- criu's post-dump action: the barrier that lets criu kill ---- */

#define ENV_DIR		"IBCKPT_COORD_DIR"
#define ENV_NODE	"IBCKPT_COORD_NODE"
#define ENV_TIMEOUT	"IBCKPT_COORD_TIMEOUT"
#define ENV_GRACE	"IBCKPT_COORD_GRACE"
#define ENV_PHASE	"IBCKPT_COORD_PHASE"

/*
 * criu runs its action scripts (this ibckpt: criu_dump()) with no argument
 * and its environment, ours: the post-dump barrier's whereabouts go there.
 * Return: 0, or -1.
 */
int nodes_post_dump_env(const struct coord *co, const char *phase)
{
	char num[64];

	snprintf(num, sizeof(num), "%u/%u", co->rank, co->n);
	if (setenv(ENV_DIR, co->dir, 1) || setenv(ENV_NODE, num, 1) || setenv(ENV_PHASE, phase, 1))
		return -1;
	snprintf(num, sizeof(num), "%u", co->timeout_ms);
	if (setenv(ENV_TIMEOUT, num, 1))
		return -1;
	snprintf(num, sizeof(num), "%u", co->grace_ms);
	return setenv(ENV_GRACE, num, 1);
}

void nodes_post_dump_env_clear(void)
{
	unsetenv(ENV_DIR);
	unsetenv(ENV_NODE);
	unsetenv(ENV_TIMEOUT);
	unsetenv(ENV_GRACE);
	unsetenv(ENV_PHASE);
}

/*
 * criu's post-dump action (criu.c runs ibckpt as criu's action script): the
 * images are written, the tree still seized and its network locked. A job
 * on several nodes: this node votes at the barrier and waits for the
 * verdict: 0 lets criu kill the tree; non-zero has criu leave it running,
 * network unlocked, as when its dump fails (criu's cr_dump_finish()). A job
 * on one node (no barrier in the environment): 0.
 */
int nodes_post_dump(void)
{
	const char *dir = getenv(ENV_DIR), *node = getenv(ENV_NODE), *phase = getenv(ENV_PHASE);
	const char *tmo = getenv(ENV_TIMEOUT), *grace = getenv(ENV_GRACE);
	struct coord_verdict v;
	/*
	 * Not coord_open(): that would leave this node's done file as this
	 * process exits, while its ibckpt still has barriers ahead.
	 */
	struct coord c = { 0 };

	if (!dir && !node && !phase && !tmo && !grace)
		return 0;
	if (!dir || !node || !phase || !tmo || !grace ||
	    coord_parse_node(node, &c.rank, &c.n) || strlen(dir) >= sizeof(c.dir)) {
		fprintf(stderr, "ibckpt: run as criu's action script, but not by ibckpt's criu "
			"dump\n");
		return 1;
	}
	snprintf(c.dir, sizeof(c.dir), "%s", dir);
	c.timeout_ms = (unsigned int)strtoul(tmo, NULL, 10);
	c.grace_ms = (unsigned int)strtoul(grace, NULL, 10);
	c.poll_max_us = 20000;
	if (!c.timeout_ms)
		c.timeout_ms = COORD_TIMEOUT_MS;
	if (coord_vote(&c, phase, 0, NULL, NULL, 0, 0, NULL, NULL, &v)) {
		fprintf(stderr, "ibckpt: node %u: %s: the dump is not kept, the job runs on\n",
			v.by, v.why);
		coord_verdict_free(&v);
		return 1;
	}
	coord_verdict_free(&v);
	return 0;
}
