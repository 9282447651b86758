// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Freezing a job and thawing it: the operations (freeze_job(),
 * thaw_session()), which the checkpoint calls too, and the commands
 * `ibckpt freeze` and `ibckpt thaw`, which parse their options and call them.
 *
 * A freeze belongs to the netlink socket that asked for it: if this command
 * dies, the module thaws the group. So by default `ibckpt freeze` stays,
 * holding the freeze, until it is interrupted (SIGINT, SIGTERM, SIGHUP: it
 * thaws and exits 0) or someone runs `ibckpt thaw` (it notices and exits 0).
 * With --persist SECS the freeze is detached from this command: it returns
 * once the group is frozen and the module thaws the group after SECS unless
 * `ibckpt thaw` comes first.
 *
 * Both FREEZE and THAW return at once (a generic netlink request must not
 * wait): FREEZE once the freeze started, THAW once the threads are released.
 * This command then polls SESSION_GET until the job is frozen, or until the
 * released threads have all left their parks (the module lists the session,
 * THAWING, until then), and only then returns.
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
#include "restart.h"

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

/* The poll's next pause: 1 ms at first, doubling up to 32 ms. */
static void poll_pause(double *sleep_s)
{
	usleep((useconds_t)(*sleep_s * 1e6));
	if (*sleep_s < 0.02)
		*sleep_s *= 2;
}

/* THAW; *@id: the session the module ended, 0 if its reply named none. */
static int send_thaw(struct ibnl *n, const struct cli_job *j, uint64_t *id, char *ext,
		     size_t extlen)
{
	struct nl_msg *m = ibnl_msg(n, IBCKPT_CMD_THAW, 0);
	int rc = cli_job_put(m, j);

	*id = 0;
	if (rc) {	/* 1: the cgroup could not be opened, said */
		nlmsg_free(m);
		return rc;
	}
	return ibnl_call(n, m, on_freeze_reply, id, ext, extlen);
}

/*
 * The session with this @id as SESSION_GET lists it; 0 found, -ENOENT gone,
 * <0 error.
 */
static int get_session_raw(struct ibnl *n, uint64_t id, struct cli_session *out)
{
	struct cli_job by_id = { .session = id };
	struct cli_sessions l;
	char ext[256];
	int err;

	err = cli_get_sessions(n, &by_id, &l, ext, sizeof(ext));
	if (!err && l.n == 1 && l.v[0].id == id) {
		*out = l.v[0];
		out->job.cgroup = out->cgroup;
	} else if (!err) {
		err = -ENOENT;
	}
	free(l.v);
	return err;
}

/*
 * The session with this @id, for the freeze that started it: 0 found,
 * -ENOENT gone or ending (thawed by someone else), <0 error.
 */
static int get_session(struct ibnl *n, uint64_t id, struct cli_session *out)
{
	int err = get_session_raw(n, id, out);

	return !err && out->state == IBCKPT_STATE_THAWING ? -ENOENT : err;
}

/* How long the module waits for released threads, and then this command. */
#define THAW_WAIT_MS	(10000 + 5000)

/*
 * Thaw the session @j names and wait until its threads have left their
 * parks: the module releases them and answers at once, naming the session,
 * which it lists (THAWING) until none is parked any more, 10 s at most.
 * A module that names none waited itself. Return: 0; THAW's negative errno
 * (its reason in @ext); or 1 when the cgroup could not be opened, or the
 * wait failed, after saying so (as "ibckpt: @what: ...").
 */
static int thaw(struct ibnl *n, const struct cli_job *j, char *ext, size_t extlen,
		const char *what)
{
	struct cli_session s;
	double t0 = now(), sleep_s = 0.001;
	uint64_t id;
	int err;

	err = send_thaw(n, j, &id, ext, extlen);
	if (err || !id)
		return err;
	for (;;) {
		err = get_session_raw(n, id, &s);
		if (err == -ENOENT || (!err && s.state == IBCKPT_STATE_THAWING && !s.parked))
			return 0;
		if (err)
			return cli_fail(err, what, "lost track of the thaw");
		if (now() - t0 > THAW_WAIT_MS / 1e3) {
			fprintf(stderr, "ibckpt: %s: %u threads still parked %u ms after the thaw\n",
				what, s.parked, THAW_WAIT_MS);
			return 1;
		}
		poll_pause(&sleep_s);
	}
}

