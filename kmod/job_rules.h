/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rules of job membership, kept free of tasks and locks so that KUnit
 * can test them anywhere (job_rules_test.c); job.c applies them to tasks.
 */
#ifndef IBCKPT_JOB_RULES_H
#define IBCKPT_JOB_RULES_H

#include <linux/types.h>

/* Deeper process trees than this are not followed up to their root. */
#define IBCKPT_TREE_MAX_DEPTH	4096

/**
 * struct ibckpt_tree_ops - how to walk a process tree upwards
 * @parent: the parent of a process, NULL above the top (init's parent)
 * @known: whether a process is a member already: one found in the tree
 *	once stays in it, wherever it is re-parented to
 */
struct ibckpt_tree_ops {
	const void *(*parent)(const void *proc, void *arg);
	bool (*known)(const void *proc, void *arg);
};

bool ibckpt_tree_member(const void *proc, const void *root,
			const struct ibckpt_tree_ops *ops, void *arg);

int ibckpt_job_args_check(u32 type, u32 id, bool have_cgroup_fd, const char **why);

const char *ibckpt_job_type_name(u32 type);

#endif /* IBCKPT_JOB_RULES_H */
