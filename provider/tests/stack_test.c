// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The whole provider stacked on a fake vendor, under ASan + UBSan: the verbs
 * rxe on Debian's 6.1 kernel lacks, so that the VM can only show ibckpt
 * giving rxe's own error (XRC, atomic write through ibv_wr_*, TSO on raw
 * packet QPs), and the LID/GID translation that only a restart sets up.
 *
 * The provider's sources are linked in whole, over the vendor of
 * fake_vendor.c. This file holds the application's side the cases share
 * (its context and PD, CQs, QPs and posts, snapshot reading) and main(),
 * which runs the cases of the stack_*_test.c files.
 */
#include "stack_test.h"

int stack_case_failed;

struct ibckpt_context *ctx;
struct ibckpt_pd pd;

/* Put ctx on (or take it off, from the head) the process's list, as a device open does. */
void ctx_list(bool on)
{
	pthread_mutex_lock(&ibckpt_ctx_lock);
	if (on) {
		ctx->next = ibckpt_ctxs;
		ibckpt_ctxs = ctx;
	} else {
		ibckpt_ctxs = ctx->next;
	}
	pthread_mutex_unlock(&ibckpt_ctx_lock);
}

void app_init(void)
{
	int p[2];

	memset(&v, 0, sizeof(v));
	ctx = fake_alloc(sizeof(*ctx));
	ibckpt_context_init(ctx, &vendor.context);
	pd.ibv_pd.context = &ctx->vctx.context;
	pd.real = &vendor_pd;
	/* the vendor's async file; ours starts as a duplicate, as libibverbs' */
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	vendor.context.async_fd = p[0];
	vendor_async_wr = p[1];
	ctx->vctx.context.async_fd = dup(p[0]);
	CHECK(ctx->vctx.context.async_fd >= 0);
	CHECK_EQ(ibckpt_async_open(ctx), 0);
}

void app_fini(void)
{
	CHECK(ctx->objs.next == &ctx->objs);	/* every shadow gone */
	ibckpt_channel_cleanup(ctx);		/* as free_context */
	ibckpt_context_fini(ctx);
	close(ctx->vctx.context.async_fd);	/* verbs_uninit_context() */
	close(vendor.context.async_fd);
	close(vendor_async_wr);
	free(ctx);
}

/* Does the application's async file hold @n events (the forwarder's work)? */
bool async_holds(unsigned int n)
{
	int i, bytes = -1;

	for (i = 0; i < 2000; i++) {
		CHECK_EQ(ioctl(ctx->vctx.context.async_fd, FIONREAD, &bytes), 0);
		if (bytes == (int)(n * sizeof(struct async_desc)))
			return true;
		usleep(1000);
	}
	return false;
}

struct ibv_xrcd *open_xrcd(void)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = 7, .oflags = O_CREAT,
	};
	struct ibv_xrcd *x = ibckpt_open_xrcd(&ctx->vctx.context, &a);

	CHECK(x != NULL);
	return x;
}

struct ibv_srq *xsrq(struct ibv_xrcd *x, struct ibv_cq *cq, void *app_context)
{
	struct ibv_srq_init_attr_ex a = {
		.srq_context = app_context,
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .pd = &pd.ibv_pd, .xrcd = x, .cq = cq,
	};
	struct ibv_srq *s = ibckpt_create_srq_ex(&ctx->vctx.context, &a);

	CHECK(s != NULL);
	return s;
}

/* A sending QP (XRC or RC) on cq; send_ops_flags 0: no ibv_wr_* API. */
struct ibv_qp *send_qp(struct ibv_cq *cq, enum ibv_qp_type type, uint64_t send_ops_flags)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 4, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd.ibv_pd,
		.send_ops_flags = send_ops_flags,
	};
	struct ibv_qp *q;

	if (send_ops_flags)
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);
	CHECK(q != NULL);
	CHECK(v.qp_attr.pd == &vendor_pd);
	CHECK_EQ(v.qp_attr.send_ops_flags, send_ops_flags);	/* the vendor's QP can */
	if (q)
		q->state = IBV_QPS_RTS;	/* as libibverbs' ibv_modify_qp() would leave it */
	return q;
}

/* The context's snapshot, as the control thread would build it (free() it). */
void *snapshot(void)
{
	static struct ibv_device dev = { .name = "fake0" };
	void *buf = NULL;
	size_t len = 0;

	ctx->vctx.context.device = &dev;
	ibckpt_ctxs = ctx;
	CHECK_EQ(ibckpt_snapshot_build(1, 0, false, &buf, &len), 0);
	ibckpt_ctxs = NULL;
	return buf;
}

