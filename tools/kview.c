// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's own view in `ibckpt dump`: reading the IBCKPT_A_KPROC and
 * IBCKPT_A_KQP messages of a SNAPSHOT_GET dump, and printing them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt.h>
#include "json.h"
#include "kview.h"
#include "rdma_res.h"

static unsigned int u32_or0(struct nlattr **a, int i)
{
	return a[i] ? nla_get_u32(a[i]) : 0;
}

static int take_proc(struct nlattr *nest, unsigned int tgid, struct kv_list *l)
{
	struct nlattr *a[IBCKPT_KPROC_A_MAX + 1];
	struct kv_proc *v;

	if (nla_parse_nested(a, IBCKPT_KPROC_A_MAX, nest, NULL) || !a[IBCKPT_KPROC_A_FLAGS])
		return -EBADMSG;
	v = realloc(l->v, sizeof(*v) * (l->n + 1));
	if (!v)
		return -ENOMEM;
	l->v = v;
	v = &l->v[l->n++];
	memset(v, 0, sizeof(*v));
	v->tgid = tgid;
	v->flags = nla_get_u32(a[IBCKPT_KPROC_A_FLAGS]);
	v->pinned = a[IBCKPT_KPROC_A_PINNED] ? nla_get_u64(a[IBCKPT_KPROC_A_PINNED]) : 0;
	v->nqps = u32_or0(a, IBCKPT_KPROC_A_QPS);
	return 1;
}

static int take_qp(struct nlattr *nest, unsigned int tgid, struct kv_list *l)
{
	struct nlattr *a[IBCKPT_KQP_A_MAX + 1];
	struct kv_proc *p = l->n ? &l->v[l->n - 1] : NULL;
	struct kv_qp *q;

	if (nla_parse_nested(a, IBCKPT_KQP_A_MAX, nest, NULL) || !a[IBCKPT_KQP_A_DEVICE] ||
	    !a[IBCKPT_KQP_A_QPN])
		return -EBADMSG;
	/* a QP follows its process, which announced how many */
	if (!p || p->tgid != tgid || p->n >= p->nqps) {
		l->bad = 1;
		return 1;
	}
	q = realloc(p->qp, sizeof(*q) * (p->n + 1));
	if (!q)
		return -ENOMEM;
	p->qp = q;
	q = &p->qp[p->n++];
	memset(q, 0, sizeof(*q));
	snprintf(q->dev, sizeof(q->dev), "%s", nla_get_string(a[IBCKPT_KQP_A_DEVICE]));
	q->handle = u32_or0(a, IBCKPT_KQP_A_HANDLE);
	q->qpn = nla_get_u32(a[IBCKPT_KQP_A_QPN]);
	q->owner = u32_or0(a, IBCKPT_KQP_A_OWNER);
	q->type = u32_or0(a, IBCKPT_KQP_A_TYPE);
	q->port = u32_or0(a, IBCKPT_KQP_A_PORT);
	q->query_err = u32_or0(a, IBCKPT_KQP_A_QUERY_ERR);
	q->state = u32_or0(a, IBCKPT_KQP_A_STATE);
	q->dest_qpn = u32_or0(a, IBCKPT_KQP_A_DEST_QPN);
	q->sq_psn = u32_or0(a, IBCKPT_KQP_A_SQ_PSN);
	q->rq_psn = u32_or0(a, IBCKPT_KQP_A_RQ_PSN);
	return 1;
}

int kv_take(struct nlattr **a, struct kv_list *l)
{
	if (!a[IBCKPT_A_KPROC] && !a[IBCKPT_A_KQP])
		return 0;
	if (!a[IBCKPT_A_SNAP_TGID])
		return -EBADMSG;
	if (a[IBCKPT_A_KPROC])
		return take_proc(a[IBCKPT_A_KPROC], nla_get_u32(a[IBCKPT_A_SNAP_TGID]), l);
	return take_qp(a[IBCKPT_A_KQP], nla_get_u32(a[IBCKPT_A_SNAP_TGID]), l);
}

void kv_finish(struct kv_list *l)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].n != l->v[i].nqps)
			l->bad = 1;
}

const struct kv_proc *kv_find(const struct kv_list *l, unsigned int tgid)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].tgid == tgid)
			return &l->v[i];
	return NULL;
}

void kv_free(struct kv_list *l)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].qp);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static const char *state_name(unsigned int st)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return st < sizeof(n) / sizeof(n[0]) ? n[st] : "?";
}

