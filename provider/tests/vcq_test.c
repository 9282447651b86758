// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Private completion queue (vcq.h), under ASan + UBSan. */
#include <errno.h>
#include "../vcq.h"
#define UNIT_SUITE "provider/vcq"
#include "../../tests/unit/unit.h"

/* Drained completions come back in order, exactly once, across wrap-around. */
static void fifo_exactly_once(void)
{
	struct ibckpt_vcq q;
	struct ibv_wc in[6] = { 0 }, out[8];
	uint32_t i, n, next = 0, id = 0;

	CHECK_EQ(ibckpt_vcq_init(&q, 5), 0);
	CHECK_EQ(q.size, 8);
	for (int round = 0; round < 5; round++) {
		for (i = 0; i < 6; i++)
			in[i].wr_id = id++;
		CHECK_EQ(ibckpt_vcq_push(&q, in, 6), 0);
		while ((n = ibckpt_vcq_pop(&q, out, 4)) != 0)
			for (i = 0; i < n; i++)
				CHECK_EQ(out[i].wr_id, next++);
	}
	CHECK_EQ(next, id);
	CHECK(ibckpt_vcq_empty(&q));
	ibckpt_vcq_destroy(&q);
}

/* A push that does not fit is refused whole. */
static void overflow_refused(void)
{
	struct ibckpt_vcq q;
	struct ibv_wc wc[5] = { 0 };

	CHECK_EQ(ibckpt_vcq_init(&q, 4), 0);
	CHECK_EQ(ibckpt_vcq_push(&q, wc, 3), 0);
	CHECK_EQ(ibckpt_vcq_push(&q, wc, 2), ENOSPC);
	CHECK_EQ(ibckpt_vcq_count(&q), 3);
	CHECK(ibckpt_vcq_at(&q, 2) != NULL);
	CHECK(ibckpt_vcq_at(&q, 3) == NULL);
	ibckpt_vcq_destroy(&q);
}

/* A larger ring takes the held completions over, in order (a drain's growth). */
static void replace_keeps_order(void)
{
	struct ibckpt_vcq q, big;
	struct ibv_wc wc[4] = { 0 }, out[8];
	uint32_t i;

	CHECK_EQ(ibckpt_vcq_init(&q, 4), 0);
	for (i = 0; i < 4; i++)
		wc[i].wr_id = i;
	CHECK_EQ(ibckpt_vcq_push(&q, wc, 3), 0);
	CHECK_EQ(ibckpt_vcq_pop(&q, out, 2), 2);	/* head moved: the ring wraps */
	for (i = 0; i < 4; i++)
		wc[i].wr_id = 3 + i;
	CHECK_EQ(ibckpt_vcq_push(&q, wc, 3), 0);	/* 2, 3, 4, 5: full */
	CHECK_EQ(ibckpt_vcq_init(&big, 8), 0);
	ibckpt_vcq_replace(&q, &big);
	CHECK_EQ(q.size, 8);
	CHECK_EQ(ibckpt_vcq_count(&q), 4);
	CHECK_EQ(ibckpt_vcq_push(&q, wc + 3, 1), 0);	/* 6 */
	CHECK_EQ(ibckpt_vcq_pop(&q, out, 8), 5);
	for (i = 0; i < 5; i++)
		CHECK_EQ(out[i].wr_id, 2 + i);
	ibckpt_vcq_destroy(&q);
}

int main(void)
{
	RUN(fifo_exactly_once);
	RUN(overflow_refused);
	RUN(replace_keeps_order);
	return unit_done();
}
