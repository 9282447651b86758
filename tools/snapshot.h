/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reading ibckpt snapshots (uapi/linux/ibckpt_snapshot.h): validation and
 * printing for `ibckpt dump`. The bytes come from a provider through the
 * module, so nothing in them is trusted before snap_validate() accepted it.
 */
#ifndef IBCKPT_TOOLS_SNAPSHOT_H
#define IBCKPT_TOOLS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/ibckpt_snapshot.h>

/*
 * snap_validate - check one process snapshot
 * Returns 0 if @buf[0..@len) is a well-formed snapshot of a version this
 * reader knows; otherwise -1 with a message in @err.
 */
int snap_validate(const void *buf, size_t len, char *err, size_t errlen);

/* Object counts of a validated snapshot, by enum ibckpt_snap_type. */
struct snap_counts {
	unsigned int n[__IBCKPT_SNAP_TYPE_MAX];
};
void snap_count(const void *buf, struct snap_counts *c);

/* Print a validated snapshot: readable text, or one JSON object. */
void snap_print_text(FILE *f, const void *buf);
void snap_print_json(FILE *f, const void *buf);
/* The same object's members, without its braces (for a caller adding its own). */
void snap_print_json_fields(FILE *f, const void *buf);

/* Walk the records of a validated snapshot. */
typedef void (*snap_rec_fn)(const struct ibckpt_snap_rec *r, const void *payload, void *arg);
void snap_foreach(const void *buf, snap_rec_fn fn, void *arg);

#endif
