// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Work request log: see wrlog.h for the rules; the common post is inline there. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "wrlog.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

/* Slots a log starts with: room for the requests most applications keep posted. */
#define WRLOG_FIRST_SLOTS 64u
/* Arena bytes a log starts with, at its first record. */
#define WRLOG_FIRST_ARENA 4096u

int ibckpt_wrlog_init(struct ibckpt_wrlog *log, enum ibckpt_wrlog_kind kind,
		      uint32_t max_wr, uint32_t max_sge, uint32_t max_inline, bool sq_sig_all)
{
	memset(log, 0, sizeof(*log));
	log->kind = kind;
	log->sq_sig_all = sq_sig_all;
	/*
	 * Vendors may round the queue up further than they report, and retire
	 * hardware slots of unsignaled requests at different times than we do:
	 * twice the reported depth never limits what the vendor accepts.
	 */
	log->cap = pow2_at_least(2 * (max_wr ? max_wr : 1));
	log->size = log->cap < WRLOG_FIRST_SLOTS ? log->cap : WRLOG_FIRST_SLOTS;
	log->max_sge = max_sge ? max_sge : 1;
	log->max_inline = max_inline;
	log->wr = calloc(log->size, sizeof(*log->wr));
	return log->wr ? 0 : ENOMEM;
}

void ibckpt_wrlog_destroy(struct ibckpt_wrlog *log)
{
	free(log->wr);
	free(log->x);
	log->wr = NULL;
	log->x = NULL;
	log->xsize = 0;
}

size_t ibckpt_wrlog_bytes(const struct ibckpt_wrlog *log)
{
	return sizeof(*log) + (size_t)log->size * sizeof(*log->wr) + log->xsize;
}

static struct ibckpt_wr *slot(const struct ibckpt_wrlog *log, uint32_t i)
{
	return &log->wr[i & (log->size - 1)];
}

/* Bytes of a slot's SGEs in the arena: none for one SGE (it is in the slot). */
static uint32_t sge_bytes(const struct ibckpt_wr *e)
{
	return e->num_sge > 1 ? e->num_sge * (uint32_t)sizeof(struct ibv_sge) : 0;
}

/* A slot's record in the arena: its SGEs, inline bytes and TSO header. */
static uint32_t record_bytes(const struct ibckpt_wr *e)
{
	return sge_bytes(e) + e->inline_len + (e->opcode == IBV_WR_TSO ? e->tso.hdr_sz : 0);
}

/* Where a record at free-running position 'at' is (records never wrap). */
static uint8_t *arena_at(const struct ibckpt_wrlog *log, uint32_t at)
{
	return &log->x[at & (log->xsize - 1)];
}

/*
 * The arena's bytes in use begin at the head slot's record (the slots
 * before it are retired; a record always follows its slot's predecessors').
 */
static uint32_t arena_used(const struct ibckpt_wrlog *log)
{
	return log->head == log->tail ? 0 : log->xtail - slot(log, log->head)->xat;
}

/*
 * The slots doubled, what is live kept at the same free-running positions.
 * A full ring of a queue below its cap grows rather than refusing.
 */
static bool grow_slots(struct ibckpt_wrlog *log)
{
	uint32_t n = log->size * 2, i;
	struct ibckpt_wr *w;

	if (log->size >= log->cap)
		return false;
	w = calloc(n, sizeof(*w));
	if (!w)
		return false;
	for (i = log->head; i != log->tail; i++)
		w[i & (n - 1)] = *slot(log, i);
	free(log->wr);
	log->wr = w;
	log->size = n;
	return true;
}

/*
 * An arena that holds 'need' more bytes, twice the size at least (so that
 * growing is rare): the live records copied, in order, to its start, where
 * none wraps.
 */
static bool grow_arena(struct ibckpt_wrlog *log, uint32_t need)
{
	uint32_t used = arena_used(log), n = log->xsize ? 2 * log->xsize : WRLOG_FIRST_ARENA;
	uint32_t at = 0, i;
	uint8_t *x;

	if ((uint64_t)used + need > (1u << 30))
		return false;
	while (n < used + need)
		n <<= 1;
	if (n > (1u << 30))	/* twice an arena of 2^30 */
		return false;
	x = malloc(n);
	if (!x)
		return false;
	for (i = log->head; i != log->tail; i++) {
		struct ibckpt_wr *e = slot(log, i);
		uint32_t len = record_bytes(e);

		if (len)
			memcpy(x + at, arena_at(log, e->xat), len);
		e->xat = at;
		at += (len + 7) & ~7u;
	}
	free(log->x);
	log->x = x;
	log->xsize = n;
	log->xtail = at;
	return true;
}

