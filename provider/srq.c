// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues, basic and XRC. The vendor's SRQ carries our shadow
 * as srq_context so that its async events lead back to it.
 *
 * An XRC SRQ receives through XRC target QPs, which may live in another
 * process sharing the XRC domain; a completion names the target QP, not the
 * SRQ, and several SRQs may share a CQ and reuse wr_ids (ibv_xsrq_pingpong
 * does both). So each receive reaches the vendor with a tag for wr_id, the
 * SRQ's handle and the request's position in its log, and the poll path
 * (ibckpt_xsrq_retire()) retires exactly that slot and hands the
 * application its wr_id back. Tag-matching SRQs are not stacked (EOPNOTSUPP).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "restart.h"

#define SRQ_COMP_MASK (IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | \
		       IBV_SRQ_INIT_ATTR_CQ)

static inline uint64_t xsrq_tag(const struct ibckpt_srq *srq, uint32_t pos)
{
	return (uint64_t)srq->obj.id << 32 | pos;
}

static struct ibv_srq *srq_create(struct ibckpt_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr_ex ra = *attr;
	enum ibv_srq_type type = attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE ? attr->srq_type
									 : IBV_SRQT_BASIC;
	struct ibckpt_srq *srq;
	int err;

	if ((attr->comp_mask & ~SRQ_COMP_MASK) || (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC)) {
		ibckpt_dbg("create_srq_ex: comp_mask %#x type %d not stacked", attr->comp_mask,
			   type);
		errno = EOPNOTSUPP;
		return NULL;
	}
	srq = ibckpt_zalloc_lines(sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	ra.srq_context = srq;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD)
		ra.pd = attr->pd ? to_ipd(attr->pd)->real : NULL;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD)
		ra.xrcd = attr->xrcd ? to_ixrcd(attr->xrcd)->real : NULL;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ)
		ra.cq = attr->cq ? to_icq(attr->cq)->real : NULL;
	srq->real = ibv_create_srq_ex(ctx->real, &ra);
	if (!srq->real) {
		free(srq);
		return NULL;
	}
	attr->attr = ra.attr;	/* what the vendor granted */
	srq->init = *attr;
	srq->ctx = ctx;
	srq->type = type;
	if (type == IBV_SRQT_XRC) {
		srq->xrcd = to_ixrcd(attr->xrcd);
		srq->cq = to_icq(attr->cq);
	}
	err = ibckpt_wrlog_init(&srq->rq, IBCKPT_WRLOG_SRQ, ra.attr.max_wr, ra.attr.max_sge, 0,
				false);
	if (!err && type == IBV_SRQT_XRC)
		err = ibv_get_srq_num(srq->real, &srq->srq_num);
	if (err)
		goto err_destroy;
	ibckpt_spin_init(&srq->lock);
	ibckpt_obj_add(ctx, &srq->obj, IBCKPT_SNAP_SRQ);
	if (type == IBV_SRQT_XRC) {
		ibckpt_spin_lock(&ctx->qpn_lock);
		err = ibckpt_vidmap_insert(&ctx->xsrqs, srq->obj.id, srq->obj.id, srq,
					   &srq->xsrq_gen);
		ibckpt_spin_unlock(&ctx->qpn_lock);
		if (err) {
			ibckpt_obj_del(ctx, &srq->obj);
			goto err_destroy;
		}
	}

	struct ibv_srq *s = &srq->ibv_srq;

	/* What libibverbs fills for ibv_create_srq(), and nobody for _ex. */
	s->context = &ctx->vctx.context;
	s->srq_context = attr->srq_context;
	s->pd = attr->comp_mask & IBV_SRQ_INIT_ATTR_PD ? attr->pd : NULL;
	s->handle = srq->real->handle;
	s->events_completed = 0;
	pthread_mutex_init(&s->mutex, NULL);
	pthread_cond_init(&s->cond, NULL);
	return s;

err_destroy:
	ibv_destroy_srq(srq->real);
	ibckpt_wrlog_destroy(&srq->rq);
	free(srq);
	errno = err;
	return NULL;
}

struct ibv_srq *ibckpt_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	struct ibv_srq *srq;

	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ax.pd = ibpd;
	srq = srq_create(to_ictx(ibpd->context), &ax);
	if (srq)
		attr->attr = ax.attr;
	return srq;
}

struct ibv_srq *ibckpt_create_srq_ex(struct ibv_context *context,
				     struct ibv_srq_init_attr_ex *attr)
{
	return srq_create(to_ictx(context), attr);
}

