// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibckpt - freeze, thaw and inspect RDMA verbs applications.
 *
 * Conventions follow iproute2: `ibckpt [OPTIONS] COMMAND [ARGS]`, -j for
 * JSON (also accepted after the command), errors on stderr prefixed with the program name, exit status 0 on
 * success, 1 on a failed operation, 2 on bad usage. See ibckpt(8).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ibckpt.h>
#include "cli.h"
#include "coord.h"
#include "json.h"

/* -DIBCKPT_VERSION="..." from tools/Makefile, which reads the tree's VERSION */
#ifndef IBCKPT_VERSION
#error IBCKPT_VERSION is not defined: build with tools/Makefile
#endif
#define IBCKPT_CLI_VERSION IBCKPT_VERSION

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ibckpt [-j] COMMAND [ARGS]\n"
		"       ibckpt -V | --version\n"
		"commands:\n"
		"  status [JOB]         freeze sessions, their threads, registered processes\n"
		"  freeze [--timeout MS] [--persist SECS] JOB\n"
		"                       park every application thread of every process of JOB;\n"
		"                       holds the freeze until interrupted or thawed, or with\n"
		"                       --persist returns and thaws by itself after SECS\n"
		"  thaw JOB             release JOB\n"
		"  dump JOB [-o FILE]   the verbs snapshot of each process of frozen JOB:\n"
		"                       printed, or written as is to FILE\n"
		"  dump -D DIR [-o FILE]\n"
		"                       the same offline, from checkpoint directory DIR\n"
		"  release -D DIR JOB   frozen JOB's providers release every device resource;\n"
		"                       DIR keeps what a reacquire needs (restart.rst)\n"
		"  reacquire -D DIR [--map DEV=DEV,...]\n"
		"                       the released job of DIR re-creates its objects (on the\n"
		"                       devices --map names) and runs again\n"
		"  checkpoint -D DIR [--leave-running] [--timeout MS] JOB\n"
		"                       freeze and release JOB, then dump it with criu into DIR\n"
		"                       (the job is gone), or reacquire it in place\n"
		"  restart -D DIR [--map DEV=DEV,...] [--wait]\n"
		"                       restore the job of DIR with criu and reacquire it\n"
		"                       (--wait: stay its parent until it ends)\n"
		"  restart -D DIR --slurm JOBID\n"
		"                       the same as a step of Slurm job JOBID, on its nodes\n"
		"  freeze, thaw, checkpoint, restart, reacquire ... -D DIR --node RANK/N --run ID\n"
		"                       [--node-timeout MS]\n"
		"                       a job on N nodes: run on each node, on its part; the\n"
		"                       nodes meet in DIR, which every node sees (restart:\n"
		"                       --part P restores node P's part here)\n"
		"jobs:\n"
		"  PGID                 a process group\n"
		"  --session SID        a session (e.g. an MPI launcher started by setsid)\n"
		"  --tree PID           a process and all its descendants\n"
		"  --cgroup DIR         a cgroup v2 directory and every cgroup below it\n"
		"  --slurm JOBID.STEP   a Slurm job step; freeze, thaw and checkpoint without\n"
		"                       --node run on every node of the step through srun\n"
		"  --id SESSION         (thaw, status, dump) a freeze session by its id\n"
		"options:\n"
		"  -j, --json           JSON output (also accepted after the command)\n"
		"  -h, --help           this text\n");
}

struct version {
	char module[64];
	unsigned int abi;
};

static int on_version(struct nlattr **a, void *arg)
{
	struct version *v = arg;

	if (a[IBCKPT_A_VERSION])
		snprintf(v->module, sizeof(v->module), "%s", nla_get_string(a[IBCKPT_A_VERSION]));
	if (a[IBCKPT_A_ABI])
		v->abi = nla_get_u32(a[IBCKPT_A_ABI]);
	return 0;
}

static int cmd_version(void)
{
	struct version v = { .abi = 0 };
	struct ibnl n;
	char ext[256];
	int err = -ENOENT;

	if (!ibnl_open(&n, 1)) {
		err = ibnl_call(&n, ibnl_msg(&n, IBCKPT_CMD_GET_VERSION, 0), on_version, &v,
				ext, sizeof(ext));
		ibnl_close(&n);
	}
	if (json) {
		printf("{\"cli\":\"%s\",\"abi\":%u", IBCKPT_CLI_VERSION, IBCKPT_ABI_VERSION);
		if (!err) {
			printf(",\"module\":");
			json_str(stdout, v.module);
			printf(",\"module_abi\":%u", v.abi);
		}
		printf("}\n");
	} else {
		printf("ibckpt %s (ABI %u)\n", IBCKPT_CLI_VERSION, IBCKPT_ABI_VERSION);
		if (!err)
			printf("module ibckpt %s (ABI %u)\n", v.module, v.abi);
		else
			printf("module ibckpt not loaded\n");
	}
	if (!err && v.abi != IBCKPT_ABI_VERSION) {
		fprintf(stderr, "ibckpt: the module speaks ABI %u, this CLI ABI %u\n", v.abi,
			IBCKPT_ABI_VERSION);
		return 1;
	}
	return 0;
}

static int cmd_version_args(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cmd_version();
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "status", cmd_status },	{ "freeze", cmd_freeze },
	{ "thaw", cmd_thaw },		{ "dump", cmd_dump },
	{ "release", cmd_release },	{ "reacquire", cmd_reacquire },
	{ "checkpoint", cmd_checkpoint }, { "restart", cmd_restart },
	{ "version", cmd_version_args },
};

/* Run the command @argv[0]. Return: its exit status. */
static int command(int argc, char **argv)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[0], commands[i].name))
			return commands[i].run(argc, argv);
	fprintf(stderr, "ibckpt: unknown command '%s' (try: ibckpt --help)\n", argv[0]);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	/* the commands' options that take a value, which may be "-j" */
	static const char *const valued[] = { "-t", "--timeout", "-p", "--persist", "-o",
					       "--output", "--session", "--tree", "--cgroup", "--slurm",
					       "--id", "-D", "--dir", "--map", NULL };
	int c, version = 0, rc;

	/* criu runs its action scripts with no argument (criu.c) */
	if (argc == 1 && getenv("CRTOOLS_SCRIPT_ACTION"))
		return cmd_criu_action();

	/* -j may follow the command; the command's own options come after it */
	argc = cli_take_global(argc, argv, valued, &json);
	while ((c = getopt_long(argc, argv, "+jVh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'V':
			version = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (version)
		return cmd_version();
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	argc -= optind;
	argv += optind;
	rc = command(argc, argv);
	/* a job on several nodes: the operation's files go once it succeeded everywhere */
	coord_exit_status(rc);
	return rc;
}