/*
 * Room for a record of 'len' bytes at the arena's tail, contiguous: at the
 * ring's end if it fits there, else at its start (the bytes skipped are
 * freed with the record before). Settles first when the arena looks full;
 * grows if it still is. ENOMEM if it cannot.
 */
static int arena_take(struct ibckpt_wrlog *log, uint32_t len, uint32_t *at)
{
	uint32_t len8 = (len + 7) & ~7u, off, pad;
	int tries;

	for (tries = 0; tries < 3; tries++) {
		if (log->xsize) {
			off = log->xtail & (log->xsize - 1);
			pad = off + len8 > log->xsize ? log->xsize - off : 0;
			if ((uint64_t)arena_used(log) + pad + len8 <= log->xsize) {
				*at = log->xtail + pad;
				log->xtail = *at + len8;
				return 0;
			}
		}
		if (tries == 0)
			ibckpt_wrlog_settle(log);
		else if (!grow_arena(log, len8))
			return ENOMEM;
	}
	return ENOMEM;
}

/* Room for one more request: settles when the ring looks full, then grows. */
static bool has_room(struct ibckpt_wrlog *log)
{
	if (likely(ibckpt_wrlog_count(log) < log->size))
		return true;
	ibckpt_wrlog_settle(log);
	return ibckpt_wrlog_count(log) < log->size || grow_slots(log);
}

int ibckpt_wrlog_send(struct ibckpt_wrlog *log, const struct ibv_send_wr *wr)
{
	const struct ibv_sge *src = wr->sg_list;
	bool tso = wr->opcode == IBV_WR_TSO;
	uint32_t idx, len, inl = 0, hdr = tso ? wr->tso.hdr_sz : 0, sgeb, at;
	struct ibckpt_wr *e;
	uint64_t sum = 0;	/* SGE lengths may add up past 32 bits */
	uint8_t *dst;
	int i, n = wr->num_sge, err;

	if (n < 0 || (uint32_t)n > log->max_sge || hdr > log->max_hdr)
		return EINVAL;
	for (i = 0; i < n; i++)
		sum += src[i].length;
	len = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* The payload is the data now, not the buffer later. */
		if (sum > log->max_inline)
			return EINVAL;
		inl = len;
	}
	if (!has_room(log))
		return ENOMEM;
	sgeb = n > 1 ? (uint32_t)n * (uint32_t)sizeof(*src) : 0;
	at = log->xtail;
	if (sgeb + inl + hdr) {
		err = arena_take(log, sgeb + inl + hdr, &at);	/* may move the records */
		if (err)
			return err;
	}
	idx = log->tail & (log->size - 1);
	e = &log->wr[idx];
	e->xat = at;
	if (n > 1)
		memcpy(arena_at(log, at), src, sgeb);
	else if (n == 1)
		e->sge1 = src[0];
	dst = sgeb + inl + hdr ? arena_at(log, at) + sgeb : NULL;
	for (i = 0; inl && i < n; i++) {
		memcpy(dst, (const void *)(uintptr_t)src[i].addr, src[i].length);
		dst += src[i].length;
	}
	ibckpt_wrlog_fill_send(log, idx, wr, inl, len);
	if (tso) {
		e->tso.hdr_sz = (uint16_t)hdr;
		e->tso.mss = wr->tso.mss;
		if (hdr)
			memcpy(dst, wr->tso.hdr, hdr);
	}
	log->tail++;
	return 0;
}

int ibckpt_wrlog_recv(struct ibckpt_wrlog *log, const struct ibv_recv_wr *wr)
{
	struct ibckpt_wr *e;
	uint32_t at;
	int n = wr->num_sge, err;

	if (n < 0 || (uint32_t)n > log->max_sge)
		return EINVAL;
	if (!has_room(log))
		return ENOMEM;
	at = log->xtail;
	if (n > 1) {
		err = arena_take(log, (uint32_t)n * (uint32_t)sizeof(struct ibv_sge), &at);
		if (err)
			return err;
		memcpy(arena_at(log, at), wr->sg_list, (size_t)n * sizeof(struct ibv_sge));
	}
	e = slot(log, log->tail);
	/*
	 * Receive logs only ever hold receives, so the send fields of every
	 * slot are still the zeroes calloc() gave them: no memset per post.
	 */
	e->wr_id = wr->wr_id;
	e->num_sge = (uint16_t)n;
	e->retired = 0;
	e->xat = at;
	if (n == 1)
		e->sge1 = wr->sg_list[0];
	log->tail++;
	return 0;
}

