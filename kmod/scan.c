// SPDX-License-Identifier: GPL-2.0
/*
 * The scan: one look over a session's job for threads to park. It walks the
 * job's processes (job.c), leaves alone what it must not park (the
 * requester, init, another user's process, the providers' control threads,
 * the processes of providers not asked yet) and hands every other thread no
 * session holds to the session to track.
 *
 * It is apart from session.c, which holds a session's life and state: the
 * scan only finds the threads, under RCU, and session.c tracks each one it
 * is given (ibckpt_session_track()).
 */
#include <linux/bsearch.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "registry.h"
#include "session.h"

/* Threads queued per pass of a scan, between two RCU sections. */
#define IBCKPT_SCAN_BATCH	128

/**
 * struct ibckpt_scan - one pass over the job
 * @s: the session
 * @ctrl: control threads of every registered process, sorted: never parked
 * @nctrl: how many
 * @defer: registered processes this session has not asked to quiesce (yet,
 *	or another session did), sorted: their threads are left alone, since
 *	one parked inside the provider's gate would keep the provider from
 *	quiescing. The next run asks them first.
 * @ndefer: how many
 * @unasked: how many of those the scan met in the job unasked by anyone
 *	(they registered, or joined, after this run asked): they count as
 *	found, so that the job is not called frozen while they run
 * @fresh: registered processes no session asked, sorted
 * @nfresh: how many
 * @batch: threads found, each with a task reference
 * @n: how many
 */
struct ibckpt_scan {
	struct ibckpt_session *s;
	struct pid **ctrl;
	unsigned int nctrl;
	struct pid **defer;
	unsigned int ndefer;
	unsigned int unasked;
	struct pid **fresh;
	unsigned int nfresh;
	struct task_struct *batch[IBCKPT_SCAN_BATCH];
	unsigned int n;
};

static int ibckpt_cmp_ptr(const void *a, const void *b)
{
	unsigned long x = (unsigned long)*(struct pid * const *)a;
	unsigned long y = (unsigned long)*(struct pid * const *)b;

	return x < y ? -1 : x > y;
}

static bool ibckpt_pid_in(struct pid **v, unsigned int n, struct pid *pid)
{
	return bsearch(&pid, v, n, sizeof(*v), ibckpt_cmp_ptr);
}

/* Under RCU: add the process's threads no session holds; false when full. */
static bool ibckpt_scan_visit(struct task_struct *p, void *arg)
{
	struct ibckpt_scan *sc = arg;
	struct task_struct *t;

	if (is_global_init(p) || task_tgid(p) == sc->s->requester ||
	    !ibckpt_may_freeze(sc->s->cred, sc->s->admin, p))	/* not the requester's to stop */
		return true;
	if (ibckpt_pid_in(sc->defer, sc->ndefer, task_tgid(p))) {
		sc->unasked += ibckpt_pid_in(sc->fresh, sc->nfresh, task_tgid(p));
		return true;
	}
	for_each_thread(p, t) {
		if (t->flags & (PF_KTHREAD | PF_IO_WORKER | PF_EXITING))
			continue;
		if (ibckpt_thread_holder(t) || ibckpt_pid_in(sc->ctrl, sc->nctrl, task_pid(t)))
			continue;
		if (sc->n == IBCKPT_SCAN_BATCH)
			return false;
		get_task_struct(t);
		sc->batch[sc->n++] = t;
	}
	return true;
}

/* The registry as the scan needs it (see struct ibckpt_scan). */
static int ibckpt_scan_registry(struct ibckpt_scan *sc)
{
	struct ibckpt_proc *p;
	unsigned int cnt = 0;

	mutex_lock(&ibckpt_procs_lock);
	list_for_each_entry(p, &ibckpt_procs, node)
		cnt++;
	sc->ctrl = kvcalloc(cnt ? cnt : 1, sizeof(*sc->ctrl), GFP_KERNEL);
	sc->defer = kvcalloc(cnt ? cnt : 1, sizeof(*sc->defer), GFP_KERNEL);
	sc->fresh = kvcalloc(cnt ? cnt : 1, sizeof(*sc->fresh), GFP_KERNEL);
	if (sc->ctrl && sc->defer && sc->fresh) {
		list_for_each_entry(p, &ibckpt_procs, node) {
			sc->ctrl[sc->nctrl++] = get_pid(p->ctrl);
			if (p->quiesce_session != sc->s->id)
				sc->defer[sc->ndefer++] = get_pid(p->tgid);
			if (!p->quiesce_session)
				sc->fresh[sc->nfresh++] = get_pid(p->tgid);
		}
	}
	mutex_unlock(&ibckpt_procs_lock);
	if (!sc->ctrl || !sc->defer || !sc->fresh)
		return -ENOMEM;
	sort(sc->ctrl, sc->nctrl, sizeof(*sc->ctrl), ibckpt_cmp_ptr, NULL);
	sort(sc->defer, sc->ndefer, sizeof(*sc->defer), ibckpt_cmp_ptr, NULL);
	sort(sc->fresh, sc->nfresh, sizeof(*sc->fresh), ibckpt_cmp_ptr, NULL);
	return 0;
}

static void ibckpt_scan_free(struct ibckpt_scan *sc)
{
	unsigned int i;

	for (i = 0; i < sc->nctrl; i++)
		put_pid(sc->ctrl[i]);
	for (i = 0; i < sc->ndefer; i++)
		put_pid(sc->defer[i]);
	for (i = 0; i < sc->nfresh; i++)
		put_pid(sc->fresh[i]);
	kvfree(sc->ctrl);
	kvfree(sc->defer);
	kvfree(sc->fresh);
	kfree(sc);
}

/**
 * ibckpt_session_scan() - queue a park work on every thread of the job not
 *	held yet
 * @s: the session
 *
 * Each pass starts the walk again (a position cannot be kept across RCU
 * sections), skipping what is held in O(1).
 *
 * Return: how many, or a negative errno.
 */
int ibckpt_session_scan(struct ibckpt_session *s)
{
	struct ibckpt_scan *sc;
	int total = 0, ret = 0;
	unsigned int i;
	bool full;

	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc)
		return -ENOMEM;
	sc->s = s;
	if (ibckpt_scan_registry(sc)) {
		ibckpt_scan_free(sc);
		return -ENOMEM;
	}
	do {
		sc->n = 0;
		sc->unasked = 0;
		full = !ibckpt_job_walk(&s->job, ibckpt_session_knows, s, ibckpt_scan_visit, sc);
		for (i = 0; i < sc->n; i++) {
			if (!ret)
				ret = ibckpt_session_track(s, sc->batch[i]);
			put_task_struct(sc->batch[i]);
		}
		total += sc->n;
		cond_resched();
		/* a job that grows faster than a pass: the deadline still counts */
	} while (full && !ret && !READ_ONCE(s->released) && !time_after(jiffies, s->deadline));

	total += sc->unasked;
	ibckpt_scan_free(sc);
	return ret ? ret : total;
}
