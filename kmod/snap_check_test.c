// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the kernel reads a provider's snapshot (user input) without
 * trusting it: every malformation is refused with a reason and nothing is
 * read out of bounds (every truncation and byte of a snapshot is tried); the
 * QPs it names are resolved to their device through their PD or XRC domain;
 * and the comparison with the RDMA core's record names the QP and what
 * differs, or accepts what may legitimately differ.
 */
#include <kunit/test.h>
#include <linux/err.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "snap_check.h"

/* A snapshot under construction. */
struct tsnap {
	u8 b[1024];
	size_t len;
};

static struct ibckpt_snap_hdr *tsnap_init(struct tsnap *s)
{
	struct ibckpt_snap_hdr *h = (void *)s->b;

	memset(s, 0, sizeof(*s));
	h->magic = IBCKPT_SNAP_MAGIC;
	h->version = IBCKPT_SNAP_VERSION;
	h->hdr_len = sizeof(*h);
	h->session = 7;
	s->len = sizeof(*h);
	h->total_len = s->len;
	return h;
}

static void *tsnap_add(struct tsnap *s, u16 type, u32 len)
{
	struct ibckpt_snap_hdr *h = (void *)s->b;
	struct ibckpt_snap_rec *r = (void *)(s->b + s->len);

	r->type = type;
	r->len = len;
	s->len += sizeof(*r) + ALIGN(len, 8);
	h->n_records++;
	h->total_len = s->len;
	return r + 1;
}

static void tsnap_device(struct tsnap *s, u32 handle, const char *name)
{
	struct ibckpt_snap_device *d = tsnap_add(s, IBCKPT_SNAP_DEVICE, sizeof(*d));

	d->handle = handle;
	strscpy(d->name, name, sizeof(d->name));
}

static void tsnap_pd(struct tsnap *s, u32 handle, u32 device)
{
	struct ibckpt_snap_pd *p = tsnap_add(s, IBCKPT_SNAP_PD, sizeof(*p));

	p->handle = handle;
	p->device = device;
}

static struct ibckpt_snap_qp *tsnap_qp(struct tsnap *s, u32 handle, u32 pd, u32 qpn)
{
	struct ibckpt_snap_qp *q = tsnap_add(s, IBCKPT_SNAP_QP, sizeof(*q));

	q->handle = handle;
	q->pd = pd;
	q->qpn = qpn;
	q->vqpn = qpn;
	q->qp_type = 2;		/* RC */
	q->state = 3;		/* RTS */
	q->dest_qpn = 0x99;
	return q;
}

/* Two devices, a PD on each, an RC QP in each PD, an XRC target on the second. */
static void tsnap_two_devices(struct tsnap *s)
{
	struct ibckpt_snap_xrcd *x;
	struct ibckpt_snap_qp *q;

	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	tsnap_pd(s, 2, 1);
	tsnap_qp(s, 3, 2, 0x11);
	tsnap_device(s, 4, "rxe1");
	tsnap_pd(s, 5, 4);
	tsnap_qp(s, 6, 5, 0x11);	/* QPNs are per device */
	x = tsnap_add(s, IBCKPT_SNAP_XRCD, sizeof(*x));
	x->handle = 7;
	x->device = 4;
	q = tsnap_qp(s, 8, 0, 0x12);
	q->xrcd = 7;
	q->qp_type = 10;	/* XRC target: no PD */
	tsnap_add(s, IBCKPT_SNAP_WC, sizeof(struct ibckpt_snap_wc));	/* not read */
}

static void parse_resolves_devices(struct kunit *test)
{
	char why[IBCKPT_WHY_LEN] = "";
	struct ibckpt_kview *kv;
	struct tsnap *s;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	tsnap_two_devices(s);
	kv = ibckpt_snap_parse(s->b, s->len, why);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(kv), "refused: %s", why);
	KUNIT_EXPECT_FALSE(test, kv->released);
	KUNIT_ASSERT_EQ(test, kv->n, 3U);
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_rec(s->b, &kv->qp[0])->handle, 3U);
	KUNIT_EXPECT_STREQ(test, ibckpt_kqp_dev(s->b, &kv->qp[0]), "rxe0");
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_rec(s->b, &kv->qp[1])->handle, 6U);
	KUNIT_EXPECT_STREQ(test, ibckpt_kqp_dev(s->b, &kv->qp[1]), "rxe1");
	KUNIT_EXPECT_STREQ(test, ibckpt_kqp_dev(s->b, &kv->qp[2]), "rxe1");
	KUNIT_EXPECT_EQ(test, kv->qp[0].found, IBCKPT_KQP_UNCHECKED);
	ibckpt_kview_free(kv);
}

