// SPDX-License-Identifier: GPL-2.0
/*
 * Freeze sessions. FREEZE creates a session for a job (job.c); a work item
 * scans the job (scan.c) and queues a park work (park.c) on every
 * application thread no session holds yet. The job is FROZEN when a scan
 * that started while no known thread was on its way to park finds no new
 * thread: every thread known then was parked or gone, so whatever it
 * created before parking was already visible to that scan, and a parked
 * thread creates nothing. A freeze that does not converge before its
 * deadline is ABORTED and every thread released.
 *
 * While FROZEN the job is rescanned now and then: a process that joins it
 * (moved into the cgroup, put into the group, created by an exempt control
 * thread) makes it FREEZING again until that process is parked too.
 *
 * Control threads registered through /dev/ibckpt are never parked here; the
 * providers they run are asked to quiesce before any thread is parked
 * (quiesce.c).
 *
 * A session ends on THAW, when the netlink socket that asked for it is closed
 * (unless it is persistent), when a persistent session's watchdog fires, when
 * a new freeze of its job replaces it after an abort, or at module exit.
 * Ending releases the parked threads and returns: a THAW request runs under
 * genl's cb_lock (read), the socket's release under the netlink notifier
 * chain's lock, and neither may wait for threads to be scheduled. A work
 * item (ibckpt_session_end_fn()) waits, bounded, for the threads to leave
 * their parks and only then unlists the session: until then it is listed,
 * THAWING, to SESSION_GET by id, which is how the CLI learns that the job
 * runs again. A lookup by job, and THAW, no longer see it (state.c,
 * ibckpt_session_visible()).
 */
#include <linux/cred.h>
#include <linux/jiffies.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <net/net_namespace.h>
#include <asm/syscall.h>

#include "ibckpt.h"
#include "registry.h"
#include "session.h"

struct workqueue_struct *ibckpt_wq;
LIST_HEAD(ibckpt_sessions);
DEFINE_MUTEX(ibckpt_sessions_lock);	/* protects ibckpt_sessions */

static atomic64_t ibckpt_session_ids = ATOMIC64_INIT(0);

/* How often a frozen job is looked at again for newcomers. */
#define IBCKPT_RESCAN_FROZEN	(HZ / 10)
/* How long an ending session waits for its threads to leave their parks. */
#define IBCKPT_THAW_WAIT	(10 * HZ)

