/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ibtraffic: a self-checking RDMA traffic generator for ibckpt's tests.
 *
 * Two processes (a "client" that drives traffic and a "server" that receives
 * and acknowledges it) on two RDMA devices exercise, per RC QP: SEND into a
 * shared receive queue, RDMA WRITE with immediate, RDMA READ, atomic
 * fetch-and-add; plus UD datagrams. Every message carries a sequence number
 * and a checksum; the receiver checks no loss, no duplicate, per-QP order and
 * integrity, and the atomic counters are checked against the fetched values
 * and the client's totals at the end. The client busy-polls its CQs, the
 * server sleeps on a completion channel.
 */
#ifndef IBTRAFFIC_H
#define IBTRAFFIC_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define TMSG_DATA	0x44415441u	/* "DATA": a SEND or a WRITE payload */
#define TMSG_ACK	0x41434b21u	/* "ACK!": server -> client credits */
#define TMSG_UD		0x55444721u	/* "UDG!": a UD datagram */

/* Header at the start of every message buffer. */
struct tmsg {
	uint32_t magic;
	uint16_t qp;		/* QP index the message belongs to */
	uint16_t len;		/* payload bytes after the header */
	uint64_t seq;		/* per-QP (or UD) message sequence number */
	uint64_t ack;		/* ACK: messages received in order on this QP */
	uint64_t ud_ack;	/* ACK: UD datagrams received in order */
	uint64_t sum;		/* FNV-1a over header (sum = 0) and payload */
};

struct topts {
	bool server;
	const char *host;	/* client: server to connect to */
	const char *listen;	/* server: the address to listen on (loopback) */
	const char *dev;
	int gid_index;
	int ib_port;
	int tcp_port;
	int nqp;
	int window;		/* data messages in flight per QP */
	int msg_size;		/* bytes per message buffer, header included */
	double duration;	/* seconds, 0 = until SIGINT/SIGTERM */
	uint64_t count;		/* client: stop after this many operations, 0 = no limit */
	double progress;	/* seconds between progress lines, 0 = none */
	bool quiet;
	uint64_t max_unanswered;	/* client: atomics tolerated without a result (-L) */
	uint64_t max_ud_lost;		/* both: UD datagrams a lossy link may drop (-U) */
};

/* Per-process counters; the final line prints them as JSON. */
struct tstats {
	uint64_t sends, writes, reads, atomics, ud;	/* completed by the client */
	uint64_t unanswered;		/* of the atomics, completed without their result */
	uint64_t acks;					/* ACK messages seen or sent */
	uint64_t rx_msgs, rx_ud;			/* verified by the server */
	uint64_t ud_lost;		/* server: datagrams that never came (-U) */
	uint64_t errors;
};

/* Remote side of one RC QP, as exchanged over TCP. */
struct tpeer_qp {
	uint32_t qpn;
	uint32_t psn;
};

/* What each side tells the other over TCP before traffic starts. */
struct thello {
	uint32_t magic;
	uint32_t nqp, window, msg_size;
	uint8_t gid[16];
	uint32_t lid;
	uint32_t ud_qpn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t base;		/* address of the registered region */
};

/* Work queue bookkeeping of our own (independent of ibckpt's). */
struct tsq_ent {
	uint64_t seq;
	uint8_t op;		/* enum top */
	uint8_t signaled;
	uint16_t qp;
};

enum top { OP_SEND, OP_WRITE_IMM, OP_READ, OP_ATOMIC, OP_UD, OP_ACK };

struct tqp {
	struct ibv_qp *qp;
	uint32_t psn;
	struct tpeer_qp peer;
	/* send queue ring, indexed by absolute post position */
	struct tsq_ent *sq;
	uint64_t sq_head, sq_tail;	/* retired up to head, posted up to tail */
	uint64_t nsig;			/* signaled WRs not yet completed */
	/* client */
	uint64_t msg_next;		/* next data message seq */
	uint64_t peer_ack;		/* messages the server has acknowledged */
	uint64_t peer_ud_ack;		/* UD datagrams, by this QP's last ACK */
	uint64_t atomic_next;		/* fetch-and-adds posted on this QP */
	uint64_t op_next;		/* op schedule position */
	/* server */
	uint64_t msg_expect;		/* next expected data message seq */
	uint64_t ack_sent;		/* value of the last ACK sent */
};

