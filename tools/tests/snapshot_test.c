// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot reader must accept what the provider writes and refuse, with
 * a message, anything malformed: the bytes cross two trust boundaries.
 */
#define UNIT_SUITE "snapshot"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "../../tests/unit/unit.h"
#include "../../provider/snapshot_writer.h"
#include "../snapshot.h"

static void build(struct snap_writer *w)
{
	struct ibckpt_snap_qp *q;
	struct ibckpt_snap_mr *m;
	struct ibckpt_snap_wr *wr;
	struct ibckpt_snap_sge *sg;

	snapw_init(w, 1234, 7);
	((struct ibckpt_snap_pd *)snapw_add(w, IBCKPT_SNAP_PD, sizeof(struct ibckpt_snap_pd)))
		->handle = 1;
	m = snapw_add(w, IBCKPT_SNAP_MR, sizeof(*m));
	m->handle = 2;
	m->length = 4096;
	m->vlkey = m->lkey = 0x1234;
	q = snapw_add(w, IBCKPT_SNAP_QP, sizeof(*q));
	q->handle = 3;
	q->vqpn = q->qpn = 0x11;
	q->n_send_wr = 1;
	/* one WR with two SGEs and 5 inline bytes: 3 bytes of padding follow */
	wr = snapw_add(w, IBCKPT_SNAP_WR, sizeof(*wr) + 2 * sizeof(*sg) + 5);
	wr->wr_id = 42;
	wr->owner = 3;
	wr->wq = IBCKPT_SNAP_WQ_SEND;
	wr->num_sge = 2;
	wr->inline_len = 5;
	sg = (struct ibckpt_snap_sge *)(wr + 1);
	sg[1].length = 100;
	memcpy(sg + 2, "hello", 5);
	CHECK_EQ(snapw_finish(w), 0);
}

static int validate(struct snap_writer *w, char *err)
{
	return snap_validate(w->buf, w->len, err, 256);
}

static void accepts_what_the_writer_builds(void)
{
	struct snap_writer w;
	struct snap_counts c;
	char err[256] = "";

	build(&w);
	CHECK_EQ(validate(&w, err), 0);
	snap_count(w.buf, &c);
	CHECK_EQ(c.n[IBCKPT_SNAP_QP], 1);
	CHECK_EQ(c.n[IBCKPT_SNAP_MR], 1);
	CHECK_EQ(c.n[IBCKPT_SNAP_WR], 1);
	CHECK_EQ(w.len % 8, 0);
	snapw_free(&w);
}

/* A snapshot as `ibckpt dump` prints it (-j: JSON); free() the string. */
static char *printed(const void *buf, bool json)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	if (!f)
		return strdup("");
	if (json)
		snap_print_json(f, buf);
	else
		snap_print_text(f, buf);
	fclose(f);
	return out;
}

static void json_names_every_object(void)
{
	struct snap_writer w;
	char *out;

	build(&w);
	out = printed(w.buf, true);
	CHECK(strstr(out, "\"qps\":[{\"handle\":3,") != NULL);
	CHECK(strstr(out, "\"vqpn\":17,\"qpn\":17") != NULL);
	CHECK(strstr(out, "\"sge\":[{\"addr\":0,\"length\":0,\"lkey\":0},{\"addr\":0,\"length\":100") != NULL);
	CHECK(strstr(out, "\"tgid\":1234,\"session\":7") != NULL);
	free(out);
	snapw_free(&w);
}

static void refuses_truncation_anywhere(void)
{
	struct snap_writer w;
	char err[256];
	size_t cut;

	build(&w);
	for (cut = 0; cut < w.len; cut++)
		CHECK(snap_validate(w.buf, cut, err, sizeof(err)) == -1);
	snapw_free(&w);
}

