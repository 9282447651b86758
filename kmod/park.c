// SPDX-License-Identifier: GPL-2.0
/*
 * Parking a thread: a task_work queued with TWA_SIGNAL runs in the thread's
 * own context at its next return to user space (a blocked interruptible
 * system call is interrupted for it, and restarted afterwards by the signal
 * code as if nothing happened). There, holding no kernel lock, the thread
 * sleeps until its session releases it.
 *
 * The sleep is killable (SIGKILL still kills a frozen process), does not
 * count as load, and is freezable (suspend and hibernation are not blocked).
 *
 * A queued task_work cannot be withdrawn by a module, so a work outlives any
 * decision to stop freezing: the callback checks the session first, and the
 * module waits for every queued work to have run before it goes away.
 */
#include <linux/compat.h>
#include <linux/freezer.h>
#include <linux/module.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/unistd.h>
#include <asm/seccomp.h>	/* __NR_seccomp_exit_32: exit() of a compat task */
#include <asm/syscall.h>

#include "session.h"

/**
 * struct ibckpt_park - one queued park request
 * @cb: the task_work
 * @sess: its session (a reference is held)
 * @thr: the thread's entry in the session
 */
struct ibckpt_park {
	struct callback_head cb;
	struct ibckpt_session *sess;
	struct ibckpt_thread *thr;
};

/* Park works queued and not yet finished; module exit waits for zero. */
static atomic_t ibckpt_parks = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(ibckpt_parks_wq);

/*
 * The thread is on its way out: it no longer counts for the session, and
 * in a tree job the children it is about to leave behind stay in the job.
 * Before the state changes, so that a scan that starts once nothing is
 * pending sees the children as members. It leaves the table of claimed
 * threads here only if PF_EXITING already keeps scans off it. Otherwise
 * (killed, or in do_exit() before exit_signals()) it stays claimed until
 * the session releases its threads: a scan would take it for a newcomer,
 * and count it again when that new work runs from exit_task_work().
 */
static void ibckpt_park_exited(struct ibckpt_session *s, struct ibckpt_thread *thr)
{
	if (!READ_ONCE(s->released))
		ibckpt_session_adopt(s, current);
	spin_lock(&s->lock);
	ibckpt_thread_leave(s, thr, IBCKPT_THREAD_EXITED);
	if (current->flags & PF_EXITING)
		ibckpt_thread_unclaim(thr);
	if (!s->tally.pending && s->state == IBCKPT_STATE_FREEZING)
		mod_delayed_work(ibckpt_wq, &s->converge, 0);
	spin_unlock(&s->lock);
}

/*
 * current's thread group is on its way out: exit_group(), the last thread's
 * exit(), a fatal signal or a core dump (SIGNAL_GROUP_EXIT), or another
 * thread's exec, which kills this one (group_exec_task). 6.1 has no
 * signal_group_exit() any more; get_signal() tests these two fields.
 */
static bool ibckpt_group_exiting(void)
{
	struct signal_struct *sig = current->signal;

	return (READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT) || READ_ONCE(sig->group_exec_task);
}

/* The number of exit() in current's system call ABI. */
static int ibckpt_exit_nr(void)
{
#ifdef __NR_seccomp_exit_32
	if (in_compat_syscall())
		return __NR_seccomp_exit_32;
#endif
	return __NR_exit;
}