static void ibckpt_session_free(struct kref *ref)
{
	struct ibckpt_session *s = container_of(ref, struct ibckpt_session, ref);
	struct ibckpt_thread *thr, *tmp;
	struct ibckpt_member *m;
	struct hlist_node *n;
	int bkt;

	list_for_each_entry_safe(thr, tmp, &s->threads, node) {
		ibckpt_thread_unclaim(thr);
		put_pid(thr->pid);
		kfree_rcu(thr, rcu);
	}
	hash_for_each_safe(s->members, bkt, n, m, node) {
		put_pid(m->tgid);
		kfree(m);
	}
	ibckpt_job_release(&s->job);
	put_pid(s->requester);
	if (s->cred)
		put_cred(s->cred);
	put_pid(s->q.err_pid);
	kfree_rcu(s, rcu);
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
 * ibckpt_session_knows() - did the session find this process in its job before
 * @proc: a thread group leader
 * @arg: the session
 *
 * Context: rcu_read_lock() held.
 * Return: true if it is one of the session's members.
 */
bool ibckpt_session_knows(struct task_struct *proc, void *arg)
{
	struct ibckpt_session *s = arg;
	struct pid *tgid = task_tgid(proc);
	struct ibckpt_member *m;

	hash_for_each_possible_rcu(s->members, m, node, (unsigned long)tgid)
		if (m->tgid == tgid)
			return true;
	return false;
}

/*
 * Remember a process of the job (a tree job follows it wherever it is
 * re-parented). Return: 0 or -ENOMEM.
 */
static int ibckpt_session_remember(struct ibckpt_session *s, struct pid *tgid)
{
	struct ibckpt_member *m, *cur;
	bool dup = false;

	rcu_read_lock();
	hash_for_each_possible_rcu(s->members, cur, node, (unsigned long)tgid)
		dup |= cur->tgid == tgid;
	rcu_read_unlock();
	if (dup)
		return 0;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->tgid = get_pid(tgid);
	spin_lock(&s->lock);
	hash_for_each_possible(s->members, cur, node, (unsigned long)tgid)
		dup |= cur->tgid == tgid;
	if (!dup) {
		hash_add_rcu(s->members, &m->node, (unsigned long)tgid);
		s->nprocs++;
		ibckpt_session_changed(s);
	}
	spin_unlock(&s->lock);
	if (dup) {
		put_pid(m->tgid);
		kfree(m);
	}
	return 0;
}

/**
 * ibckpt_session_covers() - is a process part of the session's job
 * @s: the session
 * @proc: a thread group leader
 *
 * Context: rcu_read_lock() held.
 * Return: true if it is (the requester and init never are).
 */
bool ibckpt_session_covers(struct ibckpt_session *s, struct task_struct *proc)
{
	if (is_global_init(proc) || task_tgid(proc) == s->requester)
		return false;
	return ibckpt_job_has(&s->job, proc, ibckpt_session_knows, s);
}

/**
 * ibckpt_may_freeze() - may a requester freeze (and read) a process
 * @cred: the requester's credentials
 * @admin: the requester has CAP_SYS_ADMIN
 * @proc: the process (thread group leader)
 *
 * CAP_CHECKPOINT_RESTORE is meant to be handed to checkpoint tools that are
 * not root; alone it must not stop other users' processes or read their
 * RDMA keys. Such a requester may freeze a process only when ptrace's own
 * credential rule would let it attach: the process's real, effective and
 * saved user and group ids are all the requester's real ones, and the
 * process is dumpable. (ptrace_may_access() and the LSM hooks behind it are
 * not exported to modules: Yama, SELinux and AppArmor are not asked.)
 *
 * Context: rcu_read_lock() held.
 * Return: true if it may.
 */
bool ibckpt_may_freeze(const struct cred *cred, bool admin, struct task_struct *proc)
{
	const struct cred *tc;
	struct task_struct *t;
	bool dumpable = false;

	if (admin)
		return true;
	tc = __task_cred(proc);
	if (!uid_eq(cred->uid, tc->euid) || !uid_eq(cred->uid, tc->suid) ||
	    !uid_eq(cred->uid, tc->uid) || !gid_eq(cred->gid, tc->egid) ||
	    !gid_eq(cred->gid, tc->sgid) || !gid_eq(cred->gid, tc->gid))
		return false;
	/* a zombie has nothing left to freeze or to read */
	if (proc->exit_state)
		return true;
	/* the leader may have exited alone: any thread with the mm tells */
	for_each_thread(proc, t) {
		task_lock(t);
		if (t->mm) {
			dumpable = get_dumpable(t->mm) == SUID_DUMP_USER;
			task_unlock(t);
			break;
		}
		task_unlock(t);
	}
	return dumpable;
}

/**
 * ibckpt_session_find_id() - the listed session with an id
 * @id: the id
 *
 * Context: ibckpt_sessions_lock held.
 * Return: the session or NULL.
 */
struct ibckpt_session *ibckpt_session_find_id(u64 id)
{
	struct ibckpt_session *s;

	lockdep_assert_held(&ibckpt_sessions_lock);
	list_for_each_entry(s, &ibckpt_sessions, node)
		if (s->id == id)
			return s;
	return NULL;
}

/* The live session of a job (an ending one is not its job's any more). */
static struct ibckpt_session *ibckpt_session_find_job(const struct ibckpt_job *job)
{
	struct ibckpt_session *s;

	lockdep_assert_held(&ibckpt_sessions_lock);
	list_for_each_entry(s, &ibckpt_sessions, node)
		if (ibckpt_session_visible(IBCKPT_LOOKUP_JOB, s->ending) &&
		    ibckpt_job_same(&s->job, job))
			return s;
	return NULL;
}

/*
 * The listed session @sel names, for @how (IBCKPT_LOOKUP_ID to read it,
 * IBCKPT_LOOKUP_END to end it); with ibckpt_sessions_lock held. Return: the
 * session, or an ERR_PTR: -ESRCH if the job does not exist, -ENOENT if it
 * is not frozen.
 */
static struct ibckpt_session *ibckpt_session_lookup(const struct ibckpt_sel *sel,
						    enum ibckpt_lookup how, const char **why)
{
	struct ibckpt_session *s;
	struct ibckpt_job job;
	int ret;

	lockdep_assert_held(&ibckpt_sessions_lock);
	if (sel->id) {
		s = ibckpt_session_find_id(sel->id);
		if (s && !ibckpt_session_visible(how, s->ending))
			s = NULL;
		if (!s)
			*why = "no such freeze session";
		return s ? s : ERR_PTR(-ENOENT);
	}
	if (!sel->type) {
		*why = "a job or a session id is required";
		return ERR_PTR(-EINVAL);
	}
	ret = ibckpt_job_resolve(&job, sel->type, sel->job_id, sel->cgroup_fd, why);
	if (ret)
		return ERR_PTR(ret);
	s = ibckpt_session_find_job(&job);
	ibckpt_job_release(&job);
	if (!s)
		*why = "the job is not frozen";
	return s ? s : ERR_PTR(-ENOENT);
}

/**
 * ibckpt_session_get() - a reference to the session a request names
 * @sel: by id, or by its job
 * @why: set to a message for the requester on error
 *
 * By id, an ending session is found too (the CLI waits for it to go); by
 * job, only the job's live session.
 *
 * Return: the session (ibckpt_session_put() it), or an ERR_PTR: -EINVAL if
 * @sel names nothing, -ESRCH if the job does not exist, -ENOENT if it is
 * not frozen.
 */
struct ibckpt_session *ibckpt_session_get(const struct ibckpt_sel *sel, const char **why)
{
	struct ibckpt_session *s;

	mutex_lock(&ibckpt_sessions_lock);
	s = ibckpt_session_lookup(sel, IBCKPT_LOOKUP_ID, why);
	if (!IS_ERR(s))
		kref_get(&s->ref);
	mutex_unlock(&ibckpt_sessions_lock);
	return s;
}

/**
 * ibckpt_thread_set() - a thread of @s changes state
 * @s: the session
 * @thr: the thread
 * @st: its new state
 *
 * Context: s->lock held.
 */
void ibckpt_thread_set(struct ibckpt_session *s, struct ibckpt_thread *thr,
		       enum ibckpt_thread_state st)
{
	lockdep_assert_held(&s->lock);
	ibckpt_tally_move(&s->tally, thr->state, st);
	thr->state = st;
}

/**
 * ibckpt_thread_leave() - a thread is no longer (as good as) parked in @s
 * @s: the session
 * @thr: the thread: it left its park, never came by (released while held in
 *	vfork()), or is exiting
 * @st: IBCKPT_THREAD_RUNNING or IBCKPT_THREAD_EXITED
 *
 * Context: s->lock held.
 */
void ibckpt_thread_leave(struct ibckpt_session *s, struct ibckpt_thread *thr,
			 enum ibckpt_thread_state st)
{
	lockdep_assert_held(&s->lock);
	thr->vfork_held = false;
	if (thr->vfork_child) {
		thr->vfork_child = false;
		s->nvfork--;
	}
	ibckpt_thread_set(s, thr, st);
}

/*
 * Release the parked threads and tell the providers; @st is the state the
 * session ends in. Only the first release counts (an abort racing with a
 * thaw): Return: true if this one did it.
 */
static bool ibckpt_session_release(struct ibckpt_session *s, enum ibckpt_state st)
{
	struct ibckpt_thread *thr;

	spin_lock(&s->lock);
	if (s->released) {
		if (st == IBCKPT_STATE_THAWING)
			WRITE_ONCE(s->state, st);
		spin_unlock(&s->lock);
		return false;
	}
	WRITE_ONCE(s->state, st);
	WRITE_ONCE(s->released, true);
	ibckpt_session_changed(s);	/* its snapshots are dropped next */
	/* the threads are free for another session from now on */
	list_for_each_entry(thr, &s->threads, node) {
		ibckpt_thread_unclaim(thr);
		/* counted as parked in vfork(): released without coming by */
		if (thr->vfork_held)
			ibckpt_thread_leave(s, thr, IBCKPT_THREAD_RUNNING);
	}
	spin_unlock(&s->lock);
	wake_up_all(&s->park_wq);
	ibckpt_quiesce_end(s, st == IBCKPT_STATE_ABORTED ? IBCKPT_EV_ABORT : IBCKPT_EV_THAW);
	return true;
}

/*
 * End a listed session: release its threads, tell its providers, and leave
 * the rest to ibckpt_session_end_fn(). Returns at once: it runs in a THAW
 * request (under genl's cb_lock) and in the netlink notifier. The session
 * stays listed, THAWING, until its threads have left their parks. Return:
 * false if it was ending already.
 */
static bool ibckpt_session_end(struct ibckpt_session *s)
{
	lockdep_assert_held(&ibckpt_sessions_lock);
	if (s->ending)
		return false;
	s->ending = true;
	/* state first: neither the park works nor converge requeue after it */
	ibckpt_session_release(s, IBCKPT_STATE_THAWING);
	queue_work(ibckpt_wq, &s->end);
	return true;
}

/*
 * An ending session: wait (10 s at most: a woken thread only needs a CPU)
 * until none of its threads is parked, unlist it, stop its works and drop
 * the list's reference. Unlisted first: a provider's answer finds a session
 * by id in the list and kicks its converge work, which must stay cancelled.
 */
static void ibckpt_session_end_fn(struct work_struct *work)
{
	struct ibckpt_session *s = container_of(work, struct ibckpt_session, end);

	if (!wait_event_timeout(s->done_wq, !READ_ONCE(s->tally.parked), IBCKPT_THAW_WAIT))
		pr_warn("ibckpt: session %llu: %u threads still parked after thaw\n",
			s->id, READ_ONCE(s->tally.parked));
	mutex_lock(&ibckpt_sessions_lock);
	list_del(&s->node);
	mutex_unlock(&ibckpt_sessions_lock);
	cancel_delayed_work_sync(&s->converge);
	cancel_delayed_work_sync(&s->watchdog);
	ibckpt_session_put(s);
}

/**
 * ibckpt_session_track() - start tracking a thread and ask it to park
 * @s: the session
 * @task: a thread of the job that no session holds
 *
 * Return: 0, or -ENOMEM.
 */
int ibckpt_session_track(struct ibckpt_session *s, struct task_struct *task)
{
	struct ibckpt_thread *thr;
	int ret;

	thr = kzalloc(sizeof(*thr), GFP_KERNEL);
	if (!thr)
		return -ENOMEM;
	thr->sess = s;
	thr->pid = get_task_pid(task, PIDTYPE_PID);
	thr->state = IBCKPT_THREAD_PENDING;
	spin_lock(&s->lock);
	/* released meanwhile, or another session took it first */
	if (s->released || ibckpt_thread_claim(thr, task)) {
		spin_unlock(&s->lock);
		put_pid(thr->pid);
		kfree(thr);
		return 0;
	}
	list_add_tail(&thr->node, &s->threads);
	ibckpt_tally_add(&s->tally, IBCKPT_THREAD_PENDING);
	spin_unlock(&s->lock);

	/* its process is the job's (for a tree: wherever it goes from now on) */
	ret = ibckpt_session_remember(s, task_tgid(task));
	if (!ret)
		ret = ibckpt_park_queue(s, task, thr);
	if (ret == -ESRCH) {
		/* already past running task works: it is exiting */
		spin_lock(&s->lock);
		ibckpt_thread_set(s, thr, IBCKPT_THREAD_EXITED);
		ibckpt_thread_unclaim(thr);
		spin_unlock(&s->lock);
		ret = 0;
	}
	return ret;
}

/**
 * ibckpt_session_adopt() - keep the children of an exiting member in a
 *	tree job
 * @s: the session
 * @parent: a thread of the job that is exiting (or killed while parked):
 *	its children are about to be re-parented outside the tree
 *
 * Context: @parent is current, before exit_notify(); may sleep.
 */
void ibckpt_session_adopt(struct ibckpt_session *s, struct task_struct *parent)
{
	struct task_struct *batch[16], *p;
	unsigned int n, i;
	bool err = false;

	if (s->job.type != IBCKPT_JOB_TREE)
		return;
	do {
		n = 0;
		rcu_read_lock();
		for_each_process(p) {
			if (!same_thread_group(rcu_dereference(p->real_parent), parent) ||
			    ibckpt_session_knows(p, s))
				continue;
			if (n == ARRAY_SIZE(batch))
				break;
			get_task_struct(p);
			batch[n++] = p;
		}
		rcu_read_unlock();
		for (i = 0; i < n; i++) {
			if (!err && ibckpt_session_remember(s, task_tgid(batch[i]))) {
				/* the same children would be found again: stop */
				pr_warn("ibckpt: session %llu: out of memory keeping a child of %d\n",
					s->id, task_tgid_nr(parent));
				err = true;
			}
			put_task_struct(batch[i]);
		}
	} while (n == ARRAY_SIZE(batch) && !err);
}

/**
 * ibckpt_session_hold_vfork_parent() - count a vfork() parent as parked
 * @s: the session
 * @child: a parked thread of @s that is a vfork() child (posix_spawn(),
 *	system()) that has not exec'd or exited
 *
 * The thread that called vfork() waits for the child, uninterruptibly, and
 * cannot reach its own park before the thaw: it is as good as parked, and
 * counted so, or the freeze would never converge. When it does come by (the
 * child was killed, or after the thaw) its park work parks it for real or
 * lets it go. The parent is tracked later than the child when the walk
 * meets the child first, so converge tries again for every such child.
 *
 * The waiting thread is the child's real parent unless CLONE_PARENT or
 * CLONE_THREAD made it the caller's parent: it must share the child's mm
 * and be another process.
 *
 * Context: s->lock held.
 */
void ibckpt_session_hold_vfork_parent(struct ibckpt_session *s, struct ibckpt_thread *child)
{
	struct task_struct *c = child->task, *parent;
	struct ibckpt_thread *pt;
	struct pt_regs *regs;

	lockdep_assert_held(&s->lock);
	rcu_read_lock();
	parent = rcu_dereference(c->real_parent);
	pt = ibckpt_thread_lookup(parent);
	if (pt && pt->sess == s && pt->state == IBCKPT_THREAD_PENDING &&
	    READ_ONCE(parent->mm) == READ_ONCE(c->mm) && !same_thread_group(parent, c)) {
		regs = task_pt_regs(parent);
		pt->user_ip = instruction_pointer(regs);
		pt->syscall = syscall_get_nr(parent, regs) + 1;
		pt->vfork_held = true;
		ibckpt_thread_set(s, pt, IBCKPT_THREAD_PARKED);
	}
	rcu_read_unlock();
}

/* Parents of parked vfork() children tracked after them (see above). */
static void ibckpt_session_hold_vfork_parents(struct ibckpt_session *s)
{
	struct ibckpt_thread *thr;

	lockdep_assert_held(&s->lock);
	if (!s->nvfork)
		return;
	list_for_each_entry(thr, &s->threads, node)
		if (thr->vfork_child && thr->state == IBCKPT_THREAD_PARKED &&
		    !hlist_unhashed(&thr->hnode))
			ibckpt_session_hold_vfork_parent(s, thr);
}

/* Converge ran into a failure: abort, unless the session ended meanwhile. */
static void ibckpt_session_abort(struct ibckpt_session *s)
{
	ibckpt_session_release(s, IBCKPT_STATE_ABORTED);
}

static void ibckpt_converge_fn(struct work_struct *work)
{
	struct ibckpt_session *s = container_of(to_delayed_work(work),
						struct ibckpt_session, converge);
	enum ibckpt_state st, cur;
	bool waiting, failed, calm, late;
	int found;

	ibckpt_quiesce_ask(s);	/* providers of the job not asked yet */
	spin_lock(&s->lock);
	st = s->state;
	if (st != IBCKPT_STATE_FREEZING && st != IBCKPT_STATE_FROZEN) {
		spin_unlock(&s->lock);
		return;
	}
	/* Park nothing until every provider has closed its gate (quiesce.c). */
	waiting = s->q.answered < s->q.providers;
	failed = s->q.err != 0;
	if (waiting && st == IBCKPT_STATE_FROZEN) {
		/* a newcomer's provider: freezing again until it is quiesced */
		WRITE_ONCE(s->state, IBCKPT_STATE_FREEZING);
		s->deadline = jiffies + s->timeout;
	}
	late = time_after(jiffies, s->deadline);
	ibckpt_session_hold_vfork_parents(s);
	/* sampled before the scan: see the comment at the top */
	calm = !s->tally.pending;
	spin_unlock(&s->lock);
	if (failed || (waiting && late)) {
		ibckpt_session_abort(s);
		return;
	}
	if (waiting) {
		/* an answer kicks us; look again now and then for the deadline */
		queue_delayed_work(ibckpt_wq, &s->converge, HZ / 20 + 1);
		return;
	}

	found = ibckpt_session_scan(s);
	spin_lock(&s->lock);
	cur = s->state;
	if (cur != IBCKPT_STATE_FREEZING && cur != IBCKPT_STATE_FROZEN) {
		spin_unlock(&s->lock);	/* ended meanwhile */
		return;
	}
	if (found < 0)		/* out of memory: give up the freeze */
		st = IBCKPT_STATE_ABORTED;
	else if (cur == IBCKPT_STATE_FROZEN)	/* found: somebody joined the job */
		st = found ? IBCKPT_STATE_FREEZING : cur;
	else
		st = ibckpt_converge(cur, calm, found, time_after(jiffies, s->deadline));
	if (st == IBCKPT_STATE_FREEZING && cur == IBCKPT_STATE_FROZEN)
		s->deadline = jiffies + s->timeout;
	if (st == IBCKPT_STATE_FROZEN && !s->freeze_ns)
		s->freeze_ns = ktime_get_ns() - s->started;
	if (st != IBCKPT_STATE_ABORTED) {
		WRITE_ONCE(s->state, st);
		queue_delayed_work(ibckpt_wq, &s->converge,
				   st == IBCKPT_STATE_FROZEN ? IBCKPT_RESCAN_FROZEN : 1);
	}
	spin_unlock(&s->lock);
	if (st == IBCKPT_STATE_ABORTED)
		ibckpt_session_abort(s);
}

static void ibckpt_watchdog_fn(struct work_struct *work)
{
	struct ibckpt_session *s = container_of(to_delayed_work(work),
						struct ibckpt_session, watchdog);

	/* listed until its end work is done, which cancels this one first */
	mutex_lock(&ibckpt_sessions_lock);
	if (ibckpt_session_end(s))
		pr_info("ibckpt: session %llu: watchdog expired, thawing\n", s->id);
	mutex_unlock(&ibckpt_sessions_lock);
}

/**
 * struct ibckpt_check - what a new job may not contain
 * @s: the new session
 * @busy: the first process another live session holds, and that session
 * @err: the verdict, 0 if nothing was found
 * @why: its message
 */
struct ibckpt_check {
	struct ibckpt_session *s;
	struct ibckpt_busy *busy;
	int err;
	const char *why;
};

/*
 * Under RCU and ibckpt_sessions_lock: stop at init, the requester, another
 * user's process, or a process held elsewhere.
 */
static bool ibckpt_check_visit(struct task_struct *p, void *arg)
{
	struct ibckpt_check *c = arg;
	struct ibckpt_session *holder;
	struct task_struct *t;

	if (is_global_init(p)) {
		c->err = -EPERM;
		c->why = "the job contains PID 1 (init)";
		return false;
	}
	if (task_tgid(p) == c->s->requester) {
		c->err = -EDEADLK;
		c->why = "the job contains the requester itself";
		return false;
	}
	if (!ibckpt_may_freeze(c->s->cred, c->s->admin, p)) {
		c->err = -EACCES;
		c->why = "the job has another user's process: needs CAP_SYS_ADMIN";
		return false;
	}
	for_each_thread(p, t) {
		holder = ibckpt_thread_holder(t);
		if (holder && !READ_ONCE(holder->released))
			goto busy;
	}
	/* a session that has not claimed it yet (still asking its providers) */
	list_for_each_entry(holder, &ibckpt_sessions, node)
		if (!READ_ONCE(holder->released) && ibckpt_session_covers(holder, p))
			goto busy;
	return true;
busy:
	c->err = -EBUSY;
	c->why = "a process of the job is frozen by another session";
	c->busy->pid = task_tgid_vnr(p);
	c->busy->session = holder->id;
	return false;
}

/*
 * A provider of the job that another session asked to quiesce belongs to
 * that session even before any of its threads is claimed.
 */
static void ibckpt_check_providers(struct ibckpt_check *c)
{
	struct ibckpt_proc *p;
	struct task_struct *t;

	mutex_lock(&ibckpt_procs_lock);
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (!p->quiesce_session)
			continue;
		rcu_read_lock();
		t = pid_task(p->tgid, PIDTYPE_TGID);
		if (t && ibckpt_session_covers(c->s, t)) {
			c->err = -EBUSY;
			c->why = "a process of the job is frozen by another session";
			c->busy->pid = task_tgid_vnr(t);
			c->busy->session = p->quiesce_session;
		}
		rcu_read_unlock();
		if (c->err)
			break;
	}
	mutex_unlock(&ibckpt_procs_lock);
}