static void refuses_bad_magic_and_version(void)
{
	struct snap_writer w;
	char err[256];

	build(&w);
	snapw_hdr(&w)->magic ^= 1;
	CHECK_EQ(validate(&w, err), -1);
	CHECK(strstr(err, "not an ibckpt snapshot") != NULL);
	snapw_hdr(&w)->magic ^= 1;
	snapw_hdr(&w)->version = 99;
	CHECK_EQ(validate(&w, err), -1);
	CHECK(strstr(err, "version 99") != NULL);
	snapw_free(&w);
}

static void refuses_record_overrun_and_short_payload(void)
{
	struct snap_writer w;
	struct ibckpt_snap_rec *r;
	char err[256];

	build(&w);
	r = (struct ibckpt_snap_rec *)(w.buf + sizeof(struct ibckpt_snap_hdr));
	r->len = 0xfffffff0u;			/* past the end */
	CHECK_EQ(validate(&w, err), -1);
	r->len = 4;				/* shorter than a PD */
	CHECK_EQ(validate(&w, err), -1);
	CHECK(strstr(err, "needs") != NULL);
	r->len = sizeof(struct ibckpt_snap_pd);
	r->type = 200;
	CHECK_EQ(validate(&w, err), -1);
	CHECK(strstr(err, "unknown type 200") != NULL);
	snapw_free(&w);
}

static void refuses_wr_with_sges_beyond_its_record(void)
{
	struct snap_writer w;
	struct snap_counts c;
	char err[256];
	unsigned char *p;
	size_t off = sizeof(struct ibckpt_snap_hdr);
	uint32_t i;

	build(&w);
	snap_count(w.buf, &c);
	p = w.buf;
	for (i = 0; i < 3; i++)		/* skip PD, MR, QP */
		off += sizeof(struct ibckpt_snap_rec) +
		       ((((struct ibckpt_snap_rec *)(p + off))->len + 7u) & ~7u);
	((struct ibckpt_snap_wr *)(p + off + sizeof(struct ibckpt_snap_rec)))->num_sge = 3;
	CHECK_EQ(validate(&w, err), -1);
	CHECK(strstr(err, "do not fit") != NULL);
	snapw_free(&w);
}

static void writer_refuses_oversize(void)
{
	struct snap_writer w;

	snapw_init(&w, 1, 1);
	CHECK(snapw_add(&w, IBCKPT_SNAP_WR, (size_t)IBCKPT_SNAP_MAX_LEN + 1) == NULL);
	CHECK(snapw_finish(&w) != 0);
	snapw_free(&w);
}

/* A window bound to an MR, and the bind request that did it, in both forms. */
static void memory_windows_and_binds_are_printed(void)
{
	struct snap_writer w;
	struct ibckpt_snap_mw *m;
	struct ibckpt_snap_wr *wr;
	char *out, err[256] = "";

	snapw_init(&w, 99, 3);
	m = snapw_add(&w, IBCKPT_SNAP_MW, sizeof(*m));
	m->handle = 5;
	m->pd = 1;
	m->type = 2;
	m->vrkey = m->rkey = 0x2a01;
	m->qp = 4;
	m->mr = 2;
	m->addr = 0x1000;
	m->length = 64;
	m->access = 2;
	wr = snapw_add(&w, IBCKPT_SNAP_WR, sizeof(*wr));
	wr->wr_id = 7;
	wr->owner = 3;
	wr->wq = IBCKPT_SNAP_WQ_SEND;
	wr->opcode = IBCKPT_SNAP_WR_BIND_MW;
	wr->ud_ah = 5;
	wr->rkey = 0x2a01;
	wr->swap = 2;
	wr->remote_addr = 0x1000;
	wr->compare_add = 64;
	wr->imm_data = 2;
	CHECK_EQ(snapw_finish(&w), 0);
	CHECK_EQ(validate(&w, err), 0);

	out = printed(w.buf, true);
	CHECK(strstr(out, "\"mws\":[{\"handle\":5,\"pd\":1,\"type\":2,\"vrkey\":10753,"
			  "\"rkey\":10753,\"mr\":2,\"addr\":4096,\"length\":64,\"access\":2,"
			  "\"qp\":4}]") != NULL);
	CHECK(strstr(out, "\"bind\":{\"mw\":5,\"mr\":2,\"addr\":4096,\"length\":64,"
			  "\"access\":2}") != NULL);
	free(out);

	out = printed(w.buf, false);
	CHECK(strstr(out, "mw 5: pd 1 type 2 rkey 0x2a01->0x2a01 bound to mr 2 addr 0x1000 len 64")
	      != NULL);
	CHECK(strstr(out, "bind mw 5 rkey 0x2a01 to mr 2") != NULL);
	CHECK(strstr(out, "access 0x2 through qp 4\n") != NULL);
	free(out);
	snapw_free(&w);
}

