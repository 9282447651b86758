// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Release and reacquire: the phases, over every context of the process
 * (restart.h). Each object kind's file releases and re-creates its own;
 * this file only orders them and checks the result.
 *
 * Objects are on their context's list in creation order, so a parent
 * precedes its children: they are re-created walking forwards and released
 * walking backwards.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

bool ibckpt_released;

static char restart_msg[512];
static struct ibckpt_ident *idents;
static uint32_t nidents, idents_cap;

void ibckpt_restart_err(const char *fmt, ...)
{
	va_list ap;

	if (restart_msg[0])		/* the first reason is the one to tell */
		return;
	va_start(ap, fmt);
	vsnprintf(restart_msg, sizeof(restart_msg), fmt, ap);
	va_end(ap);
	ibckpt_dbg("restart: %s", restart_msg);
}

void ibckpt_restart_err_clear(void)
{
	restart_msg[0] = 0;
}

const char *ibckpt_restart_msg(void)
{
	return restart_msg;
}

int ibckpt_ident_add(uint32_t kind, uint64_t vdev, uint32_t vid, uint32_t real,
		     const union ibv_gid *vgid, const union ibv_gid *gid)
{
	struct ibckpt_ident *e;

	if (nidents == idents_cap) {
		uint32_t cap = idents_cap ? 2 * idents_cap : 64;

		e = realloc(idents, cap * sizeof(*e));
		if (!e) {
			ibckpt_restart_err("out of memory");
			return ENOMEM;
		}
		idents = e;
		idents_cap = cap;
	}
	e = &idents[nidents++];
	*e = (struct ibckpt_ident){ .kind = kind, .vid = vid, .real = real, .vdev = vdev };
	if (vgid)
		memcpy(e->vgid, vgid->raw, 16);
	if (gid)
		memcpy(e->gid, gid->raw, 16);
	return 0;
}

static struct ibckpt_obj *obj_next(struct ibckpt_context *ctx, struct ibckpt_obj *o, bool back)
{
	o = back ? o->prev : o->next;
	return o == &ctx->objs ? NULL : o;
}

#define OBJ(o, type) ibckpt_container_of(o, type, obj)
#define for_each_obj(ctx, o, back) \
	for (o = obj_next(ctx, &(ctx)->objs, back); o; o = obj_next(ctx, o, back))

/* What cannot be released yet; checked before anything is torn down. */
/**
 * ibckpt_addr_publishable() - can a reacquire give this address its peer again?
 * @ah: an address vector of an AH or a connected QP
 * @what: what it is, for the refusal
 *
 * A reacquire publishes port 1's LID and its first IBCKPT_MAX_GIDS GIDs:
 * an address using another port or source GID would fail at REMAP, after
 * the release, for good. Return: 0 or EOPNOTSUPP (said).
 */
int ibckpt_addr_publishable(const struct ibv_ah_attr *ah, const char *what)
{
	if (ah->port_num > 1) {
		ibckpt_restart_err("%s on port %u: only port 1 is reacquired yet", what,
				   ah->port_num);
		return EOPNOTSUPP;
	}
	if (ah->is_global && ah->grh.sgid_index >= IBCKPT_MAX_GIDS) {
		ibckpt_restart_err("%s with source GID index %u: only the first %u are "
				   "reacquired", what, ah->grh.sgid_index, IBCKPT_MAX_GIDS);
		return EOPNOTSUPP;
	}
	return 0;
}

/*
 * A PREPARE's refusals (restart.rst, "Exactly once"): the one told, and
 * returned, is the one that decides what the CLI does. EINPROGRESS first
 * (a fence that must complete before the job runs again: asked again,
 * frozen), then a refusal no retry cures (the first one found: the CLI
 * stops), then EBUSY (requests in flight: a later freeze may find them
 * done).
 */
struct refusal {
	int err;
	char msg[sizeof(restart_msg)];
};

static int refusal_rank(int err)
{
	return !err ? 0 : err == EBUSY ? 1 : err == EINPROGRESS ? 3 : 2;
}

/* A step's outcome, its reason taken from restart_msg (cleared for the next). */
static void refusal_add(struct refusal *r, int err)
{
	if (refusal_rank(err) > refusal_rank(r->err)) {
		r->err = err;
		snprintf(r->msg, sizeof(r->msg), "%s", restart_msg[0] ? restart_msg :
			 strerror(err));
	}
	restart_msg[0] = 0;
}