static void retire_to(struct ibckpt_wrlog *log, uint32_t new_head)
{
	if (new_head == log->head)
		return;
	log->retired += new_head - log->head;
	log->head = new_head;
	if (log->kind == IBCKPT_WRLOG_SQ)
		log->head_sig = slot(log, log->head - 1)->sig_seq;
}

/* Send queue: the slot of the signaled request numbered 'seq' (it is live). */
static uint32_t find_signaled(const struct ibckpt_wrlog *log, uint32_t seq)
{
	uint32_t lo = 0, hi = ibckpt_wrlog_count(log) - 1, mid;

	/* sig_seq does not decrease from head to tail: the first slot with 'seq'. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((int32_t)(slot(log, log->head + mid)->sig_seq - seq) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return log->head + lo;
}

void ibckpt_wrlog_settle(struct ibckpt_wrlog *log)
{
	uint32_t done = atomic_load_explicit(&log->done, memory_order_acquire);
	uint32_t n;

	switch (log->kind) {
	case IBCKPT_WRLOG_SQ:
		/*
		 * Each counted completion is the oldest live signaled
		 * request's: retire through the n-th live signaled one,
		 * keeping the unsignaled ones after it.
		 */
		n = done - log->settled;
		if (n > log->sig_count - log->head_sig) {
			log->unmatched += n - (log->sig_count - log->head_sig);
			n = log->sig_count - log->head_sig;
		}
		if (n)
			retire_to(log, find_signaled(log, log->head_sig + n) + 1);
		log->settled = done;
		break;
	case IBCKPT_WRLOG_RQ:
		n = done - log->settled;
		if (n > ibckpt_wrlog_count(log)) {
			log->unmatched += n - ibckpt_wrlog_count(log);
			n = ibckpt_wrlog_count(log);
		}
		retire_to(log, log->head + n);
		log->settled = done;
		break;
	case IBCKPT_WRLOG_SRQ:		/* retired at completion, by wr_id */
		break;
	}
}

uint32_t ibckpt_wrlog_live(struct ibckpt_wrlog *log)
{
	ibckpt_wrlog_settle(log);
	return ibckpt_wrlog_count(log) - log->holes;
}

uint32_t ibckpt_wrlog_signaled(struct ibckpt_wrlog *log)
{
	ibckpt_wrlog_settle(log);
	return log->sig_count - log->head_sig;
}

bool ibckpt_wrlog_next_signaled(struct ibckpt_wrlog *log, uint32_t *pos)
{
	ibckpt_wrlog_settle(log);
	if (log->sig_count == log->head_sig)
		return false;
	*pos = find_signaled(log, log->head_sig + 1);
	return true;
}

bool ibckpt_wrlog_find(struct ibckpt_wrlog *log, uint64_t wr_id, uint32_t *pos)
{
	uint32_t i;

	ibckpt_wrlog_settle(log);
	for (i = log->head; i != log->tail; i++) {
		if (slot(log, i)->wr_id == wr_id) {
			*pos = i;
			return true;
		}
	}
	return false;
}

void ibckpt_wrlog_reset(struct ibckpt_wrlog *log)
{
	log->settled = atomic_load_explicit(&log->done, memory_order_acquire);
	log->head = log->tail;
	log->holes = 0;
	log->head_sig = log->sig_count;
}

void ibckpt_wrlog_unpost(struct ibckpt_wrlog *log, uint32_t n)
{
	if (n > ibckpt_wrlog_count(log))
		n = ibckpt_wrlog_count(log);
	if (n && log->kind == IBCKPT_WRLOG_SQ)
		log->psn_sum = slot(log, log->tail - n)->psn_start;	/* never sent */
	if (n)
		log->xtail = slot(log, log->tail - n)->xat;	/* their records too */
	log->tail -= n;
	if (log->kind == IBCKPT_WRLOG_SQ)
		log->sig_count = log->tail == log->head ? log->head_sig
							: slot(log, log->tail - 1)->sig_seq;
}

/* SRQ: slot i completed out of order; the head moves over leading holes. */
static void srq_retire(struct ibckpt_wrlog *log, uint32_t i)
{
	slot(log, i)->retired = 1;
	log->holes++;
	log->retired++;
	while (log->head != log->tail && slot(log, log->head)->retired) {
		log->head++;
		log->holes--;
	}
}

bool ibckpt_wrlog_complete_at(struct ibckpt_wrlog *log, uint32_t pos, uint64_t *wr_id)
{
	struct ibckpt_wr *e = slot(log, pos);

	if (pos - log->head >= ibckpt_wrlog_count(log) || e->retired || e->pos != pos) {
		log->unmatched++;
		return false;
	}
	*wr_id = e->wr_id;
	srq_retire(log, pos);
	return true;
}