/* The restart channel, and what its provider takes (caps: 0 from an older one). */
static void restart_channel_is_printed(void)
{
	struct ibckpt_snap_control *c;
	struct snap_writer w;
	char *out, err[256] = "";

	snapw_init(&w, 5, 1);
	c = snapw_add(&w, IBCKPT_SNAP_CONTROL, sizeof(*c));
	c->cmd_fd = 7;
	c->reply_fd = 8;
	c->caps = IBCKPT_SNAP_CAP_ID_MW;
	c = snapw_add(&w, IBCKPT_SNAP_CONTROL, sizeof(*c));
	c->cmd_fd = 9;
	c->reply_fd = 10;
	c->released = 1;
	CHECK_EQ(snapw_finish(&w), 0);
	CHECK_EQ(validate(&w, err), 0);
	out = printed(w.buf, true);
	CHECK(strstr(out, "{\"cmd_fd\":7,\"reply_fd\":8,\"released\":false,\"caps\":1}") != NULL);
	CHECK(strstr(out, "{\"cmd_fd\":9,\"reply_fd\":10,\"released\":true,\"caps\":0}") != NULL);
	free(out);
	out = printed(w.buf, false);
	CHECK(strstr(out, "restart channel: fds 7 and 8, window identities\n") != NULL);
	CHECK(strstr(out, "restart channel: fds 9 and 10, released\n") != NULL);
	free(out);
	snapw_free(&w);
}

/* What a restart needs to recreate an extended CQ and an ibv_wr_* QP. */
static void extended_cq_and_qp_are_printed(void)
{
	struct snap_writer w;
	struct ibckpt_snap_cq *c;
	struct ibckpt_snap_qp *q;
	char *out, err[256] = "";

	snapw_init(&w, 5, 1);
	c = snapw_add(&w, IBCKPT_SNAP_CQ, sizeof(*c));
	c->handle = 4;
	c->ex = 1;
	c->wc_flags = 127;
	q = snapw_add(&w, IBCKPT_SNAP_QP, sizeof(*q));
	q->handle = 6;
	q->send_ops_flags = 0x7c;
	CHECK_EQ(snapw_finish(&w), 0);
	CHECK_EQ(validate(&w, err), 0);
	out = printed(w.buf, true);
	CHECK(strstr(out, "\"armed\":false,\"ex\":true,\"wc_flags\":127}") != NULL);
	CHECK(strstr(out, "\"modify\":0,\"send_ops_flags\":124,\"xrcd\":0,\"opened\":0}") != NULL);
	free(out);
	out = printed(w.buf, false);
	CHECK(strstr(out, "cq 4: device 0 cqe 0 drained 0 ex wc_flags 0x7f\n") != NULL);
	free(out);
	snapw_free(&w);
}

