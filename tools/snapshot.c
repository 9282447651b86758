// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Validation and printing of ibckpt snapshots for `ibckpt dump`.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include "json.h"
#include "snapshot.h"

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

/* The payload size each record type must at least have, by version 1. */
static const size_t min_len[__IBCKPT_SNAP_TYPE_MAX] = {
	[IBCKPT_SNAP_DEVICE] = sizeof(struct ibckpt_snap_device),
	[IBCKPT_SNAP_PD] = sizeof(struct ibckpt_snap_pd),
	[IBCKPT_SNAP_MR] = sizeof(struct ibckpt_snap_mr),
	[IBCKPT_SNAP_CQ] = sizeof(struct ibckpt_snap_cq),
	[IBCKPT_SNAP_QP] = sizeof(struct ibckpt_snap_qp),
	[IBCKPT_SNAP_SRQ] = sizeof(struct ibckpt_snap_srq),
	[IBCKPT_SNAP_WR] = sizeof(struct ibckpt_snap_wr),
	[IBCKPT_SNAP_WC] = sizeof(struct ibckpt_snap_wc),
	[IBCKPT_SNAP_AH] = sizeof(struct ibckpt_snap_ah),
	[IBCKPT_SNAP_MW] = sizeof(struct ibckpt_snap_mw),
	[IBCKPT_SNAP_XRCD] = sizeof(struct ibckpt_snap_xrcd),
	[IBCKPT_SNAP_CONTROL] = sizeof(struct ibckpt_snap_control),
};

static const char *const type_name[__IBCKPT_SNAP_TYPE_MAX] = {
	[IBCKPT_SNAP_DEVICE] = "device", [IBCKPT_SNAP_PD] = "pd", [IBCKPT_SNAP_MR] = "mr",
	[IBCKPT_SNAP_CQ] = "cq", [IBCKPT_SNAP_QP] = "qp", [IBCKPT_SNAP_SRQ] = "srq",
	[IBCKPT_SNAP_WR] = "wr", [IBCKPT_SNAP_WC] = "wc", [IBCKPT_SNAP_AH] = "ah",
	[IBCKPT_SNAP_MW] = "mw", [IBCKPT_SNAP_XRCD] = "xrcd", [IBCKPT_SNAP_CONTROL] = "control",
};

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A WR record carries its SGEs and inline bytes after the fixed part. */
static int check_wr(const struct ibckpt_snap_wr *w, size_t len, char *err, size_t errlen)
{
	bool tso = w->wq == IBCKPT_SNAP_WQ_SEND && w->opcode == IBCKPT_SNAP_WR_TSO;
	uint64_t need = sizeof(*w) + (uint64_t)w->num_sge * sizeof(struct ibckpt_snap_sge) +
			w->inline_len + (tso ? w->compare_add : 0);

	if (w->num_sge > 1024 || (tso && w->compare_add > 0xffff) || need > len)
		return bad(err, errlen, "work request %#" PRIx64 ": %u SGEs, %u inline bytes "
			   "and a %" PRIu64 "-byte TSO header do not fit its %zu-byte record",
			   (uint64_t)w->wr_id, w->num_sge, w->inline_len,
			   tso ? (uint64_t)w->compare_add : 0, len);
	if (w->wq < IBCKPT_SNAP_WQ_SEND || w->wq > IBCKPT_SNAP_WQ_SRQ)
		return bad(err, errlen, "work request %#" PRIx64 ": unknown queue kind %u",
			   (uint64_t)w->wr_id, w->wq);
	return 0;
}

