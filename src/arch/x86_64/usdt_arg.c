/* SPDX-License-Identifier: MIT */
/*
 * usdt_arg.c - x86-64's SDT argument operands (src/usdt.h): what GCC's
 * "nor" constraint of <sys/sdt.h> puts after "SIZE@" in AT&T syntax:
 * %REG, $CONST, DISP(%REG), SYM(%rip), SYM+OFF(%rip), OFF+SYM(%rip)
 * (PostgreSQL's notes: a field of a global struct), SYM, ADDR, and with
 * an index register DISP(%B,%I[,S]), DISP(,%I,S), SYM[+OFF](%B,%I,S)
 * (an array element at -O2). Segment prefixes ("%fs:tv@tpoff", a
 * thread-local variable) are not decoded: what they name is an offset
 * from the thread pointer that only the linker knew.
 * [any]: no allocation, no locks.
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

/* Every name of a general register (64, 32, 16 and low 8 bits), and the
 * word of struct pt_regs that holds it. The argument's size says how
 * many of its low bytes count. */
static const struct {
	const char *name;
	unsigned char word;
} regs[] = {
	{ "rax", 10 }, { "eax", 10 }, { "ax", 10 }, { "al", 10 },
	{ "rbx", 5 }, { "ebx", 5 }, { "bx", 5 }, { "bl", 5 },
	{ "rcx", 11 }, { "ecx", 11 }, { "cx", 11 }, { "cl", 11 },
	{ "rdx", 12 }, { "edx", 12 }, { "dx", 12 }, { "dl", 12 },
	{ "rsi", 13 }, { "esi", 13 }, { "si", 13 }, { "sil", 13 },
	{ "rdi", 14 }, { "edi", 14 }, { "di", 14 }, { "dil", 14 },
	{ "rbp", 4 }, { "ebp", 4 }, { "bp", 4 }, { "bpl", 4 },
	{ "rsp", 19 }, { "esp", 19 }, { "sp", 19 }, { "spl", 19 },
	{ "r8", 9 }, { "r9", 8 }, { "r10", 7 }, { "r11", 6 },
	{ "r12", 3 }, { "r13", 2 }, { "r14", 1 }, { "r15", 0 },
	{ "rip", 16 },
};

/* "%name" at s: its word, or -1. The r8-r15 suffixes d, w, b name their
 * low bits. */
static int reg_word(const char *s, size_t len)
{
	size_t i;

	if (len < 3 || s[0] != '%')
		return -1;
	s++;
	len--;
	if (s[0] == 'r' && isdigit((unsigned char)s[1]) && strchr("dwb", s[len - 1]))
		len--;
	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (strlen(regs[i].name) == len && !memcmp(regs[i].name, s, len))
			return regs[i].word;
	return -1;
}

/* A signed number in C notation that is the whole of s[0..len). */
static bool number(const char *s, size_t len, long *v)
{
	char buf[32], *end;
	int err;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!isdigit((unsigned char)buf[buf[0] == '-' || buf[0] == '+']))
		return false;
	/* base/libc.h's: the range error comes back in err, errno is the
	 * program's */
	*v = ukp_strtol(buf, &end, 0, &err);
	if (err == -ERANGE && buf[0] != '-') /* an address above LONG_MAX */
		*v = (long)ukp_strtoul(buf, &end, 0, &err);
	return !err && !*end;
}

/* "SYM", "SYM+OFF", "SYM-OFF", "OFF+SYM" as a symbol and an offset. */
static bool symbol(const char *s, size_t len, struct ukp_usdt_op *op)
{
	size_t n = 0;
	long pre = 0;

	if (len && (isdigit((unsigned char)s[0]) || s[0] == '-')) {
		const char *plus = memchr(s, '+', len);

		if (!plus || !number(s, (size_t)(plus - s), &pre) ||
		    !symbol(plus + 1, len - (size_t)(plus + 1 - s), op))
			return false;
		op->off += pre;
		return true;
	}

	while (n < len && (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '.' || s[n] == '$'))
		n++;
	if (!n || isdigit((unsigned char)s[0]))
		return false;
	op->sym = s;
	op->symlen = n;
	op->off = 0;
	return n == len || ((s[n] == '+' || s[n] == '-') && number(s + n, len - n, &op->off));
}

/* The displacement before "(": a number, or a symbol with an offset
 * (empty: 0). */
static bool displacement(const char *s, size_t len, struct ukp_usdt_op *op)
{
	if (!len)
		return true;
	return number(s, len, &op->off) || symbol(s, len, op);
}

/* "(%B,%I[,S])" or "(,%I,S)" at s (the parentheses' inside, len bytes)
 * into op's reg, index and scale. %rip and %rsp are never an index. */
static bool index_form(const char *s, size_t len, struct ukp_usdt_op *op)
{
	const char *c1 = memchr(s, ',', len), *c2, *end = s + len;
	long scale = 1;
	int b = -1, i;

	if (!c1)
		return false;
	if (c1 != s) {
		b = reg_word(s, (size_t)(c1 - s));
		if (b < 0 || b == 16)
			return false;
	}
	c2 = memchr(c1 + 1, ',', (size_t)(end - c1 - 1));
	i = reg_word(c1 + 1, (size_t)((c2 ? c2 : end) - c1 - 1));
	if (i < 0 || i == 16 || i == 19)
		return false;
	if (c2 && (!number(c2 + 1, (size_t)(end - c2 - 1), &scale) ||
		   (scale != 1 && scale != 2 && scale != 4 && scale != 8)))
		return false;
	op->kind = USDT_ARG_INDEX;
	op->reg = b < 0 ? USDT_ARG_NOREG : (unsigned int)b;
	op->index = (unsigned int)i;
	op->scale = (unsigned int)scale;
	return true;
}

int arch_usdt_operand(const char *s, size_t len, struct ukp_usdt_op *op)
{
	const char *paren;
	int w;

	memset(op, 0, sizeof(*op));
	if (!len)
		return -EINVAL;
	if (s[0] == '%') {
		w = reg_word(s, len);
		if (w < 0 || w == 16)
			return -EINVAL;
		op->kind = USDT_ARG_REG;
		op->reg = (unsigned int)w;
		return 0;
	}
	if (s[0] == '$') {
		op->kind = USDT_ARG_CONST;
		return number(s + 1, len - 1, &op->off) ? 0 : -EINVAL;
	}
	paren = memchr(s, '(', len);
	if (!paren) {
		/* an absolute address, or a symbol's (non-PIC code) */
		op->kind = USDT_ARG_ADDR;
		if (number(s, len, &op->off))
			return 0;
		return symbol(s, len, op) ? 0 : -EINVAL;
	}
	if (s[len - 1] != ')')
		return -EINVAL;
	if (memchr(paren, ',', len - (size_t)(paren - s))) {
		if (!index_form(paren + 1, len - (size_t)(paren - s) - 2, op))
			return -EINVAL;
		return displacement(s, (size_t)(paren - s), op) ? 0 : -EINVAL;
	}
	w = reg_word(paren + 1, len - (size_t)(paren - s) - 2);
	if (w < 0)
		return -EINVAL;
	if (w == 16) {
		/* SYM(%rip): the symbol's address, as the assembler
		 * computes it */
		op->kind = USDT_ARG_ADDR;
		return symbol(s, (size_t)(paren - s), op) ? 0 : -EINVAL;
	}
	op->kind = USDT_ARG_MEM;
	op->reg = (unsigned int)w;
	if (paren == s)
		return 0;
	return number(s, (size_t)(paren - s), &op->off) ? 0 : -EINVAL;
}
