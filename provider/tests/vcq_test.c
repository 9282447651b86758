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

int main(void)
{
	RUN(fifo_exactly_once);
	RUN(overflow_refused);
	return unit_done();
}
