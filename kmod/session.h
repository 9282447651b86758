/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Freeze sessions: one per frozen job.
 */
#ifndef IBCKPT_SESSION_H
#define IBCKPT_SESSION_H

#include <linux/atomic.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "job.h"
#include "snap_check.h"
#include "state.h"

struct pid;
struct task_struct;
struct ibckpt_session;

/**
 * struct ibckpt_thread - an application thread the session asked to park
 * @node: in ibckpt_session.threads, under its @lock
 * @hnode: in the table of claimed threads (thread.c) from the moment the
 *	session tracks the thread until it exits or the session releases it
 * @task: the thread's identity in that table (a reference is held while
 *	it is there); never dereferenced through the table
 * @sess: the session (no reference: the thread lives as long as it does)
 * @pid: the thread's pid (reference held), for reporting
 * @state: enum ibckpt_thread_state, under the session's @lock
 * @user_ip: where it resumes in user space, recorded when it parked
 * @syscall: the system call it was in plus one, 0 for none
 * @vfork_held: counted as parked without having parked: it waits in
 *	vfork() for a child that is parked (and so cannot exec or exit before
 *	the thaw); under the session's @lock
 * @vfork_child: parked while its parent waits for it in vfork(); under the
 *	session's @lock
 * @rcu: freed after a grace period: the table is read under RCU
 *
 * A thread is identified by its task, not its pid: a thread that execs
 * takes over its leader's pid (de_thread()), and must not pass for the
 * leader the session knew.
 */
struct ibckpt_thread {
	struct list_head node;
	struct hlist_node hnode;
	struct task_struct *task;
	struct ibckpt_session *sess;
	struct pid *pid;
	enum ibckpt_thread_state state;
	unsigned long user_ip;
	int syscall;
	bool vfork_held;
	bool vfork_child;
	struct rcu_head rcu;
};

/**
 * struct ibckpt_member - a process the session found in its job
 * @node: in ibckpt_session.members (RCU readers, writers under its @lock)
 * @tgid: the process (reference held)
 */
struct ibckpt_member {
	struct hlist_node node;
	struct pid *tgid;
};

/**
 * struct ibckpt_quiesce - the providers' part of one freeze
 * @providers: registered processes of the job asked to quiesce
 * @answered: how many answered
 * @drained: completions they moved to private queues
 * @outstanding: sends still posted when they stopped waiting
 * @err: positive errno of the first provider that failed, 0
 * @err_pid: that provider's process (a reference, put when the session is
 *	freed), reported in each reader's pid namespace
 * @why: why, when the module refused its snapshot (rdma_view.c)
 */
struct ibckpt_quiesce {
	u32 providers;
	u32 answered;
	u64 drained;
	u32 outstanding;
	u32 err;
	struct pid *err_pid;
	struct ibckpt_why why;
};

#define IBCKPT_MEMBER_BITS	6

/**
 * struct ibckpt_session - the freeze of one job
 * @node: in ibckpt_sessions while listed, under ibckpt_sessions_lock
 * @ref: one for the list, one per queued park work
 * @ending: the session was ended (thaw, owner gone, watchdog, replaced,
 *	module exit) and @end is queued: it stays listed, in state THAWING,
 *	until its threads have left their parks; under ibckpt_sessions_lock
 * @id: unique for the module's lifetime
 * @job: what the freeze covers
 * @requester: the process that asked (reference held); never parked
 * @cred: the requester's credentials (reference held)
 * @admin: the requester had CAP_SYS_ADMIN: it may freeze any process but
 *	init; without it only its own (ibckpt_may_freeze())
 * @flags: IBCKPT_FREEZE_F_*
 * @owner_portid: the netlink socket that owns the freeze (0 if persistent)
 * @lock: protects @state, @released, @tally, @threads, @nprocs and the
 *	writers of @members
 * @state: enum ibckpt_state; written under @lock, read locklessly with
 *	READ_ONCE() by status
 * @released: parked threads may leave; set once, never cleared
 * @tally: threads by state
 * @threads: struct ibckpt_thread list
 * @members: the job's processes found so far (struct ibckpt_member)
 * @nprocs: how many
 * @nvfork: threads parked as vfork() children (@vfork_child)
 * @park_wq: parked threads sleep here
 * @done_wq: @end waits here for threads to leave
 * @converge: rescans the job while FREEZING, and now and then while FROZEN
 *	to catch processes that join it
 * @watchdog: a persistent freeze thaws itself when it fires
 * @end: waits (bounded) for the released threads to leave, then unlists
 *	the session and drops the list's reference
 * @timeout: how long freezing may take (jiffies)
 * @deadline: jiffies after which FREEZING gives up
 * @started: when the freeze was requested
 * @freeze_ns: request to FROZEN, 0 until frozen
 * @q: the providers' part (quiesce.c), under @lock
 * @gen: the job's generation: SNAPSHOT_GET (genl_snapshot.c) reads its snapshots
 *	and members over several rounds and ends with -EAGAIN if it changed in
 *	between. Bumped (ibckpt_session_changed()) in the critical section
 *	that makes the change, under the lock of what changed: @lock when a
 *	process joins @members or the session is released; ibckpt_procs_lock
 *	when a provider is asked for this session, gives its snapshot, loses it
 *	(the session ends) or its registration ends. A reader compares it under
 *	the lock of what it reads next. A FROZEN job's snapshots change for no
 *	other reason: a provider gives its snapshot only before it answers, the
 *	job is FROZEN only once every provider asked has answered, and asking
 *	a newcomer makes it FREEZING again. Lives as long as the session.
 * @rcu: freed after a grace period (threads point to it)
 */
