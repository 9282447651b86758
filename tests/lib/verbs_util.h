/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Verbs set-up shared by the test programs (tests/provider, tests/bench). */
#ifndef IBCKPT_TEST_VERBS_UTIL_H
#define IBCKPT_TEST_VERBS_UTIL_H

#include <string.h>
#include <infiniband/verbs.h>

/* Opens the device called 'name'; NULL if there is none or it cannot be opened. */
static inline struct ibv_context *open_named_device(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;
	int i;

	for (i = 0; l && l[i] && !c; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return c;
}

/*
 * An RC QP connected to QP 'dest_qpn' at GID 'gid' of port 1 (RoCE: rxe's
 * GID index 0): INIT, RTR and RTS. Returns NULL, or the failing step's name
 * ("INIT", "RTR", "RTS") with errno set.
 */
static inline const char *rc_connect_rnr(struct ibv_qp *qp, uint32_t dest_qpn,
					 const union ibv_gid *gid, int access,
					 uint8_t min_rnr_timer);

static inline const char *rc_connect(struct ibv_qp *qp, uint32_t dest_qpn,
				     const union ibv_gid *gid, int access)
{
	return rc_connect_rnr(qp, dest_qpn, gid, access, 12);
}

/* rc_connect() with the RNR NAK timer code the QP asks its senders to wait (IBTA 9.7.5.2.8). */
static inline const char *rc_connect_rnr(struct ibv_qp *qp, uint32_t dest_qpn,
					 const union ibv_gid *gid, int access,
					 uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = (unsigned int)access };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return "INIT";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return "RTR";
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return "RTS";
	return NULL;
}

/* An RC QP connected to itself, destination its own QPN: see rc_connect(). */
static inline const char *rc_loopback_connect(struct ibv_qp *qp, const union ibv_gid *gid,
					      int access)
{
	return rc_connect(qp, qp->qp_num, gid, access);
}

#endif
