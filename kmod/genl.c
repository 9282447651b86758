// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "ibckpt": the administrative channel of the
 * ibckpt CLI. A doit holds genl's cb_lock for reading, and a slow one would
 * stall every generic netlink user once a family (un)registration queues
 * behind it: handlers do not wait. FREEZE returns once the freeze started,
 * THAW once the threads are released; the CLI learns the rest from
 * SESSION_GET.
 */
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/sched/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <net/genetlink.h>

#include "ibckpt.h"
#include "registry.h"
#include "session.h"
#include "snap_check.h"

static const struct nla_policy ibckpt_genl_policy[IBCKPT_A_MAX + 1] = {
	[IBCKPT_A_VERSION] = { .type = NLA_NUL_STRING },
	[IBCKPT_A_ABI] = { .type = NLA_U32 },
	[IBCKPT_A_PROC] = { .type = NLA_NESTED },
	[IBCKPT_A_PGID] = { .type = NLA_U32 },
	[IBCKPT_A_TIMEOUT_MS] = { .type = NLA_U32 },
	[IBCKPT_A_FLAGS] = { .type = NLA_U32 },
	[IBCKPT_A_WATCHDOG_MS] = { .type = NLA_U32 },
	[IBCKPT_A_SESSION_ID] = { .type = NLA_U64 },
	[IBCKPT_A_SESSION] = { .type = NLA_REJECT },
	[IBCKPT_A_THREAD] = { .type = NLA_REJECT },
	[IBCKPT_A_SNAP_TGID] = { .type = NLA_REJECT },
	[IBCKPT_A_SNAP_TOTAL] = { .type = NLA_REJECT },
	[IBCKPT_A_SNAP_OFFSET] = { .type = NLA_REJECT },
	[IBCKPT_A_SNAP_DATA] = { .type = NLA_REJECT },
	[IBCKPT_A_JOB_TYPE] = NLA_POLICY_RANGE(NLA_U32, IBCKPT_JOB_PGRP, IBCKPT_JOB_CGROUP),
	[IBCKPT_A_JOB_ID] = { .type = NLA_U32 },
	[IBCKPT_A_CGROUP_FD] = { .type = NLA_U32 },
	[IBCKPT_A_KPROC] = { .type = NLA_REJECT },
	[IBCKPT_A_KQP] = { .type = NLA_REJECT },
};

#define IBCKPT_DEFAULT_TIMEOUT_MS 10000

static struct genl_family ibckpt_genl_family;

static int ibckpt_nl_get_version(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &ibckpt_genl_family, 0, IBCKPT_CMD_GET_VERSION);
	if (!hdr)
		goto nospace;
	if (nla_put_string(msg, IBCKPT_A_VERSION, IBCKPT_VERSION) ||
	    nla_put_u32(msg, IBCKPT_A_ABI, IBCKPT_ABI_VERSION))
		goto nospace;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* One registered process; 0 if it is not visible in @ns (not an error). */
static int ibckpt_nl_fill_proc(struct sk_buff *skb, struct netlink_callback *cb,
			       struct ibckpt_proc *p, struct pid_namespace *ns)
{
	char comm[TASK_COMM_LEN];
	struct task_struct *task;
	struct nlattr *nest;
	pid_t tgid, pgid;
	void *hdr;

	tgid = pid_nr_ns(p->tgid, ns);
	task = get_pid_task(p->tgid, PIDTYPE_TGID);
	if (!tgid || !task) {
		if (task)
			put_task_struct(task);
		return 0;
	}
	pgid = task_pgrp_nr_ns(task, ns);
	get_task_comm(comm, task);
	put_task_struct(task);

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ibckpt_genl_family, NLM_F_MULTI, IBCKPT_CMD_PROC_GET);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, IBCKPT_A_PROC);
	if (!nest ||
	    nla_put_u32(skb, IBCKPT_PROC_A_TGID, tgid) ||
	    nla_put_u32(skb, IBCKPT_PROC_A_PGID, pgid) ||
	    nla_put_u32(skb, IBCKPT_PROC_A_CTRL_TID, pid_nr_ns(p->ctrl, ns)) ||
	    nla_put_string(skb, IBCKPT_PROC_A_COMM, comm)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/* cb->args[0]: processes already emitted (the list may change in between). */
static int ibckpt_nl_proc_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct ibckpt_proc *p;
	long i = 0;
	int err = 0;

	mutex_lock(&ibckpt_procs_lock);
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (i++ < cb->args[0])
			continue;
		err = ibckpt_nl_fill_proc(skb, cb, p, ns);
		if (err)
			break;
		cb->args[0] = i;
	}
	mutex_unlock(&ibckpt_procs_lock);
	return err && !skb->len ? err : skb->len;
}

