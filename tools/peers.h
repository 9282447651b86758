/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Before a release: did every connected QP of the job receive everything
 * its peer sent? (tools/peers.c)
 */
#ifndef IBCKPT_TOOLS_PEERS_H
#define IBCKPT_TOOLS_PEERS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Every RC and UC QP of the snapshots at RTR or beyond must have its peer
 * among them (matched by the peer device's GID and the QPN it names), and
 * the PSN it sends next must be the one its peer expects: then every
 * request it posted and sent executed, its unsignaled ones included.
 * Memory windows in the job need every process's provider to take window
 * identities at REMAP (IBCKPT_SNAP_CAP_ID_MW in its CONTROL record).
 * @snaps: validated snapshots; @n: how many.
 * Return: 0, -1 with the reason in @why (a peer outside the job, a provider
 * too old for the job's windows), -2 if requests are in flight (a later try
 * may find them arrived).
 */
int peers_check(const void *const *snaps, unsigned int n, char *why, size_t whylen);

struct ibckpt_rpeer;

/*
 * PREPARE's payload for process @tgid: for each of its RC QPs connected to
 * a peer among @snaps, the peer QP's qp_access_flags (what a fence behind
 * its RDMA READs and atomics may use). *@out: malloc()ed, NULL if none.
 * Return: 0, or -1 without memory.
 */
int peers_access(const void *const *snaps, unsigned int n, unsigned int tgid,
		 struct ibckpt_rpeer **out, uint32_t *nout);

#endif
