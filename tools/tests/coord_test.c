// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Barriers between nodes (tools/coord.c), each node played by a process of
 * its own on one directory: every node reads the same verdict, whoever fails
 * or goes missing, node 0 included; and the coordination of a checkpoint and
 * a restart with 1,000 simulated node agents (COORD_TEST_NODES=N for
 * another N), the time to each barrier reported.
 */
#define UNIT_SUITE "coord"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "../../tests/unit/unit.h"
#include "../coord.h"

static char base[] = "/tmp/coord_test.XXXXXX";
static unsigned int runs;

struct plan {
	unsigned int n;
	unsigned int timeout_ms, grace_ms;
	int fail_rank, fail_code;	/* that node votes no */
	int silent_rank;		/* that node never votes */
	int decide_code;		/* node 0 refuses at the end */
	unsigned int flags;
};

/* What each node read, written to base/run/result.RANK by the node's process. */
struct result {
	int rc, code;
	unsigned int by;
	int gathered;		/* every node's data present and right */
	char why[512];
};

static int decide(void *arg, const void *votes, size_t len, char *why, size_t whylen)
{
	const struct plan *p = arg;

	(void)votes;
	(void)len;
	if (p->decide_code)
		snprintf(why, whylen, "node 0 refuses");
	return p->decide_code;
}

struct gcheck {
	unsigned int next, n;
};

static int check_one(void *arg, unsigned int rank, const void *data, size_t len)
{
	struct gcheck *g = arg;
	char want[32];

	snprintf(want, sizeof(want), "node-%u", rank);
	if (rank != g->next || len != strlen(want) + 1 || memcmp(data, want, len))
		return 1;
	g->next++;
	return 0;
}

static void node(const struct plan *p, unsigned int rank, const char *run)
{
	struct coord_opts o = { .rank = rank, .n = p->n, .run = run,
				.timeout_ms = p->timeout_ms };
	struct result r = { 0 };
	struct coord_verdict v;
	struct coord c;
	char data[32], msg[64], path[4200];
	int fd;

	if ((int)rank == p->silent_rank)
		_exit(0);
	if (coord_open(&c, base, &o))
		_exit(1);
	c.grace_ms = p->grace_ms;
	snprintf(data, sizeof(data), "node-%u", rank);
	snprintf(msg, sizeof(msg), "node %u says no", rank);
	r.rc = coord_vote(&c, "phase-1", (int)rank == p->fail_rank ? p->fail_code : 0, msg, data,
			  strlen(data) + 1, p->flags, decide, (void *)p, &v);
	r.code = v.code;
	r.by = v.by;
	snprintf(r.why, sizeof(r.why), "%s", v.why);
	if (v.data) {
		struct gcheck g = { .n = p->n };

		r.gathered = !coord_each(v.data, v.len, check_one, &g) && g.next == p->n;
	}
	coord_verdict_free(&v);
	snprintf(path, sizeof(path), "%s/%s/result.%u", base, run, rank);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	close(fd);
	_exit(0);
}

/* Run @p with a process per node; @r[i]: what node i read (rc -2: nothing). */
static void run_plan(const struct plan *p, struct result *r)
{
	char run[32], path[4200];
	unsigned int i;
	pid_t pid;
	int st, fd;

	snprintf(run, sizeof(run), "run-%u", ++runs);
	snprintf(path, sizeof(path), "%s/coord", base);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%s", base, run);
	mkdir(path, 0700);
	for (i = 0; i < p->n; i++) {
		pid = fork();
		if (pid == 0)
			node(p, i, run);
		CHECK(pid > 0);
	}
	while (wait(&st) > 0)
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (i = 0; i < p->n; i++) {
		r[i].rc = -2;
		snprintf(path, sizeof(path), "%s/%s/result.%u", base, run, i);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			CHECK_EQ(read(fd, &r[i], sizeof(r[i])), (ssize_t)sizeof(r[i]));
			close(fd);
		}
	}
}

static struct plan plan3(void)
{
	return (struct plan){ .n = 3, .timeout_ms = 2000, .grace_ms = 500, .fail_rank = -1,
			      .silent_rank = -1 };
}

static void all_agree_and_gather(void)
{
	struct plan p = plan3();
	struct result r[3];
	unsigned int i;

	p.flags = COORD_GATHER;
	run_plan(&p, r);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(r[i].rc, 0);
		CHECK_EQ(r[i].code, 0);
		CHECK(r[i].gathered);
	}
}