static int refusal_end(const struct refusal *r)
{
	snprintf(restart_msg, sizeof(restart_msg), "%s", r->msg);
	return r->err;
}

/* What the CLI says @qp's peer grants, -1 if it does not say. */
static int peer_access(const struct ibckpt_qp *qp, const struct ibckpt_rpeer *peers,
		       uint32_t npeers)
{
	uint32_t i;

	for (i = 0; i < npeers; i++)
		if (peers[i].qp == qp->obj.id)
			return (int)(peers[i].access & (IBV_ACCESS_REMOTE_WRITE |
							IBV_ACCESS_REMOTE_READ |
							IBV_ACCESS_REMOTE_ATOMIC));
	return -1;
}

/*
 * What cannot be released yet, or not now, checked before anything is torn
 * down or posted; every object, but for the first refusal no retry cures.
 * Fences are planned (ibckpt_fence_plan()) unless IBCKPT_RREL_NO_FENCE.
 */
static void release_check(struct ibckpt_context *ctx, uint32_t flags,
			  const struct ibckpt_rpeer *peers, uint32_t npeers, struct refusal *r)
{
	struct ibckpt_obj *o;
	struct ibckpt_qp *qp;
	int err;

	for_each_obj(ctx, o, false) {
		err = 0;
		switch (o->type) {
		case IBCKPT_SNAP_XRCD:
			ibckpt_restart_err("%s: an XRC domain cannot be released yet",
					   ctx->vctx.context.device->name);
			err = EOPNOTSUPP;
			break;
		case IBCKPT_SNAP_MW:
			err = ibckpt_mw_release_check(OBJ(o, struct ibckpt_mw));
			break;
		case IBCKPT_SNAP_SRQ:
			if (OBJ(o, struct ibckpt_srq)->type != IBV_SRQT_BASIC) {
				ibckpt_restart_err("an XRC SRQ cannot be released yet");
				err = EOPNOTSUPP;
			}
			break;
		case IBCKPT_SNAP_QP:
			qp = OBJ(o, struct ibckpt_qp);
			err = ibckpt_qp_release_check(qp, flags);
			if (!err && !(flags & IBCKPT_RREL_NO_FENCE))
				err = ibckpt_fence_plan(qp, peer_access(qp, peers, npeers));
			break;
		case IBCKPT_SNAP_AH:
			err = ibckpt_addr_publishable(&OBJ(o, struct ibckpt_ah)->attr,
						      "an address handle");
			break;
		}
		refusal_add(r, err);
		if (refusal_rank(r->err) >= 2)
			return;
	}
}

/*
 * Every QP of the process on a list: with an internal request outstanding
 * (@earlier: an earlier try's fence, say), or posted its planned fence
 * (ibckpt_fence_post(), stopping at the first failure, which @r keeps).
 * A QP whose fence completed since an earlier try gives its MR back.
 */
static struct ibckpt_qp *fences_list(bool earlier, struct refusal *r)
{
	struct ibckpt_qp *list = NULL, **tail = &list, *qp;
	struct ibckpt_context *ctx;
	struct ibckpt_obj *o;
	int err;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		for_each_obj(ctx, o, false) {
			if (o->type != IBCKPT_SNAP_QP)
				continue;
			qp = OBJ(o, struct ibckpt_qp);
			if (earlier) {
				qp->fence.posted = ibckpt_qp_internal_pending(qp);
				if (!qp->fence.posted) {	/* completed since, if any */
					ibckpt_fence_put(qp);
					qp->fence.kind = IBCKPT_FENCE_NONE;
				}
			} else if (r->err) {
				ibckpt_fence_unplan(qp);
			} else {
				err = ibckpt_fence_post(qp);
				refusal_add(r, err);
			}
			if (qp->fence.posted) {		/* in creation order */
				qp->fence.next = NULL;
				*tail = qp;
				tail = &qp->fence.next;
			}
		}
	}
	return list;
}

static void fences_unplan(void)
{
	struct ibckpt_context *ctx;
	struct ibckpt_obj *o;

	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next)
		for_each_obj(ctx, o, false)
			if (o->type == IBCKPT_SNAP_QP)
				ibckpt_fence_unplan(OBJ(o, struct ibckpt_qp));
}

