// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libibckpt-rdmav34.so: registration with libibverbs.
 *
 * libibverbs loads the providers named in RDMAV_DRIVERS first, so with
 * RDMAV_DRIVERS=ibckpt our ops head its driver list. They claim every driver
 * id in the first matching pass (match table), and match_device() decides.
 *
 * When it claims a device, it allocates the vendor's device inside its own
 * (vendor.c finds the vendor) and every context it opens stacks on a context
 * of the vendor's (context.c).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/ib_user_ioctl_verbs.h>
#include "ibckpt.h"

bool ibckpt_debug;
bool ibckpt_stats_on;		/* IBCKPT_STATS: count the data path (ibckpt.h) */

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

/*
 * Claim the device when a vendor provider for it is loaded and would take it
 * itself; otherwise leave it to libibverbs' next candidates, which end with
 * the vendor (the application then runs without ibckpt, as it would without
 * us installed).
 */
static bool ibckpt_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	const struct verbs_match_ent *vmatch, *ours = sysfs_dev->match;
	const struct verbs_device_ops *vendor;
	bool ok;

	if (getenv("IBCKPT_DISABLE")) {
		ibckpt_dbg("%s: IBCKPT_DISABLE set, left to its vendor provider",
			   sysfs_dev->ibdev_name);
		return false;
	}
	vendor = ibckpt_vendor_find(sysfs_dev->driver_id, &vmatch);
	if (!vendor) {
		fprintf(stderr, "ibckpt: %s: no loaded provider claims kernel driver id %u; "
			"device not stacked\n", sysfs_dev->ibdev_name, sysfs_dev->driver_id);
		return false;
	}
	if (sysfs_dev->abi_ver < vendor->match_min_abi_version ||
	    sysfs_dev->abi_ver > vendor->match_max_abi_version) {
		fprintf(stderr, "ibckpt: %s: uverbs ABI %u outside provider %s's %u..%u; "
			"device not stacked\n", sysfs_dev->ibdev_name, sysfs_dev->abi_ver,
			vendor->name, vendor->match_min_abi_version,
			vendor->match_max_abi_version);
		return false;
	}
	/* The vendor decides as if libibverbs had matched it directly. */
	sysfs_dev->match = vmatch;
	ok = !vendor->match_device || vendor->match_device(sysfs_dev);
	if (!ok) {
		sysfs_dev->match = ours;
		ibckpt_dbg("%s: provider %s declines it", sysfs_dev->ibdev_name, vendor->name);
		return false;
	}
	return true;
}

/*
 * Our device, and inside it the vendor's, allocated by the vendor as if
 * libibverbs had matched it; its ibv_device fields are filled from ours once
 * libibverbs has filled those (ibckpt_device_real()).
 */
static struct verbs_device *ibckpt_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	const struct verbs_match_ent *vmatch;
	const struct verbs_device_ops *vendor;
	struct ibckpt_device *dev;

	/* Same answer as in ibckpt_match_device(), just called. */
	vendor = ibckpt_vendor_find(sysfs_dev->driver_id, &vmatch);
	if (!vendor)
		return NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->vendor = vendor;
	dev->vendor_match = sysfs_dev->match;
	dev->driver_id = sysfs_dev->driver_id;
	dev->real = vendor->alloc_device(sysfs_dev);
	if (!dev->real) {
		fprintf(stderr, "ibckpt: %s: provider %s could not allocate the device\n",
			sysfs_dev->ibdev_name, vendor->name);
		free(dev);
		return NULL;
	}
	dev->real->ops = vendor;
	atomic_init(&dev->real->refcount, 1);	/* ours, dropped in uninit */
	dev->real->sysfs = sysfs_dev;
	ibckpt_dbg("%s: stacked on provider %s", sysfs_dev->ibdev_name, vendor->name);
	return &dev->vdev;
}

static void ibckpt_uninit_device(struct verbs_device *vdev)
{
	struct ibckpt_device *dev = to_idev(&vdev->device);

	/* libibverbs freed the shared sysfs_dev already; the vendor does not use it here. */
	dev->real->sysfs = NULL;
	dev->vendor->uninit_device(dev->real);
	free(dev);
}

/* Every driver id the kernel defines, so that the first pass tries us first. */
static struct verbs_match_ent ibckpt_match_table[RDMA_DRIVER_MANA + 1];

static const struct verbs_device_ops ibckpt_dev_ops = {
	.name = "ibckpt",
	.match_min_abi_version = 0,
	.match_max_abi_version = INT_MAX,
	.match_table = ibckpt_match_table,
	.match_device = ibckpt_match_device,
	.alloc_context = ibckpt_alloc_context,
	.alloc_device = ibckpt_alloc_device,
	.uninit_device = ibckpt_uninit_device,
};

/*
 * libibverbs tries providers in load order, and only RDMAV_DRIVERS (or
 * IBV_DRIVERS) fixes an order: the files of /etc/libibverbs.d are read in
 * readdir() order. Loaded from there alone we would stack on some runs and
 * not on others, so we register only when named in RDMAV_DRIVERS ("ibckpt",
 * or a path ending in "libibckpt"), which libibverbs loads first.
 */
static bool ibckpt_named_first(void)
{
	const char *env = getenv("RDMAV_DRIVERS");
	char *list, *tok, *save = NULL;
	bool named = false;

	if (!env)
		env = getenv("IBV_DRIVERS");
	if (!env)
		return false;
	list = strdup(env);
	if (!list)
		return false;
	for (tok = strtok_r(list, ":", &save); tok && !named; tok = strtok_r(NULL, ":", &save)) {
		const char *base = strrchr(tok, '/');

		named = !strcmp(tok, "ibckpt") || (base && !strcmp(base + 1, "libibckpt"));
	}
	free(list);
	return named;
}

static void __attribute__((constructor)) ibckpt_register(void)
{
	int id;

	ibckpt_debug = getenv("IBCKPT_DEBUG") != NULL;
	ibckpt_stats_on = getenv("IBCKPT_STATS") != NULL;
	if (!ibckpt_named_first()) {
		ibckpt_dbg("not named in RDMAV_DRIVERS: not registering (see ibckpt.driver)");
		return;
	}
	if (ibckpt_abi_check())
		return;
	for (id = RDMA_DRIVER_UNKNOWN + 1; id <= RDMA_DRIVER_MANA; id++) {
		ibckpt_match_table[id - 1].kind = VERBS_MATCH_DRIVER_ID;
		ibckpt_match_table[id - 1].u.driver_id = (uint64_t)id;
	}
	ibckpt_fork_init();	/* before any device list a child could inherit */
	ibckpt_gate_setup();	/* before the application's threads, usually */
	verbs_register_driver_34(&ibckpt_dev_ops);
	ibckpt_dbg("provider %s registered (rdma-core %d)", IBCKPT_VERSION, IBCKPT_RDMA_CORE_MAJOR);
}
