// SPDX-License-Identifier: GPL-2.0
/*
 * Job membership rules: which processes a tree job holds, and which job
 * selectors a request may name.
 */
#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/threads.h>

#include "uapi/linux/ibckpt.h"
#include "job_rules.h"

/**
 * ibckpt_tree_member() - is a process in the tree of @root
 * @proc: the process
 * @root: the tree's root process
 * @ops: how to find a parent, and which processes are members already
 * @arg: passed to @ops
 *
 * A process is in the tree if it is the root, a member already, or if one
 * of its ancestors is. A process re-parented to init (or a subreaper) when
 * its parent exited is no longer a descendant, unless the job knew it: that
 * is why members found once stay members.
 *
 * Return: true if @proc is in the tree.
 */
bool ibckpt_tree_member(const void *proc, const void *root,
			const struct ibckpt_tree_ops *ops, void *arg)
{
	unsigned int depth;

	for (depth = 0; proc && depth < IBCKPT_TREE_MAX_DEPTH; depth++) {
		if (proc == root || ops->known(proc, arg))
			return true;
		proc = ops->parent(proc, arg);
	}
	return false;
}

/**
 * ibckpt_job_args_check() - validate how a request names a job
 * @type: enum ibckpt_job_type
 * @id: the group, session or root process id (unused for a cgroup)
 * @have_cgroup_fd: the request carries IBCKPT_A_CGROUP_FD
 * @why: set to a message for the requester on error
 *
 * Return: 0 or a negative errno.
 */
int ibckpt_job_args_check(u32 type, u32 id, bool have_cgroup_fd, const char **why)
{
	switch (type) {
	case IBCKPT_JOB_PGRP:
	case IBCKPT_JOB_SESSION:
	case IBCKPT_JOB_TREE:
		if (have_cgroup_fd) {
			*why = "a cgroup directory names a cgroup job only";
			return -EINVAL;
		}
		if (!id || id > PID_MAX_LIMIT) {
			*why = type == IBCKPT_JOB_PGRP ? "not a process group id" :
			       type == IBCKPT_JOB_SESSION ? "not a session id" :
			       "not a process id";
			return -EINVAL;
		}
		return 0;
	case IBCKPT_JOB_CGROUP:
		if (!have_cgroup_fd) {
			*why = "a cgroup job needs the cgroup's directory";
			return -EINVAL;
		}
		if (id) {
			*why = "a cgroup job takes no id";
			return -EINVAL;
		}
		return 0;
	}
	*why = "unknown job type";
	return -EOPNOTSUPP;
}

/**
 * ibckpt_job_type_name() - a job type as text
 * @type: enum ibckpt_job_type
 *
 * Return: a static string.
 */
const char *ibckpt_job_type_name(u32 type)
{
	switch (type) {
	case IBCKPT_JOB_PGRP:
		return "process group";
	case IBCKPT_JOB_SESSION:
		return "session";
	case IBCKPT_JOB_TREE:
		return "process tree";
	case IBCKPT_JOB_CGROUP:
		return "cgroup";
	}
	return "unknown";
}
