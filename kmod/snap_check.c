// SPDX-License-Identifier: GPL-2.0
/*
 * A provider's snapshot, read by the kernel: the framing of every record and
 * the QPs it names, each with the device it is on; then, once rdma_view.c
 * has looked them up, whether the RDMA core agrees.
 *
 * The snapshot is user input: it was copied from the process that gave it
 * and nothing in it is believed before it was checked. Every offset is
 * checked against the length before it is read, and every reference between
 * records (QP -> PD or XRC domain -> device) is resolved through a sorted
 * index, so that a malicious snapshot costs O(n log n) at most (n <= 8 Mi
 * records in IBCKPT_SNAP_MAX_LEN bytes). The record kinds the kernel does
 * not read (WR, WC, CQ, ...) are checked for their framing and minimum size
 * only; `ibckpt dump` validates them fully before it prints one.
 *
 * No locks: the buffer is the caller's private copy.
 */
#include <linux/bsearch.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "snap_check.h"

/* enum ib_qp_type / enum ibv_qp_type (same numbers) of connected QPs */
#define IBCKPT_QPT_RC		2
#define IBCKPT_QPT_UC		3
#define IBCKPT_QPT_XRC_INI	9
#define IBCKPT_QPT_XRC_TGT	10
/* enum ib_qp_state / enum ibv_qp_state */
#define IBCKPT_QPS_RTR		2

/* The payload each record type must at least have (version 1). */
static const u32 ibckpt_snap_min_len[__IBCKPT_SNAP_TYPE_MAX] = {
	[IBCKPT_SNAP_DEVICE] = sizeof(struct ibckpt_snap_device),
	[IBCKPT_SNAP_PD] = sizeof(struct ibckpt_snap_pd),
	[IBCKPT_SNAP_MR] = sizeof(struct ibckpt_snap_mr),
	[IBCKPT_SNAP_CQ] = sizeof(struct ibckpt_snap_cq),
	[IBCKPT_SNAP_QP] = sizeof(struct ibckpt_snap_qp),
	[IBCKPT_SNAP_SRQ] = sizeof(struct ibckpt_snap_srq),
	[IBCKPT_SNAP_WR] = sizeof(struct ibckpt_snap_wr),
	[IBCKPT_SNAP_WC] = sizeof(struct ibckpt_snap_wc),
	[IBCKPT_SNAP_AH] = sizeof(struct ibckpt_snap_ah),
	[IBCKPT_SNAP_MW] = sizeof(struct ibckpt_snap_mw),
	[IBCKPT_SNAP_XRCD] = sizeof(struct ibckpt_snap_xrcd),
	[IBCKPT_SNAP_CONTROL] = sizeof(struct ibckpt_snap_control),
};

static const char *const ibckpt_snap_type_name[__IBCKPT_SNAP_TYPE_MAX] = {
	[IBCKPT_SNAP_DEVICE] = "device", [IBCKPT_SNAP_PD] = "pd", [IBCKPT_SNAP_MR] = "mr",
	[IBCKPT_SNAP_CQ] = "cq", [IBCKPT_SNAP_QP] = "qp", [IBCKPT_SNAP_SRQ] = "srq",
	[IBCKPT_SNAP_WR] = "wr", [IBCKPT_SNAP_WC] = "wc", [IBCKPT_SNAP_AH] = "ah",
	[IBCKPT_SNAP_MW] = "mw", [IBCKPT_SNAP_XRCD] = "xrcd", [IBCKPT_SNAP_CONTROL] = "control",
};

static const char *ibckpt_qp_state_name(u32 st)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return st < ARRAY_SIZE(n) ? n[st] : "unknown";
}

/*
 * An object a QP record may refer to: (type, handle) -> its payload's
 * offset. Sorted by key for bsearch().
 */
struct ibckpt_snap_ref {
	u64 key;
	u32 off;
};

static u64 ibckpt_ref_key(u32 type, u32 handle)
{
	return (u64)type << 32 | handle;
}

