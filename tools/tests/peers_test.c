// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The release's exactly-once check over a job's snapshots (tools/peers.c):
 * snapshots built with the provider's writer, as a provider gives them.
 */
#define UNIT_SUITE "peers"
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <linux/ibckpt_restart.h>
#include "../../tests/unit/unit.h"
#include "../../provider/snapshot_writer.h"
#include "../peers.h"

struct qp_spec {
	uint32_t vqpn, dest, sq_psn, rq_psn, state, type;
	uint8_t dgid_last;	/* the peer device's GID; 0: the other of 1 and 2 */
	uint32_t access;	/* its qp_access_flags */
};

/* One process: one device of GID @gid_last (last byte), its QPs. */
static void *snap(unsigned int pid, uint8_t gid_last, const struct qp_spec *q, int n)
{
	struct snap_writer w;
	struct ibckpt_snap_device *d;
	int i;

	if (snapw_init(&w, pid, 1))
		abort();
	d = snapw_add(&w, IBCKPT_SNAP_DEVICE, sizeof(*d));
	d->gid[15] = gid_last;
	for (i = 0; i < n; i++) {
		struct ibckpt_snap_qp *r = snapw_add(&w, IBCKPT_SNAP_QP, sizeof(*r));

		r->handle = 1000 + q[i].vqpn;
		r->access = q[i].access;
		r->vqpn = r->qpn = q[i].vqpn;
		r->vdest_qpn = r->dest_qpn = q[i].dest;
		r->sq_psn = q[i].sq_psn;
		r->rq_psn = q[i].rq_psn;
		r->state = q[i].state;
		r->qp_type = q[i].type;
		r->is_global = 1;
		r->dgid[15] = q[i].dgid_last ? q[i].dgid_last : gid_last == 1 ? 2 : 1;
	}
	if (snapw_finish(&w))
		abort();
	return w.buf;
}

/*
 * One process with @windows memory windows (unbound) and a CONTROL record
 * with @caps (~0u: none).
 */
static void *snap_mw(unsigned int pid, int windows, uint32_t caps)
{
	struct snap_writer w;
	int i;

	if (snapw_init(&w, pid, 1))
		abort();
	for (i = 0; i < windows; i++) {
		struct ibckpt_snap_mw *m = snapw_add(&w, IBCKPT_SNAP_MW, sizeof(*m));

		m->handle = (uint32_t)i + 1;
		m->type = 2;
	}
	if (caps != ~0u) {
		struct ibckpt_snap_control *c = snapw_add(&w, IBCKPT_SNAP_CONTROL, sizeof(*c));

		c->cmd_fd = 3;
		c->reply_fd = 4;
		c->caps = caps;
	}
	if (snapw_finish(&w))
		abort();
	return w.buf;
}

static int check3(void *a, void *b, void *c, char *why)
{
	const void *s[3] = { a, b, c };
	int r = peers_check(s, c ? 3 : b ? 2 : 1, why, 256);

	free(a);
	free(b);
	free(c);
	return r;
}

static int check(void *a, void *b, char *why)
{
	return check3(a, b, NULL, why);
}

