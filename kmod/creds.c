// SPDX-License-Identifier: GPL-2.0
/*
 * IBCKPT_IOC_SHARE_CREDS: the threads of a process use one credentials
 * object again.
 *
 * uverbs' legacy write() path refuses a writer whose current_cred() is not
 * the very object the device file was opened with (ib_safe_file_access()
 * compares pointers). Threads share their creator's object, so that never
 * matters, until a CRIU restore: its restorer calls capset() and
 * prctl(PR_SET_SECUREBITS) in every thread, and each commits a new object
 * even when nothing changes. A device the control thread reopens afterwards
 * would then refuse every other thread's write()-based verb with EACCES.
 *
 * The kernel lets a task change only its own credentials, so each thread
 * whose credentials are identical in content to the control thread's is
 * given a task_work that commits the control thread's object from the
 * thread itself. Identical means every field (ibckpt_creds_same()): nothing
 * any thread may do changes, only the identity ib_safe_file_access() looks
 * at.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/task_work.h>
#include <linux/uidgid.h>

#include "uapi/linux/ibckpt.h"
#include "creds.h"

/**
 * struct ibckpt_creds_work - one thread's queued switch
 * @cb: the task_work
 * @target: the object to take (the caller's; a reference is held)
 */
struct ibckpt_creds_work {
	struct callback_head cb;
	const struct cred *target;
};

/* A work was queued once: module exit must wait for the callbacks' ends. */
static bool ibckpt_creds_used;

static bool ibckpt_caps_eq(const kernel_cap_t a, const kernel_cap_t b)
{
	return cap_issubset(a, b) && cap_issubset(b, a);
}

/* Supplementary groups: the same object, or the same sorted list. */
static bool ibckpt_groups_same(const struct group_info *a, const struct group_info *b)
{
	int i;

	if (a == b)
		return true;
	if (!a || !b || a->ngroups != b->ngroups)
		return false;
	for (i = 0; i < a->ngroups; i++)
		if (!gid_eq(a->gid[i], b->gid[i]))
			return false;
	return true;
}

static bool ibckpt_keys_same(const struct cred *a, const struct cred *b)
{
#ifdef CONFIG_KEYS
	/* a thread keyring is the thread's own: both NULL or the same one */
	return a->jit_keyring == b->jit_keyring &&
	       a->session_keyring == b->session_keyring &&
	       a->process_keyring == b->process_keyring &&
	       a->thread_keyring == b->thread_keyring &&
	       a->request_key_auth == b->request_key_auth;
#else
	return true;
#endif
}

/*
 * The LSMs' blob, byte for byte, besides the secid: some LSM state is not in
 * the secid (Landlock's domain, SELinux's exec/create/sockcreate contexts).
 * The blob is kzalloc()ed with the LSMs' total size, so both are at least
 * that long and whatever follows it up to the shorter ksize() is zero in
 * both (ksize() is exact for a KFENCE object, the slab bucket otherwise).
 * Equal bytes mean equal values and the same pointed-to objects; an LSM
 * whose blob holds pointers into itself (Smack's rule lists) makes every
 * two objects differ, which only means that nothing is shared.
 */
static bool ibckpt_lsm_blobs_same(const struct cred *a, const struct cred *b)
{
#ifdef CONFIG_SECURITY
	size_t la, lb;

	if (a->security == b->security)
		return true;
	if (!a->security || !b->security)
		return false;
	la = ksize(a->security);
	lb = ksize(b->security);
	if (!la || !lb)
		return false;
	return !memcmp(a->security, b->security, min(la, lb));
#else
	return true;
#endif
}

/**
 * ibckpt_creds_same() - are two credentials identical in content?
 * @a: one
 * @secid_a: the LSM's secid of @a (security_cred_getsecid())
 * @b: the other
 * @secid_b: the LSM's secid of @b
 *
 * Compares every field of struct cred but its reference counts and RCU
 * head: the real, effective, saved and filesystem user and group ids, the
 * securebits, the five capability sets, the keyrings (session, process,
 * thread, request_key authority, jit_keyring), the user, its user
 * namespace and ucounts, the supplementary groups (the same object, or the
 * same number of the same gids), and the LSMs' view (the secids, and the
 * LSM blob byte for byte). Pure: reads the two objects only.
 *
 * Return: true if a task using @a would behave exactly as with @b.
 */
