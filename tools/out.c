// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The output mode (-j) and the report of a refused request: set by main,
 * read by every command (out.h).
 */
#include <stdio.h>
#include <string.h>
#include "out.h"

int json;

int cli_fail(int err, const char *what, const char *extack)
{
	if (extack && *extack)
		fprintf(stderr, "ibckpt: %s: %s (%s)\n", what, extack, strerror(-err));
	else
		fprintf(stderr, "ibckpt: %s: %s\n", what, strerror(-err));
	return 1;
}
