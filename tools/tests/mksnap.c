// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mksnap FILE TGID VQPN: write a process snapshot as a provider gives it
 * (built with the provider's own writer) to FILE, for the tests that read a
 * checkpoint directory (dump_dir_test.sh). One device, PD, MR, CQ with one
 * drained completion, and an RC QP at RTS (virtual QPN VQPN, the vendor's
 * VQPN + 0x100) with one posted send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../provider/snapshot_writer.h"

int main(int argc, char **argv)
{
	struct ibckpt_snap_device *d;
	struct ibckpt_snap_pd *pd;
	struct ibckpt_snap_mr *mr;
	struct ibckpt_snap_cq *cq;
	struct ibckpt_snap_qp *qp;
	struct ibckpt_snap_wr *wr;
	struct ibckpt_snap_sge *sg;
	struct ibckpt_snap_wc *wc;
	struct snap_writer w;
	unsigned int vqpn;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: mksnap FILE TGID VQPN\n");
		return 2;
	}
	vqpn = (unsigned int)strtoul(argv[3], NULL, 0);
	if (snapw_init(&w, (uint32_t)strtoul(argv[2], NULL, 0), 9))
		return 1;
	snapw_hdr(&w)->pinned_bytes = 8192;
	snapw_hdr(&w)->outstanding = 1;
	d = snapw_add(&w, IBCKPT_SNAP_DEVICE, sizeof(*d));
	if (d) {
		d->handle = 1;
		d->port_lid = 0;
		strcpy(d->name, "rxe0");
		d->gid[0] = 0xfe;
		d->gid[1] = 0x80;
		d->gid[15] = 1;
	}
	pd = snapw_add(&w, IBCKPT_SNAP_PD, sizeof(*pd));
	if (pd) {
		pd->handle = 2;
		pd->device = 1;
	}
	mr = snapw_add(&w, IBCKPT_SNAP_MR, sizeof(*mr));
	if (mr) {
		mr->handle = 3;
		mr->pd = 2;
		mr->addr = mr->iova = 0x7f0000001000ULL;
		mr->length = 4096;
		mr->access = 0xf;
		mr->vlkey = mr->vrkey = 0x1234;
		mr->lkey = mr->rkey = 0x5678;
	}
	cq = snapw_add(&w, IBCKPT_SNAP_CQ, sizeof(*cq));
	if (cq) {
		cq->handle = 4;
		cq->device = 1;
		cq->cqe = 63;
		cq->n_drained = 1;
	}
	wc = snapw_add(&w, IBCKPT_SNAP_WC, sizeof(*wc));
	if (wc) {
		wc->wr_id = 41;
		wc->cq = 4;
		wc->qp_num = vqpn;
		wc->byte_len = 100;
	}
	qp = snapw_add(&w, IBCKPT_SNAP_QP, sizeof(*qp));
	if (qp) {
		qp->handle = 5;
		qp->pd = 2;
		qp->send_cq = qp->recv_cq = 4;
		qp->qp_type = 2;	/* IBV_QPT_RC */
		qp->vqpn = vqpn;
		qp->qpn = vqpn + 0x100;
		qp->state = 3;		/* IBV_QPS_RTS */
		qp->vdest_qpn = qp->dest_qpn = 0x22;
		qp->sq_psn = 0x10;
		qp->rq_psn = 0x20;
		qp->path_mtu = 3;
		qp->port_num = 1;
		qp->max_send_wr = qp->max_recv_wr = 16;
		qp->n_send_wr = 1;
	}
	wr = snapw_add(&w, IBCKPT_SNAP_WR, sizeof(*wr) + sizeof(*sg));
	if (wr) {
		wr->wr_id = 42;
		wr->owner = 5;
		wr->wq = IBCKPT_SNAP_WQ_SEND;
		wr->send_flags = 2;	/* IBV_SEND_SIGNALED */
		wr->num_sge = 1;
		sg = (struct ibckpt_snap_sge *)(wr + 1);
		sg->addr = 0x7f0000001000ULL;
		sg->length = 100;
		sg->lkey = 0x1234;
	}
	if (snapw_finish(&w))
		return 1;
	f = fopen(argv[1], "w");
	if (!f || fwrite(w.buf, 1, w.len, f) != w.len || fclose(f)) {
		perror(argv[1]);
		snapw_free(&w);
		return 1;
	}
	snapw_free(&w);
	return 0;
}