/*
 * Why a freeze timed out: the threads that never parked. The aborted session
 * has released the others, which are running again (see
 * cli_thread_never_parked()).
 */
static void report_stragglers(struct ibnl *n, uint64_t id)
{
	struct cli_threads t;
	char ext[256];
	unsigned int i;

	if (cli_get_threads(n, id, &t, ext, sizeof(ext)))
		t.n = 0;	/* what was read may be partial: name no one */
	for (i = 0; i < t.n; i++)
		if (cli_thread_never_parked(&t.v[i]))
			fprintf(stderr, "ibckpt:   thread %u (process %u) never parked\n",
				t.v[i].tid, t.v[i].tgid);
	free(t.v);
}

void freeze_print(const struct cli_session *s, const char *desc, bool persist, bool as_json)
{
	if (as_json) {
		putchar('{');
		cli_job_json(stdout, &s->job);
		printf(",\"session\":%llu,\"state\":\"frozen\",\"procs\":%u,\"threads\":%u,"
		       "\"parked\":%u,\"exited\":%u,\"freeze_us\":%.1f,\"persist\":%s,"
		       "\"providers\":%u,\"drained\":%llu,\"outstanding\":%u}\n",
		       (unsigned long long)s->id, s->procs, s->threads, s->parked, s->exited,
		       (double)s->freeze_ns / 1e3, json_bool(persist), s->providers,
		       (unsigned long long)s->drained, s->outstanding);
	} else {
		printf("%s frozen: %u threads parked, %u exited, in %.3f ms (%u processes, "
		       "session %llu)\n", desc, s->parked, s->exited, (double)s->freeze_ns / 1e6,
		       s->procs, (unsigned long long)s->id);
		if (s->providers)
			printf("  %u providers quiesced: %llu completions drained, "
			       "%u sends outstanding\n", s->providers,
			       (unsigned long long)s->drained, s->outstanding);
	}
	fflush(stdout);
}

/* A refused freeze: the kernel's reason, and who holds a busy process. */
static int freeze_refused(struct ibnl *n, int err, const char *what, const char *ext)
{
	struct ibckpt_busy b;

	if (err == -EBUSY && n->cookie_len == sizeof(b)) {
		memcpy(&b, n->cookie, sizeof(b));
		if (b.pid)
			fprintf(stderr, "ibckpt: %s: process %u is frozen by session %llu "
				"(ibckpt status --id %llu)\n", what, b.pid,
				(unsigned long long)b.session, (unsigned long long)b.session);
		else	/* the job itself, or a process not visible in our pid namespace */
			fprintf(stderr, "ibckpt: %s: %s (session %llu)\n", what,
				*ext ? ext : "the job is already frozen",
				(unsigned long long)b.session);
		return 1;
	}
	return cli_fail(err, what, ext);
}

/* ---- the operations ---- */

/* --timeout MS: the module's, for every thread to park. Return: 0, or -1 (said). */
int freeze_timeout(const char *arg, unsigned long *ms)
{
	char *end;

	*ms = strtoul(arg, &end, 10);
	if (*end || !*ms || *ms > IBCKPT_FREEZE_TIMEOUT_MAX_MS) {
		fprintf(stderr, "ibckpt: --timeout takes 1 to %u ms\n",
			IBCKPT_FREEZE_TIMEOUT_MAX_MS);
		return -1;
	}
	return 0;
}

