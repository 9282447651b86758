/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Log of posted-but-not-completed work requests of one send queue, receive
 * queue or SRQ (design principle 3). Posting copies the request into the
 * next slot of a ring (SGEs and inline payload too, since the application
 * may reuse an inline buffer as soon as post returns), completions retire
 * slots. No scan longer than the run of requests a completion retires.
 *
 * Memory follows what is posted, not the queue's depth times its largest
 * request: a slot holds a request with at most one SGE; the SGEs of a
 * longer one, inline bytes and a TSO header go to one record in a byte ring
 * beside it (the "arena"), contiguous, freed in order as the head slot
 * moves on. Both start small and double when a post finds them full (with
 * the queue's lock held, moving what is live), the slots up to twice the
 * queue's depth; a failed allocation is a full queue (ENOMEM).
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
 * Send and receive queues retire lazily: a successful send completion, or
 * any receive completion, only counts itself (ibckpt_wrlog_done(), one
 * increment on the poll path, no lock of the queue); the count is applied to
 * the ring (ibckpt_wrlog_settle()) by whoever next needs the ring exact: a
 * post that finds it full, a failed send completion, a snapshot. Each slot is
 * then retired without a scan: each send slot carries the number of
 * signaled requests logged up to it, so the request the n-th counted
 * completion belongs to is found by bisection, whatever the number of
 * unsignaled requests in between.
 *
 * Locking: the slots, the arena, head and tail belong to the queue's lock
 * (posters, the exact retirements, settling); 'done' is written by
 * pollers, serialized by the lock of the CQ the queue completes to, and
 * read by settle: a single-writer counter, on a cache line of its own (a
 * poller on another thread does not take the poster's line).
 */
#ifndef IBCKPT_WRLOG_H
#define IBCKPT_WRLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "compiler.h"

enum ibckpt_wrlog_kind {
	IBCKPT_WRLOG_SQ,
	IBCKPT_WRLOG_RQ,
	IBCKPT_WRLOG_SRQ,
};

/*
 * One logged request, its opcode's fields as posted: 'wr' for RDMA, atomics
 * and UD (UD's ah is the application's, a shadow), 'bind_mw' for
 * IBV_WR_BIND_MW (the window and MR are shadows too), 'tso' for IBV_WR_TSO
 * (UD's fields as in 'wr', then the header's size and the MSS; the header's
 * bytes are in the log's header area). Fields a receive does not use stay
 * zero.
 */
struct ibckpt_wr {
	uint64_t wr_id;
	union {
		__typeof__(((struct ibv_send_wr *)0)->wr) wr;
		__typeof__(((struct ibv_send_wr *)0)->bind_mw) bind_mw;
		struct {
			__typeof__(((struct ibv_send_wr *)0)->wr.ud) ud;
			uint16_t hdr_sz;
			uint16_t mss;
		} tso;
	};
	struct ibv_sge sge1;		/* the SGE of a request with one (num_sge 1) */
	uint32_t imm_data;		/* network order, as posted */
	uint32_t send_flags;		/* IBV_SEND_SIGNALED added if sq_sig_all */
	uint32_t inline_len;		/* bytes copied to the slot's inline area */
	uint16_t num_sge;
	uint8_t opcode;			/* enum ibv_wr_opcode */
	uint8_t retired;		/* SRQ: a hole, completed out of order */
	union {
		uint32_t sig_seq;	/* send queue: signaled requests up to this one */
		uint32_t pos;		/* XRC SRQ: its free-running position (the tag) */
	};
	uint32_t remote_srqn;		/* XRC send queue: qp_type.xrc.remote_srqn */
	uint32_t psn_start;		/* send queue: log's psn_sum before this one */
	/*
	 * Its record in the arena (free-running position): SGEs if more than
	 * one, inline bytes, TSO header, in that order. A request with none has
	 * the arena's tail at its post, so that the head slot's says where the
	 * live part of the arena begins.
	 */
	uint32_t xat;
};

struct ibckpt_wrlog {
	/* What a post reads and writes: its first line. */
	struct ibckpt_wr *wr;		/* ring of 'size' slots */
	uint8_t *x;			/* the arena: xsize bytes (0 before a first record) */
	uint32_t size;			/* power of two, up to 'cap' */
	uint32_t xtail;			/* arena's next free byte (free-running) */
	uint32_t head;			/* oldest unsettled slot (free-running) */
	uint32_t tail;			/* next free slot (free-running) */
	uint32_t sig_count;		/* send queue: signaled requests ever logged */
	/*
	 * Send queue of a connected QP: the packets, hence PSNs, every request
	 * logged takes (mod 2^24), at the path MTU (1 << mtu_shift; 0 before
	 * the QP has one, when psn_lost is set by a send). The QP's next PSN
	 * once all of them are transmitted follows from it (qp_restart.c).
	 */
	uint32_t psn_sum;
	uint8_t mtu_shift;
	bool psn_lost;
	bool sq_sig_all;
	enum ibckpt_wrlog_kind kind;
	/* Then what growing, settling, TSO and SRQs use. */
	uint32_t xsize;			/* power of two, or 0 */
	uint32_t cap;			/* most slots: twice the depth, a power of two */
	uint32_t max_sge;
	uint32_t max_inline;
	/*
	 * Send queue with TSO (qp.c sets it): headers of up to this many
	 * bytes, copied by ibckpt_wrlog_send() with their requests.
	 */
	uint32_t max_hdr;
	uint32_t holes;			/* SRQ: retired slots between head and tail */
	uint32_t head_sig;		/* of the signaled ones, retired (those before head) */
	uint32_t settled;		/* of the completions counted, applied to head */
	uint64_t retired;		/* statistics */
	uint64_t unmatched;		/* completions that matched no slot */
	/* The pollers' (see "Locking"), alone on its line. */
	atomic_uint done __attribute__((aligned(64)));	/* completions counted, free-running */
};

/*
 * The depth the shadow QPs' logs are created for at least (qp.c): send and
 * receive logs retire lazily, when a post finds the ring full, so a ring of
 * a shallow queue (ibv_rc_pingpong's depth 1, perftest's 4 ...) would
 * settle every few posts. Slots are taken as posted: a floor costs nothing
 * more until requests are outstanding.
 */
#define IBCKPT_WRLOG_MIN_DEPTH 32u

static inline uint32_t ibckpt_wrlog_depth(uint32_t max_wr)
{
	return max_wr > IBCKPT_WRLOG_MIN_DEPTH ? max_wr : IBCKPT_WRLOG_MIN_DEPTH;
}

int ibckpt_wrlog_init(struct ibckpt_wrlog *log, enum ibckpt_wrlog_kind kind,
		      uint32_t max_wr, uint32_t max_sge, uint32_t max_inline, bool sq_sig_all);
void ibckpt_wrlog_destroy(struct ibckpt_wrlog *log);

/* Bytes the log holds now, slots and arena (what a queue costs). */
size_t ibckpt_wrlog_bytes(const struct ibckpt_wrlog *log);

/* Slots between head and tail: live ones, and completed ones not settled yet. */
static inline uint32_t ibckpt_wrlog_count(const struct ibckpt_wrlog *log)
{
	return log->tail - log->head;
}

/*
 * Appends one request (a TSO request with its header); ENOMEM when the ring
 * is full (or cannot grow), EINVAL when the request is larger than the
 * queue's capabilities.
 */
int ibckpt_wrlog_send(struct ibckpt_wrlog *log, const struct ibv_send_wr *wr);
int ibckpt_wrlog_recv(struct ibckpt_wrlog *log, const struct ibv_recv_wr *wr);

/*
 * Slot idx (the one at 'tail') from a send request; the SGEs and inline
 * bytes are the caller's, and so is moving the tail.
 */
#define IBCKPT_PSN_MASK	0xffffffu

/*
 * Packets (PSNs) a request of @bytes takes on a connected QP: one per path
 * MTU or part of one, at least one; an atomic's 8 bytes one; a local
 * operation (window bind, local invalidate) none. An RDMA READ request
 * takes as many as its response has packets (IBTA 9.7.4.1.2).
 */
static inline uint32_t ibckpt_wrlog_packets(const struct ibckpt_wrlog *log, uint8_t opcode,
					    uint32_t bytes)
{
	uint32_t n = (uint32_t)(((uint64_t)bytes + (1u << log->mtu_shift) - 1) >> log->mtu_shift);

	if (unlikely(opcode == IBV_WR_BIND_MW || opcode == IBV_WR_LOCAL_INV))
		return 0;
	return n + !n;
}

static inline void ibckpt_wrlog_fill_send(struct ibckpt_wrlog *log, uint32_t idx,
					  const struct ibv_send_wr *wr, uint32_t inline_len,
					  uint32_t bytes)
{
	struct ibckpt_wr *e = &log->wr[idx];

	e->wr_id = wr->wr_id;
	/* The opcode's union as posted: no switch per opcode. */
	if (unlikely(wr->opcode == IBV_WR_BIND_MW))
		e->bind_mw = wr->bind_mw;
	else
		e->wr = wr->wr;
	e->imm_data = wr->imm_data;
	e->send_flags = wr->send_flags | (log->sq_sig_all ? IBV_SEND_SIGNALED : 0);
	/* Numbers the signaled requests: settling finds the n-th by bisection. */
	log->sig_count += (e->send_flags & IBV_SEND_SIGNALED) != 0;
	e->sig_seq = log->sig_count;
	e->inline_len = inline_len;
	e->num_sge = (uint16_t)wr->num_sge;
	e->opcode = (uint8_t)wr->opcode;
	e->psn_start = log->psn_sum;
	log->psn_sum = (log->psn_sum + ibckpt_wrlog_packets(log, e->opcode, bytes)) &
		       IBCKPT_PSN_MASK;
	log->psn_lost |= !log->mtu_shift;
	/* 'retired' marks SRQ holes only: a send slot's stays calloc()'s zero. */
}

/*
 * ibckpt_wrlog_send() for the common request, inline in the post path: one
 * SGE, no inline data, a ring with room; anything else takes the full
 * version. Not for TSO requests (their header).
 */
static inline ALWAYS_INLINE int
ibckpt_wrlog_send_fast(struct ibckpt_wrlog *log, const struct ibv_send_wr *wr)
{
	uint32_t idx = log->tail & (log->size - 1);

	if (unlikely(wr->num_sge != 1 || (wr->send_flags & IBV_SEND_INLINE) ||
		     ibckpt_wrlog_count(log) == log->size))
		return ibckpt_wrlog_send(log, wr);
	log->wr[idx].sge1 = wr->sg_list[0];	/* max_sge >= 1 */
	log->wr[idx].xat = log->xtail;
	ibckpt_wrlog_fill_send(log, idx, wr, 0, wr->sg_list[0].length);
	log->tail++;
	return 0;
}

/* The same for a receive. */
static inline ALWAYS_INLINE int
ibckpt_wrlog_recv_fast(struct ibckpt_wrlog *log, const struct ibv_recv_wr *wr)
{
	uint32_t idx = log->tail & (log->size - 1);
	struct ibckpt_wr *e = &log->wr[idx];

	if (unlikely(wr->num_sge != 1 || ibckpt_wrlog_count(log) == log->size))
		return ibckpt_wrlog_recv(log, wr);
	e->sge1 = wr->sg_list[0];
	e->xat = log->xtail;
	/* Send fields of a receive log's slots stay calloc()'s zeroes. */
	e->wr_id = wr->wr_id;
	e->num_sge = 1;
	e->retired = 0;
	log->tail++;
	return 0;
}

/*
 * A completion of a send queue (successful) or receive queue (any status):
 * counted, applied by the next settle. Pollers serialize per queue.
 */
static inline void ibckpt_wrlog_done(struct ibckpt_wrlog *log)
{
	unsigned int n = atomic_load_explicit(&log->done, memory_order_relaxed);

	atomic_store_explicit(&log->done, n + 1, memory_order_release);
}

/* Applies the counted completions to the ring (send and receive queues). */
void ibckpt_wrlog_settle(struct ibckpt_wrlog *log);

/* Requests posted and not yet completed (settles first). */
uint32_t ibckpt_wrlog_live(struct ibckpt_wrlog *log);

/*
 * Live signaled send requests: the ones a completion will still report
 * (settles first). Unsignaled requests after the last signaled one complete
 * silently.
 */
uint32_t ibckpt_wrlog_signaled(struct ibckpt_wrlog *log);

/*
 * Send queue: the free-running position of the request its next successful
 * completion retires through, the oldest live signaled one (settles
 * first). False if none is live.
 */
bool ibckpt_wrlog_next_signaled(struct ibckpt_wrlog *log, uint32_t *pos);

/*
 * Send queue: the free-running position of the oldest live request with
 * @wr_id, the one a failed completion with it retires through (settles
 * first). False if none.
 */
bool ibckpt_wrlog_find(struct ibckpt_wrlog *log, uint64_t wr_id, uint32_t *pos);

/* The k-th newest slot, 1 = the newest (k <= ibckpt_wrlog_count()). */
static inline struct ibckpt_wr *ibckpt_wrlog_newest(struct ibckpt_wrlog *log, uint32_t k)
{
	return &log->wr[(log->tail - k) & (log->size - 1)];
}

/*
 * Forgets every request: the queue was reset, which discards them without
 * completions. Counted completions up to now are dropped with them.
 */
void ibckpt_wrlog_reset(struct ibckpt_wrlog *log);

/* Forgets the newest 'n' slots: what the vendor refused to post. */
void ibckpt_wrlog_unpost(struct ibckpt_wrlog *log, uint32_t n);

/*
 * Retires what one completion reports, with the queue kind's rule, at once
 * (settles first): the path of failed send completions and of SRQs, where
 * wr_ids decide. False: no match.
 */
bool ibckpt_wrlog_complete(struct ibckpt_wrlog *log, uint64_t wr_id, bool success);

/*
 * Retires the slot at free-running position 'pos' at once and gives its
 * wr_id: an XRC SRQ's completion, whose wr_id was a tag naming the slot
 * (srq.c). False if no live slot carries that tag.
 */
bool ibckpt_wrlog_complete_at(struct ibckpt_wrlog *log, uint32_t pos, uint64_t *wr_id);

/*
 * Requests copied onto the stack per vendor post, where ibckpt must change
 * them or cut the list (posts never write the application's requests):
 * a vendor call, and a doorbell, per this many.
 */
#define IBCKPT_POST_CHUNK 16

/* The vendor's post of a receive list to its queue 'real' (QP or SRQ). */
typedef int (*ibckpt_vendor_post_recv)(void *real, struct ibv_recv_wr *wr,
				       struct ibv_recv_wr **bad);

/*
 * Posts a receive list through the log: logs each request, hands what was
 * logged to the vendor, forgets again what the vendor refused. A request the
 * log cannot take ends the list there, as a full queue would: the ones
 * before it are posted (as copies: the list is only read) and it is
 * reported in *bad. The caller holds the queue's lock. A vendor that fails
 * without naming the first request it refused is taken to have posted them
 * all (it would have said).
 * Return: 0, the vendor's error or the log's (ENOMEM, EINVAL).
 */
int ibckpt_wrlog_post_recv_list(struct ibckpt_wrlog *log, void *real, ibckpt_vendor_post_recv post,
				struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/*
 * The same, inline in the post paths so that a single request (most posts)
 * costs no more than logging it and a direct call of 'post'.
 */
static inline int ibckpt_wrlog_post_recv(struct ibckpt_wrlog *log, void *real,
					 ibckpt_vendor_post_recv post,
					 struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *rbad = NULL;
	int ret;

	if (unlikely(!wr || wr->next))
		return ibckpt_wrlog_post_recv_list(log, real, post, wr, bad);
	ret = ibckpt_wrlog_recv_fast(log, wr);
	if (ret) {
		*bad = wr;
		return ret;
	}
	ret = post(real, wr, &rbad);
	if (ret) {
		if (rbad)
			ibckpt_wrlog_unpost(log, 1);
		*bad = rbad;
	}
	return ret;
}

/*
 * i-th slot from the head (0 = oldest) with its SGEs and inline bytes, NULL
 * past the end; skip slots marked retired (SRQ holes). Settle first.
 */
const struct ibckpt_wr *ibckpt_wrlog_at(const struct ibckpt_wrlog *log, uint32_t i,
					const struct ibv_sge **sge, const uint8_t **inline_data);

/* The header of a logged TSO request, by the slot ibckpt_wrlog_at() gave. */
const uint8_t *ibckpt_wrlog_tso_hdr(const struct ibckpt_wrlog *log, const struct ibckpt_wr *e);

#endif