/*
 * The context's vendor objects go, newest first. @again: a reacquire is
 * undone, and what the release recorded (the QPs' states and PSNs) stays.
 * (Not static: the whole-stack tests drive the objects' part of a release
 * and a reacquire on their fake vendor, whose device is not reopened.)
 */
void ibckpt_ctx_release_objects(struct ibckpt_context *ctx, bool again)
{
	struct ibckpt_obj *o;

	/*
	 * Windows first, whenever they were allocated: a vendor may refuse to
	 * deregister an MR a window is bound to (rxe, IBA 10.6.7.2.6), and
	 * rxe's type 2 window holds the QP that bound it.
	 */
	for_each_obj(ctx, o, true)
		if (o->type == IBCKPT_SNAP_MW)
			ibckpt_mw_release(OBJ(o, struct ibckpt_mw));
	for_each_obj(ctx, o, true) {
		switch (o->type) {
		case IBCKPT_SNAP_QP:
			if (again)
				ibckpt_qp_unacquire(OBJ(o, struct ibckpt_qp));
			else
				ibckpt_qp_release(OBJ(o, struct ibckpt_qp));
			break;
		case IBCKPT_SNAP_AH:
			ibckpt_ah_release(OBJ(o, struct ibckpt_ah));
			break;
		case IBCKPT_SNAP_SRQ:
			ibckpt_srq_release(OBJ(o, struct ibckpt_srq));
			break;
		case IBCKPT_SNAP_CQ:
			ibckpt_cq_release(OBJ(o, struct ibckpt_cq));
			break;
		case IBCKPT_SNAP_MR:
			ibckpt_mr_release(OBJ(o, struct ibckpt_mr));
			break;
		case IBCKPT_SNAP_PD:
			ibckpt_pd_release(OBJ(o, struct ibckpt_pd));
			break;
		}
	}
}

/*
 * Is a descriptor or mapping of an RDMA device left? @what names the kind
 * of file looked for: "rdma_cm" before a release (the application's own
 * connection manager, which cannot be released), NULL after (anything).
 */
static int leftovers(const char *what)
{
	char path[300], link[256], line[512];
	struct dirent *d;
	ssize_t n;
	FILE *maps;
	DIR *dir;
	int err = 0;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return 0;
	while (!err && (d = readdir(dir)) != NULL) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (what ? strstr(link, what) != NULL :
			   !strncmp(link, "/dev/infiniband/", 16) ||
			   !strcmp(link, "anon_inode:[infinibandevent]")) {
			ibckpt_restart_err("descriptor %s is open on %s%s", d->d_name, link,
					   what ? ": the application's connection manager "
					   "cannot be released" : " after the release");
			/* EBUSY says "in flight, try again later" (restart.rst) */
			err = what ? EOPNOTSUPP : EBUSY;
		}
	}
	closedir(dir);
	if (err || what)
		return err;
	maps = fopen("/proc/self/maps", "re");
	while (maps && fgets(line, sizeof(line), maps)) {
		if (strstr(line, "/dev/infiniband/")) {
			line[strcspn(line, "\n")] = 0;
			ibckpt_restart_err("mapping left after the release: %s", line);
			err = EBUSY;
			break;
		}
	}
	if (maps)
		fclose(maps);
	return err;
}

/**
 * ibckpt_release_prepare() - would a release succeed? Nothing is torn down
 * @flags: IBCKPT_RREL_*
 * @peers: what the QPs' peers grant, as the CLI read it (PREPARE's payload)
 * @npeers: entries in @peers
 *
 * The CQs are drained, the fences of an earlier try still outstanding are
 * waited for, every object is checked; then, only if every check of every
 * context passed, the fences the checks planned are posted and waited for,
 * all together (fence.c). A fence posted here is never left behind a
 * refusal for another reason: it is waited for as the others.
 * Context: as ibckpt_release(). Return: 0, or the refusal that decides
 * (struct refusal), its reason in restart_msg.
 */
