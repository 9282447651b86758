/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading a provider's snapshot in the kernel, and comparing the QPs it
 * names with the RDMA core's record of them. Pure logic: no ib_core here
 * (rdma_view.c does the lookups), so that KUnit can test it anywhere.
 */
#ifndef IBCKPT_SNAP_CHECK_H
#define IBCKPT_SNAP_CHECK_H

#include <linux/types.h>

#include "uapi/linux/ibckpt_snapshot.h"

struct pid;

/* Room for a refusal's reason, NUL included (IBCKPT_SESSION_A_QUIESCE_MSG). */
#define IBCKPT_WHY_LEN	128

/**
 * struct ibckpt_why - why the module refused a snapshot
 * @msg: the reason, naming the record or the QP; "" if none was given
 * @qpn: the QP it is about, if @has_qpn
 * @has_qpn: it is about a QP
 */
struct ibckpt_why {
	char msg[IBCKPT_WHY_LEN];
	u32 qpn;
	bool has_qpn;
};

/**
 * enum ibckpt_kqp_found - what the RDMA core has under a (device, QPN)
 * @IBCKPT_KQP_UNCHECKED: not looked up (yet)
 * @IBCKPT_KQP_NO_DEVICE: no device of that name in the process's network
 *	namespace
 * @IBCKPT_KQP_NO_QP: the device has no QP with that number
 * @IBCKPT_KQP_FOUND: it has one; the other fields of struct ibckpt_kqp hold
 *	its record
 */
enum ibckpt_kqp_found {
	IBCKPT_KQP_UNCHECKED,
	IBCKPT_KQP_NO_DEVICE,
	IBCKPT_KQP_NO_QP,
	IBCKPT_KQP_FOUND,
};

/**
 * struct ibckpt_kqp - one QP a snapshot names, and the RDMA core's record of it
 * @qp_off: offset in the snapshot of the QP record's payload
 *	(struct ibckpt_snap_qp)
 * @dev_off: offset of its device's DEVICE record payload
 *	(struct ibckpt_snap_device): the name it is looked up by
 * @found: enum ibckpt_kqp_found
 * @kernel: a kernel QP (a ULP's), owned by no process
 * @mine: created by a thread of the process that gave the snapshot
 * @owner: the process that created it (a reference, put by
 *	ibckpt_kview_free()), NULL for a kernel QP or if gone
 * @type: enum ib_qp_type
 * @port: its port, 0 if none yet
 * @query_err: 0, or the positive errno of ib_query_qp(); the fields below
 *	are then 0
 * @state: enum ib_qp_state
 * @dest_qpn: destination QPN
 * @sq_psn: send queue PSN
 * @rq_psn: receive queue PSN
 */
struct ibckpt_kqp {
	u32 qp_off;
	u32 dev_off;
	enum ibckpt_kqp_found found;
	bool kernel;
	bool mine;
	struct pid *owner;
	u32 type;
	u32 port;
	u32 query_err;
	u32 state;
	u32 dest_qpn;
	u32 sq_psn;
	u32 rq_psn;
};

/**
 * struct ibckpt_kview - the kernel's view of the QPs of one snapshot
 * @released: the snapshot says the process holds no vendor resources
 *	(IBCKPT_SNAP_CONTROL): its QPs were not looked up
 * @n: QPs the snapshot names
 * @qp: one per QP record, in the snapshot's order
 *
 * Lifetime: built by ibckpt_snap_parse(), completed by rdma_view.c, kept
 * beside the snapshot it points into (offsets, not pointers) and freed with
 * it by ibckpt_kview_free().
 */
struct ibckpt_kview {
	bool released;
	u32 n;
	struct ibckpt_kqp qp[];
};

struct ibckpt_kview *ibckpt_snap_parse(const void *buf, size_t len, char *why);
void ibckpt_kview_free(struct ibckpt_kview *kv);
int ibckpt_kqp_compare(const void *snap, const struct ibckpt_kqp *k, char *why);

/* The records a struct ibckpt_kqp refers to, in a snapshot parse accepted. */
static inline const struct ibckpt_snap_qp *ibckpt_kqp_rec(const void *snap,
							  const struct ibckpt_kqp *k)
{
	return (const struct ibckpt_snap_qp *)((const u8 *)snap + k->qp_off);
}

static inline const char *ibckpt_kqp_dev(const void *snap, const struct ibckpt_kqp *k)
{
	return ((const struct ibckpt_snap_device *)((const u8 *)snap + k->dev_off))->name;
}

#endif /* IBCKPT_SNAP_CHECK_H */
