/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building an ibckpt snapshot (uapi/linux/ibckpt_snapshot.h) in memory.
 * Used by the provider's control thread when it reports a quiesced process,
 * and by the tests that feed the readers.
 */
#ifndef IBCKPT_SNAPSHOT_WRITER_H
#define IBCKPT_SNAPSHOT_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/ibckpt_snapshot.h>

struct snap_writer {
	unsigned char *buf;
	size_t len;
	size_t cap;
	uint32_t n_records;
	int error;		/* sticky: set on the first failed allocation */
};

int snapw_init(struct snap_writer *w, uint32_t tgid, uint64_t session);

/*
 * snapw_add - append a record of @type with @len payload bytes, zeroed
 * Returns the payload, valid until the next snapw_add(), or NULL once an
 * allocation failed (the error sticks; snapw_finish() reports it).
 */
void *snapw_add(struct snap_writer *w, uint16_t type, size_t len);

/* The header, for fields other than those snapw_finish() sets. */
struct ibckpt_snap_hdr *snapw_hdr(struct snap_writer *w);

/* Seal the header (length, record count); returns 0 or -ENOMEM. */
int snapw_finish(struct snap_writer *w);

void snapw_free(struct snap_writer *w);

#endif