bool ibckpt_creds_same(const struct cred *a, u32 secid_a,
		       const struct cred *b, u32 secid_b)
{
	if (secid_a != secid_b)
		return false;
	if (a == b)
		return true;
	return uid_eq(a->uid, b->uid) && gid_eq(a->gid, b->gid) &&
	       uid_eq(a->suid, b->suid) && gid_eq(a->sgid, b->sgid) &&
	       uid_eq(a->euid, b->euid) && gid_eq(a->egid, b->egid) &&
	       uid_eq(a->fsuid, b->fsuid) && gid_eq(a->fsgid, b->fsgid) &&
	       a->securebits == b->securebits &&
	       ibckpt_caps_eq(a->cap_inheritable, b->cap_inheritable) &&
	       ibckpt_caps_eq(a->cap_permitted, b->cap_permitted) &&
	       ibckpt_caps_eq(a->cap_effective, b->cap_effective) &&
	       ibckpt_caps_eq(a->cap_bset, b->cap_bset) &&
	       ibckpt_caps_eq(a->cap_ambient, b->cap_ambient) &&
	       ibckpt_keys_same(a, b) &&
	       ibckpt_lsm_blobs_same(a, b) &&
	       a->user == b->user && a->user_ns == b->user_ns &&
	       a->ucounts == b->ucounts &&
	       ibckpt_groups_same(a->group_info, b->group_info);
}

/*
 * Runs in the thread itself, at its return to user mode (or from
 * exit_task_work() when it exits). It compares again, with its current
 * credentials: they may have changed since the ioctl compared them (a
 * setresuid() the thread was in the middle of), and such a thread keeps
 * what it set. Not while an override_creds() is in force (current->cred is
 * then not current->real_cred, and commit_creds() would BUG): that cannot
 * be at a return to user mode, only where another path runs task works in
 * a system call (io_uring's wait); such a thread keeps its own object.
 */
static void ibckpt_creds_fn(struct callback_head *cb)
{
	struct ibckpt_creds_work *w = container_of(cb, struct ibckpt_creds_work, cb);
	const struct cred *old = current_cred();
	u32 secid_old, secid_new;

	if (!(current->flags & PF_EXITING) && old == rcu_access_pointer(current->real_cred) &&
	    old != w->target) {
		security_cred_getsecid(old, &secid_old);
		security_cred_getsecid(w->target, &secid_new);
		/* commit_creds() eats the reference it is given */
		if (ibckpt_creds_same(old, secid_old, w->target, secid_new))
			commit_creds(get_new_cred((struct cred *)w->target));
	}
	put_cred(w->target);
	kfree(w);
	/*
	 * Last: the work pinned the module since it was queued. What is left
	 * of this function after the put is covered by ibckpt_creds_exit().
	 */
	module_put(THIS_MODULE);
}

/*
 * The other threads of the caller's process, each with a task reference.
 * The count is read first and the walk is done again, larger, if threads
 * were created meanwhile.
 */
static struct task_struct **ibckpt_creds_threads(unsigned int *np)
{
	struct task_struct **v, *t;
	unsigned int cap, n;
	bool full;

	for (;;) {
		cap = READ_ONCE(current->signal->nr_threads) + 8;
		v = kvmalloc_array(cap, sizeof(*v), GFP_KERNEL_ACCOUNT);
		if (!v)
			return ERR_PTR(-ENOMEM);
		n = 0;
		full = false;
		rcu_read_lock();
		for_each_thread(current, t) {
			if (t == current)
				continue;
			if (n == cap) {
				full = true;
				break;
			}
			get_task_struct(t);
			v[n++] = t;
		}
		rcu_read_unlock();
		if (!full) {
			*np = n;
			return v;
		}
		while (n)
			put_task_struct(v[--n]);
		kvfree(v);
		if (fatal_signal_pending(current))
			return ERR_PTR(-EINTR);
		cond_resched();
	}
}

/* Compare one thread's credentials with @mine; queue its switch if the same. */
static int ibckpt_creds_one(struct task_struct *t, const struct cred *mine, u32 my_secid,
			    struct ibckpt_share_creds *res)
{
	struct ibckpt_creds_work *w;
	const struct cred *theirs;
	u32 secid;
	bool same;

	/* exiting: it makes no system call again; io_uring workers: not ours */
	if (t->flags & (PF_EXITING | PF_IO_WORKER))
		return 0;
	theirs = get_task_cred(t);
	if (theirs == mine) {
		put_cred(theirs);
		res->shared++;
		return 0;
	}
	security_cred_getsecid(theirs, &secid);
	same = ibckpt_creds_same(mine, my_secid, theirs, secid);
	put_cred(theirs);
	if (!same) {
		res->differ++;
		return 0;
	}

