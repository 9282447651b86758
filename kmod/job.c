// SPDX-License-Identifier: GPL-2.0
/*
 * Jobs: which processes a freeze covers.
 *
 * A process group or a session is walked through its pid's task list; a
 * process tree and a cgroup through every process of the system, testing
 * each (the kernel exports no iterator over a cgroup's tasks, and a tree's
 * members may have changed group and session). The tests run under RCU.
 *
 * Membership is decided per process (thread group), for all of its threads.
 * A tree job remembers the processes it found (the caller's known()
 * callback), so that a member stays one when its parent exits and it is
 * re-parented outside the tree.
 */
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>

#include "uapi/linux/ibckpt.h"
#include "job.h"

/**
 * ibckpt_job_resolve() - find what a request names
 * @job: filled in; ibckpt_job_release() it after a success
 * @type: enum ibckpt_job_type
 * @id: group, session or process id in the caller's pid namespace
 * @cgroup_fd: for IBCKPT_JOB_CGROUP, a file descriptor of the caller's
 *	that is open on the cgroup's directory; -1 otherwise
 * @why: set to a message for the requester on error
 *
 * Context: process context of the requester (the fd is looked up in its
 * file table).
 * Return: 0, -ESRCH if no such group, session or process exists, -EBADF if
 * @cgroup_fd is not a cgroup v2 directory, or another negative errno.
 */
int ibckpt_job_resolve(struct ibckpt_job *job, u32 type, u32 id, int cgroup_fd,
		       const char **why)
{
	static const enum pid_type pidtype[] = {
		[IBCKPT_JOB_PGRP] = PIDTYPE_PGID,
		[IBCKPT_JOB_SESSION] = PIDTYPE_SID,
		[IBCKPT_JOB_TREE] = PIDTYPE_TGID,
	};
	struct cgroup *cgrp;
	struct pid *pid;
	int ret;

	memset(job, 0, sizeof(*job));
	ret = ibckpt_job_args_check(type, id, cgroup_fd >= 0, why);
	if (ret)
		return ret;
	job->type = type;
	if (type == IBCKPT_JOB_CGROUP) {
		cgrp = cgroup_get_from_fd(cgroup_fd);
		if (IS_ERR(cgrp)) {
			*why = "not a cgroup v2 directory";
			return PTR_ERR(cgrp);
		}
		job->cgrp = cgrp;
		return 0;
	}
	rcu_read_lock();
	pid = find_vpid(id);
	if (!pid || !pid_task(pid, pidtype[type])) {
		rcu_read_unlock();
		*why = type == IBCKPT_JOB_PGRP ? "no such process group" :
		       type == IBCKPT_JOB_SESSION ? "no such session" : "no such process";
		return -ESRCH;
	}
	job->pid = get_pid(pid);
	rcu_read_unlock();
	return 0;
}

/**
 * ibckpt_job_release() - drop what ibckpt_job_resolve() took
 * @job: the job
 */
void ibckpt_job_release(struct ibckpt_job *job)
{
	put_pid(job->pid);
	if (job->cgrp)
		cgroup_put(job->cgrp);
	job->pid = NULL;
	job->cgrp = NULL;
}

/**
 * ibckpt_job_same() - do two jobs name the same processes the same way
 * @a: a job
 * @b: another
 *
 * Return: true if they do.
 */
bool ibckpt_job_same(const struct ibckpt_job *a, const struct ibckpt_job *b)
{
	return a->type == b->type && a->pid == b->pid && a->cgrp == b->cgrp;
}

static const void *ibckpt_tree_parent(const void *proc, void *arg)
{
	const struct task_struct *p = proc;
	struct task_struct *parent = rcu_dereference(p->real_parent);

	/* init's (and the idle task's) parent is the idle task */
	if (!parent || parent == p || parent == &init_task)
		return NULL;
	return parent->group_leader;
}

struct ibckpt_tree_arg {
	ibckpt_known_fn known;
	void *arg;
};