/**
 * freeze_job() - freeze @job and wait until the module says it is frozen
 * @n: the socket the freeze belongs to: unless @o->persist_s, its close thaws the job
 * @job: the job
 * @o: the module's timeout, and how long a persistent freeze may last
 * @s: the frozen session (s->id); its job is @job, as the user named it (the
 *     module gives a cgroup's path its own way)
 *
 * SIGINT, SIGTERM and SIGHUP interrupt the wait, and the job is thawed. The
 * handlers stay after it: they end the holding of the freeze
 * (cmd_freeze()), and a checkpoint is not cut short between its release
 * and its reacquire, which would leave the job released.
 * Return: 0 when frozen, or 1 (said as "ibckpt: cannot freeze JOB: ..."; the
 * job runs).
 */
int freeze_job(struct ibnl *n, const struct cli_job *job, const struct freeze_opts *o,
	       struct cli_session *s)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct cli_job by_id = { 0 };
	char ext[256], what[320], desc[288];
	double t0, sleep_s = 0.001;
	struct nl_msg *m;
	uint64_t id = 0;
	int err;

	cli_job_describe(job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot freeze %s", desc);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	t0 = now();
	m = ibnl_msg(n, IBCKPT_CMD_FREEZE, 0);
	err = cli_job_put(m, job);
	if (err > 0) {
		nlmsg_free(m);
		return 1;
	}
	if (m && (err || nla_put_u32(m, IBCKPT_A_TIMEOUT_MS, (uint32_t)o->timeout_ms) ||
		  (o->persist_s && (nla_put_u32(m, IBCKPT_A_FLAGS, IBCKPT_FREEZE_F_PERSIST) ||
				    nla_put_u32(m, IBCKPT_A_WATCHDOG_MS,
						(uint32_t)(o->persist_s * 1000)))))) {
		nlmsg_free(m);
		m = NULL;
	}
	err = ibnl_call(n, m, on_freeze_reply, &id, ext, sizeof(ext));
	if (err)
		return freeze_refused(n, err, what, ext);
	/* from here on the session is named by its id: the job may die or move */
	by_id.session = id;

	/* wait for the module's verdict; it gives up by itself at the timeout */
	for (;;) {
		err = get_session(n, id, s);
		if (err || s->state != IBCKPT_STATE_FREEZING || interrupted)
			break;
		if (now() - t0 > (double)o->timeout_ms / 1e3 + 5) {
			err = -ETIMEDOUT;
			break;
		}
		poll_pause(&sleep_s);
	}
	if (!err && s->state == IBCKPT_STATE_FROZEN) {
		s->job = *job;
		return 0;
	}
	if (!err && s->state == IBCKPT_STATE_ABORTED && s->quiesce_err) {
		fprintf(stderr, "ibckpt: %s: the provider of process %u could not quiesce "
			"(%s%s%s); the job was left running\n", what, s->quiesce_pid,
			strerror((int)s->quiesce_err), *s->quiesce_msg ? ": " : "",
			s->quiesce_msg);
	} else if (!err && s->state == IBCKPT_STATE_ABORTED && s->quiesced < s->providers) {
		fprintf(stderr, "ibckpt: %s: %u of %u providers did not quiesce within %lu ms; "
			"the job was left running\n", what, s->providers - s->quiesced,
			s->providers, o->timeout_ms);
	} else if (!err && s->state == IBCKPT_STATE_ABORTED) {
		fprintf(stderr, "ibckpt: %s: not every thread parked within %lu ms; "
			"the job was left running\n", what, o->timeout_ms);
		report_stragglers(n, id);
	} else if (!err && s->state == IBCKPT_STATE_FREEZING) {	/* interrupted */
		err = thaw(n, &by_id, ext, sizeof(ext), what);
		if (!err || err == -ENOENT)
			fprintf(stderr, "ibckpt: %s: interrupted; the job was thawed\n", what);
		else if (err < 0 && *ext)	/* > 0: the wait failed, said */
			fprintf(stderr, "ibckpt: %s: interrupted; cannot thaw it: %s (%s)\n",
				what, ext, strerror(-err));
		else if (err < 0)
			fprintf(stderr, "ibckpt: %s: interrupted; cannot thaw it: %s\n",
				what, strerror(-err));
		return 1;
	} else if (err == -ETIMEDOUT) {
		fprintf(stderr, "ibckpt: %s: the module gave no verdict within %lu ms; "
			"thawing the job\n", what, o->timeout_ms + 5000);
	} else if (err == -ENOENT) {
		/* nothing of ours to thaw: a new freeze of the job may be someone else's */
		fprintf(stderr, "ibckpt: %s: the freeze ended before the job was "
			"frozen (thawed by someone else?)\n", what);
		return 1;
	} else if (err) {
		cli_fail(err, what, "lost track of the freeze");
	} else {
		fprintf(stderr, "ibckpt: %s: unexpected session state %s\n", what,
			cli_state_name(s->state));
	}
	thaw(n, &by_id, ext, sizeof(ext), what);
	return 1;
}

