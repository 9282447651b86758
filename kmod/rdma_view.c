// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA core's own record of the QPs a provider's snapshot names.
 *
 * When a provider gives its snapshot (IBCKPT_IOC_SNAPSHOT), every QP record
 * is looked up by (device, QPN) through what ib_core exports on Debian's
 * 6.1 kernel, and compared (snap_check.c):
 *
 *  - ib_device_get_by_name() / ib_device_put(): the device, held;
 *    rdma_dev_access_netns(): visible in the process's network namespace;
 *  - rdma_restrack_get_byid(dev, RDMA_RESTRACK_QP, qpn) /
 *    rdma_restrack_put(): the QP's resource-tracking entry, held (a QP's
 *    restrack id is its QPN); its ib_qp is the entry's container; the
 *    entry's task is the thread that created the QP, and whether it is a
 *    user QP at all;
 *  - ib_query_qp(): the driver's state, PSNs and destination QPN, as
 *    nldev ("rdma res show qp") asks for them.
 *
 * Nothing exported enumerates a device's or a process's objects: the
 * restrack xarray (struct rdma_restrack_root) is private to ib_core, nldev's
 * dump is static there, ib_device_get_by_index() is not exported, and
 * uverbs's per-file object list (struct ib_uverbs_file) is private to
 * ib_uverbs. So only the QPs a snapshot names can be checked, and a process
 * without the provider is not seen here (Documentation/snapshot.rst, "The
 * kernel's own view"). MRs cannot be looked up by key either: their
 * restrack id is a counter, not the lkey.
 *
 * Locking and lifetime: called by the process's control thread (current)
 * from its ioctl, with no lock of the module held. The device and restrack
 * references are taken for one QP at a time (the device's for a run of QPs
 * on it): a restrack reference makes the QP's destroy wait
 * (rdma_restrack_del()), a device reference its unregistration, so neither
 * is held across anything but the driver's query. Nothing read from the
 * ib_qp is kept but numbers, and the owner's struct pid (a reference).
 */
#include <linux/err.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>
#include <rdma/restrack.h>

#include "rdma_view.h"

/* Look up the QP @q names on @dev, and query it if it is the process's. */
static void ibckpt_kqp_lookup(struct ib_device *dev, const struct ibckpt_snap_qp *q,
			      struct ibckpt_kqp *k)
{
	struct rdma_restrack_entry *res;
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	struct ib_qp *qp;
	int ret;

	/* ids with bits 24 and up are a port's SMI/GSI QPs, never a process's */
	res = q->qpn >> 24 ? ERR_PTR(-ENOENT) :
	      rdma_restrack_get_byid(dev, RDMA_RESTRACK_QP, q->qpn);
	if (IS_ERR(res)) {
		k->found = IBCKPT_KQP_NO_QP;
		return;
	}
	qp = container_of(res, struct ib_qp, res);
	k->found = IBCKPT_KQP_FOUND;
	k->kernel = rdma_is_kernel_res(res);
	k->type = qp->qp_type;
	k->port = qp->port;
	if (!k->kernel && res->task) {
		/* the entry holds the task: its signal_struct cannot be reused */
		k->mine = same_thread_group(res->task, current);
		k->owner = get_task_pid(res->task, PIDTYPE_TGID);
	}
	/* another process's QP is not ours to query */
	if (!k->kernel && (k->mine || q->opened)) {
		memset(&attr, 0, sizeof(attr));
		memset(&init, 0, sizeof(init));
		ret = ib_query_qp(qp, &attr, 0, &init);
		if (ret) {
			k->query_err = ret < 0 ? -ret : EIO;
		} else {
			k->state = attr.qp_state;
			k->dest_qpn = attr.dest_qp_num;
			k->sq_psn = attr.sq_psn;
			k->rq_psn = attr.rq_psn;
		}
	}
	rdma_restrack_put(res);
}

/**
 * ibckpt_rdma_view() - the RDMA core's record of every QP a snapshot names
 * @snap: the snapshot, a private copy (not changed while this runs)
 * @len: its length
 * @why: the reason, when refused (with the QPN if it is about a QP)
 *
 * Parses the snapshot (ibckpt_snap_parse()), then looks each QP up on its
 * device and compares (ibckpt_kqp_compare()), stopping at the first
 * disagreement. A snapshot that says the process holds no vendor resources
 * (released for a checkpoint) names QPs that no longer exist: they are not
 * looked up.
 *
 * Context: the registered process's control thread (current), process
 * context, no lock held; may sleep (the drivers' query_qp).
 * Return: the view (free with ibckpt_kview_free()); ERR_PTR(-EINVAL) for a
 * malformed snapshot, ERR_PTR(-EPROTO) if the RDMA core disagrees, with
 * @why; ERR_PTR(-ENOMEM).
 */
struct ibckpt_kview *ibckpt_rdma_view(const void *snap, size_t len, struct ibckpt_why *why)
{
	const struct net *net = current->nsproxy->net_ns;
	const struct ibckpt_snap_qp *q;
	struct ib_device *dev = NULL;
	const char *name = NULL, *n;
	struct ibckpt_kview *kv;
	struct ibckpt_kqp *k;
	int ret = 0;
	u32 i;

	kv = ibckpt_snap_parse(snap, len, why->msg);
	if (IS_ERR(kv) || kv->released)
		return kv;
	for (i = 0; i < kv->n; i++) {
		k = &kv->qp[i];
		q = ibckpt_kqp_rec(snap, k);
		n = ibckpt_kqp_dev(snap, k);
		if (!name || strcmp(name, n)) {
			if (dev)
				ib_device_put(dev);
			dev = ib_device_get_by_name(n, RDMA_DRIVER_UNKNOWN);
			if (dev && !rdma_dev_access_netns(dev, net)) {
				ib_device_put(dev);
				dev = NULL;
			}
			name = n;
		}
		if (dev)
			ibckpt_kqp_lookup(dev, q, k);
		else
			k->found = IBCKPT_KQP_NO_DEVICE;
		ret = ibckpt_kqp_compare(snap, k, why->msg);
		if (ret) {
			why->qpn = q->qpn;
			why->has_qpn = true;
			break;
		}
		cond_resched();
	}
	if (dev)
		ib_device_put(dev);
	if (ret) {
		ibckpt_kview_free(kv);
		return ERR_PTR(ret);
	}
	return kv;
}