int ibckpt_release_prepare(uint32_t flags, const struct ibckpt_rpeer *peers, uint32_t npeers)
{
	struct refusal r = { 0 };
	struct ibckpt_context *ctx;
	struct ibckpt_qp *list;
	struct ibckpt_cq *cq;
	uint32_t moved;
	int err;

	restart_msg[0] = 0;
	if (ibckpt_released) {
		ibckpt_restart_err("released already");
		return EALREADY;
	}
	if (!ibckpt_quiesced) {
		ibckpt_restart_err("not quiesced: the job must be frozen first");
		return EAGAIN;
	}
	refusal_add(&r, leftovers("/dev/infiniband/rdma_cm"));
	/*
	 * Completions that came after the quiesce's drain retire their
	 * requests first: a send completed there is not outstanding. They stay
	 * the application's (the private queue), released or not.
	 */
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		for (cq = ctx->cqs; cq; cq = cq->next) {
			moved = 0;
			err = ibckpt_cq_drain(cq, &moved);
			if (err)
				ibckpt_restart_err("cannot take a CQ's completions: out of memory");
			refusal_add(&r, err);
		}
	}
	/* even behind a refusal: one that must not outlive the freeze says so */
	list = fences_list(true, &r);
	if (list)
		refusal_add(&r, ibckpt_fences_wait(list, true));
	if (refusal_rank(r.err) >= 2)
		return refusal_end(&r);
	/* an earlier fence outstanding: the checks look for a lasting refusal only */
	if (r.err)
		flags |= IBCKPT_RREL_NO_FENCE;
	for (ctx = ibckpt_ctxs; ctx && refusal_rank(r.err) < 2; ctx = ctx->next)
		release_check(ctx, flags, peers, npeers, &r);
	if (r.err || (flags & IBCKPT_RREL_NO_FENCE)) {
		fences_unplan();
		return refusal_end(&r);
	}
	list = fences_list(false, &r);
	if (list)
		refusal_add(&r, ibckpt_fences_wait(list, false));
	return refusal_end(&r);
}

/**
 * ibckpt_release() - release every vendor resource of the process
 * @flags: IBCKPT_RREL_* (IBCKPT_RREL_NO_FENCE is not for a release)
 * @peers: as for ibckpt_release_prepare()
 * @npeers: likewise
 *
 * Context: the control thread, ibckpt_ctx_lock held, quiesced (every gate
 * closed). The gates stay closed until the GO of a reacquire.
 * Return: 0, EAGAIN if not quiesced, EALREADY, ibckpt_release_prepare()'s
 * refusals before anything is torn down, or EBUSY if something is left
 * open afterwards (then released all the same: a reacquire rebuilds it).
 */
int ibckpt_release(uint32_t flags, const struct ibckpt_rpeer *peers, uint32_t npeers)
{
	struct ibckpt_context *ctx;
	struct ibckpt_cq *cq;
	int err;

	err = ibckpt_release_prepare(flags & ~IBCKPT_RREL_NO_FENCE, peers, npeers);
	if (err)
		return err;
	/*
	 * Completions since the quiesce's drain are the application's: all of
	 * them, of every context, before anything is released (a drain that
	 * fails leaves everything as it was).
	 */
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		uint32_t moved = 0;

		for (cq = ctx->cqs; cq && !err; cq = cq->next)
			err = ibckpt_cq_drain(cq, &moved);
		if (err) {
			ibckpt_restart_err("cannot take a CQ's completions: out of memory");
			return err;
		}
	}
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		/* the events raised for them too: a destroyed CQ's are dropped */
		ibckpt_fwd_flush(ctx);
		ibckpt_ctx_release_objects(ctx, false);
		ibckpt_channel_release(ctx);
		err = ibckpt_context_release(ctx);
		if (err)
			break;
	}
	ibckpt_itimer_hold();	/* until GO (itimer.c) */
	ibckpt_released = true;
	return err ? err : leftovers(NULL);
}

static const char *mapped_name(const char *name, const struct ibckpt_rdev_map *map, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!strncmp(map[i].from, name, sizeof(map[i].from)))
			return map[i].to;
	return name;
}

/* The context's own addresses now, as peers know them. */
static int publish_addrs(struct ibckpt_context *ctx)
{
	struct ibckpt_ctx_ident *id = ctx->ident;
	struct ibv_port_attr pa;
	union ibv_gid g, zero = { 0 };
	uint32_t i;
	int err = 0;

	if (ibv_query_port(ctx->real, 1, &pa)) {
		ibckpt_restart_err("%s: port 1: %s", id->devname, strerror(errno));
		return errno;
	}
	for (i = 0; i < id->ngid && !err; i++) {
		if (!memcmp(&id->vgid[i], &zero, sizeof(zero)) ||
		    ibv_query_gid(ctx->real, 1, (int)i, &g))
			continue;
		err = ibckpt_ident_add(IBCKPT_ID_GID, id->vdev, i, 0, &id->vgid[i], &g);
	}
	if (!err && id->vlid)
		err = ibckpt_ident_add(IBCKPT_ID_LID, id->vdev, id->vlid, pa.lid, NULL, NULL);
	return err;
}

