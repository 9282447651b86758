/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Checks for the VM test programs. Define PROG (the program's name) before
 * including. EXPECT() records a failed expectation and goes on (main exits
 * 1 if 'failures'); DIE() stops at once with errno's message (exit 2): the
 * set-up a test needs failed, so there is nothing to compare.
 */
#ifndef IBCKPT_TEST_EXPECT_H
#define IBCKPT_TEST_EXPECT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, PROG ": %s:%d: ", __FILE__, __LINE__);	\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		failures++;						\
	}								\
} while (0)

#define DIE(...) do {							\
	fprintf(stderr, PROG ": " __VA_ARGS__);			\
	fprintf(stderr, ": %s\n", strerror(errno));			\
	exit(2);							\
} while (0)

#endif