static void parse_empty_and_released(struct kunit *test)
{
	char why[IBCKPT_WHY_LEN] = "";
	struct ibckpt_snap_control *c;
	struct ibckpt_kview *kv;
	struct tsnap *s;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	tsnap_init(s);		/* regtest's: a header, no record */
	kv = ibckpt_snap_parse(s->b, s->len, why);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(kv), "refused: %s", why);
	KUNIT_EXPECT_EQ(test, kv->n, 0U);
	ibckpt_kview_free(kv);

	tsnap_two_devices(s);
	c = tsnap_add(s, IBCKPT_SNAP_CONTROL, sizeof(*c));
	c->released = 1;
	kv = ibckpt_snap_parse(s->b, s->len, why);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(kv), "refused: %s", why);
	KUNIT_EXPECT_TRUE(test, kv->released);
	ibckpt_kview_free(kv);
}

/* @s must be refused with a reason that starts with @want. */
static void expect_refused(struct kunit *test, struct tsnap *s, size_t len, const char *want)
{
	char why[IBCKPT_WHY_LEN] = "";
	struct ibckpt_kview *kv;

	kv = ibckpt_snap_parse(s->b, len, why);
	KUNIT_ASSERT_TRUE_MSG(test, IS_ERR(kv), "accepted, expected: %s", want);
	KUNIT_EXPECT_EQ(test, PTR_ERR(kv), -EINVAL);
	KUNIT_EXPECT_TRUE_MSG(test, !strncmp(why, want, strlen(want)),
			      "reason '%s', expected '%s'", why, want);
}

static void parse_refuses_malformed(struct kunit *test)
{
	struct ibckpt_snap_hdr *h;
	struct ibckpt_snap_rec *r;
	struct ibckpt_snap_qp *q;
	struct tsnap *s;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);

	h = tsnap_init(s);
	h->version = 2;
	expect_refused(test, s, s->len, "not a version 1 snapshot");
	h = tsnap_init(s);
	h->hdr_len = sizeof(*h) + 4;
	expect_refused(test, s, s->len, "bad snapshot header");
	h = tsnap_init(s);
	h->total_len = 4096;
	expect_refused(test, s, s->len, "bad snapshot header");
	expect_refused(test, s, 8, "snapshot of 8 bytes");

	h = tsnap_init(s);
	h->n_records = 1;
	expect_refused(test, s, s->len, "record 0: truncated header");

	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	r = (void *)(s->b + sizeof(*h));
	r->len = 4000;
	expect_refused(test, s, s->len, "record 0: length 4000 runs past the end");
	r->len = sizeof(struct ibckpt_snap_device);
	r->type = __IBCKPT_SNAP_TYPE_MAX;
	expect_refused(test, s, s->len, "record 0: unknown type");
	r->type = 0;
	expect_refused(test, s, s->len, "record 0: unknown type 0");
	r->type = IBCKPT_SNAP_QP;	/* a device's 96 bytes are too few for a QP */
	expect_refused(test, s, s->len, "record 0 (qp): 96 bytes, needs");

	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	memset(((struct ibckpt_snap_device *)(r + 1))->name, 'x', 64);
	expect_refused(test, s, s->len, "record 0 (device): bad name");
	((struct ibckpt_snap_device *)(r + 1))->name[0] = '\0';
	expect_refused(test, s, s->len, "record 0 (device): bad name");

	tsnap_init(s);
	tsnap_add(s, IBCKPT_SNAP_PD, 5);
	expect_refused(test, s, s->len, "record 0 (pd): 5 bytes, needs 8");
	h = tsnap_init(s);
	tsnap_add(s, IBCKPT_SNAP_XRCD, 17);	/* its payload is there, not its padding */
	h->total_len -= 3;
	expect_refused(test, s, s->len - 3, "record 0: padding runs past the end");

	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	h = (void *)s->b;
	h->total_len += 8;
	expect_refused(test, s, s->len + 8, "8 bytes after the last record");

	/* references: a PD that is not there, a device that is not there */
	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	tsnap_qp(s, 3, 2, 0x11);
	expect_refused(test, s, s->len, "QP 0x11 (handle 3): no PD 2 in the snapshot");
	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	tsnap_pd(s, 2, 9);
	tsnap_qp(s, 3, 2, 0x11);
	expect_refused(test, s, s->len, "QP 0x11 (handle 3): no device 9 in the snapshot");
	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	q = tsnap_qp(s, 3, 0, 0x11);
	expect_refused(test, s, s->len, "QP 0x11 (handle 3): neither a PD nor an XRC domain");
	q->xrcd = 4;
	expect_refused(test, s, s->len, "QP 0x11 (handle 3): no XRC domain 4 in the snapshot");
	/* two PDs with one handle: which device would the QP be on? */
	tsnap_init(s);
	tsnap_device(s, 1, "rxe0");
	tsnap_device(s, 4, "rxe1");
	tsnap_pd(s, 2, 1);
	tsnap_pd(s, 2, 4);
	tsnap_qp(s, 3, 2, 0x11);
	expect_refused(test, s, s->len, "two pd records with handle 2");
}