/*
 * Freezing and thawing other people's processes, reading their snapshots and
 * where their threads are is checkpoint/restore work. Both the socket's
 * opener and the sender must have it (netlink_ns_capable()).
 */
static bool ibckpt_nl_privileged(const struct sk_buff *skb)
{
	return netlink_ns_capable(skb, &init_user_ns, CAP_CHECKPOINT_RESTORE) ||
	       netlink_ns_capable(skb, &init_user_ns, CAP_SYS_ADMIN);
}

static int ibckpt_nl_check_perm(struct sk_buff *skb, struct genl_info *info)
{
	if (ibckpt_nl_privileged(skb))
		return 0;
	GENL_SET_ERR_MSG(info, "needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN");
	return -EPERM;
}

/* @why is always a string literal of session.c/state.c: static storage. */
static void ibckpt_nl_why(struct genl_info *info, const char *why)
{
	if (why && info->extack)
		info->extack->_msg = why;
}

static u32 ibckpt_nl_u32(struct genl_info *info, int attr, u32 def)
{
	return info->attrs[attr] ? nla_get_u32(info->attrs[attr]) : def;
}

/*
 * How a request names a session: IBCKPT_A_SESSION_ID, or a job
 * (IBCKPT_A_JOB_TYPE with IBCKPT_A_JOB_ID or IBCKPT_A_CGROUP_FD; a lone
 * IBCKPT_A_PGID is a process group job).
 */
static void ibckpt_nl_sel(struct nlattr **attrs, struct ibckpt_sel *sel)
{
	memset(sel, 0, sizeof(*sel));
	sel->cgroup_fd = -1;
	if (attrs[IBCKPT_A_SESSION_ID])
		sel->id = nla_get_u64(attrs[IBCKPT_A_SESSION_ID]);
	if (attrs[IBCKPT_A_JOB_TYPE]) {
		sel->type = nla_get_u32(attrs[IBCKPT_A_JOB_TYPE]);
		if (attrs[IBCKPT_A_JOB_ID])
			sel->job_id = nla_get_u32(attrs[IBCKPT_A_JOB_ID]);
	} else if (attrs[IBCKPT_A_PGID]) {
		sel->type = IBCKPT_JOB_PGRP;
		sel->job_id = nla_get_u32(attrs[IBCKPT_A_PGID]);
	}
	if (attrs[IBCKPT_A_CGROUP_FD])
		sel->cgroup_fd = (int)min_t(u32, nla_get_u32(attrs[IBCKPT_A_CGROUP_FD]), INT_MAX);
}

