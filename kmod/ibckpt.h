/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ibckpt.ko internals.
 */
#ifndef IBCKPT_H
#define IBCKPT_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "uapi/linux/ibckpt.h"
#include "uapi/linux/ibckpt_snapshot.h"
#include "evq.h"

struct ibckpt_kview;

/* -DIBCKPT_VERSION="..." from kmod/Kbuild, which reads the tree's VERSION */
#ifndef IBCKPT_VERSION
#define IBCKPT_VERSION		"unknown"
#endif

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
 * Lifetime: created by IBCKPT_IOC_REGISTER, unlinked when the registering
 * file is released (close or exit); freed on the last kref_put().
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

void ibckpt_proc_put(struct ibckpt_proc *p);

int ibckpt_chardev_init(void);
void ibckpt_chardev_exit(void);
int ibckpt_quiesce_answer(struct ibckpt_proc *p, const struct ibckpt_quiesced *q);
int ibckpt_snapshot_take(struct ibckpt_proc *p, const struct ibckpt_snapshot_arg *a);
void ibckpt_snapshot_drop(struct ibckpt_proc *p);
void ibckpt_quiesce_unlist(struct ibckpt_proc *p);
int ibckpt_genl_init(void);
void ibckpt_genl_exit(void);

#endif /* IBCKPT_H */
