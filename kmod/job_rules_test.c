// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: which processes a tree job holds (a fake process table: parents,
 * re-parenting, processes the job found before), and which job selectors a
 * request may name.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/threads.h>

#include "uapi/linux/ibckpt.h"
#include "job_rules.h"

/* A process table: parent[i] is the parent of process i, -1 above init. */
struct fake_procs {
	int parent[8];
	bool known[8];
	int id[8];
};

static const void *fake_parent(const void *proc, void *arg)
{
	struct fake_procs *f = arg;
	int i = *(const int *)proc;

	return f->parent[i] < 0 ? NULL : &f->id[f->parent[i]];
}

static bool fake_known(const void *proc, void *arg)
{
	struct fake_procs *f = arg;

	return f->known[*(const int *)proc];
}

static const struct ibckpt_tree_ops fake_ops = {
	.parent = fake_parent,
	.known = fake_known,
};

/*
 * 0 init, 1 shell, 2 launcher (the root), 3 a rank, 4 a rank's helper that
 * called setsid() (session and group do not matter to a tree), 5 a process
 * the shell started beside the launcher, 6 a daemon whose parent exited
 * before the freeze (re-parented to init).
 */
static void fake_init(struct fake_procs *f)
{
	static const int parent[8] = { -1, 0, 1, 2, 3, 1, 0, 0 };
	int i;

	for (i = 0; i < 8; i++) {
		f->parent[i] = parent[i];
		f->known[i] = false;
		f->id[i] = i;
	}
}

static bool in_tree(struct fake_procs *f, int proc, int root)
{
	return ibckpt_tree_member(&f->id[proc], root < 0 ? NULL : &f->id[root], &fake_ops, f);
}

static void tree_holds_root_and_descendants(struct kunit *test)
{
	struct fake_procs f;

	fake_init(&f);
	KUNIT_EXPECT_TRUE(test, in_tree(&f, 2, 2));
	KUNIT_EXPECT_TRUE(test, in_tree(&f, 3, 2));
	KUNIT_EXPECT_TRUE(test, in_tree(&f, 4, 2));
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 1, 2));	/* its parent */
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 5, 2));	/* a sibling */
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 0, 2));	/* init */
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 6, 2));	/* orphaned before: not a descendant */
}

static void tree_keeps_members_reparented(struct kunit *test)
{
	struct fake_procs f;

	fake_init(&f);
	/* the job found rank 3; then 3 exits and its helper 4 goes to init */
	f.known[3] = true;
	f.parent[4] = 0;
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 4, 2));
	/* the exiting member's children are kept (ibckpt_session_adopt()) */
	f.known[4] = true;
	KUNIT_EXPECT_TRUE(test, in_tree(&f, 4, 2));
	/* and so are their children, wherever they are */
	f.parent[7] = 4;
	KUNIT_EXPECT_TRUE(test, in_tree(&f, 7, 2));
	/* the root exited: its known descendants still count, nothing else */
	KUNIT_EXPECT_TRUE(test, in_tree(&f, 7, -1));
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 5, -1));
}

static void tree_walk_is_bounded(struct kunit *test)
{
	struct fake_procs f;

	fake_init(&f);
	/* a corrupt table with a cycle ends without finding the root */
	f.parent[5] = 6;
	f.parent[6] = 5;
	KUNIT_EXPECT_FALSE(test, in_tree(&f, 5, 2));
}

static void job_selectors_are_checked(struct kunit *test)
{
	const char *why = NULL;

	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_PGRP, 42, false, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_SESSION, 42, false, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_TREE, 42, false, &why), 0);
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_CGROUP, 0, true, &why), 0);

	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_PGRP, 0, false, &why), -EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "not a process group id");
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_SESSION, 0, false, &why),
			-EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "not a session id");
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_TREE, PID_MAX_LIMIT + 1, false,
						    &why), -EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "not a process id");
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_TREE, 42, true, &why), -EINVAL);
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_CGROUP, 0, false, &why),
			-EINVAL);
	KUNIT_EXPECT_STREQ(test, why, "a cgroup job needs the cgroup's directory");
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_CGROUP, 7, true, &why), -EINVAL);
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(0, 42, false, &why), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ibckpt_job_args_check(IBCKPT_JOB_CGROUP + 1, 42, false, &why),
			-EOPNOTSUPP);
	KUNIT_EXPECT_STREQ(test, why, "unknown job type");
}

static void job_type_names(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, ibckpt_job_type_name(IBCKPT_JOB_TREE), "process tree");
	KUNIT_EXPECT_STREQ(test, ibckpt_job_type_name(IBCKPT_JOB_CGROUP), "cgroup");
	KUNIT_EXPECT_STREQ(test, ibckpt_job_type_name(99), "unknown");
}

static struct kunit_case ibckpt_job_cases[] = {
	KUNIT_CASE(tree_holds_root_and_descendants),
	KUNIT_CASE(tree_keeps_members_reparented),
	KUNIT_CASE(tree_walk_is_bounded),
	KUNIT_CASE(job_selectors_are_checked),
	KUNIT_CASE(job_type_names),
	{}
};

static struct kunit_suite ibckpt_job_suite = {
	.name = "ibckpt_job",
	.test_cases = ibckpt_job_cases,
};

kunit_test_suite(ibckpt_job_suite);
