// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The release's exactly-once check, over the snapshots of the whole job.
 *
 * A send that completed was received; a signaled one not completed makes
 * the provider refuse the release by itself. What only the job as a whole
 * can tell is the fate of the unsignaled sends after the last signaled one
 * of a queue: they complete without a trace. The kernel reports each QP's
 * next PSN to send (sq_psn) and the next PSN it expects (rq_psn): when a
 * QP's sq_psn is its peer's rq_psn, the peer has received everything the
 * QP sent. The quiesce's quiet period lets a queue transmit what was
 * posted; a queue still transmitting shows as a mismatch, and the release
 * is refused rather than guessed.
 *
 * The same pairing tells each provider what its QPs' peers grant
 * (peers_access()): the fence it posts behind unsignaled RDMA READs and
 * atomics must be one the peer cannot refuse (provider/fence.c).
 *
 * Also what a reacquire of the job would need of every provider: memory
 * windows anywhere in the job mean window identities (IBCKPT_ID_MW) at
 * every process's REMAP, which a provider that predates them refuses, after
 * the job was released (restart.rst, "The restart channel").
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <linux/ibckpt_restart.h>
#include <linux/ibckpt_snapshot.h>
#include "peers.h"
#include "snapshot.h"

struct peer_qp {
	const struct ibckpt_snap_qp *qp;
	const uint8_t *gid;		/* its device's GID 0 */
	unsigned int tgid;
};

struct peer_set {
	struct peer_qp *v;
	unsigned int n, cap;
	const uint8_t *gid;		/* of the device record being walked */
	unsigned int tgid;
	bool nomem;
	unsigned int mw_tgid;		/* a process with memory windows, 0: none */
	unsigned int old_tgid;		/* one whose provider takes no window identity */
};

static void collect(const struct ibckpt_snap_rec *r, const void *pl, void *arg)
{
	struct peer_set *s = arg;

	if (r->type == IBCKPT_SNAP_DEVICE) {
		s->gid = ((const struct ibckpt_snap_device *)pl)->gid;
		return;
	}
	if (r->type == IBCKPT_SNAP_MW && !s->mw_tgid)
		s->mw_tgid = s->tgid;
	if (r->type == IBCKPT_SNAP_CONTROL && !s->old_tgid &&
	    !(((const struct ibckpt_snap_control *)pl)->caps & IBCKPT_SNAP_CAP_ID_MW))
		s->old_tgid = s->tgid;
	if (r->type != IBCKPT_SNAP_QP)
		return;
	if (s->n == s->cap) {
		struct peer_qp *v = realloc(s->v, (s->cap * 2 + 16) * sizeof(*v));

		if (!v) {
			s->nomem = true;
			return;
		}
		s->v = v;
		s->cap = s->cap * 2 + 16;
	}
	s->v[s->n++] = (struct peer_qp){ .qp = pl, .gid = s->gid, .tgid = s->tgid };
}

static bool connected(const struct ibckpt_snap_qp *q)
{
	return (q->qp_type == IBV_QPT_RC || q->qp_type == IBV_QPT_UC) &&
	       q->state >= IBV_QPS_RTR && q->state != IBV_QPS_ERR;
}

/* The peer @a names: its device's GID and QPN; else the one QP naming @a back. */
static const struct peer_qp *find_peer(const struct peer_set *s, const struct peer_qp *a)
{
	const struct peer_qp *back = NULL;
	unsigned int i, nback = 0;

	for (i = 0; i < s->n; i++) {
		const struct peer_qp *b = &s->v[i];

		if (b->qp->vqpn != a->qp->vdest_qpn || !connected(b->qp))
			continue;
		/* (b may be a itself: a QP connected to itself) */
		if (a->qp->is_global && b->gid && !memcmp(b->gid, a->qp->dgid, 16))
			return b;
		if (b != a && b->qp->vdest_qpn == a->qp->vqpn) {
			back = b;
			nback++;
		}
	}
	return nback == 1 ? back : NULL;
}

/* Every QP of the snapshots, with its device's GID and process. */
static int collect_all(const void *const *snaps, unsigned int n, struct peer_set *s)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		s->gid = NULL;
		s->tgid = ((const struct ibckpt_snap_hdr *)snaps[i])->tgid;
		snap_foreach(snaps[i], collect, s);
	}
	if (!s->nomem)
		return 0;
	free(s->v);
	s->v = NULL;
	return -1;
}

int peers_access(const void *const *snaps, unsigned int n, unsigned int tgid,
		 struct ibckpt_rpeer **out, uint32_t *nout)
{
	struct peer_set s = { 0 };
	struct ibckpt_rpeer *v = NULL;
	unsigned int i;
	uint32_t k = 0;

	*out = NULL;
	*nout = 0;
	if (collect_all(snaps, n, &s))
		return -1;
	for (i = 0; i < s.n; i++) {
		const struct peer_qp *a = &s.v[i], *b;

		if (a->tgid != tgid || a->qp->qp_type != IBV_QPT_RC || !connected(a->qp))
			continue;
		b = find_peer(&s, a);
		if (!b)
			continue;
		if (!v) {
			v = calloc(s.n, sizeof(*v));
			if (!v) {
				free(s.v);
				return -1;
			}
		}
		v[k++] = (struct ibckpt_rpeer){ .qp = a->qp->handle, .access = b->qp->access };
	}
	free(s.v);
	*out = v;
	*nout = k;
	return 0;
}

int peers_check(const void *const *snaps, unsigned int n, char *why, size_t whylen)
{
	struct peer_set s = { 0 };
	unsigned int i;
	int ret = 0;

	if (collect_all(snaps, n, &s)) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (s.mw_tgid && s.old_tgid) {
		snprintf(why, whylen, "process %u has memory windows, and the ibckpt provider of "
			 "process %u predates windows across a restart (its reacquire would "
			 "refuse their identities): every process of the job needs a provider "
			 "that has them", s.mw_tgid, s.old_tgid);
		free(s.v);
		return -1;
	}
	for (i = 0; i < s.n && !ret; i++) {
		const struct peer_qp *a = &s.v[i], *b;

		if (!connected(a->qp))
			continue;
		b = find_peer(&s, a);
		if (!b) {
			snprintf(why, whylen, "QP %u of process %u: its peer (QP %u) is not in "
				 "the job", a->qp->vqpn, a->tgid, a->qp->vdest_qpn);
			ret = -1;
		} else if (a->qp->state >= IBV_QPS_RTS &&	/* at RTR it sends nothing */
			   (a->qp->sq_psn & 0xffffff) != (b->qp->rq_psn & 0xffffff)) {
			snprintf(why, whylen, "QP %u of process %u has sent up to PSN %u, its "
				 "peer QP %u of process %u expects PSN %u: requests are still "
				 "in flight", a->qp->vqpn, a->tgid, a->qp->sq_psn, b->qp->vqpn,
				 b->tgid, b->qp->rq_psn);
			ret = -2;
		}
	}
	free(s.v);
	return ret;
}