/*
 * Every prefix of a valid snapshot, and every byte of it changed, is either
 * accepted or refused with a reason: never read past its end (KASAN, where
 * enabled, would say), never a QP without a terminated device name.
 */
static void parse_survives_every_cut_and_flip(struct kunit *test)
{
	char why[IBCKPT_WHY_LEN];
	struct ibckpt_kview *kv;
	struct tsnap *s, *t;
	size_t len, i;
	u8 *copy;
	u32 k;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_ASSERT_NOT_NULL(test, t);
	tsnap_two_devices(s);
	for (len = 0; len < s->len; len++) {
		/* a copy exactly @len long, so that an overread leaves the buffer */
		copy = kmemdup(s->b, len ? len : 1, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, copy);
		why[0] = '\0';
		kv = ibckpt_snap_parse(copy, len, why);
		KUNIT_EXPECT_TRUE_MSG(test, IS_ERR(kv), "a %zu-byte prefix was accepted", len);
		if (IS_ERR(kv))
			KUNIT_EXPECT_NE(test, why[0], '\0');
		else
			ibckpt_kview_free(kv);
		kfree(copy);
	}
	for (i = 0; i < s->len; i++) {
		static const u8 vals[] = { 0x00, 0x01, 0x07, 0x80, 0xff };

		for (k = 0; k < ARRAY_SIZE(vals); k++) {
			*t = *s;
			t->b[i] = vals[k];
			copy = kmemdup(t->b, s->len, GFP_KERNEL);
			KUNIT_ASSERT_NOT_NULL(test, copy);
			why[0] = '\0';
			kv = ibckpt_snap_parse(copy, s->len, why);
			if (IS_ERR(kv)) {
				KUNIT_EXPECT_EQ(test, PTR_ERR(kv), -EINVAL);
				KUNIT_EXPECT_NE(test, why[0], '\0');
			} else {
				for (len = 0; len < kv->n; len++)
					KUNIT_EXPECT_LT(test,
							strnlen(ibckpt_kqp_dev(copy, &kv->qp[len]),
								64), (size_t)64);
				ibckpt_kview_free(kv);
			}
			kfree(copy);
		}
	}
}

/* The QP @k names, as the RDMA core records it when all agrees. */
static void kqp_agrees(struct ibckpt_kqp *k)
{
	k->found = IBCKPT_KQP_FOUND;
	k->kernel = false;
	k->mine = true;
	k->type = 2;
	k->port = 1;
	k->query_err = 0;
	k->state = 3;
	k->dest_qpn = 0x99;
	k->sq_psn = 0x123;	/* PSNs move: never compared */
	k->rq_psn = 0x456;
}

