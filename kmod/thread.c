// SPDX-License-Identifier: GPL-2.0
/*
 * Claimed threads: a table from task to the session that tracks it, so that
 * a scan tells in O(1) whether a thread is known, and a thread belongs to
 * at most one session at a time.
 *
 * A thread is claimed when a session starts tracking it and unclaimed when
 * it exits (once PF_EXITING is set: park.c) or its session releases its
 * threads (thaw or abort). Readers
 * look up under RCU; the entries (struct ibckpt_thread) and their sessions
 * are freed after a grace period.
 */
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>

#include "session.h"

#define IBCKPT_THREAD_BITS	12

static DEFINE_HASHTABLE(ibckpt_threads, IBCKPT_THREAD_BITS);
static DEFINE_SPINLOCK(ibckpt_threads_lock);	/* writers of ibckpt_threads */

/**
 * ibckpt_thread_lookup() - a claimed thread's entry
 * @task: the thread
 *
 * An entry unclaimed meanwhile no longer counts: its task may be freed and
 * its address reused by a new task.
 *
 * Context: rcu_read_lock() held, or ibckpt_threads_lock; the entry's fields
 * are under its session's lock.
 * Return: the entry, or NULL if no session holds @task.
 */
struct ibckpt_thread *ibckpt_thread_lookup(struct task_struct *task)
{
	struct ibckpt_thread *thr;

	hash_for_each_possible_rcu(ibckpt_threads, thr, hnode, (unsigned long)task)
		if (READ_ONCE(thr->task) == task && !hlist_unhashed_lockless(&thr->hnode))
			return thr;
	return NULL;
}

/**
 * ibckpt_thread_claim() - record that @thr's session tracks @task
 * @thr: the session's entry for the thread, not claimed yet
 * @task: the thread
 *
 * Return: 0, or -EBUSY if a session claimed @task already.
 */
int ibckpt_thread_claim(struct ibckpt_thread *thr, struct task_struct *task)
{
	int ret = -EBUSY;

	spin_lock(&ibckpt_threads_lock);
	rcu_read_lock();
	if (!ibckpt_thread_lookup(task)) {
		get_task_struct(task);
		WRITE_ONCE(thr->task, task);
		hash_add_rcu(ibckpt_threads, &thr->hnode, (unsigned long)task);
		ret = 0;
	}
	rcu_read_unlock();
	spin_unlock(&ibckpt_threads_lock);
	return ret;
}

/**
 * ibckpt_thread_unclaim() - the session no longer holds the thread
 * @thr: the entry; nothing happens if it is not claimed
 *
 * Context: any (the task reference is dropped in place).
 */
void ibckpt_thread_unclaim(struct ibckpt_thread *thr)
{
	struct task_struct *task = NULL;

	spin_lock(&ibckpt_threads_lock);
	if (!hlist_unhashed(&thr->hnode)) {
		hash_del_rcu(&thr->hnode);
		task = thr->task;
	}
	spin_unlock(&ibckpt_threads_lock);
	if (task)
		put_task_struct(task);
}

/**
 * ibckpt_thread_holder() - the session that holds a thread
 * @task: the thread
 *
 * Context: rcu_read_lock() held; the session may be used until it is
 * dropped (it is freed after a grace period).
 * Return: the session, or NULL.
 */
struct ibckpt_session *ibckpt_thread_holder(struct task_struct *task)
{
	struct ibckpt_thread *thr = ibckpt_thread_lookup(task);

	return thr ? thr->sess : NULL;
}