static int ibckpt_nl_freeze(struct sk_buff *skb, struct genl_info *info)
{
	struct ibckpt_freeze_req req = {
		.timeout_ms = ibckpt_nl_u32(info, IBCKPT_A_TIMEOUT_MS, IBCKPT_DEFAULT_TIMEOUT_MS),
		.flags = ibckpt_nl_u32(info, IBCKPT_A_FLAGS, 0),
		.watchdog_ms = ibckpt_nl_u32(info, IBCKPT_A_WATCHDOG_MS, 0),
		.portid = info->snd_portid,
		.admin = netlink_ns_capable(skb, &init_user_ns, CAP_SYS_ADMIN),
	};
	struct ibckpt_busy busy = {};
	const char *why = NULL;
	struct sk_buff *msg;
	void *hdr;
	u64 id;
	int ret;

	ret = ibckpt_nl_check_perm(skb, info);
	if (ret)
		return ret;
	ibckpt_nl_sel(info->attrs, &req.sel);
	if (!req.sel.type) {
		GENL_SET_ERR_MSG(info, "a job is required (IBCKPT_A_JOB_TYPE or IBCKPT_A_PGID)");
		return -EINVAL;
	}
	ret = ibckpt_session_freeze(&req, &id, &busy, &why);
	if (ret) {
		ibckpt_nl_why(info, why);
		if (ret == -EBUSY && info->extack) {
			BUILD_BUG_ON(sizeof(busy) > NETLINK_MAX_COOKIE_LEN);
			memcpy(info->extack->cookie, &busy, sizeof(busy));
			info->extack->cookie_len = sizeof(busy);
		}
		return ret;
	}
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;	/* the session exists: status shows it */
	hdr = genlmsg_put_reply(msg, info, &ibckpt_genl_family, 0, IBCKPT_CMD_FREEZE);
	if (!hdr || nla_put_u64_64bit(msg, IBCKPT_A_SESSION_ID, id, IBCKPT_A_PAD)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

/*
 * Released, not yet running again: the reply names the session, which
 * SESSION_GET lists (THAWING) until every thread has left its park.
 */
static int ibckpt_nl_thaw(struct sk_buff *skb, struct genl_info *info)
{
	const char *why = NULL;
	struct ibckpt_sel sel;
	struct sk_buff *msg;
	void *hdr;
	u64 id;
	int ret;

	ret = ibckpt_nl_check_perm(skb, info);
	if (ret)
		return ret;
	ibckpt_nl_sel(info->attrs, &sel);
	/* the reply first: once thawed, the request must not fail */
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &ibckpt_genl_family, 0, IBCKPT_CMD_THAW);
	if (!hdr) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	ret = ibckpt_session_thaw(&sel, &id, &why);
	if (ret) {
		nlmsg_free(msg);
		ibckpt_nl_why(info, why);
		return ret;
	}
	if (nla_put_u64_64bit(msg, IBCKPT_A_SESSION_ID, id, IBCKPT_A_PAD)) {
		nlmsg_free(msg);	/* cannot happen: NLMSG_DEFAULT_SIZE */
		return 0;
	}
	genlmsg_end(msg, hdr);
	/* a reply the socket had no room for: the thaw still happened */
	genlmsg_reply(msg, info);
	return 0;
}

/*
 * Called under ibckpt_sessions_lock: the list's reference keeps @s, and with
 * it the err_pid reference, alive.
 */
static int ibckpt_nl_fill_session(struct sk_buff *skb, struct netlink_callback *cb,
				  struct ibckpt_session *s, u32 job_id)
{
	struct ibckpt_quiesce q;
	struct ibckpt_tally t;
	struct nlattr *nest;
	char *path = NULL;
	u32 state, nprocs;
	void *hdr;
	int err = -EMSGSIZE;

	if (s->job.type == IBCKPT_JOB_CGROUP) {
		path = kmalloc(PATH_MAX, GFP_KERNEL);
		if (!path || ibckpt_job_cgroup_path(&s->job, path, PATH_MAX) < 0) {
			kfree(path);
			path = NULL;
		}
	}
	spin_lock(&s->lock);
	t = s->tally;
	q = s->q;
	state = s->state;
	nprocs = s->nprocs;
	spin_unlock(&s->lock);
	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ibckpt_genl_family, NLM_F_MULTI, IBCKPT_CMD_SESSION_GET);
	if (!hdr)
		goto out;
	nest = nla_nest_start(skb, IBCKPT_A_SESSION);
	if (!nest ||
	    nla_put_u64_64bit(skb, IBCKPT_SESSION_A_ID, s->id, IBCKPT_SESSION_A_PAD) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_JOB_TYPE, s->job.type) ||
	    (job_id && nla_put_u32(skb, IBCKPT_SESSION_A_JOB_ID, job_id)) ||
	    (s->job.type == IBCKPT_JOB_PGRP &&
	     nla_put_u32(skb, IBCKPT_SESSION_A_PGID, job_id)) ||
	    (path && nla_put_string(skb, IBCKPT_SESSION_A_CGROUP, path)) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_PROCS, nprocs) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_STATE, state) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_FLAGS, s->flags) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_THREADS, t.threads) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_PARKED, t.parked) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_PENDING, t.pending) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_EXITED, t.exited) ||
	    nla_put_u64_64bit(skb, IBCKPT_SESSION_A_FREEZE_NS, READ_ONCE(s->freeze_ns),
			      IBCKPT_SESSION_A_PAD) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_PROVIDERS, q.providers) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_QUIESCED, q.answered) ||
	    nla_put_u64_64bit(skb, IBCKPT_SESSION_A_DRAINED, q.drained, IBCKPT_SESSION_A_PAD) ||
	    nla_put_u32(skb, IBCKPT_SESSION_A_OUTSTANDING, q.outstanding) ||
	    (q.err && (nla_put_u32(skb, IBCKPT_SESSION_A_QUIESCE_ERR, q.err) ||
		       nla_put_u32(skb, IBCKPT_SESSION_A_QUIESCE_PID,
				   pid_nr_ns(q.err_pid, task_active_pid_ns(current))))) ||
	    (q.err && q.why.msg[0] &&
	     nla_put_string(skb, IBCKPT_SESSION_A_QUIESCE_MSG, q.why.msg)) ||
	    (q.err && q.why.has_qpn &&
	     nla_put_u32(skb, IBCKPT_SESSION_A_QUIESCE_QPN, q.why.qpn))) {
		genlmsg_cancel(skb, hdr);
		goto out;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	err = 0;
out:
	kfree(path);
	return err;
}