static struct ibckpt_session *ibckpt_session_new(const struct ibckpt_freeze_req *req,
						 const char **why, int *err)
{
	struct ibckpt_session *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = ibckpt_job_resolve(&s->job, req->sel.type, req->sel.job_id,
				  req->sel.cgroup_fd, why);
	if (*err) {
		kfree(s);
		return NULL;
	}
	kref_init(&s->ref);
	s->id = atomic64_inc_return(&ibckpt_session_ids);
	s->requester = get_task_pid(current, PIDTYPE_TGID);
	s->cred = get_current_cred();
	s->admin = req->admin;
	s->flags = req->flags;
	s->owner_portid = req->flags & IBCKPT_FREEZE_F_PERSIST ? 0 : req->portid;
	spin_lock_init(&s->lock);
	s->state = IBCKPT_STATE_FREEZING;
	INIT_LIST_HEAD(&s->threads);
	hash_init(s->members);
	init_waitqueue_head(&s->park_wq);
	init_waitqueue_head(&s->done_wq);
	INIT_DELAYED_WORK(&s->converge, ibckpt_converge_fn);
	INIT_DELAYED_WORK(&s->watchdog, ibckpt_watchdog_fn);
	INIT_WORK(&s->end, ibckpt_session_end_fn);
	s->started = ktime_get_ns();
	s->timeout = msecs_to_jiffies(req->timeout_ms);
	s->deadline = jiffies + s->timeout;
	/* a tree's root is its first member: it stays one after it exits */
	if (s->job.type == IBCKPT_JOB_TREE) {
		*err = ibckpt_session_remember(s, s->job.pid);
		if (*err) {
			ibckpt_session_put(s);
			return NULL;
		}
	}
	return s;
}

