/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One credentials object for a process's threads again (creds.c).
 */
#ifndef IBCKPT_CREDS_H
#define IBCKPT_CREDS_H

#include <linux/types.h>

struct cred;
struct ibckpt_share_creds;

bool ibckpt_creds_same(const struct cred *a, u32 secid_a,
		       const struct cred *b, u32 secid_b);
int ibckpt_creds_share(struct ibckpt_share_creds *res);
void ibckpt_creds_exit(void);

#endif /* IBCKPT_CREDS_H */