void post_recv(struct ibv_srq *s, uint64_t wr_id, uint64_t addr)
{
	struct ibv_sge sge = { .addr = addr, .length = 64, .lkey = 1 };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_EQ(ibckpt_post_srq_recv(s, &wr, &bad), 0);
	CHECK_EQ(wr.wr_id, wr_id);		/* the application's list is as it was */
}

/* A snapshot's records: the first (r NULL) or the one after r, NULL at the end. */
static const struct ibckpt_snap_rec *snap_next(const void *buf, const struct ibckpt_snap_rec *r)
{
	const struct ibckpt_snap_hdr *h = buf;
	const char *end = (const char *)buf + h->total_len;
	const char *p = r ? (const char *)(r + 1) + ((r->len + 7u) & ~7u)
			  : (const char *)buf + h->hdr_len;

	return p < end ? (const void *)p : NULL;
}

/*
 * The payload of the record of the given type and handle (0: the first of
 * the type); for WR records, the handle is the owner's and wr_id must match.
 */
const void *snap_find_wr(const void *buf, uint16_t type, uint32_t handle, uint64_t wr_id)
{
	const struct ibckpt_snap_rec *r;

	for (r = snap_next(buf, NULL); r; r = snap_next(buf, r)) {
		const uint32_t *pl = (const void *)(r + 1);
		const struct ibckpt_snap_wr *w = (const void *)pl;

		if (r->type != type)
			continue;
		if (type == IBCKPT_SNAP_WR ? w->owner == handle && w->wr_id == wr_id
					   : !handle || pl[0] == handle)
			return pl;
	}
	return NULL;
}

const void *snap_find(const void *buf, uint16_t type, uint32_t handle)
{
	return snap_find_wr(buf, type, handle, 0);
}

/* ibv_create_cq(): the provider's op, then what verbs_init_cq() does. */
struct ibv_cq *app_cq(struct ibv_comp_channel *ch, void *cq_context)
{
	struct ibv_cq *cq = ibckpt_create_cq(&ctx->vctx.context, 16, ch, 0);

	CHECK(cq != NULL);
	if (!cq)
		abort();
	cq->context = &ctx->vctx.context;
	cq->channel = ch;
	cq->cq_context = cq_context;
	if (ch)
		ch->refcnt++;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	return cq;
}

/* ibv_destroy_cq(): the op, then the channel's count. */
void app_destroy_cq(struct ibv_cq *cq)
{
	struct ibv_comp_channel *ch = cq->channel;

	CHECK_EQ(ibckpt_destroy_cq(cq), 0);
	if (ch)
		ch->refcnt--;
}

/* An RC QP whose send and receive queues complete to scq and rcq. */
struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd.ibv_pd,
	};
	struct ibv_qp *q = ibckpt_create_qp_ex(&ctx->vctx.context, &a);

	CHECK(q != NULL);
	return q;
}

void post_both(struct ibv_qp *q, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_send_wr swr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *rbad;

	CHECK_EQ(ibckpt_post_send(q, &swr, &sbad), 0);
	CHECK_EQ(ibckpt_post_recv(q, &rwr, &rbad), 0);
}

/* An RC QP on cq at RTS, path MTU 1024, sending from PSN 0x100 (the vendor says so too). */
struct ibv_qp *rts_qp(struct ibv_cq *cq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024 };
	struct ibv_qp *q = send_qp(cq, IBV_QPT_RC, 0);

	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PATH_MTU), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 1 };
	CHECK_EQ(ibckpt_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), 0);
	return q;
}

/* The application posts one request of 8 bytes (a READ or atomic from the peer's 0x5000). */
void app_post(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t wr_id, unsigned int flags)
{
	static uint64_t buf;
	struct ibv_sge sge = { .addr = (uintptr_t)&buf, .length = 8, .lkey = 3 };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP)
		wr.wr.atomic = (__typeof__(wr.wr.atomic)){ .remote_addr = 0x5008, .rkey = 0x77,
							   .compare_add = 1 };
	else
		wr.wr.rdma = (__typeof__(wr.wr.rdma)){ .remote_addr = 0x5000, .rkey = 0x77 };
	CHECK_EQ(ibckpt_post_send(q, &wr, &bad), 0);
}