int snap_validate(const void *buf, size_t len, char *err, size_t errlen)
{
	const struct ibckpt_snap_hdr *h = buf;
	const unsigned char *p = buf;
	size_t off;
	uint32_t i;

	if (len < sizeof(*h))
		return bad(err, errlen, "snapshot truncated: %zu bytes, header needs %zu",
			   len, sizeof(*h));
	if (h->magic != IBCKPT_SNAP_MAGIC)
		return bad(err, errlen, "not an ibckpt snapshot (magic %#x)", h->magic);
	if (h->version != IBCKPT_SNAP_VERSION)
		return bad(err, errlen, "snapshot version %u, this ibckpt reads version %u",
			   h->version, IBCKPT_SNAP_VERSION);
	if (h->hdr_len < sizeof(*h) || h->hdr_len % 8 || h->hdr_len > len)
		return bad(err, errlen, "bad header length %u", h->hdr_len);
	if (h->total_len != len || len > IBCKPT_SNAP_MAX_LEN)
		return bad(err, errlen, "snapshot says %" PRIu64 " bytes, %zu present",
			   (uint64_t)h->total_len, len);
	off = h->hdr_len;
	for (i = 0; i < h->n_records; i++) {
		const struct ibckpt_snap_rec *r = (const void *)(p + off);

		if (len - off < sizeof(*r))
			return bad(err, errlen, "record %u: truncated header", i);
		if (r->len > len - off - sizeof(*r))
			return bad(err, errlen, "record %u: length %u runs past the end", i, r->len);
		if (r->type && r->type < __IBCKPT_SNAP_TYPE_MAX) {
			if (r->len < min_len[r->type])
				return bad(err, errlen, "record %u (%s): %u bytes, needs %zu", i,
					   type_name[r->type], r->len, min_len[r->type]);
			if (r->type == IBCKPT_SNAP_WR &&
			    check_wr((const void *)(r + 1), r->len, err, errlen))
				return -1;
		} else {
			return bad(err, errlen, "record %u: unknown type %u", i, r->type);
		}
		off += sizeof(*r) + ALIGN8((size_t)r->len);
		if (off > len)
			return bad(err, errlen, "record %u: padding runs past the end", i);
	}
	if (off != len)
		return bad(err, errlen, "%zu bytes after the last record", len - off);
	return 0;
}

void snap_foreach(const void *buf, snap_rec_fn fn, void *arg)
{
	const struct ibckpt_snap_hdr *h = buf;
	const unsigned char *p = buf;
	size_t off = h->hdr_len;
	uint32_t i;

	for (i = 0; i < h->n_records; i++) {
		const struct ibckpt_snap_rec *r = (const void *)(p + off);

		fn(r, r + 1, arg);
		off += sizeof(*r) + ALIGN8((size_t)r->len);
	}
}

static void count_one(const struct ibckpt_snap_rec *r, const void *payload, void *arg)
{
	struct snap_counts *c = arg;

	(void)payload;
	c->n[r->type]++;
}

void snap_count(const void *buf, struct snap_counts *c)
{
	memset(c, 0, sizeof(*c));
	snap_foreach(buf, count_one, c);
}

static void gid_str(const __u8 *g, char *s)
{
	int i;

	for (i = 0; i < 16; i += 2)
		s += sprintf(s, "%02x%02x%s", g[i], g[i + 1], i < 14 ? ":" : "");
}

/* ---- text ---- */

