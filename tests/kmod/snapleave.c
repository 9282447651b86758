// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * snapleave: a process of a frozen job loses its snapshot between two rounds
 * of a SNAPSHOT_GET dump (tests/vm/cases/58-dump-kernel-view.sh; the fuzzer
 * met it once at random: "the kernel's view of 261 in the middle of its
 * snapshot"). Whichever process it is, the job changed while it was read:
 * the dump must end with EAGAIN, not with success and a snapshot missing or
 * a process said twice.
 *
 *   snapleave IBCKPT     (the ibckpt CLI, which freezes and thaws)
 *
 * Two providers, each its own process with one thread (its control thread,
 * which a freeze never parks), share a process group and give a 300 KiB
 * snapshot when it is frozen. The dump is read a datagram at a time through
 * a small receive buffer, so that the module sends it in many rounds:
 *
 *  current: once half of the first snapshot arrived, its process closes
 *           /dev/ibckpt. The dump must end with EAGAIN; no piece of the other
 *           process may start anywhere but at 0, no kernel view may name the
 *           one left in the middle of its pieces.
 *  earlier: once the second snapshot started, the first process (whose
 *           snapshot was sent whole) closes /dev/ibckpt. The dump must end
 *           with EAGAIN; the second snapshot arrives in order as far as it
 *           goes, and the first process is not said again, without a
 *           snapshot, among the processes that gave none.
 *  later:   once half of the first snapshot arrived, the other process,
 *           whose turn had not come, closes /dev/ibckpt. The dump must end
 *           with EAGAIN, not with success and its snapshot never sent.
 *  joined:  once half of the first snapshot arrived, a new process joins
 *           the group, and the dump waits until the session counts it. The
 *           dump must end with EAGAIN: the job it read is not the job now.
 *
 * Every piece is checked against the bytes its provider gave, and no
 * process may have two kernel views (IBCKPT_A_KPROC).
 * Exit status: 0 if all held, 1 if not (FAIL lines), 2 if it could not run.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/ibckpt.h>
#include <linux/ibckpt_snapshot.h>

#define SNAP_LEN	(300u * 1024)
#define REC_LEN		4096u		/* a WC record with its header */
#define SNAP_HDR	((uint32_t)sizeof(struct ibckpt_snap_hdr))
#define NPROC		2

static const char *CLI;
static int FAILS;

#define FAIL(...) do { fprintf(stderr, "snapleave: FAIL: " __VA_ARGS__); \
		       fputc('\n', stderr); FAILS++; } while (0)

struct provider {
	pid_t pid;
	int cmd;	/* write end: 'c' closes /dev/ibckpt */
	int ack;	/* read end: 'r' registered, 'q' answered, 'c' closed */
	/* what the dump delivered of its snapshot */
	uint32_t got, total;
	bool started, whole;
	int kprocs;	/* its kernel views (IBCKPT_A_KPROC) */
};

/* The snapshot process @pid gives for @session: WC records, bytes of @pid. */
static uint8_t *build_snap(pid_t pid, uint64_t session, uint32_t *len)
{
	struct ibckpt_snap_hdr h = {
		.magic = IBCKPT_SNAP_MAGIC, .version = IBCKPT_SNAP_VERSION,
		.hdr_len = SNAP_HDR, .session = session,
	};
	uint32_t off = SNAP_HDR, i;
	uint8_t *b = calloc(1, SNAP_LEN);
	struct ibckpt_snap_rec r = { .type = IBCKPT_SNAP_WC, .len = REC_LEN - sizeof(r) };

	if (!b)
		return NULL;
	while (off + REC_LEN <= SNAP_LEN) {
		memcpy(b + off, &r, sizeof(r));
		for (i = sizeof(r); i < REC_LEN; i++)
			b[off + i] = (uint8_t)(pid * 7 + off + i);
		off += REC_LEN;
		h.n_records++;
	}
	h.total_len = off;
	memcpy(b, &h, sizeof(h));
	*len = off;
	return b;
}

