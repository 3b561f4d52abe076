/* SPDX-License-Identifier: MIT */
/*
 * spec.c - parser of probe definitions (see spec.h).
 *
 * The checks and the columns they report follow the kernel's
 * trace_kprobe/trace_probe parsers and their kprobe_syntax_errors
 * selftest: the column is where the offending part starts (a name, a
 * fetch argument, a type). Probe points are reported more precisely than
 * the kernel does: at the object, the symbol or the offset that is wrong.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

/* One whitespace-separated word of the SPEC. */
struct word {
	const char *s;
	size_t len;
	int col;
};

#define MAX_WORDS (UKP_SPEC_MAX_ARGS + 3)

struct parser {
	struct ukp_spec *spec;
	struct ukp_spec_error *err;
	bool failed;
};

static int fail(struct parser *p, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, int col, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return -1;
	p->failed = true;
	p->err->col = col;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* ------------------------------------------------------------ helpers */

static bool good_name(const char *s, size_t len)
{
	size_t i;

	if (!len || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* An unsigned decimal number that is the whole of s[0..len). */
static bool parse_udec(const char *s, size_t len, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		if (v > (ULONG_MAX - 9) / 10)
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* A number in C notation (0x.., 0.., decimal) that is the whole of
 * s[0..len), without sign. */
static bool parse_unum(const char *s, size_t len, unsigned long *out)
{
	char buf[32];
	char *end;

	if (!len || len >= sizeof(buf) || !isdigit((unsigned char)s[0]))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*out = strtoul(buf, &end, 0);
	return !errno && *end == '\0';
}

/* x86-64 register names: the kernel's (regs_query_register_offset), then
 * the usual r-spellings. The index is the word in struct pt_regs. */
static const struct {
	const char *name;
	int index;
} regs_table[] = {
	{ "r15", 0 }, { "r14", 1 }, { "r13", 2 }, { "r12", 3 },
	{ "bp", 4 }, { "bx", 5 }, { "r11", 6 }, { "r10", 7 },
	{ "r9", 8 }, { "r8", 9 }, { "ax", 10 }, { "cx", 11 },
	{ "dx", 12 }, { "si", 13 }, { "di", 14 }, { "orig_ax", 15 },
	{ "ip", 16 }, { "cs", 17 }, { "flags", 18 }, { "sp", 19 },
	{ "ss", 20 },
	{ "rbp", 4 }, { "rbx", 5 }, { "rax", 10 }, { "rcx", 11 },
	{ "rdx", 12 }, { "rsi", 13 }, { "rdi", 14 }, { "rip", 16 },
	{ "eflags", 18 }, { "rsp", 19 }, { "orig_rax", 15 },
};

int ukp_spec_reg_index(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(regs_table) / sizeof(regs_table[0]); i++)
		if (strlen(regs_table[i].name) == len && !memcmp(regs_table[i].name, name, len))
			return regs_table[i].index;
	return -1;
}

static const struct {
	const char *name;
	enum ukp_fa_type type;
	unsigned int size;
} types_table[] = {
	{ "u8", UKP_TY_U, 1 }, { "u16", UKP_TY_U, 2 }, { "u32", UKP_TY_U, 4 }, { "u64", UKP_TY_U, 8 },
	{ "s8", UKP_TY_S, 1 }, { "s16", UKP_TY_S, 2 }, { "s32", UKP_TY_S, 4 }, { "s64", UKP_TY_S, 8 },
	{ "x8", UKP_TY_X, 1 }, { "x16", UKP_TY_X, 2 }, { "x32", UKP_TY_X, 4 }, { "x64", UKP_TY_X, 8 },
	{ "string", UKP_TY_STRING, UKP_SPEC_STR_SLOT },
	{ "ustring", UKP_TY_STRING, UKP_SPEC_STR_SLOT },
	{ "char", UKP_TY_CHAR, 1 },
	{ "symbol", UKP_TY_SYMBOL, 8 },
};

#define TYPES_HINT "one of u8..u64, s8..s64, x8..x64, char, string, symbol, bW@O/C"

const char *ukp_spec_type_name(const struct ukp_fetcharg *fa, char *buf, size_t len)
{
	static const char prefix[] = { [UKP_TY_U] = 'u', [UKP_TY_S] = 's', [UKP_TY_X] = 'x' };

	if (fa->bf_width)
		snprintf(buf, len, "b%u@%u/%u", fa->bf_width, fa->bf_offset, fa->size * 8);
	else if (fa->type == UKP_TY_STRING)
		snprintf(buf, len, "string");
	else if (fa->type == UKP_TY_CHAR)
		snprintf(buf, len, "char");
	else if (fa->type == UKP_TY_SYMBOL)
		snprintf(buf, len, "symbol");
	else
		snprintf(buf, len, "%c%u", prefix[fa->type], fa->size * 8);
	return buf;
}

/* ------------------------------------------------------------ words */

static int split_words(struct parser *p, const char *text, struct word *w, int max)
{
	int n = 0;
	size_t i = 0, len = strlen(text);

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return fail(p, (int)i, "control character in the definition");
	}
	i = 0;
	while (i < len) {
		size_t start;

		while (i < len && (text[i] == ' ' || text[i] == '\t'))
			i++;
		if (i == len)
			break;
		start = i;
		while (i < len && text[i] != ' ' && text[i] != '\t')
			i++;
		if (n == max)
			return fail(p, (int)start, "too many arguments (at most %d)", UKP_SPEC_MAX_ARGS);
		w[n].s = text + start;
		w[n].len = i - start;
		w[n].col = (int)start;
		n++;
	}
	return n;
}

/* ---------------------------------------------------- first word */

/* "GRP/EVENT", "EVENT": the part after ':'. */
static int parse_event_name(struct parser *p, const char *s, size_t len, int col)
{
	struct ukp_spec *spec = p->spec;
	const char *slash = memchr(s, '/', len);
	const char *ev = s;
	size_t evlen = len;
	int evcol = col;

	if (slash) {
		size_t glen = (size_t)(slash - s);

		if (!glen)
			return fail(p, col, "group name is not specified");
		if (glen > UKP_SPEC_NAME_MAX)
			return fail(p, col, "group name is too long (at most %d characters)",
				    UKP_SPEC_NAME_MAX);
		if (!good_name(s, glen))
			return fail(p, col, "group name must follow the rules of C identifiers");
		memcpy(spec->group, s, glen);
		spec->group[glen] = '\0';
		ev = slash + 1;
		evlen = len - glen - 1;
		evcol = col + (int)glen + 1;
	}
	if (!evlen)
		return fail(p, evcol, "event name is not specified");
	if (evlen > UKP_SPEC_NAME_MAX)
		return fail(p, evcol, "event name is too long (at most %d characters)",
			    UKP_SPEC_NAME_MAX);
	if (!good_name(ev, evlen))
		return fail(p, evcol, "event name must follow the rules of C identifiers");
	memcpy(spec->event, ev, evlen);
	spec->event[evlen] = '\0';
	spec->event_col = evcol;
	return 0;
}

/* "p", "r", "r10", "p:ev", "r:grp/ev", ... */
static int parse_head(struct parser *p, const struct word *w)
{
	struct ukp_spec *spec = p->spec;
	const char *colon = memchr(w->s, ':', w->len);
	size_t mlen = (colon ? (size_t)(colon - w->s) : w->len) - 1;

	if (w->s[0] == 'p')
		spec->is_return = false;
	else if (w->s[0] == 'r')
		spec->is_return = true;
	else
		return fail(p, w->col, "probe type must be 'p' (probe) or 'r' (return probe)");

	if (mlen) {
		unsigned long v;

		if (!spec->is_return)
			return fail(p, w->col + 1, "maxactive is only for return probes");
		if (!parse_udec(w->s + 1, mlen, &v) || v == 0)
			return fail(p, w->col + 1, "invalid maxactive number");
		if (v > UKP_SPEC_MAXACTIVE_MAX)
			return fail(p, w->col + 1, "maxactive is too big (at most %d)",
				    UKP_SPEC_MAXACTIVE_MAX);
		spec->maxactive = (int)v;
	}
	if (colon) {
		size_t off = (size_t)(colon - w->s) + 1;

		return parse_event_name(p, w->s + off, w->len - off, w->col + (int)off);
	}
	return 0;
}

/* ------------------------------------------------------ probe point */

static bool sym_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$';
}

/*
 * A glob's bracket expression starting at q ('['): returns the ']' that
 * ends it, or NULL. As fnmatch(3): "[!...]" and "[^...]" negate, and a
 * ']' right after the opening (or the negation) is a member.
 */
static const char *glob_bracket_end(const char *q, const char *end)
{
	const char *c = q + 1;

	if (c < end && (*c == '!' || *c == '^'))
		c++;
	if (c < end && *c == ']')
		c++;
	for (; c < end; c++)
		if (*c == ']')
			return c;
	return NULL;
}

/* [OBJ:]0xADDR: the address part at a, up to end. */
static int parse_addr_point(struct parser *p, const struct word *w, const char *a)
{
	struct ukp_spec *spec = p->spec;
	const char *end = w->s + w->len, *q = a;

	while (q < end && *q != '+' && *q != '-')
		q++;
	if (!parse_unum(a, (size_t)(q - a), &spec->addr))
		return fail(p, spec->sym_col, "invalid address");
	spec->is_addr = true;
	spec->off_col = w->col + (int)(q - w->s);
	if (q < end)
		return fail(p, spec->off_col, "an address takes no offset");
	return 0;
}

/* [OBJ:]SYM[+OFFS] or [OBJ:]0xADDR */
static int parse_point(struct parser *p, const struct word *w)
{
	struct ukp_spec *spec = p->spec;
	const char *s = w->s, *end = w->s + w->len, *colon = NULL, *sym, *q;
	size_t i;

	spec->point_col = w->col;
	for (i = 0; i < w->len; i++)
		if (s[i] == ':')
			colon = s + i;
	if (colon) {
		if (colon == s)
			return fail(p, w->col, "object name is empty");
		spec->object = strndup(s, (size_t)(colon - s));
		if (!spec->object)
			return fail(p, w->col, "out of memory");
		sym = colon + 1;
	} else {
		sym = s;
	}
	spec->sym_col = w->col + (int)(sym - s);
	if (sym == end || *sym == '+' || *sym == '-')
		return fail(p, spec->sym_col, "symbol is not specified");
	if (isdigit((unsigned char)*sym))
		return parse_addr_point(p, w, sym);
	for (q = sym; q < end && *q != '+' && *q != '-'; q++) {
		if (*q == '*' || *q == '?') {
			spec->is_glob = true;
		} else if (*q == '[') {
			const char *close = glob_bracket_end(q, end);

			if (!close)
				return fail(p, w->col + (int)(q - s), "glob bracket is not closed");
			spec->is_glob = true;
			q = close;
		} else if (!sym_char(*q)) {
			return fail(p, w->col + (int)(q - s), "invalid character in the symbol name");
		}
	}
	spec->symbol = strndup(sym, (size_t)(q - sym));
	if (!spec->symbol)
		return fail(p, spec->sym_col, "out of memory");
	spec->off_col = w->col + (int)(q - s);
	if (q < end) {
		unsigned long off;

		if (*q == '-' && q + 1 < end && isdigit((unsigned char)q[1]) &&
		    parse_unum(q + 1, (size_t)(end - q - 1), &off))
			return fail(p, spec->off_col, "offset must not be negative");
		if (*q == '-' || !parse_unum(q + 1, (size_t)(end - q - 1), &off) || off > UINT_MAX)
			return fail(p, spec->off_col, "invalid offset");
		spec->offset = off;
	}
	if (spec->is_return && spec->offset)
		return fail(p, spec->off_col, "return probe must be on a function entry (+0)");
	return 0;
}

/* ---------------------------------------------------- fetch args */

static int parse_fetch(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
		       int col, int depth);

/* +|-[u]OFFS(FETCHARG) */
static int parse_deref(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
		       int col, int depth)
{
	const char *open = memchr(s, '(', len), *num, *close = NULL, *inner;
	unsigned long off;
	size_t i, ilen;
	int icol;

	if (!open)
		return fail(p, col, "dereference needs a brace: +|-OFFS(FETCHARG)");
	if (depth >= UKP_SPEC_DEREF_MAX)
		return fail(p, col, "dereference is nested too deeply (at most %d levels)",
			    UKP_SPEC_DEREF_MAX);
	num = s + 1;
	if (num < open && *num == 'u')
		num++; /* user-space dereference: all memory is user memory here */
	if (!parse_unum(num, (size_t)(open - num), &off) || off > LONG_MAX)
		return fail(p, col, "invalid dereference offset");
	inner = open + 1;
	icol = col + (int)(inner - s);
	for (i = (size_t)(inner - s); i < len; i++)
		if (s[i] == ')')
			close = s + i;
	if (!close)
		return fail(p, col + (int)len, "dereference brace is not closed");
	if (close + 1 != s + len)
		return fail(p, col + (int)(close + 1 - s), "unexpected text after the dereference");
	ilen = (size_t)(close - inner);
	if (!ilen)
		return fail(p, icol, "no argument expression");
	if (parse_fetch(p, fa, inner, ilen, icol, depth + 1))
		return -1;
	if (fa->base == UKP_FA_COMM)
		return fail(p, icol, "$comm can not be dereferenced");
	fa->deref[fa->nderef++] = s[0] == '-' ? -(long)off : (long)off;
	return 0;
}

static int parse_var(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
		     int col)
{
	const struct ukp_spec *spec = p->spec;
	const char *v = s + 1;
	size_t vlen = len - 1;
	unsigned long n;

	if (vlen == 6 && !memcmp(v, "retval", 6)) {
		if (!spec->is_return)
			return fail(p, col, "$retval is only available on return probes");
		fa->base = UKP_FA_RETVAL;
		return 0;
	}
	if (vlen == 4 && !memcmp(v, "comm", 4)) {
		fa->base = UKP_FA_COMM;
		return 0;
	}
	if (vlen == 5 && !memcmp(v, "stack", 5)) {
		fa->base = UKP_FA_STACKP;
		return 0;
	}
	if (vlen > 5 && !memcmp(v, "stack", 5)) {
		if (!parse_udec(v + 5, vlen - 5, &n) || n > UKP_SPEC_STACK_MAX)
			return fail(p, col, "invalid stack number (at most %d)", UKP_SPEC_STACK_MAX);
		fa->base = UKP_FA_STACK;
		fa->param = n;
		return 0;
	}
	if (vlen > 3 && !memcmp(v, "arg", 3)) {
		if (!parse_udec(v + 3, vlen - 3, &n) || n < 1 || n > UKP_SPEC_STACK_MAX)
			return fail(p, col, "invalid argument number ($arg1 is the first)");
		if (!spec->is_return && spec->offset)
			return fail(p, col, "$argN is only available at a function entry (+0)");
		fa->base = UKP_FA_ARG;
		fa->param = n;
		return 0;
	}
	return fail(p, col, "invalid $-variable (one of $argN, $retval, $stack, $stackN, $comm)");
}

/* @SYM[+|-OFFS]: a data (or any) symbol's address, resolved by the
 * agent in the traced program. */
static int parse_datasym(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
			 int col)
{
	const char *end = s + len, *q;
	unsigned long off = 0;

	for (q = s + 1; q < end && *q != '+' && *q != '-'; q++)
		if (!sym_char(*q))
			return fail(p, col + (int)(q - s), "invalid character in the symbol name");
	if (q < end && (!parse_unum(q + 1, (size_t)(end - q - 1), &off) || off > LONG_MAX))
		return fail(p, col + (int)(q - s), "invalid offset");
	fa->symbol = strndup(s + 1, (size_t)(q - s - 1));
	if (!fa->symbol)
		return fail(p, col, "out of memory");
	fa->symoff = q < end && *q == '-' ? -(long)off : (long)off;
	fa->base = UKP_FA_SYM;
	fa->deref[fa->nderef++] = 0;
	return 0;
}

static int parse_fetch(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
		       int col, int depth)
{
	unsigned long addr;
	int reg;

	switch (s[0]) {
	case '%':
		if (len == 1)
			return fail(p, col, "register name is not specified");
		reg = ukp_spec_reg_index(s + 1, len - 1);
		if (reg < 0)
			return fail(p, col, "unknown register %.*s", (int)len, s);
		fa->base = UKP_FA_REG;
		fa->param = (unsigned long)reg;
		return 0;
	case '$':
		return parse_var(p, fa, s, len, col);
	case '@':
		if (len > 1 && (s[1] == '+' || s[1] == '-'))
			return fail(p, col, "file offsets (@+OFFS) are not supported");
		if (len > 1 && !isdigit((unsigned char)s[1]))
			return parse_datasym(p, fa, s, len, col);
		if (!parse_unum(s + 1, len - 1, &addr))
			return fail(p, col, "invalid memory address");
		fa->base = UKP_FA_IMM;
		fa->param = addr;
		fa->deref[fa->nderef++] = 0;
		return 0;
	case '+':
	case '-':
		return parse_deref(p, fa, s, len, col, depth);
	default:
		return fail(p, col, "invalid fetch argument");
	}
}

/*
 * b<bit-width>@<bit-offset>/<container-size>: the kernel's bitfield type,
 * an unsigned number of bit-width bits that start bit-offset bits into a
 * container of 8, 16, 32 or 64 bits. Errors point at the part that is
 * wrong.
 */
static int parse_bitfield(struct parser *p, struct ukp_fetcharg *fa, const char *t, size_t tlen,
			  int tcol)
{
	const char *end = t + tlen, *at, *slash;
	unsigned long width, offset, container;

	at = memchr(t, '@', tlen);
	if (!at)
		return fail(p, tcol, "bitfield must be bWIDTH@OFFSET/CONTAINER-SIZE");
	slash = memchr(at, '/', (size_t)(end - at));
	if (!slash)
		return fail(p, tcol + (int)(at - t), "bitfield needs a /CONTAINER-SIZE");
	if (!parse_udec(t + 1, (size_t)(at - t - 1), &width) || width == 0 || width > 64)
		return fail(p, tcol + 1, "invalid bitfield width");
	if (!parse_udec(at + 1, (size_t)(slash - at - 1), &offset) || offset > 63)
		return fail(p, tcol + (int)(at + 1 - t), "invalid bitfield offset");
	if (!parse_udec(slash + 1, (size_t)(end - slash - 1), &container) ||
	    (container != 8 && container != 16 && container != 32 && container != 64))
		return fail(p, tcol + (int)(slash + 1 - t),
			    "bitfield container size must be 8, 16, 32 or 64");
	if (width + offset > container)
		return fail(p, tcol, "bitfield does not fit in its container (%lu + %lu > %lu bits)",
			    width, offset, container);
	fa->type = UKP_TY_U;
	fa->size = (unsigned int)container / 8;
	fa->bf_width = (unsigned int)width;
	fa->bf_offset = (unsigned int)offset;
	return 0;
}

/* The :TYPE of an argument, t[0..tlen) at column tcol. */
static int parse_type(struct parser *p, struct ukp_fetcharg *fa, const char *t, size_t tlen,
		      int tcol)
{
	bool found = false;
	size_t i;

	for (i = 0; i < sizeof(types_table) / sizeof(types_table[0]); i++) {
		if (strlen(types_table[i].name) == tlen && !memcmp(types_table[i].name, t, tlen)) {
			fa->type = types_table[i].type;
			fa->size = types_table[i].size;
			found = true;
		}
	}
	if (!found && tlen > 1 && t[0] == 'b' && isdigit((unsigned char)t[1])) {
		if (parse_bitfield(p, fa, t, tlen, tcol))
			return -1;
		found = true;
	}
	if (!found)
		return fail(p, tcol, "unknown type (" TYPES_HINT ")");
	if (fa->base == UKP_FA_COMM && fa->type != UKP_TY_STRING)
		return fail(p, tcol, "$comm is a string");
	if (fa->type == UKP_TY_STRING && fa->base != UKP_FA_COMM && !fa->nderef)
		return fail(p, tcol,
			    "string accepts only a memory argument: +OFFS(FETCHARG), @ADDR or @SYM");
	return 0;
}

static bool name_used(const struct ukp_spec *spec, const char *name, size_t len)
{
	int i;

	for (i = 0; i < spec->nargs; i++)
		if (strlen(spec->args[i].name) == len && !memcmp(spec->args[i].name, name, len))
			return true;
	return false;
}

/* [NAME=]FETCHARG[:TYPE] */
static int parse_arg(struct parser *p, const struct word *w)
{
	struct ukp_spec *spec = p->spec;
	struct ukp_fetcharg *fa = &spec->args[spec->nargs];
	const char *eq = memchr(w->s, '=', w->len), *body = w->s, *colon;
	size_t blen = w->len;
	int bcol = w->col;

	memset(fa, 0, sizeof(*fa));
	fa->col = w->col;
	if (eq) {
		size_t nlen = (size_t)(eq - w->s);

		if (!nlen)
			return fail(p, w->col, "argument name is not specified");
		if (nlen > UKP_SPEC_ARGNAME_MAX)
			return fail(p, w->col, "argument name is too long (at most %d characters)",
				    UKP_SPEC_ARGNAME_MAX);
		if (!good_name(w->s, nlen))
			return fail(p, w->col, "argument name must follow the rules of C identifiers");
		if (name_used(spec, w->s, nlen))
			return fail(p, w->col, "this argument name is already used");
		memcpy(fa->name, w->s, nlen);
		fa->name[nlen] = '\0';
		body = eq + 1;
		blen = w->len - nlen - 1;
		bcol = w->col + (int)nlen + 1;
		if (!blen)
			return fail(p, bcol, "no argument expression");
	} else {
		snprintf(fa->name, sizeof(fa->name), "arg%d", spec->nargs + 1);
		if (name_used(spec, fa->name, strlen(fa->name)))
			return fail(p, w->col, "this argument name is already used");
	}

	colon = memchr(body, ':', blen);
	if (blen > UKP_SPEC_ARGSTR_MAX)
		return fail(p, bcol, "argument expression is too long (at most %d characters)",
			    UKP_SPEC_ARGSTR_MAX);
	if (colon == body)
		return fail(p, bcol, "no argument expression");
	if (parse_fetch(p, fa, body, colon ? (size_t)(colon - body) : blen, bcol, 0))
		return -1;

	if (colon) {
		const char *t = colon + 1;

		if (parse_type(p, fa, t, blen - (size_t)(t - body), bcol + (int)(t - body)))
			return -1;
	} else if (fa->base == UKP_FA_COMM) {
		fa->type = UKP_TY_STRING;
		fa->size = UKP_SPEC_STR_SLOT;
	} else {
		/* The kernel's default on 64-bit: x64. */
		fa->type = UKP_TY_X;
		fa->size = 8;
	}

	fa->off = spec->payload;
	if (spec->payload + (fa->type == UKP_TY_STRING ? UKP_SPEC_STR_SLOT : UKP_SPEC_NUM_SLOT) >
	    UKP_SPEC_PAYLOAD_MAX)
		return fail(p, w->col,
			    "too many arguments: an event holds %d bytes (8 a number, %d a string)",
			    UKP_SPEC_PAYLOAD_MAX, UKP_SPEC_STR_SLOT);
	spec->payload += fa->type == UKP_TY_STRING ? UKP_SPEC_STR_SLOT : UKP_SPEC_NUM_SLOT;
	spec->nargs++;
	return 0;
}

/* ------------------------------------------------------ interface */

static void make_identifier(char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			*s = '_';
}

/*
 * The kernel's default event names, made C identifiers: p_SYM_OFFS and
 * r_SYM_0; p_0xADDR for an address; p_OBJ_0xADDR for an address in an
 * object (as uprobe_events' p_FILE_0xOFFSET, OBJ's file name cut at its
 * first '.'). A glob gets its names from its matches (the agent's).
 */
static void default_event(struct ukp_spec *spec)
{
	char c = spec->is_return ? 'r' : 'p';

	if (spec->is_glob) {
		spec->event[0] = '\0';
	} else if (spec->is_addr && spec->object) {
		const char *base = strrchr(spec->object, '/');
		size_t blen;

		base = base ? base + 1 : spec->object;
		blen = strcspn(base, ".");
		snprintf(spec->event, sizeof(spec->event), "%c_%.*s_0x%lx", c, (int)blen, base,
			 spec->addr);
	} else if (spec->is_addr) {
		snprintf(spec->event, sizeof(spec->event), "%c_0x%lx", c, spec->addr);
	} else {
		snprintf(spec->event, sizeof(spec->event), "%c_%s_%lu", c, spec->symbol,
			 spec->offset);
	}
	make_identifier(spec->event);
}

void ukp_spec_match_event(const struct ukp_spec *spec, const char *func, char *buf, size_t len)
{
	char suffix[32] = "";
	size_t room;

	if (spec->is_return)
		snprintf(suffix, sizeof(suffix), "__return");
	else if (spec->offset)
		snprintf(suffix, sizeof(suffix), "_%lu", spec->offset);
	if (len > UKP_SPEC_NAME_MAX + 1)
		len = UKP_SPEC_NAME_MAX + 1;
	room = len - 1 - strlen(suffix);
	snprintf(buf, len, "%s%.*s%s", isdigit((unsigned char)func[0]) ? "_" : "", (int)room,
		 func, suffix);
	make_identifier(buf);
}

int ukp_spec_parse(const char *text, struct ukp_spec *spec, struct ukp_spec_error *err)
{
	struct parser p = { spec, err, false };
	struct word w[MAX_WORDS];
	int n, i;

	memset(spec, 0, sizeof(*spec));
	memset(err, 0, sizeof(*err));
	snprintf(spec->group, sizeof(spec->group), "%s", UKP_SPEC_DEFAULT_GROUP);
	n = split_words(&p, text, w, MAX_WORDS);
	if (n < 0)
		goto bad;
	if (n == 0) {
		fail(&p, 0, "empty probe definition");
		goto bad;
	}
	if (parse_head(&p, &w[0]))
		goto bad;
	if (n < 2) {
		fail(&p, (int)strlen(text), "probe point is not specified");
		goto bad;
	}
	if (parse_point(&p, &w[1]))
		goto bad;
	for (i = 2; i < n; i++)
		if (parse_arg(&p, &w[i]))
			goto bad;
	if (spec->event[0]) {
		spec->event_given = true;
	} else {
		default_event(spec);
		spec->event_col = 0;
	}
	spec->text = strdup(text);
	if (!spec->text) {
		fail(&p, 0, "out of memory");
		goto bad;
	}
	return 0;
bad:
	ukp_spec_free(spec);
	return -1;
}

void ukp_spec_free(struct ukp_spec *spec)
{
	int i;

	/* also the argument being parsed when a SPEC failed */
	for (i = 0; i < UKP_SPEC_MAX_ARGS; i++) {
		free(spec->args[i].symbol);
		spec->args[i].symbol = NULL;
	}
	free(spec->text);
	free(spec->object);
	free(spec->symbol);
	spec->text = spec->object = spec->symbol = NULL;
}

char *ukp_spec_symbol_name(const struct ukp_spec *spec)
{
	size_t len = strlen(spec->symbol) + (spec->object ? strlen(spec->object) + 1 : 0) + 1;
	char *s = malloc(len);

	if (!s)
		return NULL;
	if (spec->object)
		snprintf(s, len, "%s:%s", spec->object, spec->symbol);
	else
		snprintf(s, len, "%s", spec->symbol);
	return s;
}
