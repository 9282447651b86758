// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Message contents. A payload is a pure function of (QP, seq), so a receiver
 * can tell a corrupted message (checksum) from a misdelivered or replayed one
 * (header fields, pattern) without keeping copies of what was sent.
 */
#include <string.h>
#include "traffic.h"

uint64_t tfnv1a(const void *p, size_t len, uint64_t h)
{
	const uint8_t *b = p;

	while (len--) {
		h ^= *b++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void pattern(uint8_t *p, size_t len, uint64_t seed)
{
	while (len) {
		uint64_t r = splitmix(&seed);
		size_t n = len < 8 ? len : 8;

		memcpy(p, &r, n);
		p += n;
		len -= n;
	}
}

static uint64_t sum_of(const struct tmsg *m)
{
	struct tmsg h = *m;

	h.sum = 0;
	return tfnv1a(m + 1, m->len, tfnv1a(&h, sizeof(h), 0xcbf29ce484222325ull));
}

void tmsg_fill(struct tmsg *m, uint32_t magic, int qp, uint64_t seq, int len)
{
	memset(m, 0, sizeof(*m));
	m->magic = magic;
	m->qp = (uint16_t)qp;
	m->len = (uint16_t)len;
	m->seq = seq;
	pattern((uint8_t *)(m + 1), (size_t)len, ((uint64_t)qp << 48) ^ seq ^ magic);
	tmsg_seal(m);
}

void tmsg_seal(struct tmsg *m)
{
	m->sum = sum_of(m);
}

/*
 * Returns 0 if @m is the intact message (@magic, @qp, @seq), or a negative
 * code naming what is wrong (for the error message).
 */
int tmsg_check(const struct tmsg *m, uint32_t magic, int qp, uint64_t seq, size_t room)
{
	uint8_t expect[65536];

	if (m->magic != magic)
		return -1;
	if (sizeof(*m) + m->len > room)
		return -2;
	if (m->sum != sum_of(m))
		return -3;
	if (m->qp != qp)
		return -4;
	if (m->seq != seq)
		return m->seq < seq ? -5 : -6;	/* duplicate : lost */
	pattern(expect, m->len, ((uint64_t)qp << 48) ^ seq ^ magic);
	if (memcmp(expect, m + 1, m->len))
		return -7;
	return 0;
}

void tread_pattern(uint8_t *p, int qp, size_t len)
{
	pattern(p, len, 0x5245414400000000ull ^ (uint64_t)qp);
}
