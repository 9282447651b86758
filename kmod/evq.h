/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A bounded FIFO of struct ibckpt_event for one control thread.
 */
#ifndef IBCKPT_EVQ_H
#define IBCKPT_EVQ_H

#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "uapi/linux/ibckpt.h"

#define IBCKPT_EVQ_LEN	16

/**
 * struct ibckpt_evq - pending events
 * @lock: protects @ev, @head and @len
 * @ev: ring of events
 * @head: index of the oldest event
 * @len: events queued
 * @wq: readers sleep here; woken on every post
 */
struct ibckpt_evq {
	spinlock_t lock;	/* protects ev, head, len */
	struct ibckpt_event ev[IBCKPT_EVQ_LEN];
	unsigned int head;
	unsigned int len;
	wait_queue_head_t wq;
};

void ibckpt_evq_init(struct ibckpt_evq *q);
int ibckpt_evq_post(struct ibckpt_evq *q, u32 type, u64 session);
bool ibckpt_evq_post_end(struct ibckpt_evq *q, u32 type, u64 session);
bool ibckpt_evq_pop(struct ibckpt_evq *q, struct ibckpt_event *e);

static inline bool ibckpt_evq_pending(struct ibckpt_evq *q)
{
	return READ_ONCE(q->len) != 0;
}

#endif /* IBCKPT_EVQ_H */
