// SPDX-License-Identifier: GPL-2.0
/*
 * The registry: the processes registered through /dev/ibckpt (struct
 * ibckpt_proc), their list and its lock, and an entry's life from its
 * creation to its last reference.
 *
 * It is apart from the device (chardev.c) because the freeze uses it too:
 * the scan, the quiesce requests and SNAPSHOT_GET read the list, and none of
 * them needs the device's file operations.
 */
#include <linux/err.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "registry.h"
#include "snap_check.h"

/*
 * Registered processes, and the lock that protects the list and the entries'
 * quiesce state (struct ibckpt_proc).
 */
LIST_HEAD(ibckpt_procs);
DEFINE_MUTEX(ibckpt_procs_lock);	/* protects ibckpt_procs */

static void ibckpt_proc_free(struct kref *ref)
{
	struct ibckpt_proc *p = container_of(ref, struct ibckpt_proc, ref);

	put_pid(p->tgid);
	put_pid(p->ctrl);
	ibckpt_snapshot_drop(p);
	kfree(p);
}

/**
 * ibckpt_proc_put() - drop a reference to a registered process
 * @p: the process
 */
void ibckpt_proc_put(struct ibckpt_proc *p)
{
	kref_put(&p->ref, ibckpt_proc_free);
}

/**
 * ibckpt_proc_add() - register the calling thread as its process's control
 *	thread
 * @tgid: the process (a reference is taken)
 *
 * Return: the registration, with one reference for the caller, or
 * ERR_PTR(-ENOMEM), or ERR_PTR(-EBUSY) if the process has one already.
 */
struct ibckpt_proc *ibckpt_proc_add(struct pid *tgid)
{
	struct ibckpt_proc *p, *cur;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return ERR_PTR(-ENOMEM);
	kref_init(&p->ref);
	ibckpt_evq_init(&p->events);
	p->tgid = get_pid(tgid);
	p->ctrl = get_task_pid(current, PIDTYPE_PID);

	mutex_lock(&ibckpt_procs_lock);
	/*
	 * One registration (one control thread, one snapshot) per process:
	 * more would only exempt more threads from a freeze and make the
	 * module keep more memory for the process.
	 */
	list_for_each_entry(cur, &ibckpt_procs, node) {
		if (cur->tgid == p->tgid) {
			mutex_unlock(&ibckpt_procs_lock);
			ibckpt_proc_put(p);
			return ERR_PTR(-EBUSY);
		}
	}
	list_add_tail(&p->node, &ibckpt_procs);
	mutex_unlock(&ibckpt_procs_lock);
	return p;
}

/**
 * ibckpt_snapshot_drop() - forget a process's snapshot and its kernel view
 * @p: the registered process
 *
 * Context: ibckpt_procs_lock held, or the last reference to @p.
 */
void ibckpt_snapshot_drop(struct ibckpt_proc *p)
{
	kvfree(p->snap);
	p->snap = NULL;
	p->snap_len = 0;
	ibckpt_kview_free(p->kview);
	p->kview = NULL;
}
