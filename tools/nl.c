// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Generic netlink plumbing of the ibckpt CLI.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/ibckpt.h>
#include <netlink/genl/ctrl.h>
#include <netlink/msg.h>
#include "nl.h"

int ibnl_open(struct ibnl *n, int quiet)
{
	int one = 1;

	n->sk = nl_socket_alloc();
	if (!n->sk) {
		fprintf(stderr, "ibckpt: cannot allocate a netlink socket\n");
		return -1;
	}
	if (genl_connect(n->sk)) {
		fprintf(stderr, "ibckpt: cannot open a generic netlink socket\n");
		goto err;
	}
	n->family = genl_ctrl_resolve(n->sk, IBCKPT_GENL_NAME);
	if (n->family < 0) {
		if (!quiet)
			fprintf(stderr, "ibckpt: the ibckpt kernel module is not loaded "
				"(try: modprobe ibckpt)\n");
		goto err;
	}
	/* extended acks carry the kernel's reason for a refusal */
	setsockopt(nl_socket_get_fd(n->sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(n->sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return 0;
err:
	nl_socket_free(n->sk);
	n->sk = NULL;
	return -1;
}

void ibnl_close(struct ibnl *n)
{
	if (n->sk)
		nl_socket_free(n->sk);
	n->sk = NULL;
}

struct nl_msg *ibnl_msg(struct ibnl *n, int cmd, int flags)
{
	struct nl_msg *m = nlmsg_alloc();

	if (m && !genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, n->family, 0, flags,
			      (uint8_t)cmd, IBCKPT_GENL_VERSION)) {
		nlmsg_free(m);
		m = NULL;
	}
	return m;
}

struct call {
	struct ibnl *n;
	ibnl_cb cb;
	void *arg;
	int err;
	int done;
	char *errmsg;
	size_t errlen;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct call *c = arg;
	struct nlattr *attrs[IBCKPT_A_MAX + 1];
	int rc;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, IBCKPT_A_MAX, NULL)) {
		c->err = -EBADMSG;
		return NL_STOP;
	}
	rc = c->cb ? c->cb(attrs, c->arg) : 0;
	if (rc) {
		c->err = rc;
		return NL_STOP;
	}
	return NL_OK;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct call *c = arg;
	struct nlmsghdr *nlh = (struct nlmsghdr *)e - 1;
	int len = (int)nlh->nlmsg_len;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t hlen = sizeof(*nlh) + sizeof(*e);

	(void)nla;
	c->err = e->error;
	c->done = 1;
	/* the extended ack follows the echoed header when capped */
	if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) && (nlh->nlmsg_flags & NLM_F_CAPPED) &&
	    len > (int)hlen &&
	    !nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)nlh + hlen),
		       len - (int)hlen, NULL)) {
		if (tb[NLMSGERR_ATTR_MSG])
			snprintf(c->errmsg, c->errlen, "%s",
				 nla_get_string(tb[NLMSGERR_ATTR_MSG]));
		if (tb[NLMSGERR_ATTR_COOKIE] &&
		    nla_len(tb[NLMSGERR_ATTR_COOKIE]) <= (int)sizeof(c->n->cookie)) {
			c->n->cookie_len = (unsigned int)nla_len(tb[NLMSGERR_ATTR_COOKIE]);
			memcpy(c->n->cookie, nla_data(tb[NLMSGERR_ATTR_COOKIE]),
			       c->n->cookie_len);
		}
	}
	return NL_STOP;
}

/*
 * The end of a dump, or an ACK. A dump that fails after it started ends with
 * NLMSG_DONE carrying the negative errno (libnl does not look at it).
 */
static int on_finish(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct call *c = arg;
	int err;

	if (nlh->nlmsg_type == NLMSG_DONE && nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
		memcpy(&err, nlmsg_data(nlh), sizeof(err));
		if (err < 0)
			c->err = err;
	}
	c->done = 1;
	return NL_STOP;
}

int ibnl_call(struct ibnl *n, struct nl_msg *msg, ibnl_cb cb, void *arg,
	      char *errmsg, size_t errlen)
{
	struct call c = { .n = n, .cb = cb, .arg = arg, .errmsg = errmsg, .errlen = errlen };
	struct nl_cb *nlcb;
	int rc;

	n->cookie_len = 0;
	if (errlen)
		errmsg[0] = '\0';
	if (!msg)
		return -ENOMEM;
	nlcb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!nlcb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(nlcb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &c);
	nl_cb_set(nlcb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &c);
	nl_cb_set(nlcb, NL_CB_ACK, NL_CB_CUSTOM, on_finish, &c);
	nl_cb_err(nlcb, NL_CB_CUSTOM, on_error, &c);
	nlmsg_hdr(msg)->nlmsg_flags |= NLM_F_ACK;
	rc = nl_send_auto(n->sk, msg);
	nlmsg_free(msg);
	if (rc < 0) {
		nl_cb_put(nlcb);
		return -EIO;
	}
	while (!c.done && !c.err) {
		rc = nl_recvmsgs(n->sk, nlcb);
		if (rc < 0 && !c.err) {
			c.err = -EIO;
			break;
		}
	}
	nl_cb_put(nlcb);
	return c.err;
}
