/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A job that spans nodes (Documentation/restart.rst, "A job on several
 * nodes"): one ibckpt per node, launched by whatever fans out (srun, ssh, the
 * test bed), meets the others at barriers in a directory every node sees.
 * Node 0 decides each barrier; whoever writes the verdict first wins, so the
 * nodes never decide differently, even when node 0 is gone (tools/coord.c).
 */
#ifndef IBCKPT_TOOLS_COORD_H
#define IBCKPT_TOOLS_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COORD_DIR	"coord"		/* DIR/coord/RUN/: one directory per operation */
#define COORD_MAX_NODES	65536u
#define COORD_MAX_PARTS	64u		/* parts of a checkpoint one node restores */
#define COORD_TIMEOUT_MS	120000u	/* default: a node's answer to each barrier */
#define COORD_GRACE_MS	10000u		/* the others wait this much longer than node 0 */

/* What the command line says about this node's place in the job. */
struct coord_opts {
	unsigned int rank, n;	/* --node R/N; n == 0: one node, no coordination */
	const char *run;	/* --run ID: names this operation, the same on every node */
	unsigned int timeout_ms;	/* --node-timeout MS */
	unsigned int part[COORD_MAX_PARTS];	/* --part P...: the parts a restart takes */
	unsigned int nparts;
};

struct coord {
	char dir[4096];		/* DIR/coord/RUN */
	unsigned int rank, n;
	unsigned int timeout_ms;
	unsigned int grace_ms;		/* how much longer the others wait than node 0 */
	unsigned int poll_max_us;	/* the longest sleep between two looks */
	unsigned int seq;		/* barriers passed: the next one's number */
};

/* A barrier's outcome, the same on every node. */
struct coord_verdict {
	int code;		/* 0: every node agreed; else the first failure's code */
	unsigned int by;	/* the node whose vote or timeout decided a failure */
	char why[512];		/* a failure's reason, naming its node */
	void *data;		/* with COORD_GATHER: every node's data, see coord_each() */
	size_t len;
};

/*
 * Node 0 only, once every node voted yes: may still refuse (returns the code,
 * the reason in @why). @votes holds every node's data as coord_each() walks.
 */
typedef int (*coord_decide_fn)(void *arg, const void *votes, size_t len, char *why,
			       size_t whylen);

#define COORD_GATHER	1u	/* the verdict carries every node's data to every node */

int coord_parse_node(const char *s, unsigned int *rank, unsigned int *n);
int coord_run_id(const char *s);
int coord_open(struct coord *c, const char *base, const struct coord_opts *o);
int coord_vote(struct coord *c, const char *phase, int code, const char *msg, const void *data,
	       size_t len, unsigned int flags, coord_decide_fn decide, void *arg,
	       struct coord_verdict *v);
int coord_verdict_get(struct coord *c, const char *phase, struct coord_verdict *v);
void coord_verdict_free(struct coord_verdict *v);
void coord_close(struct coord *c, bool ok);
void coord_exit_status(int rc);
int coord_each(const void *votes, size_t len,
	       int (*fn)(void *arg, unsigned int rank, const void *data, size_t len), void *arg);

#endif