/**
 * ibckpt_session_freeze() - start freezing a job
 * @req: the job and how to freeze it
 * @id: set to the new session's id
 * @busy: set, with -EBUSY, to a process of the job another session holds
 * @why: set to a message for the requester on error
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_session_freeze(const struct ibckpt_freeze_req *req, u64 *id,
			  struct ibckpt_busy *busy, const char **why)
{
	struct ibckpt_session *s, *old = NULL;
	struct ibckpt_check c = { .busy = busy };
	int ret;

	ret = ibckpt_freeze_args_check(req->timeout_ms, req->flags, req->watchdog_ms, why);
	if (ret)
		return ret;
	s = ibckpt_session_new(req, why, &ret);
	if (!s)
		return ret;

	mutex_lock(&ibckpt_sessions_lock);
	old = ibckpt_session_find_job(&s->job);
	if (old && READ_ONCE(old->state) != IBCKPT_STATE_ABORTED) {
		mutex_unlock(&ibckpt_sessions_lock);
		ibckpt_session_put(s);
		*why = "the job is already frozen";
		busy->session = old->id;
		return -EBUSY;
	}
	c.s = s;
	ibckpt_job_walk(&s->job, ibckpt_session_knows, s, ibckpt_check_visit, &c);
	if (!c.err)
		ibckpt_check_providers(&c);
	if (c.err) {
		mutex_unlock(&ibckpt_sessions_lock);
		ibckpt_session_put(s);
		*why = c.why;
		return c.err;
	}
	if (old)	/* an aborted attempt, kept for its report: replace it */
		ibckpt_session_end(old);
	list_add_tail(&s->node, &ibckpt_sessions);
	*id = s->id;
	queue_delayed_work(ibckpt_wq, &s->converge, 0);
	if (req->flags & IBCKPT_FREEZE_F_PERSIST)
		queue_delayed_work(ibckpt_wq, &s->watchdog, msecs_to_jiffies(req->watchdog_ms));
	mutex_unlock(&ibckpt_sessions_lock);
	return 0;
}

