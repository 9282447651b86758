// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The server sleeps on a completion channel, verifies every SEND (through the
 * SRQ), WRITE WITH IMM and UD datagram in per-QP order, and returns credits
 * with small inline ACK messages. When the client stops it compares its own
 * view (messages per QP, atomic counters in its memory, datagrams) with the
 * client's totals and sends back the verdict.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include "traffic.h"

#define ACK_LEN 16

static int reap_sends(struct tctx *t)
{
	struct ibv_wc wc[32];
	int i, n, q;

	n = ibv_poll_cq(t->scq, 32, wc);
	if (n < 0)
		return terr(t, "ibv_poll_cq(send): %d", n), -1;
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			terr(t, "ACK send completion error: %s",
			     ibv_wc_status_str(wc[i].status));
			return -1;
		}
		q = (int)(wc[i].wr_id >> 48);
		if (q >= t->o.nqp)
			return terr(t, "send completion for unknown QP %d", q), -1;
		t->qps[q].sq_head = (wc[i].wr_id & ((1ull << 48) - 1)) + 1;
		t->qps[q].nsig--;
	}
	return 0;
}

static int send_ack(struct tctx *t, int q)
{
	struct tqp *p = &t->qps[q];
	uint64_t pos = p->sq_tail;
	struct tmsg *m = (struct tmsg *)tl_sq_slot(t, q, pos);
	struct ibv_sge sge = { .addr = (uintptr_t)m, .lkey = t->mr->lkey,
			       .length = (uint32_t)sizeof(*m) + ACK_LEN };
	struct ibv_send_wr wr = { .wr_id = ((uint64_t)q << 48) | pos, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad;
	bool sig;

	while (pos - p->sq_head >= (uint64_t)t->sq_depth)
		if (reap_sends(t))
			return -1;
	tmsg_fill(m, TMSG_ACK, q, p->msg_next, ACK_LEN);
	m->ack = p->msg_expect;
	m->ud_ack = t->ud_expect;
	tmsg_seal(m);
	sig = pos % 8 == 7 || pos + 1 - p->sq_head >= (uint64_t)t->sq_depth;
	/* small enough to go inline: the buffer may be rewritten right after */
	wr.send_flags = (sge.length <= (uint32_t)t->max_inline ? IBV_SEND_INLINE : 0) |
			(sig ? IBV_SEND_SIGNALED : 0);
	if (ibv_post_send(p->qp, &wr, &bad))
		return terr(t, "ibv_post_send(ACK, QP %d): %s", q, strerror(errno)), -1;
	p->sq_tail++;
	p->nsig += sig;
	p->msg_next++;
	p->ack_sent = p->msg_expect;
	t->ud_ack_sent = t->ud_expect;
	t->st.acks++;
	return 0;
}

static int on_recv(struct tctx *t, const struct ibv_wc *wc)
{
	const struct tmsg *m;
	struct tqp *p;
	int q, rc;

	if (wc->status != IBV_WC_SUCCESS)
		return terr(t, "receive completion error: %s", ibv_wc_status_str(wc->status)), -1;
	if (wc->wr_id >> 63) {
		uint64_t i = wc->wr_id & ~(1ull << 63);

		m = (const struct tmsg *)(tl_ud_recv_slot(t, i) + 40);
		rc = tmsg_check(m, TMSG_UD, 0, t->ud_expect, wc->byte_len - 40);
		/* -U: a gap is datagrams the link dropped; what came must be right */
		if (rc == -6 && m->seq - t->ud_expect <= t->o.max_ud_lost - t->st.ud_lost) {
			t->st.ud_lost += m->seq - t->ud_expect;
			t->ud_expect = m->seq;
			rc = tmsg_check(m, TMSG_UD, 0, t->ud_expect, wc->byte_len - 40);
		}
		if (rc)
			return terr(t, "UD datagram #%llu: check %d (got seq %llu)",
				    (unsigned long long)t->ud_expect, rc,
				    (unsigned long long)m->seq), -1;
		t->ud_expect++;
		t->st.rx_ud++;
		if (tpost_ud_recv(t, i))
			return terr(t, "ibv_post_recv(UD): %s", strerror(errno)), -1;
		return 0;
	}
	q = tqp_index(t, wc->qp_num);
	if (q < 0)
		return terr(t, "receive completion on unknown QPN %u", wc->qp_num), -1;
	p = &t->qps[q];
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		if (ntohl(wc->imm_data) != (uint32_t)p->msg_expect)
			return terr(t, "QP %d: WRITE WITH IMM %u, expected %llu (%s)", q,
				    ntohl(wc->imm_data), (unsigned long long)p->msg_expect,
				    ntohl(wc->imm_data) < (uint32_t)p->msg_expect ?
				    "duplicate" : "lost"), -1;
		m = (const struct tmsg *)(t->buf + tl_write_slot_off(t, q, p->msg_expect));
		rc = tmsg_check(m, TMSG_DATA, q, p->msg_expect, (size_t)t->o.msg_size);
	} else if (wc->opcode == IBV_WC_RECV) {
		m = (const struct tmsg *)tl_srq_slot(t, wc->wr_id);
		rc = tmsg_check(m, TMSG_DATA, q, p->msg_expect, wc->byte_len);
	} else {
		return terr(t, "QP %d: unexpected receive opcode %d", q, wc->opcode), -1;
	}
	if (rc)
		return terr(t, "QP %d: message #%llu: check %d (got seq %llu)", q,
			    (unsigned long long)p->msg_expect, rc,
			    (unsigned long long)m->seq), -1;
	p->msg_expect++;
	t->st.rx_msgs++;
	if (tpost_srq_recv(t, wc->wr_id))
		return terr(t, "ibv_post_srq_recv: %s", strerror(errno)), -1;
	return 0;
}

