// SPDX-License-Identifier: GPL-2.0
/*
 * Freeze sessions. FREEZE creates a session for a process group; a work item
 * scans the group and queues a park work (park.c) on every application
 * thread it has not seen yet, until a scan finds nothing new and no thread is
 * still on its way to park: then the group is FROZEN. Threads and processes
 * born while freezing are found by the next scan; a parked thread cannot
 * create any. A freeze that does not converge before its deadline is ABORTED
 * and every thread released.
 *
 * Control threads registered through /dev/ibckpt are never parked here; the
 * providers they run are asked to quiesce before any thread is parked
 * (quiesce.c).
 *
 * A session ends on THAW, when the netlink socket that asked for it is closed
 * (unless it is persistent), when a persistent session's watchdog fires, or
 * at module exit. Ending releases the parked threads and waits, bounded, for
 * them to leave.
 */
#include <linux/jiffies.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <net/net_namespace.h>

#include "ibckpt.h"
#include "session.h"

LIST_HEAD(ibckpt_sessions);
DEFINE_MUTEX(ibckpt_sessions_lock);	/* protects ibckpt_sessions */

static atomic64_t ibckpt_session_ids = ATOMIC64_INIT(0);

#define IBCKPT_SCAN_BATCH	64

static void ibckpt_session_free(struct kref *ref)
{
	struct ibckpt_session *s = container_of(ref, struct ibckpt_session, ref);
	struct ibckpt_thread *thr, *tmp;

	list_for_each_entry_safe(thr, tmp, &s->threads, node) {
		put_pid(thr->pid);
		kfree(thr);
	}
	put_pid(s->q.err_pid);
	put_pid(s->pgrp);
	kfree(s);
}

/**
 * ibckpt_session_put() - drop a session reference
 * @s: the session
 */
void ibckpt_session_put(struct ibckpt_session *s)
{
	kref_put(&s->ref, ibckpt_session_free);
}

/**
 * ibckpt_session_find() - the listed session of a process group
 * @pgrp: the process group
 *
 * Context: ibckpt_sessions_lock held.
 * Return: the session or NULL.
 */
struct ibckpt_session *ibckpt_session_find(struct pid *pgrp)
{
	struct ibckpt_session *s;

	lockdep_assert_held(&ibckpt_sessions_lock);
	list_for_each_entry(s, &ibckpt_sessions, node)
		if (s->pgrp == pgrp)
			return s;
	return NULL;
}

/*
 * Release the parked threads and tell the providers; @st is the state the
 * session ends in.
 */
static void ibckpt_session_release(struct ibckpt_session *s, enum ibckpt_state st)
{
	spin_lock(&s->lock);
	s->state = st;
	WRITE_ONCE(s->released, true);
	spin_unlock(&s->lock);
	wake_up_all(&s->park_wq);
	ibckpt_quiesce_end(s, st == IBCKPT_STATE_ABORTED ? IBCKPT_EV_ABORT : IBCKPT_EV_THAW);
}

/*
 * End an unlisted session: stop its works, release its threads, wait (10 s
 * at most: a woken thread only needs a CPU) until none is parked.
 */
static void ibckpt_session_end(struct ibckpt_session *s, bool from_watchdog)
{
	/* state first: neither the park works nor converge requeue after it */
	ibckpt_session_release(s, IBCKPT_STATE_THAWING);
	cancel_delayed_work_sync(&s->converge);
	if (!from_watchdog)
		cancel_delayed_work_sync(&s->watchdog);
	if (!wait_event_timeout(s->done_wq, !READ_ONCE(s->tally.parked), 10 * HZ))
		pr_warn("ibckpt: session %llu: %u threads still parked after thaw\n",
			s->id, READ_ONCE(s->tally.parked));
	ibckpt_session_put(s);
}

static bool ibckpt_session_tracks(struct ibckpt_session *s, struct pid *pid)
{
	struct ibckpt_thread *thr;
	bool found = false;

	spin_lock(&s->lock);
	list_for_each_entry(thr, &s->threads, node) {
		if (thr->pid == pid) {
			found = true;
			break;
		}
	}
	spin_unlock(&s->lock);
	return found;
}