struct ibckpt_session {
	struct list_head node;
	struct kref ref;
	bool ending;
	u64 id;
	struct ibckpt_job job;
	struct pid *requester;
	const struct cred *cred;
	bool admin;
	u32 flags;
	u32 owner_portid;
	spinlock_t lock;		/* see the kernel-doc above */
	enum ibckpt_state state;
	bool released;
	struct ibckpt_tally tally;
	struct list_head threads;
	DECLARE_HASHTABLE(members, IBCKPT_MEMBER_BITS);
	u32 nprocs;
	u32 nvfork;
	wait_queue_head_t park_wq;
	wait_queue_head_t done_wq;
	struct delayed_work converge;
	struct delayed_work watchdog;
	struct work_struct end;
	unsigned long timeout;
	unsigned long deadline;
	u64 started;
	u64 freeze_ns;
	struct ibckpt_quiesce q;
	atomic_t gen;
	struct rcu_head rcu;
};

/**
 * ibckpt_session_changed() - what SNAPSHOT_GET reports of the job changed
 * @s: the session
 *
 * Context: in the section that made the change, under its lock (see @gen).
 */
static inline void ibckpt_session_changed(struct ibckpt_session *s)
{
	atomic_inc(&s->gen);
}

/**
 * struct ibckpt_sel - how a request names a session
 * @id: the session id, or 0 to name it by its job
 * @type: enum ibckpt_job_type, 0 if no job is named
 * @job_id: the group, session or root process id
 * @cgroup_fd: a cgroup job's directory (requester's fd), -1 if none
 */
struct ibckpt_sel {
	u64 id;
	u32 type;
	u32 job_id;
	int cgroup_fd;
};

/* Runs the sessions' converge and watchdog works; drained at module exit. */
extern struct workqueue_struct *ibckpt_wq;

/* Listed sessions; the mutex also serialises freeze, thaw and teardown. */
extern struct list_head ibckpt_sessions;
extern struct mutex ibckpt_sessions_lock;

/**
 * struct ibckpt_freeze_req - a FREEZE request
 * @sel: the job
 * @timeout_ms: give up (and release everything) if not frozen by then
 * @flags: IBCKPT_FREEZE_F_*
 * @watchdog_ms: for IBCKPT_FREEZE_F_PERSIST, thaw after this long
 * @portid: the requesting netlink socket, the owner of a non-persistent freeze
 * @admin: the requester has CAP_SYS_ADMIN (not only CAP_CHECKPOINT_RESTORE)
 */
struct ibckpt_freeze_req {
	struct ibckpt_sel sel;
	u32 timeout_ms;
	u32 flags;
	u32 watchdog_ms;
	u32 portid;
	bool admin;
};

int ibckpt_session_freeze(const struct ibckpt_freeze_req *req, u64 *id,
			  struct ibckpt_busy *busy, const char **why);
int ibckpt_session_thaw(const struct ibckpt_sel *sel, u64 *id, const char **why);
struct ibckpt_session *ibckpt_session_get(const struct ibckpt_sel *sel, const char **why);
struct ibckpt_session *ibckpt_session_find_id(u64 id);
void ibckpt_session_put(struct ibckpt_session *s);
bool ibckpt_session_covers(struct ibckpt_session *s, struct task_struct *proc);
bool ibckpt_session_knows(struct task_struct *proc, void *arg);
int ibckpt_session_track(struct ibckpt_session *s, struct task_struct *task);
bool ibckpt_may_freeze(const struct cred *cred, bool admin, struct task_struct *proc);
void ibckpt_session_adopt(struct ibckpt_session *s, struct task_struct *parent);
void ibckpt_session_hold_vfork_parent(struct ibckpt_session *s, struct ibckpt_thread *child);
void ibckpt_thread_set(struct ibckpt_session *s, struct ibckpt_thread *thr,
		       enum ibckpt_thread_state st);
void ibckpt_thread_leave(struct ibckpt_session *s, struct ibckpt_thread *thr,
			 enum ibckpt_thread_state st);
int ibckpt_sessions_init(void);
void ibckpt_sessions_exit(void);

/* thread.c: which session holds a thread */
int ibckpt_thread_claim(struct ibckpt_thread *thr, struct task_struct *task);
void ibckpt_thread_unclaim(struct ibckpt_thread *thr);
struct ibckpt_session *ibckpt_thread_holder(struct task_struct *task);
struct ibckpt_thread *ibckpt_thread_lookup(struct task_struct *task);

/* scan.c */
int ibckpt_session_scan(struct ibckpt_session *s);

/* quiesce.c */
void ibckpt_quiesce_ask(struct ibckpt_session *s);
void ibckpt_quiesce_end(struct ibckpt_session *s, u32 event);

/* park.c */
int ibckpt_park_queue(struct ibckpt_session *s, struct task_struct *task,
		      struct ibckpt_thread *thr);
void ibckpt_parks_wait_idle(void);

#endif /* IBCKPT_SESSION_H */
