// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "ibckpt": the administrative channel of the
 * ibckpt CLI. Handlers never block for long (a doit holds genl's cb_lock for
 * reading; a slow one would stall every generic netlink user).
 */
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <net/genetlink.h>

#include "ibckpt.h"

static const struct nla_policy ibckpt_genl_policy[IBCKPT_A_MAX + 1] = {
	[IBCKPT_A_VERSION] = { .type = NLA_NUL_STRING },
	[IBCKPT_A_ABI] = { .type = NLA_U32 },
	[IBCKPT_A_PROC] = { .type = NLA_NESTED },
};

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
	task = get_pid_task(p->tgid, PIDTYPE_PID);
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

static const struct genl_ops ibckpt_genl_ops[] = {
	{
		.cmd = IBCKPT_CMD_GET_VERSION,
		.doit = ibckpt_nl_get_version,
	},
	{
		.cmd = IBCKPT_CMD_PROC_GET,
		.dumpit = ibckpt_nl_proc_dump,
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
	.resv_start_op = IBCKPT_CMD_MAX + 1,
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
