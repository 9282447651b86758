// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMA netlink (nldev) dumps of every device's QPs and MRs, as `rdma res
 * show qp|mr` makes them: RDMA_NLDEV_CMD_GET for the devices, then
 * RDMA_NLDEV_CMD_RES_QP_GET and RDMA_NLDEV_CMD_RES_MR_GET per device.
 *
 * The kernel names the thread that created an object (RDMA_NLDEV_ATTR_RES_PID,
 * in the reader's pid namespace), not its process, and omits it once that
 * thread is gone: threads are mapped to processes through /proc, and an
 * object whose thread is gone is attributed to nobody.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include "rdma_res.h"

#define NLDEV(cmd) RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)

struct rres_dev {
	unsigned int index;
	char name[64];
};

struct rres_devs {
	struct rres_dev *v;
	unsigned int n;
};

/* The process of thread @tid, 0 if it is gone. */
static unsigned int tgid_of(unsigned int tid)
{
	char path[64], line[128];
	unsigned int tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static int parse(struct nl_msg *msg, struct nlattr **a)
{
	return nlmsg_parse(nlmsg_hdr(msg), 0, a, RDMA_NLDEV_ATTR_MAX - 1, NULL);
}

static unsigned int u32_or0(struct nlattr **a, int i)
{
	return a[i] ? nla_get_u32(a[i]) : 0;
}

static unsigned int u8_or0(struct nlattr **a, int i)
{
	return a[i] ? nla_get_u8(a[i]) : 0;
}

static int on_dev(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[RDMA_NLDEV_ATTR_MAX];
	struct rres_devs *d = arg;
	struct rres_dev *v;

	if (parse(msg, a) || !a[RDMA_NLDEV_ATTR_DEV_INDEX] || !a[RDMA_NLDEV_ATTR_DEV_NAME])
		return NL_SKIP;
	v = realloc(d->v, sizeof(*v) * (d->n + 1));
	if (!v)
		return NL_STOP;
	d->v = v;
	v = &d->v[d->n++];
	v->index = nla_get_u32(a[RDMA_NLDEV_ATTR_DEV_INDEX]);
	snprintf(v->name, sizeof(v->name), "%s", nla_get_string(a[RDMA_NLDEV_ATTR_DEV_NAME]));
	return NL_OK;
}

struct rres_ctx {
	struct rres *r;
	const char *dev;
};

static void take_qp(struct rres_ctx *c, struct nlattr **e)
{
	struct rres_qp *q;

	if (!e[RDMA_NLDEV_ATTR_RES_PID] || !e[RDMA_NLDEV_ATTR_RES_LQPN])
		return;		/* a kernel QP, or one whose thread is gone */
	q = realloc(c->r->qp, sizeof(*q) * (c->r->nqp + 1));
	if (!q)
		return;
	c->r->qp = q;
	q = &c->r->qp[c->r->nqp++];
	memset(q, 0, sizeof(*q));
	snprintf(q->dev, sizeof(q->dev), "%s", c->dev);
	q->tid = nla_get_u32(e[RDMA_NLDEV_ATTR_RES_PID]);
	q->tgid = tgid_of(q->tid);
	q->qpn = nla_get_u32(e[RDMA_NLDEV_ATTR_RES_LQPN]);
	q->type = u8_or0(e, RDMA_NLDEV_ATTR_RES_TYPE);
	q->state = u8_or0(e, RDMA_NLDEV_ATTR_RES_STATE);
	q->port = u32_or0(e, RDMA_NLDEV_ATTR_PORT_INDEX);
	q->sq_psn = u32_or0(e, RDMA_NLDEV_ATTR_RES_SQ_PSN);
	q->has_dest = e[RDMA_NLDEV_ATTR_RES_RQPN] != NULL;
	q->dest_qpn = u32_or0(e, RDMA_NLDEV_ATTR_RES_RQPN);
	q->rq_psn = u32_or0(e, RDMA_NLDEV_ATTR_RES_RQ_PSN);
}

static void take_mr(struct rres_ctx *c, struct nlattr **e)
{
	struct rres_mr *m;

	if (!e[RDMA_NLDEV_ATTR_RES_PID])
		return;
	m = realloc(c->r->mr, sizeof(*m) * (c->r->nmr + 1));
	if (!m)
		return;
	c->r->mr = m;
	m = &c->r->mr[c->r->nmr++];
	memset(m, 0, sizeof(*m));
	snprintf(m->dev, sizeof(m->dev), "%s", c->dev);
	m->tid = nla_get_u32(e[RDMA_NLDEV_ATTR_RES_PID]);
	m->tgid = tgid_of(m->tid);
	m->mrn = u32_or0(e, RDMA_NLDEV_ATTR_RES_MRN);
	m->pdn = u32_or0(e, RDMA_NLDEV_ATTR_RES_PDN);
	m->length = e[RDMA_NLDEV_ATTR_RES_MRLEN] ? nla_get_u64(e[RDMA_NLDEV_ATTR_RES_MRLEN]) : 0;
	m->has_keys = e[RDMA_NLDEV_ATTR_RES_LKEY] || e[RDMA_NLDEV_ATTR_RES_RKEY];
	m->lkey = u32_or0(e, RDMA_NLDEV_ATTR_RES_LKEY);
	m->rkey = u32_or0(e, RDMA_NLDEV_ATTR_RES_RKEY);
}

static int on_res(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[RDMA_NLDEV_ATTR_MAX], *e[RDMA_NLDEV_ATTR_MAX], *pos;
	struct rres_ctx *c = arg;
	int rem, table;

	if (parse(msg, a))
		return NL_SKIP;
	table = a[RDMA_NLDEV_ATTR_RES_QP] ? RDMA_NLDEV_ATTR_RES_QP : RDMA_NLDEV_ATTR_RES_MR;
	if (!a[table])
		return NL_OK;
	nla_for_each_nested(pos, a[table], rem) {
		if (nla_parse_nested(e, RDMA_NLDEV_ATTR_MAX - 1, pos, NULL))
			continue;
		if (table == RDMA_NLDEV_ATTR_RES_QP)
			take_qp(c, e);
		else
			take_mr(c, e);
	}
	return NL_OK;
}

/* One dump request (@dev: its RDMA_NLDEV_ATTR_DEV_INDEX, or none if < 0). */
static int dump(struct nl_sock *sk, int cmd, int dev, nl_recvmsg_msg_cb_t cb, void *arg)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLDEV(cmd), NLM_F_DUMP);
	int err;

	if (!m)
		return -ENOMEM;
	if (dev >= 0 && nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)dev)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	err = nl_send_auto(sk, m);
	nlmsg_free(m);
	if (err < 0)
		return -EIO;
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, cb, arg);
	return nl_recvmsgs_default(sk) < 0 ? -EIO : 0;
}

int rres_collect(struct rres *r)
{
	struct rres_devs d = { 0 };
	struct rres_ctx c = { .r = r };
	struct nl_sock *sk;
	unsigned int i;
	int err;

	memset(r, 0, sizeof(*r));
	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	if (nl_connect(sk, NETLINK_RDMA)) {
		nl_socket_free(sk);
		return -EPROTONOSUPPORT;
	}
	err = dump(sk, RDMA_NLDEV_CMD_GET, -1, on_dev, &d);
	for (i = 0; !err && i < d.n; i++) {
		c.dev = d.v[i].name;
		err = dump(sk, RDMA_NLDEV_CMD_RES_QP_GET, (int)d.v[i].index, on_res, &c);
		if (!err)
			err = dump(sk, RDMA_NLDEV_CMD_RES_MR_GET, (int)d.v[i].index, on_res, &c);
	}
	free(d.v);
	nl_socket_free(sk);
	if (err)
		rres_free(r);
	return err;
}

void rres_free(struct rres *r)
{
	free(r->qp);
	free(r->mr);
	memset(r, 0, sizeof(*r));
}
