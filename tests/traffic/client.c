// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The client drives traffic on every RC QP in a fixed schedule of SEND,
 * WRITE WITH IMM, RDMA READ and fetch-and-add, plus UD datagrams, and
 * busy-polls its CQs. Data messages are flow-controlled by the server's
 * ACKs (a window per QP), so write-ring slots and receive buffers are never
 * overrun; READ results and fetched atomic values are checked on completion.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "traffic.h"

#define WRID(q, pos)	(((uint64_t)(q) << 48) | ((pos) & ((1ull << 48) - 1)))
#define WRID_QP(id)	((int)((id) >> 48))
#define WRID_POS(id)	((id) & ((1ull << 48) - 1))
#define UD_QP_TAG	0xffff

static const enum top schedule[] = {
	OP_SEND, OP_WRITE_IMM, OP_READ, OP_SEND, OP_WRITE_IMM, OP_ATOMIC,
};

static int msg_len(const struct tctx *t, uint64_t seq)
{
	int room = t->o.msg_size - (int)sizeof(struct tmsg);

	/* varying sizes, inline-sized to full buffer */
	return 8 + (int)((seq * 37) % (uint64_t)(room - 8));
}

/* Post one operation of the schedule on QP @q; 1 if posted, 0 if blocked. */
static int post_op(struct tctx *t, int q)
{
	struct tqp *p = &t->qps[q];
	enum top op = schedule[p->op_next % (sizeof(schedule) / sizeof(schedule[0]))];
	uint64_t pos = p->sq_tail;
	uint8_t *slot = tl_sq_slot(t, q, pos);
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .lkey = t->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WRID(q, pos), .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr *bad;
	struct tsq_ent *e = &p->sq[pos % (uint64_t)t->sq_depth];
	bool msg = op == OP_SEND || op == OP_WRITE_IMM;
	int len;

	if (pos - p->sq_head >= (uint64_t)t->sq_depth)
		return 0;
	if (msg && p->msg_next - p->peer_ack >= (uint64_t)t->o.window)
		return 0;

	e->op = (uint8_t)op;
	e->qp = (uint16_t)q;
	switch (op) {
	case OP_SEND:
	case OP_WRITE_IMM:
		e->seq = p->msg_next;
		len = msg_len(t, e->seq);
		tmsg_fill((struct tmsg *)slot, TMSG_DATA, q, e->seq, len);
		sge.length = (uint32_t)(sizeof(struct tmsg) + (size_t)len);
		if (op == OP_SEND) {
			wr.opcode = IBV_WR_SEND;
		} else {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl((uint32_t)e->seq);
			wr.wr.rdma.remote_addr = t->peer.base + tl_write_slot_off(t, q, e->seq);
			wr.wr.rdma.rkey = t->peer.rkey;
		}
		break;
	case OP_READ:
		e->seq = p->op_next;
		memset(slot, 0, (size_t)t->o.msg_size);
		sge.length = (uint32_t)t->o.msg_size;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = t->peer.base + tl_read_off(t, q);
		wr.wr.rdma.rkey = t->peer.rkey;
		break;
	case OP_ATOMIC:
		e->seq = p->atomic_next;
		memset(slot, 0xff, 8);
		sge.length = 8;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = t->peer.base + tl_atomic_off(t, q);
		wr.wr.atomic.rkey = t->peer.rkey;
		wr.wr.atomic.compare_add = 1;
		break;
	default:
		return 0;
	}
	/* reads and atomics are checked at completion; sends every 4th or when full */
	e->signaled = op == OP_READ || op == OP_ATOMIC || pos % 4 == 3 ||
		      pos + 1 - p->sq_head >= (uint64_t)t->sq_depth ||
		      (msg && p->msg_next + 1 - p->peer_ack >= (uint64_t)t->o.window);
	if (e->signaled)
		wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(p->qp, &wr, &bad)) {
		terr(t, "ibv_post_send(QP %d, op %d): %s", q, op, strerror(errno));
		return -1;
	}
	p->sq_tail++;
	p->op_next++;
	p->nsig += e->signaled;
	if (msg)
		p->msg_next++;
	if (op == OP_ATOMIC)
		p->atomic_next++;
	return 1;
}

