// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * thawlat: how long the module's THAW request, and the release of the
 * netlink socket that owns a freeze, take, against how long the released
 * threads take to leave their parks (tests/vm/cases/69-thaw-async.sh).
 * Raw generic netlink, so that nothing but the request itself is timed.
 *
 *   thawlat thaw ID           THAW session ID; print a line with thaw_us
 *                             (request to its answer), err, reply_session
 *                             (the id the answer names, 0 for none) and what
 *                             SESSION_GET says right after ("after=gone" or
 *                             "after=STATE parked=N"), then a line with
 *                             unpark_us (request to the session gone from
 *                             SESSION_GET)
 *   thawlat hold PGID         FREEZE process group PGID from a socket of its
 *                             own, which owns the freeze; print "frozen ID"
 *                             once frozen, wait for a line on standard input,
 *                             close that socket; print a line with close_us
 *                             and what SESSION_GET says right after, then
 *                             one with unpark_us
 *   thawlat get ID            print what SESSION_GET says of session ID
 *   thawlat watch ID CMD...   run CMD (ibckpt thaw --id ID) while polling
 *                             SESSION_GET ID; print cmd_us, rc, polls,
 *                             seen_parked (polls that saw a parked thread)
 *                             and what SESSION_GET says once CMD exited
 *
 * Exit status 0; 1 if a request failed or the session did not go within
 * 30 s; 2 usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/ibckpt.h>

struct nl {
	int fd;
	uint32_t seq;
};

/* What the answers to one request said. */
struct answer {
	int err;		/* the ack's, or the dump's end */
	uint64_t session;	/* IBCKPT_A_SESSION_ID of a reply */
	uint16_t family;	/* CTRL_ATTR_FAMILY_ID */
	int listed;		/* SESSION_GET: a session came back */
	uint32_t state, parked;
};

static uint16_t family;
static uint64_t want_id;	/* SESSION_GET: the session asked for */
static _Alignas(8) unsigned char rx[65536];

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int nl_open(struct nl *n)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK };
	int one = 1;

	n->seq = 1;
	n->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (n->fd < 0 || bind(n->fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("thawlat: netlink socket");
		return -1;
	}
	setsockopt(n->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return 0;
}

struct req {
	struct nlmsghdr h;
	struct genlmsghdr g;
	unsigned char attrs[128];
};

static void put(struct req *r, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((unsigned char *)r + NLMSG_ALIGN(r->h.nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((unsigned char *)a + NLA_HDRLEN, data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void parse_session(const struct nlattr *nest, struct answer *an)
{
	const struct nlattr *a = (const struct nlattr *)((const unsigned char *)nest + NLA_HDRLEN);
	int left = nest->nla_len - NLA_HDRLEN;
	uint64_t id = 0;
	uint32_t state = 0, parked = 0;

	while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= left) {
		const void *d = (const unsigned char *)a + NLA_HDRLEN;

		switch (a->nla_type & NLA_TYPE_MASK) {
		case IBCKPT_SESSION_A_ID:
			memcpy(&id, d, sizeof(id));
			break;
		case IBCKPT_SESSION_A_STATE:
			memcpy(&state, d, sizeof(state));
			break;
		case IBCKPT_SESSION_A_PARKED:
			memcpy(&parked, d, sizeof(parked));
			break;
		}
		left -= NLA_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const unsigned char *)a + NLA_ALIGN(a->nla_len));
	}
	if (id == want_id) {
		an->listed = 1;
		an->state = state;
		an->parked = parked;
	}
}

static void parse_reply(const struct nlmsghdr *h, struct answer *an)
{
	const struct nlattr *a;
	int left = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);

	a = (const struct nlattr *)((const unsigned char *)NLMSG_DATA(h) + GENL_HDRLEN);
	while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= left) {
		const void *d = (const unsigned char *)a + NLA_HDRLEN;

		if (h->nlmsg_type == GENL_ID_CTRL && (a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
			memcpy(&an->family, d, sizeof(an->family));
		else if (h->nlmsg_type != GENL_ID_CTRL && a->nla_type == IBCKPT_A_SESSION_ID)
			memcpy(&an->session, d, sizeof(an->session));
		else if (h->nlmsg_type != GENL_ID_CTRL &&
			 (a->nla_type & NLA_TYPE_MASK) == IBCKPT_A_SESSION)
			parse_session(a, an);
		left -= NLA_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const unsigned char *)a + NLA_ALIGN(a->nla_len));
	}
}