static int ibckpt_ref_cmp(const void *a, const void *b)
{
	const struct ibckpt_snap_ref *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static const struct ibckpt_snap_ref *ibckpt_ref_find(const struct ibckpt_snap_ref *refs,
						     u32 n, u32 type, u32 handle)
{
	struct ibckpt_snap_ref want = { .key = ibckpt_ref_key(type, handle) };

	return bsearch(&want, refs, n, sizeof(*refs), ibckpt_ref_cmp);
}

/* The handle a referable record is known by; the DEVICE, PD and XRCD records. */
static bool ibckpt_referable(u32 type)
{
	return type == IBCKPT_SNAP_DEVICE || type == IBCKPT_SNAP_PD || type == IBCKPT_SNAP_XRCD;
}

/* Every referable payload starts with its u32 handle. */
static u32 ibckpt_ref_handle(const void *payload)
{
	return *(const u32 *)payload;
}

/*
 * First pass: the header and the framing of every record; counts the QPs
 * and the referable records. 0, or -EINVAL with @why.
 */
static int ibckpt_snap_frame(const u8 *p, size_t len, u32 *nqp, u32 *nref, bool *released,
			     char *why)
{
	const struct ibckpt_snap_hdr *h = (const void *)p;
	const struct ibckpt_snap_rec *r;
	const struct ibckpt_snap_device *d;
	const struct ibckpt_snap_control *c;
	size_t off;
	u32 i;

	*nqp = 0;
	*nref = 0;
	*released = false;
	if (len < sizeof(*h) || len > IBCKPT_SNAP_MAX_LEN) {
		snprintf(why, IBCKPT_WHY_LEN, "snapshot of %zu bytes", len);
		return -EINVAL;
	}
	if (h->magic != IBCKPT_SNAP_MAGIC || h->version != IBCKPT_SNAP_VERSION) {
		snprintf(why, IBCKPT_WHY_LEN, "not a version %u snapshot", IBCKPT_SNAP_VERSION);
		return -EINVAL;
	}
	if (h->hdr_len < sizeof(*h) || h->hdr_len % 8 || h->hdr_len > len ||
	    h->total_len != len) {
		snprintf(why, IBCKPT_WHY_LEN, "bad snapshot header (header %u bytes, total %llu)",
			 h->hdr_len, (unsigned long long)h->total_len);
		return -EINVAL;
	}
	off = h->hdr_len;
	for (i = 0; i < h->n_records; i++) {
		if (len - off < sizeof(*r)) {
			snprintf(why, IBCKPT_WHY_LEN, "record %u: truncated header", i);
			return -EINVAL;
		}
		r = (const void *)(p + off);
		off += sizeof(*r);
		if (r->len > len - off) {
			snprintf(why, IBCKPT_WHY_LEN, "record %u: length %u runs past the end",
				 i, r->len);
			return -EINVAL;
		}
		if (!r->type || r->type >= __IBCKPT_SNAP_TYPE_MAX) {
			snprintf(why, IBCKPT_WHY_LEN, "record %u: unknown type %u", i, r->type);
			return -EINVAL;
		}
		if (r->len < ibckpt_snap_min_len[r->type]) {
			snprintf(why, IBCKPT_WHY_LEN, "record %u (%s): %u bytes, needs %u", i,
				 ibckpt_snap_type_name[r->type], r->len,
				 ibckpt_snap_min_len[r->type]);
			return -EINVAL;
		}
		switch (r->type) {
		case IBCKPT_SNAP_DEVICE:
			d = (const void *)(p + off);
			if (!d->name[0] || !memchr(d->name, 0, sizeof(d->name))) {
				snprintf(why, IBCKPT_WHY_LEN, "record %u (device): bad name", i);
				return -EINVAL;
			}
			break;
		case IBCKPT_SNAP_QP:
			(*nqp)++;
			break;
		case IBCKPT_SNAP_CONTROL:
			c = (const void *)(p + off);
			*released |= c->released != 0;
			break;
		}
		if (ibckpt_referable(r->type))
			(*nref)++;
		if (ALIGN((size_t)r->len, 8) > len - off) {
			snprintf(why, IBCKPT_WHY_LEN, "record %u: padding runs past the end", i);
			return -EINVAL;
		}
		off += ALIGN((size_t)r->len, 8);
		if (!(i % 4096))
			cond_resched();
	}
	if (off != len) {
		snprintf(why, IBCKPT_WHY_LEN, "%zu bytes after the last record", len - off);
		return -EINVAL;
	}
	return 0;
}

/*
 * Second pass, over records the first accepted: the index of referable
 * records and the QPs' offsets.
 */
static void ibckpt_snap_collect(const u8 *p, struct ibckpt_snap_ref *refs,
				struct ibckpt_kview *kv)
{
	const struct ibckpt_snap_hdr *h = (const void *)p;
	const struct ibckpt_snap_rec *r;
	u32 i, nref = 0, nqp = 0;
	size_t off = h->hdr_len;

	for (i = 0; i < h->n_records; i++) {
		r = (const void *)(p + off);
		off += sizeof(*r);
		if (ibckpt_referable(r->type)) {
			refs[nref].key = ibckpt_ref_key(r->type, ibckpt_ref_handle(p + off));
			refs[nref++].off = off;
		} else if (r->type == IBCKPT_SNAP_QP) {
			kv->qp[nqp++].qp_off = off;
		}
		off += ALIGN((size_t)r->len, 8);
	}
}

/* The device a QP record is on: through its PD, or its XRC domain. */
static int ibckpt_snap_qp_device(const u8 *p, const struct ibckpt_snap_ref *refs, u32 nref,
				 struct ibckpt_kqp *k, char *why)
{
	const struct ibckpt_snap_qp *q = (const void *)(p + k->qp_off);
	const struct ibckpt_snap_ref *ref;
	u32 dev;

	if (q->pd) {
		ref = ibckpt_ref_find(refs, nref, IBCKPT_SNAP_PD, q->pd);
		if (!ref) {
			snprintf(why, IBCKPT_WHY_LEN,
				 "QP %#x (handle %u): no PD %u in the snapshot",
				 q->qpn, q->handle, q->pd);
			return -EINVAL;
		}
		dev = ((const struct ibckpt_snap_pd *)(p + ref->off))->device;
	} else if (q->xrcd) {
		ref = ibckpt_ref_find(refs, nref, IBCKPT_SNAP_XRCD, q->xrcd);
		if (!ref) {
			snprintf(why, IBCKPT_WHY_LEN,
				 "QP %#x (handle %u): no XRC domain %u in the snapshot",
				 q->qpn, q->handle, q->xrcd);
			return -EINVAL;
		}
		dev = ((const struct ibckpt_snap_xrcd *)(p + ref->off))->device;
	} else {
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x (handle %u): neither a PD nor an XRC domain",
			 q->qpn, q->handle);
		return -EINVAL;
	}
	ref = ibckpt_ref_find(refs, nref, IBCKPT_SNAP_DEVICE, dev);
	if (!ref) {
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x (handle %u): no device %u in the snapshot",
			 q->qpn, q->handle, dev);
		return -EINVAL;
	}
	k->dev_off = ref->off;
	return 0;
}

