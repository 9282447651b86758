/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Private completion queue of one CQ (design principles 4 and 5): the
 * completions drained from the real CQ while the process is quiesced, handed
 * back first, in order and exactly once, by the next polls. A ring sized to
 * the CQ's depth at creation, grown when a freeze's drain finds it full (an
 * application that polled nothing since an earlier freeze). The fast path
 * reads none of it: a CQ holding drained completions is marked on its
 * lock's flag (IBCKPT_Q_DRAINED, spinlock.h).
 */
#ifndef IBCKPT_VCQ_H
#define IBCKPT_VCQ_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct ibckpt_vcq {
	struct ibv_wc *wc;
	uint32_t size;		/* power of two */
	uint32_t head;		/* free-running */
	uint32_t tail;
};

int ibckpt_vcq_init(struct ibckpt_vcq *q, uint32_t cqe);
void ibckpt_vcq_destroy(struct ibckpt_vcq *q);

static inline bool ibckpt_vcq_empty(const struct ibckpt_vcq *q)
{
	return q->head == q->tail;
}

static inline uint32_t ibckpt_vcq_count(const struct ibckpt_vcq *q)
{
	return q->tail - q->head;
}

/* Appends n completions; ENOSPC (and nothing appended) if they do not fit. */
int ibckpt_vcq_push(struct ibckpt_vcq *q, const struct ibv_wc *wc, uint32_t n);

/* Moves up to n of the oldest completions to wc; returns how many. */
uint32_t ibckpt_vcq_pop(struct ibckpt_vcq *q, struct ibv_wc *wc, uint32_t n);

/*
 * Gives q the larger ring 'bigger' (empty, from ibckpt_vcq_init()): q's
 * completions move into it, in order, and q's old ring is freed.
 */
void ibckpt_vcq_replace(struct ibckpt_vcq *q, struct ibckpt_vcq *bigger);

/* Doubles q's ring, its completions kept in order. Return: 0 or ENOMEM. */
int ibckpt_vcq_grow(struct ibckpt_vcq *q);

/* i-th held completion (0 = oldest) or NULL. */
const struct ibv_wc *ibckpt_vcq_at(const struct ibckpt_vcq *q, uint32_t i);

#endif
