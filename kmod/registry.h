/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The registry: the processes registered through /dev/ibckpt.
 */
#ifndef IBCKPT_REGISTRY_H
#define IBCKPT_REGISTRY_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "evq.h"

struct ibckpt_kview;
struct pid;

/**
 * struct ibckpt_proc - a process registered through /dev/ibckpt
 * @node: in ibckpt_procs; protected by ibckpt_procs_lock
 * @ref: held by the registering file and by anyone iterating outside the lock
 * @tgid: the process (its thread-group leader's struct pid)
 * @ctrl: the control thread, never parked with the application threads
 * @events: events not yet read by the control thread
 * @quiesce_session: the session it was asked to quiesce for, 0 if none;
 *	under ibckpt_procs_lock. Asking it, its snapshot kept or dropped, and
 *	its registration ending change that session's generation (session.h)
 * @quiesce_answered: it answered that request; under ibckpt_procs_lock
 * @snap: the snapshot it gave for @quiesce_session (kvmalloc), freed when
 *	the session ends or the process goes; under ibckpt_procs_lock
 * @snap_len: its length
 * @kview: the RDMA core's record of the QPs @snap names, taken when the
 *	module accepted it (rdma_view.c); kept and freed with @snap
 *
 * Lifetime: created by IBCKPT_IOC_REGISTER (ibckpt_proc_add()), unlinked
 * when the registering file is released (close or exit,
 * ibckpt_quiesce_unlist()); freed on the last kref_put().
 */
struct ibckpt_proc {
	struct list_head node;
	struct kref ref;
	struct pid *tgid;
	struct pid *ctrl;
	struct ibckpt_evq events;
	u64 quiesce_session;
	bool quiesce_answered;
	void *snap;
	u32 snap_len;
	struct ibckpt_kview *kview;
};

/* Registered processes. */
extern struct list_head ibckpt_procs;
extern struct mutex ibckpt_procs_lock;

struct ibckpt_proc *ibckpt_proc_add(struct pid *tgid);
void ibckpt_proc_put(struct ibckpt_proc *p);
void ibckpt_snapshot_drop(struct ibckpt_proc *p);

#endif /* IBCKPT_REGISTRY_H */