/**
 * ibckpt_snap_parse() - check a snapshot's framing and list the QPs it names
 * @buf: the snapshot (a private copy: the caller's, unchanged while parsed)
 * @len: its length
 * @why: IBCKPT_WHY_LEN bytes: the reason, when refused
 *
 * Checks the header (magic, version, header and total length), that every
 * record lies within @len with its padding, is of a known type and at least
 * as long as its structure, that device names are terminated, that no two
 * devices, PDs or XRC domains share a handle, and that every QP's PD (or XRC
 * domain, for an XRC target) and that one's device are in the snapshot.
 *
 * Context: process context, may sleep (allocates, charged to the caller's
 * memory cgroup).
 * Return: the QPs, each with its device, not looked up yet; ERR_PTR(-EINVAL)
 * for a malformed snapshot (@why says what), ERR_PTR(-ENOMEM).
 */
struct ibckpt_kview *ibckpt_snap_parse(const void *buf, size_t len, char *why)
{
	struct ibckpt_snap_ref *refs = NULL;
	struct ibckpt_kview *kv;
	const u8 *p = buf;
	u32 nqp, nref, i;
	bool released;
	int ret;

	ret = ibckpt_snap_frame(p, len, &nqp, &nref, &released, why);
	if (ret)
		return ERR_PTR(ret);
	kv = kvzalloc(struct_size(kv, qp, nqp), GFP_KERNEL_ACCOUNT);
	if (nref)
		refs = kvmalloc_array(nref, sizeof(*refs), GFP_KERNEL_ACCOUNT);
	if (!kv || (nref && !refs)) {
		ret = -ENOMEM;
		goto err;
	}
	kv->n = nqp;
	kv->released = released;
	ibckpt_snap_collect(p, refs, kv);
	sort(refs, nref, sizeof(*refs), ibckpt_ref_cmp, NULL);
	for (i = 1; i < nref; i++) {
		if (refs[i].key == refs[i - 1].key) {
			snprintf(why, IBCKPT_WHY_LEN, "two %s records with handle %u",
				 ibckpt_snap_type_name[refs[i].key >> 32], (u32)refs[i].key);
			ret = -EINVAL;
			goto err;
		}
	}
	for (i = 0; i < nqp; i++) {
		ret = ibckpt_snap_qp_device(p, refs, nref, &kv->qp[i], why);
		if (ret)
			goto err;
	}
	kvfree(refs);
	return kv;
err:
	kvfree(refs);
	kvfree(kv);
	return ERR_PTR(ret);
}