/* Drain the receive CQ, then return credits where anything arrived. */
static int reap_recvs(struct tctx *t)
{
	struct ibv_wc wc[32];
	int i, n, q;

	do {
		n = ibv_poll_cq(t->rcq, 32, wc);
		if (n < 0)
			return terr(t, "ibv_poll_cq(recv): %d", n), -1;
		for (i = 0; i < n; i++)
			if (on_recv(t, &wc[i]))
				return -1;
	} while (n > 0);
	for (q = 0; q < t->o.nqp; q++)
		if (t->qps[q].ack_sent != t->qps[q].msg_expect ||
		    (q == 0 && t->ud_ack_sent != t->ud_expect))
			if (send_ack(t, q))
				return -1;
	return reap_sends(t);
}

static int on_event(struct tctx *t)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	if (ibv_get_cq_event(t->chan, &cq, &cq_ctx))
		return terr(t, "ibv_get_cq_event: %s", strerror(errno)), -1;
	if (cq != t->rcq)
		return terr(t, "completion event for an unknown CQ %p", (void *)cq), -1;
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(cq, 0))
		return terr(t, "ibv_req_notify_cq: %s", strerror(errno)), -1;
	return reap_recvs(t);
}

static int verdict(struct tctx *t, int sock)
{
	struct tfinal f;
	struct tfinal_qp *per;
	uint64_t errors = t->st.errors, v;
	int q;

	if (trecv_all(sock, &f, sizeof(f)) || f.magic != TFINAL_MAGIC ||
	    f.nqp != (uint32_t)t->o.nqp)
		return terr(t, "bad final message from the client"), -1;
	per = calloc(f.nqp, sizeof(*per));
	if (!per || trecv_all(sock, per, sizeof(*per) * f.nqp)) {
		free(per);
		return terr(t, "bad final message from the client"), -1;
	}
	/* everything the client says it sent must have been received */
	if (reap_recvs(t))
		errors++;
	for (q = 0; q < t->o.nqp; q++) {
		memcpy(&v, t->buf + tl_atomic_off(t, q), 8);
		if (t->qps[q].msg_expect != per[q].msgs) {
			terr(t, "QP %d: received %llu messages, client sent %llu", q,
			     (unsigned long long)t->qps[q].msg_expect,
			     (unsigned long long)per[q].msgs);
			errors++;
		}
		if (v != per[q].atomics) {
			terr(t, "QP %d: atomic counter %llu, client added %llu", q,
			     (unsigned long long)v, (unsigned long long)per[q].atomics);
			errors++;
		}
	}
	/* -U: the last datagrams may have been dropped too */
	if (t->ud_expect < f.ud && f.ud - t->ud_expect <= t->o.max_ud_lost - t->st.ud_lost) {
		t->st.ud_lost += f.ud - t->ud_expect;
		t->ud_expect = f.ud;
	}
	if (t->ud_expect != f.ud) {
		terr(t, "received %llu datagrams, client sent %llu",
		     (unsigned long long)t->ud_expect, (unsigned long long)f.ud);
		errors++;
	}
	if (t->st.ud_lost)
		tlog(t, "note: %llu UD datagrams lost (tolerated: -U)",
		     (unsigned long long)t->st.ud_lost);
	free(per);
	f.errors = errors;
	f.rx_msgs = t->st.rx_msgs;
	f.rx_ud = t->st.rx_ud;
	if (tsend_all(sock, &f, sizeof(f)))
		return terr(t, "cannot send the verdict"), -1;
	return errors ? -1 : 0;
}

int tserver_run(struct tctx *t, int sock)
{
	struct pollfd pf[2] = {
		{ .fd = t->chan->fd, .events = POLLIN },
		{ .fd = sock, .events = POLLIN },
	};
	double next = tnow() + t->o.progress;

	while (!tstop) {
		int n = poll(pf, 2, 100);

		if (n < 0 && errno != EINTR)
			return terr(t, "poll: %s", strerror(errno)), -1;
		if (n > 0 && (pf[0].revents & POLLIN) && on_event(t))
			return -1;
		if (n > 0 && (pf[1].revents & (POLLIN | POLLHUP)))
			return verdict(t, sock);
		if (t->o.progress > 0 && tnow() >= next) {
			tprint_stats(t, "progress");
			next += t->o.progress;
		}
	}
	return 0;
}
