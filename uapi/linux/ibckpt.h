/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * ibckpt user/kernel ABI.
 *
 * One header for the three parties:
 *  - ibckpt.ko (kmod/), which implements both channels below;
 *  - the stacking provider (provider/), whose per-process control thread
 *    talks to the module through the character device /dev/ibckpt;
 *  - the ibckpt CLI (tools/), which talks to the module through the
 *    generic netlink family "ibckpt".
 *
 * Every structure has a fixed layout with explicit padding and only
 * __u32/__u64 members, so 32-bit and 64-bit callers see the same bytes.
 * Any incompatible change bumps IBCKPT_ABI_VERSION.
 */
#ifndef _UAPI_LINUX_IBCKPT_H
#define _UAPI_LINUX_IBCKPT_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define IBCKPT_ABI_VERSION	1

/* ------------------------------------------------------------------ */
/* Character device: /dev/ibckpt, the provider's control channel.       */
/* ------------------------------------------------------------------ */

#define IBCKPT_DEVICE_NAME	"ibckpt"

/**
 * struct ibckpt_register - bind an open /dev/ibckpt to the calling process
 * @abi_version: IBCKPT_ABI_VERSION the caller was built against
 * @flags: must be 0
 *
 * The calling thread becomes the process's control thread: it is never
 * parked by a freeze of the application threads.  One registration per
 * process (a second one, on any file, fails with EBUSY); the file is owned
 * by the caller's thread group, and the registration ends when the file is
 * released (close or exit).
 */
struct ibckpt_register {
	__u32 abi_version;
	__u32 flags;
};

/**
 * enum ibckpt_event_type - records read() from a registered /dev/ibckpt
 * @IBCKPT_EV_NONE: 0, not an event: the module never sends it
 * @IBCKPT_EV_QUIESCE: a freeze of a job the process belongs to starts (or
 *	the process joined a frozen job): close the verbs gate, drain the CQs,
 *	then answer with IBCKPT_IOC_QUIESCED; the process's application
 *	threads are parked once every provider asked has answered
 * @IBCKPT_EV_THAW: the freeze is over; reopen the gate
 * @IBCKPT_EV_ABORT: the freeze was abandoned; reopen the gate
 */
enum ibckpt_event_type {
	IBCKPT_EV_NONE,
	IBCKPT_EV_QUIESCE,
	IBCKPT_EV_THAW,
	IBCKPT_EV_ABORT,
};

/**
 * struct ibckpt_event - one record of the event stream
 * @type: enum ibckpt_event_type
 * @flags: reserved, 0
 * @session: the freeze session the event belongs to
 */
struct ibckpt_event {
	__u32 type;
	__u32 flags;
	__u64 session;
};

/**
 * struct ibckpt_quiesced - the provider's answer to IBCKPT_EV_QUIESCE
 * @session: the session from the event
 * @status: 0, or a positive errno if quiescing failed
 * @n_outstanding: work requests still posted when the bound was reached
 * @n_drained: completions moved into private queues
 */
struct ibckpt_quiesced {
	__u64 session;
	__u32 status;
	__u32 n_outstanding;
	__u64 n_drained;
};

/**
 * struct ibckpt_snapshot_arg - IBCKPT_IOC_SNAPSHOT: the process's snapshot
 * @session: the session from IBCKPT_EV_QUIESCE
 * @addr: where it is in the caller's memory (uapi/linux/ibckpt_snapshot.h)
 * @len: its length, at most IBCKPT_SNAP_MAX_LEN
 *
 * Given by the control thread before it answers IBCKPT_EV_QUIESCE; the
 * module keeps it for `ibckpt dump` until the session ends.
 */
struct ibckpt_snapshot_arg {
	__u64 session;
	__u64 addr;
	__u64 len;
};

#define IBCKPT_IOC_MAGIC	0xCB
#define IBCKPT_IOC_REGISTER	_IOW(IBCKPT_IOC_MAGIC, 0x00, struct ibckpt_register)
#define IBCKPT_IOC_QUIESCED	_IOW(IBCKPT_IOC_MAGIC, 0x01, struct ibckpt_quiesced)
#define IBCKPT_IOC_SNAPSHOT	_IOW(IBCKPT_IOC_MAGIC, 0x02, struct ibckpt_snapshot_arg)

