// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibtraffic - self-checking RDMA traffic for ibckpt's tests.
 *
 *   ibtraffic -s [-d DEV] [-g GID] [-p PORT] [options]          server
 *   ibtraffic -c HOST [-d DEV] [-g GID] [-p PORT] [options]     client
 *
 * The client runs until SIGINT/SIGTERM, --duration or --count, then both sides
 * check that nothing was lost, duplicated, reordered or corrupted. Exit 0 when
 * every check held, 1 on any error, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "traffic.h"

#define HELLO_MAGIC 0x49425446u

volatile int tstop;

static void on_signal(int sig)
{
	(void)sig;
	tstop = 1;
}

double tnow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tlog(const struct tctx *t, const char *fmt, ...)
{
	va_list ap;

	if (t->o.quiet)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "ibtraffic[%s]: ", t->o.server ? "server" : "client");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void terr(struct tctx *t, const char *fmt, ...)
{
	va_list ap;

	t->st.errors++;
	va_start(ap, fmt);
	fprintf(stderr, "ibtraffic[%s]: error: ", t->o.server ? "server" : "client");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void tprint_stats(const struct tctx *t, const char *what)
{
	const struct tstats *s = &t->st;

	printf("{\"event\":\"%s\",\"role\":\"%s\",\"pid\":%d,\"qps\":%d,\"sends\":%llu,"
	       "\"writes\":%llu,\"reads\":%llu,\"atomics\":%llu,\"ud\":%llu,\"acks\":%llu,"
	       "\"rx_msgs\":%llu,\"rx_ud\":%llu,\"unanswered\":%llu,\"errors\":%llu}\n",
	       what, t->o.server ? "server" : "client", (int)getpid(), t->o.nqp,
	       (unsigned long long)s->sends, (unsigned long long)s->writes,
	       (unsigned long long)s->reads, (unsigned long long)s->atomics,
	       (unsigned long long)s->ud, (unsigned long long)s->acks,
	       (unsigned long long)s->rx_msgs, (unsigned long long)s->rx_ud,
	       (unsigned long long)s->unanswered, (unsigned long long)s->errors);
	fflush(stdout);
}

int tsend_all(int fd, const void *p, size_t len)
{
	const char *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

int trecv_all(int fd, void *p, size_t len)
{
	char *b = p;

	while (len) {
		ssize_t n = recv(fd, b, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int tcp_connect(const struct topts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *r;
	char port[16];
	int fd = -1, one = 1, tries;

	snprintf(port, sizeof(port), "%d", o->tcp_port);
	if (getaddrinfo(o->host, port, &hints, &res))
		return -1;
	/* the server may still be setting up: retry for a few seconds */
	for (tries = 0; tries < 100 && fd < 0; tries++) {
		for (r = res; r; r = r->ai_next) {
			fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, 0);
			if (fd >= 0 && !connect(fd, r->ai_addr, r->ai_addrlen))
				break;
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
		if (fd < 0)
			usleep(100000);
	}
	freeaddrinfo(res);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int tcp_accept(const struct topts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->tcp_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l, fd, one = 1;

	if (o->listen && inet_pton(AF_INET, o->listen, &a.sin_addr) != 1) {
		fprintf(stderr, "ibtraffic[server]: -b %s: not an IPv4 address\n", o->listen);
		return -1;
	}

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		close(l);
		return -1;
	}
	do
		fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR && !tstop);
	close(l);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Trade QP numbers, PSNs, GID and the region's address and rkey. */
static int exchange(struct tctx *t, int sock)
{
	struct thello h = {
		.magic = HELLO_MAGIC, .nqp = (uint32_t)t->o.nqp, .window = (uint32_t)t->o.window,
		.msg_size = (uint32_t)t->o.msg_size, .lid = t->lid, .ud_qpn = t->udqp->qp_num,
		.rkey = t->mr->rkey, .base = (uintptr_t)t->buf,
	};
	struct tpeer_qp *mine, *theirs;
	int i, rc = -1;

	memcpy(h.gid, t->gid.raw, 16);
	mine = calloc((size_t)t->o.nqp, sizeof(*mine));
	theirs = calloc((size_t)t->o.nqp, sizeof(*theirs));
	if (!mine || !theirs)
		goto out;
	for (i = 0; i < t->o.nqp; i++) {
		mine[i].qpn = t->qps[i].qp->qp_num;
		mine[i].psn = t->qps[i].psn;
	}
	if (tsend_all(sock, &h, sizeof(h)) || trecv_all(sock, &t->peer, sizeof(t->peer))) {
		terr(t, "cannot exchange connection data");
		goto out;
	}
	if (t->peer.magic != HELLO_MAGIC || t->peer.nqp != h.nqp ||
	    t->peer.window != h.window || t->peer.msg_size != h.msg_size) {
		terr(t, "the peer runs with other --qps/--window/--msg-size");
		goto out;
	}
	if (tsend_all(sock, mine, sizeof(*mine) * (size_t)t->o.nqp) ||
	    trecv_all(sock, theirs, sizeof(*theirs) * (size_t)t->o.nqp)) {
		terr(t, "cannot exchange QP numbers");
		goto out;
	}
	rc = tres_connect(t, theirs);
out:
	free(mine);
	free(theirs);
	return rc;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: ibtraffic -s|-c HOST [-d DEV] [-g GID_INDEX] [-i IB_PORT] [-p TCP_PORT]\n"
		"                 [-q QPS] [-w WINDOW] [-m MSG_SIZE] [-t SECONDS] [-n OPS]\n"
		"                 [-P PROGRESS_SECONDS] [-L N] [-U N] [-Q] [-b ADDR]\n"
		"  -s            server: receive, verify, acknowledge (sleeps on CQ events)\n"
		"  -b ADDR       server: listen on IPv4 ADDR (default 127.0.0.1)\n"
		"  -c HOST       client: drive traffic, busy-polling (HOST: the side channel)\n"
		"  -q QPS        RC QPs (default 8); -w data messages in flight per QP (16)\n"
		"  -m MSG_SIZE   bytes per message buffer, multiple of 64, 128..8192 (1024)\n"
		"  -t SECONDS    client: stop after this long; -n OPS: after this many ops\n"
		"                (default: until SIGINT or SIGTERM)\n"
		"  -P SECONDS    print a progress line (JSON) this often\n"
		"  -L N          client: fetch-and-adds tolerated completing without their\n"
		"                result, soft-RoCE's defect (default 2; 0: none)\n"
		"  -U N          both sides: UD datagrams tolerated lost (default 0): a link\n"
		"                between hosts may drop them (UD is unreliable); duplicated,\n"
		"                reordered or corrupted ones are still errors\n");
	exit(rc);
}

static int parse(int argc, char **argv, struct topts *o)
{
	int c;

	*o = (struct topts){ .dev = "rxe0", .ib_port = 1, .tcp_port = 18515, .nqp = 8,
			     .window = 16, .msg_size = 1024, .max_unanswered = 2 };
	while ((c = getopt(argc, argv, "sc:d:g:i:p:q:w:m:t:n:P:L:U:Qb:h")) != -1) {
		switch (c) {
		case 's': o->server = true; break;
		case 'c': o->host = optarg; break;
		case 'd': o->dev = optarg; break;
		case 'g': o->gid_index = atoi(optarg); break;
		case 'i': o->ib_port = atoi(optarg); break;
		case 'p': o->tcp_port = atoi(optarg); break;
		case 'q': o->nqp = atoi(optarg); break;
		case 'w': o->window = atoi(optarg); break;
		case 'm': o->msg_size = atoi(optarg); break;
		case 't': o->duration = atof(optarg); break;
		case 'n': o->count = strtoull(optarg, NULL, 0); break;
		case 'P': o->progress = atof(optarg); break;
		case 'L': o->max_unanswered = strtoull(optarg, NULL, 0); break;
		case 'U': o->max_ud_lost = strtoull(optarg, NULL, 0); break;
		case 'Q': o->quiet = true; break;
		case 'b': o->listen = optarg; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc || o->server == !!o->host) {
		fprintf(stderr, "ibtraffic: give exactly one of -s and -c HOST\n");
		return -1;
	}
	if (o->nqp < 1 || o->nqp > 4096 || o->window < 2 || o->window > 1024 ||
	    o->msg_size < 128 || o->msg_size > 8192 || o->msg_size % 64) {
		fprintf(stderr, "ibtraffic: -q 1..4096, -w 2..1024, -m 128..8192 in steps of 64\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	static struct tctx t;
	int sock, rc;

	if (parse(argc, argv, &t.o))
		usage(2);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	srand48((long)getpid() ^ (long)tnow());

	if (tres_open(&t)) {
		tres_close(&t);
		return 1;
	}
	sock = t.o.server ? tcp_accept(&t.o) : tcp_connect(&t.o);
	if (sock < 0) {
		terr(&t, "side channel on port %d: %s", t.o.tcp_port, strerror(errno));
		tres_close(&t);
		return 1;
	}
	rc = exchange(&t, sock);
	if (!rc) {
		tlog(&t, "running: %d RC QPs + 1 UD QP on %s", t.o.nqp, t.o.dev);
		rc = t.o.server ? tserver_run(&t, sock) : tclient_run(&t, sock);
	}
	close(sock);
	tprint_stats(&t, "final");
	tres_close(&t);
	return rc || t.st.errors ? 1 : 0;
}
