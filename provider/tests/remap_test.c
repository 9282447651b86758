// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The job's identities after a reacquire (remap.c): per-device namespaces
 * (two rxe devices both hand out QPN 17), which device an address vector
 * reaches, and the address tables a context gets from them.
 */
#define UNIT_SUITE "provider/remap"
#include <errno.h>
#include <string.h>
#include "../../tests/unit/unit.h"
#include "../restart.h"

bool ibckpt_debug;

static struct ibckpt_ident id(uint32_t kind, uint64_t vdev, uint32_t vid, uint32_t real,
			      uint8_t vg, uint8_t g)
{
	struct ibckpt_ident e = { .kind = kind, .vid = vid, .real = real, .vdev = vdev };

	e.vgid[15] = vg;
	e.gid[15] = g;
	return e;
}

static void same_qpn_two_devices(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_QPN, 0xa, 17, 22, 0, 0),
				    id(IBCKPT_ID_QPN, 0xb, 17, 40, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 17, 0x1234, 0, 0) };
	uint32_t r = 0;

	CHECK_EQ(ibckpt_remap_set(v, 3), 0);
	CHECK(ibckpt_remap_find(IBCKPT_ID_QPN, 0xa, 17, &r));
	CHECK_EQ(r, 22);
	CHECK(ibckpt_remap_find(IBCKPT_ID_QPN, 0xb, 17, &r));
	CHECK_EQ(r, 40);
	CHECK(ibckpt_remap_find(IBCKPT_ID_RKEY, 0xa, 17, &r));
	CHECK_EQ(r, 0x1234);
	CHECK(!ibckpt_remap_find(IBCKPT_ID_RKEY, 0xb, 17, &r));
	CHECK(!ibckpt_remap_find(IBCKPT_ID_QPN, 0xc, 17, &r));
	ibckpt_remap_clear();
	CHECK(!ibckpt_remap_find(IBCKPT_ID_QPN, 0xa, 17, &r));
}

/* A new object may not keep an ID the job knows as another object's. */
static void taken_ids(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_QPN, 0xa, 17, 22, 0, 0),
				    id(IBCKPT_ID_QPN, 0xa, 18, 18, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 0x500, 0x777, 0, 0) };

	CHECK(!ibckpt_remap_active());
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_QPN, 0xa, 17));	/* no table: nothing */
	CHECK_EQ(ibckpt_remap_set(v, 3), 0);
	CHECK(ibckpt_remap_active());
	CHECK(ibckpt_remap_taken(IBCKPT_ID_QPN, 0xa, 17));	/* stands for 22 */
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_QPN, 0xa, 18));	/* stands for itself */
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_QPN, 0xa, 22));	/* a real one only */
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_QPN, 0xb, 17));	/* another device */
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_RKEY, 0xa, 17));	/* another kind */
	CHECK(ibckpt_remap_taken(IBCKPT_ID_RKEY, 0xa, 0x500));
	ibckpt_remap_clear();
	CHECK(!ibckpt_remap_active());
}

/* Real QPN -> virtual, for a UD completion's source: unique across devices only. */
static void source_qp_back(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_QPN, 0xa, 17, 40, 0, 0),
				    id(IBCKPT_ID_QPN, 0xa, 18, 41, 0, 0),
				    id(IBCKPT_ID_QPN, 0xb, 19, 41, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 20, 42, 0, 0) };
	uint32_t vid = 0;

	CHECK(!ibckpt_remap_src_qp(40, &vid));	/* no table */
	CHECK_EQ(ibckpt_remap_set(v, 4), 0);
	CHECK(ibckpt_remap_src_qp(40, &vid));
	CHECK_EQ(vid, 17);
	CHECK(!ibckpt_remap_src_qp(41, &vid));	/* two devices hand it out */
	CHECK(!ibckpt_remap_src_qp(42, &vid));	/* an rkey, not a QPN */
	CHECK(!ibckpt_remap_src_qp(17, &vid));	/* a virtual one */
	ibckpt_remap_clear();
}

static void device_of_address(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_GID, 0xa, 0, 0, 1, 2),
				    id(IBCKPT_ID_GID, 0xb, 0, 0, 2, 1),
				    id(IBCKPT_ID_LID, 0xb, 7, 9, 0, 0) };
	struct ibv_ah_attr ah = { .is_global = 1 };

	CHECK_EQ(ibckpt_remap_set(v, 3), 0);
	ah.grh.dgid.raw[15] = 2;		/* the GID peers know b by */
	CHECK_EQ(ibckpt_remap_dev_of(&ah), 0xb);
	ah.grh.dgid.raw[15] = 3;
	CHECK_EQ(ibckpt_remap_dev_of(&ah), 0);
	ah.is_global = 0;
	ah.dlid = 7;
	CHECK_EQ(ibckpt_remap_dev_of(&ah), 0xb);
	ibckpt_remap_clear();
}

/* The devices swapped places: each GID the application knows is the other's now. */
static void addresses_translated(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_GID, 0xa, 0, 0, 1, 2),
				    id(IBCKPT_ID_GID, 0xb, 0, 0, 2, 1) };
	struct ibckpt_addrs a;
	struct ibv_ah_attr ah = { .is_global = 1 };

	ibckpt_addrs_init(&a);
	CHECK_EQ(ibckpt_remap_set(v, 2), 0);
	CHECK_EQ(ibckpt_remap_addrs(&a), 0);
	ah.grh.dgid.raw[15] = 1;
	ibckpt_ah_attr_to_real(&a, &ah);
	CHECK_EQ(ah.grh.dgid.raw[15], 2);
	ibckpt_ah_attr_to_virtual(&a, &ah);
	CHECK_EQ(ah.grh.dgid.raw[15], 1);
	ibckpt_addrs_destroy(&a);
	ibckpt_remap_clear();
}

