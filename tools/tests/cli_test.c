// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The CLI's pure helpers: JSON string escaping (process names and device
 * names are arbitrary bytes), -j anywhere on the command line, and which
 * threads of an aborted freeze never parked.
 */
#define UNIT_SUITE "cli"
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../../tests/unit/unit.h"
#include "../cli.h"
#include "../json.h"

int json;

/* json_strn(@s, @max) as a string (static buffer). */
static const char *esc_n(const char *s, size_t max)
{
	static char out[256];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	json_strn(f, s, max);
	fclose(f);
	snprintf(out, sizeof(out), "%s", buf);
	free(buf);
	return out;
}

static const char *esc(const char *s)
{
	return esc_n(s, (size_t)-1);
}

static void json_plain_strings_pass_through(void)
{
	CHECK(!strcmp(esc(""), "\"\""));
	CHECK(!strcmp(esc("rc_pingpong"), "\"rc_pingpong\""));
	CHECK(!strcmp(esc("a b/c:d'e"), "\"a b/c:d'e\""));
}

static void json_escapes_quote_and_backslash(void)
{
	CHECK(!strcmp(esc("a\"b"), "\"a\\\"b\""));
	CHECK(!strcmp(esc("a\\b"), "\"a\\\\b\""));
	CHECK(!strcmp(esc("\"\\"), "\"\\\"\\\\\""));
}

static void json_escapes_control_characters(void)
{
	CHECK(!strcmp(esc("a\nb"), "\"a\\u000ab\""));
	CHECK(!strcmp(esc("\t\r\x01\x1f"), "\"\\u0009\\u000d\\u0001\\u001f\""));
	CHECK(!strcmp(esc("\x1b[31m"), "\"\\u001b[31m\""));
	CHECK(!strcmp(esc("x\x7f"), "\"x\\u007f\""));
}