/* XRC: the domain, the SRQ's identity, a target QP's domain, a request's SRQN. */
static void xrc_records_are_printed(void)
{
	struct snap_writer w;
	struct ibckpt_snap_xrcd *x;
	struct ibckpt_snap_srq *s;
	struct ibckpt_snap_qp *q;
	struct ibckpt_snap_wr *r;
	char *out, err[256] = "";

	snapw_init(&w, 5, 1);
	x = snapw_add(&w, IBCKPT_SNAP_XRCD, sizeof(*x));
	x->handle = 2;
	x->device = 1;
	x->oflags = 0100;
	s = snapw_add(&w, IBCKPT_SNAP_SRQ, sizeof(*s));
	s->handle = 3;
	s->srq_type = IBCKPT_SNAP_SRQT_XRC;
	s->xrcd = 2;
	s->cq = 4;
	s->srq_num = 0x51;
	q = snapw_add(&w, IBCKPT_SNAP_QP, sizeof(*q));
	q->handle = 5;
	q->xrcd = 2;
	q->opened = 1;
	r = snapw_add(&w, IBCKPT_SNAP_WR, sizeof(*r));
	r->wr_id = 1;
	r->owner = 6;
	r->wq = IBCKPT_SNAP_WQ_SEND;
	r->xrc_remote_srqn = 0x51;
	CHECK_EQ(snapw_finish(&w), 0);
	CHECK_EQ(validate(&w, err), 0);
	out = printed(w.buf, true);
	CHECK(strstr(out, "\"xrcds\":[{\"handle\":2,\"device\":1,\"oflags\":64}]") != NULL);
	CHECK(strstr(out, "\"type\":1,\"xrcd\":2,\"cq\":4,\"srq_num\":81}") != NULL);
	CHECK(strstr(out, "\"xrcd\":2,\"opened\":1}") != NULL);
	CHECK(strstr(out, "\"xrc_remote_srqn\":81,") != NULL);
	free(out);
	out = printed(w.buf, false);
	CHECK(strstr(out, "  xrcd 2: device 1 oflags 0x40\n") != NULL);
	CHECK(strstr(out, " xrc srqn 0x51 xrcd 2 cq 4\n") != NULL);
	CHECK(strstr(out, "(XRC target in xrcd 2, opened)") != NULL);
	CHECK(strstr(out, " to srqn 0x51\n") != NULL);
	free(out);
	snapw_free(&w);
}

/* A TSO request's header follows its inline bytes; one that overruns is refused. */
static void tso_header_is_printed_and_bounded(void)
{
	struct snap_writer w;
	struct ibckpt_snap_wr *r;
	char *out, err[256] = "";

	snapw_init(&w, 5, 1);
	r = snapw_add(&w, IBCKPT_SNAP_WR, sizeof(*r) + 40);
	r->wr_id = 1;
	r->owner = 6;
	r->wq = IBCKPT_SNAP_WQ_SEND;
	r->opcode = IBCKPT_SNAP_WR_TSO;
	r->compare_add = 40;
	r->swap = 1448;
	CHECK_EQ(snapw_finish(&w), 0);
	CHECK_EQ(validate(&w, err), 0);
	out = printed(w.buf, true);
	CHECK(strstr(out, "\"tso\":{\"header\":40,\"mss\":1448}") != NULL);
	free(out);
	out = printed(w.buf, false);
	CHECK(strstr(out, " tso header 40 mss 1448\n") != NULL);
	free(out);
	r = (struct ibckpt_snap_wr *)((char *)w.buf + sizeof(struct ibckpt_snap_hdr) +
				      sizeof(struct ibckpt_snap_rec));
	r->compare_add = 48;			/* past the record's 40 bytes */
	CHECK_EQ(validate(&w, err), -1);
	CHECK(strstr(err, "48-byte TSO header do not fit") != NULL);
	snapw_free(&w);
}

int main(void)
{
	RUN(accepts_what_the_writer_builds);
	RUN(json_names_every_object);
	RUN(refuses_truncation_anywhere);
	RUN(refuses_bad_magic_and_version);
	RUN(refuses_record_overrun_and_short_payload);
	RUN(refuses_wr_with_sges_beyond_its_record);
	RUN(writer_refuses_oversize);
	RUN(memory_windows_and_binds_are_printed);
	RUN(restart_channel_is_printed);
	RUN(extended_cq_and_qp_are_printed);
	RUN(xrc_records_are_printed);
	RUN(tso_header_is_printed_and_bounded);
	return unit_done();
}