/* ------------------------------------------------------------------ */
/* IBCKPT_IOC_SHARE_CREDS: one credentials object for the process's    */
/* threads again, after a restore (kmod/creds.c).                       */
/* ------------------------------------------------------------------ */

/**
 * struct ibckpt_share_creds - IBCKPT_IOC_SHARE_CREDS: what the call did
 * @switched: threads whose credentials are identical in content to the
 *	caller's but another object: each was given a task_work that makes it
 *	take the caller's object at its next return to user mode
 * @differ: threads whose credentials differ from the caller's in anything
 *	(an id, the securebits, a capability set, the user namespace, the
 *	supplementary groups, a keyring, the LSM's view): they keep their own
 * @shared: threads that already use the caller's object
 * @reserved: 0
 *
 * Why: uverbs' legacy write() refuses a writer whose credentials are not
 * the very object the device file was opened with (ib_safe_file_access(),
 * which compares pointers, not contents). Threads share their creator's
 * object, so in a process that was started normally the check always
 * passes. After a CRIU restore every thread has an object of its own
 * (the restorer calls setresuid, capset and prctl(PR_SET_SECUREBITS) in
 * each thread, and capset and PR_SET_SECUREBITS commit a new object even
 * when nothing changes), and a device the control thread opens afterwards
 * would refuse every other thread's write()-based verb with EACCES.
 *
 * The call: from the registered control thread (EPERM from any other
 * thread, ENOTCONN before IBCKPT_IOC_REGISTER). Every other thread of the
 * caller's process whose credentials are identical in content to the
 * caller's takes the caller's object; nothing any thread may do changes,
 * only the object identity that ib_safe_file_access() compares. The call
 * returns once the works are queued; a thread runs its work before it next
 * executes user code, so every system call a thread makes after the call
 * returned sees the caller's object (a call it was blocked in when the
 * ioctl ran finishes first, with its old object). The switch is checked
 * again by the thread itself: a thread whose credentials changed in the
 * meantime keeps them. Exiting threads and io_uring workers are not
 * counted. The argument may be NULL (no counts wanted). Calling again is
 * harmless: each call compares again. Errors: ENOMEM (the threads handled
 * before it keep their works), EFAULT.
 */
struct ibckpt_share_creds {
	__u32 switched;
	__u32 differ;
	__u32 shared;
	__u32 reserved;
};

#define IBCKPT_IOC_SHARE_CREDS	_IOR(IBCKPT_IOC_MAGIC, 0x03, struct ibckpt_share_creds)

/* ------------------------------------------------------------------ */
/* Generic netlink family "ibckpt": the administrative channel.         */
/* ------------------------------------------------------------------ */

#define IBCKPT_GENL_NAME	"ibckpt"
#define IBCKPT_GENL_VERSION	1
#define IBCKPT_GENL_MCGRP_EVENTS "events"

