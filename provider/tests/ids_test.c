// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Object ids (ids.c), under ASan + UBSan. */
#include <stdint.h>
#include "../ibckpt.h"
#define UNIT_SUITE "provider/ids"
#include "../../tests/unit/unit.h"

/*
 * From the very first id on, a held one is never handed out again, 0
 * never; a freed one may be. The first id, generation 0, is found held
 * too: the set is initialised before it is given.
 */
static void held_ids_are_skipped_from_the_first(void)
{
	uint32_t a = ibckpt_new_id(), b = ibckpt_new_id();

	CHECK_EQ(a, 1);				/* nothing else here takes ids */
	CHECK_EQ(b, 2);
	ibckpt_ids_skip_to(0);
	CHECK_EQ(ibckpt_new_id(), 3);		/* 1 and 2 are held */
	ibckpt_ids_skip_to(UINT32_MAX);		/* wraps: 0 never, 1 to 3 held */
	CHECK_EQ(ibckpt_new_id(), 4);
	ibckpt_id_put(a);
	ibckpt_ids_skip_to(0);
	CHECK_EQ(ibckpt_new_id(), 1);		/* freed: given again */
}

int main(void)
{
	RUN(held_ids_are_skipped_from_the_first);
	return unit_done();
}