static bool ibckpt_tree_known(const void *proc, void *arg)
{
	struct ibckpt_tree_arg *a = arg;

	return a->known && a->known((struct task_struct *)proc, a->arg);
}

static const struct ibckpt_tree_ops ibckpt_tree_ops = {
	.parent = ibckpt_tree_parent,
	.known = ibckpt_tree_known,
};

/**
 * ibckpt_job_has() - is a process part of a job
 * @job: the job
 * @proc: a thread group leader
 * @known: for a tree job, tells which processes were found in it before
 *	(may be NULL: only the root and its current descendants)
 * @arg: passed to @known
 *
 * Context: rcu_read_lock() held.
 * Return: true if @proc belongs to @job.
 */
bool ibckpt_job_has(const struct ibckpt_job *job, struct task_struct *proc,
		    ibckpt_known_fn known, void *arg)
{
	struct ibckpt_tree_arg ta = { .known = known, .arg = arg };
	struct task_struct *root;

	switch (job->type) {
	case IBCKPT_JOB_PGRP:
		return task_pgrp(proc) == job->pid;
	case IBCKPT_JOB_SESSION:
		return task_session(proc) == job->pid;
	case IBCKPT_JOB_TREE:
		/* once the root is gone, its known descendants still count */
		root = pid_task(job->pid, PIDTYPE_TGID);
		return ibckpt_tree_member(proc, root, &ibckpt_tree_ops, &ta);
	case IBCKPT_JOB_CGROUP:
		return cgroup_is_descendant(task_dfl_cgroup(proc), job->cgrp);
	}
	return false;
}

/**
 * ibckpt_job_walk() - visit every process of a job
 * @job: the job
 * @known: see ibckpt_job_has()
 * @karg: passed to @known
 * @visit: called for each process, under RCU
 * @varg: passed to @visit
 *
 * Processes born during the walk may or may not be visited; a process that
 * existed before the walk started and stays in the job is.
 *
 * Return: false if @visit stopped the walk.
 */
bool ibckpt_job_walk(const struct ibckpt_job *job, ibckpt_known_fn known, void *karg,
		     ibckpt_visit_fn visit, void *varg)
{
	enum pid_type type = job->type == IBCKPT_JOB_PGRP ? PIDTYPE_PGID : PIDTYPE_SID;
	struct task_struct *p;
	bool more = true;

	rcu_read_lock();
	switch (job->type) {
	case IBCKPT_JOB_PGRP:
	case IBCKPT_JOB_SESSION:
		do_each_pid_task(job->pid, type, p) {
			if (!visit(p, varg)) {
				more = false;
				goto out;
			}
		} while_each_pid_task(job->pid, type, p);
		break;
	default:
		for_each_process(p) {
			if (p->flags & PF_KTHREAD || !ibckpt_job_has(job, p, known, karg))
				continue;
			if (!visit(p, varg)) {
				more = false;
				goto out;
			}
		}
		break;
	}
out:
	rcu_read_unlock();
	return more;
}

/**
 * ibckpt_job_id() - the job's group, session or root in the caller's pid
 *	namespace
 * @job: the job
 *
 * Return: the id, 0 for a cgroup or where it is not visible.
 */
u32 ibckpt_job_id(const struct ibckpt_job *job)
{
	return job->pid ? pid_vnr(job->pid) : 0;
}

/**
 * ibckpt_job_cgroup_path() - a cgroup job's directory, relative to the
 *	caller's cgroup namespace root
 * @job: the job
 * @buf: where to write it
 * @len: its size
 *
 * Return: the length (see cgroup_path_ns()), or a negative errno; -ENOENT if
 * @job is not a cgroup job.
 */
int ibckpt_job_cgroup_path(const struct ibckpt_job *job, char *buf, size_t len)
{
	if (!job->cgrp)
		return -ENOENT;
	return cgroup_path_ns(job->cgrp, buf, len, current->nsproxy->cgroup_ns);
}
