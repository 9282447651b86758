// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Private completion queue: see vcq.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vcq.h"

int ibckpt_vcq_init(struct ibckpt_vcq *q, uint32_t cqe)
{
	uint32_t size = 1;

	while (size < cqe && size < (1u << 30))
		size <<= 1;
	memset(q, 0, sizeof(*q));
	q->wc = calloc(size, sizeof(*q->wc));
	if (!q->wc)
		return ENOMEM;
	q->size = size;
	return 0;
}

void ibckpt_vcq_destroy(struct ibckpt_vcq *q)
{
	free(q->wc);
	q->wc = NULL;
	q->size = 0;
}

int ibckpt_vcq_push(struct ibckpt_vcq *q, const struct ibv_wc *wc, uint32_t n)
{
	uint32_t i;

	if (n > q->size - ibckpt_vcq_count(q))
		return ENOSPC;
	for (i = 0; i < n; i++)
		q->wc[(q->tail + i) & (q->size - 1)] = wc[i];
	q->tail += n;
	return 0;
}

uint32_t ibckpt_vcq_pop(struct ibckpt_vcq *q, struct ibv_wc *wc, uint32_t n)
{
	uint32_t i, have = ibckpt_vcq_count(q);

	if (n > have)
		n = have;
	for (i = 0; i < n; i++)
		wc[i] = q->wc[(q->head + i) & (q->size - 1)];
	q->head += n;
	return n;
}

void ibckpt_vcq_replace(struct ibckpt_vcq *q, struct ibckpt_vcq *bigger)
{
	uint32_t n = ibckpt_vcq_count(q);

	ibckpt_vcq_pop(q, bigger->wc, n);
	bigger->head = 0;
	bigger->tail = n;
	free(q->wc);
	*q = *bigger;
}

int ibckpt_vcq_grow(struct ibckpt_vcq *q)
{
	struct ibckpt_vcq bigger;

	if (q->size >= (1u << 30) || ibckpt_vcq_init(&bigger, q->size * 2))
		return ENOMEM;
	ibckpt_vcq_replace(q, &bigger);
	return 0;
}

const struct ibv_wc *ibckpt_vcq_at(const struct ibckpt_vcq *q, uint32_t i)
{
	if (i >= ibckpt_vcq_count(q))
		return NULL;
	return &q->wc[(q->head + i) & (q->size - 1)];
}
