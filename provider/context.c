// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Contexts: the application's context is ours; inside it, a context the
 * vendor opened on the same device.
 *
 * A uverbs file holds one user context, and completion channels and async
 * events belong to the file. So the vendor's context is opened the normal way
 * (verbs_open_device(): its own cmd_fd, the vendor's get_context, its async
 * fd) and ours shares that file: our cmd_fd is a duplicate of the vendor's.
 * Channels the application creates on our context are then valid for the
 * vendor's CQs. Our async_fd is a pipe of ours, fed from the vendor's async
 * file with events that name shadows (channel.c): after a release it is
 * still the same file, and the vendor's can go.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "restart.h"

/*
 * Every open context of the process: what the control thread quiesces,
 * snapshots, releases and reacquires. In a forked child, the contexts
 * inherited from the parent are on the foreign list instead (fork.c): only
 * ibckpt_free_context() looks there.
 */
pthread_mutex_t ibckpt_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
struct ibckpt_context *ibckpt_ctxs;		/* under ibckpt_ctx_lock */
struct ibckpt_context *ibckpt_foreign_ctxs;	/* under ibckpt_ctx_lock */

/* Every device's lazy set-up (device_finish()): once per open, cold. */
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

struct ibckpt_gate ibckpt_open_gate;	/* zero: open */

/**
 * ibckpt_obj_add() - put a new shadow on its context's list
 * @ctx: the context
 * @obj: the shadow's list entry
 * @type: enum ibckpt_snap_type
 */
void ibckpt_obj_add(struct ibckpt_context *ctx, struct ibckpt_obj *obj, uint32_t type)
{
	obj->id = ibckpt_new_id();
	obj->type = type;
	pthread_mutex_lock(&ctx->lock);
	obj->next = &ctx->objs;
	obj->prev = ctx->objs.prev;
	ctx->objs.prev->next = obj;
	ctx->objs.prev = obj;
	pthread_mutex_unlock(&ctx->lock);
	atomic_fetch_add(&ctx->stats.objects, 1);
}

void ibckpt_obj_del(struct ibckpt_context *ctx, struct ibckpt_obj *obj)
{
	pthread_mutex_lock(&ctx->lock);
	obj->prev->next = obj->next;
	obj->next->prev = obj->prev;
	pthread_mutex_unlock(&ctx->lock);
	ibckpt_id_put(obj->id);
}

/* Fill the vendor's ibv_device from ours, which libibverbs has filled by now. */
static void device_finish(struct ibckpt_device *dev)
{
	struct ibv_device *shadow = &dev->vdev.device, *real = &dev->real->device;

	pthread_mutex_lock(&dev_lock);
	if (!dev->real_ready) {
		real->node_type = shadow->node_type;
		real->transport_type = shadow->transport_type;
		memcpy(real->dev_name, shadow->dev_name, sizeof(real->dev_name));
		memcpy(real->dev_path, shadow->dev_path, sizeof(real->dev_path));
		memcpy(real->name, shadow->name, sizeof(real->name));
		memcpy(real->ibdev_path, shadow->ibdev_path, sizeof(real->ibdev_path));
		dev->real->core_support = dev->vdev.core_support;
		dev->real_ready = true;
	}
	pthread_mutex_unlock(&dev_lock);
}

/**
 * ibckpt_context_init() - the shadow context's own state
 * @ctx: the shadow, zeroed
 * @real: the vendor's context it stacks on
 */