/*
 * The session a dump is about, resolved once in its start (a cgroup is
 * named by a file descriptor of the requester): cb->args[5] is its id, 0
 * for "every session" where that is allowed.
 */
static int ibckpt_nl_dump_resolve(struct netlink_callback *cb, bool required)
{
	struct nlattr **attrs = genl_dumpit_info(cb)->attrs;
	struct ibckpt_session *s;
	const char *why = NULL;
	struct ibckpt_sel sel;

	ibckpt_nl_sel(attrs, &sel);
	cb->args[5] = 0;
	if (!sel.id && !sel.type && !required)
		return 0;
	s = ibckpt_session_get(&sel, &why);
	if (IS_ERR(s)) {
		if (why && cb->extack)
			cb->extack->_msg = why;
		return PTR_ERR(s);
	}
	cb->args[5] = s->id;
	ibckpt_session_put(s);
	return 0;
}

static int ibckpt_nl_session_start(struct netlink_callback *cb)
{
	int ret = ibckpt_nl_dump_resolve(cb, false);

	/* a job that is not frozen: an empty list, not an error */
	if (ret == -ENOENT) {
		cb->args[5] = U64_MAX;
		ret = 0;
	}
	return ret;
}

/* cb->args[0]: sessions already emitted. */
static int ibckpt_nl_session_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	u64 want = cb->args[5];
	struct ibckpt_session *s;
	u32 job_id;
	long i = 0;
	int err = 0;

	mutex_lock(&ibckpt_sessions_lock);
	list_for_each_entry(s, &ibckpt_sessions, node) {
		job_id = s->job.pid ? pid_nr_ns(s->job.pid, ns) : 0;
		if ((s->job.pid && !job_id) || (want && s->id != want))
			continue;
		if (i++ < cb->args[0])
			continue;
		err = ibckpt_nl_fill_session(skb, cb, s, job_id);
		if (err)
			break;
		cb->args[0] = i;
	}
	mutex_unlock(&ibckpt_sessions_lock);
	return err && !skb->len ? err : skb->len;
}

/*
 * @where: also say where the thread is parked (its user-space instruction
 * pointer and system call): like /proc/PID/syscall, not for everyone, since
 * it defeats ASLR of other users' processes.
 */
static int ibckpt_nl_fill_thread(struct sk_buff *skb, struct netlink_callback *cb,
				 struct ibckpt_thread *thr, struct pid_namespace *ns, bool where,
				 bool admin)
{
	struct task_struct *task;
	struct nlattr *nest;
	pid_t tgid = 0;
	void *hdr;

	rcu_read_lock();
	task = pid_task(thr->pid, PIDTYPE_PID);
	if (task)
		tgid = task_tgid_nr_ns(task, ns);
	/* a checkpoint tool without CAP_SYS_ADMIN: only its own user's */
	if (where && !admin)
		where = task && ibckpt_may_freeze(current_cred(), false, task->group_leader);
	rcu_read_unlock();
	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ibckpt_genl_family, NLM_F_MULTI, IBCKPT_CMD_THREAD_GET);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, IBCKPT_A_THREAD);
	if (!nest ||
	    nla_put_u32(skb, IBCKPT_THREAD_A_TID, pid_nr_ns(thr->pid, ns)) ||
	    nla_put_u32(skb, IBCKPT_THREAD_A_TGID, tgid) ||
	    nla_put_u32(skb, IBCKPT_THREAD_A_STATE, thr->state) ||
	    (where && (nla_put_u64_64bit(skb, IBCKPT_THREAD_A_USER_IP, thr->user_ip,
					 IBCKPT_THREAD_A_PAD) ||
		       nla_put_u32(skb, IBCKPT_THREAD_A_SYSCALL, thr->syscall)))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

static int ibckpt_nl_thread_start(struct netlink_callback *cb)
{
	return ibckpt_nl_dump_resolve(cb, true);
}

/* cb->args[0]: threads already emitted. */
static int ibckpt_nl_thread_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	bool where = ibckpt_nl_privileged(cb->skb);
	bool admin = where && netlink_ns_capable(cb->skb, &init_user_ns, CAP_SYS_ADMIN);
	struct ibckpt_session *s;
	struct ibckpt_thread *thr;
	long i = 0;
	int err = 0;

	mutex_lock(&ibckpt_sessions_lock);
	s = ibckpt_session_find_id(cb->args[5]);
	if (!s) {
		err = -ENOENT;
		goto out;
	}
	spin_lock(&s->lock);
	list_for_each_entry(thr, &s->threads, node) {
		if (i++ < cb->args[0])
			continue;
		err = ibckpt_nl_fill_thread(skb, cb, thr, ns, where, admin);
		if (err)
			break;
		cb->args[0] = i;
	}
	spin_unlock(&s->lock);
out:
	mutex_unlock(&ibckpt_sessions_lock);
	return err && !skb->len ? err : skb->len;
}