static void text_rec(const struct ibckpt_snap_rec *r, const void *pl, void *arg)
{
	FILE *f = arg;
	char g[48];

	switch (r->type) {
	case IBCKPT_SNAP_DEVICE: {
		const struct ibckpt_snap_device *d = pl;

		gid_str(d->gid, g);
		fprintf(f, "  device %u: %.64s lid %u gid %s\n", d->handle, d->name, d->port_lid, g);
		break;
	}
	case IBCKPT_SNAP_PD: {
		const struct ibckpt_snap_pd *d = pl;

		fprintf(f, "  pd %u: device %u\n", d->handle, d->device);
		break;
	}
	case IBCKPT_SNAP_MR: {
		const struct ibckpt_snap_mr *m = pl;

		fprintf(f, "  mr %u: pd %u addr %#" PRIx64 " len %" PRIu64 " iova %#" PRIx64
			" access %#x lkey %#x->%#x rkey %#x->%#x\n", m->handle, m->pd,
			(uint64_t)m->addr, (uint64_t)m->length, (uint64_t)m->iova, m->access,
			m->vlkey, m->lkey, m->vrkey, m->rkey);
		break;
	}
	case IBCKPT_SNAP_CQ: {
		const struct ibckpt_snap_cq *c = pl;

		fprintf(f, "  cq %u: device %u cqe %u drained %u%s%s", c->handle, c->device,
			c->cqe, c->n_drained, c->comp_channel ? " channel" : "",
			c->armed ? " armed" : "");
		if (c->ex)
			fprintf(f, " ex wc_flags %#" PRIx64, (uint64_t)c->wc_flags);
		fputc('\n', f);
		break;
	}
	case IBCKPT_SNAP_QP: {
		const struct ibckpt_snap_qp *q = pl;

		gid_str(q->dgid, g);
		fprintf(f, "  qp %u: type %u qpn %#x->%#x state %u dest %#x sq_psn %#x rq_psn %#x"
			" mtu %u timeout %u retry %u rnr %u rd_atomic %u/%u access %#x dgid %s"
			" send_wr %u recv_wr %u modify %u\n", q->handle, q->qp_type, q->vqpn,
			q->qpn, q->state, q->dest_qpn, q->sq_psn, q->rq_psn, q->path_mtu,
			q->timeout, q->retry_cnt, q->rnr_retry, q->max_rd_atomic,
			q->max_dest_rd_atomic, q->access, g, q->n_send_wr, q->n_recv_wr,
			q->n_modify);
		if (q->xrcd)
			fprintf(f, "    (XRC target in xrcd %u%s)\n", q->xrcd,
				q->opened ? ", opened" : "");
		break;
	}
	case IBCKPT_SNAP_SRQ: {
		const struct ibckpt_snap_srq *s = pl;

		fprintf(f, "  srq %u: pd %u max_wr %u limit %u recv_wr %u", s->handle, s->pd,
			s->max_wr, s->srq_limit, s->n_recv_wr);
		if (s->srq_type == IBCKPT_SNAP_SRQT_XRC)
			fprintf(f, " xrc srqn %#x xrcd %u cq %u", s->srq_num, s->xrcd, s->cq);
		fputc('\n', f);
		break;
	}
	case IBCKPT_SNAP_XRCD: {
		const struct ibckpt_snap_xrcd *x = pl;

		fprintf(f, "  xrcd %u: device %u oflags %#x\n", x->handle, x->device, x->oflags);
		break;
	}
	case IBCKPT_SNAP_CONTROL: {
		const struct ibckpt_snap_control *c = pl;

		fprintf(f, "  restart channel: fds %u and %u%s%s\n", c->cmd_fd, c->reply_fd,
			c->released ? ", released" : "",
			c->caps & IBCKPT_SNAP_CAP_ID_MW ? ", window identities" : "");
		break;
	}
	case IBCKPT_SNAP_WR: {
		const struct ibckpt_snap_wr *w = pl;

		fprintf(f, "    wr %#" PRIx64 ": queue %u of %u opcode %u flags %#x sge %u inline %u",
			(uint64_t)w->wr_id, w->wq, w->owner, w->opcode, w->send_flags, w->num_sge,
			w->inline_len);
		if (w->wq == IBCKPT_SNAP_WQ_SEND && w->opcode == IBCKPT_SNAP_WR_BIND_MW)
			fprintf(f, " bind mw %u rkey %#x to mr %u", w->ud_ah, w->rkey,
				(uint32_t)w->swap);
		if (w->xrc_remote_srqn)
			fprintf(f, " to srqn %#x", w->xrc_remote_srqn);
		if (w->wq == IBCKPT_SNAP_WQ_SEND && w->opcode == IBCKPT_SNAP_WR_TSO)
			fprintf(f, " tso header %u mss %u", (uint32_t)w->compare_add,
				(uint32_t)w->swap);
		fputc('\n', f);
		break;
	}
	case IBCKPT_SNAP_WC: {
		const struct ibckpt_snap_wc *c = pl;

		fprintf(f, "    wc %#" PRIx64 ": cq %u status %u opcode %u qp %#x len %u\n",
			(uint64_t)c->wr_id, c->cq, c->status, c->opcode, c->qp_num, c->byte_len);
		break;
	}
	case IBCKPT_SNAP_AH: {
		const struct ibckpt_snap_ah *a = pl;

		gid_str(a->dgid, g);
		fprintf(f, "  ah %u: pd %u dlid %u dgid %s\n", a->handle, a->pd, a->dlid, g);
		break;
	}
	case IBCKPT_SNAP_MW: {
		const struct ibckpt_snap_mw *m = pl;

		fprintf(f, "  mw %u: pd %u type %u rkey %#x->%#x", m->handle, m->pd, m->type,
			m->vrkey, m->rkey);
		if (m->mr)
			fprintf(f, " bound to mr %u addr %#" PRIx64 " len %" PRIu64 " access %#x",
				m->mr, (uint64_t)m->addr, (uint64_t)m->length, m->access);
		if (m->qp)
			fprintf(f, " through qp %u", m->qp);
		fputc('\n', f);
		break;
	}
	}
}

