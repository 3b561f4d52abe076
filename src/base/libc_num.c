/* SPDX-License-Identifier: MIT */
/*
 * libc_num.c - numbers from text and the "C" locale's character classes
 * (base/libc.h). [any] context: errno is never written, the program's
 * locale never read; an out-of-range number is reported through the
 * caller's err instead.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "base/libc.h"

static int digit_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

/* The magnitude of s in base (prefixes and sign handled here): *neg set
 * for a '-', *over when it exceeds ULONG_MAX; *end past the digits, or s
 * when there are none. */
static unsigned long parse(const char *s, char **end, int base, int *neg, int *over)
{
	const char *p = s, *digits;
	unsigned long v = 0;

	*neg = *over = 0;
	while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
		p++;
	if (*p == '-' || *p == '+')
		*neg = *p++ == '-';
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
	    digit_value((unsigned char)p[2]) < 16) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = *p == '0' ? 8 : 10;
	}
	for (digits = p; digit_value((unsigned char)*p) < base; p++) {
		unsigned long d = (unsigned long)digit_value((unsigned char)*p);

		if (v > (ULONG_MAX - d) / (unsigned long)base)
			*over = 1;
		else
			v = v * (unsigned long)base + d;
	}
	if (end)
		*end = (char *)(p == digits ? s : p);
	return v;
}

/* parse() for a valid base; false (and -EINVAL in *err) for another */
static bool parse_base(const char *s, char **end, int base, int *err, int *neg, int *over,
		       unsigned long *v)
{
	if (err)
		*err = 0;
	if (base < 0 || base == 1 || base > 36) {
		if (end)
			*end = (char *)s;
		if (err)
			*err = -EINVAL;
		return false;
	}
	*v = parse(s, end, base, neg, over);
	return true;
}

unsigned long ukp_strtoul(const char *restrict s, char **restrict end, int base, int *err)
{
	int neg, over;
	unsigned long v;

	if (!parse_base(s, end, base, err, &neg, &over, &v))
		return 0;
	if (over) {
		if (err)
			*err = -ERANGE;
		return ULONG_MAX;
	}
	return neg ? -v : v;
}

long ukp_strtol(const char *restrict s, char **restrict end, int base, int *err)
{
	int neg, over;
	unsigned long v;

	if (!parse_base(s, end, base, err, &neg, &over, &v))
		return 0;
	if (over || v > (unsigned long)LONG_MAX + neg) {
		if (err)
			*err = -ERANGE;
		return neg ? LONG_MIN : LONG_MAX;
	}
	return neg ? (long)(0 - v) : (long)v;
}

UKP_LIBC_STD unsigned long std_strtoul(const char *restrict s, char **restrict end, int base)
{
	return ukp_strtoul(s, end, base, NULL);
}

UKP_LIBC_STD long std_strtol(const char *restrict s, char **restrict end, int base)
{
	return ukp_strtol(s, end, base, NULL);
}

/* ------------------------------------------------ character classes */

#define UKP_GRAPH(c) ((c) > ' ' && (c) < 127)
#define UKP_UPPER(c) ((c) >= 'A' && (c) <= 'Z')
#define UKP_LOWER(c) ((c) >= 'a' && (c) <= 'z')
#define UKP_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define UKP_XALPHA(c) (((c) >= 'a' && (c) <= 'f') || ((c) >= 'A' && (c) <= 'F'))
#define UKP_ALPHA(c) (UKP_UPPER(c) || UKP_LOWER(c))
#define UKP_CLASS(c) (unsigned short)(                                           \
	(UKP_UPPER(c) ? _ISupper : 0) | (UKP_LOWER(c) ? _ISlower : 0) |           \
	(UKP_ALPHA(c) ? _ISalpha | _ISalnum : 0) |                                \
	(UKP_DIGIT(c) ? _ISdigit | _ISxdigit | _ISalnum : 0) |                    \
	(UKP_XALPHA(c) ? _ISxdigit : 0) |                                         \
	((c) == ' ' || ((c) >= '\t' && (c) <= '\r') ? _ISspace : 0) |              \
	((c) == ' ' || (c) == '\t' ? _ISblank : 0) |                              \
	(UKP_GRAPH(c) ? _ISgraph | _ISprint : 0) | ((c) == ' ' ? _ISprint : 0) |  \
	((c) < ' ' || (c) == 127 ? _IScntrl : 0) |                                \
	(UKP_GRAPH(c) && !UKP_ALPHA(c) && !UKP_DIGIT(c) ? _ISpunct : 0))
#define UKP_C4(c) UKP_CLASS(c), UKP_CLASS(c + 1), UKP_CLASS(c + 2), UKP_CLASS(c + 3)
#define UKP_C16(c) UKP_C4(c), UKP_C4(c + 4), UKP_C4(c + 8), UKP_C4(c + 12)

/* -128..-1 (a signed char's bytes and EOF) and 128..255 are no class */
static const unsigned short ctype_table[384] = {
	[128] = UKP_C16(0), UKP_C16(16), UKP_C16(32), UKP_C16(48),
	UKP_C16(64), UKP_C16(80), UKP_C16(96), UKP_C16(112),
};
static const unsigned short *ctype_b = ctype_table + 128;

const unsigned short **ukp_ctype_b_loc(void)
{
	return &ctype_b;
}

UKP_LIBC_ALIAS(std_strtoul, strtoul)
UKP_LIBC_ALIAS(std_strtol, strtol)
UKP_LIBC_ALIAS(ukp_ctype_b_loc, __ctype_b_loc)
