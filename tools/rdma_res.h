/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RDMA core's resource tables as user space sees them: RDMA netlink's
 * nldev dumps (what `rdma res show qp|mr` prints), for the processes of a
 * dumped job that gave no snapshot. ibckpt.ko cannot list a process's QPs
 * and MRs (Documentation/snapshot.rst, "The kernel's own view"); this can.
 */
#ifndef IBCKPT_TOOLS_RDMA_RES_H
#define IBCKPT_TOOLS_RDMA_RES_H

#include <stdint.h>

/* One user QP (RDMA_NLDEV_ATTR_RES_QP_ENTRY) of a process. */
struct rres_qp {
	char dev[64];
	unsigned int tid, tgid;		/* creating thread, its process (0: unknown) */
	unsigned int qpn, type, state, port;
	int has_dest;			/* RC and UC only: */
	unsigned int dest_qpn, rq_psn;
	unsigned int sq_psn;
};

/* One user MR (RDMA_NLDEV_ATTR_RES_MR_ENTRY) of a process. */
struct rres_mr {
	char dev[64];
	unsigned int tid, tgid;
	unsigned int mrn, pdn;
	uint64_t length;
	int has_keys;			/* only for CAP_NET_ADMIN */
	unsigned int lkey, rkey;
};

struct rres {
	struct rres_qp *qp;
	unsigned int nqp;
	struct rres_mr *mr;
	unsigned int nmr;
};

/*
 * Every device's user QPs and MRs, each with the process of the thread that
 * created it (a thread ids mapped through /proc). Returns 0 or a negative
 * errno (no RDMA netlink: ib_core not loaded).
 */
int rres_collect(struct rres *r);
void rres_free(struct rres *r);

#endif
