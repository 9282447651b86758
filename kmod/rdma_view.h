/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RDMA core's own record of the QPs a snapshot names (ib_core lookups).
 */
#ifndef IBCKPT_RDMA_VIEW_H
#define IBCKPT_RDMA_VIEW_H

#include <linux/types.h>

#include "snap_check.h"

struct ibckpt_kview *ibckpt_rdma_view(const void *snap, size_t len, struct ibckpt_why *why);

#endif /* IBCKPT_RDMA_VIEW_H */