void ibckpt_context_init(struct ibckpt_context *ctx, struct ibv_context *real)
{
	ibckpt_fork_init();	/* a child of this process must know it is one */
	ctx->real = real;
	ibckpt_gate_init(&ctx->gate);
	pthread_mutex_init(&ctx->lock, NULL);
	ibckpt_spin_init(&ctx->qpn_lock);
	ibckpt_vidmap_init(&ctx->qpns);
	ibckpt_vidmap_init(&ctx->qpn_virt);
	ibckpt_vidmap_init(&ctx->xsrqs);
	ibckpt_spin_init(&ctx->key_lock);
	atomic_init(&ctx->key_stamp, 1);
	ibckpt_vidmap_init(&ctx->lkeys);
	ibckpt_vidmap_init(&ctx->rkeys);
	ibckpt_vidmap_init(&ctx->mw_virt);
	ibckpt_vidmap_init(&ctx->mw_real);
	ibckpt_addrs_init(&ctx->addrs);
	ctx->objs.next = ctx->objs.prev = &ctx->objs;
	ctx->id = ibckpt_new_id();
	ctx->wc_inv = ibckpt_mw_wc_inv(NULL);
}

/* Undoes ibckpt_context_init(); the vendor's context is the caller's. */
void ibckpt_context_fini(struct ibckpt_context *ctx)
{
	ibckpt_id_put(ctx->id);
	ibckpt_vidmap_destroy(&ctx->qpns);
	ibckpt_vidmap_destroy(&ctx->qpn_virt);
	ibckpt_vidmap_destroy(&ctx->xsrqs);
	free(ctx->ident);
	ibckpt_vidmap_destroy(&ctx->lkeys);
	ibckpt_vidmap_destroy(&ctx->rkeys);
	ibckpt_vidmap_destroy(&ctx->mw_virt);
	ibckpt_vidmap_destroy(&ctx->mw_real);
	ibckpt_addrs_destroy(&ctx->addrs);
	pthread_mutex_destroy(&ctx->lock);
}

struct verbs_context *ibckpt_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					   void *private_data)
{
	struct ibckpt_device *dev = to_idev(ibdev);
	struct ibckpt_context *ctx;
	struct ibv_context *real;
	int sfd, afd, err;

	device_finish(dev);
	/* No device is opened while released: a checkpointer would find it. */
	err = ibckpt_gate_enter(&ibckpt_open_gate);	/* never foreign: fork.c resets it */
	if (err) {
		close(cmd_fd);
		errno = err;
		return NULL;
	}
	real = verbs_open_device(&dev->real->device, private_data);
	if (!real) {
		err = errno;
		ibckpt_gate_exit(&ibckpt_open_gate);
		fprintf(stderr, "ibckpt: %s: provider %s could not open the device: %s\n",
			ibdev->name, dev->vendor->name, strerror(err));
		close(cmd_fd);
		errno = err;
		return NULL;
	}
	close(cmd_fd);
	/*
	 * The kernel told the vendor's device what it supports (its get_context):
	 * ours says the same, or libibverbs strips optional MR access flags
	 * (IBV_ACCESS_RELAXED_ORDERING) before our reg_mr sees them.
	 */
	dev->vdev.core_support = dev->real->core_support;
	sfd = fcntl(real->cmd_fd, F_DUPFD_CLOEXEC, 0);
	afd = real->async_fd < 0 ? -1 : fcntl(real->async_fd, F_DUPFD_CLOEXEC, 0);
	if (sfd < 0 || (real->async_fd >= 0 && afd < 0)) {
		err = errno;
		goto err_fds;
	}
	ctx = _verbs_init_and_alloc_context(ibdev, sfd, sizeof(*ctx),
					    &((struct ibckpt_context *)NULL)->vctx,
					    dev->driver_id);
	if (!ctx) {		/* it closed sfd */
		err = errno;
		sfd = -1;
		goto err_fds;
	}
	ctx->vctx.context.async_fd = afd;
	ctx->vctx.context.num_comp_vectors = real->num_comp_vectors;
	ibckpt_context_init(ctx, real);
	ctx->wc_inv = ibckpt_mw_wc_inv(dev->vendor->name);
	ibckpt_ctx_set_ops(ctx);	/* verbs.c */
	pthread_mutex_lock(&ibckpt_ctx_lock);
	if (ibckpt_quiesced) {		/* opened while frozen: closed like the others */
		atomic_store(&ctx->gate.closed, 1);
		ctx->gate_closed = true;
	}
	ctx->next = ibckpt_ctxs;
	ibckpt_ctxs = ctx;
	pthread_mutex_unlock(&ibckpt_ctx_lock);
	ibckpt_gate_exit(&ibckpt_open_gate);
	ibckpt_control_start();
	err = ibckpt_async_open(ctx);	/* after the start: the control thread forwards */
	if (err) {
		fprintf(stderr, "ibckpt: %s: async events: %s\n", ibdev->name, strerror(err));
		ibckpt_free_context(&ctx->vctx.context);
		errno = err;
		return NULL;
	}
	ibckpt_dbg("%s: context stacked on provider %s", ibdev->name, dev->vendor->name);
	return &ctx->vctx;

err_fds:
	if (sfd >= 0)
		close(sfd);
	if (afd >= 0)
		close(afd);
	ibv_close_device(real);
	ibckpt_gate_exit(&ibckpt_open_gate);
	errno = err;
	return NULL;
}

