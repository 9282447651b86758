/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's own view of a dumped job (IBCKPT_SNAPSHOT_F_KVIEW): per
 * process, what the module recorded of the QPs its snapshot names, or, for
 * a process without a snapshot, that it has none and what it pins.
 */
#ifndef IBCKPT_TOOLS_KVIEW_H
#define IBCKPT_TOOLS_KVIEW_H

#include <stdint.h>
#include <stdio.h>
#include <netlink/attr.h>

struct rres;

/* The RDMA core's record of one QP (enum ibckpt_kqp_attr). */
struct kv_qp {
	char dev[64];
	unsigned int handle, qpn, owner, type, port;
	unsigned int query_err;		/* then none of the below */
	unsigned int state, dest_qpn, sq_psn, rq_psn;
};

/* One process (enum ibckpt_kproc_attr) and its QPs. */
struct kv_proc {
	unsigned int tgid, flags, nqps;	/* nqps: how many the module said follow */
	uint64_t pinned;
	struct kv_qp *qp;
	unsigned int n;
};

struct kv_list {
	struct kv_proc *v;
	unsigned int n;
	int bad;	/* out of order: a process changed while it was read */
};

/*
 * Take one message of a SNAPSHOT_GET dump if it is a kernel-view one
 * (IBCKPT_A_KPROC or IBCKPT_A_KQP): 1 taken, 0 not one, or a negative errno.
 */
int kv_take(struct nlattr **a, struct kv_list *l);
/* Every process got the QPs the module announced (else sets l->bad). */
void kv_finish(struct kv_list *l);
const struct kv_proc *kv_find(const struct kv_list *l, unsigned int tgid);
void kv_free(struct kv_list *l);

/*
 * Lines "  kernel ..." under a process; the value of its "kernel" member.
 * For a process without a snapshot, its QPs and MRs in @rr (RDMA netlink;
 * NULL: could not be read).
 */
void kv_print_text(FILE *f, const struct kv_proc *p, const struct rres *rr);
void kv_print_json(FILE *f, const struct kv_proc *p, const struct rres *rr);

#endif