/* Every object of a reopened context re-created (as ibckpt_ctx_release_objects()). */
int ibckpt_ctx_recreate_objects(struct ibckpt_context *ctx)
{
	struct ibckpt_obj *o;
	int err = 0;

	for_each_obj(ctx, o, false) {
		switch (o->type) {
		case IBCKPT_SNAP_PD:
			err = ibckpt_pd_recreate(OBJ(o, struct ibckpt_pd));
			break;
		case IBCKPT_SNAP_MR:
			err = ibckpt_mr_recreate(OBJ(o, struct ibckpt_mr));
			break;
		case IBCKPT_SNAP_CQ:
			err = ibckpt_cq_recreate(OBJ(o, struct ibckpt_cq));
			break;
		case IBCKPT_SNAP_SRQ:
			err = ibckpt_srq_recreate(OBJ(o, struct ibckpt_srq));
			break;
		case IBCKPT_SNAP_QP:
			err = ibckpt_qp_recreate(OBJ(o, struct ibckpt_qp));
			break;
		case IBCKPT_SNAP_MW:	/* unbound yet: bound again below, and at REMAP */
			err = ibckpt_mw_recreate(OBJ(o, struct ibckpt_mw));
			break;
		}		/* AHs wait for their destinations' addresses (REMAP) */
		if (err)
			return err;
	}
	/* receives last: each may name any MR, registered before or after its queue */
	for_each_obj(ctx, o, false) {
		if (o->type == IBCKPT_SNAP_SRQ)
			err = ibckpt_srq_refill(OBJ(o, struct ibckpt_srq));
		else if (o->type == IBCKPT_SNAP_QP)
			err = ibckpt_qp_refill(OBJ(o, struct ibckpt_qp));
		if (err)
			return err;
	}
	/* type 1 windows bound again (their keys published); type 2 ones at REMAP */
	return ibckpt_mw_bind_type1(ctx);
}

/**
 * ibckpt_reacquire() - open the devices again and re-create the objects
 * @map: devices to open instead of others
 * @n: entries in @map
 * @ids: set to the process's new identities (valid until the next call)
 * @nids: set to their number
 *
 * A process that was not released answers with no identity.
 * Return: 0 or an errno (the message says which object failed).
 */
int ibckpt_reacquire(const struct ibckpt_rdev_map *map, uint32_t n,
		     struct ibckpt_ident **ids, uint32_t *nids)
{
	struct ibckpt_context *ctx;
	uint32_t i;
	int err = 0;

	restart_msg[0] = 0;
	nidents = 0;
	for (i = 0; i < n; i++) {	/* the names are used as C strings */
		if (!memchr(map[i].from, 0, sizeof(map[i].from)) ||
		    !memchr(map[i].to, 0, sizeof(map[i].to))) {
			ibckpt_restart_err("device map entry %u: a name without its NUL", i);
			return EINVAL;
		}
	}
	/* a reacquire before this one failed, or its CLI went: start over */
	if (ibckpt_released) {
		err = ibckpt_unacquire();
		if (err)
			return err;
	}
	for (ctx = ibckpt_ctxs; ctx && ibckpt_released && !err; ctx = ctx->next) {
		err = ibckpt_context_reopen(ctx, mapped_name(ctx->ident->devname, map, n));
		if (!err)
			err = publish_addrs(ctx);
		if (!err)
			err = ibckpt_ctx_recreate_objects(ctx);
	}
	if (err && ibckpt_unacquire())	/* released as before: a retry can work */
		ibckpt_restart_err("(and what was re-created could not all be destroyed)");
	*ids = idents;
	*nids = err ? 0 : nidents;
	return err;
}

/**
 * ibckpt_unacquire() - undo a reacquire that did not reach GO
 *
 * A reacquire that failed part way (an object the device refused, a peer
 * missing at REMAP, a CLI gone between the phases) leaves contexts open and
 * objects re-created. What the release recorded (states, PSNs, logged
 * receives, drained completions) is not changed by a re-creation, so
 * destroying what was re-created makes the process released as it was; a
 * new REACQUIRE, with another device map say, starts over. A process
 * already at GO (or never released) has nothing to undo.
 * Context: the control thread, ibckpt_ctx_lock held, gates closed.
 * Return: 0, or EBUSY if something of a device is left open.
 */
