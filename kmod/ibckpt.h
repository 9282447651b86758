/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ibckpt.ko internals.
 */
#ifndef IBCKPT_H
#define IBCKPT_H

#include <linux/types.h>

#include "uapi/linux/ibckpt.h"
#include "uapi/linux/ibckpt_snapshot.h"

struct ibckpt_proc;

/* -DIBCKPT_VERSION="..." from kmod/Kbuild, which reads the tree's VERSION */
#ifndef IBCKPT_VERSION
#define IBCKPT_VERSION		"unknown"
#endif

int ibckpt_chardev_init(void);
void ibckpt_chardev_exit(void);
int ibckpt_quiesce_answer(struct ibckpt_proc *p, const struct ibckpt_quiesced *q);
int ibckpt_snapshot_take(struct ibckpt_proc *p, const struct ibckpt_snapshot_arg *a);
void ibckpt_quiesce_unlist(struct ibckpt_proc *p);
int ibckpt_genl_init(void);
void ibckpt_genl_exit(void);

#endif /* IBCKPT_H */
