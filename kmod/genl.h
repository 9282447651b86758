/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generic netlink family "ibckpt" (genl.c) and the commands kept in
 * files of their own (genl_snapshot.c).
 */
#ifndef IBCKPT_GENL_H
#define IBCKPT_GENL_H

#include <linux/types.h>

struct genl_family;
struct netlink_callback;
struct sk_buff;

extern struct genl_family ibckpt_genl_family;

/* genl.c */
bool ibckpt_nl_privileged(const struct sk_buff *skb);
int ibckpt_nl_dump_resolve(struct netlink_callback *cb, bool required);

/* genl_snapshot.c: SNAPSHOT_GET */
int ibckpt_nl_snapshot_start(struct netlink_callback *cb);
int ibckpt_nl_snapshot_dump(struct sk_buff *skb, struct netlink_callback *cb);

#endif /* IBCKPT_GENL_H */