static void ibckpt_park_fn(struct callback_head *cb)
{
	struct ibckpt_park *pk = container_of(cb, struct ibckpt_park, cb);
	struct ibckpt_session *s = pk->sess;
	struct ibckpt_thread *thr = pk->thr;
	struct pt_regs *regs = task_pt_regs(current);
	bool killed;

	/*
	 * Running now: from here module exit waits for this callback itself
	 * (ibckpt_parks), no longer for the thread to come by.
	 */
	module_put(THIS_MODULE);

	/*
	 * Exiting: the work runs from exit_task_work() too, and from do_exit()
	 * before PF_EXITING is set (ptrace's exit event, io_uring's cancel).
	 */
	if (ibckpt_exiting(current->flags & PF_EXITING, ibckpt_group_exiting(),
			   syscall_get_nr(current, regs), ibckpt_exit_nr())) {
		ibckpt_park_exited(s, thr);
		goto out;
	}
	spin_lock(&s->lock);
	if (s->released) {
		ibckpt_thread_leave(s, thr, IBCKPT_THREAD_RUNNING);
		spin_unlock(&s->lock);
		goto out;
	}
	thr->vfork_held = false;	/* it came by: from here it parks itself */
	thr->user_ip = instruction_pointer(regs);
	thr->syscall = syscall_get_nr(current, regs) + 1;
	ibckpt_thread_set(s, thr, IBCKPT_THREAD_PARKED);
	if (current->vfork_done) {
		/* its parent waits for it: see ibckpt_session_hold_vfork_parent() */
		thr->vfork_child = true;
		s->nvfork++;
		ibckpt_session_hold_vfork_parent(s, thr);
	}
	/*
	 * The last one to park lets the session converge now rather than at
	 * its next scan. Only while FREEZING: an ending session has set its
	 * state, under this lock, before it cancels the work.
	 */
	if (!s->tally.pending && s->state == IBCKPT_STATE_FREEZING)
		mod_delayed_work(ibckpt_wq, &s->converge, 0);
	spin_unlock(&s->lock);

	___wait_event(s->park_wq, READ_ONCE(s->released) || fatal_signal_pending(current),
		      (TASK_KILLABLE | TASK_NOLOAD | TASK_FREEZABLE), 0, 0, schedule());

	killed = fatal_signal_pending(current);
	if (killed) {
		ibckpt_park_exited(s, thr);
	} else {
		spin_lock(&s->lock);
		ibckpt_thread_leave(s, thr, IBCKPT_THREAD_RUNNING);
		spin_unlock(&s->lock);
	}
	wake_up_all(&s->done_wq);
out:
	ibckpt_session_put(s);
	kfree(pk);
	if (atomic_dec_and_test(&ibckpt_parks))
		wake_up_all(&ibckpt_parks_wq);
}

/**
 * ibckpt_park_queue() - ask a thread to park in a session
 * @s: the session
 * @task: the thread
 * @thr: its entry in @s, state PENDING
 *
 * Return: 0, -ESRCH if the thread is past the point where it runs task
 * works (it is exiting), -ENODEV if the module is going, or -ENOMEM.
 */
int ibckpt_park_queue(struct ibckpt_session *s, struct task_struct *task,
		      struct ibckpt_thread *thr)
{
	struct ibckpt_park *pk;
	int ret;

	pk = kzalloc(sizeof(*pk), GFP_KERNEL);
	if (!pk)
		return -ENOMEM;
	kref_get(&s->ref);
	pk->sess = s;
	pk->thr = thr;
	init_task_work(&pk->cb, ibckpt_park_fn);
	atomic_inc(&ibckpt_parks);
	/*
	 * A queued work cannot be withdrawn, and its thread may not come by
	 * for a long time (stopped, traced, in an uninterruptible sleep): it
	 * pins the module, so that rmmod fails (EWOULDBLOCK, "in use") instead
	 * of waiting uninterruptibly in module exit for that thread. Once the
	 * module is going, nothing new is queued.
	 */
	if (!try_module_get(THIS_MODULE)) {
		ret = -ENODEV;
		goto undo;
	}
	ret = task_work_add(task, &pk->cb, TWA_SIGNAL);
	if (!ret)
		return 0;
	module_put(THIS_MODULE);
undo:
	ibckpt_session_put(s);
	kfree(pk);
	if (atomic_dec_and_test(&ibckpt_parks))
		wake_up_all(&ibckpt_parks_wq);
	return ret;
}

/**
 * ibckpt_parks_wait_idle() - wait until every park callback has returned
 *
 * Called at module exit after every session was released. A work that has
 * not started yet holds a module reference and none is queued once the
 * module is going, so there is none at exit: only callbacks that are
 * running (parked threads, woken by the release) are waited for.
 * synchronize_rcu_tasks() afterwards covers the last instructions of the
 * callbacks, which run after the count dropped.
 */
void ibckpt_parks_wait_idle(void)
{
	wait_event(ibckpt_parks_wq, !atomic_read(&ibckpt_parks));
	synchronize_rcu_tasks();
}