/**
 * enum ibckpt_cmd - generic netlink commands
 * @IBCKPT_CMD_UNSPEC: unused
 * @IBCKPT_CMD_GET_VERSION: reply carries IBCKPT_A_VERSION, IBCKPT_A_ABI
 * @IBCKPT_CMD_PROC_GET: dump of processes registered through /dev/ibckpt
 *	(one IBCKPT_A_PROC nest per message)
 * @IBCKPT_CMD_FREEZE: start freezing a job (see "Naming a job" below),
 *	giving up after IBCKPT_A_TIMEOUT_MS; IBCKPT_A_FLAGS: IBCKPT_FREEZE_F_*.
 *	Returns at once with the session (IBCKPT_A_SESSION_ID); the job is
 *	frozen when SESSION_GET says IBCKPT_STATE_FROZEN. Needs
 *	CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN. Without
 *	IBCKPT_FREEZE_F_PERSIST the freeze is owned by the requesting netlink
 *	socket: when it is closed, the job thaws. A job with a process another
 *	session holds is refused with EBUSY; the extended ack's cookie is then
 *	a struct ibckpt_busy naming both.
 * @IBCKPT_CMD_THAW: release a job's session, named by IBCKPT_A_SESSION_ID
 *	or by the job. Same privilege. Returns once the threads are released,
 *	not once they run again: the reply carries the session's
 *	IBCKPT_A_SESSION_ID, which SESSION_GET lists (IBCKPT_STATE_THAWING)
 *	until no thread of it is parked any more (10 s at most). The job runs
 *	again when SESSION_GET no longer lists it, or lists it THAWING with
 *	IBCKPT_SESSION_A_PARKED 0. (Modules before this reply waited in THAW
 *	itself and sent none.) A session that is THAWING cannot be thawed
 *	again (ENOENT) and is no longer found by its job.
 * @IBCKPT_CMD_SESSION_GET: dump of freeze sessions (IBCKPT_A_SESSION nest),
 *	only the one named by IBCKPT_A_SESSION_ID or a job if given
 * @IBCKPT_CMD_THREAD_GET: dump of the threads of a session, named by
 *	IBCKPT_A_SESSION_ID or its job (one IBCKPT_A_THREAD nest per message)
 * @IBCKPT_CMD_SNAPSHOT_GET: dump of the snapshots the providers of a frozen
 *	session (IBCKPT_A_SESSION_ID or its job) gave, in pieces:
 *	IBCKPT_A_SNAP_TGID, IBCKPT_A_SNAP_TOTAL, IBCKPT_A_SNAP_OFFSET,
 *	IBCKPT_A_SNAP_DATA per message. Same privilege as FREEZE (snapshots
 *	hold addresses and keys). With IBCKPT_SNAPSHOT_F_KVIEW in
 *	IBCKPT_A_FLAGS, also the kernel's view of each process (IBCKPT_A_KPROC,
 *	IBCKPT_A_KQP messages, see "The kernel's own view" below). Ends with
 *	-EAGAIN if the job changed after the dump started (a process of it
 *	left, lost or gave a snapshot, or joined it; the session was thawed):
 *	what it sent before is as it was, the rest is not sent.
 * @__IBCKPT_CMD_MAX: number of commands
 * @IBCKPT_CMD_MAX: highest command
 *
 * Naming a job: IBCKPT_A_JOB_TYPE (enum ibckpt_job_type) with
 * IBCKPT_A_JOB_ID, or IBCKPT_A_CGROUP_FD for a cgroup; IBCKPT_A_PGID alone
 * is the same as IBCKPT_JOB_PGRP with that id. Ids are in the requester's
 * pid namespace.
 */
enum ibckpt_cmd {
	IBCKPT_CMD_UNSPEC,
	IBCKPT_CMD_GET_VERSION,
	IBCKPT_CMD_PROC_GET,
	IBCKPT_CMD_FREEZE,
	IBCKPT_CMD_THAW,
	IBCKPT_CMD_SESSION_GET,
	IBCKPT_CMD_THREAD_GET,
	IBCKPT_CMD_SNAPSHOT_GET,

	__IBCKPT_CMD_MAX,
	IBCKPT_CMD_MAX = __IBCKPT_CMD_MAX - 1
};

/**
 * enum ibckpt_job_type - how a job names its processes
 * @IBCKPT_JOB_PGRP: the processes of process group IBCKPT_A_JOB_ID
 * @IBCKPT_JOB_SESSION: the processes of session IBCKPT_A_JOB_ID
 * @IBCKPT_JOB_TREE: process IBCKPT_A_JOB_ID and its descendants, whatever
 *	group or session they move to; a child of a member that exits while
 *	the job is frozen stays a member after it is re-parented
 * @IBCKPT_JOB_CGROUP: the processes of a cgroup v2 directory and of every
 *	cgroup below it; IBCKPT_A_CGROUP_FD is an open file descriptor of the
 *	directory in the requester
 *
 * Global init (PID 1) and the requester itself never belong to a job: a job
 * that contains either is refused.
 */
enum ibckpt_job_type {
	IBCKPT_JOB_PGRP = 1,
	IBCKPT_JOB_SESSION,
	IBCKPT_JOB_TREE,
	IBCKPT_JOB_CGROUP,
};

/**
 * struct ibckpt_busy - why a freeze was refused with EBUSY (extended ack
 *	cookie of IBCKPT_CMD_FREEZE)
 * @pid: a process of the job that another session holds (requester's pid
 *	namespace)
 * @pad: 0
 * @session: that session's id
 */
struct ibckpt_busy {
	__u32 pid;
	__u32 pad;
	__u64 session;
};

#define IBCKPT_FREEZE_F_PERSIST		_BITUL(0)	/* not owned by the socket */
#define IBCKPT_FREEZE_F_ALL		IBCKPT_FREEZE_F_PERSIST
#define IBCKPT_FREEZE_TIMEOUT_MAX_MS	600000u
#define IBCKPT_WATCHDOG_MAX_MS		(7u * 24 * 3600 * 1000)

