// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Global options anywhere on the command line: `ibckpt status -j` is
 * `ibckpt -j status`, as with iproute2.
 */
#include <string.h>
#include "cli.h"

/*
 * Does @arg, an option of a command, take the next argument as its value?
 * getopt_long accepts unambiguous abbreviations of long options, so any
 * prefix of one (at least "--x") counts.
 */
static int takes_value(const char *arg, const char *const *valued)
{
	size_t len = strlen(arg);

	for (; *valued; valued++) {
		if (!strcmp(arg, *valued))
			return 1;
		if (len > 2 && !strncmp(arg, "--", 2) && !strchr(arg, '=') &&
		    !strncmp(*valued, "--", 2) && !strncmp(*valued, arg, len))
			return 1;
	}
	return 0;
}

int cli_take_global(int argc, char **argv, const char *const *valued, int *json_out)
{
	int i, out, cmd = 0;

	/* global options come first and take no value: the command is the first non-option */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			cmd = i + 1 < argc ? i + 1 : 0;
			break;
		}
		if (argv[i][0] != '-' || !argv[i][1]) {
			cmd = i;
			break;
		}
	}
	if (!cmd)
		return argc;
	for (i = out = cmd + 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {	/* operands only from here on */
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			*json_out = 1;
			continue;
		}
		argv[out++] = argv[i];
		if (takes_value(argv[i], valued) && i + 1 < argc)
			argv[out++] = argv[++i];
	}
	argv[out] = NULL;
	return out;
}
