/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * ibckpt restart protocol: the CLI and a provider's control thread.
 *
 * Release and reacquire do not go through the module: a released process
 * holds nothing of the module's (a checkpointer must be able to dump it),
 * and after a restore it is a new process for the module. Each provider
 * owns two pipes, both ends held by its process: commands (the CLI writes,
 * the control thread reads) and replies (the other way). The CLI opens them
 * through /proc/PID/fd/N, which needs ptrace read access to the process,
 * as a checkpointer has; the fd numbers are in the process's snapshot
 * (struct ibckpt_snap_control). Pipes survive a checkpoint and restore with
 * their numbers, so the same channel serves a reacquire in place and one
 * after a restore.
 *
 * Every message is a struct ibckpt_rmsg followed by @len bytes of payload.
 * Documentation/restart.rst describes the phases.
 */
#ifndef _UAPI_LINUX_IBCKPT_RESTART_H
#define _UAPI_LINUX_IBCKPT_RESTART_H

#include <linux/types.h>

#define IBCKPT_RMSG_MAGIC	0x69625273	/* "ibRs" */
#define IBCKPT_RMSG_MAX_LEN	(16u << 20)	/* a reader's sanity bound */

/**
 * enum ibckpt_rmsg_type - what a message asks, or that it answers
 * @IBCKPT_RMSG_RELEASE: release every vendor resource (the process must be
 *	quiesced by a freeze); payload: as PREPARE's; @status: IBCKPT_RREL_*
 *	flags
 * @IBCKPT_RMSG_REACQUIRE: open the devices again and re-create every object
 *	up to the point where peers' identities are needed; payload: struct
 *	ibckpt_rdev_map entries (device renames); the reply carries the
 *	process's struct ibckpt_ident entries
 * @IBCKPT_RMSG_REMAP: the identities of every process of the job (struct
 *	ibckpt_ident entries); bring every QP to RTR and re-post receives
 * @IBCKPT_RMSG_GO: every QP of the job is at RTR: move to RTS, re-post
 *	sends, reopen the verbs gates
 * @IBCKPT_RMSG_REPLY: the answer to the last command; @status 0 or a
 *	positive errno, then a NUL-terminated message as payload
 * @IBCKPT_RMSG_PREPARE: would RELEASE succeed? Every check of a release,
 *	nothing torn down: the CLI releases no process unless every process
 *	of the job agreed. Behind a connected QP's unsignaled RDMA READs and
 *	atomics it posts a fence and waits for it (restart.rst, "Exactly
 *	once"); payload: struct ibckpt_rpeer entries, what each QP's peer
 *	grants, from which the fence is chosen (none, or a QP not named: the
 *	fence its own requests show the peer grants); @status: IBCKPT_RREL_*
 *	flags. The reply's errno: EBUSY, requests in flight (a freeze a little
 *	later may find them done); EINPROGRESS, a fence that must not outlive
 *	the freeze is still outstanding (a FETCH_AND_ADD of 0): ask again
 *	before the job is thawed; any other, a refusal no retry cures
 * @IBCKPT_RMSG_ABORT: a reacquire failed somewhere in the job: destroy what
 *	this process re-created since its release (before GO), so that it is
 *	released as it was and a new REACQUIRE starts over; payload: none
 */
enum ibckpt_rmsg_type {
	IBCKPT_RMSG_RELEASE = 1,
	IBCKPT_RMSG_REACQUIRE,
	IBCKPT_RMSG_REMAP,
	IBCKPT_RMSG_GO,
	IBCKPT_RMSG_REPLY,
	IBCKPT_RMSG_PREPARE,
	IBCKPT_RMSG_ABORT,
};

/* RELEASE and PREPARE flags (in @status of the command) */
#define IBCKPT_RREL_PEERS_CHECKED	1	/* every RC peer's expected PSN matched */
/*
 * PREPARE: the checks only, no fence posted or waited for: the release is
 * refused already (another process refused it); the CLI asks for a refusal
 * no retry cures
 */
#define IBCKPT_RREL_NO_FENCE		2

/**
 * struct ibckpt_rpeer - PREPARE, RELEASE: what a QP's peer grants
 * @qp: the QP's handle in the process's snapshot (struct ibckpt_snap_qp)
 * @access: its peer QP's qp_access_flags (IBV_ACCESS_REMOTE_*), from the
 *	peer's snapshot of the same freeze
 */
struct ibckpt_rpeer {
	__u32 qp;
	__u32 access;
};

/**
 * struct ibckpt_rmsg - header of a restart message
 * @magic: IBCKPT_RMSG_MAGIC
 * @type: enum ibckpt_rmsg_type
 * @status: a command's flags, or a reply's errno
 * @len: payload bytes that follow, at most IBCKPT_RMSG_MAX_LEN
 * @seq: a command's number, chosen by the sender; a reply carries the
 *	number of the command it answers, so that a reply left in the pipe by
 *	a sender that gave up waiting is never taken for another's
 * @cmd: a reply: the type of the command it answers; a command: 0
 *
 * A message is written whole or not at all as far as the reader can tell:
 * a reader that finds no IBCKPT_RMSG_MAGIC, or a payload that does not
 * follow within the reader's deadline, drops what the pipe holds.
 */
struct ibckpt_rmsg {
	__u32 magic;
	__u32 type;
	__u32 status;
	__u32 len;
	__u32 seq;
	__u32 cmd;
};

/**
 * struct ibckpt_rdev_map - REACQUIRE: a device to open instead of another
 * @from: the device name the process opened (e.g. "rxe0"), NUL-terminated
 * @to: the device to open in its place, NUL-terminated
 */
struct ibckpt_rdev_map {
	char from[64];
	char to[64];
};

/**
 * enum ibckpt_ident_kind - what a struct ibckpt_ident maps
 * @IBCKPT_ID_GID: the device's GID @vgid is @gid now
 * @IBCKPT_ID_LID: the device's LID @vid is @real now
 * @IBCKPT_ID_QPN: the device's QP known as @vid is QPN @real now
 * @IBCKPT_ID_RKEY: the device's MR known by rkey @vid has rkey @real now
 * @IBCKPT_ID_MW: the device's memory window known by rkey @vid has rkey
 *	@real now. A window's key byte moves with each bind, its index does
 *	not: the window is found by @vid's index (bits 31-8), and any key byte
 *	the application names for it becomes that byte plus the difference of
 *	@real's and @vid's, modulo 256, on @real's index.
 */
enum ibckpt_ident_kind {
	IBCKPT_ID_GID = 1,
	IBCKPT_ID_LID,
	IBCKPT_ID_QPN,
	IBCKPT_ID_RKEY,
	IBCKPT_ID_MW,
};

/**
 * struct ibckpt_ident - one identity that changed in a reacquire
 * @kind: enum ibckpt_ident_kind
 * @vid: the identity the application and its peers know (QPN, rkey, LID)
 * @real: what it is now
 * @pad: 0
 * @vdev: the device the identity belongs to, by the node GUID it had when
 *	the application first opened it: QPNs and keys are per device
 * @vgid: IBCKPT_ID_GID: the GID peers know
 * @gid: IBCKPT_ID_GID: the GID it is now
 */
struct ibckpt_ident {
	__u32 kind;
	__u32 vid;
	__u32 real;
	__u32 pad;
	__u64 vdev;
	__u8 vgid[16];
	__u8 gid[16];
};

#endif