/* Bytes of snapshot per message: several fit one dump skb. */
#define IBCKPT_SNAP_PIECE	3072

static int ibckpt_nl_fill_piece(struct sk_buff *skb, struct netlink_callback *cb,
				const struct ibckpt_proc *p, u32 tgid, u32 off)
{
	u32 n = min_t(u32, p->snap_len - off, IBCKPT_SNAP_PIECE);
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ibckpt_genl_family, NLM_F_MULTI, IBCKPT_CMD_SNAPSHOT_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, IBCKPT_A_SNAP_TGID, tgid) ||
	    nla_put_u32(skb, IBCKPT_A_SNAP_TOTAL, p->snap_len) ||
	    nla_put_u32(skb, IBCKPT_A_SNAP_OFFSET, off) ||
	    nla_put(skb, IBCKPT_A_SNAP_DATA, n, (const u8 *)p->snap + off)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return n;
}

/* A process of the dumped job as the kernel sees it: its IBCKPT_A_KPROC. */
static int ibckpt_nl_fill_kproc(struct sk_buff *skb, struct netlink_callback *cb, u32 tgid,
				u32 flags, u64 pinned, u32 nqps)
{
	struct nlattr *nest;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ibckpt_genl_family, NLM_F_MULTI, IBCKPT_CMD_SNAPSHOT_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, IBCKPT_A_SNAP_TGID, tgid))
		goto cancel;
	nest = nla_nest_start(skb, IBCKPT_A_KPROC);
	if (!nest ||
	    nla_put_u32(skb, IBCKPT_KPROC_A_FLAGS, flags) ||
	    nla_put_u64_64bit(skb, IBCKPT_KPROC_A_PINNED, pinned, IBCKPT_KPROC_A_PAD) ||
	    nla_put_u32(skb, IBCKPT_KPROC_A_QPS, nqps))
		goto cancel;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* One QP of a process's kernel view: its IBCKPT_A_KQP. */
static int ibckpt_nl_fill_kqp(struct sk_buff *skb, struct netlink_callback *cb, u32 tgid,
			      const void *snap, const struct ibckpt_kqp *k,
			      struct pid_namespace *ns)
{
	u32 owner = k->owner ? pid_nr_ns(k->owner, ns) : 0;
	struct nlattr *nest;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ibckpt_genl_family, NLM_F_MULTI, IBCKPT_CMD_SNAPSHOT_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, IBCKPT_A_SNAP_TGID, tgid))
		goto cancel;
	nest = nla_nest_start(skb, IBCKPT_A_KQP);
	if (!nest ||
	    nla_put_u32(skb, IBCKPT_KQP_A_HANDLE, ibckpt_kqp_rec(snap, k)->handle) ||
	    nla_put_string(skb, IBCKPT_KQP_A_DEVICE, ibckpt_kqp_dev(snap, k)) ||
	    nla_put_u32(skb, IBCKPT_KQP_A_QPN, ibckpt_kqp_rec(snap, k)->qpn) ||
	    (owner && nla_put_u32(skb, IBCKPT_KQP_A_OWNER, owner)) ||
	    nla_put_u32(skb, IBCKPT_KQP_A_TYPE, k->type) ||
	    nla_put_u32(skb, IBCKPT_KQP_A_PORT, k->port))
		goto cancel;
	if (k->query_err ?
	    nla_put_u32(skb, IBCKPT_KQP_A_QUERY_ERR, k->query_err) :
	    nla_put_u32(skb, IBCKPT_KQP_A_STATE, k->state) ||
	    nla_put_u32(skb, IBCKPT_KQP_A_DEST_QPN, k->dest_qpn) ||
	    nla_put_u32(skb, IBCKPT_KQP_A_SQ_PSN, k->sq_psn) ||
	    nla_put_u32(skb, IBCKPT_KQP_A_RQ_PSN, k->rq_psn))
		goto cancel;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/*
 * After a process's snapshot: its IBCKPT_A_KPROC, then one IBCKPT_A_KQP per
 * QP checked. cb->args[2]: 0 before the KPROC, then 1 + the KQPs sent.
 */
