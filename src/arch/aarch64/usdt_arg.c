/* SPDX-License-Identifier: MIT */
/*
 * usdt_arg.c - AArch64's SDT argument operands (src/usdt.h): what GCC's
 * "nor" constraint of <sys/sdt.h> writes after "SIZE@": xN, wN, sp,
 * [REG], [REG, OFF], [REG, xI] and [REG, xI, lsl #N] (a byte array's
 * element at -O2), and constants (a plain number). An index extended
 * from a wN (sxtw, uxtw) and [REG, #:lo12:LABEL] are not decoded. [any]
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/libc.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "symbols/usdt.h"

/* xN, wN, sp: its word in struct pt_regs (regs[31], then sp), or -1. */
static int reg_word(const char *s, size_t len)
{
	unsigned long n = 0;
	size_t i;

	if (len == 2 && !memcmp(s, "sp", 2))
		return 31;
	if (len == 2 && !memcmp(s, "fp", 2))
		return 29;
	if (len < 2 || len > 3 || (s[0] != 'x' && s[0] != 'w'))
		return -1;
	for (i = 1; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		n = n * 10 + (unsigned long)(s[i] - '0');
	}
	return n <= 30 ? (int)n : -1;
}

static bool number(const char *s, size_t len, long *v)
{
	char buf[32], *end;
	int err;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*v = ukp_strtol(buf, &end, 0, &err); /* base/libc.h: errno is the program's */
	return end != buf && !err && !*end;
}

/* "xI" or "xI, lsl #N" at s (len bytes), after "[REG, ": op's index
 * and scale (op->reg holds the base). */
static bool index_form(const char *s, size_t len, struct ukp_usdt_op *op)
{
	const char *comma = memchr(s, ',', len), *end = s + len;
	long shift = 0;
	int i = reg_word(s, comma ? (size_t)(comma - s) : len);

	if (i < 0 || i == 31 || s[0] != 'x')
		return false;
	if (comma) {
		comma++;
		while (comma < end && *comma == ' ')
			comma++;
		if (end - comma < 4 || memcmp(comma, "lsl ", 4))
			return false;
		comma += 4;
		if (comma < end && *comma == '#')
			comma++;
		if (!number(comma, (size_t)(end - comma), &shift) || shift < 0 || shift > 3)
			return false;
	}
	op->kind = USDT_ARG_INDEX;
	op->index = (unsigned int)i;
	op->scale = 1u << shift;
	return true;
}

int arch_usdt_operand(const char *s, size_t len, struct ukp_usdt_op *op)
{
	const char *comma;
	int w;

	memset(op, 0, sizeof(*op));
	if (!len)
		return -EINVAL;
	if (s[0] == '[') {
		if (s[len - 1] != ']')
			return -EINVAL;
		s++;
		len -= 2;
		comma = memchr(s, ',', len);
		w = reg_word(s, comma ? (size_t)(comma - s) : len);
		if (w < 0)
			return -EINVAL;
		op->kind = USDT_ARG_MEM;
		op->reg = (unsigned int)w;
		if (!comma)
			return 0;
		comma++;
		while (*comma == ' ' && comma < s + len)
			comma++;
		if (*comma == 'x')
			return index_form(comma, (size_t)(s + len - comma), op) ? 0 : -EINVAL;
		if (*comma == '#')
			comma++;
		return number(comma, (size_t)(s + len - comma), &op->off) ? 0 : -EINVAL;
	}
	w = reg_word(s, len);
	if (w >= 0) {
		op->kind = USDT_ARG_REG;
		op->reg = (unsigned int)w;
		return 0;
	}
	op->kind = USDT_ARG_CONST;
	return number(s, len, &op->off) ? 0 : -EINVAL;
}
