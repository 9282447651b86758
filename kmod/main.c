// SPDX-License-Identifier: GPL-2.0
/*
 * ibckpt.ko: freeze, thaw and checkpoint support for RDMA verbs applications.
 *
 * Two channels: /dev/ibckpt for the stacking provider's control threads
 * (chardev.c) and the generic netlink family "ibckpt" for the CLI (genl.c).
 */
#include <linux/module.h>

#include "creds.h"
#include "ibckpt.h"
#include "session.h"

static int __init ibckpt_init(void)
{
	int ret;

	ret = ibckpt_sessions_init();
	if (ret)
		return ret;
	ret = ibckpt_chardev_init();
	if (ret)
		goto err_sessions;
	ret = ibckpt_genl_init();
	if (ret)
		goto err_chardev;
	return 0;

err_chardev:
	ibckpt_chardev_exit();
err_sessions:
	ibckpt_sessions_exit();
	return ret;
}

/*
 * No new request can arrive once the family is gone; then thaw everything.
 * Last, the ends of the credential switches' callbacks (creds.c).
 */
static void __exit ibckpt_exit(void)
{
	ibckpt_genl_exit();
	ibckpt_sessions_exit();
	ibckpt_chardev_exit();
	ibckpt_creds_exit();
}

module_init(ibckpt_init);
module_exit(ibckpt_exit);

MODULE_AUTHOR("ibckpt developers");
MODULE_DESCRIPTION("Transparent freeze/thaw/checkpoint of RDMA verbs applications");
MODULE_LICENSE("GPL");
MODULE_VERSION(IBCKPT_VERSION);