static void print_stats(struct ibckpt_context *ctx)
{
	struct ibckpt_stats *s = &ctx->stats;

	fprintf(stderr, "ibckpt: stats %s: post_send %lu post_recv %lu post_srq_recv %lu "
		"poll_cq %lu wc %lu cq_events %lu async_events %lu objects %lu quiesces %lu "
		"drained %lu\n",
		ctx->vctx.context.device->name, atomic_load(&s->post_send),
		atomic_load(&s->post_recv), atomic_load(&s->post_srq_recv),
		atomic_load(&s->poll_cq), atomic_load(&s->wc), atomic_load(&s->cq_events),
		atomic_load(&s->async_events), atomic_load(&s->objects),
		atomic_load(&s->quiesces), atomic_load(&s->drained));
}

/* Programs that never close their contexts (librdmacm's) report at exit. */
static void __attribute__((destructor)) ibckpt_stats_at_exit(void)
{
	struct ibckpt_context *ctx;

	if (!getenv("IBCKPT_STATS"))
		return;
	pthread_mutex_lock(&ibckpt_ctx_lock);
	for (ctx = ibckpt_ctxs; ctx; ctx = ctx->next)
		print_stats(ctx);
	pthread_mutex_unlock(&ibckpt_ctx_lock);
}

void ibckpt_free_context(struct ibv_context *context)
{
	struct ibckpt_context *ctx = to_ictx(context), **p;

	/* a foreign context's statistics are its parent's, which prints them */
	if (getenv("IBCKPT_STATS") && !ctx->foreign)
		print_stats(ctx);
	pthread_mutex_lock(&ibckpt_ctx_lock);
	for (p = ctx->foreign ? &ibckpt_foreign_ctxs : &ibckpt_ctxs; *p; p = &(*p)->next) {
		if (*p == ctx) {
			*p = ctx->next;
			break;
		}
	}
	pthread_mutex_unlock(&ibckpt_ctx_lock);
	ibckpt_channel_cleanup(ctx);
	if (ctx->real)		/* NULL: released (restart.h) and never reacquired */
		ibv_close_device(ctx->real);
	ibckpt_context_fini(ctx);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

/**
 * ibckpt_context_atfork() - a fork's part of the contexts (fork.c)
 * @ph: the phase
 *
 * In the child, every context is its parent's: foreign, off ibckpt_ctxs,
 * its gate refusing every verb. The gates the parent held closed (a
 * freeze) or counted its threads in are the parent's: the open gate and
 * the freeze and release state start anew, so that the child opens,
 * freezes and restarts its own contexts as any process.
 */
void ibckpt_context_atfork(enum ibckpt_fork_phase ph)
{
	struct ibckpt_context *ctx, *next;

	if (ph == IBCKPT_FORK_PREPARE) {
		pthread_mutex_lock(&ibckpt_ctx_lock);
		return;
	}
	if (ph == IBCKPT_FORK_CHILD) {
		for (ctx = ibckpt_ctxs; ctx; ctx = next) {
			next = ctx->next;
			ibckpt_gate_make_foreign(&ctx->gate);
			ctx->gate_closed = false;
			ctx->foreign = true;
			ibckpt_ctx_set_datapath(ctx);	/* posts and polls refused */
			ctx->next = ibckpt_foreign_ctxs;
			ibckpt_foreign_ctxs = ctx;
		}
		ibckpt_ctxs = NULL;
		ibckpt_gate_init(&ibckpt_open_gate);
		ibckpt_released = false;
		ibckpt_itimer_forget();	/* a child has no interval timer of its parent's */
	}
	pthread_mutex_unlock(&ibckpt_ctx_lock);
}

/* dev_lock: real_ready is the process's, valid in a child. */
void ibckpt_device_atfork(enum ibckpt_fork_phase ph)
{
	if (ph == IBCKPT_FORK_PREPARE)
		pthread_mutex_lock(&dev_lock);
	else
		pthread_mutex_unlock(&dev_lock);
}

/* Does the caller's struct ibv_device_attr_ex of @size bytes have @field? */
#define ATTR_HAS(size, field)						\
	(offsetof(struct ibv_device_attr_ex, field) +			\
	 sizeof(((struct ibv_device_attr_ex *)0)->field) <= (size))

/*
 * The vendor's answer, less what ibckpt refuses to stack: an application
 * that sees a capability tries it and fails, where one that does not
 * falls back (RSS and WQs, tag-matching SRQs, device memory, completion
 * timestamps). Device identity (GUIDs) is virtual = real until a restart.
 */
int ibckpt_query_device_ex(struct ibv_context *context,
				  const struct ibv_query_device_ex_input *input,
				  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_context *real = to_ictx(context)->real;
	struct verbs_context *rv = verbs_get_ctx(real);
	int ret = rv->query_device_ex(real, input, attr, attr_size);

	if (ret)
		return ret;
	if (ATTR_HAS(attr_size, completion_timestamp_mask))
		attr->completion_timestamp_mask = 0;
	if (ATTR_HAS(attr_size, hca_core_clock))
		attr->hca_core_clock = 0;
	if (ATTR_HAS(attr_size, rss_caps))
		memset(&attr->rss_caps, 0, sizeof(attr->rss_caps));
	if (ATTR_HAS(attr_size, max_wq_type_rq))
		attr->max_wq_type_rq = 0;
	if (ATTR_HAS(attr_size, tm_caps))
		memset(&attr->tm_caps, 0, sizeof(attr->tm_caps));
	if (ATTR_HAS(attr_size, max_dm_size))
		attr->max_dm_size = 0;
	return 0;
}

/* The port's own LID and its SM's, as the application knows them (addr.h). */
int ibckpt_query_port(struct ibv_context *context, uint8_t port,
			     struct ibv_port_attr *attr)
{
	struct ibckpt_context *ctx = to_ictx(context);
	int ret = ibv_query_port(ctx->real, port, attr);

	if (!ret) {
		attr->lid = ibckpt_lid_to_virtual(&ctx->addrs, attr->lid);
		attr->sm_lid = ibckpt_lid_to_virtual(&ctx->addrs, attr->sm_lid);
	}
	return ret;
}

/**
 * ibckpt_await_acks() - wait until the application acknowledged its events
 * @mutex: the shadow's, which libibverbs' ibv_ack_*() take
 * @cond: the shadow's, which they signal
 * @acked: the shadow's count of acknowledged events, kept by libibverbs
 * @obtained: the events of the shadow the application obtained
 *
 * What libibverbs' own destroy does (ibv_cmd_destroy_cq/qp/srq()) with the
 * count the kernel returns. Called outside the gate: the acknowledging
 * thread may be parked by a freeze meanwhile.
 */
void ibckpt_await_acks(pthread_mutex_t *mutex, pthread_cond_t *cond, const uint32_t *acked,
		       uint32_t obtained)
{
	pthread_mutex_lock(mutex);
	while (*acked != obtained)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

/*
 * libibverbs read the event from our async file (channel.c wrote it there,
 * its element the shadow already): the shadow counts it, for its destroy
 * to wait for the application's acknowledgement.
 */
void ibckpt_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	(void)context;
	switch (ibckpt_async_obj(event->event_type)) {
	case IBCKPT_ASYNC_CQ:
		atomic_fetch_add(&to_icq(event->element.cq)->async_seen, 1);
		break;
	case IBCKPT_ASYNC_QP:
		atomic_fetch_add(&to_iqp(event->element.qp)->async_seen, 1);
		break;
	case IBCKPT_ASYNC_SRQ:
		atomic_fetch_add(&to_isrq(event->element.srq)->async_seen, 1);
		break;
	default:		/* port and device events carry no object; no WQ is stacked */
		break;
	}
}

/* Restart (restart.h) ----------------------------------------------- */

/**
 * ibckpt_id_taken() - may a new object of @ctx keep the vendor's @id?
 * @ctx: the context it is created on
 * @kind: IBCKPT_ID_QPN, IBCKPT_ID_RKEY for an MR's key, or IBCKPT_ID_MW for a
 *	window's
 * @id: the QPN or key the vendor handed out
 *
 * A new object's virtual ID is the vendor's. After a restart that can be
 * the virtual ID of another object: one of the context's own (the data path
 * would translate it to that object's real one) or one the job knows on the
 * same device (a peer would). A window's key byte moves with its binds, so
 * windows and MRs must not share an index: an MR's key is taken whole by
 * another MR's and by its index by a window's; a window's key is taken by
 * its index, by a window's or an MR's (remap.c keeps the job's MR keys by
 * index too). Its creator then asks the vendor for another.
 *
 * The context's own MR keys are looked at whole: a restored MR's virtual key
 * is in the job's table too, and a key made since is the vendor's, which
 * gives no window a live MR's index (rxe keeps them apart, mlx5 has one space
 * for both).
 * Return: true if @id is taken.
 */
bool ibckpt_id_taken(struct ibckpt_context *ctx, uint32_t kind, uint32_t id)
{
	uint64_t vdev;
	bool local;

	if (!ctx->remapped && !ibckpt_remap_active())
		return false;	/* never restarted: virtual = real everywhere */
	if (kind == IBCKPT_ID_QPN) {
		ibckpt_spin_lock(&ctx->qpn_lock);
		local = ibckpt_vidmap_find(&ctx->qpns, id, 0) != NULL;
		ibckpt_spin_unlock(&ctx->qpn_lock);
	} else {
		ibckpt_spin_lock(&ctx->key_lock);
		local = ibckpt_vidmap_find(&ctx->lkeys, id, 0) ||
			ibckpt_vidmap_find(&ctx->rkeys, id, 0) ||
			ibckpt_vidmap_find(&ctx->mw_virt, id >> 8, 0);
		ibckpt_spin_unlock(&ctx->key_lock);
	}
	vdev = ctx->ident ? ctx->ident->vdev : ibv_get_device_guid(ctx->real->device);
	if (kind == IBCKPT_ID_MW)
		return local || ibckpt_remap_taken(IBCKPT_ID_MW, vdev, id) ||
		       ibckpt_remap_taken(IBCKPT_ID_RKEY, vdev, id) ||
		       ibckpt_remap_taken(IBCKPT_ID_RKEY_INDEX, vdev, id);
	return local || ibckpt_remap_taken(kind, vdev, id) ||
	       (kind == IBCKPT_ID_RKEY && ibckpt_remap_taken(IBCKPT_ID_MW, vdev, id));
}

/* What peers know the context by: taken at its first release, kept after. */
static int ident_take(struct ibckpt_context *ctx)
{
	struct ibckpt_ctx_ident *id;
	struct ibv_port_attr pa;
	uint32_t i, n;

	if (ctx->ident)
		return 0;
	id = calloc(1, sizeof(*id));
	if (!id)
		return ENOMEM;
	if (ibv_query_port(ctx->real, 1, &pa)) {
		free(id);
		return errno;
	}
	id->vdev = ibv_get_device_guid(ctx->real->device);
	id->vlid = pa.lid;
	n = pa.gid_tbl_len < IBCKPT_MAX_GIDS ? (uint32_t)pa.gid_tbl_len : IBCKPT_MAX_GIDS;
	for (i = 0; i < n; i++)
		if (ibv_query_gid(ctx->real, 1, (int)i, &id->vgid[i]))
			memset(&id->vgid[i], 0, sizeof(id->vgid[i]));
	id->ngid = n;
	snprintf(id->devname, sizeof(id->devname), "%s", ctx->vctx.context.device->name);
	ctx->ident = id;
	return 0;
}

/**
 * ibckpt_context_release() - close the vendor's context behind the shadow
 * @ctx: a context whose objects are all released
 *
 * The application's cmd_fd keeps its number, behind /dev/null (a stray
 * write fails, as it must); its async_fd is our pipe anyway (a reader keeps
 * waiting, for the events of the reacquired objects). Then nothing of the
 * device is open or mapped in the process.
 * Return: 0 or an errno.
 */
int ibckpt_context_release(struct ibckpt_context *ctx)
{
	int nul, err;

	err = ident_take(ctx);
	if (err) {
		ibckpt_restart_err("%s: %s", ctx->vctx.context.device->name, strerror(err));
		return err;
	}
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul < 0 || dup3(nul, ctx->vctx.context.cmd_fd, O_CLOEXEC) < 0) {
		err = errno;
		if (nul >= 0)
			close(nul);
		ibckpt_restart_err("%s: placeholder descriptor: %s",
				   ctx->vctx.context.device->name, strerror(err));
		return err;
	}
	close(nul);
	ibv_close_device(ctx->real);
	ctx->real = NULL;
	return 0;
}