static int ibckpt_nl_fill_kview(struct sk_buff *skb, struct netlink_callback *cb,
				const struct ibckpt_proc *p, u32 tgid, struct pid_namespace *ns)
{
	const struct ibckpt_snap_hdr *h = p->snap;
	const struct ibckpt_kview *kv = p->kview;
	u32 n = kv && !kv->released ? kv->n : 0;
	int err;

	if (!cb->args[2]) {
		err = ibckpt_nl_fill_kproc(skb, cb, tgid,
					   kv && kv->released ? IBCKPT_KPROC_F_RELEASED : 0,
					   h->pinned_bytes, n);
		if (err)
			return err;
		cb->args[2] = 1;
	}
	while (cb->args[2] - 1 < n) {
		err = ibckpt_nl_fill_kqp(skb, cb, tgid, p->snap, &kv->qp[cb->args[2] - 1], ns);
		if (err)
			return err;
		cb->args[2]++;
	}
	return 0;
}

/*
 * SNAPSHOT_GET's cb->args[4]: IBCKPT_A_FLAGS in its lower half, in its upper
 * the job's generation (struct ibckpt_session, @gen) when the dump started.
 */
static u32 ibckpt_nl_snap_flags(const struct netlink_callback *cb)
{
	return lower_32_bits(cb->args[4]);
}

/* The job changed since the dump started: under the lock of what is read next. */
static bool ibckpt_nl_snap_changed(const struct netlink_callback *cb,
				   struct ibckpt_session *s)
{
	return (u32)atomic_read(&s->gen) != upper_32_bits(cb->args[4]);
}

/*
 * A process of the job that gave no snapshot for session @s (it does not
 * use the provider): its IBCKPT_A_KPROC with the memory it pins now. 0 if it
 * has one, is gone, or is not visible in @ns: nothing to say; -EAGAIN if the
 * job changed.
 */
static int ibckpt_nl_fill_other(struct sk_buff *skb, struct netlink_callback *cb,
				struct ibckpt_session *s, struct pid *pid,
				struct pid_namespace *ns)
{
	u32 tgid = pid_nr_ns(pid, ns);
	struct task_struct *task;
	struct ibckpt_proc *p;
	struct mm_struct *mm;
	bool snap = false;
	u64 pinned = 0;

	if (!tgid)
		return 0;
	mutex_lock(&ibckpt_procs_lock);
	if (ibckpt_nl_snap_changed(cb, s)) {
		mutex_unlock(&ibckpt_procs_lock);
		return -EAGAIN;
	}
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (p->tgid == pid) {
			snap = p->snap && p->quiesce_session == s->id;
			break;
		}
	}
	mutex_unlock(&ibckpt_procs_lock);
	if (snap)
		return 0;
	task = get_pid_task(pid, PIDTYPE_TGID);
	if (!task)
		return 0;
	mm = get_task_mm(task);
	put_task_struct(task);
	if (mm) {
		pinned = (u64)atomic64_read(&mm->pinned_vm) << PAGE_SHIFT;
		mmput(mm);
	}
	return ibckpt_nl_fill_kproc(skb, cb, tgid, IBCKPT_KPROC_F_NO_SNAPSHOT, pinned, 0);
}

#define IBCKPT_NL_BATCH	16

/*
 * After the snapshots: the processes of the job without one, in batches
 * taken under the session's lock. cb->args[3]: members already considered;
 * a place that holds while the generation does (a member joining changes
 * it; none ever leaves). -EAGAIN if the job changed.
 */
static int ibckpt_nl_kview_others(struct sk_buff *skb, struct netlink_callback *cb,
				  struct ibckpt_session *s, struct pid_namespace *ns)
{
	struct pid *batch[IBCKPT_NL_BATCH];
	struct ibckpt_member *m;
	int bkt, n, j, err = 0;
	long i;

	do {
		n = 0;
		i = 0;
		spin_lock(&s->lock);
		if (ibckpt_nl_snap_changed(cb, s)) {
			spin_unlock(&s->lock);
			return -EAGAIN;
		}
		hash_for_each(s->members, bkt, m, node) {
			if (i++ < cb->args[3])
				continue;
			batch[n++] = get_pid(m->tgid);
			if (n == IBCKPT_NL_BATCH)
				break;
		}
		spin_unlock(&s->lock);
		for (j = 0; j < n; j++) {
			if (!err)
				err = ibckpt_nl_fill_other(skb, cb, s, batch[j], ns);
			if (!err)
				cb->args[3]++;
			put_pid(batch[j]);
		}
	} while (!err && n == IBCKPT_NL_BATCH);
	return err;
}