/**
 * enum ibckpt_attr - top-level attributes
 * @IBCKPT_A_UNSPEC: unused
 * @IBCKPT_A_VERSION: string, module version
 * @IBCKPT_A_ABI: u32, IBCKPT_ABI_VERSION of the module
 * @IBCKPT_A_PROC: nest, enum ibckpt_proc_attr
 * @IBCKPT_A_PGID: u32: a process group; without IBCKPT_A_JOB_TYPE it
 *	names the job IBCKPT_JOB_PGRP with that id
 * @IBCKPT_A_TIMEOUT_MS: u32: FREEZE gives up after this many ms, 1 to
 *	IBCKPT_FREEZE_TIMEOUT_MAX_MS
 * @IBCKPT_A_FLAGS: u32: IBCKPT_FREEZE_F_*
 * @IBCKPT_A_WATCHDOG_MS: u32: PERSIST: thaw after this many ms, at most
 *	IBCKPT_WATCHDOG_MAX_MS; required with IBCKPT_FREEZE_F_PERSIST and
 *	refused without it
 * @IBCKPT_A_SESSION_ID: u64: a freeze session's id (FREEZE's and THAW's
 *	reply; names the session in the other requests)
 * @IBCKPT_A_SESSION: nest: enum ibckpt_session_attr
 * @IBCKPT_A_THREAD: nest: enum ibckpt_thread_attr
 * @IBCKPT_A_PAD: padding for 64-bit attributes
 * @IBCKPT_A_SNAP_TGID: u32: the process a snapshot piece is of (requester's
 *	pid namespace)
 * @IBCKPT_A_SNAP_TOTAL: u32: its snapshot's length
 * @IBCKPT_A_SNAP_OFFSET: u32: where this piece starts
 * @IBCKPT_A_SNAP_DATA: binary: the piece
 * @IBCKPT_A_JOB_TYPE: u32: enum ibckpt_job_type
 * @IBCKPT_A_JOB_ID: u32: the group, session or root process
 * @IBCKPT_A_CGROUP_FD: u32: IBCKPT_JOB_CGROUP's directory, open (a file
 *	descriptor of the requester)
 * @IBCKPT_A_KPROC: nest: enum ibckpt_kproc_attr (SNAPSHOT_GET, kernel's view)
 * @IBCKPT_A_KQP: nest: enum ibckpt_kqp_attr (SNAPSHOT_GET, kernel's view)
 * @__IBCKPT_A_MAX: number of attributes
 * @IBCKPT_A_MAX: highest attribute
 */
enum ibckpt_attr {
	IBCKPT_A_UNSPEC,
	IBCKPT_A_VERSION,
	IBCKPT_A_ABI,
	IBCKPT_A_PROC,
	IBCKPT_A_PGID,
	IBCKPT_A_TIMEOUT_MS,
	IBCKPT_A_FLAGS,
	IBCKPT_A_WATCHDOG_MS,
	IBCKPT_A_SESSION_ID,
	IBCKPT_A_SESSION,
	IBCKPT_A_THREAD,
	IBCKPT_A_PAD,
	IBCKPT_A_SNAP_TGID,
	IBCKPT_A_SNAP_TOTAL,
	IBCKPT_A_SNAP_OFFSET,
	IBCKPT_A_SNAP_DATA,
	IBCKPT_A_JOB_TYPE,
	IBCKPT_A_JOB_ID,
	IBCKPT_A_CGROUP_FD,
	/* the kernel's own view (below) */
	IBCKPT_A_KPROC,
	IBCKPT_A_KQP,

	__IBCKPT_A_MAX,
	IBCKPT_A_MAX = __IBCKPT_A_MAX - 1
};

/**
 * enum ibckpt_proc_attr - attributes nested in IBCKPT_A_PROC
 * @IBCKPT_PROC_A_UNSPEC: unused
 * @IBCKPT_PROC_A_TGID: u32: the registered process
 * @IBCKPT_PROC_A_PGID: u32: its process group
 * @IBCKPT_PROC_A_CTRL_TID: u32: its control thread (the one that
 *	registered)
 * @IBCKPT_PROC_A_COMM: string: its command name (comm)
 * @__IBCKPT_PROC_A_MAX: number of attributes
 * @IBCKPT_PROC_A_MAX: highest attribute
 *
 * Process ids are given in the pid namespace of the requester; a process
 * not visible there is not reported.
 */
