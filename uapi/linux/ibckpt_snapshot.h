/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * ibckpt snapshot format, version 1.
 *
 * A snapshot is what one process's provider reports when its application
 * threads are parked and its verbs state is quiesced: every verbs object it
 * holds, the virtual and real IDs, QP attributes, outstanding work requests
 * and the completions drained into private queues. `ibckpt dump` prints it;
 * a later restart reads it back. Documentation/snapshot.rst describes it.
 *
 * Layout: one struct ibckpt_snap_hdr, then hdr.n_records records, each a
 * struct ibckpt_snap_rec followed by rec.len bytes of payload and padding to
 * a multiple of 8. Payloads are the fixed structures below; a reader must
 * accept a payload longer than the structure it knows (newer minor fields are
 * appended) and must reject a shorter one. All integers are in the byte order
 * of the machine that wrote the snapshot; hdr.magic tells a reader which.
 *
 * Objects refer to each other by handle: a number unique within the process
 * snapshot (the provider's shadow object id), never a pointer.
 */
#ifndef _UAPI_LINUX_IBCKPT_SNAPSHOT_H
#define _UAPI_LINUX_IBCKPT_SNAPSHOT_H

#include <linux/const.h>
#include <linux/types.h>

#define IBCKPT_SNAP_MAGIC	0x50414e53	/* "SNAP" in little-endian bytes */
#define IBCKPT_SNAP_VERSION	1
#define IBCKPT_SNAP_MAX_LEN	(64u << 20)	/* a reader's sanity bound */

/**
 * struct ibckpt_snap_hdr - start of a process snapshot
 * @magic: IBCKPT_SNAP_MAGIC
 * @version: IBCKPT_SNAP_VERSION
 * @hdr_len: sizeof(struct ibckpt_snap_hdr) of the writer
 * @tgid: the process, in the writer's pid namespace; stamped by the module
 *	when the provider hands it the snapshot (the provider's word is not taken)
 * @n_records: records that follow
 * @session: the freeze session the snapshot was taken in
 * @total_len: bytes of the whole snapshot, header included
 * @pinned_bytes: memory the process has pinned (its mm's pinned_vm); stamped
 *	by the module like @tgid
 * @outstanding: sends not seen to complete when quiescing ended (signaled
 *	ones still in flight at the bound, and unsignaled ones after a queue's
 *	last signaled send, which complete without a trace)
 * @flags: IBCKPT_SNAP_F_*
 */
struct ibckpt_snap_hdr {
	__u32 magic;
	__u16 version;
	__u16 hdr_len;
	__u32 tgid;
	__u32 n_records;
	__u64 session;
	__u64 total_len;
	__u64 pinned_bytes;
	__u32 outstanding;
	__u32 flags;
};

/* The provider's drain bound was reached with signaled sends still in flight. */
#define IBCKPT_SNAP_F_INCOMPLETE_DRAIN	_BITUL(0)

/**
 * struct ibckpt_snap_rec - record header
 * @type: enum ibckpt_snap_type
 * @flags: reserved, 0
 * @len: payload bytes after this header (padding excluded)
 */
struct ibckpt_snap_rec {
	__u16 type;
	__u16 flags;
	__u32 len;
};

/**
 * enum ibckpt_snap_type - record types, each named by its payload
 * @IBCKPT_SNAP_DEVICE: struct ibckpt_snap_device: an opened context
 * @IBCKPT_SNAP_PD: struct ibckpt_snap_pd
 * @IBCKPT_SNAP_MR: struct ibckpt_snap_mr
 * @IBCKPT_SNAP_CQ: struct ibckpt_snap_cq
 * @IBCKPT_SNAP_QP: struct ibckpt_snap_qp
 * @IBCKPT_SNAP_SRQ: struct ibckpt_snap_srq
 * @IBCKPT_SNAP_WR: struct ibckpt_snap_wr (+ SGEs, + inline data)
 * @IBCKPT_SNAP_WC: struct ibckpt_snap_wc: a drained completion
 * @IBCKPT_SNAP_AH: struct ibckpt_snap_ah
 * @IBCKPT_SNAP_MW: struct ibckpt_snap_mw
 * @IBCKPT_SNAP_XRCD: struct ibckpt_snap_xrcd
 * @IBCKPT_SNAP_CONTROL: struct ibckpt_snap_control: the restart channel
 * @__IBCKPT_SNAP_TYPE_MAX: highest record type + 1
 */
enum ibckpt_snap_type {
	IBCKPT_SNAP_DEVICE = 1,
	IBCKPT_SNAP_PD,
	IBCKPT_SNAP_MR,
	IBCKPT_SNAP_CQ,
	IBCKPT_SNAP_QP,
	IBCKPT_SNAP_SRQ,
	IBCKPT_SNAP_WR,
	IBCKPT_SNAP_WC,
	IBCKPT_SNAP_AH,
	IBCKPT_SNAP_MW,
	IBCKPT_SNAP_XRCD,
	IBCKPT_SNAP_CONTROL,
	__IBCKPT_SNAP_TYPE_MAX
};

/**
 * struct ibckpt_snap_device - one opened device context
 * @handle: the context's handle
 * @name: kernel device name (e.g. "rxe0"), NUL-terminated
 * @node_guid: the device's node GUID (big-endian as verbs reports it)
 * @port_lid: LID of port 1 as the application saw it (virtual)
 * @gid: GID 0 of port 1 as the application saw it (virtual)
 */
struct ibckpt_snap_device {
	__u32 handle;
	__u32 port_lid;
	char name[64];
	__u64 node_guid;
	__u8 gid[16];
};

/**
 * struct ibckpt_snap_pd - protection domain
 * @handle: the PD's handle
 * @device: handle of its context
 */
struct ibckpt_snap_pd {
	__u32 handle;
	__u32 device;
};

/**
 * struct ibckpt_snap_mr - memory region
 * @handle: the MR's handle
 * @pd: handle of its PD
 * @addr: start address in the process
 * @length: bytes registered
 * @iova: I/O virtual address the MR is addressed by
 * @access: IBV_ACCESS_* flags
 * @vlkey: lkey the application holds
 * @vrkey: rkey the application holds
 * @lkey: the vendor's lkey
 * @rkey: the vendor's rkey
 * @pad: 0
 */
struct ibckpt_snap_mr {
	__u32 handle;
	__u32 pd;
	__u64 addr;
	__u64 length;
	__u64 iova;
	__u32 access;
	__u32 vlkey;
	__u32 vrkey;
	__u32 lkey;
	__u32 rkey;
	__u32 pad;
};

/**
 * struct ibckpt_snap_cq - completion queue
 * @handle: the CQ's handle
 * @device: handle of its context
 * @cqe: capacity
 * @n_drained: completions held in its private queue (as WC records)
 * @comp_channel: 1 if bound to a completion channel
 * @armed: 1 if a notification was requested and not yet delivered
 * @ex: 1 if created with ibv_create_cq_ex()
 * @pad: 0
 * @wc_flags: its IBV_WC_EX_WITH_* flags (@ex only)
 */
struct ibckpt_snap_cq {
	__u32 handle;
	__u32 device;
	__u32 cqe;
	__u32 n_drained;
	__u32 comp_channel;
	__u32 armed;
	__u32 ex;
	__u32 pad;
	__u64 wc_flags;
};

/**
 * struct ibckpt_snap_qp - queue pair with its full attributes
 * @handle: the QP's handle
 * @pd: handle of its PD
 * @send_cq: handle of its send CQ
 * @recv_cq: handle of its receive CQ
 * @srq: handle of its SRQ, 0: none
 * @qp_type: enum ibv_qp_type
 * @vqpn: the QPN the application and its peers know the QP by (virtual)
 * @qpn: the vendor's QPN
 * @state: enum ibv_qp_state
 * @dest_qpn: the remote QPN (dest_qp_num)
 * @sq_psn: PSN of the send queue
 * @rq_psn: PSN of the receive queue
 * @qkey: Q_Key
 * @access: qp_access_flags (IBV_ACCESS_*)
 * @path_mtu: enum ibv_mtu
 * @timeout: local ACK timeout
 * @retry_cnt: retry count
 * @rnr_retry: RNR retry count
 * @min_rnr_timer: minimum RNR NAK timer
 * @max_rd_atomic: RDMA reads and atomics it may have outstanding as
 *	initiator
 * @max_dest_rd_atomic: RDMA reads and atomics it accepts as responder
 * @port_num: primary port
 * @sl: service level of the primary path
 * @is_global: 1 if the primary path has a GRH
 * @sgid_index: source GID index of the primary path
 * @hop_limit: hop limit of the primary path
 * @dlid: destination LID of the primary path
 * @pkey_index: P_Key index of the primary path
 * @dgid: destination GID of the primary path
 * @max_send_wr: send queue capacity
 * @max_recv_wr: receive queue capacity
 * @max_send_sge: SGEs per send
 * @max_recv_sge: SGEs per receive
 * @max_inline_data: inline bytes per send
 * @sq_sig_all: 1 if every send is signaled
 * @n_send_wr: outstanding send WRs (as WR records)
 * @n_recv_wr: outstanding receive WRs (as WR records)
 * @n_modify: modify_qp calls logged
 * @xrcd: XRC target QPs: handle of the XRC domain, else 0
 * @send_ops_flags: IBV_QP_EX_WITH_*: the ibv_wr_* API, 0 if not asked for
 * @opened: 1: an XRC target opened with ibv_open_qp(), not created
 * @vdest_qpn: the remote QPN as the application knows it (@dest_qpn is
 *	the vendor's: they differ after a restart)
 *
 * The attributes are those of ibv_query_qp() while the application was
 * parked; @vqpn is what the application and its peers know the QP by.
 * The primary path's addresses (@dlid, @dgid) are the ones the application
 * knows, translated back from the vendor's. If ibv_query_qp() failed,
 * @state is struct ibv_qp's and the attributes from @dest_qpn to
 * @sq_sig_all are 0.
 */
struct ibckpt_snap_qp {
	__u32 handle;
	__u32 pd;
	__u32 send_cq;
	__u32 recv_cq;
	__u32 srq;
	__u32 qp_type;
	__u32 vqpn;
	__u32 qpn;
	__u32 state;
	__u32 dest_qpn;
	__u32 sq_psn;
	__u32 rq_psn;
	__u32 qkey;
	__u32 access;
	__u8 path_mtu;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 port_num;
	__u8 sl;
	__u8 is_global;
	__u8 sgid_index;
	__u8 hop_limit;
	__u16 dlid;
	__u16 pkey_index;
	__u8 dgid[16];
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 sq_sig_all;
	__u32 n_send_wr;
	__u32 n_recv_wr;
	__u32 n_modify;
	__u32 xrcd;
	__u64 send_ops_flags;
	__u32 opened;
	__u32 vdest_qpn;
};

#define IBCKPT_SNAP_SRQT_XRC	1	/* IBV_SRQT_XRC */

/**
 * struct ibckpt_snap_srq - shared receive queue
 * @handle: the SRQ's handle
 * @pd: handle of its PD
 * @max_wr: capacity (ibv_query_srq())
 * @max_sge: SGEs per receive (ibv_query_srq())
 * @srq_limit: the limit last armed with ibv_modify_srq(), 0 if none
 * @n_recv_wr: outstanding receives (as WR records)
 * @srq_type: enum ibv_srq_type: 0 basic, IBCKPT_SNAP_SRQT_XRC
 * @xrcd: XRC: handle of its XRC domain
 * @cq: XRC: handle of its CQ
 * @srq_num: XRC: the number senders name it by (wr remote_srqn)
 */
struct ibckpt_snap_srq {
	__u32 handle;
	__u32 pd;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 n_recv_wr;
	__u32 srq_type;
	__u32 xrcd;
	__u32 cq;
	__u32 srq_num;
};

/**
 * struct ibckpt_snap_xrcd - XRC domain
 * @handle: the domain's handle
 * @device: handle of its context
 * @oflags: the open(2) flags it was opened with (the file is the
 *	application's; a restart must open the same one)
 * @pad: 0
 */
struct ibckpt_snap_xrcd {
	__u32 handle;
	__u32 device;
	__u32 oflags;
	__u32 pad;
};

/**
 * struct ibckpt_snap_control - the process's restart channel
 * @cmd_fd: a descriptor of its command pipe (uapi/linux/ibckpt_restart.h)
 * @reply_fd: a descriptor of its reply pipe
 * @released: 1 if its vendor resources are released
 * @caps: IBCKPT_SNAP_CAP_* the provider's restart channel has (0 from a
 *	provider that predates them: the field was padding)
 *
 * Descriptor numbers in the process, to be opened through /proc/PID/fd.
 */
struct ibckpt_snap_control {
	__u32 cmd_fd;
	__u32 reply_fd;
	__u32 released;
	__u32 caps;
};

/* Its REMAP takes IBCKPT_ID_MW identities (memory windows across a restart). */
#define IBCKPT_SNAP_CAP_ID_MW	_BITUL(0)

/**
 * enum ibckpt_snap_wq - WR record: which queue the work request sits on
 * @IBCKPT_SNAP_WQ_SEND: a send queue; @owner is a QP handle
 * @IBCKPT_SNAP_WQ_RECV: a receive queue; @owner is a QP handle
 * @IBCKPT_SNAP_WQ_SRQ: a shared receive queue; @owner is an SRQ handle
 */
enum ibckpt_snap_wq {
	IBCKPT_SNAP_WQ_SEND = 1,
	IBCKPT_SNAP_WQ_RECV,
	IBCKPT_SNAP_WQ_SRQ,
};

#define IBCKPT_SNAP_WR_BIND_MW	8	/* IBV_WR_BIND_MW */
#define IBCKPT_SNAP_WR_TSO	10	/* IBV_WR_TSO */

/**
 * struct ibckpt_snap_wr - a posted, not yet completed work request
 * @wr_id: the application's wr_id
 * @owner: handle of the queue's QP or SRQ (see enum ibckpt_snap_wq)
 * @wq: enum ibckpt_snap_wq
 * @opcode: enum ibv_wr_opcode (send queue)
 * @send_flags: IBV_SEND_* (IBV_SEND_SIGNALED added if the QP signals all
 *	sends)
 * @num_sge: struct ibckpt_snap_sge that follow
 * @inline_len: inline payload bytes that follow the SGEs
 * @remote_addr: RDMA and atomic requests: the remote address
 * @rkey: RDMA and atomic requests: the remote rkey
 * @imm_data: immediate data or invalidate_rkey, as posted
 * @compare_add: atomic requests: the compare or add operand
 * @swap: atomic requests: the swap operand
 * @ud_ah: UD: AH handle
 * @ud_remote_qpn: UD: the destination QPN
 * @ud_remote_qkey: UD: the destination Q_Key
 * @xrc_remote_srqn: XRC send queue: the target SRQ
 *
 * Followed by @num_sge struct ibckpt_snap_sge, then @inline_len bytes of
 * inline payload copied at post time. @len of the record covers all three.
 *
 * A memory window bind (@opcode IBCKPT_SNAP_WR_BIND_MW) uses the fields as: @ud_ah
 * the window's handle, @rkey its new rkey, @remote_addr and @compare_add
 * the bound address and length, @swap the MR's handle (0: unbind),
 * @imm_data the window's IBV_ACCESS_* flags.
 *
 * An atomic write (@opcode 15, IBV_WR_ATOMIC_WRITE) built with
 * ibv_wr_atomic_write() carries the 8 bytes it writes in @swap.
 *
 * A TSO request (@opcode IBCKPT_SNAP_WR_TSO) carries its header's size in
 * @compare_add and its MSS in @swap; the header's bytes follow the inline
 * payload, and @len of the record covers them too.
 *
 * An AH, window or MR handle of 0 in a WR record means that object was
 * destroyed while the request was still logged (an unsignaled request
 * completes silently, so its log entry can outlive what it names).
 *
 * Of a receive (@wq other than IBCKPT_SNAP_WQ_SEND), only @wr_id and the
 * SGEs matter.
 */
struct ibckpt_snap_wr {
	__u64 wr_id;
	__u32 owner;
	__u32 wq;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 inline_len;
	__u64 remote_addr;
	__u32 rkey;
	__u32 imm_data;
	__u64 compare_add;
	__u64 swap;
	__u32 ud_ah;
	__u32 ud_remote_qpn;
	__u32 ud_remote_qkey;
	__u32 xrc_remote_srqn;
};

/**
 * struct ibckpt_snap_sge - one scatter/gather entry of a WR record, as posted
 * @addr: start address in the process
 * @length: bytes
 * @lkey: the lkey the application gave
 */
struct ibckpt_snap_sge {
	__u64 addr;
	__u32 length;
	__u32 lkey;
};

/**
 * struct ibckpt_snap_wc - a completion drained into a CQ's private queue,
 * in the order the application will receive it
 * @wr_id: the completed request's wr_id
 * @cq: CQ handle
 * @status: enum ibv_wc_status
 * @opcode: enum ibv_wc_opcode
 * @vendor_err: the vendor's error code
 * @byte_len: bytes transferred
 * @imm_data: immediate data or invalidated rkey
 * @qp_num: virtual QPN
 * @src_qp: the source QPN
 * @wc_flags: IBV_WC_* flags
 * @pkey_index: P_Key index
 * @slid: the source LID
 * @sl: the service level
 * @dlid_path_bits: the destination LID path bits
 * @pad: 0
 *
 * Apart from @cq and @pad, the fields are those of struct ibv_wc.
 */
struct ibckpt_snap_wc {
	__u64 wr_id;
	__u32 cq;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_data;
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 pad[6];
};

/**
 * struct ibckpt_snap_ah - address handle
 * @handle: the AH's handle
 * @pd: handle of its PD
 * @dlid: destination LID
 * @sl: service level
 * @is_global: 1 if it has a GRH
 * @port_num: port
 * @sgid_index: source GID index
 * @hop_limit: hop limit
 * @pad: 0
 * @dgid: destination GID
 *
 * The attributes the application created it with: the addresses are the
 * ones the application knows, not the vendor's.
 */
struct ibckpt_snap_ah {
	__u32 handle;
	__u32 pd;
	__u16 dlid;
	__u8 sl;
	__u8 is_global;
	__u8 port_num;
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 pad;
	__u8 dgid[16];
};

/**
 * struct ibckpt_snap_mw - memory window, with its last bind
 * @handle: the window's handle
 * @pd: handle of its PD
 * @type: IBV_MW_TYPE_1 or IBV_MW_TYPE_2
 * @vrkey: rkey the application and its peers know (its last bind's)
 * @rkey: the vendor's rkey for it, 0 while released
 * @mr: handle of the MR it is bound to, 0 if unbound (never bound, unbound,
 *	or invalidated)
 * @access: IBV_ACCESS_* flags of the bind
 * @qp: a bound type 2 window: handle of the QP that bound it, the only one
 *	it answers; else 0
 * @addr: start of the bound range
 * @length: bytes bound
 */
struct ibckpt_snap_mw {
	__u32 handle;
	__u32 pd;
	__u32 type;
	__u32 vrkey;
	__u32 rkey;
	__u32 mr;
	__u32 access;
	__u32 qp;
	__u64 addr;
	__u64 length;
};

#endif /* _UAPI_LINUX_IBCKPT_SNAPSHOT_H */