/**
 * ibckpt_kview_free() - free a kernel view and the references it holds
 * @kv: the view, or NULL
 */
void ibckpt_kview_free(struct ibckpt_kview *kv)
{
	u32 i;

	if (!kv)
		return;
	for (i = 0; i < kv->n; i++)
		put_pid(kv->qp[i].owner);
	kvfree(kv);
}

static bool ibckpt_qpt_connected(u32 type)
{
	return type == IBCKPT_QPT_RC || type == IBCKPT_QPT_UC ||
	       type == IBCKPT_QPT_XRC_INI || type == IBCKPT_QPT_XRC_TGT;
}

/**
 * ibckpt_kqp_compare() - does the RDMA core agree with a QP of the snapshot?
 * @snap: the snapshot the view was parsed from
 * @k: one QP of the view, looked up
 * @why: IBCKPT_WHY_LEN bytes: the disagreement, naming the QP
 *
 * The QP must exist on its device, be a user QP created by the process
 * itself (an XRC target it opened with ibv_open_qp() belongs to its
 * creator: only its existence and type are checked), and have the
 * snapshot's type; if the driver could be queried, also its state and, for a
 * connected QP past INIT, its destination QPN. The PSNs are recorded, not
 * compared: they move by themselves while the process is quiesced (the
 * peer's sends arrive, posted sends leave).
 *
 * Return: 0 if they agree, -EPROTO with @why if not.
 */
int ibckpt_kqp_compare(const void *snap, const struct ibckpt_kqp *k, char *why)
{
	const struct ibckpt_snap_qp *q = ibckpt_kqp_rec(snap, k);
	const char *dev = ibckpt_kqp_dev(snap, k);

	switch (k->found) {
	case IBCKPT_KQP_FOUND:
		break;
	case IBCKPT_KQP_NO_DEVICE:
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x on %s: no such RDMA device", q->qpn, dev);
		return -EPROTO;
	case IBCKPT_KQP_NO_QP:
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x on %s: no such QP", q->qpn, dev);
		return -EPROTO;
	default:
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x on %s: not looked up", q->qpn, dev);
		return -EPROTO;
	}
	if (k->kernel) {
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x on %s: a kernel QP, not the process's",
			 q->qpn, dev);
		return -EPROTO;
	}
	if (!k->mine && !q->opened) {
		snprintf(why, IBCKPT_WHY_LEN, "QP %#x on %s: another process's QP", q->qpn, dev);
		return -EPROTO;
	}
	if (k->type != q->qp_type) {
		snprintf(why, IBCKPT_WHY_LEN,
			 "QP %#x on %s: type %u in the snapshot, %u in the kernel",
			 q->qpn, dev, q->qp_type, k->type);
		return -EPROTO;
	}
	if (k->query_err)
		return 0;
	if (k->state != q->state) {
		snprintf(why, IBCKPT_WHY_LEN,
			 "QP %#x on %s: state %s in the snapshot, %s in the kernel", q->qpn, dev,
			 ibckpt_qp_state_name(q->state), ibckpt_qp_state_name(k->state));
		return -EPROTO;
	}
	if (ibckpt_qpt_connected(k->type) && k->state >= IBCKPT_QPS_RTR &&
	    k->dest_qpn != q->dest_qpn) {
		snprintf(why, IBCKPT_WHY_LEN,
			 "QP %#x on %s: destination QPN %#x in the snapshot, %#x in the kernel",
			 q->qpn, dev, q->dest_qpn, k->dest_qpn);
		return -EPROTO;
	}
	return 0;
}