enum ibckpt_proc_attr {
	IBCKPT_PROC_A_UNSPEC,
	IBCKPT_PROC_A_TGID,
	IBCKPT_PROC_A_PGID,
	IBCKPT_PROC_A_CTRL_TID,
	IBCKPT_PROC_A_COMM,

	__IBCKPT_PROC_A_MAX,
	IBCKPT_PROC_A_MAX = __IBCKPT_PROC_A_MAX - 1
};

/**
 * enum ibckpt_state - state of a freeze session
 * @IBCKPT_STATE_FREEZING: threads are being parked
 * @IBCKPT_STATE_FROZEN: every application thread is parked (or has exited)
 * @IBCKPT_STATE_THAWING: the session ended (thaw, its owner went away,
 *	watchdog); its released threads are leaving their parks
 * @IBCKPT_STATE_ABORTED: the freeze was given up (a thread did not park in
 *	time, a provider failed to quiesce, out of memory); every thread was
 *	released
 */
enum ibckpt_state {
	IBCKPT_STATE_FREEZING = 1,
	IBCKPT_STATE_FROZEN,
	IBCKPT_STATE_THAWING,
	IBCKPT_STATE_ABORTED,
};

/**
 * enum ibckpt_session_attr - attributes nested in IBCKPT_A_SESSION
 * @IBCKPT_SESSION_A_UNSPEC: unused
 * @IBCKPT_SESSION_A_ID: u64: the session's id
 * @IBCKPT_SESSION_A_PGID: u32: the job's process group (IBCKPT_JOB_PGRP
 *	only)
 * @IBCKPT_SESSION_A_STATE: u32: enum ibckpt_state
 * @IBCKPT_SESSION_A_FLAGS: u32: IBCKPT_FREEZE_F_*
 * @IBCKPT_SESSION_A_THREADS: u32: application threads tracked
 * @IBCKPT_SESSION_A_PARKED: u32: of them, parked
 * @IBCKPT_SESSION_A_PENDING: u32: asked to park, not parked yet
 * @IBCKPT_SESSION_A_EXITED: u32: exited during the session
 * @IBCKPT_SESSION_A_FREEZE_NS: u64: ns from the request to FROZEN, 0 until
 *	frozen
 * @IBCKPT_SESSION_A_PAD: padding for 64-bit attributes
 * @IBCKPT_SESSION_A_PROVIDERS: u32: registered processes asked to quiesce
 * @IBCKPT_SESSION_A_QUIESCED: u32: ... that answered
 * @IBCKPT_SESSION_A_DRAINED: u64: completions moved to private queues
 * @IBCKPT_SESSION_A_OUTSTANDING: u32: sends still posted at the bound
 * @IBCKPT_SESSION_A_QUIESCE_ERR: u32: errno the first failing provider
 *	gave (ENOBUFS if its event queue was full); absent (0) if none failed
 * @IBCKPT_SESSION_A_QUIESCE_PID: u32: tgid of that provider (reader's pid
 *	ns); only with IBCKPT_SESSION_A_QUIESCE_ERR
 * @IBCKPT_SESSION_A_JOB_TYPE: u32: enum ibckpt_job_type
 * @IBCKPT_SESSION_A_JOB_ID: u32: group, session or root (reader's pid ns);
 *	absent for IBCKPT_JOB_CGROUP
 * @IBCKPT_SESSION_A_CGROUP: string: IBCKPT_JOB_CGROUP's path (reader's
 *	cgroup ns)
 * @IBCKPT_SESSION_A_PROCS: u32: processes of the job found so far
 * @IBCKPT_SESSION_A_QUIESCE_MSG: string: why that provider failed, when the
 *	module refused its snapshot (e.g. "QP 0x1b on rxe0: another process's
 *	QP"); only with IBCKPT_SESSION_A_QUIESCE_ERR
 * @IBCKPT_SESSION_A_QUIESCE_QPN: u32: the QPN the refusal is about, if it is
 *	about a QP
 * @__IBCKPT_SESSION_A_MAX: number of attributes
 * @IBCKPT_SESSION_A_MAX: highest attribute
 *
 * A session whose group, session or root process is not visible in the
 * reader's pid namespace is not reported.
 */
