// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt freeze / ibckpt thaw.
 *
 * A freeze belongs to the netlink socket that asked for it: if this command
 * dies, the module thaws the group. So by default `ibckpt freeze` stays,
 * holding the freeze, until it is interrupted (SIGINT, SIGTERM, SIGHUP: it
 * thaws and exits 0) or someone runs `ibckpt thaw` (it notices and exits 0).
 * With --persist SECS the freeze is detached from this command: it returns
 * once the group is frozen and the module thaws the group after SECS unless
 * `ibckpt thaw` comes first.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/ibckpt.h>
#include "cli.h"
#include "json.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int on_freeze_reply(struct nlattr **a, void *arg)
{
	if (a[IBCKPT_A_SESSION_ID])
		*(uint64_t *)arg = nla_get_u64(a[IBCKPT_A_SESSION_ID]);
	return 0;
}

static int send_thaw(struct ibnl *n, unsigned int pgid, char *ext, size_t extlen)
{
	struct nl_msg *m = ibnl_msg(n, IBCKPT_CMD_THAW, 0);

	if (m && nla_put_u32(m, IBCKPT_A_PGID, pgid)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	return ibnl_call(n, m, NULL, NULL, ext, extlen);
}

/* The session of @pgid with this @id; 0 found, -ENOENT gone, <0 error. */
static int get_session(struct ibnl *n, unsigned int pgid, uint64_t id, struct cli_session *out)
{
	struct cli_sessions l;
	char ext[256];
	unsigned int i;
	int err;

	err = cli_get_sessions(n, pgid, &l, ext, sizeof(ext));
	if (!err) {
		err = -ENOENT;
		for (i = 0; i < l.n; i++)
			if (l.v[i].id == id) {
				*out = l.v[i];
				err = 0;
			}
	}
	free(l.v);
	return err;
}

/*
 * Why a freeze timed out: the threads that never parked. The aborted session
 * has released the others, which are running again (see
 * cli_thread_never_parked()).
 */
static void report_stragglers(struct ibnl *n, unsigned int pgid)
{
	struct cli_threads t;
	char ext[256];
	unsigned int i;

	if (cli_get_threads(n, pgid, &t, ext, sizeof(ext)))
		t.n = 0;	/* what was read may be partial: name no one */
	for (i = 0; i < t.n; i++)
		if (cli_thread_never_parked(&t.v[i]))
			fprintf(stderr, "ibckpt:   thread %u (process %u) never parked\n",
				t.v[i].tid, t.v[i].tgid);
	free(t.v);
}

static void print_frozen(const struct cli_session *s, int persist)
{
	if (json) {
		printf("{\"pgid\":%u,\"session\":%llu,\"state\":\"frozen\",\"threads\":%u,"
		       "\"parked\":%u,\"exited\":%u,\"freeze_us\":%.1f,\"persist\":%s,"
		       "\"providers\":%u,\"drained\":%llu,\"outstanding\":%u}\n",
		       s->pgid, (unsigned long long)s->id, s->threads, s->parked, s->exited,
		       (double)s->freeze_ns / 1e3, json_bool(persist), s->providers,
		       (unsigned long long)s->drained, s->outstanding);
	} else {
		printf("process group %u frozen: %u threads parked, %u exited, in %.3f ms\n",
		       s->pgid, s->parked, s->exited, (double)s->freeze_ns / 1e6);
		if (s->providers)
			printf("  %u providers quiesced: %llu completions drained, "
			       "%u sends outstanding\n", s->providers,
			       (unsigned long long)s->drained, s->outstanding);
	}
	fflush(stdout);
}

int cmd_freeze(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "persist", required_argument, NULL, 'p' },
		{ 0 }
	};
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long timeout_ms = 10000, persist_s = 0;
	struct cli_session s = { 0 };
	unsigned int pgid;
	char ext[256], what[64], *end;
	struct ibnl n;
	struct nl_msg *m;
	uint64_t id = 0;
	double t0, sleep_s = 0.001;
	int c, err, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:p:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			timeout_ms = strtoul(optarg, &end, 10);
			if (*end || !timeout_ms || timeout_ms > IBCKPT_FREEZE_TIMEOUT_MAX_MS) {
				fprintf(stderr, "ibckpt: --timeout takes 1 to %u ms\n",
					IBCKPT_FREEZE_TIMEOUT_MAX_MS);
				return 2;
			}
			break;
		case 'p':
			persist_s = strtoul(optarg, &end, 10);
			if (*end || !persist_s || persist_s > IBCKPT_WATCHDOG_MAX_MS / 1000) {
				fprintf(stderr, "ibckpt: --persist takes 1 to %u seconds\n",
					IBCKPT_WATCHDOG_MAX_MS / 1000);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: ibckpt freeze [--timeout MS] [--persist SECS] PGID\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: ibckpt freeze [--timeout MS] [--persist SECS] PGID\n");
		return 2;
	}
	if (cli_pgid(argv[optind], &pgid))
		return 2;
	snprintf(what, sizeof(what), "cannot freeze process group %u", pgid);
	if (ibnl_open(&n, 0))
		return 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	t0 = now();
	m = ibnl_msg(&n, IBCKPT_CMD_FREEZE, 0);
	if (m && (nla_put_u32(m, IBCKPT_A_PGID, pgid) ||
		  nla_put_u32(m, IBCKPT_A_TIMEOUT_MS, (uint32_t)timeout_ms) ||
		  (persist_s && (nla_put_u32(m, IBCKPT_A_FLAGS, IBCKPT_FREEZE_F_PERSIST) ||
				 nla_put_u32(m, IBCKPT_A_WATCHDOG_MS,
					     (uint32_t)(persist_s * 1000)))))) {
		nlmsg_free(m);
		m = NULL;
	}
	err = ibnl_call(&n, m, on_freeze_reply, &id, ext, sizeof(ext));
	if (err) {
		ibnl_close(&n);
		return cli_fail(err, what, ext);
	}

	/* wait for the module's verdict; it gives up by itself at the timeout */
	for (;;) {
		err = get_session(&n, pgid, id, &s);
		if (err || s.state != IBCKPT_STATE_FREEZING || interrupted)
			break;
		if (now() - t0 > (double)timeout_ms / 1e3 + 5) {
			err = -ETIMEDOUT;
			break;
		}
		usleep((useconds_t)(sleep_s * 1e6));
		if (sleep_s < 0.02)
			sleep_s *= 2;
	}
	if (err || s.state != IBCKPT_STATE_FROZEN) {
		if (!err && s.state == IBCKPT_STATE_ABORTED && s.quiesce_err) {
			fprintf(stderr, "ibckpt: %s: the provider of process %u could not quiesce "
				"(%s); the group was left running\n", what, s.quiesce_pid,
				strerror((int)s.quiesce_err));
		} else if (!err && s.state == IBCKPT_STATE_ABORTED && s.quiesced < s.providers) {
			fprintf(stderr, "ibckpt: %s: %u of %u providers did not quiesce within %lu ms; "
				"the group was left running\n", what, s.providers - s.quiesced,
				s.providers, timeout_ms);
		} else if (!err && s.state == IBCKPT_STATE_ABORTED) {
			fprintf(stderr, "ibckpt: %s: not every thread parked within %lu ms; "
				"the group was left running\n", what, timeout_ms);
			report_stragglers(&n, pgid);
		} else if (!err && s.state == IBCKPT_STATE_FREEZING) {	/* interrupted */
			err = send_thaw(&n, pgid, ext, sizeof(ext));
			if (!err || err == -ENOENT)
				fprintf(stderr, "ibckpt: %s: interrupted; the group was thawed\n",
					what);
			else if (*ext)
				fprintf(stderr, "ibckpt: %s: interrupted; cannot thaw it: %s (%s)\n",
					what, ext, strerror(-err));
			else
				fprintf(stderr, "ibckpt: %s: interrupted; cannot thaw it: %s\n",
					what, strerror(-err));
			goto out;
		} else if (err == -ETIMEDOUT) {
			fprintf(stderr, "ibckpt: %s: the module gave no verdict within %lu ms; "
				"thawing the group\n", what, timeout_ms + 5000);
		} else if (err == -ENOENT) {
			/* nothing of ours to thaw: a new freeze of the group may be someone else's */
			fprintf(stderr, "ibckpt: %s: the freeze ended before the group was "
				"frozen (thawed by someone else?)\n", what);
			goto out;
		} else if (err) {
			cli_fail(err, what, "lost track of the freeze");
		} else {
			fprintf(stderr, "ibckpt: %s: unexpected session state %s\n", what,
				cli_state_name(s.state));
		}
		send_thaw(&n, pgid, ext, sizeof(ext));
		goto out;
	}
	print_frozen(&s, persist_s != 0);
	if (persist_s) {
		rc = 0;
		goto out;
	}

	/* hold the freeze: it ends with this socket */
	if (!json)
		printf("holding the freeze: interrupt this command or run 'ibckpt thaw %u'\n", pgid);
	fflush(stdout);
	while (!interrupted) {
		err = get_session(&n, pgid, id, &s);
		if (err == -ENOENT) {	/* thawed by someone else */
			rc = 0;
			goto out;
		}
		if (err) {
			cli_fail(err, "lost track of the freeze", NULL);
			goto out;
		}
		usleep(100000);
	}
	err = send_thaw(&n, pgid, ext, sizeof(ext));
	rc = err && err != -ENOENT ? cli_fail(err, "thaw", ext) : 0;
	if (!rc && !json)
		printf("process group %u thawed\n", pgid);
out:
	ibnl_close(&n);
	return rc;
}

int cmd_thaw(int argc, char **argv)
{
	unsigned int pgid;
	char ext[256], what[64];
	struct ibnl n;
	double t0;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: ibckpt thaw PGID\n");
		return 2;
	}
	if (cli_pgid(argv[1], &pgid))
		return 2;
	if (ibnl_open(&n, 0))
		return 1;
	t0 = now();
	err = send_thaw(&n, pgid, ext, sizeof(ext));
	t0 = now() - t0;
	ibnl_close(&n);
	snprintf(what, sizeof(what), "cannot thaw process group %u", pgid);
	if (err)
		return cli_fail(err, what, ext);
	if (json)
		printf("{\"pgid\":%u,\"state\":\"thawed\",\"thaw_us\":%.1f}\n", pgid, t0 * 1e6);
	else
		printf("process group %u thawed\n", pgid);
	return 0;
}