/*
 * Thaw @job through @n; a failure is said as "ibckpt: @what: ...". *@secs:
 * how long the thaw took. Return: 0, or 1.
 */
static int thaw_timed(struct ibnl *n, const struct cli_job *job, const char *what,
		      double *secs)
{
	char ext[256] = "";
	double t0 = now();
	int err = thaw(n, job, ext, sizeof(ext), what);

	*secs = now() - t0;
	if (err < 0)
		cli_fail(err, what, ext);
	return err ? 1 : 0;
}

/**
 * thaw_session() - thaw the freeze session @id
 * @id: the session
 * @secs: how long the thaw took, until every thread left its park
 *
 * Return: 0, or 1 (said as "ibckpt: cannot thaw freeze session ID: ...").
 */
int thaw_session(uint64_t id, double *secs)
{
	struct cli_job by_id = { .session = id };
	char what[320], desc[288];
	struct ibnl n;
	int rc;

	if (ibnl_open(&n, 0))
		return 1;
	cli_job_describe(&by_id, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot thaw %s", desc);
	rc = thaw_timed(&n, &by_id, what, secs);
	ibnl_close(&n);
	return rc;
}

/* What `ibckpt thaw` prints: @job (or its --id) thawed, and in how long. */
void thaw_print(const struct cli_job *job, double secs, bool as_json)
{
	char desc[288];

	if (as_json) {
		putchar('{');
		if (job->type)
			cli_job_json(stdout, job);
		else
			printf("\"session\":%llu", (unsigned long long)job->session);
		printf(",\"state\":\"thawed\",\"thaw_us\":%.1f}\n", secs * 1e6);
	} else {
		printf("%s thawed\n", cli_job_describe(job, desc, sizeof(desc)));
	}
}

/**
 * thaw_session_left() - thaw the freeze session @id if it is still frozen
 * @id: the session
 * @print: print the thaw as text, as thaw_print() does
 *
 * A checkpoint keeps its released job frozen for criu's pre-dump action
 * (criu_dump()): the action thaws it, unless the freeze's --persist ended
 * it first; a checkpoint that fails before the action thaws it itself.
 * Return: 0 (thawed, or not frozen any more), or 1 (said).
 */
int thaw_session_left(uint64_t id, bool print)
{
	struct cli_job all = { 0 }, by_id = { .session = id };
	struct cli_sessions l = { 0 };
	bool frozen = false;
	char ext[256] = "";
	struct ibnl n;
	unsigned int i;
	double secs;
	int err;

	if (ibnl_open(&n, 0))
		return 1;
	err = cli_get_sessions(&n, &all, &l, ext, sizeof(ext));
	ibnl_close(&n);
	for (i = 0; !err && i < l.n; i++)
		frozen |= l.v[i].id == id && l.v[i].state == IBCKPT_STATE_FROZEN;
	free(l.v);
	if (err) {
		fprintf(stderr, "ibckpt: cannot list the freeze sessions%s%s\n", ext[0] ? ": " : "",
			ext);
		return 1;
	}
	if (!frozen)
		return 0;
	if (thaw_session(id, &secs))
		return 1;
	if (print)
		thaw_print(&by_id, secs, false);
	return 0;
}

/* ---- the commands ---- */

static void freeze_usage(void)
{
	fprintf(stderr, "usage: ibckpt freeze [--timeout MS] [--persist SECS] [-D DIR "
		NODES_USAGE "] " CLI_JOB_USAGE "\n");
}

int cmd_freeze(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "persist", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'D' },
		NODES_OPTIONS,
		CLI_JOB_OPTIONS,
		{ 0 }
	};
	struct freeze_opts fo = { .timeout_ms = 10000 };
	struct coord_opts nopts = { 0 };
	struct coord cs, *co = NULL;
	const char *dir = NULL;
	struct cli_session s = { 0 };
	struct cli_job job = { 0 }, by_id = { 0 };
	char ext[256], what[320], desc[288], *end;
	struct ibnl n;
	int c, err, rc, nopart;

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;
	while ((c = getopt_long(argc, argv, "t:p:D:", opts, NULL)) != -1) {
		switch (c) {
		case 'D':
			dir = optarg;
			break;
		case 't':
			if (freeze_timeout(optarg, &fo.timeout_ms))
				return 2;
			break;
		case 'p':
			fo.persist_s = strtoul(optarg, &end, 10);
			if (*end || !fo.persist_s || fo.persist_s > IBCKPT_WATCHDOG_MAX_MS / 1000) {
				fprintf(stderr, "ibckpt: --persist takes 1 to %u seconds\n",
					IBCKPT_WATCHDOG_MAX_MS / 1000);
				return 2;
			}
			break;
		default:
			err = nodes_opt(c, optarg, &nopts);
			if (err > 0)
				break;
			if (!err)
				err = cli_job_opt(c, optarg, &job);
			if (err > 0)
				break;
			if (!err)
				freeze_usage();
			return 2;
		}
	}
	if (cli_job_finish(&job, argc, argv, optind, 0)) {
		freeze_usage();
		return 2;
	}
	nopart = slurm_job_finish(&job, &nopts, dir, SLURM_FANOUT, argc, argv);
	if (nopart < 0)
		return 1;
	if (nodes_finish(&nopts) || (nopts.n && !dir) || (dir && !nopts.n)) {
		if ((nopts.n && !dir) || (dir && !nopts.n))
			fprintf(stderr, "ibckpt: a job on several nodes: --node and -D DIR (a "
				"directory every node sees) go together\n");
		freeze_usage();
		return 2;
	}
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot freeze %s", desc);
	if (nopts.n) {
		/* every node's part quiesced before any node says frozen (restart.rst) */
		if (coord_open(&cs, dir, &nopts))
			return 1;
		co = &cs;
	}
	/* this node has no part of the Slurm step (said): the others learn it at once */
	if (nopart) {
		nodes_vote(co, "frozen", 1, "it has no part of the Slurm step to take", NULL, 0, 0,
			   NULL, NULL, NULL);
		return 1;
	}
	if (ibnl_open(&n, 0)) {
		nodes_vote(co, "frozen", 1, "it cannot reach the module", NULL, 0, 0, NULL, NULL,
			   NULL);
		return 1;
	}
	if (freeze_job(&n, &job, &fo, &s)) {
		nodes_vote(co, "frozen", 1, "its part did not freeze", NULL, 0, 0, NULL, NULL,
			   NULL);
		rc = 1;
		goto out;
	}
	rc = 1;
	by_id.session = s.id;
	if (nodes_vote(co, "frozen", 0, NULL, NULL, 0, 0, NULL, NULL, NULL)) {
		err = thaw(&n, &by_id, ext, sizeof(ext), what);
		fprintf(stderr, "ibckpt: %s: the job did not freeze on every node; %s\n", what,
			err && err != -ENOENT ? "cannot thaw this node's part (above)" :
			"this node's part was thawed");
		goto out;
	}
	freeze_print(&s, desc, fo.persist_s != 0, json);
	if (fo.persist_s) {
		rc = 0;
		goto out;
	}

	/* hold the freeze: it ends with this socket */
	if (!json)
		printf("holding the freeze: interrupt this command or run 'ibckpt thaw --id %llu'\n",
		       (unsigned long long)by_id.session);
	fflush(stdout);
	while (!interrupted) {
		err = get_session(&n, by_id.session, &s);
		if (err == -ENOENT) {	/* thawed by someone else */
			rc = 0;
			goto out;
		}
		if (err) {
			cli_fail(err, "lost track of the freeze", NULL);
			goto out;
		}
		/* a process that joined the job could not be frozen in time */
		if (s.state == IBCKPT_STATE_ABORTED) {
			fprintf(stderr, "ibckpt: %s: the freeze was abandoned: a process that "
				"joined the job could not be frozen%s; the job runs\n", desc,
				s.quiesce_err ? " (its provider failed to quiesce)" : "");
			thaw(&n, &by_id, ext, sizeof(ext), desc);
			goto out;
		}
		usleep(100000);
	}
	err = thaw(&n, &by_id, ext, sizeof(ext), "thaw");
	rc = err > 0 ? 1 : err && err != -ENOENT ? cli_fail(err, "thaw", ext) : 0;
	if (!rc && !json)
		printf("%s thawed\n", desc);