struct tctx {
	struct topts o;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *chan;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *udqp;
	struct ibv_ah *ah;
	struct tqp *qps;
	uint32_t *qpn_to_idx_keys;	/* small open-addressed map: qpn -> index */
	uint16_t *qpn_to_idx_vals;
	uint32_t qpn_map_mask;
	uint8_t *buf;
	size_t buf_len;
	union ibv_gid gid;
	uint16_t lid;
	struct thello peer;
	int sq_depth;
	int srq_depth;
	int ud_depth;
	int max_inline;
	/* UD */
	struct tsq_ent *udsq;
	uint64_t udsq_head, udsq_tail, ud_nsig;
	uint64_t ud_next, ud_ack, ud_expect, ud_ack_sent;
	uint64_t ud_recv_posted;
	struct tstats st;
};

/* layout.c: where each buffer lives in the one registered region */
size_t tl_size(const struct tctx *t);
uint8_t *tl_sq_slot(struct tctx *t, int qp, uint64_t pos);
uint64_t tl_write_slot_off(const struct tctx *t, int qp, uint64_t seq);
uint64_t tl_read_off(const struct tctx *t, int qp);
uint64_t tl_atomic_off(const struct tctx *t, int qp);
uint8_t *tl_srq_slot(struct tctx *t, uint64_t i);
uint8_t *tl_ud_send_slot(struct tctx *t, uint64_t pos);
uint8_t *tl_ud_recv_slot(struct tctx *t, uint64_t i);

/* payload.c: message contents and checks */
void tmsg_fill(struct tmsg *m, uint32_t magic, int qp, uint64_t seq, int len);
void tmsg_seal(struct tmsg *m);
int tmsg_check(const struct tmsg *m, uint32_t magic, int qp, uint64_t seq, size_t room);
void tread_pattern(uint8_t *p, int qp, size_t len);
uint64_t tfnv1a(const void *p, size_t len, uint64_t h);

/* verbs.c: resources and connection */
int tres_open(struct tctx *t);
int tres_connect(struct tctx *t, const struct tpeer_qp *peer_qps);
void tres_close(struct tctx *t);
int tqp_index(const struct tctx *t, uint32_t qpn);
int tpost_srq_recv(struct tctx *t, uint64_t i);
int tpost_ud_recv(struct tctx *t, uint64_t i);

/* client.c / server.c: the traffic loops; return 0 when all checks held */
int tclient_run(struct tctx *t, int sock);
int tserver_run(struct tctx *t, int sock);

/* Exchanged over TCP when the client stops: what it did, and the verdict. */
struct tfinal_qp {
	uint64_t msgs;
	uint64_t atomics;
};

struct tfinal {
	uint32_t magic;
	uint32_t nqp;
	uint64_t ud;
	uint64_t errors;	/* verdict: errors the server found */
	uint64_t rx_msgs, rx_ud;
};

#define TFINAL_MAGIC 0x46494e21u

/* main.c */
extern volatile int tstop;
double tnow(void);
void tlog(const struct tctx *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void terr(struct tctx *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tprint_stats(const struct tctx *t, const char *what);
int tsend_all(int fd, const void *p, size_t len);
int trecv_all(int fd, void *p, size_t len);

/* ack.c: the client takes an ACK the server sent on QP p (0, or -1 out of range). */
int tack_take(struct tctx *t, struct tqp *p, const struct tmsg *m);

/* atomic.c: the client's verdict on a completed fetch-and-add */
enum tatomic_verdict {
	TATOMIC_OK,		/* fetched the value expected */
	TATOMIC_UNANSWERED,	/* no result ever written; tolerated (see atomic.c) */
	TATOMIC_LATE,		/* the result was written after the completion came */
	TATOMIC_WRONG,		/* a lost or duplicated add */
	TATOMIC_TOO_MANY,	/* unanswered, beyond what is tolerated */
};
enum tatomic_verdict tatomic_verdict(struct tctx *t, uint64_t at_completion, uint64_t later,
				     uint64_t expect);

#endif