/**
 * ibckpt_session_thaw() - release a frozen (or freezing, or aborted) job
 * @sel: the session, by id or by its job
 * @id: set to the session's id
 * @why: set to a message for the requester on error
 *
 * Returns once the threads are released, without waiting for them to run:
 * the session stays listed (THAWING, to SESSION_GET by @id) until none is
 * parked any more. A session that is ending already is not found.
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_session_thaw(const struct ibckpt_sel *sel, u64 *id, const char **why)
{
	struct ibckpt_session *s;

	mutex_lock(&ibckpt_sessions_lock);
	s = ibckpt_session_lookup(sel, IBCKPT_LOOKUP_END, why);
	if (!IS_ERR(s)) {
		*id = s->id;
		ibckpt_session_end(s);
	}
	mutex_unlock(&ibckpt_sessions_lock);
	return PTR_ERR_OR_ZERO(s);
}

/* The netlink socket that owns a freeze was closed: thaw what it owned. */
static int ibckpt_netlink_notify(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;
	struct ibckpt_session *s;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC ||
	    !net_eq(n->net, &init_net) || !n->portid)
		return NOTIFY_DONE;
	/* the closing socket's release must not wait for the threads either */
	mutex_lock(&ibckpt_sessions_lock);
	list_for_each_entry(s, &ibckpt_sessions, node)
		if (s->owner_portid == n->portid && ibckpt_session_end(s))
			pr_info("ibckpt: session %llu: its owner went away, thawing\n", s->id);
	mutex_unlock(&ibckpt_sessions_lock);
	return NOTIFY_DONE;
}