/* Send @r (acked, or a dump) and read every answer to it. Return: 0 or -1. */
static int call(struct nl *n, struct req *r, struct answer *an)
{
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	uint32_t seq = n->seq++;
	int done = 0;

	memset(an, 0, sizeof(*an));
	r->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	r->h.nlmsg_seq = seq;
	if (sendto(n->fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&k, sizeof(k)) < 0) {
		perror("thawlat: send");
		return -1;
	}
	while (!done) {
		ssize_t len = recv(n->fd, rx, sizeof(rx), 0);
		const struct nlmsghdr *h = (const struct nlmsghdr *)rx;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			perror("thawlat: recv");
			return -1;
		}
		for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				an->err = ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
				done = 1;
			} else if (h->nlmsg_type == NLMSG_DONE) {
				memcpy(&an->err, NLMSG_DATA(h), sizeof(an->err));
				done = 1;
			} else {
				parse_reply(h, an);
			}
		}
	}
	return 0;
}

static void start(struct req *r, uint16_t type, uint8_t cmd, uint16_t flags)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = flags;
	r->g.cmd = cmd;
	r->g.version = IBCKPT_GENL_VERSION;
}

static int resolve(struct nl *n)
{
	struct answer an;
	struct req r;

	start(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	r.g.version = 1;
	put(&r, CTRL_ATTR_FAMILY_NAME, IBCKPT_GENL_NAME, sizeof(IBCKPT_GENL_NAME));
	if (call(n, &r, &an) || an.err || !an.family) {
		fprintf(stderr, "thawlat: no %s family (module not loaded?)\n", IBCKPT_GENL_NAME);
		return -1;
	}
	family = an.family;
	return 0;
}

/* SESSION_GET @id into @an; 0 or -1. */
static int get(struct nl *n, uint64_t id, struct answer *an)
{
	struct req r;

	start(&r, family, IBCKPT_CMD_SESSION_GET, NLM_F_DUMP);
	put(&r, IBCKPT_A_SESSION_ID, &id, sizeof(id));
	want_id = id;
	if (call(n, &r, an))
		return -1;
	if (an->err) {
		fprintf(stderr, "thawlat: SESSION_GET: %s\n", strerror(-an->err));
		return -1;
	}
	return 0;
}

static const char *state_name(uint32_t st)
{
	switch (st) {
	case IBCKPT_STATE_FREEZING: return "freezing";
	case IBCKPT_STATE_FROZEN: return "frozen";
	case IBCKPT_STATE_THAWING: return "thawing";
	case IBCKPT_STATE_ABORTED: return "aborted";
	}
	return "unknown";
}

static void print_after(const struct answer *an)
{
	if (an->listed)
		printf(" after=%s parked=%u", state_name(an->state), an->parked);
	else
		printf(" after=gone");
}

/* Poll until session @id is gone; the time it went (now_us()), or -1. */
static double wait_gone(struct nl *n, uint64_t id)
{
	double t0 = now_us();
	struct answer an;

	for (;;) {
		if (get(n, id, &an))
			return -1;
		if (!an.listed)
			return now_us();
		if (now_us() - t0 > 30e6) {
			fprintf(stderr, "thawlat: session %llu still listed (%s, %u parked) after 30 s\n",
				(unsigned long long)id, state_name(an.state), an.parked);
			return -1;
		}
		usleep(1000);
	}
}

static int do_thaw(uint64_t id)
{
	struct answer an, after;
	struct req r;
	struct nl n;
	double t0, t1, gone;

	if (nl_open(&n) || resolve(&n))
		return 1;
	start(&r, family, IBCKPT_CMD_THAW, 0);
	put(&r, IBCKPT_A_SESSION_ID, &id, sizeof(id));
	t0 = now_us();
	if (call(&n, &r, &an))
		return 1;
	t1 = now_us();
	if (get(&n, id, &after))
		return 1;
	printf("thaw_us=%.0f err=%d reply_session=%llu", t1 - t0, an.err,
	       (unsigned long long)an.session);
	print_after(&after);
	printf("\n");
	fflush(stdout);
	gone = wait_gone(&n, id);
	if (gone < 0)
		return 1;
	printf("unpark_us=%.0f\n", gone - t0);
	return an.err ? 1 : 0;
}

static int do_hold(uint32_t pgid)
{
	uint32_t timeout = 30000;
	struct answer an, after;
	struct nl owner, n;
	struct req r;
	double t0, t1, gone;
	char line[16];

	if (nl_open(&owner) || nl_open(&n) || resolve(&n))
		return 1;
	start(&r, family, IBCKPT_CMD_FREEZE, 0);
	put(&r, IBCKPT_A_PGID, &pgid, sizeof(pgid));
	put(&r, IBCKPT_A_TIMEOUT_MS, &timeout, sizeof(timeout));
	if (call(&owner, &r, &an))
		return 1;
	if (an.err || !an.session) {
		fprintf(stderr, "thawlat: FREEZE %u: %s\n", pgid, strerror(-an.err));
		return 1;
	}
	t0 = now_us();
	do {
		if (get(&n, an.session, &after))
			return 1;
		if (!after.listed || after.state != IBCKPT_STATE_FREEZING)
			break;
		usleep(1000);
	} while (now_us() - t0 < 35e6);
	if (!after.listed || after.state != IBCKPT_STATE_FROZEN) {
		fprintf(stderr, "thawlat: session %llu not frozen\n", (unsigned long long)an.session);
		return 1;
	}
	printf("frozen %llu\n", (unsigned long long)an.session);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = now_us();
	close(owner.fd);
	t1 = now_us();
	if (get(&n, an.session, &after))
		return 1;
	printf("close_us=%.0f", t1 - t0);
	print_after(&after);
	printf("\n");
	fflush(stdout);
	gone = wait_gone(&n, an.session);
	if (gone < 0)
		return 1;
	printf("unpark_us=%.0f\n", gone - t0);
	return 0;
}

static int do_watch(uint64_t id, char **cmd)
{
	unsigned int polls = 0, seen = 0;
	struct answer an;
	struct nl n;
	double t0, t1;
	pid_t pid;
	int st = 0;

	if (nl_open(&n) || resolve(&n))
		return 1;
	t0 = now_us();
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		execvp(cmd[0], cmd);
		perror(cmd[0]);
		_exit(127);
	}
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (get(&n, id, &an))
			return 1;
		polls++;
		seen += an.listed && an.parked;
		usleep(500);
	}
	t1 = now_us();
	if (get(&n, id, &an))
		return 1;
	printf("cmd_us=%.0f rc=%d polls=%u seen_parked=%u", t1 - t0,
	       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), polls, seen);
	print_after(&an);
	printf("\n");
	return 0;
}

static int do_get(uint64_t id)
{
	struct answer an;
	struct nl n;

	if (nl_open(&n) || resolve(&n) || get(&n, id, &an))
		return 1;
	print_after(&an);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "thaw"))
		return do_thaw(strtoull(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "get"))
		return do_get(strtoull(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return do_hold((uint32_t)strtoul(argv[2], NULL, 10));
	if (argc >= 4 && !strcmp(argv[1], "watch"))
		return do_watch(strtoull(argv[2], NULL, 10), argv + 3);
	fprintf(stderr, "usage: thawlat thaw ID | hold PGID | get ID | watch ID CMD...\n");
	return 2;
}