static void provider_run(int cmd, int ack)
{
	struct pollfd pf[2] = { { .events = POLLIN }, { .fd = cmd, .events = POLLIN } };
	struct ibckpt_register reg = { .abi_version = IBCKPT_ABI_VERSION };
	struct ibckpt_snapshot_arg a = { 0 };
	struct ibckpt_quiesced q = { 0 };
	struct ibckpt_event e;
	uint8_t *snap;
	uint32_t len;
	char c;

	pf[0].fd = open("/dev/ibckpt", O_RDWR | O_CLOEXEC);
	if (pf[0].fd < 0 || ioctl(pf[0].fd, IBCKPT_IOC_REGISTER, &reg))
		_exit(2);
	if (write(ack, "r", 1) != 1)
		_exit(2);
	for (;;) {
		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[1].revents) {
			if (read(cmd, &c, 1) != 1)
				_exit(0);
			close(pf[0].fd);	/* the registration ends here */
			pf[0].fd = -1;
			if (write(ack, "c", 1) != 1)
				_exit(2);
			continue;
		}
		if (!(pf[0].revents & POLLIN) || read(pf[0].fd, &e, sizeof(e)) != sizeof(e) ||
		    e.type != IBCKPT_EV_QUIESCE)
			continue;
		snap = build_snap(getpid(), e.session, &len);
		if (!snap)
			_exit(2);
		a.session = e.session;
		a.addr = (uintptr_t)snap;
		a.len = len;
		q.session = e.session;
		if (ioctl(pf[0].fd, IBCKPT_IOC_SNAPSHOT, &a) ||
		    ioctl(pf[0].fd, IBCKPT_IOC_QUIESCED, &q))
			_exit(2);
		free(snap);
		if (write(ack, "q", 1) != 1)
			_exit(2);
	}
}

static int wait_ack(struct provider *p, char want)
{
	struct pollfd pf = { .fd = p->ack, .events = POLLIN };
	char c;

	if (poll(&pf, 1, 30000) != 1 || read(p->ack, &c, 1) != 1 || c != want) {
		fprintf(stderr, "snapleave: provider %d did not say '%c'\n", (int)p->pid, want);
		return -1;
	}
	return 0;
}

static int spawn(struct provider *p, pid_t pgid)
{
	int c[2], a[2];

	if (pipe2(c, O_CLOEXEC) || pipe2(a, O_CLOEXEC))
		return -1;
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (!p->pid) {
		setpgid(0, pgid);
		close(c[1]);
		close(a[0]);
		provider_run(c[0], a[1]);
	}
	setpgid(p->pid, pgid ? pgid : p->pid);
	close(c[0]);
	close(a[1]);
	p->cmd = c[1];
	p->ack = a[0];
	return wait_ack(p, 'r');
}

static int cli(const char *verb, pid_t pgid)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s %s %d > /dev/null", CLI, verb, (int)pgid);
	return system(cmd);
}

static int family_id(int fd)
{
	struct {
		struct nlmsghdr h;
		struct genlmsghdr g;
		uint8_t a[32];
	} q = { 0 };
	static uint8_t rx[8192];
	struct nlattr *na = (struct nlattr *)q.a;
	const struct nlmsghdr *h;
	const struct nlattr *a;
	ssize_t n;
	size_t off;

	q.h.nlmsg_type = GENL_ID_CTRL;
	q.h.nlmsg_flags = NLM_F_REQUEST;
	q.g.cmd = CTRL_CMD_GETFAMILY;
	q.g.version = 2;
	na->nla_type = CTRL_ATTR_FAMILY_NAME;
	na->nla_len = NLA_HDRLEN + sizeof(IBCKPT_GENL_NAME);
	memcpy(na + 1, IBCKPT_GENL_NAME, sizeof(IBCKPT_GENL_NAME));
	q.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + NLA_ALIGN(na->nla_len));
	if (send(fd, &q, q.h.nlmsg_len, 0) < 0)
		return -1;
	n = recv(fd, rx, sizeof(rx), 0);
	h = (const void *)rx;
	if (n <= 0 || !NLMSG_OK(h, (size_t)n) || h->nlmsg_type != GENL_ID_CTRL)
		return -1;
	for (off = NLMSG_LENGTH(GENL_HDRLEN); off + NLA_HDRLEN <= h->nlmsg_len;
	     off += NLA_ALIGN(a->nla_len)) {
		a = (const void *)((const uint8_t *)h + off);
		if (a->nla_len < NLA_HDRLEN)
			break;
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			return *(const uint16_t *)(a + 1);
	}
	return -1;
}