static struct notifier_block ibckpt_netlink_nb = {
	.notifier_call = ibckpt_netlink_notify,
};

/**
 * ibckpt_sessions_init() - the sessions' workqueue; watch for owners of
 *	freezes going away
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_sessions_init(void)
{
	int ret;

	/*
	 * Module-private: an ending session's work may still be waiting for
	 * its threads when the module goes; destroying the queue at exit waits
	 * for it, which system_wq would not.
	 */
	ibckpt_wq = alloc_workqueue("ibckpt", WQ_UNBOUND, 0);
	if (!ibckpt_wq)
		return -ENOMEM;
	ret = netlink_register_notifier(&ibckpt_netlink_nb);
	if (ret)
		destroy_workqueue(ibckpt_wq);
	return ret;
}

/**
 * ibckpt_sessions_exit() - thaw everything, wait for every park work
 *
 * Context: the genl family is already unregistered, so no session starts.
 */
void ibckpt_sessions_exit(void)
{
	struct ibckpt_session *s;

	netlink_unregister_notifier(&ibckpt_netlink_nb);
	mutex_lock(&ibckpt_sessions_lock);
	list_for_each_entry(s, &ibckpt_sessions, node)
		ibckpt_session_end(s);
	mutex_unlock(&ibckpt_sessions_lock);
	/*
	 * Every session's end work is queued now (a watchdog ends its session
	 * under the lock, and finds it ending). Flushed, not drained: until
	 * an end work has cancelled its session's delayed works, their timers
	 * may still fire, and a draining queue refuses (and warns about) work
	 * queued from a timer.
	 */
	flush_workqueue(ibckpt_wq);
	WARN_ON(!list_empty(&ibckpt_sessions));
	destroy_workqueue(ibckpt_wq);
	ibckpt_parks_wait_idle();
}