static int ibckpt_session_track(struct ibckpt_session *s, struct task_struct *task)
{
	struct ibckpt_thread *thr;
	int ret;

	thr = kzalloc(sizeof(*thr), GFP_KERNEL);
	if (!thr)
		return -ENOMEM;
	thr->pid = get_task_pid(task, PIDTYPE_PID);
	thr->state = IBCKPT_THREAD_PENDING;
	spin_lock(&s->lock);
	list_add_tail(&thr->node, &s->threads);
	ibckpt_tally_add(&s->tally, IBCKPT_THREAD_PENDING);
	spin_unlock(&s->lock);

	ret = ibckpt_park_queue(s, task, thr);
	if (ret == -ESRCH) {
		/* already past running task works: it is exiting */
		spin_lock(&s->lock);
		ibckpt_tally_move(&s->tally, thr->state, IBCKPT_THREAD_EXITED);
		thr->state = IBCKPT_THREAD_EXITED;
		spin_unlock(&s->lock);
		ret = 0;
	}
	return ret;
}

/* The control threads of registered processes: never parked by a freeze. */
static struct pid **ibckpt_ctrl_pids(unsigned int *n)
{
	struct ibckpt_proc *p;
	struct pid **v;
	unsigned int i = 0, cnt = 0;

	mutex_lock(&ibckpt_procs_lock);
	list_for_each_entry(p, &ibckpt_procs, node)
		cnt++;
	v = kcalloc(cnt ? cnt : 1, sizeof(*v), GFP_KERNEL);
	if (v)
		list_for_each_entry(p, &ibckpt_procs, node)
			v[i++] = get_pid(p->ctrl);
	mutex_unlock(&ibckpt_procs_lock);
	*n = i;
	return v;
}