int ibckpt_destroy_srq(struct ibv_srq *ibsrq)
{
	struct ibckpt_srq *srq = to_isrq(ibsrq);
	struct ibckpt_context *ctx = srq->ctx;
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_destroy_srq(srq->real);
	if (!ret) {
		if (srq->type == IBV_SRQT_XRC) {	/* no poller retires into it any more */
			ibckpt_spin_lock(&ctx->qpn_lock);
			ibckpt_vidmap_remove(&ctx->xsrqs, srq->obj.id, srq->xsrq_gen);
			ibckpt_spin_unlock(&ctx->qpn_lock);
		}
		ibckpt_obj_del(ctx, &srq->obj);
	}
	ibckpt_gate_exit(&ctx->gate);
	if (ret)
		return ret;
	if (!ibckpt_async_put(ctx, ibsrq, &srq->async_sent, &srq->async_seen))
		return 0;	/* the shadow stays: an event in the pipe names it */
	ibckpt_await_acks(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed,
			  srq->async_sent);
	ibckpt_wrlog_destroy(&srq->rq);
	free(srq);
	return 0;
}

int ibckpt_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct ibckpt_context *ctx = to_ictx(ibsrq->context);
	int ret;

	ret = ibckpt_gate_enter(&ctx->gate);
	if (ret)
		return ret;
	ret = ibv_modify_srq(to_isrq(ibsrq)->real, attr, mask);
	if (!ret && (mask & IBV_SRQ_LIMIT))
		to_isrq(ibsrq)->srq_limit = attr->srq_limit;
	ibckpt_gate_exit(&ctx->gate);
	return ret;
}

int ibckpt_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	return ibv_query_srq(to_isrq(ibsrq)->real, attr);
}

int ibckpt_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	return ibv_get_srq_num(to_isrq(ibsrq)->real, srq_num);
}

static int vendor_post_srq_recv(void *real, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_srq_recv(real, wr, bad);
}

/*
 * XRC: the list just logged (the newest slots) goes to the vendor with tags
 * for wr_ids, in copies: the application's requests are only read (they
 * may be read-only, or posted by another thread at once). In chunks of
 * IBCKPT_POST_CHUNK; a chunk the vendor refuses part of ends the post
 * there. *@bad: the application's first
 * request not posted, NULL if all were.
 */
static int vendor_post_xsrq_recv(void *arg, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr c[IBCKPT_POST_CHUNK], *w, *first, *rbad;
	struct ibckpt_srq *srq = arg;
	uint32_t k = 0, done = 0, n, i;
	int ret = 0;

	for (w = wr; w; w = w->next)
		k++;
	*bad = NULL;
	for (w = wr; done < k && !ret; done += n) {
		n = k - done < IBCKPT_POST_CHUNK ? k - done : IBCKPT_POST_CHUNK;
		first = w;
		for (i = 0; i < n; i++, w = w->next) {
			uint32_t back = k - done - i, pos = srq->rq.tail - back;

			ibckpt_wrlog_newest(&srq->rq, back)->pos = pos;
			c[i] = *w;
			c[i].wr_id = xsrq_tag(srq, pos);
			c[i].next = i + 1 < n ? &c[i + 1] : NULL;
		}
		rbad = NULL;
		ret = ibv_post_srq_recv(srq->real, c, &rbad);
		if (ret && rbad) {	/* else: all of this chunk taken */
			for (w = first, i = 0; &c[i] != rbad; i++)
				w = w->next;
			*bad = w;
		} else if (ret && done + n < k) {
			*bad = w;
		}
	}
	return ret;
}

int ibckpt_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibckpt_srq *srq = to_isrq(ibsrq);
	struct ibckpt_context *ctx = srq->ctx;
	int ret;

	/* no fork test: a forked child's ops of an inherited context lead elsewhere (fork.c) */
	ibckpt_spin_lock_raw(&srq->lock);
	if (unlikely(ibckpt_q_closed(&srq->lock.closed))) {	/* quiesce.c */
		ret = ibckpt_gate_relock_open(&ctx->gate, &srq->lock);
		if (ret) {
			*bad = wr;
			return ret;
		}
	}
	if (unlikely(ctx->remapped) && srq->type != IBV_SRQT_XRC) {
		struct ibckpt_recv_target t = { .ctx = ctx, .real = srq->real, .srq = true };

		ret = ibckpt_wrlog_post_recv_list(&srq->rq, &t, ibckpt_post_recv_xlate, wr, bad);
	} else if (srq->type == IBV_SRQT_XRC)
		ret = ibckpt_wrlog_post_recv_list(&srq->rq, srq, vendor_post_xsrq_recv, wr, bad);
	else
		ret = ibckpt_wrlog_post_recv(&srq->rq, srq->real, vendor_post_srq_recv, wr, bad);
	ibckpt_spin_unlock_raw(&srq->lock);
	return ret;
}