enum scenario { CURRENT, EARLIER, LATER, JOINED };

static const char *const NAMES[] = { "current", "earlier", "later", "joined" };

struct dump {
	enum scenario sc;
	struct provider *p;
	pid_t order[NPROC];	/* the processes in the order their pieces came */
	int norder;
	bool changed;		/* a process left, or joined */
	pid_t joiner;		/* joined: the newcomer */
	int done;		/* 1 + the errno NLMSG_DONE carried, 0 before */
};

static struct provider *by_pid(struct dump *d, uint32_t tgid)
{
	int i;

	for (i = 0; i < NPROC; i++)
		if ((uint32_t)d->p[i].pid == tgid)
			return &d->p[i];
	return NULL;
}

static void on_piece(struct dump *d, const struct nlattr **tb)
{
	uint32_t tgid = *(const uint32_t *)(tb[IBCKPT_A_SNAP_TGID] + 1);
	uint32_t total = *(const uint32_t *)(tb[IBCKPT_A_SNAP_TOTAL] + 1);
	uint32_t off = *(const uint32_t *)(tb[IBCKPT_A_SNAP_OFFSET] + 1);
	uint32_t n = tb[IBCKPT_A_SNAP_DATA]->nla_len - NLA_HDRLEN, len, i;
	const uint8_t *data = (const uint8_t *)(tb[IBCKPT_A_SNAP_DATA] + 1);
	struct provider *p = by_pid(d, tgid);
	uint8_t *want;

	if (!p) {
		FAIL("a piece of process %u, not of the job", tgid);
		return;
	}
	if (!p->started) {
		if (off)
			FAIL("the snapshot of %u starts at %u of %u", tgid, off, total);
		p->started = true;
		p->total = total;
		if (d->norder < NPROC)
			d->order[d->norder++] = p->pid;
	} else if (off != p->got || total != p->total || p->whole) {
		FAIL("the snapshot of %u: a piece at %u of %u after %u of %u", tgid, off, total,
		     p->got, p->total);
	}
	want = build_snap(p->pid, 0, &len);
	if (!want || len != total || off > len || n > len - off) {
		FAIL("the snapshot of %u: %u bytes at %u of %u, its provider gave %u", tgid, n,
		     off, total, len);
	} else {
		for (i = off < SNAP_HDR ? SNAP_HDR - off : 0; i < n; i++)
			if (data[i] != want[off + i]) {
				FAIL("the snapshot of %u: byte %u differs", tgid, off + i);
				break;
			}
	}
	free(want);
	p->got = off + n;
	p->whole = p->got == p->total;
}