	w = kmalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w)
		return -ENOMEM;
	/*
	 * A queued work cannot be withdrawn and its thread may sleep in a
	 * system call for a long time: it pins the module (rmmod is refused
	 * until it has run), as a park work does.
	 */
	if (!try_module_get(THIS_MODULE)) {
		kfree(w);
		return -ENODEV;
	}
	WRITE_ONCE(ibckpt_creds_used, true);
	w->target = get_cred(mine);
	init_task_work(&w->cb, ibckpt_creds_fn);
	/*
	 * TWA_RESUME, not TWA_SIGNAL: the work must only run before the
	 * thread's next user instruction, and a thread asleep in a system
	 * call need not be woken for it. TWA_SIGNAL would interrupt calls that
	 * are not restarted (epoll_wait(), semtimedop(), ...: EINTR), which the
	 * application would see. (The thread sleeping keeps the module pinned;
	 * the process holds /dev/ibckpt open, which pins it anyway.)
	 */
	if (task_work_add(t, &w->cb, TWA_RESUME)) {
		/* past exit_task_work(): it runs no user code again */
		put_cred(w->target);
		kfree(w);
		module_put(THIS_MODULE);
		return 0;
	}
	res->switched++;
	return 0;
}

/**
 * ibckpt_creds_share() - the caller's threads take its credentials object
 * @res: filled with the counts (struct ibckpt_share_creds)
 *
 * Every other thread of the caller's process whose credentials are
 * identical in content to the caller's (ibckpt_creds_same()) is given a
 * task_work that commits the caller's object from the thread itself. The
 * threads whose credentials differ keep theirs.
 *
 * Why no write() can be issued by a thread before it switched: the work is
 * queued with TWA_RESUME, which sets TIF_NOTIFY_RESUME on the thread; every
 * path back to user mode (the end of a system call, of an interrupt, of an
 * exception) runs the thread's queued works while that flag is set,
 * before it executes any user instruction (exit_to_user_mode_loop() ->
 * resume_user_mode_work() -> task_work_run()). A system call is entered
 * only from user mode, so every system call the thread enters after it
 * left the kernel once more runs with the caller's object. The threads
 * this could not hold for are those running in user mode on another CPU
 * while the flags are set: set_notify_resume() kicks them with an IPI, but
 * does not wait for it, so such a thread could still enter a system call
 * with its old object after this function returned. Hence
 * kick_all_cpus_sync() after the works are queued: it returns once every
 * other CPU has taken an interrupt after the flags were set, so a thread
 * that was in user mode has been through an interrupt's return to user
 * mode, which ran its work. After this function returns, a thread that has
 * not switched can only be inside a system call it entered before (asleep
 * in read(), say); that call finishes with the old object and the work runs
 * on its way out. Such a call cannot use a device file the caller opens
 * after this function returned: it was entered before the file existed.
 *
 * Threads created during the call by a thread that had not switched yet
 * share their creator's old object and are not seen; calling again finds
 * them. Exiting threads and io_uring workers are skipped and not counted.
 * A thread asleep through several calls gets a work from each (a module
 * cannot look into or cancel another task's works); the first one to run
 * switches it and the others find nothing to do.
 *
 * Context: process context, from the registered control thread.
 * Return: 0; -ENOMEM (the threads handled before keep their works), -EINTR
 * (fatal signal) or -ENODEV (module going).
 */
int ibckpt_creds_share(struct ibckpt_share_creds *res)
{
	const struct cred *mine = current_cred();
	struct task_struct **v;
	unsigned int n, i;
	u32 my_secid;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	security_cred_getsecid(mine, &my_secid);
	v = ibckpt_creds_threads(&n);
	if (IS_ERR(v))
		return PTR_ERR(v);
	for (i = 0; i < n; i++) {
		if (!ret)
			ret = ibckpt_creds_one(v[i], mine, my_secid, res);
		put_task_struct(v[i]);
	}
	kvfree(v);
	if (res->switched)
		kick_all_cpus_sync();
	return ret;
}

/**
 * ibckpt_creds_exit() - at module exit, after every switch work has run
 *
 * A queued work holds a module reference until the last statement of its
 * callback, so at exit none is queued and none will start; a callback may
 * still be executing its last instructions after module_put().
 * synchronize_rcu_tasks() waits until every task that was in the kernel
 * has switched voluntarily or gone to user mode, hence out of this
 * module's text. Skipped if no work was ever queued.
 */
void ibckpt_creds_exit(void)
{
	if (READ_ONCE(ibckpt_creds_used))
		synchronize_rcu_tasks();
}