enum ibckpt_session_attr {
	IBCKPT_SESSION_A_UNSPEC,
	IBCKPT_SESSION_A_ID,
	IBCKPT_SESSION_A_PGID,
	IBCKPT_SESSION_A_STATE,
	IBCKPT_SESSION_A_FLAGS,
	IBCKPT_SESSION_A_THREADS,
	IBCKPT_SESSION_A_PARKED,
	IBCKPT_SESSION_A_PENDING,
	IBCKPT_SESSION_A_EXITED,
	IBCKPT_SESSION_A_FREEZE_NS,
	IBCKPT_SESSION_A_PAD,
	IBCKPT_SESSION_A_PROVIDERS,
	IBCKPT_SESSION_A_QUIESCED,
	IBCKPT_SESSION_A_DRAINED,
	IBCKPT_SESSION_A_OUTSTANDING,
	IBCKPT_SESSION_A_QUIESCE_ERR,
	IBCKPT_SESSION_A_QUIESCE_PID,
	IBCKPT_SESSION_A_JOB_TYPE,
	IBCKPT_SESSION_A_JOB_ID,
	IBCKPT_SESSION_A_CGROUP,
	IBCKPT_SESSION_A_PROCS,
	/* the kernel's own view (below) */
	IBCKPT_SESSION_A_QUIESCE_MSG,
	IBCKPT_SESSION_A_QUIESCE_QPN,

	__IBCKPT_SESSION_A_MAX,
	IBCKPT_SESSION_A_MAX = __IBCKPT_SESSION_A_MAX - 1
};

/**
 * enum ibckpt_thread_state - one application thread in a session
 * @IBCKPT_THREAD_PENDING: asked to park, has not reached a safe point yet
 *	(e.g. in an uninterruptible sleep)
 * @IBCKPT_THREAD_PARKED: parked at its return to user space
 * @IBCKPT_THREAD_RUNNING: released
 * @IBCKPT_THREAD_EXITED: exited (or was killed) during the session
 */
enum ibckpt_thread_state {
	IBCKPT_THREAD_PENDING = 1,
	IBCKPT_THREAD_PARKED,
	IBCKPT_THREAD_RUNNING,
	IBCKPT_THREAD_EXITED,
};

/**
 * enum ibckpt_thread_attr - attributes nested in IBCKPT_A_THREAD
 * @IBCKPT_THREAD_A_UNSPEC: unused
 * @IBCKPT_THREAD_A_TID: u32: the thread (reader's pid ns)
 * @IBCKPT_THREAD_A_TGID: u32: its process (reader's pid ns), 0 once the
 *	thread is gone
 * @IBCKPT_THREAD_A_STATE: u32: enum ibckpt_thread_state
 * @IBCKPT_THREAD_A_USER_IP: u64: where it will resume in user space,
 *	recorded when it parked
 * @IBCKPT_THREAD_A_SYSCALL: u32: syscall it was in + 1, 0 = none
 * @IBCKPT_THREAD_A_PAD: padding for 64-bit attributes
 * @__IBCKPT_THREAD_A_MAX: number of attributes
 * @IBCKPT_THREAD_A_MAX: highest attribute
 */
enum ibckpt_thread_attr {
	IBCKPT_THREAD_A_UNSPEC,
	IBCKPT_THREAD_A_TID,
	IBCKPT_THREAD_A_TGID,
	IBCKPT_THREAD_A_STATE,
	IBCKPT_THREAD_A_USER_IP,
	IBCKPT_THREAD_A_SYSCALL,
	IBCKPT_THREAD_A_PAD,

	__IBCKPT_THREAD_A_MAX,
	IBCKPT_THREAD_A_MAX = __IBCKPT_THREAD_A_MAX - 1
};

/* ------------------------------------------------------------------ */
/* The kernel's own view (issue 12): what the RDMA core records of the  */
/* QPs a snapshot names. Documentation/snapshot.rst, "The kernel's own  */
/* view".                                                               */
/* ------------------------------------------------------------------ */

/* SNAPSHOT_GET's IBCKPT_A_FLAGS: also send IBCKPT_A_KPROC and IBCKPT_A_KQP */
#define IBCKPT_SNAPSHOT_F_KVIEW		_BITUL(0)

