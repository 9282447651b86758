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
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <net/genetlink.h>

#include "genl.h"
#include "ibckpt.h"
#include "registry.h"
#include "session.h"

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

/**
 * ibckpt_nl_privileged() - may the request's sender do checkpoint/restore work
 * @skb: the request
 *
 * Freezing and thawing other people's processes, reading their snapshots and
 * where their threads are is checkpoint/restore work. Both the socket's
 * opener and the sender must have it (netlink_ns_capable()).
 *
 * Return: true if they have CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN.
 */
bool ibckpt_nl_privileged(const struct sk_buff *skb)
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

/**
 * ibckpt_nl_dump_resolve() - the session a dump is about
 * @cb: the dump, in its start
 * @required: the request must name a session
 *
 * Resolved once in the dump's start (a cgroup is named by a file descriptor
 * of the requester): cb->args[5] is its id, 0 for "every session" where that
 * is allowed.
 *
 * Return: 0 or a negative errno from ibckpt_session_get().
 */
int ibckpt_nl_dump_resolve(struct netlink_callback *cb, bool required)
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

struct genl_family ibckpt_genl_family __ro_after_init = {
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