static bool ibckpt_pid_in(struct pid *pid, struct pid **v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/*
 * Queue a park work on every thread of the group not seen before.
 * Return: how many, or a negative errno.
 */
static int ibckpt_session_scan(struct ibckpt_session *s)
{
	struct task_struct *batch[IBCKPT_SCAN_BATCH];
	struct task_struct *p, *t;
	unsigned int n, i, nctrl;
	struct pid **ctrl;
	int total = 0, ret = 0;

	ctrl = ibckpt_ctrl_pids(&nctrl);
	if (!ctrl)
		return -ENOMEM;
	do {
		n = 0;
		rcu_read_lock();
		do_each_pid_task(s->pgrp, PIDTYPE_PGID, p) {
			for_each_thread(p, t) {
				if (n == IBCKPT_SCAN_BATCH)
					goto full;
				if (t->flags & (PF_KTHREAD | PF_IO_WORKER | PF_EXITING))
					continue;
				if (ibckpt_pid_in(task_pid(t), ctrl, nctrl) ||
				    ibckpt_session_tracks(s, task_pid(t)))
					continue;
				get_task_struct(t);
				batch[n++] = t;
			}
		} while_each_pid_task(s->pgrp, PIDTYPE_PGID, p);
full:
		rcu_read_unlock();
		for (i = 0; i < n; i++) {
			if (!ret)
				ret = ibckpt_session_track(s, batch[i]);
			put_task_struct(batch[i]);
		}
		total += n;
	} while (n == IBCKPT_SCAN_BATCH && !ret);

	for (i = 0; i < nctrl; i++)
		put_pid(ctrl[i]);
	kfree(ctrl);
	return ret ? ret : total;
}

static void ibckpt_converge_fn(struct work_struct *work)
{
	struct ibckpt_session *s = container_of(to_delayed_work(work),
						struct ibckpt_session, converge);
	enum ibckpt_state st;
	bool waiting, failed;
	int found;

	spin_lock(&s->lock);
	if (s->state != IBCKPT_STATE_FREEZING) {
		spin_unlock(&s->lock);
		return;
	}
	/* Park nothing until every provider has closed its gate (quiesce.c). */
	waiting = s->q.answered < s->q.providers;
	failed = s->q.err != 0;
	spin_unlock(&s->lock);
	if (failed || (waiting && time_after(jiffies, s->deadline))) {
		ibckpt_session_release(s, IBCKPT_STATE_ABORTED);
		return;
	}
	if (waiting) {
		/* an answer kicks us; look again now and then for the deadline */
		queue_delayed_work(system_wq, &s->converge, HZ / 20 + 1);
		return;
	}

	found = ibckpt_session_scan(s);
	spin_lock(&s->lock);
	if (found < 0)	/* out of memory: give up the freeze */
		st = s->state == IBCKPT_STATE_FREEZING ? IBCKPT_STATE_ABORTED : s->state;
	else
		st = ibckpt_converge(s->state, &s->tally, found,
				     time_after(jiffies, s->deadline));
	if (st == IBCKPT_STATE_FROZEN && s->state == IBCKPT_STATE_FREEZING)
		s->freeze_ns = ktime_get_ns() - s->started;
	if (st != IBCKPT_STATE_ABORTED)
		s->state = st;
	spin_unlock(&s->lock);

	if (st == IBCKPT_STATE_FREEZING)
		queue_delayed_work(system_wq, &s->converge, 1);
	else if (st == IBCKPT_STATE_ABORTED)
		ibckpt_session_release(s, IBCKPT_STATE_ABORTED);
}

static void ibckpt_watchdog_fn(struct work_struct *work)
{
	struct ibckpt_session *s = container_of(to_delayed_work(work),
						struct ibckpt_session, watchdog);
	struct ibckpt_session *cur;
	bool mine = false;

	mutex_lock(&ibckpt_sessions_lock);
	list_for_each_entry(cur, &ibckpt_sessions, node) {
		if (cur == s) {
			list_del(&s->node);
			mine = true;
			break;
		}
	}
	mutex_unlock(&ibckpt_sessions_lock);
	if (mine) {
		pr_info("ibckpt: session %llu: watchdog expired, thawing\n", s->id);
		ibckpt_session_end(s, true);
	}
}

/**
 * ibckpt_session_freeze() - start freezing a process group
 * @pgid: the group, in the caller's pid namespace
 * @timeout_ms: give up (and release everything) if not frozen by then
 * @flags: IBCKPT_FREEZE_F_*
 * @watchdog_ms: for IBCKPT_FREEZE_F_PERSIST, thaw after this long
 * @portid: the requesting netlink socket, the owner of a non-persistent freeze
 * @id: set to the new session's id
 * @why: set to a message for the requester on error
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_session_freeze(u32 pgid, u32 timeout_ms, u32 flags, u32 watchdog_ms,
			  u32 portid, u64 *id, const char **why)
{
	struct ibckpt_session *s, *old = NULL;
	struct pid *pgrp;
	int ret;

	ret = ibckpt_freeze_args_check(pgid, timeout_ms, flags, watchdog_ms, why);
	if (ret)
		return ret;

	rcu_read_lock();
	pgrp = find_vpid(pgid);
	if (!pgrp || !pid_task(pgrp, PIDTYPE_PGID)) {
		rcu_read_unlock();
		*why = "no such process group";
		return -ESRCH;
	}
	if (pgrp == task_pgrp(current)) {
		rcu_read_unlock();
		*why = "cannot freeze the requester's own process group";
		return -EDEADLK;
	}
	get_pid(pgrp);
	rcu_read_unlock();

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		put_pid(pgrp);
		return -ENOMEM;
	}
	kref_init(&s->ref);
	s->id = atomic64_inc_return(&ibckpt_session_ids);
	s->pgrp = pgrp;
	s->flags = flags;
	s->owner_portid = flags & IBCKPT_FREEZE_F_PERSIST ? 0 : portid;
	spin_lock_init(&s->lock);
	s->state = IBCKPT_STATE_FREEZING;
	INIT_LIST_HEAD(&s->threads);
	init_waitqueue_head(&s->park_wq);
	init_waitqueue_head(&s->done_wq);
	INIT_DELAYED_WORK(&s->converge, ibckpt_converge_fn);
	INIT_DELAYED_WORK(&s->watchdog, ibckpt_watchdog_fn);
	s->started = ktime_get_ns();
	s->deadline = jiffies + msecs_to_jiffies(timeout_ms);

	mutex_lock(&ibckpt_sessions_lock);
	old = ibckpt_session_find(pgrp);
	if (old && READ_ONCE(old->state) != IBCKPT_STATE_ABORTED) {
		mutex_unlock(&ibckpt_sessions_lock);
		ibckpt_session_put(s);
		*why = "the process group is already frozen";
		return -EBUSY;
	}
	if (old)	/* an aborted attempt, kept for its report: replace it */
		list_del(&old->node);
	list_add_tail(&s->node, &ibckpt_sessions);
	*id = s->id;
	ibckpt_quiesce_begin(s);
	queue_delayed_work(system_wq, &s->converge, 0);
	if (flags & IBCKPT_FREEZE_F_PERSIST)
		queue_delayed_work(system_wq, &s->watchdog, msecs_to_jiffies(watchdog_ms));
	mutex_unlock(&ibckpt_sessions_lock);
	if (old)
		ibckpt_session_end(old, false);
	return 0;
}