/* Every provider that gave a snapshot for session @id is the reader's to read. */
static bool ibckpt_nl_snapshots_mine(u64 id)
{
	const struct cred *cred = current_cred();
	struct ibckpt_proc *p;
	struct task_struct *t;
	bool mine = true;

	mutex_lock(&ibckpt_procs_lock);
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (p->quiesce_session != id || !p->snap)
			continue;
		rcu_read_lock();
		t = pid_task(p->tgid, PIDTYPE_TGID);
		mine = t && ibckpt_may_freeze(cred, false, t);
		rcu_read_unlock();
		if (!mine)
			break;
	}
	mutex_unlock(&ibckpt_procs_lock);
	return mine;
}

/*
 * Refuse before the dump starts, so that the requester gets an error, not an
 * empty dump. (6.1 gives a dump's start no extended ack, cb->extack is NULL:
 * the errno alone tells EPERM, no privilege, from EACCES, another user's
 * job, and ENOENT, not frozen.)
 */
static int ibckpt_nl_snapshot_start(struct netlink_callback *cb)
{
	struct ibckpt_session *s;
	bool frozen = false, mine;
	struct nlattr **attrs;
	u32 gen = 0;
	int ret;

	if (!ibckpt_nl_privileged(cb->skb)) {
		NL_SET_ERR_MSG(cb->extack, "needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN");
		return -EPERM;
	}
	attrs = genl_dumpit_info(cb)->attrs;
	cb->args[4] = attrs[IBCKPT_A_FLAGS] ? nla_get_u32(attrs[IBCKPT_A_FLAGS]) : 0;
	if (cb->args[4] & ~IBCKPT_SNAPSHOT_F_KVIEW) {
		NL_SET_ERR_MSG(cb->extack, "unknown snapshot flags");
		return -EINVAL;
	}
	ret = ibckpt_nl_dump_resolve(cb, true);
	if (ret)
		return ret;
	mutex_lock(&ibckpt_sessions_lock);
	s = ibckpt_session_find_id(cb->args[5]);
	if (s) {
		/* together: the release that ends FROZEN changes the generation */
		spin_lock(&s->lock);
		frozen = s->state == IBCKPT_STATE_FROZEN;
		gen = atomic_read(&s->gen);
		spin_unlock(&s->lock);
	}
	mutex_unlock(&ibckpt_sessions_lock);
	BUILD_BUG_ON(sizeof(cb->args[4]) < sizeof(u64));
	cb->args[4] |= (long)((u64)gen << 32);
	/* MR addresses and rkeys are credentials on the fabric: only one's own */
	mine = netlink_ns_capable(cb->skb, &init_user_ns, CAP_SYS_ADMIN) ||
	       ibckpt_nl_snapshots_mine(cb->args[5]);
	if (!frozen) {
		NL_SET_ERR_MSG(cb->extack, "the job is not frozen");
		return -ENOENT;
	}
	if (!mine) {
		NL_SET_ERR_MSG(cb->extack,
			       "the job has another user's process: needs CAP_SYS_ADMIN");
		return -EACCES;
	}
	return 0;
}

/* The dumped session, with a reference; NULL once it is no longer listed. */
static struct ibckpt_session *ibckpt_nl_snap_session(struct netlink_callback *cb)
{
	struct ibckpt_session *s;

	mutex_lock(&ibckpt_sessions_lock);
	s = ibckpt_session_find_id(cb->args[5]);
	if (s)
		kref_get(&s->ref);
	mutex_unlock(&ibckpt_sessions_lock);
	return s;
}

/*
 * cb->args[0]: the snapshot being sent, by its process's global id (0 before
 * the first, -1 once all are sent); cb->args[1]: bytes of it sent;
 * cb->args[2], [3]: the kernel's view, with IBCKPT_SNAPSHOT_F_KVIEW
 * (cb->args[4]): see ibckpt_nl_fill_kview() and ibckpt_nl_kview_others().
 * Only the snapshots given for this session count: a process that belonged
 * to another frozen job before is not mixed in.
 *
 * The job can change between two rounds although it is frozen: a control
 * thread is never parked and may close /dev/ibckpt, a process may be
 * killed, a thaw drops every snapshot, a newcomer joins. Whatever the dump
 * reads, it reads under the lock of that part of the job, and first checks
 * there that the job's generation is still the one of its start (struct
 * ibckpt_session, @gen): if not, it ends with -EAGAIN (the job changed
 * while it was read), after what it read before the change. So no snapshot
 * is missing because its process left before its turn, none is resumed in
 * another's place, no process is said twice, and the places the rounds
 * resume at (a process's id, a member's rank) hold.
 */
