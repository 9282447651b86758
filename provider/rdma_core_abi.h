/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The part of rdma-core 44's private provider ABI (libibverbs/driver.h,
 * symbol version IBVERBS_PRIVATE_34) that ibckpt uses. Debian does not install
 * driver.h, so these are our own declarations, checked field by field against
 * the v44.0 sources; the static asserts pin the layout we rely on. A build
 * against another rdma-core is refused by the Makefile, a load into another
 * libibverbs by ibckpt_abi_check().
 */
#ifndef IBCKPT_RDMA_CORE_ABI_H
#define IBCKPT_RDMA_CORE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define IBCKPT_RDMA_CORE_MAJOR 44

struct verbs_sysfs_dev;		/* opaque: we never look inside */
struct verbs_context;
struct verbs_device;

/* enum in driver.h: kinds of verbs_match_ent */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd,
					       void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* IBVERBS_PRIVATE_34: what a provider's constructor calls. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

_Static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent layout (rdma-core 44)");
_Static_assert(offsetof(struct verbs_match_ent, kind) == 20, "verbs_match_ent.kind");
_Static_assert(offsetof(struct verbs_device_ops, match_table) == 16, "ops.match_table");
_Static_assert(offsetof(struct verbs_device_ops, match_device) == 32, "ops.match_device");
_Static_assert(offsetof(struct verbs_device_ops, alloc_device) == 56, "ops.alloc_device");
_Static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops layout (rdma-core 44)");

#endif
