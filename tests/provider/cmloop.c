// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmloop: CYCLES rdma_cm connections, one after the other, between a server
 * and a client, each exchanging one numbered message (and its echo) through
 * what librdmacm creates itself: rdma_create_qp() without CQs gives a
 * connection two completion channels and two CQs, rdma_destroy_qp()
 * destroys them (librdmacm 44's ucma_create_cqs() and ucma_destroy_cqs()),
 * and rdma_get_send_comp() and rdma_get_recv_comp() wait on those channels
 * with ibv_get_cq_event(). glibc gives the next connection's channels the
 * same addresses back, and the kernel the same fd numbers.
 *
 * The client resolves its next connection before it tears the current one
 * down, so that one connection's channels are destroyed and the next one's
 * created right after each other, as an event-driven server does when it
 * handles a DISCONNECTED and a CONNECT_REQUEST back to back. A completion
 * event that goes astray hangs the program (the test runs it under a
 * timeout).
 *
 *   cmloop -s ADDR PORT CYCLES   the server; prints "listening" once it is
 *   cmloop -c ADDR PORT CYCLES   the client; prints "cycle N" every 100th
 *                                cycle and "cycles N" at the end
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#define PROG "cmloop"
#include "../lib/expect.h"

/* A connection's QP, as librdmacm makes it, with one message buffer. */
struct conn {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint64_t msg[2];		/* [0] received, [1] sent */
};

/* The QP and its CQs and channels (librdmacm's), a receive posted. */
static int conn_setup(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	};

	c->id = id;
	if (rdma_create_qp(id, NULL, &qa))
		return -1;
	c->mr = rdma_reg_msgs(id, c->msg, sizeof(c->msg));
	if (!c->mr)
		return -1;
	return rdma_post_recv(id, NULL, &c->msg[0], sizeof(c->msg[0]), c->mr);
}

/* Sends @n and waits for its send completion, through the send CQ's channel. */
static int conn_send(struct conn *c, uint64_t n)
{
	struct ibv_wc wc;

	c->msg[1] = n;
	if (rdma_post_send(c->id, NULL, &c->msg[1], sizeof(c->msg[1]), c->mr, 0) ||
	    rdma_get_send_comp(c->id, &wc) <= 0)
		return -1;
	return wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

/* The message received, through the receive CQ's channel; -1 on error. */
static int64_t conn_recv(struct conn *c)
{
	struct ibv_wc wc;

	if (rdma_get_recv_comp(c->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return -1;
	return (int64_t)c->msg[0];
}

/* Destroys the connection's QP, CQs and channels (the id stays). */
static void conn_teardown(struct conn *c)
{
	rdma_dereg_mr(c->mr);
	rdma_destroy_qp(c->id);
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port, bool passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		DIE("rdma_getaddrinfo %s:%s", addr, port);
	return res;
}

/* The next event, of the expected type, acknowledged; its id. */
static struct rdma_cm_id *next_event(struct rdma_event_channel *ec, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	enum rdma_cm_event_type got;

	if (rdma_get_cm_event(ec, &ev))
		DIE("rdma_get_cm_event");
	got = ev->event;
	id = ev->id;
	rdma_ack_cm_event(ev);
	if (got != want) {
		errno = EPROTO;
		DIE("%s, expected %s", rdma_event_str(got), rdma_event_str(want));
	}
	return id;
}

/* Each connection: receive the number, echo it, wait for the disconnect. */
static void server(const char *addr, const char *port, unsigned int cycles)
{
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_addrinfo *res = resolve(addr, port, true);
	struct rdma_cm_id *listen;
	struct conn c;
	unsigned int i;
	int64_t n;

	if (!ec || rdma_create_id(ec, &listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen, res->ai_src_addr) || rdma_listen(listen, 4))
		DIE("listen on %s:%s", addr, port);
	printf("listening\n");
	fflush(stdout);
	for (i = 0; i < cycles; i++) {
		struct rdma_cm_id *id = next_event(ec, RDMA_CM_EVENT_CONNECT_REQUEST);

		if (conn_setup(&c, id) || rdma_accept(id, NULL))
			DIE("cycle %u: accept", i);
		next_event(ec, RDMA_CM_EVENT_ESTABLISHED);
		n = conn_recv(&c);
		EXPECT(n == i, "cycle %u: received %lld", i, (long long)n);
		if (conn_send(&c, (uint64_t)n))
			DIE("cycle %u: echo", i);
		next_event(ec, RDMA_CM_EVENT_DISCONNECTED);
		rdma_disconnect(id);
		conn_teardown(&c);
		rdma_destroy_id(id);
	}
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ec);
	rdma_freeaddrinfo(res);
}

/* An id resolved to the server (synchronous: no event channel), no QP yet. */
static struct rdma_cm_id *client_id(struct rdma_addrinfo *res)
{
	struct rdma_cm_id *id;

	if (rdma_create_ep(&id, res, NULL, NULL))
		DIE("rdma_create_ep");
	return id;
}

static void client(const char *addr, const char *port, unsigned int cycles)
{
	struct rdma_addrinfo *res = resolve(addr, port, false);
	struct rdma_cm_id *next = client_id(res), *prev = NULL;
	struct conn c;
	unsigned int i;
	int64_t n;

	for (i = 0; i < cycles; i++) {
		if (i % 100 == 0) {	/* where a hang happened */
			printf("cycle %u\n", i);
			fflush(stdout);
		}
		/* right after the previous connection's channels were destroyed */
		if (conn_setup(&c, next))
			DIE("cycle %u: QP", i);
		if (prev)
			rdma_destroy_id(prev);
		if (rdma_connect(c.id, NULL))
			DIE("cycle %u: connect", i);
		if (conn_send(&c, i))
			DIE("cycle %u: send", i);
		n = conn_recv(&c);
		EXPECT(n == i, "cycle %u: echo %lld", i, (long long)n);
		next = i + 1 < cycles ? client_id(res) : NULL;
		rdma_disconnect(c.id);
		conn_teardown(&c);
		prev = c.id;
	}
	if (prev)
		rdma_destroy_id(prev);
	rdma_freeaddrinfo(res);
	printf("cycles %u\n", i);
}

int main(int argc, char **argv)
{
	unsigned int cycles;

	if (argc != 5 || (strcmp(argv[1], "-s") && strcmp(argv[1], "-c"))) {
		fprintf(stderr, "usage: cmloop -s|-c ADDR PORT CYCLES\n");
		return 2;
	}
	cycles = (unsigned int)strtoul(argv[4], NULL, 0);
	if (!strcmp(argv[1], "-s"))
		server(argv[2], argv[3], cycles);
	else
		client(argv[2], argv[3], cycles);
	return failures ? 1 : 0;
}