static void unknown_kind_refused(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_QPN, 0xa, 17, 22, 0, 0), id(99, 0xa, 1, 2, 0, 0) };
	uint32_t r;

	CHECK_EQ(ibckpt_remap_set(v, 2), EINVAL);
	CHECK(!ibckpt_remap_find(IBCKPT_ID_QPN, 0xa, 17, &r));
}

/* Many entries: the table grows, every one is found. */
static void many(void)
{
	static struct ibckpt_ident v[5000];
	uint32_t i, r, bad = 0;

	for (i = 0; i < 5000; i++)
		v[i] = id(IBCKPT_ID_RKEY, i % 7, i, i + 100000, 0, 0);
	CHECK_EQ(ibckpt_remap_set(v, 5000), 0);
	for (i = 0; i < 5000; i++)
		bad += !ibckpt_remap_find(IBCKPT_ID_RKEY, i % 7, i, &r) || r != i + 100000;
	CHECK_EQ(bad, 0);
	ibckpt_remap_clear();
}

/*
 * A window's key is found by its index and its key byte moves with each
 * bind: the byte the application names is carried, shifted by the
 * window's offset (real byte - virtual byte at the reacquire), wrapping.
 * An MR's key is found whole first; a key of neither passes.
 */
static void window_keys_by_index(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_MW, 0xa, 0x80001f0, 0x9000230, 0, 0),
				    id(IBCKPT_ID_MW, 0xb, 0x80001f0, 0x80001f0, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 0x80002aa, 0x1234, 0, 0) };
	uint32_t r = 0;

	CHECK_EQ(ibckpt_remap_set(v, 3), 0);
	CHECK(ibckpt_remap_rkey(0xa, 0x80001f0, &r));	/* as published */
	CHECK_EQ(r, 0x9000230);
	CHECK(ibckpt_remap_rkey(0xa, 0x80001f1, &r));	/* ibv_inc_rkey() of it */
	CHECK_EQ(r, 0x9000231);
	CHECK(ibckpt_remap_rkey(0xa, 0x80001d0, &r));	/* the byte wraps */
	CHECK_EQ(r, 0x9000210);
	CHECK(ibckpt_remap_rkey(0xa, 0x80001ff, &r));
	CHECK_EQ(r, 0x900023f);
	CHECK(ibckpt_remap_rkey(0xa, 0x8000100 | 0xc0, &r));
	CHECK_EQ(r, 0x9000200);
	CHECK(ibckpt_remap_rkey(0xb, 0x80001f5, &r));	/* standing for itself */
	CHECK_EQ(r, 0x80001f5);
	CHECK(ibckpt_remap_rkey(0xa, 0x80002aa, &r));	/* an MR's, whole */
	CHECK_EQ(r, 0x1234);
	CHECK(!ibckpt_remap_rkey(0xa, 0x80003f0, &r));	/* nobody's */
	CHECK(!ibckpt_remap_rkey(0xc, 0x80001f0, &r));	/* another device */
	/* a new window's index is taken if the job's stands for another */
	CHECK(ibckpt_remap_taken(IBCKPT_ID_MW, 0xa, 0x80001aa));
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_MW, 0xb, 0x80001aa));
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_MW, 0xa, 0x80003aa));
	ibckpt_remap_clear();
}

/*
 * An MR's key taken by its index, for new windows (whose key byte moves):
 * when any MR key of the job on that index and device stands for another
 * key; not when all of them stand for themselves.
 */
static void mr_keys_by_index(void)
{
	struct ibckpt_ident v[] = { id(IBCKPT_ID_RKEY, 0xa, 0x80006c1, 0x301, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 0x80007c1, 0x80007c1, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 0x80008c1, 0x80008c1, 0, 0),
				    id(IBCKPT_ID_RKEY, 0xa, 0x80008d1, 0x302, 0, 0) };
	uint32_t r = 0;

	CHECK_EQ(ibckpt_remap_set(v, 4), 0);
	CHECK(ibckpt_remap_taken(IBCKPT_ID_RKEY_INDEX, 0xa, 0x80006b0));
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_RKEY_INDEX, 0xa, 0x80007b0));
	CHECK(ibckpt_remap_taken(IBCKPT_ID_RKEY_INDEX, 0xa, 0x80008b0));	/* one of two */
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_RKEY_INDEX, 0xb, 0x80006b0));	/* another device */
	CHECK(!ibckpt_remap_taken(IBCKPT_ID_RKEY_INDEX, 0xa, 0x80009b0));
	/* the entries by index are no key's: the MR keys are found whole only */
	CHECK(!ibckpt_remap_rkey(0xa, 0x80006b0, &r));
	CHECK(ibckpt_remap_rkey(0xa, 0x80006c1, &r));
	CHECK_EQ(r, 0x301);
	ibckpt_remap_clear();
}

int main(void)
{
	RUN(same_qpn_two_devices);
	RUN(taken_ids);
	RUN(source_qp_back);
	RUN(device_of_address);
	RUN(addresses_translated);
	RUN(unknown_kind_refused);
	RUN(many);
	RUN(window_keys_by_index);
	RUN(mr_keys_by_index);
	return unit_done();
}
