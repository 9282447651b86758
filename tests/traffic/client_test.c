// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The client's bookkeeping of ACKs (ack.c) and fetch-and-adds (atomic.c), under ASan + UBSan. */
#include <string.h>
#include "traffic.h"
#define UNIT_SUITE "traffic/client"
#include "../unit/unit.h"

static struct tmsg ack(uint64_t n, uint64_t ud)
{
	struct tmsg m;

	memset(&m, 0, sizeof(m));
	m.ack = n;
	m.ud_ack = ud;
	return m;
}

/*
 * Regression: the server sent ACKs with UD counts 5 on QP 1, then 6 on QP 0;
 * the client polled QP 0's first, and took QP 1's 5 for a UD count going
 * backwards ("ACK out of range" after 27 minutes of paused traffic without
 * ibckpt).
 */
static void acks_of_two_qps_may_cross(void)
{
	struct tctx t;
	struct tqp q[2];
	struct tmsg m;

	memset(&t, 0, sizeof(t));
	memset(q, 0, sizeof(q));
	t.ud_next = 10;
	q[0].msg_next = q[1].msg_next = 10;
	m = ack(3, 6);
	CHECK_EQ(tack_take(&t, &q[0], &m), 0);
	CHECK_EQ(t.ud_ack, 6);
	m = ack(2, 5);
	CHECK_EQ(tack_take(&t, &q[1], &m), 0);
	CHECK_EQ(t.ud_ack, 6);		/* the highest seen */
	CHECK_EQ(q[1].peer_ack, 2);
}

/* On one QP, ACKs come in order: no count may go back, none pass what was sent. */
static void one_qp_never_goes_back(void)
{
	struct tctx t;
	struct tqp q;
	struct tmsg m;

	memset(&t, 0, sizeof(t));
	memset(&q, 0, sizeof(q));
	t.ud_next = 10;
	q.msg_next = 10;
	m = ack(4, 6);
	CHECK_EQ(tack_take(&t, &q, &m), 0);
	m = ack(3, 6);
	CHECK_EQ(tack_take(&t, &q, &m), -1);
	m = ack(4, 5);
	CHECK_EQ(tack_take(&t, &q, &m), -1);
	m = ack(11, 6);
	CHECK_EQ(tack_take(&t, &q, &m), -1);
	m = ack(4, 11);
	CHECK_EQ(tack_take(&t, &q, &m), -1);
	m = ack(10, 10);
	CHECK_EQ(tack_take(&t, &q, &m), 0);
	CHECK_EQ(t.ud_ack, 10);
}

/*
 * A fetch-and-add fetches the count before it; a result written late is an
 * error; one never written is soft-RoCE's defect, tolerated -L times.
 */
static void atomic_verdicts(void)
{
	struct tctx t;
	const uint64_t P = UINT64_MAX;	/* the poison */

	memset(&t, 0, sizeof(t));
	t.o.max_unanswered = 2;
	CHECK_EQ(tatomic_verdict(&t, 7, 7, 7), TATOMIC_OK);
	CHECK_EQ(tatomic_verdict(&t, 6, 6, 7), TATOMIC_WRONG);
	CHECK_EQ(tatomic_verdict(&t, 8, 8, 7), TATOMIC_WRONG);
	CHECK_EQ(tatomic_verdict(&t, P, 7, 7), TATOMIC_LATE);
	CHECK_EQ(t.st.unanswered, 0);
	CHECK_EQ(tatomic_verdict(&t, P, P, 7), TATOMIC_UNANSWERED);
	CHECK_EQ(tatomic_verdict(&t, P, P, 9), TATOMIC_UNANSWERED);
	CHECK_EQ(tatomic_verdict(&t, P, P, 11), TATOMIC_TOO_MANY);
	CHECK_EQ(t.st.unanswered, 3);
	memset(&t, 0, sizeof(t));	/* -L 0: strict */
	CHECK_EQ(tatomic_verdict(&t, P, P, 7), TATOMIC_TOO_MANY);
}

int main(void)
{
	RUN(acks_of_two_qps_may_cross);
	RUN(one_qp_never_goes_back);
	RUN(atomic_verdicts);
	return unit_done();
}
