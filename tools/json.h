/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * JSON output helpers of the ibckpt CLI.
 */
#ifndef IBCKPT_TOOLS_JSON_H
#define IBCKPT_TOOLS_JSON_H

#include <stddef.h>
#include <stdio.h>

/*
 * Write @s to @f as a JSON string, quotes included: '"' and '\' are escaped,
 * control characters (and DEL) written as \uXXXX, well-formed UTF-8 passed
 * through, and every byte that is not part of a well-formed UTF-8 sequence
 * (e.g. a multibyte character cut by the kernel's 15-byte command names)
 * replaced by \ufffd, so that the output is always valid JSON.
 */
void json_str(FILE *f, const char *s);

/* The same for at most @max bytes of @s (a fixed-size field, maybe unterminated). */
void json_strn(FILE *f, const char *s, size_t max);

/* "true" or "false". */
static inline const char *json_bool(int v)
{
	return v ? "true" : "false";
}

#endif