static void matching_psns_pass(void)
{
	struct qp_spec a[] = { { 17, 17, 100, 500, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 },
			       { 18, 18, 7, 9, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	struct qp_spec b[] = { { 17, 17, 500, 100, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 },
			       { 18, 18, 9, 7, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	char why[256] = "";

	CHECK_EQ(check(snap(10, 1, a, 2), snap(11, 2, b, 2), why), 0);
}

/* Sent, not received: an unsignaled send may not have executed. */
static void psn_in_flight_refused(void)
{
	struct qp_spec a[] = { { 17, 17, 101, 500, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	struct qp_spec b[] = { { 17, 17, 500, 100, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	char why[256] = "";

	CHECK_EQ(check(snap(10, 1, a, 1), snap(11, 2, b, 1), why), -2);
	CHECK(strstr(why, "PSN 101") && strstr(why, "expects PSN 100"));
}

/* PSNs are 24 bits: the upper byte is no difference. */
static void psn_compared_on_24_bits(void)
{
	struct qp_spec a[] = { { 17, 17, 0x1000005, 3, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	struct qp_spec b[] = { { 17, 17, 3, 5, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	char why[256] = "";

	CHECK_EQ(check(snap(10, 1, a, 1), snap(11, 2, b, 1), why), 0);
}

static void peer_outside_the_job_refused(void)
{
	struct qp_spec a[] = { { 17, 40, 1, 1, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	char why[256] = "";

	CHECK_EQ(check(snap(10, 1, a, 1), NULL, why), -1);
	CHECK(strstr(why, "not in the job") != NULL);
}

/*
 * Devices hand out the same QPNs: the peer is the QP 17 on the GID named,
 * not the QP 17 of a third device, connected to itself, whose PSNs would
 * not match (QPN alone names three candidates).
 */
static void same_qpn_on_three_devices(void)
{
	struct qp_spec a[] = { { 17, 17, 5, 6, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	struct qp_spec b[] = { { 17, 17, 6, 5, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	struct qp_spec c[] = { { 17, 17, 1000, 1000, IBV_QPS_RTS, IBV_QPT_RC, 3, 0 } };
	char why[256] = "";

	CHECK_EQ(check3(snap(10, 1, a, 1), snap(11, 2, b, 1), snap(12, 3, c, 1), why), 0);
	CHECK_EQ(why[0], 0);
}

/* A QP at RTR (perftest's passive side) sends nothing: its PSN is no evidence. */
static void receive_only_side_not_checked(void)
{
	struct qp_spec a[] = { { 17, 17, 0, 500, IBV_QPS_RTR, IBV_QPT_RC, 0, 0 } };
	struct qp_spec b[] = { { 17, 17, 500, 1234, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 } };
	char why[256] = "";

	CHECK_EQ(check(snap(10, 1, a, 1), snap(11, 2, b, 1), why), 0);
}

/* Not connected yet, UD, or in error: nothing to check. */
static void unconnected_qps_ignored(void)
{
	struct qp_spec a[] = { { 17, 99, 1, 2, IBV_QPS_INIT, IBV_QPT_RC, 0, 0 },
			       { 18, 99, 1, 2, IBV_QPS_RTS, IBV_QPT_UD, 0, 0 },
			       { 19, 99, 1, 2, IBV_QPS_ERR, IBV_QPT_RC, 0, 0 } };
	char why[256] = "";

	CHECK_EQ(check(snap(10, 1, a, 3), NULL, why), 0);
}

/*
 * What each process's RC QPs' peers grant (PREPARE's payload): the peer
 * found as peers_check() finds it, its access flags; not for a UD or UC
 * QP, one not connected, or one whose peer is not in the job.
 */
static void peer_access_for_the_fence(void)
{
	const uint32_t rw = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	struct qp_spec a[] = { { 17, 17, 1, 2, IBV_QPS_RTS, IBV_QPT_RC, 0, rw },
			       { 18, 18, 3, 4, IBV_QPS_RTS, IBV_QPT_RC, 0, 0 },
			       { 19, 19, 5, 6, IBV_QPS_RTS, IBV_QPT_UC, 0, rw },
			       { 20, 77, 7, 8, IBV_QPS_RTS, IBV_QPT_RC, 0, rw },
			       { 21, 21, 9, 9, IBV_QPS_INIT, IBV_QPT_RC, 0, rw } };
	struct qp_spec b[] = { { 17, 17, 2, 1, IBV_QPS_RTS, IBV_QPT_RC, 0,
				 IBV_ACCESS_REMOTE_READ },
			       { 18, 18, 4, 3, IBV_QPS_RTS, IBV_QPT_RC, 0,
				 IBV_ACCESS_REMOTE_ATOMIC },
			       { 19, 19, 6, 5, IBV_QPS_RTS, IBV_QPT_UC, 0, rw } };
	const void *s[2] = { snap(10, 1, a, 5), snap(11, 2, b, 3) };
	struct ibckpt_rpeer *v;
	uint32_t n;

	CHECK_EQ(peers_access(s, 2, 10, &v, &n), 0);
	CHECK_EQ(n, 2);
	if (n == 2) {
		CHECK_EQ(v[0].qp, 1017);
		CHECK_EQ(v[0].access, IBV_ACCESS_REMOTE_READ);
		CHECK_EQ(v[1].qp, 1018);
		CHECK_EQ(v[1].access, IBV_ACCESS_REMOTE_ATOMIC);
	}
	free(v);
	CHECK_EQ(peers_access(s, 2, 11, &v, &n), 0);
	CHECK_EQ(n, 2);
	if (n == 2) {
		CHECK_EQ(v[0].qp, 1017);
		CHECK_EQ(v[0].access, rw);
		CHECK_EQ(v[1].access, 0);
	}
	free(v);
	CHECK_EQ(peers_access(s, 2, 12, &v, &n), 0);	/* not in the job */
	CHECK_EQ(n, 0);
	CHECK(v == NULL);
	free((void *)s[0]);
	free((void *)s[1]);
}

/*
 * Windows in the job: every provider must take window identities at
 * REMAP. One that predates them (its CONTROL record's caps 0, once padding)
 * would refuse them after the release: refused before, naming both.
 */
static void windows_need_every_provider(void)
{
	char why[256] = "";

	CHECK_EQ(check(snap_mw(10, 2, IBCKPT_SNAP_CAP_ID_MW), snap_mw(11, 0, 0), why), -1);
	CHECK(strstr(why, "process 10 has memory windows") != NULL);
	CHECK(strstr(why, "process 11 predates") != NULL);
	why[0] = 0;
	CHECK_EQ(check(snap_mw(10, 0, IBCKPT_SNAP_CAP_ID_MW), snap_mw(11, 0, 0), why), 0);
	CHECK_EQ(check(snap_mw(10, 1, IBCKPT_SNAP_CAP_ID_MW),
		       snap_mw(11, 0, IBCKPT_SNAP_CAP_ID_MW), why), 0);
	CHECK_EQ(check(snap_mw(10, 1, IBCKPT_SNAP_CAP_ID_MW), snap_mw(11, 1, ~0u), why), 0);
	CHECK_EQ(why[0], 0);
}

int main(void)
{
	RUN(matching_psns_pass);
	RUN(psn_in_flight_refused);
	RUN(psn_compared_on_24_bits);
	RUN(peer_outside_the_job_refused);
	RUN(same_qpn_on_three_devices);
	RUN(unconnected_qps_ignored);
	RUN(receive_only_side_not_checked);
	RUN(peer_access_for_the_fence);
	RUN(windows_need_every_provider);
	return unit_done();
}