/**
 * ibckpt_session_thaw() - release a frozen (or freezing, or aborted) group
 * @pgid: the group, in the caller's pid namespace
 * @why: set to a message for the requester on error
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_session_thaw(u32 pgid, const char **why)
{
	struct ibckpt_session *s;
	struct pid *pgrp;

	rcu_read_lock();
	pgrp = get_pid(find_vpid(pgid));
	rcu_read_unlock();
	mutex_lock(&ibckpt_sessions_lock);
	s = pgrp ? ibckpt_session_find(pgrp) : NULL;
	if (s)
		list_del(&s->node);
	mutex_unlock(&ibckpt_sessions_lock);
	put_pid(pgrp);
	if (!s) {
		*why = pgrp ? "the process group is not frozen" : "no such process group";
		return pgrp ? -ENOENT : -ESRCH;
	}
	ibckpt_session_end(s, false);
	return 0;
}

/* The netlink socket that owns a freeze was closed: thaw what it owned. */
static int ibckpt_netlink_notify(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;
	struct ibckpt_session *s, *tmp;
	LIST_HEAD(ended);

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC ||
	    !net_eq(n->net, &init_net) || !n->portid)
		return NOTIFY_DONE;
	mutex_lock(&ibckpt_sessions_lock);
	list_for_each_entry_safe(s, tmp, &ibckpt_sessions, node)
		if (s->owner_portid == n->portid)
			list_move_tail(&s->node, &ended);
	mutex_unlock(&ibckpt_sessions_lock);
	list_for_each_entry_safe(s, tmp, &ended, node) {
		list_del(&s->node);
		pr_info("ibckpt: session %llu: its owner went away, thawing\n", s->id);
		ibckpt_session_end(s, false);
	}
	return NOTIFY_DONE;
}

static struct notifier_block ibckpt_netlink_nb = {
	.notifier_call = ibckpt_netlink_notify,
};

/**
 * ibckpt_sessions_init() - watch for owners of freezes going away
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_sessions_init(void)
{
	return netlink_register_notifier(&ibckpt_netlink_nb);
}

/**
 * ibckpt_sessions_exit() - thaw everything, wait for every park work
 *
 * Context: the genl family is already unregistered, so no session starts.
 */
void ibckpt_sessions_exit(void)
{
	struct ibckpt_session *s, *tmp;
	LIST_HEAD(ended);

	netlink_unregister_notifier(&ibckpt_netlink_nb);
	mutex_lock(&ibckpt_sessions_lock);
	list_splice_init(&ibckpt_sessions, &ended);
	mutex_unlock(&ibckpt_sessions_lock);
	list_for_each_entry_safe(s, tmp, &ended, node) {
		list_del(&s->node);
		ibckpt_session_end(s, false);
	}
	ibckpt_parks_wait_idle();
}
