/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A minimal unit-test harness for ibckpt's user-space code. Each test case is
 * a function; RUN() prints "PASS: <file>/<case>" or "FAIL: <file>/<case>"
 * (the lines tests/check counts) and unit_done() returns the exit status.
 */
#ifndef IBCKPT_UNIT_H
#define IBCKPT_UNIT_H

#include <stdio.h>

static int unit_failed_cases;
static int unit_case_failed;

#define CHECK(cond) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "  %s:%d: check failed: %s\n",			\
			__FILE__, __LINE__, #cond);				\
		unit_case_failed = 1;						\
	}									\
} while (0)

#define CHECK_EQ(a, b) do {							\
	long long _a = (long long)(a), _b = (long long)(b);			\
	if (_a != _b) {								\
		fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n",	\
			__FILE__, __LINE__, #a, _a, #b, _b);			\
		unit_case_failed = 1;						\
	}									\
} while (0)

#define RUN(fn) do {								\
	unit_case_failed = 0;							\
	fn();									\
	printf("%s: %s/%s\n", unit_case_failed ? "FAIL" : "PASS",		\
	       UNIT_SUITE, #fn);						\
	unit_failed_cases += unit_case_failed;					\
} while (0)

static inline int unit_done(void)
{
	fflush(stdout);
	return unit_failed_cases ? 1 : 0;
}

#endif