static int ibckpt_nl_snapshot_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	bool resume = cb->args[0] > 0;
	u64 id = cb->args[5];
	struct ibckpt_session *s;
	struct ibckpt_proc *p;
	int n, err = 0;
	u32 tgid;

	/* every snapshot sent, nothing more to read */
	if (cb->args[0] < 0 && !(ibckpt_nl_snap_flags(cb) & IBCKPT_SNAPSHOT_F_KVIEW))
		return 0;
	/* ended and gone: its generation changed first */
	s = ibckpt_nl_snap_session(cb);
	if (!s)
		return -EAGAIN;
	if (cb->args[0] < 0)
		goto others;
	mutex_lock(&ibckpt_procs_lock);
	if (ibckpt_nl_snap_changed(cb, s)) {
		err = -EAGAIN;
		goto out;
	}
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (!p->snap || p->quiesce_session != id)
			continue;
		tgid = pid_nr_ns(p->tgid, ns);
		if (!tgid)
			continue;
		if (resume) {
			/* sent in an earlier round, or the one being sent */
			if (pid_nr(p->tgid) != cb->args[0])
				continue;
			resume = false;
		} else {
			cb->args[0] = pid_nr(p->tgid);
			cb->args[1] = 0;
			cb->args[2] = 0;
		}
		while (cb->args[1] < p->snap_len) {
			n = ibckpt_nl_fill_piece(skb, cb, p, tgid, cb->args[1]);
			if (n < 0) {
				err = n;
				goto out;
			}
			cb->args[1] += n;
		}
		if (ibckpt_nl_snap_flags(cb) & IBCKPT_SNAPSHOT_F_KVIEW) {
			err = ibckpt_nl_fill_kview(skb, cb, p, tgid, ns);
			if (err)
				goto out;
		}
	}
	mutex_unlock(&ibckpt_procs_lock);
	/* the one being sent is gone: never the next's pieces from its offset */
	if (resume) {
		err = -EAGAIN;
		goto put;
	}
	cb->args[0] = -1;
others:
	if (ibckpt_nl_snap_flags(cb) & IBCKPT_SNAPSHOT_F_KVIEW)
		err = ibckpt_nl_kview_others(skb, cb, s, ns);
	goto put;
out:
	mutex_unlock(&ibckpt_procs_lock);
put:
	ibckpt_session_put(s);
	/* an error after messages: they go first, the next round finds it again */
	return err && !skb->len ? err : skb->len;
}

static const struct genl_ops ibckpt_genl_ops[] = {
	{
		.cmd = IBCKPT_CMD_GET_VERSION,
		.doit = ibckpt_nl_get_version,
	},
	{
		.cmd = IBCKPT_CMD_PROC_GET,
		.dumpit = ibckpt_nl_proc_dump,
	},
	{
		.cmd = IBCKPT_CMD_FREEZE,
		.doit = ibckpt_nl_freeze,
	},
	{
		.cmd = IBCKPT_CMD_THAW,
		.doit = ibckpt_nl_thaw,
	},
	{
		.cmd = IBCKPT_CMD_SESSION_GET,
		.start = ibckpt_nl_session_start,
		.dumpit = ibckpt_nl_session_dump,
	},
	{
		.cmd = IBCKPT_CMD_THREAD_GET,
		.start = ibckpt_nl_thread_start,
		.dumpit = ibckpt_nl_thread_dump,
	},
	{
		.cmd = IBCKPT_CMD_SNAPSHOT_GET,
		.start = ibckpt_nl_snapshot_start,
		.dumpit = ibckpt_nl_snapshot_dump,
	},
};

static struct genl_family ibckpt_genl_family __ro_after_init = {
	.name = IBCKPT_GENL_NAME,
	.version = IBCKPT_GENL_VERSION,
	.maxattr = IBCKPT_A_MAX,
	.policy = ibckpt_genl_policy,
	.netnsok = false,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = ibckpt_genl_ops,
	.n_ops = ARRAY_SIZE(ibckpt_genl_ops),
};

/**
 * ibckpt_genl_init() - register the generic netlink family
 *
 * Return: 0 or a negative errno from genl_register_family().
 */
int ibckpt_genl_init(void)
{
	return genl_register_family(&ibckpt_genl_family);
}

/**
 * ibckpt_genl_exit() - unregister the family; no handler runs afterwards
 */
void ibckpt_genl_exit(void)
{
	genl_unregister_family(&ibckpt_genl_family);
}