/**
 * ibckpt_context_reopen() - open a vendor context again behind the shadow
 * @ctx: a released context
 * @name: the device to open (its own, or the one a device map names)
 *
 * The new device files take the shadow's descriptor numbers back.
 * Return: 0, ENODEV, or an errno.
 */
int ibckpt_context_reopen(struct ibckpt_context *ctx, const char *name)
{
	const struct verbs_device *self =
		ibckpt_container_of(ctx->vctx.context.device, struct verbs_device, device);
	struct ibv_device **list, *dev = NULL;
	struct ibckpt_device *idev;
	struct ibv_context *real;
	int i, n, err = 0;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(list[i]->name, name) &&
		    ibckpt_container_of(list[i], struct verbs_device, device)->ops == self->ops)
			dev = list[i];
	if (!dev) {
		ibckpt_restart_err("no device %s stacked by ibckpt", name);
		err = ENODEV;
		goto out;
	}
	idev = to_idev(dev);
	device_finish(idev);
	real = verbs_open_device(&idev->real->device, NULL);
	if (!real) {
		err = errno;
		ibckpt_restart_err("%s: provider %s could not open the device: %s", name,
				   idev->vendor->name, strerror(err));
		goto out;
	}
	if (dup3(real->cmd_fd, ctx->vctx.context.cmd_fd, O_CLOEXEC) < 0) {
		err = errno;
		ibckpt_restart_err("%s: descriptors: %s", name, strerror(err));
		ibv_close_device(real);
		goto out;
	}
	ctx->real = real;
	ctx->wc_inv = ibckpt_mw_wc_inv(idev->vendor->name);	/* a map may name another's */
	ibckpt_async_reopen(ctx);
	if (name != ctx->ident->devname)	/* may be the same string */
		snprintf(ctx->ident->devname, sizeof(ctx->ident->devname), "%s", name);
out:
	if (list)
		ibv_free_device_list(list);
	return err;
}
