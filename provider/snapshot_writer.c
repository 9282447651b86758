// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A growable buffer of snapshot records. Snapshots are built only while the
 * application is parked, never on a verbs fast path, so plain realloc growth
 * is fine here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "snapshot_writer.h"

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

static int reserve(struct snap_writer *w, size_t more)
{
	size_t cap = w->cap ? w->cap : 4096;
	unsigned char *b;

	if (w->error)
		return -1;
	if (more > IBCKPT_SNAP_MAX_LEN || w->len + more > IBCKPT_SNAP_MAX_LEN) {
		w->error = -E2BIG;
		return -1;
	}
	while (cap < w->len + more)
		cap *= 2;
	if (cap == w->cap)
		return 0;
	b = realloc(w->buf, cap);
	if (!b) {
		w->error = -ENOMEM;
		return -1;
	}
	memset(b + w->cap, 0, cap - w->cap);
	w->buf = b;
	w->cap = cap;
	return 0;
}

int snapw_init(struct snap_writer *w, uint32_t tgid, uint64_t session)
{
	struct ibckpt_snap_hdr *h;

	memset(w, 0, sizeof(*w));
	if (reserve(w, sizeof(*h)))
		return w->error;
	h = (struct ibckpt_snap_hdr *)w->buf;
	h->magic = IBCKPT_SNAP_MAGIC;
	h->version = IBCKPT_SNAP_VERSION;
	h->hdr_len = sizeof(*h);
	h->tgid = tgid;
	h->session = session;
	w->len = sizeof(*h);
	return 0;
}

void *snapw_add(struct snap_writer *w, uint16_t type, size_t len)
{
	struct ibckpt_snap_rec *r;

	if (len > UINT32_MAX || reserve(w, sizeof(*r) + ALIGN8(len)))
		return NULL;
	r = (struct ibckpt_snap_rec *)(w->buf + w->len);
	r->type = type;
	r->flags = 0;
	r->len = (uint32_t)len;
	w->len += sizeof(*r) + ALIGN8(len);
	w->n_records++;
	return r + 1;
}

struct ibckpt_snap_hdr *snapw_hdr(struct snap_writer *w)
{
	return (struct ibckpt_snap_hdr *)w->buf;
}

int snapw_finish(struct snap_writer *w)
{
	struct ibckpt_snap_hdr *h = snapw_hdr(w);

	if (w->error || !h)
		return w->error ? w->error : -ENOMEM;
	h->total_len = w->len;
	h->n_records = w->n_records;
	return 0;
}

void snapw_free(struct snap_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}