/* A process without a snapshot: its QPs and MRs as RDMA netlink lists them. */
static void rres_text(FILE *f, unsigned int tgid, const struct rres *rr)
{
	unsigned int i, nq = 0, nm = 0;

	if (!rr) {
		fprintf(f, "  kernel: its QPs and MRs: RDMA netlink could not be read\n");
		return;
	}
	for (i = 0; i < rr->nqp; i++)
		nq += rr->qp[i].tgid == tgid;
	for (i = 0; i < rr->nmr; i++)
		nm += rr->mr[i].tgid == tgid;
	fprintf(f, "  kernel: %u QP%s and %u MR%s (RDMA netlink, as rdma res shows them)\n",
		nq, nq == 1 ? "" : "s", nm, nm == 1 ? "" : "s");
	for (i = 0; i < rr->nqp; i++) {
		const struct rres_qp *q = &rr->qp[i];

		if (q->tgid != tgid)
			continue;
		fprintf(f, "  kernel qp: %s qpn %#x thread %u type %u port %u state %u (%s)", q->dev,
			q->qpn, q->tid, q->type, q->port, q->state, state_name(q->state));
		if (q->has_dest)
			fprintf(f, " dest %#x rq_psn %#x", q->dest_qpn, q->rq_psn);
		fprintf(f, " sq_psn %#x\n", q->sq_psn);
	}
	for (i = 0; i < rr->nmr; i++) {
		const struct rres_mr *m = &rr->mr[i];

		if (m->tgid != tgid)
			continue;
		fprintf(f, "  kernel mr: %s mrn %u thread %u pdn %u len %" PRIu64, m->dev, m->mrn,
			m->tid, m->pdn, m->length);
		if (m->has_keys)
			fprintf(f, " lkey %#x rkey %#x", m->lkey, m->rkey);
		fputc('\n', f);
	}
}

static void rres_json(FILE *f, unsigned int tgid, const struct rres *rr)
{
	unsigned int i, n = 0;

	fprintf(f, ",\"rdma_netlink\":%s,\"qps\":[", json_bool(rr != NULL));
	for (i = 0; rr && i < rr->nqp; i++) {
		const struct rres_qp *q = &rr->qp[i];

		if (q->tgid != tgid)
			continue;
		fprintf(f, "%s{\"device\":", n++ ? "," : "");
		json_str(f, q->dev);
		fprintf(f, ",\"qpn\":%u,\"thread\":%u,\"type\":%u,\"port\":%u,\"state\":%u,"
			"\"sq_psn\":%u", q->qpn, q->tid, q->type, q->port, q->state, q->sq_psn);
		if (q->has_dest)
			fprintf(f, ",\"dest_qpn\":%u,\"rq_psn\":%u", q->dest_qpn, q->rq_psn);
		fputc('}', f);
	}
	fputs("],\"mrs\":[", f);
	for (i = 0, n = 0; rr && i < rr->nmr; i++) {
		const struct rres_mr *m = &rr->mr[i];

		if (m->tgid != tgid)
			continue;
		fprintf(f, "%s{\"device\":", n++ ? "," : "");
		json_str(f, m->dev);
		fprintf(f, ",\"mrn\":%u,\"thread\":%u,\"pdn\":%u,\"length\":%" PRIu64, m->mrn,
			m->tid, m->pdn, m->length);
		if (m->has_keys)
			fprintf(f, ",\"lkey\":%u,\"rkey\":%u", m->lkey, m->rkey);
		fputc('}', f);
	}
	fputs("]}", f);
}

void kv_print_text(FILE *f, const struct kv_proc *p, const struct rres *rr)
{
	const struct kv_qp *q;
	unsigned int i;

	if (p->flags & IBCKPT_KPROC_F_NO_SNAPSHOT) {
		rres_text(f, p->tgid, rr);
		return;
	}
	if (p->flags & IBCKPT_KPROC_F_RELEASED) {
		fprintf(f, "  kernel: its vendor resources were released; no QP looked up\n");
		return;
	}
	fprintf(f, "  kernel: the RDMA core's record of its %u QP%s at the quiesce\n", p->n,
		p->n == 1 ? "" : "s");
	for (i = 0; i < p->n; i++) {
		q = &p->qp[i];
		fprintf(f, "  kernel qp %u: %s qpn %#x owner %u type %u port %u", q->handle, q->dev,
			q->qpn, q->owner, q->type, q->port);
		if (q->query_err)
			fprintf(f, " query failed (%s)\n", strerror((int)q->query_err));
		else
			fprintf(f, " state %u (%s) dest %#x sq_psn %#x rq_psn %#x\n", q->state,
				state_name(q->state), q->dest_qpn, q->sq_psn, q->rq_psn);
	}
}

void kv_print_json(FILE *f, const struct kv_proc *p, const struct rres *rr)
{
	const struct kv_qp *q;
	unsigned int i;

	fprintf(f, "{\"pinned_bytes\":%" PRIu64 ",\"snapshot\":%s,\"released\":%s", p->pinned,
		json_bool(!(p->flags & IBCKPT_KPROC_F_NO_SNAPSHOT)),
		json_bool(p->flags & IBCKPT_KPROC_F_RELEASED));
	if (p->flags & IBCKPT_KPROC_F_NO_SNAPSHOT) {
		rres_json(f, p->tgid, rr);
		return;
	}
	fputs(",\"qps\":[", f);
	for (i = 0; i < p->n; i++) {
		q = &p->qp[i];
		fprintf(f, "%s{\"handle\":%u,\"device\":", i ? "," : "", q->handle);
		json_str(f, q->dev);
		fprintf(f, ",\"qpn\":%u,\"owner\":%u,\"type\":%u,\"port\":%u", q->qpn, q->owner,
			q->type, q->port);
		if (q->query_err)
			fprintf(f, ",\"query_error\":%u}", q->query_err);
		else
			fprintf(f, ",\"state\":%u,\"dest_qpn\":%u,\"sq_psn\":%u,\"rq_psn\":%u}",
				q->state, q->dest_qpn, q->sq_psn, q->rq_psn);
	}
	fputs("]}", f);
}