static void one_no_fails_everyone(void)
{
	struct plan p = plan3();
	struct result r[3];
	unsigned int i;

	p.fail_rank = 2;
	p.fail_code = 3;
	p.flags = COORD_GATHER;
	run_plan(&p, r);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(r[i].rc, -1);
		CHECK_EQ(r[i].code, 3);
		CHECK_EQ(r[i].by, 2);
		CHECK(!strcmp(r[i].why, "node 2 says no"));
		CHECK(!r[i].gathered);
	}
}

static void node0_no_fails_everyone(void)
{
	struct plan p = plan3();
	struct result r[3];
	unsigned int i;

	p.fail_rank = 0;
	p.fail_code = 5;
	run_plan(&p, r);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(r[i].code, 5);
		CHECK_EQ(r[i].by, 0);
	}
}

static void silent_node_times_out_named(void)
{
	struct plan p = plan3();
	struct result r[3];

	p.silent_rank = 1;
	p.timeout_ms = 300;
	run_plan(&p, r);
	CHECK_EQ(r[1].rc, -2);
	CHECK_EQ(r[0].code, 1);
	CHECK_EQ(r[2].code, 1);
	CHECK(strstr(r[0].why, "node 1 did not reach barrier 'phase-1' within 300 ms"));
	CHECK(!strcmp(r[0].why, r[2].why));
}

/* node 0 gone: the others give up after its deadline and agree on one verdict */
static void missing_node0_fails_the_others_alike(void)
{
	struct plan p = { .n = 4, .timeout_ms = 200, .grace_ms = 200, .fail_rank = -1,
			  .silent_rank = 0 };
	struct result r[4];
	unsigned int i;

	run_plan(&p, r);
	for (i = 1; i < 4; i++) {
		CHECK_EQ(r[i].rc, -1);
		CHECK_EQ(r[i].code, 1);
		CHECK(strstr(r[i].why, "node 0 decided nothing at barrier 'phase-1'"));
		CHECK(!strcmp(r[i].why, r[1].why));	/* the first to give up wrote it */
		CHECK_EQ(r[i].by, r[1].by);
	}
}

static void node0_decides_no(void)
{
	struct plan p = plan3();
	struct result r[3];
	unsigned int i;

	p.decide_code = 3;
	p.flags = COORD_GATHER;
	run_plan(&p, r);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(r[i].code, 3);
		CHECK(!strcmp(r[i].why, "node 0 refuses"));
		CHECK(!r[i].gathered);
	}
}

/* a vote that is not one (another program's file, truncated) fails the barrier */
static void corrupt_vote_refused(void)
{
	struct coord_opts o = { .rank = 0, .n = 2, .run = "corrupt", .timeout_ms = 1000 };
	struct coord_verdict v;
	struct coord c;
	char path[4200];
	int fd;

	CHECK_EQ(coord_open(&c, base, &o), 0);
	snprintf(path, sizeof(path), "%s/x.vote.1", c.dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "not a vote, longer than a header is", 35), 35);
	close(fd);
	CHECK_EQ(coord_vote(&c, "x", 0, NULL, NULL, 0, 0, NULL, NULL, &v), -1);
	CHECK(strstr(v.why, "node 1:") && strstr(v.why, "not a barrier record"));
	coord_verdict_free(&v);
	/* and a barrier's name is a name */
	CHECK_EQ(coord_vote(&c, "../x", 0, NULL, NULL, 0, 0, NULL, NULL, &v), -1);
	CHECK(strstr(v.why, "not a barrier's name"));
}