static void on_message(struct dump *d, const struct nlmsghdr *h)
{
	const struct nlattr *tb[IBCKPT_A_MAX + 1] = { 0 };
	const struct nlattr *a;
	struct provider *p;
	size_t off;

	for (off = NLMSG_LENGTH(GENL_HDRLEN); off + NLA_HDRLEN <= h->nlmsg_len;
	     off += NLA_ALIGN(a->nla_len)) {
		a = (const void *)((const uint8_t *)h + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > h->nlmsg_len) {
			FAIL("a malformed attribute");
			return;
		}
		if ((a->nla_type & NLA_TYPE_MASK) <= IBCKPT_A_MAX)
			tb[a->nla_type & NLA_TYPE_MASK] = a;
	}
	if (tb[IBCKPT_A_KPROC] || tb[IBCKPT_A_KQP]) {
		p = tb[IBCKPT_A_SNAP_TGID] ?
		    by_pid(d, *(const uint32_t *)(tb[IBCKPT_A_SNAP_TGID] + 1)) : NULL;
		if (p && p->started && !p->whole)
			FAIL("the kernel's view of %d in the middle of its snapshot (%u of %u)",
			     (int)p->pid, p->got, p->total);
		if (p && tb[IBCKPT_A_KPROC] && p->kprocs++)
			FAIL("a second kernel view of %d (%s)", (int)p->pid,
			     p->started ? "its snapshot was sent" : "no snapshot sent");
		return;
	}
	if (!tb[IBCKPT_A_SNAP_TGID] || !tb[IBCKPT_A_SNAP_TOTAL] || !tb[IBCKPT_A_SNAP_OFFSET] ||
	    !tb[IBCKPT_A_SNAP_DATA]) {
		FAIL("a message that is neither a piece nor the kernel's view");
		return;
	}
	on_piece(d, tb);
}

/* The processes the session of group @pgid counts, -1 if it cannot tell. */
static int session_procs(pid_t pgid)
{
	char cmd[512], out[4096];
	size_t n;
	FILE *f;
	int procs = -1;
	const char *at;

	snprintf(cmd, sizeof(cmd), "%s -j status %d", CLI, (int)pgid);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, f);
	pclose(f);
	out[n] = 0;
	at = strstr(out, "\"procs\":");
	if (at)
		sscanf(at + 8, "%d", &procs);
	return procs;
}

/* A new process joins the group of d->p[0]; once the session counts it, 0. */
static int join(struct dump *d)
{
	pid_t pgid = d->p[0].pid;
	int before = session_procs(pgid), i;

	d->joiner = fork();
	if (d->joiner < 0)
		return -1;
	if (!d->joiner) {
		setpgid(0, pgid);
		for (;;)
			pause();
	}
	setpgid(d->joiner, pgid);
	for (i = 0; i < 300 && before >= 0; i++) {
		if (session_procs(pgid) > before)
			return 0;
		usleep(100000);
	}
	fprintf(stderr, "snapleave: the session did not count the newcomer (%d before)\n",
		before);
	return -1;
}

/* Make a process leave (or join) when the scenario says; 0, or -1 (said). */
static int maybe_leave(struct dump *d)
{
	struct provider *first, *who;

	if (d->changed || !d->norder)
		return 0;
	first = by_pid(d, d->order[0]);
	if (d->sc == EARLIER ? d->norder < 2 : first->got < first->total / 2 || first->whole)
		return 0;
	if (d->sc != EARLIER && first->got >= first->total - 8 * 3072) {
		fprintf(stderr, "snapleave: the dump went too fast to leave halfway\n");
		return -1;
	}
	d->changed = true;
	if (d->sc == JOINED)
		return join(d);
	/* later: the one whose turn has not come */
	who = d->sc == LATER ? &d->p[first == &d->p[0]] : first;
	if (write(who->cmd, "c", 1) != 1 || wait_ack(who, 'c'))
		return -1;
	return 0;
}

/* Read the dump a datagram at a time; 0 when it ended, -1 (said) if not. */
static int read_dump(int fd, struct dump *d)
{
	static _Alignas(8) uint8_t rx[16384];
	const struct nlmsghdr *h;
	ssize_t n;
	int v;

	while (!d->done) {
		n = recv(fd, rx, sizeof(rx), 0);
		if (n < 0) {
			perror("snapleave: recv");
			return -1;
		}
		for (h = (const void *)rx; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				memcpy(&v, NLMSG_DATA(h), sizeof(v));
				d->done = 1 - v;
				break;
			}
			on_message(d, h);
		}
		if (maybe_leave(d))
			return -1;
	}
	return 0;
}

