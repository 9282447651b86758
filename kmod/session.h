/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Freeze sessions: one per frozen process group.
 */
#ifndef IBCKPT_SESSION_H
#define IBCKPT_SESSION_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "state.h"

struct pid;
struct task_struct;

/**
 * struct ibckpt_thread - an application thread the session asked to park
 * @node: in ibckpt_session.threads, under its @lock
 * @pid: the thread (reference held)
 * @state: enum ibckpt_thread_state, under the session's @lock
 * @user_ip: where it resumes in user space, recorded when it parked
 * @syscall: the system call it was in plus one, 0 for none
 *
 * Freed with its session.
 */
struct ibckpt_thread {
	struct list_head node;
	struct pid *pid;
	enum ibckpt_thread_state state;
	unsigned long user_ip;
	int syscall;
};

/**
 * struct ibckpt_quiesce - the providers' part of one freeze
 * @providers: registered processes of the group asked to quiesce
 * @answered: how many answered
 * @drained: completions they moved to private queues
 * @outstanding: sends still posted when they stopped waiting
 * @err: positive errno of the first provider that failed, 0
 * @err_pid: that provider's process (a reference, put when the session is
 *	freed), reported in each reader's pid namespace
 */
struct ibckpt_quiesce {
	u32 providers;
	u32 answered;
	u64 drained;
	u32 outstanding;
	u32 err;
	struct pid *err_pid;
};

/**
 * struct ibckpt_session - the freeze of one process group
 * @node: in ibckpt_sessions while listed, under ibckpt_sessions_lock
 * @ref: one for the list, one per queued park work
 * @id: unique for the module's lifetime
 * @pgrp: the process group (reference held)
 * @flags: IBCKPT_FREEZE_F_*
 * @owner_portid: the netlink socket that owns the freeze (0 if persistent)
 * @lock: protects @state, @released, @tally and @threads
 * @state: enum ibckpt_state
 * @released: parked threads may leave; set once, never cleared
 * @tally: threads by state
 * @threads: struct ibckpt_thread list
 * @park_wq: parked threads sleep here
 * @done_wq: thaw waits here for threads to leave
 * @converge: rescans the group while FREEZING
 * @watchdog: a persistent freeze thaws itself when it fires
 * @deadline: jiffies after which FREEZING gives up
 * @started: when the freeze was requested
 * @freeze_ns: request to FROZEN, 0 until frozen
 * @q: the providers' part (quiesce.c), under @lock
 */
struct ibckpt_session {
	struct list_head node;
	struct kref ref;
	u64 id;
	struct pid *pgrp;
	u32 flags;
	u32 owner_portid;
	spinlock_t lock;		/* see the kernel-doc above */
	enum ibckpt_state state;
	bool released;
	struct ibckpt_tally tally;
	struct list_head threads;
	wait_queue_head_t park_wq;
	wait_queue_head_t done_wq;
	struct delayed_work converge;
	struct delayed_work watchdog;
	unsigned long deadline;
	u64 started;
	u64 freeze_ns;
	struct ibckpt_quiesce q;
};

/* Listed sessions; the mutex also serialises freeze, thaw and teardown. */
extern struct list_head ibckpt_sessions;
extern struct mutex ibckpt_sessions_lock;

int ibckpt_session_freeze(u32 pgid, u32 timeout_ms, u32 flags, u32 watchdog_ms,
			  u32 portid, u64 *id, const char **why);
int ibckpt_session_thaw(u32 pgid, const char **why);
struct ibckpt_session *ibckpt_session_find(struct pid *pgrp);
void ibckpt_session_put(struct ibckpt_session *s);
int ibckpt_sessions_init(void);
void ibckpt_sessions_exit(void);

/* quiesce.c */
void ibckpt_quiesce_begin(struct ibckpt_session *s);
void ibckpt_quiesce_end(struct ibckpt_session *s, u32 event);

/* park.c */
int ibckpt_park_queue(struct ibckpt_session *s, struct task_struct *task,
		      struct ibckpt_thread *thr);
void ibckpt_parks_wait_idle(void);

#endif /* IBCKPT_SESSION_H */
