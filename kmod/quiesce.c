// SPDX-License-Identifier: GPL-2.0
/*
 * The providers' part of a freeze.
 *
 * A freeze first tells every registered process of the job
 * (IBCKPT_EV_QUIESCE): its control thread closes the provider's verbs gate,
 * so that no application thread is inside a vendor call holding its locks,
 * drains the CQs into private queues, and answers (IBCKPT_IOC_QUIESCED). Only
 * when every provider asked has answered does the session park application
 * threads: a thread parked inside the gate would keep it from
 * closing. A failed answer aborts the freeze; a process whose registration
 * ends (it exits) counts as answered. The end of the session, thaw or abort,
 * is told to every provider asked (IBCKPT_EV_THAW or IBCKPT_EV_ABORT) so that
 * it reopens the gate.
 *
 * The snapshot a provider gives before it answers is checked against the
 * RDMA core's own record of its QPs (rdma_view.c): a snapshot the module
 * refuses for what it says counts as the process's answer, failed, whatever
 * the provider answers afterwards.
 *
 * Locking: ibckpt_procs_lock protects the per-process request state; a
 * session's counters are under its spinlock. Answers find their session under
 * ibckpt_sessions_lock, never while holding ibckpt_procs_lock. A snapshot
 * kept and a registration ending take ibckpt_procs_lock inside
 * ibckpt_sessions_lock: they bump their session's generation (session.h,
 * @gen) in the section that makes the change, and find it by id.
 */
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/workqueue.h>

#include "ibckpt.h"
#include "rdma_view.h"
#include "registry.h"
#include "session.h"

/* Is the registered process part of the session's job? */
static bool ibckpt_proc_in_job(struct ibckpt_proc *p, struct ibckpt_session *s)
{
	struct task_struct *t;
	bool in;

	rcu_read_lock();
	t = pid_task(p->tgid, PIDTYPE_TGID);
	/* another user's process is not the requester's to quiesce */
	in = t && ibckpt_session_covers(s, t) && ibckpt_may_freeze(s->cred, s->admin, t);
	rcu_read_unlock();
	return in;
}

/*
 * The registration's control thread is gone (the process died, or only the
 * thread did): no answer can come. Its file may outlive it in a child that
 * inherited it across fork(), so the release that counts as an answer may
 * never happen.
 */
static bool ibckpt_proc_mute(struct ibckpt_proc *p)
{
	bool gone;

	rcu_read_lock();
	gone = !pid_task(p->ctrl, PIDTYPE_PID);
	rcu_read_unlock();
	return gone;
}

/**
 * ibckpt_quiesce_ask() - ask the job's providers not asked yet to quiesce
 * @s: the session
 *
 * Called before every scan of the job, so that a provider whose process
 * joins the job (or is born into it) is asked before its threads are
 * parked. A process another session asked already is left to it. A
 * provider asked whose control thread died counts as answered.
 */
void ibckpt_quiesce_ask(struct ibckpt_session *s)
{
	struct ibckpt_proc *p;
	u32 n = 0, failed = 0, gone = 0;
	struct pid *fpid = NULL;

	mutex_lock(&ibckpt_procs_lock);
	/*
	 * Under the lock: ibckpt_quiesce_end() of a release takes it after the
	 * release is marked, so a request made here is always ended.
	 */
	if (READ_ONCE(s->released)) {
		mutex_unlock(&ibckpt_procs_lock);
		return;
	}
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (p->quiesce_session == s->id && !p->quiesce_answered && ibckpt_proc_mute(p)) {
			/* asked, and nobody is left to answer: done */
			p->quiesce_answered = true;
			gone++;
			continue;
		}
		if (p->quiesce_session || !ibckpt_proc_in_job(p, s))
			continue;
		p->quiesce_session = s->id;
		p->quiesce_answered = false;
		ibckpt_session_changed(s);
		if (ibckpt_evq_post(&p->events, IBCKPT_EV_QUIESCE, s->id)) {
			/* a control thread 16 events behind: treat as failed */
			p->quiesce_answered = true;
			if (!failed++)
				fpid = get_pid(p->tgid);
		}
		n++;
	}
	mutex_unlock(&ibckpt_procs_lock);
	if (!n && !gone)
		return;
	spin_lock(&s->lock);
	s->q.providers += n;
	s->q.answered += failed + gone;
	if (failed && !s->q.err) {
		s->q.err = ENOBUFS;
		s->q.err_pid = fpid;
		fpid = NULL;
	}
	spin_unlock(&s->lock);
	put_pid(fpid);
}

