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

#include <linux/types.h>
#include <linux/ioctl.h>

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
 * open file; the file is owned by the caller's thread group, and the
 * registration ends when the file is released (close or exit).
 */
struct ibckpt_register {
	__u32 abi_version;
	__u32 flags;
};

/**
 * enum ibckpt_event_type - records read() from a registered /dev/ibckpt
 * @IBCKPT_EV_QUIESCE: the application threads are parked; quiesce verbs
 *	state, then answer with IBCKPT_IOC_QUIESCED
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

#define IBCKPT_IOC_MAGIC	0xCB
#define IBCKPT_IOC_REGISTER	_IOW(IBCKPT_IOC_MAGIC, 0x00, struct ibckpt_register)
#define IBCKPT_IOC_QUIESCED	_IOW(IBCKPT_IOC_MAGIC, 0x01, struct ibckpt_quiesced)

/* ------------------------------------------------------------------ */
/* Generic netlink family "ibckpt": the administrative channel.         */
/* ------------------------------------------------------------------ */

#define IBCKPT_GENL_NAME	"ibckpt"
#define IBCKPT_GENL_VERSION	1
#define IBCKPT_GENL_MCGRP_EVENTS "events"

/**
 * enum ibckpt_cmd - generic netlink commands
 * @IBCKPT_CMD_GET_VERSION: reply carries IBCKPT_A_VERSION, IBCKPT_A_ABI
 * @IBCKPT_CMD_PROC_GET: dump of processes registered through /dev/ibckpt
 *	(one IBCKPT_A_PROC nest per message)
 */
enum ibckpt_cmd {
	IBCKPT_CMD_UNSPEC,
	IBCKPT_CMD_GET_VERSION,
	IBCKPT_CMD_PROC_GET,

	__IBCKPT_CMD_MAX,
	IBCKPT_CMD_MAX = __IBCKPT_CMD_MAX - 1
};

/**
 * enum ibckpt_attr - top-level attributes
 * @IBCKPT_A_VERSION: string, module version
 * @IBCKPT_A_ABI: u32, IBCKPT_ABI_VERSION of the module
 * @IBCKPT_A_PROC: nest, enum ibckpt_proc_attr
 */
enum ibckpt_attr {
	IBCKPT_A_UNSPEC,
	IBCKPT_A_VERSION,
	IBCKPT_A_ABI,
	IBCKPT_A_PROC,

	__IBCKPT_A_MAX,
	IBCKPT_A_MAX = __IBCKPT_A_MAX - 1
};

/**
 * enum ibckpt_proc_attr - attributes nested in IBCKPT_A_PROC
 *
 * Process ids are given in the pid namespace of the requester; a process
 * not visible there is not reported.
 */
enum ibckpt_proc_attr {
	IBCKPT_PROC_A_UNSPEC,
	IBCKPT_PROC_A_TGID,		/* u32 */
	IBCKPT_PROC_A_PGID,		/* u32 */
	IBCKPT_PROC_A_CTRL_TID,		/* u32 */
	IBCKPT_PROC_A_COMM,		/* string */

	__IBCKPT_PROC_A_MAX,
	IBCKPT_PROC_A_MAX = __IBCKPT_PROC_A_MAX - 1
};

#endif /* _UAPI_LINUX_IBCKPT_H */