static void expect_mismatch(struct kunit *test, const void *snap, const struct ibckpt_kqp *k,
			    const char *want)
{
	char why[IBCKPT_WHY_LEN] = "";

	KUNIT_EXPECT_EQ(test, ibckpt_kqp_compare(snap, k, why), -EPROTO);
	KUNIT_EXPECT_STREQ(test, why, want);
}

static void compare_names_the_qp(struct kunit *test)
{
	char why[IBCKPT_WHY_LEN] = "";
	struct ibckpt_snap_qp *q;
	struct ibckpt_kview *kv;
	struct ibckpt_kqp *k;
	struct tsnap *s;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	tsnap_two_devices(s);
	kv = ibckpt_snap_parse(s->b, s->len, why);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(kv), "refused: %s", why);
	k = &kv->qp[1];
	q = (struct ibckpt_snap_qp *)ibckpt_kqp_rec(s->b, k);

	expect_mismatch(test, s->b, k, "QP 0x11 on rxe1: not looked up");
	kqp_agrees(k);
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_compare(s->b, k, why), 0);

	k->found = IBCKPT_KQP_NO_DEVICE;
	expect_mismatch(test, s->b, k, "QP 0x11 on rxe1: no such RDMA device");
	k->found = IBCKPT_KQP_NO_QP;
	expect_mismatch(test, s->b, k, "QP 0x11 on rxe1: no such QP");
	kqp_agrees(k);
	k->kernel = true;
	k->mine = false;
	expect_mismatch(test, s->b, k, "QP 0x11 on rxe1: a kernel QP, not the process's");
	kqp_agrees(k);
	k->mine = false;
	expect_mismatch(test, s->b, k, "QP 0x11 on rxe1: another process's QP");
	kqp_agrees(k);
	k->type = 4;
	expect_mismatch(test, s->b, k, "QP 0x11 on rxe1: type 2 in the snapshot, 4 in the kernel");
	kqp_agrees(k);
	k->state = 6;
	expect_mismatch(test, s->b, k,
			"QP 0x11 on rxe1: state RTS in the snapshot, ERR in the kernel");
	kqp_agrees(k);
	k->dest_qpn = 0x98;
	expect_mismatch(test, s->b, k,
			"QP 0x11 on rxe1: destination QPN 0x99 in the snapshot, 0x98 in the kernel");

	/* before RTR, a connected QP has no destination yet */
	kqp_agrees(k);
	k->dest_qpn = 0;
	k->state = 1;
	q->state = 1;
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_compare(s->b, k, why), 0);
	/* nor has a UD QP, ever */
	kqp_agrees(k);
	q->state = 3;
	q->qp_type = 4;
	k->type = 4;
	k->dest_qpn = 0;
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_compare(s->b, k, why), 0);
	/* a driver that cannot be queried: only existence, owner and type */
	kqp_agrees(k);
	q->qp_type = 2;
	k->query_err = EOPNOTSUPP;
	k->state = 0;
	k->dest_qpn = 0;
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_compare(s->b, k, why), 0);

	/* an XRC target the process opened belongs to the one that created it */
	k = &kv->qp[2];
	q = (struct ibckpt_snap_qp *)ibckpt_kqp_rec(s->b, k);
	kqp_agrees(k);
	k->type = 10;
	k->dest_qpn = 0;
	q->dest_qpn = 0;
	k->mine = false;
	expect_mismatch(test, s->b, k, "QP 0x12 on rxe1: another process's QP");
	q->opened = 1;
	KUNIT_EXPECT_EQ(test, ibckpt_kqp_compare(s->b, k, why), 0);
	ibckpt_kview_free(kv);
}

static struct kunit_case ibckpt_snap_cases[] = {
	KUNIT_CASE(parse_resolves_devices),
	KUNIT_CASE(parse_empty_and_released),
	KUNIT_CASE(parse_refuses_malformed),
	KUNIT_CASE(parse_survives_every_cut_and_flip),
	KUNIT_CASE(compare_names_the_qp),
	{}
};

static struct kunit_suite ibckpt_snap_suite = {
	.name = "ibckpt_snap",
	.test_cases = ibckpt_snap_cases,
};

kunit_test_suite(ibckpt_snap_suite);