void app_post_recv(struct ibv_qp *q, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 3 };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_EQ(ibckpt_post_recv(q, &wr, &bad), 0);
}

/* The next PSN the vendor reports for q: every request logged sent. */
void all_sent(struct ibv_qp *q)
{
	v.qp_attr_set.sq_psn = (to_iqp(q)->psn_base + to_iqp(q)->sq.psn_sum) & IBCKPT_PSN_MASK;
}

int main(void)
{
	vendor_init();
	RUN(objects_are_stacked);
	RUN(completions_find_their_srq);
	RUN(sends_log_their_srqn);
	RUN(snapshot_names_xrc);
	RUN(atomic_writes_reach_the_vendor_api);
	RUN(wr_complete_posts_all_or_none);
	RUN(wr_batch_setters);
	RUN(addresses_are_translated);
	RUN(tso_headers_are_logged);
	RUN(refusals);
	RUN(channel_recreated_at_same_address);
	RUN(destroyed_cq_leaves_no_event);
	RUN(destroy_cq_waits_for_the_ack);
	RUN(destroy_waits_for_async_acks);
	RUN(destroyed_object_leaves_no_async_event);
	RUN(new_objects_avoid_virtual_ids);
	RUN(cq_recreated_at_its_size);
	RUN(full_async_pipe_loses_nothing);
	RUN(ids_skip_live_ones);
	RUN(posts_leave_the_requests_alone);
	RUN(failed_completion_finds_its_queue);
	RUN(stats_only_through_the_counting_ops);
	RUN(tso_on_a_connected_qp);
	RUN(drain_takes_everything);
	RUN(drain_after_a_spill);
	RUN(poll_after_a_spill);
	RUN(stale_qpn_on_another_cq);
	RUN(release_check_after_the_drain);
	RUN(release_beside_a_parked_lock_holder);
	RUN(reacquire_map_names_terminated);
	RUN(release_waits_for_unsent_requests);
	RUN(restart_channel_survives_a_dead_cli);
	RUN(srq_limit_fires_once_across_a_restart);
	RUN(invalidated_keys_are_translated);
	RUN(remapped_posts_translate_keys);
	RUN(restart_keeps_counting_ops);
	RUN(datapath_follows_state);
	RUN(release_refuses_unpublished_addresses);
	RUN(release_needs_the_psns);
	RUN(real_timer_held_while_released);
	RUN(multicast_groups_come_back);
	RUN(ud_source_is_translated);
	RUN(remapped_poll_needs_no_context_lock);
	RUN(verbs_wait_at_a_closed_queue);
	RUN(queues_closed_and_opened_whole);
	RUN(drained_cq_marked_on_its_flag);
	RUN(close_beats_a_busy_poller);
	RUN(device_caps_match_what_is_stacked);
	RUN(fork_child_gets_its_own);
	RUN(fork_while_forwarding);
	RUN(internal_request_kept_from_the_application);
	RUN(internal_request_late);
	RUN(internal_request_flushed);
	RUN(fence_behind_reads_and_atomics);
	RUN(fence_that_does_not_complete);
	RUN(fence_failing);
	RUN(fence_after_a_restart);
	RUN(no_fence_behind_a_refusal);
	RUN(poll_refills_behind_an_internal_completion);
	RUN(internal_request_orphaned);
	RUN(earlier_fences_waited_together);
	RUN(fence_mr_kept_while_outstanding);
	RUN(fence_chosen_from_what_the_peer_grants);
	RUN(fence_failure_is_said);
	RUN(atomic_fence_keeps_the_job_frozen);
	RUN(posted_fences_waited_behind_a_refusal);
	RUN(lasting_refusals_are_not_ebusy);
	RUN(no_fence_asked);
	RUN(windows_follow_binds_and_invalidations);
	RUN(failed_bind_leaves_the_window_key);
	RUN(failed_send_after_a_window_is_gone);
	RUN(failed_completion_with_a_shared_wr_id);
	RUN(dealloc_races_a_poller);
	RUN(windows_come_back_after_a_release);
	RUN(window_of_a_destroyed_qp_is_refused);
	RUN(windows_through_a_restart);
	RUN(type1_windows_rebound_per_pd);
	RUN(mr_gone_under_a_window);
	RUN(invalidation_through_an_extended_cq);
	RUN(wr_api_binds_a_window_after_a_restart);
	return unit_done();
}
