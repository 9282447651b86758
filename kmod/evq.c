// SPDX-License-Identifier: GPL-2.0
/*
 * The event queue of a control thread: the module posts (freeze, thaw,
 * abort), the thread reads. Bounded, because a control thread that stops
 * reading must not make the module allocate without end; a full queue is
 * reported to the poster, which treats that process as unresponsive, except
 * for the end of a session, which displaces the oldest event.
 */
#include <linux/sched.h>

#include "evq.h"

/**
 * ibckpt_evq_init() - initialise an empty queue
 * @q: the queue
 */
void ibckpt_evq_init(struct ibckpt_evq *q)
{
	spin_lock_init(&q->lock);
	init_waitqueue_head(&q->wq);
	q->head = 0;
	q->len = 0;
}

/**
 * ibckpt_evq_post() - append an event and wake the reader
 * @q: the queue
 * @type: enum ibckpt_event_type
 * @session: the freeze session it concerns
 *
 * Return: 0, or -ENOSPC if the queue is full.
 */
int ibckpt_evq_post(struct ibckpt_evq *q, u32 type, u64 session)
{
	struct ibckpt_event *e;
	int ret = 0;

	spin_lock(&q->lock);
	if (q->len == IBCKPT_EVQ_LEN) {
		ret = -ENOSPC;
	} else {
		e = &q->ev[(q->head + q->len) % IBCKPT_EVQ_LEN];
		e->type = type;
		e->flags = 0;
		e->session = session;
		WRITE_ONCE(q->len, q->len + 1);
	}
	spin_unlock(&q->lock);
	if (!ret)
		wake_up_interruptible(&q->wq);
	return ret;
}

/**
 * ibckpt_evq_post_end() - append the end of a session, which must not be lost
 * @q: the queue
 * @type: IBCKPT_EV_THAW or IBCKPT_EV_ABORT
 * @session: the session that ended
 *
 * A control thread that missed the end of a session would keep its verbs
 * gates closed for good. When the queue is full the oldest event gives way:
 * 16 events behind, the thread is unresponsive and what it missed first
 * matters least.
 *
 * Return: true if an event was dropped to make room.
 */
bool ibckpt_evq_post_end(struct ibckpt_evq *q, u32 type, u64 session)
{
	struct ibckpt_event *e;
	bool dropped = false;

	spin_lock(&q->lock);
	if (q->len == IBCKPT_EVQ_LEN) {
		q->head = (q->head + 1) % IBCKPT_EVQ_LEN;
		WRITE_ONCE(q->len, q->len - 1);
		dropped = true;
	}
	e = &q->ev[(q->head + q->len) % IBCKPT_EVQ_LEN];
	e->type = type;
	e->flags = 0;
	e->session = session;
	WRITE_ONCE(q->len, q->len + 1);
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->wq);
	return dropped;
}

/**
 * ibckpt_evq_pop() - take the oldest event
 * @q: the queue
 * @e: filled with the event
 *
 * Return: true if an event was taken.
 */
bool ibckpt_evq_pop(struct ibckpt_evq *q, struct ibckpt_event *e)
{
	bool got = false;

	spin_lock(&q->lock);
	if (q->len) {
		*e = q->ev[q->head];
		q->head = (q->head + 1) % IBCKPT_EVQ_LEN;
		WRITE_ONCE(q->len, q->len - 1);
		got = true;
	}
	spin_unlock(&q->lock);
	return got;
}
