// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * JSON output helpers of the ibckpt CLI.
 */
#include <stdint.h>
#include "json.h"

/*
 * Length of the well-formed UTF-8 sequence at @s (RFC 3629) within @left
 * bytes, 0 if none.
 */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;	/* continuation byte, overlong lead, beyond U+10FFFF */
	if (n > left)
		return 0;
	/* the second byte's range excludes overlongs, surrogates, > U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)	/* also stops at the terminating NUL */
			return 0;
	return n;
}

void json_strn(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = max, n;

	fputc('"', f);
	while (left && *p) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(f, "\\u%04x", *p);
				break;
			}
			n = utf8_len(p, left);
			if (!n) {
				fputs("\\ufffd", f);
				break;
			}
			fwrite(p, 1, n, f);
			p += n;
			left -= n;
			continue;
		}
		p++;
		left--;
	}
	fputc('"', f);
}

void json_str(FILE *f, const char *s)
{
	json_strn(f, s, SIZE_MAX);
}