int ibckpt_unacquire(void)
{
	struct ibckpt_context *ctx;
	bool any = false;
	int err = 0;

	if (!ibckpt_released)
		return 0;
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next) {
		if (!ctx->real)
			continue;
		any = true;
		ibckpt_fwd_flush(ctx);		/* events of the re-created objects */
		ibckpt_ctx_release_objects(ctx, true);
		ibckpt_channel_release(ctx);
		if (ibckpt_context_release(ctx))
			err = EBUSY;
	}
	if (any)
		ibckpt_dbg("an unfinished reacquire undone: released again");
	return err ? err : any ? leftovers(NULL) : 0;
}

/**
 * ibckpt_ctx_set_remapped() - a context's IDs are virtual from now on
 * @ctx: its gate closed (a restart's reacquire)
 *
 * Every QP of it takes the translating paths.
 */
void ibckpt_ctx_set_remapped(struct ibckpt_context *ctx)
{
	struct ibckpt_obj *o;

	pthread_mutex_lock(&ctx->lock);
	ctx->remapped = true;
	ibckpt_ctx_slow_polls(ctx, IBCKPT_CQ_REMAPPED, true);	/* QPNs translated back */
	/*
	 * The translating entries (verbs.c); with IBCKPT_STATS the counting
	 * ones stay, and count on through the restart.
	 */
	ibckpt_ctx_set_datapath(ctx);
	pthread_mutex_unlock(&ctx->lock);
	for_each_obj(ctx, o, false)
		if (o->type == IBCKPT_SNAP_QP)
			ibckpt_qp_set_paths(OBJ(o, struct ibckpt_qp));
}

/**
 * ibckpt_remap() - the job's identities in; every QP to RTR
 * @ids: every process's identities
 * @n: their number
 *
 * Return: 0 or an errno.
 */
int ibckpt_remap(const struct ibckpt_ident *ids, uint32_t n)
{
	struct ibckpt_context *ctx;
	struct ibckpt_obj *o;
	int err;

	restart_msg[0] = 0;
	if (!ibckpt_released)
		return 0;
	err = ibckpt_remap_set(ids, n);
	if (err) {
		ibckpt_restart_err("identities: %s", strerror(err));
		return err;
	}
	for (ctx = ibckpt_ctxs; ctx && !err; ctx = ctx->next) {
		err = ibckpt_remap_addrs(&ctx->addrs);
		if (err) {
			ibckpt_restart_err("%s: address translation: %s", ctx->ident->devname,
					   strerror(err));
			break;
		}
		ibckpt_ctx_set_remapped(ctx);
		for_each_obj(ctx, o, false) {
			if (o->type == IBCKPT_SNAP_AH)
				err = ibckpt_ah_recreate(OBJ(o, struct ibckpt_ah));
			else if (o->type == IBCKPT_SNAP_QP)
				err = ibckpt_qp_to_rtr(OBJ(o, struct ibckpt_qp));
			if (err)
				break;
		}
		/*
		 * Type 2 windows bound again through their own QPs, now at RTR:
		 * before GO, so that no peer's request reaches one unbound (GO
		 * is when any process of the job posts again).
		 */
		for_each_obj(ctx, o, false) {
			if (err)
				break;
			if (o->type == IBCKPT_SNAP_MW)
				err = ibckpt_mw_rebind(OBJ(o, struct ibckpt_mw));
		}
	}
	return err;
}

/**
 * ibckpt_go() - every QP of the job is at RTR: to RTS, sends posted again
 *
 * The caller reopens the gates. Return: 0 or an errno.
 */
int ibckpt_go(void)
{
	struct ibckpt_context *ctx;
	struct ibckpt_obj *o;
	int err = 0;

	restart_msg[0] = 0;
	if (!ibckpt_released)
		return 0;
	for (ctx = ibckpt_ctxs; ctx && !err; ctx = ctx->next)
		for_each_obj(ctx, o, false)
			if (o->type == IBCKPT_SNAP_QP) {
				err = ibckpt_qp_to_rts(OBJ(o, struct ibckpt_qp));
				if (err)
					break;
			}
	if (!err) {
		ibckpt_released = false;
		ibckpt_itimer_resume();
	}
	return err;
}