/**
 * ibckpt_quiesce_end() - tell the providers asked that the freeze is over
 * @s: the session
 * @event: IBCKPT_EV_THAW or IBCKPT_EV_ABORT
 */
void ibckpt_quiesce_end(struct ibckpt_session *s, u32 event)
{
	struct ibckpt_proc *p;

	mutex_lock(&ibckpt_procs_lock);
	list_for_each_entry(p, &ibckpt_procs, node) {
		if (p->quiesce_session != s->id)
			continue;
		p->quiesce_session = 0;
		ibckpt_snapshot_drop(p);	/* the state it described is going away */
		ibckpt_session_changed(s);
		if (ibckpt_evq_post_end(&p->events, event, s->id))
			pr_warn("ibckpt: pid %d: control thread 16 events behind, oldest dropped\n",
				pid_nr(p->tgid));
	}
	mutex_unlock(&ibckpt_procs_lock);
}

/*
 * Count @p's answer to its quiesce request: @session, 0 for whatever it was
 * asked (its registration ends); its counters @q (NULL: none), its failure
 * @status (positive errno, 0) and, when the module refused its snapshot,
 * @why. The first failure of the session is kept, with its process.
 */
static int ibckpt_quiesce_count(struct ibckpt_proc *p, u64 session,
				const struct ibckpt_quiesced *q, u32 status,
				const struct ibckpt_why *why)
{
	struct ibckpt_session *s;
	u64 id;

	mutex_lock(&ibckpt_procs_lock);
	id = p->quiesce_session;
	if (!id || (session && session != id)) {
		mutex_unlock(&ibckpt_procs_lock);
		return session ? -ESRCH : 0;
	}
	if (p->quiesce_answered) {
		mutex_unlock(&ibckpt_procs_lock);
		return session ? -EALREADY : 0;
	}
	p->quiesce_answered = true;
	mutex_unlock(&ibckpt_procs_lock);

	mutex_lock(&ibckpt_sessions_lock);
	s = ibckpt_session_find_id(id);
	if (s) {
		spin_lock(&s->lock);
		s->q.answered++;
		if (q) {
			s->q.drained += q->n_drained;
			s->q.outstanding += q->n_outstanding;
		}
		if (status && !s->q.err) {
			s->q.err = status;
			s->q.err_pid = get_pid(p->tgid);
			if (why)
				s->q.why = *why;
		}
		spin_unlock(&s->lock);
		/* the session may go on (or give up) now */
		mod_delayed_work(ibckpt_wq, &s->converge, 0);
	}
	mutex_unlock(&ibckpt_sessions_lock);
	return 0;
}

/**
 * ibckpt_quiesce_answer() - a provider's answer, or its registration ending
 * @p: the registered process
 * @q: its answer; NULL when its registration ends (counts as done)
 *
 * Return: 0, -ESRCH if it was not asked for that session (a late answer
 * after an abort, or session 0, which no freeze has), -EALREADY if it
 * answered already (or the module refused its snapshot, which answered for
 * it).
 */
int ibckpt_quiesce_answer(struct ibckpt_proc *p, const struct ibckpt_quiesced *q)
{
	/* session 0 stands for "the registration ends" below: never an answer */
	if (q && !q->session)
		return -ESRCH;
	return ibckpt_quiesce_count(p, q ? q->session : 0, q, q ? q->status : 0, NULL);
}

/**
 * ibckpt_quiesce_unlist() - a registration ends: off the list of processes
 * @p: the registered process
 *
 * No freeze asks it from now on; a session it was asked for changed (its
 * snapshot, if any, is no longer one of the job's).
 */