void snap_print_text(FILE *f, const void *buf)
{
	const struct ibckpt_snap_hdr *h = buf;
	struct snap_counts c;

	snap_count(buf, &c);
	fprintf(f, "process %u: session %" PRIu64 ", %u QPs, %u MRs, %u CQs, %u SRQs, "
		"%u outstanding WRs, %u drained completions, pinned %" PRIu64 " bytes%s\n",
		h->tgid, (uint64_t)h->session, c.n[IBCKPT_SNAP_QP], c.n[IBCKPT_SNAP_MR],
		c.n[IBCKPT_SNAP_CQ], c.n[IBCKPT_SNAP_SRQ], c.n[IBCKPT_SNAP_WR],
		c.n[IBCKPT_SNAP_WC], (uint64_t)h->pinned_bytes,
		h->flags & IBCKPT_SNAP_F_INCOMPLETE_DRAIN ? " (drain incomplete)" : "");
	snap_foreach(buf, text_rec, f);
}

/* ---- JSON ---- */

struct json_state {
	FILE *f;
	int type;	/* the array being written */
	int n;		/* items written in it */
};

static void json_rec(const struct ibckpt_snap_rec *r, const void *pl, void *arg)
{
	struct json_state *s = arg;
	FILE *f = s->f;
	char g[48];

	if (r->type != s->type)
		return;
	fputs(s->n++ ? "," : "", f);
	switch (r->type) {
	case IBCKPT_SNAP_DEVICE: {
		const struct ibckpt_snap_device *d = pl;

		gid_str(d->gid, g);
		fprintf(f, "{\"handle\":%u,\"name\":", d->handle);
		json_strn(f, d->name, sizeof(d->name));
		fprintf(f, ",\"lid\":%u,\"gid\":\"%s\"}", d->port_lid, g);
		break;
	}
	case IBCKPT_SNAP_PD: {
		const struct ibckpt_snap_pd *d = pl;

		fprintf(f, "{\"handle\":%u,\"device\":%u}", d->handle, d->device);
		break;
	}
	case IBCKPT_SNAP_MR: {
		const struct ibckpt_snap_mr *m = pl;

		fprintf(f, "{\"handle\":%u,\"pd\":%u,\"addr\":%" PRIu64 ",\"length\":%" PRIu64
			",\"iova\":%" PRIu64 ",\"access\":%u,\"vlkey\":%u,\"vrkey\":%u,\"lkey\":%u,"
			"\"rkey\":%u}", m->handle, m->pd, (uint64_t)m->addr, (uint64_t)m->length,
			(uint64_t)m->iova, m->access, m->vlkey, m->vrkey, m->lkey, m->rkey);
		break;
	}
	case IBCKPT_SNAP_CQ: {
		const struct ibckpt_snap_cq *c = pl;

		fprintf(f, "{\"handle\":%u,\"device\":%u,\"cqe\":%u,\"drained\":%u,"
			"\"channel\":%s,\"armed\":%s,\"ex\":%s,\"wc_flags\":%" PRIu64 "}",
			c->handle, c->device, c->cqe, c->n_drained,
			c->comp_channel ? "true" : "false", c->armed ? "true" : "false",
			c->ex ? "true" : "false", (uint64_t)c->wc_flags);
		break;
	}
	case IBCKPT_SNAP_QP: {
		const struct ibckpt_snap_qp *q = pl;

		gid_str(q->dgid, g);
		fprintf(f, "{\"handle\":%u,\"pd\":%u,\"send_cq\":%u,\"recv_cq\":%u,\"srq\":%u,"
			"\"type\":%u,\"vqpn\":%u,\"qpn\":%u,\"state\":%u,\"dest_qpn\":%u,"
			"\"sq_psn\":%u,\"rq_psn\":%u,\"qkey\":%u,\"access\":%u,\"path_mtu\":%u,"
			"\"timeout\":%u,\"retry_cnt\":%u,\"rnr_retry\":%u,\"min_rnr_timer\":%u,"
			"\"max_rd_atomic\":%u,\"max_dest_rd_atomic\":%u,\"port\":%u,\"sl\":%u,"
			"\"is_global\":%u,\"sgid_index\":%u,\"hop_limit\":%u,\"dlid\":%u,"
			"\"dgid\":\"%s\",\"max_send_wr\":%u,\"max_recv_wr\":%u,\"max_send_sge\":%u,"
			"\"max_recv_sge\":%u,\"max_inline_data\":%u,\"sq_sig_all\":%u,"
			"\"send_wr\":%u,\"recv_wr\":%u,\"modify\":%u,\"send_ops_flags\":%" PRIu64
			",\"xrcd\":%u,\"opened\":%u}",
			q->handle, q->pd, q->send_cq, q->recv_cq, q->srq, q->qp_type, q->vqpn,
			q->qpn, q->state, q->dest_qpn, q->sq_psn, q->rq_psn, q->qkey, q->access,
			q->path_mtu, q->timeout, q->retry_cnt, q->rnr_retry, q->min_rnr_timer,
			q->max_rd_atomic, q->max_dest_rd_atomic, q->port_num, q->sl, q->is_global,
			q->sgid_index, q->hop_limit, q->dlid, g, q->max_send_wr, q->max_recv_wr,
			q->max_send_sge, q->max_recv_sge, q->max_inline_data, q->sq_sig_all,
			q->n_send_wr, q->n_recv_wr, q->n_modify, (uint64_t)q->send_ops_flags,
			q->xrcd, q->opened);
		break;
	}
	case IBCKPT_SNAP_SRQ: {
		const struct ibckpt_snap_srq *q = pl;

		fprintf(f, "{\"handle\":%u,\"pd\":%u,\"max_wr\":%u,\"max_sge\":%u,\"limit\":%u,"
			"\"recv_wr\":%u,\"type\":%u,\"xrcd\":%u,\"cq\":%u,\"srq_num\":%u}",
			q->handle, q->pd, q->max_wr, q->max_sge, q->srq_limit, q->n_recv_wr,
			q->srq_type, q->xrcd, q->cq, q->srq_num);
		break;
	}
	case IBCKPT_SNAP_XRCD: {
		const struct ibckpt_snap_xrcd *x = pl;

		fprintf(f, "{\"handle\":%u,\"device\":%u,\"oflags\":%u}", x->handle, x->device,
			x->oflags);
		break;
	}
	case IBCKPT_SNAP_CONTROL: {
		const struct ibckpt_snap_control *c = pl;

		fprintf(f, "{\"cmd_fd\":%u,\"reply_fd\":%u,\"released\":%s,\"caps\":%u}",
			c->cmd_fd, c->reply_fd, c->released ? "true" : "false", c->caps);
		break;
	}
	case IBCKPT_SNAP_WR: {
		const struct ibckpt_snap_wr *w = pl;
		const struct ibckpt_snap_sge *sg = (const void *)(w + 1);
		uint32_t i;

		fprintf(f, "{\"wr_id\":%" PRIu64 ",\"owner\":%u,\"queue\":%u,\"opcode\":%u,"
			"\"send_flags\":%u,\"remote_addr\":%" PRIu64 ",\"rkey\":%u,\"imm\":%u,"
			"\"inline_len\":%u,\"xrc_remote_srqn\":%u,\"sge\":[", (uint64_t)w->wr_id,
			w->owner, w->wq, w->opcode, w->send_flags, (uint64_t)w->remote_addr, w->rkey,
			w->imm_data, w->inline_len, w->xrc_remote_srqn);
		for (i = 0; i < w->num_sge; i++)
			fprintf(f, "%s{\"addr\":%" PRIu64 ",\"length\":%u,\"lkey\":%u}",
				i ? "," : "", (uint64_t)sg[i].addr, sg[i].length, sg[i].lkey);
		fputc(']', f);
		if (w->wq == IBCKPT_SNAP_WQ_SEND && w->opcode == IBCKPT_SNAP_WR_TSO)
			fprintf(f, ",\"tso\":{\"header\":%u,\"mss\":%u}", (uint32_t)w->compare_add,
				(uint32_t)w->swap);
		if (w->wq == IBCKPT_SNAP_WQ_SEND && w->opcode == IBCKPT_SNAP_WR_BIND_MW)
			fprintf(f, ",\"bind\":{\"mw\":%u,\"mr\":%u,\"addr\":%" PRIu64
				",\"length\":%" PRIu64 ",\"access\":%u}", w->ud_ah,
				(uint32_t)w->swap, (uint64_t)w->remote_addr,
				(uint64_t)w->compare_add, w->imm_data);
		fputc('}', f);
		break;
	}
	case IBCKPT_SNAP_WC: {
		const struct ibckpt_snap_wc *c = pl;

		fprintf(f, "{\"wr_id\":%" PRIu64 ",\"cq\":%u,\"status\":%u,\"opcode\":%u,"
			"\"byte_len\":%u,\"qp_num\":%u,\"imm\":%u,\"wc_flags\":%u}",
			(uint64_t)c->wr_id, c->cq, c->status, c->opcode, c->byte_len, c->qp_num,
			c->imm_data, c->wc_flags);
		break;
	}
	case IBCKPT_SNAP_AH: {
		const struct ibckpt_snap_ah *a = pl;

		gid_str(a->dgid, g);
		fprintf(f, "{\"handle\":%u,\"pd\":%u,\"dlid\":%u,\"dgid\":\"%s\"}", a->handle,
			a->pd, a->dlid, g);
		break;
	}
	case IBCKPT_SNAP_MW: {
		const struct ibckpt_snap_mw *m = pl;

		fprintf(f, "{\"handle\":%u,\"pd\":%u,\"type\":%u,\"vrkey\":%u,\"rkey\":%u,"
			"\"mr\":%u,\"addr\":%" PRIu64 ",\"length\":%" PRIu64 ",\"access\":%u,"
			"\"qp\":%u}",
			m->handle, m->pd, m->type, m->vrkey, m->rkey, m->mr, (uint64_t)m->addr,
			(uint64_t)m->length, m->access, m->qp);
		break;
	}
	}
}

void snap_print_json_fields(FILE *f, const void *buf)
{
	const struct ibckpt_snap_hdr *h = buf;
	struct json_state s = { .f = f };
	int t;

	fprintf(f, "\"version\":%u,\"tgid\":%u,\"session\":%" PRIu64 ",\"pinned_bytes\":%"
		PRIu64 ",\"outstanding\":%u,\"drain_complete\":%s", h->version, h->tgid,
		(uint64_t)h->session, (uint64_t)h->pinned_bytes, h->outstanding,
		h->flags & IBCKPT_SNAP_F_INCOMPLETE_DRAIN ? "false" : "true");
	for (t = IBCKPT_SNAP_DEVICE; t < __IBCKPT_SNAP_TYPE_MAX; t++) {
		fprintf(f, ",\"%ss\":[", type_name[t]);
		s.type = t;
		s.n = 0;
		snap_foreach(buf, json_rec, &s);
		fputc(']', f);
	}
}

void snap_print_json(FILE *f, const void *buf)
{
	fputc('{', f);
	snap_print_json_fields(f, buf);
	fputs("}\n", f);
}