/* lengths whose sum wraps are no record (no read past the file) */
static void wrapping_lengths_refused(void)
{
	struct coord_opts o = { .rank = 0, .n = 2, .run = "wrap", .timeout_ms = 1000 };
	struct {
		char magic[8];
		uint32_t version, rank;
		int32_t code;
		uint32_t msglen;
		uint64_t datalen;
	} h = { .version = 1, .rank = 1, .code = 0, .msglen = 200,
		.datalen = UINT64_MAX - 199 };
	struct coord_verdict v;
	struct coord c;
	char path[4200];
	int fd;

	memcpy(h.magic, "ibckpt-c", 8);
	CHECK_EQ(coord_open(&c, base, &o), 0);
	snprintf(path, sizeof(path), "%s/x.vote.1", c.dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	close(fd);
	CHECK_EQ(coord_vote(&c, "x", 0, NULL, NULL, 0, 0, NULL, NULL, &v), -1);
	CHECK(strstr(v.why, "not a barrier record"));
	coord_verdict_free(&v);
}

/* a run decided before is refused, not passed through at once */
static void reused_run_refused(void)
{
	struct coord_opts o = { .rank = 0, .n = 1, .run = "once", .timeout_ms = 1000 };
	struct coord_verdict v;
	struct coord c;

	CHECK_EQ(coord_open(&c, base, &o), 0);
	CHECK_EQ(coord_vote(&c, "start.1", 0, NULL, NULL, 0, 0, NULL, NULL, &v), 0);
	coord_verdict_free(&v);
	CHECK_EQ(coord_open(&c, base, &o), -1);
}

/* a node that comes after its run's first barrier failed reads that failure */
static void late_node_reads_the_failure(void)
{
	struct coord_opts o = { .rank = 0, .n = 2, .run = "late", .timeout_ms = 1000 };
	struct coord_verdict v;
	struct coord c;

	CHECK_EQ(coord_open(&c, base, &o), 0);
	CHECK_EQ(coord_vote(&c, "start.1", 1, "node 0 cannot", NULL, 0, 0, NULL, NULL, &v), -1);
	coord_verdict_free(&v);
	o.rank = 1;
	CHECK_EQ(coord_open(&c, base, &o), 0);
	CHECK_EQ(coord_vote(&c, "start.1", 0, NULL, NULL, 0, 0, NULL, NULL, &v), -1);
	CHECK(!strcmp(v.why, "node 0 cannot"));
	CHECK_EQ(v.by, 0);
	coord_verdict_free(&v);
}

/* @run's directory exists? */
static bool run_dir_exists(const char *run)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" COORD_DIR "/%s", base, run);
	return !stat(path, &st);
}

/* Two nodes pass a barrier (node @no says no), then each leaves the run. */
static void two_leave(const char *run, int no, bool node1_leaves)
{
	struct coord_opts o = { .rank = 1, .n = 2, .run = run, .timeout_ms = 2000 };
	struct coord_verdict v;
	struct coord c;
	pid_t pid;
	int st, rc;

	pid = fork();
	if (pid == 0) {
		if (coord_open(&c, base, &o))
			_exit(1);
		rc = coord_vote(&c, "step", no == 1, "node 1 says no", NULL, 0, 0, NULL, NULL, &v);
		coord_verdict_free(&v);
		if (node1_leaves)
			coord_close(&c, !rc);
		_exit(0);
	}
	CHECK(pid > 0);
	o.rank = 0;
	CHECK_EQ(coord_open(&c, base, &o), 0);
	rc = coord_vote(&c, "step", no == 0, "node 0 says no", NULL, 0, 0, NULL, NULL, &v);
	CHECK_EQ(rc, no >= 0 ? -1 : 0);
	coord_verdict_free(&v);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	coord_close(&c, !rc);
}

/*
 * A barrier fails and the operation goes on to succeed (a checkpoint's
 * peer check asks for another freeze): each node succeeded, the run goes.
 * Regression: a fresh-clone check found such a checkpoint's files left.
 */
static void retried_run_removed(void)
{
	struct coord_opts o = { .rank = 1, .n = 2, .run = "retried", .timeout_ms = 2000 };
	struct coord_verdict v;
	struct coord c;
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		if (coord_open(&c, base, &o) ||
		    !coord_vote(&c, "peers.1", 3, "again", NULL, 0, 0, NULL, NULL, &v))
			_exit(1);
		coord_verdict_free(&v);
		if (coord_vote(&c, "peers.2", 0, NULL, NULL, 0, 0, NULL, NULL, &v))
			_exit(2);
		coord_verdict_free(&v);
		coord_close(&c, 1);
		_exit(0);
	}
	CHECK(pid > 0);
	o.rank = 0;
	CHECK_EQ(coord_open(&c, base, &o), 0);
	CHECK_EQ(coord_vote(&c, "peers.1", 0, NULL, NULL, 0, 0, NULL, NULL, &v), -1);
	CHECK_EQ(v.code, 3);
	coord_verdict_free(&v);
	CHECK_EQ(coord_vote(&c, "peers.2", 0, NULL, NULL, 0, 0, NULL, NULL, &v), 0);
	coord_verdict_free(&v);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	coord_close(&c, 1);
	CHECK(!run_dir_exists("retried"));
}

/*
 * The last node out removes a run whose every barrier passed; a failed run
 * stays (a late node reads its failure there), and so does one a node has
 * not left yet.
 */