static int post_ud(struct tctx *t)
{
	uint64_t pos = t->udsq_tail;
	uint8_t *slot = tl_ud_send_slot(t, pos);
	int len = 8 + (int)(t->ud_next % 200);
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .lkey = t->mr->lkey,
			       .length = (uint32_t)(sizeof(struct tmsg) + (size_t)len) };
	struct ibv_send_wr wr = {
		.wr_id = WRID(UD_QP_TAG, pos), .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
	};
	struct ibv_send_wr *bad;
	struct tsq_ent *e = &t->udsq[pos % (uint64_t)t->ud_depth];

	if (pos - t->udsq_head >= (uint64_t)t->ud_depth ||
	    t->ud_next - t->ud_ack >= (uint64_t)t->o.window)
		return 0;
	tmsg_fill((struct tmsg *)slot, TMSG_UD, 0, t->ud_next, len);
	wr.wr.ud.ah = t->ah;
	wr.wr.ud.remote_qpn = t->peer.ud_qpn;
	wr.wr.ud.remote_qkey = 0x11111111;
	e->op = OP_UD;
	e->seq = t->ud_next;
	e->signaled = pos % 4 == 3 || pos + 1 - t->udsq_head >= (uint64_t)t->ud_depth ||
		      t->ud_next + 1 - t->ud_ack >= (uint64_t)t->o.window;
	if (e->signaled)
		wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(t->udqp, &wr, &bad)) {
		terr(t, "ibv_post_send(UD): %s", strerror(errno));
		return -1;
	}
	t->udsq_tail++;
	t->ud_nsig += e->signaled;
	t->ud_next++;
	return 1;
}

static int check_result(struct tctx *t, int q, uint64_t pos, const struct tsq_ent *e)
{
	uint8_t *slot = tl_sq_slot(t, q, pos);
	uint8_t expect[65536];
	uint64_t old;

	switch (e->op) {
	case OP_SEND:
		t->st.sends++;
		break;
	case OP_WRITE_IMM:
		t->st.writes++;
		break;
	case OP_READ:
		tread_pattern(expect, q, (size_t)t->o.msg_size);
		if (memcmp(expect, slot, (size_t)t->o.msg_size)) {
			terr(t, "QP %d: RDMA READ #%llu returned corrupt data", q,
			     (unsigned long long)e->seq);
			return -1;
		}
		t->st.reads++;
		break;
	case OP_ATOMIC: {
		uint64_t later;

		memcpy(&old, slot, 8);
		later = old;
		if (old == UINT64_MAX) {	/* still the poison: wait for a late result */
			usleep(200000);
			memcpy(&later, slot, 8);
		}
		switch (tatomic_verdict(t, old, later, e->seq)) {
		case TATOMIC_OK:
			break;
		case TATOMIC_UNANSWERED:
			tlog(t, "note: QP %d: fetch-and-add #%llu completed without its result "
			     "(soft-RoCE's defect, tolerated: see tests/traffic/atomic.c)", q,
			     (unsigned long long)e->seq);
			break;
		case TATOMIC_LATE:
			terr(t, "QP %d: fetch-and-add #%llu completed before its result was written "
			     "(it came later)", q, (unsigned long long)e->seq);
			return -1;
		case TATOMIC_WRONG:
			terr(t, "QP %d: fetch-and-add #%llu fetched %llu (lost or duplicated add)",
			     q, (unsigned long long)e->seq, (unsigned long long)old);
			return -1;
		case TATOMIC_TOO_MANY:
			terr(t, "QP %d: fetch-and-add #%llu completed without its result, the %llu. "
			     "this run (at most %llu tolerated: -L)", q, (unsigned long long)e->seq,
			     (unsigned long long)t->st.unanswered,
			     (unsigned long long)t->o.max_unanswered);
			return -1;
		}
		t->st.atomics++;
		break;
	}
	default:
		break;
	}
	return 0;
}

/* A signaled completion retires every WR posted before it on that queue. */
static int retire(struct tctx *t, const struct ibv_wc *wc)
{
	int q = WRID_QP(wc->wr_id);
	uint64_t pos = WRID_POS(wc->wr_id);

	if (wc->status != IBV_WC_SUCCESS) {
		terr(t, "send completion error on %s %d: %s (vendor err %u)",
		     q == UD_QP_TAG ? "UD QP" : "QP", q == UD_QP_TAG ? 0 : q,
		     ibv_wc_status_str(wc->status), wc->vendor_err);
		return -1;
	}
	if (q == UD_QP_TAG) {
		if (pos < t->udsq_head || pos >= t->udsq_tail) {
			terr(t, "UD completion for unknown WR %llu", (unsigned long long)pos);
			return -1;
		}
		for (; t->udsq_head <= pos; t->udsq_head++)
			t->st.ud++;
		t->ud_nsig--;
		return 0;
	}
	if (q >= t->o.nqp || pos < t->qps[q].sq_head || pos >= t->qps[q].sq_tail) {
		terr(t, "send completion for unknown WR (QP %d, #%llu): duplicate?", q,
		     (unsigned long long)pos);
		return -1;
	}
	for (; t->qps[q].sq_head <= pos; t->qps[q].sq_head++) {
		uint64_t h = t->qps[q].sq_head;

		if (check_result(t, q, h, &t->qps[q].sq[h % (uint64_t)t->sq_depth]))
			return -1;
	}
	t->qps[q].nsig--;
	return 0;
}

