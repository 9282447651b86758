/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CLI's generic netlink client for the "ibckpt" family (libnl-genl-3).
 */
#ifndef IBCKPT_TOOLS_NL_H
#define IBCKPT_TOOLS_NL_H

#include <netlink/attr.h>
#include <netlink/genl/genl.h>

struct ibnl {
	struct nl_sock *sk;
	int family;
	/* the extended ack's cookie of the last failed request (e.g. struct ibckpt_busy) */
	unsigned char cookie[20];
	unsigned int cookie_len;
};

/* Connect and resolve the family; on failure (unless @quiet) prints why, returns -1. */
int ibnl_open(struct ibnl *n, int quiet);
void ibnl_close(struct ibnl *n);

/* A request for @cmd (NLM_F_DUMP in @flags for dumps); add attributes to it. */
struct nl_msg *ibnl_msg(struct ibnl *n, int cmd, int flags);

/*
 * Send @msg (consumed), call @cb on each reply's attributes (indexed by
 * IBCKPT_A_*), wait for the end. Returns 0 or a negative errno from the
 * kernel, with its extended-ack message in @errmsg when it gave one.
 */
typedef int (*ibnl_cb)(struct nlattr **attrs, void *arg);
int ibnl_call(struct ibnl *n, struct nl_msg *msg, ibnl_cb cb, void *arg,
	      char *errmsg, size_t errlen);

#endif
