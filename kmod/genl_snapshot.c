// SPDX-License-Identifier: GPL-2.0
/*
 * SNAPSHOT_GET: the snapshots the providers of a frozen job gave, and with
 * IBCKPT_SNAPSHOT_F_KVIEW the RDMA core's view of each process beside them.
 *
 * It is apart from the other commands (genl.c) because it is the one that
 * reads the registry and the job over several rounds of a dump, and checks
 * at each round that the job did not change meanwhile.
 */
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/sched/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <net/genetlink.h>

#include "genl.h"
#include "ibckpt.h"
#include "registry.h"
#include "session.h"
#include "snap_check.h"

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

/**
 * ibckpt_nl_snapshot_start() - SNAPSHOT_GET's start: check the request
 * @cb: the dump
 *
 * Refuse before the dump starts, so that the requester gets an error, not an
 * empty dump. (6.1 gives a dump's start no extended ack, cb->extack is NULL:
 * the errno alone tells EPERM, no privilege, from EACCES, another user's
 * job, and ENOENT, not frozen.)
 *
 * Return: 0, -EPERM, -EINVAL, -EACCES, -ENOENT or an error of
 * ibckpt_nl_dump_resolve().
 */
int ibckpt_nl_snapshot_start(struct netlink_callback *cb)
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

/**
 * ibckpt_nl_snapshot_dump() - SNAPSHOT_GET's dump: one round of messages
 * @skb: the message buffer of this round
 * @cb: the dump
 *
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
 *
 * Return: the bytes put in @skb, 0 when done, or a negative errno.
 */
int ibckpt_nl_snapshot_dump(struct sk_buff *skb, struct netlink_callback *cb)
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
