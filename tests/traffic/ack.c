// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The client's bookkeeping of the server's acknowledgements. Each ACK the
 * server sends on an RC QP carries that QP's count of messages received in
 * order and the count of UD datagrams received in order. An RC QP delivers
 * its own ACKs in order, so both counts may only grow from one ACK of a QP
 * to its next; but ACKs of different QPs overtake each other (separate
 * queues; pauses make it common), so the UD count a later-polled ACK carries
 * may be older than one already seen on another QP: the client keeps the
 * highest.
 */
#include "traffic.h"

int tack_take(struct tctx *t, struct tqp *p, const struct tmsg *m)
{
	if (m->ack < p->peer_ack || m->ack > p->msg_next ||
	    m->ud_ack < p->peer_ud_ack || m->ud_ack > t->ud_next)
		return -1;
	p->peer_ack = m->ack;
	p->peer_ud_ack = m->ud_ack;
	if (m->ud_ack > t->ud_ack)
		t->ud_ack = m->ud_ack;
	return 0;
}
