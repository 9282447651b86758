// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libibckpt-rdmav34.so: registration with libibverbs.
 *
 * libibverbs loads the providers named in RDMAV_DRIVERS first, so with
 * RDMAV_DRIVERS=ibckpt our ops head its driver list. They claim every driver
 * id in the first matching pass (match table), and match_device() decides.
 *
 * At this stage the provider declines every device, leaving it to its vendor
 * provider: what loads, checks its ABI and is consulted for each device is in
 * place; stacking over the vendor (shadow objects, virtual IDs) comes next.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/ib_user_ioctl_verbs.h>
#include "rdma_core_abi.h"

static bool debug;

/*
 * The rdma-core release of the libibverbs we were loaded into: its file is
 * libibverbs.so.1.<abi>.<release>.<patch> (1.14.44.0 for rdma-core 44.0).
 * The private ABI's layouts change between releases while the symbol version
 * stays IBVERBS_PRIVATE_34, so anything but 44 is refused.
 */
static int ibckpt_abi_check(void)
{
	char path[PATH_MAX];
	unsigned int a, b, rel;
	const char *base;
	Dl_info info;

	if (!dladdr((void *)verbs_register_driver_34, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, path)) {
		fprintf(stderr, "ibckpt: cannot locate libibverbs; provider disabled\n");
		return -1;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (sscanf(base, "libibverbs.so.%u.%u.%u", &a, &b, &rel) != 3 ||
	    rel != IBCKPT_RDMA_CORE_MAJOR) {
		fprintf(stderr, "ibckpt: %s is not rdma-core %d's libibverbs; "
			"provider disabled\n", path, IBCKPT_RDMA_CORE_MAJOR);
		return -1;
	}
	return 0;
}

static bool ibckpt_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	(void)sysfs_dev;
	if (getenv("IBCKPT_DISABLE"))
		return false;
	if (debug)
		fprintf(stderr, "ibckpt: device left to its vendor provider\n");
	return false;
}

static struct verbs_device *ibckpt_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	(void)sysfs_dev;
	return NULL;	/* never reached: ibckpt_match_device() declines */
}

static void ibckpt_uninit_device(struct verbs_device *vdev)
{
	(void)vdev;
}

/* Every driver id the kernel defines, so that the first pass tries us first. */
static struct verbs_match_ent ibckpt_match_table[RDMA_DRIVER_MANA + 1];

static const struct verbs_device_ops ibckpt_dev_ops = {
	.name = "ibckpt",
	.match_min_abi_version = 0,
	.match_max_abi_version = INT_MAX,
	.match_table = ibckpt_match_table,
	.match_device = ibckpt_match_device,
	.alloc_device = ibckpt_alloc_device,
	.uninit_device = ibckpt_uninit_device,
};

static void __attribute__((constructor)) ibckpt_register(void)
{
	int id;

	debug = getenv("IBCKPT_DEBUG") != NULL;
	if (ibckpt_abi_check())
		return;
	for (id = RDMA_DRIVER_UNKNOWN + 1; id <= RDMA_DRIVER_MANA; id++) {
		ibckpt_match_table[id - 1].kind = VERBS_MATCH_DRIVER_ID;
		ibckpt_match_table[id - 1].u.driver_id = (uint64_t)id;
	}
	verbs_register_driver_34(&ibckpt_dev_ops);
	if (debug)
		fprintf(stderr, "ibckpt: provider registered (rdma-core %d)\n",
			IBCKPT_RDMA_CORE_MAJOR);
}