/**
 * ibckpt_xsrq_retire() - retire the XRC SRQ receive a completion reports
 * @ctx: context of the CQ; its qpn_lock is held
 * @wc: a completion whose QP is none of the context's own queues
 *
 * If its wr_id is the tag of a live request of one of the context's XRC
 * SRQs, that request is retired and @wc gets the application's wr_id back.
 * Anything else (a completion for a QP destroyed since) is left alone.
 */
void ibckpt_xsrq_retire(struct ibckpt_context *ctx, struct ibv_wc *wc)
{
	const struct ibckpt_vid *v;
	struct ibckpt_srq *srq;
	uint64_t wr_id;

	if (!ctx->xsrqs.live)
		return;
	v = ibckpt_vidmap_find(&ctx->xsrqs, (uint32_t)(wc->wr_id >> 32), 0);
	if (!v)
		return;
	srq = v->obj;
	ibckpt_spin_lock(&srq->lock);
	if (ibckpt_wrlog_complete_at(&srq->rq, (uint32_t)wc->wr_id, &wr_id))
		wc->wr_id = wr_id;
	ibckpt_spin_unlock(&srq->lock);
}

/* Restart (restart.h): its logged receives are posted again after the re-creation. */
void ibckpt_srq_release(struct ibckpt_srq *srq)
{
	if (srq->real && ibv_destroy_srq(srq->real))
		ibckpt_dbg("release: the vendor kept an SRQ busy");
	srq->real = NULL;
}

/**
 * ibckpt_repost_recvs() - post a receive log's live requests again
 * @log: the log; its requests stay logged as they are
 * @t: the re-created queue
 *
 * Return: 0 or the vendor's error.
 */
int ibckpt_repost_recvs(struct ibckpt_wrlog *log, struct ibckpt_recv_target *t)
{
	const struct ibv_sge *sge;
	const struct ibckpt_wr *e;
	struct ibv_recv_wr *bad;
	uint32_t i;
	int ret;

	ibckpt_wrlog_settle(log);
	for (i = 0; (e = ibckpt_wrlog_at(log, i, &sge, NULL)) != NULL; i++) {
		struct ibv_recv_wr w = { .wr_id = e->wr_id, .sg_list = (struct ibv_sge *)sge,
					 .num_sge = e->num_sge };

		if (e->retired)
			continue;
		ret = ibckpt_post_recv_xlate(t, &w, &bad);
		if (ret) {
			ibckpt_restart_err("posting a logged receive again: %s", strerror(ret));
			return ret;
		}
	}
	return 0;
}

int ibckpt_srq_recreate(struct ibckpt_srq *srq)
{
	struct ibv_srq_init_attr_ex a = srq->init;

	a.srq_context = srq;
	a.pd = to_ipd(srq->init.pd)->real;
	a.attr.srq_limit = 0;		/* armed below, if it still is */
	srq->real = ibv_create_srq_ex(srq->ctx->real, &a);
	if (!srq->real) {
		ibckpt_restart_err("SRQ of %u entries: %s", a.attr.max_wr, strerror(errno));
		return errno;
	}
	srq->ibv_srq.handle = srq->real->handle;
	return 0;
}

/**
 * ibckpt_srq_refill() - the re-created SRQ's receives posted again
 * @srq: re-created by ibckpt_srq_recreate(), as every MR of the process
 *
 * After every object is back: a receive may name an MR registered after
 * the SRQ was created, whose new lkey is only known once it is registered
 * again (regression: an Open MPI/UCX rank's receives went back with their
 * old lkeys, and its first incoming message failed the QP).
 * Return: 0 or an errno.
 */
int ibckpt_srq_refill(struct ibckpt_srq *srq)
{
	struct ibckpt_recv_target t = { .ctx = srq->ctx, .srq = true, .real = srq->real };
	struct ibv_srq_attr lim = { .srq_limit = srq->srq_limit };
	int err;

	err = ibckpt_repost_recvs(&srq->rq, &t);
	if (err)
		return err;
	/*
	 * Armed once its receives are back: a limit armed above the count
	 * fires at once on some devices. One that fired is not armed again
	 * (channel.c clears it when its event is forwarded).
	 */
	if (srq->srq_limit && ibv_modify_srq(srq->real, &lim, IBV_SRQ_LIMIT)) {
		ibckpt_restart_err("SRQ: re-arming its limit: %s", strerror(errno));
		return errno;
	}
	return 0;
}
