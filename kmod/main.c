// SPDX-License-Identifier: GPL-2.0
/*
 * ibckpt.ko: freeze, thaw and checkpoint support for RDMA verbs applications.
 *
 * Two channels: /dev/ibckpt for the stacking provider's control threads
 * (chardev.c) and the generic netlink family "ibckpt" for the CLI (genl.c).
 */
#include <linux/module.h>

#include "ibckpt.h"

static int __init ibckpt_init(void)
{
	int ret;

	ret = ibckpt_chardev_init();
	if (ret)
		return ret;
	ret = ibckpt_genl_init();
	if (ret) {
		ibckpt_chardev_exit();
		return ret;
	}
	return 0;
}

static void __exit ibckpt_exit(void)
{
	ibckpt_genl_exit();
	ibckpt_chardev_exit();
}

module_init(ibckpt_init);
module_exit(ibckpt_exit);

MODULE_AUTHOR("ibckpt developers");
MODULE_DESCRIPTION("Transparent freeze/thaw/checkpoint of RDMA verbs applications");
MODULE_LICENSE("GPL");
MODULE_VERSION(IBCKPT_VERSION);