/* IBCKPT_KPROC_A_FLAGS */
#define IBCKPT_KPROC_F_NO_SNAPSHOT	_BITUL(0)	/* gave none: no provider */
#define IBCKPT_KPROC_F_RELEASED		_BITUL(1)	/* held no vendor resources */

/**
 * enum ibckpt_kproc_attr - a process of the dumped job, as the kernel sees it
 *	(nested in IBCKPT_A_KPROC; with IBCKPT_A_SNAP_TGID in the same message)
 * @IBCKPT_KPROC_A_UNSPEC: unused
 * @IBCKPT_KPROC_A_FLAGS: u32: IBCKPT_KPROC_F_*
 * @IBCKPT_KPROC_A_PINNED: u64: bytes the process has pinned (its mm's
 *	pinned_vm): at the quiesce for a process with a snapshot, now for one
 *	without
 * @IBCKPT_KPROC_A_QPS: u32: QPs of its snapshot checked against the RDMA
 *	core (one IBCKPT_A_KQP message each follows)
 * @IBCKPT_KPROC_A_PAD: padding for 64-bit attributes
 * @__IBCKPT_KPROC_A_MAX: number of attributes
 * @IBCKPT_KPROC_A_MAX: highest attribute
 *
 * One per process: after its snapshot's pieces, or, for a process of the
 * job that gave no snapshot (IBCKPT_KPROC_F_NO_SNAPSHOT), alone.
 */
enum ibckpt_kproc_attr {
	IBCKPT_KPROC_A_UNSPEC,
	IBCKPT_KPROC_A_FLAGS,
	IBCKPT_KPROC_A_PINNED,
	IBCKPT_KPROC_A_QPS,
	IBCKPT_KPROC_A_PAD,

	__IBCKPT_KPROC_A_MAX,
	IBCKPT_KPROC_A_MAX = __IBCKPT_KPROC_A_MAX - 1
};

/**
 * enum ibckpt_kqp_attr - the RDMA core's record of a QP a snapshot names,
 *	taken when the module accepted the snapshot (nested in IBCKPT_A_KQP;
 *	with IBCKPT_A_SNAP_TGID in the same message)
 * @IBCKPT_KQP_A_UNSPEC: unused
 * @IBCKPT_KQP_A_HANDLE: u32: the handle of the snapshot's QP record
 * @IBCKPT_KQP_A_DEVICE: string: the device (the snapshot's name for it,
 *	which the RDMA core knew)
 * @IBCKPT_KQP_A_QPN: u32: the QP number
 * @IBCKPT_KQP_A_OWNER: u32: the process that created it (reader's pid
 *	namespace); absent if not visible there
 * @IBCKPT_KQP_A_TYPE: u32: enum ib_qp_type (the numbers of enum ibv_qp_type)
 * @IBCKPT_KQP_A_PORT: u32: its port, 0 before it was given one
 * @IBCKPT_KQP_A_STATE: u32: enum ib_qp_state (ibv_qp_state's numbers)
 * @IBCKPT_KQP_A_DEST_QPN: u32: the destination QPN
 * @IBCKPT_KQP_A_SQ_PSN: u32: the send queue's PSN
 * @IBCKPT_KQP_A_RQ_PSN: u32: the receive queue's PSN
 * @IBCKPT_KQP_A_QUERY_ERR: u32: the positive errno of the driver's
 *	query_qp; then STATE, DEST_QPN and the PSNs are absent
 * @__IBCKPT_KQP_A_MAX: number of attributes
 * @IBCKPT_KQP_A_MAX: highest attribute
 */
enum ibckpt_kqp_attr {
	IBCKPT_KQP_A_UNSPEC,
	IBCKPT_KQP_A_HANDLE,
	IBCKPT_KQP_A_DEVICE,
	IBCKPT_KQP_A_QPN,
	IBCKPT_KQP_A_OWNER,
	IBCKPT_KQP_A_TYPE,
	IBCKPT_KQP_A_PORT,
	IBCKPT_KQP_A_STATE,
	IBCKPT_KQP_A_DEST_QPN,
	IBCKPT_KQP_A_SQ_PSN,
	IBCKPT_KQP_A_RQ_PSN,
	IBCKPT_KQP_A_QUERY_ERR,

	__IBCKPT_KQP_A_MAX,
	IBCKPT_KQP_A_MAX = __IBCKPT_KQP_A_MAX - 1
};

#endif /* _UAPI_LINUX_IBCKPT_H */