static void passed_run_removed_by_the_last_out(void)
{
	two_leave("clean", -1, true);
	CHECK(!run_dir_exists("clean"));
	two_leave("failed", 1, true);
	CHECK(run_dir_exists("failed"));
	two_leave("one-left", -1, false);
	CHECK(run_dir_exists("one-left"));
}

/* @run's done.@rank exists? */
static bool done_exists(const char *run, unsigned int rank)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" COORD_DIR "/%s/done.%u", base, run, rank);
	return !stat(path, &st);
}

/*
 * The CLI leaves its run as it exits (exit() or a return from main), not
 * in a child it forked; a run of one node that passed is then gone. Stale
 * or foreign done files (done.01, done.4294967296) count for no node.
 */
static void run_left_at_exit(void)
{
	struct coord_opts o = { .rank = 0, .n = 2, .run = "exiting", .timeout_ms = 1000 };
	struct coord_verdict v;
	char path[4200];
	struct coord c;
	pid_t pid, kid;
	int st, fd, failed;

	fflush(NULL);	/* the children exit(): nothing of ours to flush twice */
	pid = fork();
	if (pid == 0) {
		if (coord_open(&c, base, &o))
			_exit(1);
		kid = fork();
		if (kid == 0)
			exit(0);	/* a child of the CLI: leaves nothing */
		if (kid < 0 || waitpid(kid, &st, 0) != kid || done_exists("exiting", 0))
			_exit(2);
		coord_exit_status(0);
		exit(0);
	}
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(done_exists("exiting", 0));
	/* node 1 of "exiting" has not left: aliases of its rank do not count */
	snprintf(path, sizeof(path), "%s/" COORD_DIR "/exiting/done.01", base);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/" COORD_DIR "/exiting/done.4294967297", base);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0);
	close(fd);
	o.rank = 0;
	CHECK_EQ(coord_open(&c, base, &o), 0);
	coord_close(&c, 1);
	CHECK(run_dir_exists("exiting"));

	/* a run of one node: it goes if the command succeeded, stays if not */
	for (failed = 0; failed < 2; failed++) {
		o = (struct coord_opts){ .rank = 0, .n = 1,
					 .run = failed ? "alone-failed" : "alone", .timeout_ms = 1000 };
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			if (coord_open(&c, base, &o) ||
			    coord_vote(&c, "step", 0, NULL, NULL, 0, 0, NULL, NULL, &v))
				_exit(1);
			coord_verdict_free(&v);
			coord_exit_status(failed);	/* its command failed after the barrier */
			exit(0);
		}
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(!run_dir_exists("alone"));
	CHECK(run_dir_exists("alone-failed"));
}

/* trust: the directory is absolute; one others can write is refused */
static void dir_absolute_and_trusted(void)
{
	struct coord_opts o = { .rank = 0, .n = 2, .run = "rel", .timeout_ms = 1000 };
	char cwd[4096], path[4200];
	struct coord c;

	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK_EQ(chdir("/tmp"), 0);
	CHECK_EQ(coord_open(&c, base + 5, &o), 0);	/* "coord_test.XXXXXX" */
	CHECK(c.dir[0] == '/');
	CHECK(!strncmp(c.dir, base, strlen(base)));
	CHECK_EQ(chdir(cwd), 0);
	snprintf(path, sizeof(path), "%s/coord", base);
	CHECK_EQ(chmod(path, 0777), 0);
	o.run = "open";
	CHECK_EQ(coord_open(&c, base, &o), -1);
	CHECK_EQ(chmod(path, 0700), 0);
}