out:
	ibnl_close(&n);
	cli_job_close();
	return rc;
}

int cmd_thaw(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'D' },
		NODES_OPTIONS,
		CLI_JOB_OPTIONS,
		{ 0 }
	};
	struct coord_opts nopts = { 0 };
	struct coord cs, *co = NULL;
	const char *dir = NULL;
	struct cli_job job = { 0 };
	char what[320], desc[288];
	struct ibnl n;
	double secs;
	int c, err, nopart;

	if (cli_job_negative(argc, argv))
		return 2;
	optind = 0;
	while ((c = getopt_long(argc, argv, "D:", opts, NULL)) != -1) {
		if (c == 'D') {
			dir = optarg;
			continue;
		}
		err = nodes_opt(c, optarg, &nopts);
		if (!err)
			err = cli_job_opt(c, optarg, &job);
		if (err <= 0)
			goto usage;
	}
	if (cli_job_finish(&job, argc, argv, optind, CLI_JOB_BY_ID))
		goto usage;
	nopart = slurm_job_finish(&job, &nopts, dir, SLURM_FANOUT | SLURM_SUSPENDED_OK, argc, argv);
	if (nopart < 0)
		return 1;
	if (nodes_finish(&nopts) || !nopts.n != !dir)
		goto usage;
	if (nopts.n) {
		if (coord_open(&cs, dir, &nopts))
			return 1;
		co = &cs;
	}
	if (nopart) {
		nodes_vote(co, "thawed", 1, "it has no part of the Slurm step to take", NULL, 0, 0,
			   NULL, NULL, NULL);
		return 1;
	}
	if (ibnl_open(&n, 0)) {
		nodes_vote(co, "thawed", 1, "it cannot reach the module", NULL, 0, 0, NULL, NULL,
			   NULL);
		return 1;
	}
	cli_job_describe(&job, desc, sizeof(desc));
	snprintf(what, sizeof(what), "cannot thaw %s", desc);
	err = thaw_timed(&n, &job, what, &secs);
	ibnl_close(&n);
	cli_job_close();
	/* each node thaws its own part at once; the barrier only reports the others */
	if (nodes_vote(co, "thawed", err, "its part did not thaw", NULL, 0, 0, NULL, NULL,
		       NULL) || err)
		return 1;
	thaw_print(&job, secs, json);
	return 0;
usage:
	fprintf(stderr, "usage: ibckpt thaw [-D DIR " NODES_USAGE "] " CLI_JOB_USAGE
		" | --id SESSION\n");
	return 2;
}