static int on_ack(struct tctx *t, const struct ibv_wc *wc)
{
	struct tmsg *m = (struct tmsg *)tl_srq_slot(t, wc->wr_id);
	int q = tqp_index(t, wc->qp_num);
	struct tqp *p;
	int rc;

	if (wc->status != IBV_WC_SUCCESS) {
		terr(t, "receive completion error: %s", ibv_wc_status_str(wc->status));
		return -1;
	}
	if (q < 0) {
		terr(t, "receive completion on unknown QPN %u", wc->qp_num);
		return -1;
	}
	p = &t->qps[q];
	rc = tmsg_check(m, TMSG_ACK, q, p->msg_expect, wc->byte_len);
	if (rc) {
		terr(t, "QP %d: bad ACK #%llu (check %d, got seq %llu)", q,
		     (unsigned long long)p->msg_expect, rc, (unsigned long long)m->seq);
		return -1;
	}
	if (tack_take(t, p, m)) {
		terr(t, "QP %d: ACK out of range (ack %llu, have %llu..%llu; UD ack %llu, have "
		     "%llu..%llu)", q, (unsigned long long)m->ack,
		     (unsigned long long)p->peer_ack, (unsigned long long)p->msg_next,
		     (unsigned long long)m->ud_ack, (unsigned long long)p->peer_ud_ack,
		     (unsigned long long)t->ud_next);
		return -1;
	}
	p->msg_expect++;
	t->st.acks++;
	if (tpost_srq_recv(t, wc->wr_id)) {
		terr(t, "ibv_post_srq_recv: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int poll_cqs(struct tctx *t)
{
	struct ibv_wc wc[32];
	int i, n;

	n = ibv_poll_cq(t->scq, 32, wc);
	if (n < 0)
		return terr(t, "ibv_poll_cq(send): %d", n), -1;
	for (i = 0; i < n; i++)
		if (retire(t, &wc[i]))
			return -1;
	n = ibv_poll_cq(t->rcq, 32, wc);
	if (n < 0)
		return terr(t, "ibv_poll_cq(recv): %d", n), -1;
	for (i = 0; i < n; i++)
		if (on_ack(t, &wc[i]))
			return -1;
	return 0;
}

static uint64_t total_ops(const struct tctx *t)
{
	return t->st.sends + t->st.writes + t->st.reads + t->st.atomics + t->st.ud;
}

static bool drained(const struct tctx *t)
{
	int q;

	/* -U: the server may never see the last datagrams; it counts them */
	if ((t->ud_ack != t->ud_next && !t->o.max_ud_lost) || t->ud_nsig)
		return false;
	for (q = 0; q < t->o.nqp; q++)
		if (t->qps[q].peer_ack != t->qps[q].msg_next || t->qps[q].nsig)
			return false;
	return true;
}

static int finish(struct tctx *t, int sock)
{
	struct tfinal f = { .magic = TFINAL_MAGIC, .nqp = (uint32_t)t->o.nqp, .ud = t->ud_next };
	struct tfinal_qp *per;
	int q, rc = 0;

	per = calloc((unsigned int)t->o.nqp, sizeof(*per));
	if (!per)
		return -1;
	for (q = 0; q < t->o.nqp; q++) {
		per[q].msgs = t->qps[q].msg_next;
		per[q].atomics = t->qps[q].atomic_next;
	}
	if (tsend_all(sock, &f, sizeof(f)) ||
	    tsend_all(sock, per, sizeof(*per) * (size_t)t->o.nqp) ||
	    trecv_all(sock, &f, sizeof(f)) || f.magic != TFINAL_MAGIC) {
		terr(t, "final exchange with the server failed");
		rc = -1;
	} else if (f.errors) {
		terr(t, "the server found %llu errors", (unsigned long long)f.errors);
		rc = -1;
	} else {
		tlog(t, "server verified %llu messages and %llu datagrams",
		     (unsigned long long)f.rx_msgs, (unsigned long long)f.rx_ud);
	}
	free(per);
	return rc;
}

int tclient_run(struct tctx *t, int sock)
{
	double t0 = tnow(), next = t0 + t->o.progress, deadline;
	int q = 0, posted, i;

	while (!tstop) {
		if (t->o.duration > 0 && tnow() - t0 >= t->o.duration)
			break;
		if (t->o.count && total_ops(t) >= t->o.count)
			break;
		/* one round: a few operations per QP, then reap */
		for (posted = 0, i = 0; i < t->o.nqp; i++, q = (q + 1) % t->o.nqp) {
			int r = post_op(t, q);

			if (r < 0)
				return -1;
			posted += r;
		}
		if (post_ud(t) < 0 || poll_cqs(t))
			return -1;
		if (t->o.progress > 0 && tnow() >= next) {
			tprint_stats(t, "progress");
			next += t->o.progress;
		}
	}
	/* stop posting; wait until the server has acknowledged everything */
	deadline = tnow() + 60;
	while (!drained(t)) {
		if (poll_cqs(t))
			return -1;
		if (tnow() > deadline) {
			terr(t, "traffic did not drain within 60 s");
			return -1;
		}
	}
	(void)posted;
	return finish(t, sock);
}