static int run(int family, enum scenario sc)
{
	struct {
		struct nlmsghdr h;
		struct genlmsghdr g;
		uint8_t a[16];
	} q = { 0 };
	struct provider p[NPROC] = { 0 };
	struct dump d = { .sc = sc, .p = p };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlattr *na = (struct nlattr *)q.a;
	int fd = -1, i, rc = 2, rcvbuf = 4096, before = FAILS;
	const char *name = NAMES[sc];
	struct provider *second;

	for (i = 0; i < NPROC; i++)
		if (spawn(&p[i], i ? p[0].pid : 0))
			goto out;
	if (cli("freeze --persist 120", p[0].pid)) {
		fprintf(stderr, "snapleave: %s: the freeze failed\n", name);
		goto out;
	}
	for (i = 0; i < NPROC; i++)
		if (wait_ack(&p[i], 'q'))
			goto out;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto out;
	/* one dump round queued at a time: the leave falls between rounds */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	q.h.nlmsg_type = family;
	q.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.h.nlmsg_seq = 1;
	q.g.cmd = IBCKPT_CMD_SNAPSHOT_GET;
	q.g.version = IBCKPT_GENL_VERSION;
	na->nla_type = IBCKPT_A_PGID;
	na->nla_len = NLA_HDRLEN + 4;
	memcpy(na + 1, &p[0].pid, 4);
	na = (struct nlattr *)(q.a + 8);
	na->nla_type = IBCKPT_A_FLAGS;
	na->nla_len = NLA_HDRLEN + 4;
	memcpy(na + 1, &(uint32_t){ IBCKPT_SNAPSHOT_F_KVIEW }, 4);
	q.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + 16);
	if (send(fd, &q, q.h.nlmsg_len, 0) < 0 || read_dump(fd, &d))
		goto out;
	rc = 0;
	second = d.norder > 1 ? by_pid(&d, d.order[1]) : NULL;
	if (!d.changed)
		FAIL("%s: the dump ended (%s) before a process could leave or join", name,
		     strerror(d.done - 1));
	else if (d.done - 1 != EAGAIN)
		FAIL("%s: the dump ended with %s, not EAGAIN, after %s (the second "
		     "snapshot %s)", name, d.done == 1 ? "success" : strerror(d.done - 1),
		     sc == CURRENT ? "the process being sent left" :
		     sc == EARLIER ? "a process sent already left" :
		     sc == LATER ? "a process not sent yet left" : "a process joined",
		     !second ? "never sent" : second->whole ? "whole" : "in part");
	printf("snapleave: %s: %s (pieces: %u and %u bytes)\n", name,
	       FAILS == before ? "ok" : "FAILED", d.norder > 0 ? by_pid(&d, d.order[0])->got : 0,
	       second ? second->got : 0);
out:
	if (fd >= 0)
		close(fd);
	if (p[0].pid > 0 && cli("thaw", p[0].pid))
		fprintf(stderr, "snapleave: %s: the thaw failed\n", name);
	if (d.joiner > 0) {
		kill(d.joiner, SIGKILL);
		waitpid(d.joiner, NULL, 0);
	}
	for (i = 0; i < NPROC; i++) {
		if (p[i].pid <= 0)
			continue;
		close(p[i].cmd);
		close(p[i].ack);
		kill(p[i].pid, SIGKILL);
		waitpid(p[i].pid, NULL, 0);
	}
	return rc;
}

int main(int argc, char **argv)
{
	enum scenario sc;
	int fd, family;

	if (argc != 2) {
		fprintf(stderr, "usage: snapleave IBCKPT\n");
		return 2;
	}
	CLI = argv[1];
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	family = fd < 0 ? -1 : family_id(fd);
	if (fd >= 0)
		close(fd);
	if (family < 0) {
		fprintf(stderr, "snapleave: no generic netlink family %s\n", IBCKPT_GENL_NAME);
		return 2;
	}
	for (sc = CURRENT; sc <= JOINED; sc++)
		if (run(family, sc) == 2)
			return 2;
	return FAILS ? 1 : 0;
}