static void json_keeps_utf8_replaces_invalid_bytes(void)
{
	/* é, €, U+1F600 */
	CHECK(!strcmp(esc("caf\xc3\xa9"), "\"caf\xc3\xa9\""));
	CHECK(!strcmp(esc("\xe2\x82\xac"), "\"\xe2\x82\xac\""));
	CHECK(!strcmp(esc("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\""));
	/* a character cut by the kernel's 15-byte comm */
	CHECK(!strcmp(esc("ab\xe2\x82"), "\"ab\\ufffd\\ufffd\""));
	/* a lone continuation byte, Latin-1, an overlong '/', a surrogate, > U+10FFFF */
	CHECK(!strcmp(esc("\x80"), "\"\\ufffd\""));
	CHECK(!strcmp(esc("caf\xe9!"), "\"caf\\ufffd!\""));
	CHECK(!strcmp(esc("\xc0\xaf"), "\"\\ufffd\\ufffd\""));
	CHECK(!strcmp(esc("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\""));
	CHECK(!strcmp(esc("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\""));
}

static void json_strn_stops_at_the_field_end(void)
{
	char name[4] = { 'm', 'l', 'x', '5' };	/* unterminated */

	CHECK(!strcmp(esc_n(name, sizeof(name)), "\"mlx5\""));
	CHECK(!strcmp(esc_n("mlx5_0\0junk", 16), "\"mlx5_0\""));
	/* a sequence running past the field is not valid */
	CHECK(!strcmp(esc_n("a\xc3\xa9", 2), "\"a\\ufffd\""));
	CHECK(!strcmp(esc_n("a\xc3\xa9", 3), "\"a\xc3\xa9\""));
	CHECK(!strcmp(json_bool(1), "true"));
	CHECK(!strcmp(json_bool(0), "false"));
}

static const char *const valued[] = { "-t", "--timeout", "-p", "--persist", NULL };

/* cli_take_global() on a space-separated command line; the result joined by spaces. */
static const char *take(const char *line, int *j)
{
	static char out[256];
	char copy[256], *argv[32], *tok;
	int argc = 0, i;

	snprintf(copy, sizeof(copy), "%s", line);
	for (tok = strtok(copy, " "); tok && argc < 31; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	*j = 0;
	argc = cli_take_global(argc, argv, valued, j);
	out[0] = '\0';
	for (i = 0; i < argc; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? " " : "",
			 argv[i]);
	CHECK(argv[argc] == NULL);
	return out;
}

static void json_option_after_the_command(void)
{
	int j;

	CHECK(!strcmp(take("ibckpt status -j", &j), "ibckpt status"));
	CHECK_EQ(j, 1);
	CHECK(!strcmp(take("ibckpt status 42 --json", &j), "ibckpt status 42"));
	CHECK_EQ(j, 1);
	CHECK(!strcmp(take("ibckpt freeze -j --persist 60 42", &j), "ibckpt freeze --persist 60 42"));
	CHECK_EQ(j, 1);
	CHECK(!strcmp(take("ibckpt thaw 42 -j", &j), "ibckpt thaw 42"));
	CHECK_EQ(j, 1);
	CHECK(!strcmp(take("ibckpt status", &j), "ibckpt status"));
	CHECK_EQ(j, 0);
}

static void json_option_before_the_command_is_left_to_getopt(void)
{
	int j;

	CHECK(!strcmp(take("ibckpt -j status", &j), "ibckpt -j status"));
	CHECK_EQ(j, 0);
	CHECK(!strcmp(take("ibckpt -j -V", &j), "ibckpt -j -V"));
	CHECK_EQ(j, 0);
	CHECK(!strcmp(take("ibckpt -j status -j", &j), "ibckpt -j status"));
	CHECK_EQ(j, 1);
	CHECK(!strcmp(take("ibckpt -- status -j", &j), "ibckpt -- status"));
	CHECK_EQ(j, 1);
	CHECK(!strcmp(take("ibckpt", &j), "ibckpt"));
	CHECK_EQ(j, 0);
}

static void json_option_is_not_an_option_value_or_operand(void)
{
	int j;

	/* the value of an option that takes one, also an abbreviated long option */
	CHECK(!strcmp(take("ibckpt freeze -t -j 42", &j), "ibckpt freeze -t -j 42"));
	CHECK_EQ(j, 0);
	CHECK(!strcmp(take("ibckpt freeze --persist -j 42", &j), "ibckpt freeze --persist -j 42"));
	CHECK_EQ(j, 0);
	CHECK(!strcmp(take("ibckpt freeze --pers -j 42", &j), "ibckpt freeze --pers -j 42"));
	CHECK_EQ(j, 0);
	CHECK(!strcmp(take("ibckpt freeze --timeout=5 -j 42", &j), "ibckpt freeze --timeout=5 42"));
	CHECK_EQ(j, 1);
	/* after "--" everything is an operand */
	CHECK(!strcmp(take("ibckpt status -- -j", &j), "ibckpt status -- -j"));
	CHECK_EQ(j, 0);
	/* -j must stand alone: grouped, it is the command's (unknown) option */
	CHECK(!strcmp(take("ibckpt status -jx", &j), "ibckpt status -jx"));
	CHECK_EQ(j, 0);
}

static void stragglers_are_threads_that_never_parked(void)
{
	struct cli_thread pending = { .tid = 1, .state = IBCKPT_THREAD_PENDING, .syscall = -1 };
	struct cli_thread parked = { .tid = 2, .state = IBCKPT_THREAD_PARKED, .ip = 0x401000,
				     .syscall = 202 };
	/* parked, then released by the abort */
	struct cli_thread released = { .tid = 3, .state = IBCKPT_THREAD_RUNNING, .ip = 0x401000,
				       .syscall = -1 };
	/* its park request ran only after the abort: running, never parked */
	struct cli_thread late = { .tid = 4, .state = IBCKPT_THREAD_RUNNING, .syscall = -1 };
	struct cli_thread exited = { .tid = 5, .state = IBCKPT_THREAD_EXITED, .syscall = -1 };

	CHECK(cli_thread_never_parked(&pending));
	CHECK(!cli_thread_never_parked(&parked));
	CHECK(!cli_thread_never_parked(&released));
	CHECK(cli_thread_never_parked(&late));
	CHECK(!cli_thread_never_parked(&exited));
}

/* getopt as the commands use it: the job options of CLI_JOB_OPTIONS, then operands. */
static int parse_job(int argc, char **argv, int flags, struct cli_job *j)
{
	static const struct option opts[] = { CLI_JOB_OPTIONS, { 0 } };
	int c, r;

	memset(j, 0, sizeof(*j));
	optind = 0;
	opterr = 0;
	if (cli_job_negative(argc, argv))
		return -1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		r = cli_job_opt(c, optarg, j);
		if (r <= 0)
			return -1;
	}
	return cli_job_finish(j, argc, argv, optind, flags);
}

static void job_is_named_one_way(void)
{
	char *pg[] = { "freeze", "4242", NULL }, *sid[] = { "freeze", "--session", "77", NULL };
	char *tree[] = { "freeze", "--tree=9", NULL };
	char *cg[] = { "freeze", "--cgroup", "/sys/fs/cgroup/job", NULL };
	char *id[] = { "thaw", "--id", "18446744073709551615", NULL };
	struct cli_job j;
	char d[128];

	CHECK_EQ(parse_job(2, pg, 0, &j), 0);
	CHECK(j.type == IBCKPT_JOB_PGRP && j.id == 4242);
	CHECK(!strcmp(cli_job_describe(&j, d, sizeof(d)), "process group 4242"));
	CHECK_EQ(parse_job(3, sid, 0, &j), 0);
	CHECK(j.type == IBCKPT_JOB_SESSION && j.id == 77);
	CHECK_EQ(parse_job(2, tree, 0, &j), 0);
	CHECK(j.type == IBCKPT_JOB_TREE && j.id == 9);
	CHECK(!strcmp(cli_job_describe(&j, d, sizeof(d)), "process tree of 9"));
	CHECK_EQ(parse_job(3, cg, 0, &j), 0);
	CHECK(j.type == IBCKPT_JOB_CGROUP && !strcmp(j.cgroup, "/sys/fs/cgroup/job"));
	CHECK_EQ(parse_job(3, id, CLI_JOB_BY_ID, &j), 0);
	CHECK(!j.type && j.session == UINT64_MAX);
	CHECK(!strcmp(cli_job_describe(&j, d, sizeof(d)),
		      "freeze session 18446744073709551615"));
}

static void job_refuses_bad_names(void)
{
	char *two[] = { "freeze", "--tree", "9", "--session", "9", NULL };
	char *extra[] = { "freeze", "--tree", "9", "12", NULL };
	char *none[] = { "freeze", NULL };
	char *neg[] = { "thaw", "-5", NULL };
	char *zero[] = { "freeze", "--session", "0", NULL };
	char *junk[] = { "freeze", "--tree", "9x", NULL };
	char *big[] = { "freeze", "1073741824", NULL };
	char *id[] = { "freeze", "--id", "3", NULL };
	struct cli_job j;

	CHECK_EQ(parse_job(5, two, 0, &j), -1);
	CHECK_EQ(parse_job(4, extra, 0, &j), -1);
	CHECK_EQ(parse_job(1, none, 0, &j), -1);
	CHECK_EQ(parse_job(1, none, CLI_JOB_OPTIONAL, &j), 0);
	CHECK_EQ(parse_job(2, neg, CLI_JOB_BY_ID, &j), -1);
	CHECK_EQ(parse_job(3, zero, 0, &j), -1);
	CHECK_EQ(parse_job(3, junk, 0, &j), -1);
	CHECK_EQ(parse_job(2, big, 0, &j), -1);
	/* --id names an existing freeze: not for freeze */
	CHECK_EQ(parse_job(3, id, 0, &j), -1);
}

static void job_slurm_step_is_a_cgroup_found_later(void)
{
	char *st[] = { "freeze", "--slurm", "1234.0", NULL };
	char *st7[] = { "freeze", "--slurm=4294967295.7", NULL };
	char *nostep[] = { "freeze", "--slurm", "1234", NULL };
	char *bad[] = { "freeze", "--slurm", "12.x", NULL };
	char *neg[] = { "freeze", "--slurm", "-1.0", NULL };
	char *dots[] = { "freeze", "--slurm", "1.2.3", NULL };
	char *two[] = { "freeze", "--slurm", "1.0", "--tree", "9", NULL };
	unsigned int job;
	struct cli_job j;
	char d[128];

	CHECK_EQ(parse_job(3, st, 0, &j), 0);
	CHECK(j.type == IBCKPT_JOB_CGROUP && !j.cgroup && j.slurm);
	CHECK(j.slurm_job == 1234 && j.slurm_step == 0);
	CHECK(!strcmp(cli_job_describe(&j, d, sizeof(d)), "Slurm step 1234.0"));
	CHECK_EQ(parse_job(2, st7, 0, &j), 0);
	CHECK(j.slurm_job == 4294967295u && j.slurm_step == 7);
	CHECK_EQ(parse_job(3, nostep, 0, &j), -1);
	CHECK_EQ(parse_job(3, bad, 0, &j), -1);
	CHECK_EQ(parse_job(3, neg, 0, &j), -1);
	CHECK_EQ(parse_job(3, dots, 0, &j), -1);
	CHECK_EQ(parse_job(5, two, 0, &j), -1);
	/* restart --slurm takes a job, not a step */
	CHECK_EQ(cli_slurm_id("88", &job, NULL), 0);
	CHECK_EQ(job, 88);
	CHECK_EQ(cli_slurm_id("88.0", &job, NULL), -1);
	CHECK_EQ(cli_slurm_id("0", &job, NULL), -1);
}

static void job_json_names_type_and_id(void)
{
	struct cli_job pg = { .type = IBCKPT_JOB_PGRP, .id = 5 };
	struct cli_job cg = { .type = IBCKPT_JOB_CGROUP, .cgroup = "/a\"b" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	cli_job_json(f, &pg);
	fputc('|', f);
	cli_job_json(f, &cg);
	fclose(f);
	CHECK(!strcmp(buf, "\"job\":{\"type\":\"pgrp\",\"id\":5},\"pgid\":5|"
		      "\"job\":{\"type\":\"cgroup\",\"path\":\"/a\\\"b\"}"));
	free(buf);
}

int main(void)
{
	RUN(json_plain_strings_pass_through);
	RUN(json_escapes_quote_and_backslash);
	RUN(json_escapes_control_characters);
	RUN(json_keeps_utf8_replaces_invalid_bytes);
	RUN(json_strn_stops_at_the_field_end);
	RUN(json_option_after_the_command);
	RUN(json_option_before_the_command_is_left_to_getopt);
	RUN(json_option_is_not_an_option_value_or_operand);
	RUN(stragglers_are_threads_that_never_parked);
	RUN(job_is_named_one_way);
	RUN(job_refuses_bad_names);
	RUN(job_slurm_step_is_a_cgroup_found_later);
	RUN(job_json_names_type_and_id);
	return unit_done();
}
