// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Virtual ID table (vidmap.h), under ASan + UBSan. */
#include <errno.h>
#include "../vidmap.h"
#define UNIT_SUITE "provider/vidmap"
#include "../../tests/unit/unit.h"

/* 10,000 sequential keys: all found, removed ones gone, table stays sparse. */
static void many_keys(void)
{
	struct ibckpt_vidmap m;
	uint32_t k, gen;
	int objs[1];

	ibckpt_vidmap_init(&m);
	for (k = 0; k < 10000; k++)
		CHECK_EQ(ibckpt_vidmap_insert(&m, 0x100 + k * 0x100, 0x100 + k * 0x100,
					      objs, &gen), 0);
	for (k = 0; k < 10000; k += 2)
		CHECK_EQ(ibckpt_vidmap_remove(&m, 0x100 + k * 0x100, 0), 0);
	for (k = 0; k < 10000; k++) {
		const struct ibckpt_vid *e = ibckpt_vidmap_find(&m, 0x100 + k * 0x100, 0);

		CHECK((e != NULL) == (k % 2 == 1));
	}
	CHECK_EQ(m.live, 5000);
	CHECK(m.size >= 2 * m.used);
	ibckpt_vidmap_destroy(&m);
}

/* A recycled ID never matches the generation of its previous owner. */
static void recycled_id_generation(void)
{
	struct ibckpt_vidmap m;
	uint32_t g1, g2;
	int a, b;

	ibckpt_vidmap_init(&m);
	CHECK_EQ(ibckpt_vidmap_insert(&m, 77, 77, &a, &g1), 0);
	CHECK_EQ(ibckpt_vidmap_insert(&m, 77, 77, &a, NULL), EEXIST);
	CHECK_EQ(ibckpt_vidmap_remove(&m, 77, g1), 0);
	CHECK_EQ(ibckpt_vidmap_insert(&m, 77, 77, &b, &g2), 0);
	CHECK(g1 != g2);
	CHECK(ibckpt_vidmap_find(&m, 77, g1) == NULL);
	CHECK(ibckpt_vidmap_find(&m, 77, g2)->obj == &b);
	CHECK_EQ(ibckpt_vidmap_remove(&m, 77, g1), ENOENT);
	ibckpt_vidmap_destroy(&m);
}

/* A restart repoints a virtual ID at a new real one. */
static void restart_rewrites_real(void)
{
	struct ibckpt_vidmap m;
	int a;

	ibckpt_vidmap_init(&m);
	CHECK_EQ(ibckpt_vidmap_insert(&m, 0x11, 0x11, &a, NULL), 0);
	CHECK_EQ(ibckpt_vidmap_set_real(&m, 0x11, 0x2345), 0);
	CHECK_EQ(ibckpt_vidmap_find(&m, 0x11, 0)->real, 0x2345);
	CHECK_EQ(ibckpt_vidmap_set_real(&m, 0x12, 1), ENOENT);
	CHECK(ibckpt_vidmap_find(&m, 0x12, 0) == NULL);
	ibckpt_vidmap_destroy(&m);
}

/* Insert/remove churn with tombstones never loops or loses entries. */
static void churn(void)
{
	struct ibckpt_vidmap m;
	uint32_t i;
	int a;

	ibckpt_vidmap_init(&m);
	CHECK_EQ(ibckpt_vidmap_insert(&m, 1, 1, &a, NULL), 0);
	for (i = 2; i < 100000; i++) {
		CHECK_EQ(ibckpt_vidmap_insert(&m, i, i, &a, NULL), 0);
		CHECK_EQ(ibckpt_vidmap_remove(&m, i, 0), 0);
	}
	CHECK(ibckpt_vidmap_find(&m, 1, 0) != NULL);
	CHECK_EQ(m.live, 1);
	CHECK(m.size <= 64);
	ibckpt_vidmap_destroy(&m);
}

/*
 * Keys made of an index shifted over a constant key byte (how vendors build
 * lkeys) must spread over the table: lookups stay short. Regression: the
 * hash used only the low bits of its product, so these 10,000 keys fell
 * into 128 slots and a lookup walked thousands of entries.
 */
static void shifted_keys_spread(void)
{
	struct ibckpt_vidmap m;
	uint32_t i, gen, total = 0, worst = 0;

	ibckpt_vidmap_init(&m);
	for (i = 0; i < 10000; i++)
		CHECK_EQ(ibckpt_vidmap_insert(&m, i << 8 | 0x5a, i, NULL, &gen), 0);
	for (i = 0; i < 10000; i++) {
		uint32_t n = ibckpt_vidmap_probes(&m, i << 8 | 0x5a);

		total += n;
		worst = n > worst ? n : worst;
	}
	CHECK(total <= 4 * 10000);
	CHECK(worst <= 64);
	ibckpt_vidmap_destroy(&m);
}

int main(void)
{
	RUN(many_keys);
	RUN(recycled_id_generation);
	RUN(restart_rewrites_real);
	RUN(churn);
	RUN(shifted_keys_spread);
	return unit_done();
}
