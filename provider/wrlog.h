/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Log of posted-but-not-completed work requests of one send queue, receive
 * queue or SRQ (design principle 3). A fixed ring sized from the queue's
 * capabilities at creation: posting copies the request into the next slot
 * (SGEs and inline payload too, since the application may reuse an inline
 * buffer as soon as post returns), a completion retires slots. No allocation
 * after creation, no scan longer than the run of requests a completion
 * retires.
 *
 * Retirement rules:
 *  - send queue: a successful completion is the oldest signaled request's
 *    and retires it with every unsignaled one before it; wr_ids are not
 *    trusted (perftest posts every request with the same one). A failed
 *    completion (flush) retires through the first request with its wr_id;
 *  - receive queue: completions come in posting order: each retires the
 *    oldest request;
 *  - SRQ: receives are consumed by whichever QP gets a message, so a
 *    completion retires the oldest slot with its wr_id; the ring's head moves
 *    over retired slots.
 *
 * Not thread-safe by itself: callers serialize per queue (the provider
 * holds the queue's lock, as the vendor does for the hardware queue).
 */
#ifndef IBCKPT_WRLOG_H
#define IBCKPT_WRLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

enum ibckpt_wrlog_kind {
	IBCKPT_WRLOG_SQ,
	IBCKPT_WRLOG_RQ,
	IBCKPT_WRLOG_SRQ,
};

/*
 * One logged request. Fields a receive does not use stay zero. A memory
 * window bind (IBV_WR_BIND_MW) keeps: ah = the window, rkey = its new rkey,
 * remote_addr/compare_add = the bound address and length, swap = the MR
 * (pointer), imm_data = the window's access flags.
 */
struct ibckpt_wr {
	uint64_t wr_id;
	uint64_t remote_addr;		/* RDMA and atomics */
	uint64_t compare_add;		/* atomics */
	uint64_t swap;
	uint32_t rkey;
	uint32_t imm_data;		/* network order, as posted */
	uint32_t remote_qpn;		/* UD */
	uint32_t remote_qkey;
	void *ah;			/* UD: the application's (shadow) AH */
	uint32_t send_flags;
	uint32_t inline_len;		/* bytes copied to the slot's inline area */
	uint16_t num_sge;
	uint8_t opcode;			/* enum ibv_wr_opcode */
	uint8_t retired;
};

struct ibckpt_wrlog {
	struct ibckpt_wr *wr;		/* ring of 'size' slots */
	struct ibv_sge *sge;		/* max_sge per slot */
	uint8_t *inline_buf;		/* max_inline per slot */
	uint32_t size;			/* power of two */
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t head;			/* oldest live slot (free-running) */
	uint32_t tail;			/* next free slot (free-running) */
	enum ibckpt_wrlog_kind kind;
	bool sq_sig_all;
	uint64_t posted;		/* statistics */
	uint64_t retired;
	uint64_t unmatched;		/* completions that matched no slot */
	uint64_t mismatched;		/* retired a slot with another wr_id */
};

int ibckpt_wrlog_init(struct ibckpt_wrlog *log, enum ibckpt_wrlog_kind kind,
		      uint32_t max_wr, uint32_t max_sge, uint32_t max_inline, bool sq_sig_all);
void ibckpt_wrlog_destroy(struct ibckpt_wrlog *log);

/* Slots between head and tail (for an SRQ, retired holes included). */
static inline uint32_t ibckpt_wrlog_count(const struct ibckpt_wrlog *log)
{
	return log->tail - log->head;
}

/* Requests posted and not yet completed. */
static inline uint64_t ibckpt_wrlog_live(const struct ibckpt_wrlog *log)
{
	return log->posted - log->retired;
}

/* Appends one request; ENOMEM when the ring is full, EINVAL when it does not fit a slot. */
int ibckpt_wrlog_send(struct ibckpt_wrlog *log, const struct ibv_send_wr *wr);
int ibckpt_wrlog_recv(struct ibckpt_wrlog *log, const struct ibv_recv_wr *wr);

/*
 * Live signaled send requests: the ones a completion will still report.
 * Unsignaled requests after the last signaled one complete silently.
 */
uint32_t ibckpt_wrlog_signaled(const struct ibckpt_wrlog *log);

/* The newest slot (the log is not empty). */
static inline struct ibckpt_wr *ibckpt_wrlog_last(struct ibckpt_wrlog *log)
{
	return &log->wr[(log->tail - 1) & (log->size - 1)];
}

/* Forgets the newest 'n' slots: what the vendor refused to post. */
void ibckpt_wrlog_unpost(struct ibckpt_wrlog *log, uint32_t n);

/* Retires what a completion reports, with the queue kind's rule. False: no match. */
bool ibckpt_wrlog_complete(struct ibckpt_wrlog *log, uint64_t wr_id, bool success);

/* The vendor's post of a receive list to its queue 'real' (QP or SRQ). */
typedef int (*ibckpt_vendor_post_recv)(void *real, struct ibv_recv_wr *wr,
				       struct ibv_recv_wr **bad);

/*
 * Posts a receive list through the log: logs each request, hands what was
 * logged to the vendor, forgets again what the vendor refused. A request the
 * log cannot take ends the list there, as a full queue would: the ones
 * before it are posted and it is reported in *bad. The caller holds the
 * queue's lock. Inline, so that 'post' is a direct call in each caller.
 * Return: 0, the vendor's error or the log's (ENOMEM, EINVAL).
 */
static inline int ibckpt_wrlog_post_recv(struct ibckpt_wrlog *log, void *real,
					 ibckpt_vendor_post_recv post,
					 struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *w, *cut = NULL, *rbad = NULL;
	uint32_t logged = 0, posted;
	int ret, err = 0;

	for (w = wr; w; w = w->next) {
		err = ibckpt_wrlog_recv(log, w);
		if (err)
			break;
		logged++;
	}
	if (err) {
		*bad = w;
		if (!logged)
			return err;
		for (cut = wr; cut->next != w; cut = cut->next)
			;
		cut->next = NULL;
	}
	ret = post(real, wr, &rbad);
	if (cut)
		cut->next = w;
	if (!ret)
		return err;
	for (posted = 0, w = wr; w && w != rbad; w = w->next)
		posted++;
	ibckpt_wrlog_unpost(log, logged - posted);
	*bad = rbad;
	return ret;
}

/*
 * i-th slot from the head (0 = oldest) with its SGEs and inline bytes, NULL
 * past the end; skip slots marked retired (SRQ holes).
 */
const struct ibckpt_wr *ibckpt_wrlog_at(const struct ibckpt_wrlog *log, uint32_t i,
					const struct ibv_sge **sge, const uint8_t **inline_data);

#endif
