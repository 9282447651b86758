// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fork(): what a child inherits of the provider, and what it may do with it.
 *
 * A forked child gets a copy of the parent's memory and descriptors with one
 * thread: the parent's contexts and shadows, its lists, and every lock as
 * it was at that instant, possibly held by a thread that does not exist in
 * the child. libibverbs' rule is that a child does not use its parent's
 * verbs resources (with or without ibv_fork_init(): that only protects the
 * parent's memory); it may open devices of its own. So, in the child:
 *
 * - every inherited context is *foreign* (context.c): off ibckpt_ctxs, on
 *   ibckpt_foreign_ctxs, so that no quiesce, drain, snapshot, release or
 *   reacquire of the child's ever walks it (it would poll the parent's CQs,
 *   whose queue memory may be shared with the parent or MADV_DONTFORK, and
 *   wait for the parent's threads inside its gate). Its gate is
 *   closed for good (gate.h), and its posts and polls are refused by its
 *   ops (verbs.c's foreign data path): a verb on an inherited object fails with
 *   EACCES before it touches a shadow lock the fork may have copied held,
 *   or the parent's vendor objects (uverbs itself refuses the child's
 *   write() commands on the parent's file with EACCES; its ioctl() ones it
 *   would execute, on the parent's objects). ibv_close_device() on an
 *   inherited context works: it frees the child's copies and closes the
 *   child's descriptors only. Events the parent's forwarder writes into an
 *   inherited channel or async file are the parent's: a child that reads
 *   them takes them from the parent, as it would without ibckpt.
 * - the forwarding (channel.c) starts from nothing: the inherited entries
 *   are the parent's; their pipes' write ends, the vendor channels ibckpt
 *   created and the forwarder's eventfd are closed (descriptors of
 *   ibckpt's own, no number the application knows); a channel the child
 *   creates on a context of its own is forwarded by the child's control
 *   thread, or forwarder thread.
 * - the control thread (control.c) is the parent's: the child starts its
 *   own with its first context. The parent's /dev/ibckpt descriptor is
 *   closed (the module refuses it to the child anyway, and a copy left
 *   open keeps the parent registered after the parent closed its own or
 *   exited), as are the parent's restart channel pipes (rctl.c).
 * - a parent frozen or released at the fork: the child is neither.
 *
 * Lock order. prepare takes, in this order:
 *
 *	ibckpt_ctx_lock (context.c)
 *	  ctl_lock (control.c)
 *	    chan_lock (channel.c)
 *	      dev_lock (context.c)
 *	        the vendor cache's lock (vendor.c)
 *	          ids_lock (ids.c)
 *	            the gates' registry lock (gate.c)
 *
 * and every path that nests two of them nests them the same way:
 * ibckpt_ctx_lock -> ctl_lock (the control thread's released thaw and
 * ibckpt_control_reattach() under it), ibckpt_ctx_lock -> chan_lock
 * (release and snapshot: ibckpt_channel_release(), ibckpt_fwd_flush()),
 * ctl_lock -> chan_lock (ibckpt_control_start() -> ibckpt_fwd_init()),
 * ibckpt_ctx_lock -> dev_lock and -> the vendor's lock (a reacquire's
 * ibckpt_context_reopen(): device_finish(), ibv_get_device_list()). Nothing
 * is taken under chan_lock, dev_lock, the vendor's lock, ids_lock (a leaf:
 * creates, destroys and closes take it alone) or the gates' registry lock
 * (a thread's first verb and its exit take it alone, closers under
 * ibckpt_ctx_lock), and neither
 * ibckpt_ctx_lock nor ctl_lock is taken under a later one. Holding them
 * across the fork makes every list and descriptor the child's handler reads
 * consistent; the child's handler releases them.
 *
 * Per-object locks (ctx->lock, the spinlocks of QPs, SRQs, CQs, keys) are
 * not taken: only verbs take them, and in the child only verbs on the
 * child's own objects, created after the fork.
 *
 * Not covered: vfork() and posix_spawn() run no atfork handler; the child
 * only execs. A context a thread is opening while another forks is not in
 * the child's lists (no thread of the child holds it); its descriptors stay
 * open in the child, as a vendor's would.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "restart.h"

static void fork_prepare(void)
{
	ibckpt_context_atfork(IBCKPT_FORK_PREPARE);
	ibckpt_control_atfork(IBCKPT_FORK_PREPARE);
	ibckpt_channel_atfork(IBCKPT_FORK_PREPARE);
	ibckpt_device_atfork(IBCKPT_FORK_PREPARE);
	ibckpt_vendor_atfork(IBCKPT_FORK_PREPARE);
	ibckpt_ids_atfork(IBCKPT_FORK_PREPARE);
	ibckpt_gate_atfork_prepare();
}

static void fork_parent(void)
{
	ibckpt_gate_atfork_parent();
	ibckpt_ids_atfork(IBCKPT_FORK_PARENT);
	ibckpt_vendor_atfork(IBCKPT_FORK_PARENT);
	ibckpt_device_atfork(IBCKPT_FORK_PARENT);
	ibckpt_channel_atfork(IBCKPT_FORK_PARENT);
	ibckpt_control_atfork(IBCKPT_FORK_PARENT);
	ibckpt_context_atfork(IBCKPT_FORK_PARENT);
}

/* Single-threaded: each part resets its state, then releases its lock. */
static void fork_child(void)
{
	ibckpt_gate_atfork_child();
	ibckpt_ids_atfork(IBCKPT_FORK_CHILD);
	ibckpt_vendor_atfork(IBCKPT_FORK_CHILD);
	ibckpt_device_atfork(IBCKPT_FORK_CHILD);
	ibckpt_channel_atfork(IBCKPT_FORK_CHILD);
	ibckpt_control_atfork(IBCKPT_FORK_CHILD);
	ibckpt_rctl_atfork_child();		/* its state is under ibckpt_ctx_lock */
	ibckpt_context_atfork(IBCKPT_FORK_CHILD);
}

static void fork_register(void)
{
	int err = pthread_atfork(fork_prepare, fork_parent, fork_child);

	if (err)
		fprintf(stderr, "ibckpt: cannot register fork handlers: %s; a forked child "
			"must not use verbs\n", strerror(err));
}

/**
 * ibckpt_fork_init() - register the fork handlers, once
 *
 * Called when the provider registers with libibverbs (device.c) and with
 * every context (context.c): before anything a child could inherit exists.
 */
void ibckpt_fork_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fork_register);
}
