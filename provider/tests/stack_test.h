/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the stack test's files share: the fake vendor, unit.h, the
 * application's side (stack_test.c) and the cases, one file per topic, which
 * stack_test.c's main() runs.
 */
#ifndef IBCKPT_STACK_TEST_H
#define IBCKPT_STACK_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include "fake_vendor.h"

/*
 * unit.h keeps a case's failure in a static flag, one per file: the stack
 * test's files all set stack_case_failed instead, which RUN() reads, so
 * that a check in any file fails the case (unit.h's own flag goes unused).
 */
#define UNIT_SUITE "provider/stack"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "../../tests/unit/unit.h"
#pragma GCC diagnostic pop
extern int stack_case_failed;
#define unit_case_failed stack_case_failed

/* the application's side (stack_test.c) */
extern struct ibckpt_context *ctx;
extern struct ibckpt_pd pd;
void ctx_list(bool on);
void app_init(void);
void app_fini(void);
bool async_holds(unsigned int n);
struct ibv_xrcd *open_xrcd(void);
struct ibv_srq *xsrq(struct ibv_xrcd *x, struct ibv_cq *cq, void *app_context);
struct ibv_qp *send_qp(struct ibv_cq *cq, enum ibv_qp_type type, uint64_t send_ops_flags);
void *snapshot(void);
void post_recv(struct ibv_srq *s, uint64_t wr_id, uint64_t addr);
const void *snap_find_wr(const void *buf, uint16_t type, uint32_t handle, uint64_t wr_id);
const void *snap_find(const void *buf, uint16_t type, uint32_t handle);
struct ibv_cq *app_cq(struct ibv_comp_channel *ch, void *cq_context);
void app_destroy_cq(struct ibv_cq *cq);
struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq);
void post_both(struct ibv_qp *q, uint64_t wr_id);
struct ibv_qp *rts_qp(struct ibv_cq *cq);
void app_post(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t wr_id, unsigned int flags);
void app_post_recv(struct ibv_qp *q, uint64_t wr_id);
void all_sent(struct ibv_qp *q);

/* stack_objects_test.c */
void objects_are_stacked(void);
void completions_find_their_srq(void);
void sends_log_their_srqn(void);
void snapshot_names_xrc(void);
void refusals(void);
void ids_skip_live_ones(void);
void stats_only_through_the_counting_ops(void);
void device_caps_match_what_is_stacked(void);

/* stack_qp_test.c */
void atomic_writes_reach_the_vendor_api(void);
void wr_complete_posts_all_or_none(void);
void wr_batch_setters(void);
void tso_headers_are_logged(void);
void posts_leave_the_requests_alone(void);
void tso_on_a_connected_qp(void);

/* stack_channels_test.c */
void channel_recreated_at_same_address(void);
void destroyed_cq_leaves_no_event(void);
void destroy_cq_waits_for_the_ack(void);
void destroy_waits_for_async_acks(void);
void destroyed_object_leaves_no_async_event(void);
void full_async_pipe_loses_nothing(void);
void fork_child_gets_its_own(void);
void fork_while_forwarding(void);

/* stack_cq_test.c */
void failed_completion_finds_its_queue(void);
void stale_qpn_on_another_cq(void);
void drain_after_a_spill(void);
void poll_after_a_spill(void);
void drain_takes_everything(void);
void release_check_after_the_drain(void);
void release_beside_a_parked_lock_holder(void);
void remapped_poll_needs_no_context_lock(void);
void verbs_wait_at_a_closed_queue(void);
void close_beats_a_busy_poller(void);
void queues_closed_and_opened_whole(void);
void drained_cq_marked_on_its_flag(void);

/* stack_restart_test.c */
void addresses_are_translated(void);
void new_objects_avoid_virtual_ids(void);
void cq_recreated_at_its_size(void);
void reacquire_map_names_terminated(void);
void release_waits_for_unsent_requests(void);
void restart_channel_survives_a_dead_cli(void);
void srq_limit_fires_once_across_a_restart(void);
void invalidated_keys_are_translated(void);
void remapped_posts_translate_keys(void);
void restart_keeps_counting_ops(void);
void datapath_follows_state(void);
void release_refuses_unpublished_addresses(void);
void release_needs_the_psns(void);
void real_timer_held_while_released(void);
void multicast_groups_come_back(void);
void ud_source_is_translated(void);

/* stack_fence_test.c */
void internal_request_kept_from_the_application(void);
void internal_request_late(void);
void internal_request_flushed(void);
void fence_behind_reads_and_atomics(void);
void fence_that_does_not_complete(void);
void fence_failing(void);
void fence_after_a_restart(void);
void no_fence_behind_a_refusal(void);
void poll_refills_behind_an_internal_completion(void);
void internal_request_orphaned(void);
void earlier_fences_waited_together(void);
void fence_mr_kept_while_outstanding(void);
void fence_chosen_from_what_the_peer_grants(void);
void fence_failure_is_said(void);
void atomic_fence_keeps_the_job_frozen(void);
void posted_fences_waited_behind_a_refusal(void);
void lasting_refusals_are_not_ebusy(void);
void no_fence_asked(void);

/* stack_windows_test.c */
void windows_follow_binds_and_invalidations(void);
void failed_bind_leaves_the_window_key(void);
void failed_send_after_a_window_is_gone(void);
void failed_completion_with_a_shared_wr_id(void);
void dealloc_races_a_poller(void);
void windows_come_back_after_a_release(void);
void windows_through_a_restart(void);
void type1_windows_rebound_per_pd(void);
void mr_gone_under_a_window(void);
void invalidation_through_an_extended_cq(void);
void window_of_a_destroyed_qp_is_refused(void);
void wr_api_binds_a_window_after_a_restart(void);

#endif
