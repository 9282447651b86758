// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Virtual LIDs and GIDs (addr.c), under ASan + UBSan. */
#include <string.h>
#include "../addr.h"
#define UNIT_SUITE "provider/addr"
#include "../../tests/unit/unit.h"

static union ibv_gid gid(uint32_t n)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[0] = 0xfe;
	g.raw[1] = 0x80;
	memcpy(&g.raw[12], &n, sizeof(n));
	return g;
}

static struct ibv_ah_attr av(uint16_t dlid, uint32_t dgid, bool global)
{
	struct ibv_ah_attr a = { .dlid = dlid, .is_global = global, .port_num = 1 };

	a.grh.dgid = gid(dgid);
	return a;
}

/* Until a restart maps something, every address is its own translation. */
static void identity_without_mappings(void)
{
	struct ibckpt_addrs a;
	struct ibv_ah_attr x = av(7, 7, true);
	union ibv_gid want = gid(7);

	ibckpt_addrs_init(&a);
	ibckpt_ah_attr_to_real(&a, &x);
	CHECK_EQ(x.dlid, 7);
	CHECK(!memcmp(&x.grh.dgid, &want, sizeof(want)));
	ibckpt_ah_attr_to_virtual(&a, &x);
	CHECK_EQ(x.dlid, 7);
	CHECK_EQ(ibckpt_lid_to_virtual(&a, 7), 7);
	ibckpt_addrs_destroy(&a);
}

/* A mapping works both ways; what it does not name stays as it is. */
static void mapped_both_ways(void)
{
	struct ibckpt_addrs a;
	union ibv_gid v = gid(1), r = gid(2), want;
	struct ibv_ah_attr x = av(5, 1, true), y = av(6, 3, true), z = av(5, 1, false);

	ibckpt_addrs_init(&a);
	CHECK_EQ(ibckpt_addrs_map_lid(&a, 5, 9), 0);
	CHECK_EQ(ibckpt_addrs_map_gid(&a, &v, &r), 0);
	ibckpt_ah_attr_to_real(&a, &x);
	CHECK_EQ(x.dlid, 9);
	CHECK(!memcmp(&x.grh.dgid, &r, sizeof(r)));
	ibckpt_ah_attr_to_virtual(&a, &x);
	CHECK_EQ(x.dlid, 5);
	CHECK(!memcmp(&x.grh.dgid, &v, sizeof(v)));
	ibckpt_ah_attr_to_real(&a, &y);		/* not mapped */
	CHECK_EQ(y.dlid, 6);
	want = gid(3);
	CHECK(!memcmp(&y.grh.dgid, &want, sizeof(want)));
	ibckpt_ah_attr_to_real(&a, &z);		/* not global: its GRH is not read */
	CHECK_EQ(z.dlid, 9);
	CHECK(!memcmp(&z.grh.dgid, &v, sizeof(v)));
	CHECK_EQ(ibckpt_lid_to_virtual(&a, 9), 5);
	CHECK_EQ(ibckpt_lid_to_virtual(&a, 5), 5);
	/* a later restart moves it again */
	CHECK_EQ(ibckpt_addrs_map_lid(&a, 5, 11), 0);
	x = av(5, 1, false);
	ibckpt_ah_attr_to_real(&a, &x);
	CHECK_EQ(x.dlid, 11);
	ibckpt_addrs_destroy(&a);
}

/* Thousands of peers: each found, none confused with another. */
static void many_gids(void)
{
	struct ibckpt_addrs a;
	uint32_t i;

	ibckpt_addrs_init(&a);
	for (i = 0; i < 5000; i++) {
		union ibv_gid v = gid(i), r = gid(100000 + i);

		CHECK_EQ(ibckpt_addrs_map_gid(&a, &v, &r), 0);
	}
	CHECK_EQ(a.gid_real.live, 5000);
	CHECK(a.gid_real.size >= 10000);
	for (i = 0; i < 5000; i++) {
		struct ibv_ah_attr x = av(0, i, true);
		union ibv_gid want = gid(100000 + i);

		ibckpt_ah_attr_to_real(&a, &x);
		CHECK(!memcmp(&x.grh.dgid, &want, sizeof(want)));
		ibckpt_ah_attr_to_virtual(&a, &x);
		want = gid(i);
		CHECK(!memcmp(&x.grh.dgid, &want, sizeof(want)));
	}
	ibckpt_addrs_destroy(&a);
}

int main(void)
{
	RUN(identity_without_mappings);
	RUN(mapped_both_ways);
	RUN(many_gids);
	return unit_done();
}