bool ibckpt_wrlog_complete(struct ibckpt_wrlog *log, uint64_t wr_id, bool success)
{
	uint64_t unmatched = log->unmatched;
	uint32_t i;

	switch (log->kind) {
	case IBCKPT_WRLOG_SQ:
		if (success)
			break;		/* counted like the poll path does */
		ibckpt_wrlog_settle(log);
		/* A flush completes every request, signaled or not: by wr_id. */
		for (i = log->head; i != log->tail; i++) {
			if (slot(log, i)->wr_id == wr_id) {
				retire_to(log, i + 1);
				return true;
			}
		}
		log->unmatched++;
		return false;
	case IBCKPT_WRLOG_RQ:
		break;
	case IBCKPT_WRLOG_SRQ:
		for (i = log->head; i != log->tail; i++) {
			const struct ibckpt_wr *e = slot(log, i);

			if (!e->retired && e->wr_id == wr_id) {
				srq_retire(log, i);
				return true;
			}
		}
		log->unmatched++;
		return false;
	}
	ibckpt_wrlog_done(log);
	ibckpt_wrlog_settle(log);
	return log->unmatched == unmatched;
}

/*
 * A list the log cannot take whole, so that the vendor must get only its
 * head: chunks of IBCKPT_POST_CHUNK are logged and posted as copies, each
 * chunk the newest requests logged (as vendor_post_xsrq_recv() expects),
 * until the log refuses one (*bad, the log's error) or the vendor does
 * (*bad its request, its error). The application's list is only read.
 */
static int post_recv_chunks(struct ibckpt_wrlog *log, void *real, ibckpt_vendor_post_recv post,
			    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr c[IBCKPT_POST_CHUNK], *w = wr, *first, *rbad;
	uint32_t k, took;
	int ret, err = 0;

	while (w && !err) {
		for (first = w, k = 0; w && k < IBCKPT_POST_CHUNK; w = w->next, k++) {
			err = ibckpt_wrlog_recv_fast(log, w);
			if (err)
				break;
			c[k] = *w;
			c[k].next = NULL;
			if (k)
				c[k - 1].next = &c[k];
		}
		if (!k)
			break;
		rbad = NULL;
		ret = post(real, c, &rbad);
		if (!ret)
			continue;
		took = rbad ? (uint32_t)(rbad - c) : k;	/* none named: all taken */
		ibckpt_wrlog_unpost(log, k - took);
		for (w = first; took--; w = w->next)
			;
		*bad = w;
		return ret;
	}
	*bad = w;
	return err;
}

int ibckpt_wrlog_post_recv_list(struct ibckpt_wrlog *log, void *real, ibckpt_vendor_post_recv post,
				struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *w, *rbad = NULL;
	uint32_t logged = 0, posted;
	int ret, err = 0;

	for (w = wr; w; w = w->next) {
		err = ibckpt_wrlog_recv_fast(log, w);
		if (err)
			break;
		logged++;
	}
	if (err) {	/* forgotten again: logged and posted a chunk at a time */
		ibckpt_wrlog_unpost(log, logged);
		return post_recv_chunks(log, real, post, wr, bad);
	}
	ret = post(real, wr, &rbad);
	if (!ret)
		return 0;
	for (posted = 0, w = wr; w && w != rbad; w = w->next)
		posted++;
	ibckpt_wrlog_unpost(log, logged - posted);
	*bad = rbad;
	return ret;
}

const struct ibckpt_wr *ibckpt_wrlog_at(const struct ibckpt_wrlog *log, uint32_t i,
					const struct ibv_sge **sge, const uint8_t **inline_data)
{
	const struct ibckpt_wr *e;
	const uint8_t *rec;

	if (i >= ibckpt_wrlog_count(log))
		return NULL;
	e = slot(log, log->head + i);
	rec = record_bytes(e) ? arena_at(log, e->xat) : NULL;
	if (sge)
		*sge = e->num_sge > 1 ? (const struct ibv_sge *)rec : &e->sge1;
	if (inline_data)
		*inline_data = e->inline_len ? rec + sge_bytes(e) : NULL;
	return e;
}

const uint8_t *ibckpt_wrlog_tso_hdr(const struct ibckpt_wrlog *log, const struct ibckpt_wr *e)
{
	if (e->opcode != IBV_WR_TSO || !e->tso.hdr_sz)
		return NULL;
	return arena_at(log, e->xat) + sge_bytes(e) + e->inline_len;
}
