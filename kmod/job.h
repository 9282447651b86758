/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A job: the processes one freeze covers (a process group, a session, a
 * process tree or a cgroup).
 */
#ifndef IBCKPT_JOB_H
#define IBCKPT_JOB_H

#include <linux/types.h>

#include "job_rules.h"

struct cgroup;
struct pid;
struct seq_buf;
struct task_struct;

/**
 * struct ibckpt_job - what a freeze covers
 * @type: enum ibckpt_job_type
 * @pid: the group, the session or the tree's root process (PIDTYPE_TGID);
 *	NULL for a cgroup. A reference is held.
 * @cgrp: the cgroup (IBCKPT_JOB_CGROUP); a reference is held
 */
struct ibckpt_job {
	u32 type;
	struct pid *pid;
	struct cgroup *cgrp;
};

/**
 * typedef ibckpt_known_fn - is a process a known member of a tree job
 * @proc: a process (thread group leader), under RCU
 * @arg: the caller's
 *
 * Return: true if the job found it once already.
 */
typedef bool (*ibckpt_known_fn)(struct task_struct *proc, void *arg);

/**
 * typedef ibckpt_visit_fn - called for each process of a job
 * @proc: the process (thread group leader), under RCU
 * @arg: the caller's
 *
 * Return: true to go on, false to stop the walk.
 */
typedef bool (*ibckpt_visit_fn)(struct task_struct *proc, void *arg);

int ibckpt_job_resolve(struct ibckpt_job *job, u32 type, u32 id, int cgroup_fd,
		       const char **why);
void ibckpt_job_release(struct ibckpt_job *job);
bool ibckpt_job_same(const struct ibckpt_job *a, const struct ibckpt_job *b);
bool ibckpt_job_has(const struct ibckpt_job *job, struct task_struct *proc,
		    ibckpt_known_fn known, void *arg);
bool ibckpt_job_walk(const struct ibckpt_job *job, ibckpt_known_fn known, void *karg,
		     ibckpt_visit_fn visit, void *varg);
u32 ibckpt_job_id(const struct ibckpt_job *job);
int ibckpt_job_cgroup_path(const struct ibckpt_job *job, char *buf, size_t len);

#endif /* IBCKPT_JOB_H */