static void options_parsed(void)
{
	unsigned int r, n;

	CHECK_EQ(coord_parse_node("1/2", &r, &n), 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(n, 2);
	CHECK_EQ(coord_parse_node("2/2", &r, &n), -1);
	CHECK_EQ(coord_parse_node("0/0", &r, &n), -1);
	CHECK_EQ(coord_parse_node("-1/2", &r, &n), -1);
	CHECK_EQ(coord_parse_node("1/", &r, &n), -1);
	CHECK_EQ(coord_parse_node("1/2x", &r, &n), -1);
	CHECK_EQ(coord_parse_node("0/65537", &r, &n), -1);
	CHECK_EQ(coord_run_id("4711.0"), 0);
	CHECK_EQ(coord_run_id(".."), -1);
	CHECK_EQ(coord_run_id("a/b"), -1);
	CHECK_EQ(coord_run_id(""), -1);
}

/*
 * The barriers of a checkpoint and a restart (restart.rst) with N simulated
 * node agents: each waits at every barrier a checkpoint has, brings the
 * identities a reacquire would (4 QPs' worth) to the one that gathers, and
 * checks it got every node's. Reported: the slowest node's time to each.
 */
static const char *const sim_phases[] = { "frozen", "peers", "prepare", "release",
					  "dumped", "restored", "reacquire", "remap", "go" };
#define SIM_PHASES (sizeof(sim_phases) / sizeof(sim_phases[0]))
#define SIM_IDENT 48

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct idcheck {
	unsigned int nodes, bad;
};

static int check_ids(void *arg, unsigned int rank, const void *data, size_t len)
{
	struct idcheck *g = arg;
	const unsigned char *p = data;

	if (len != 4 * SIM_IDENT || p[0] != (unsigned char)rank)
		g->bad++;
	g->nodes++;
	return 0;
}

static void sim_node(unsigned int rank, unsigned int n, uint64_t t0, int out)
{
	struct coord_opts o = { .rank = rank, .n = n, .run = "sim", .timeout_ms = 120000 };
	uint64_t at[SIM_PHASES];
	unsigned char ids[4 * SIM_IDENT];
	struct coord_verdict v;
	struct coord c;
	unsigned int k;

	if (coord_open(&c, base, &o))
		_exit(1);
	c.poll_max_us = 50000;	/* 1,000 processes on 2 cores: look less often */
	memset(ids, 0, sizeof(ids));
	ids[0] = (unsigned char)rank;
	for (k = 0; k < SIM_PHASES; k++) {
		bool gather = !strcmp(sim_phases[k], "reacquire");

		if (coord_vote(&c, sim_phases[k], 0, NULL, gather ? ids : NULL,
			       gather ? sizeof(ids) : 0, gather ? COORD_GATHER : 0, NULL, NULL, &v))
			_exit(2);
		if (gather) {
			struct idcheck g = { 0 };

			if (coord_each(v.data, v.len, check_ids, &g) || g.nodes != n || g.bad)
				_exit(3);
		}
		coord_verdict_free(&v);
		at[k] = mono_us() - t0;
	}
	if (write(out, at, sizeof(at)) != (ssize_t)sizeof(at))
		_exit(4);
	_exit(0);
}

static void simulated_nodes(void)
{
	const char *e = getenv("COORD_TEST_NODES");
	unsigned int n = e ? (unsigned int)atoi(e) : 1000, i, k, done = 0;
	uint64_t worst[SIM_PHASES] = { 0 }, at[SIM_PHASES], t0;
	int fds[2], st;
	pid_t pid;

	CHECK(n >= 2 && n <= COORD_MAX_NODES);
	CHECK_EQ(pipe(fds), 0);
	t0 = mono_us();
	for (i = 0; i < n; i++) {
		pid = fork();
		if (pid == 0) {
			close(fds[0]);
			sim_node(i, n, t0, fds[1]);
		}
		CHECK(pid > 0);
		if (pid < 0)
			break;
	}
	close(fds[1]);
	/* sizeof(at) is below PIPE_BUF: each node's times arrive whole */
	while (read(fds[0], at, sizeof(at)) == (ssize_t)sizeof(at)) {
		for (k = 0; k < SIM_PHASES; k++)
			if (at[k] > worst[k])
				worst[k] = at[k];
		done++;
	}
	close(fds[0]);
	while (wait(&st) > 0)
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(done, n);
	printf("coord: %u simulated nodes, slowest node's time to each barrier (ms):", n);
	for (k = 0; k < SIM_PHASES; k++)
		printf(" %s %.1f", sim_phases[k], (double)worst[k] / 1000.0);
	printf("\n");
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(options_parsed);
	RUN(all_agree_and_gather);
	RUN(one_no_fails_everyone);
	RUN(node0_no_fails_everyone);
	RUN(silent_node_times_out_named);
	RUN(missing_node0_fails_the_others_alike);
	RUN(node0_decides_no);
	RUN(corrupt_vote_refused);
	RUN(wrapping_lengths_refused);
	RUN(reused_run_refused);
	RUN(late_node_reads_the_failure);
	RUN(passed_run_removed_by_the_last_out);
	RUN(retried_run_removed);
	RUN(run_left_at_exit);
	RUN(dir_absolute_and_trusted);
	RUN(simulated_nodes);
	if (!unit_failed_cases) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
		if (system(cmd))
			return 1;
	}
	return unit_done();
}