void ibckpt_quiesce_unlist(struct ibckpt_proc *p)
{
	struct ibckpt_session *s;

	mutex_lock(&ibckpt_sessions_lock);
	mutex_lock(&ibckpt_procs_lock);
	list_del(&p->node);
	s = p->quiesce_session ? ibckpt_session_find_id(p->quiesce_session) : NULL;
	if (s)
		ibckpt_session_changed(s);
	mutex_unlock(&ibckpt_procs_lock);
	mutex_unlock(&ibckpt_sessions_lock);
}

/**
 * ibckpt_snapshot_take() - keep the snapshot a provider gives while quiescing
 * @p: the registered process
 * @a: where the snapshot is in its memory
 *
 * The snapshot is parsed and every QP it names is checked against the RDMA
 * core's own record of it (ibckpt_rdma_view()); that record is kept with
 * it, for `ibckpt dump`. The other records are checked for their framing
 * only; `ibckpt dump` validates every record before it believes one. The
 * header's identity is the module's word, not the provider's: the process
 * id and its pinned memory are stamped here. One snapshot per session, given
 * before the answer: the state at the quiesce cannot be rewritten
 * afterwards. A snapshot refused for what it says (malformed, another
 * session's, or one the RDMA core disagrees with) fails the process's
 * quiesce at once, with the reason: it counts as its answer. The memory is
 * charged to the process (a job cannot make the kernel keep memory on its
 * behalf that its cgroup does not pay for).
 *
 * Context: the process's control thread (current).
 * Return: 0, -ESRCH if no freeze asked it for that session, -EALREADY if it
 * gave one already or answered, -EINVAL for a malformed snapshot, -EPROTO
 * if the RDMA core disagrees with it, -EFBIG if too long, -EFAULT, -ENOMEM.
 */
int ibckpt_snapshot_take(struct ibckpt_proc *p, const struct ibckpt_snapshot_arg *a)
{
	struct ibckpt_why why = {};
	struct ibckpt_session *s;
	struct ibckpt_kview *kv;
	struct ibckpt_snap_hdr *h;
	void *buf;
	int ret;

	if (a->len < sizeof(*h))
		return -EINVAL;
	if (a->len > IBCKPT_SNAP_MAX_LEN)
		return -EFBIG;
	mutex_lock(&ibckpt_procs_lock);
	ret = !a->session || p->quiesce_session != a->session ? -ESRCH :
	      p->snap || p->quiesce_answered ? -EALREADY : 0;
	mutex_unlock(&ibckpt_procs_lock);
	if (ret)
		return ret;
	buf = kvmalloc(a->len, GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, u64_to_user_ptr(a->addr), a->len)) {
		kvfree(buf);
		return -EFAULT;
	}
	h = buf;
	if (h->session != a->session) {
		snprintf(why.msg, sizeof(why.msg), "a snapshot of session %llu, not %llu",
			 (unsigned long long)h->session, (unsigned long long)a->session);
		kv = ERR_PTR(-EINVAL);
	} else {
		kv = ibckpt_rdma_view(buf, a->len, &why);
	}
	if (IS_ERR(kv)) {
		ret = PTR_ERR(kv);
		kvfree(buf);
		/* refused for what it says: the process failed to quiesce */
		if (ret != -ENOMEM)
			ibckpt_quiesce_count(p, a->session, NULL, -ret, &why);
		return ret;
	}
	h->tgid = task_tgid_vnr(current);
	h->pinned_bytes = current->mm ?
			  (u64)atomic64_read(&current->mm->pinned_vm) << PAGE_SHIFT : 0;
	mutex_lock(&ibckpt_sessions_lock);
	/* a session is listed until it has ended its requests (quiesce_end) */
	s = ibckpt_session_find_id(a->session);
	mutex_lock(&ibckpt_procs_lock);
	/* checked again: a second ioctl may have raced, or the session ended */
	ret = !s || p->quiesce_session != a->session ? -ESRCH :
	      p->snap || p->quiesce_answered ? -EALREADY : 0;
	if (!ret) {
		p->snap = buf;
		p->snap_len = a->len;
		p->kview = kv;
		buf = NULL;
		kv = NULL;
		ibckpt_session_changed(s);
	}
	mutex_unlock(&ibckpt_procs_lock);
	mutex_unlock(&ibckpt_sessions_lock);
	kvfree(buf);
	ibckpt_kview_free(kv);
	return ret;
}
