/* SPDX-License-Identifier: MIT */
/*
 * spec_fetch.c - the fetch arguments of a probe definition:
 * [NAME=]FETCHARG[:TYPE], the registers (fetch_regs.h, per architecture)
 * and types they may name, and where each value goes in an event. Errors point at the argument, the
 * part of it, or the type that is wrong (see spec.c).
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_regs.h"
#include "fetch_types.h"
#include "spec_parse.h"

int ukp_spec_reg_index(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ukp_fetch_nregs; i++)
		if (strlen(ukp_fetch_regs[i].name) == len && !memcmp(ukp_fetch_regs[i].name, name, len))
			return ukp_fetch_regs[i].index;
	return -1;
}


/* fa gets the type of row t (an alias: the row it names). */
static void set_type(struct ukp_fetcharg *fa, const struct ukp_fetch_type *t)
{
	if (t->alias)
		t--;
	fa->type = t->type;
	fa->size = t->size;
	fa->tidx = (unsigned char)(t - ukp_fetch_types);
}

void spec_set_type(struct ukp_fetcharg *fa, const struct ukp_fetch_type *t)
{
	set_type(fa, t);
}

#define TYPES_HINT "one of u8..u64, s8..s64, x8..x64, char, string, symbol, bW@O/C"

const char *ukp_spec_type_name(const struct ukp_fetcharg *fa, char *buf, size_t len)
{
	if (fa->bf_width)
		snprintf(buf, len, "b%u@%u/%u", fa->bf_width, fa->bf_offset, fa->size * 8);
	else
		snprintf(buf, len, "%s", ukp_fetch_type_of(fa)->name);
	return buf;
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
		return spec_fail(p, col, "dereference needs a brace: +|-OFFS(FETCHARG)");
	if (depth >= UKP_SPEC_DEREF_MAX)
		return spec_fail(p, col, "dereference is nested too deeply (at most %d levels)",
			    UKP_SPEC_DEREF_MAX);
	num = s + 1;
	if (num < open && *num == 'u')
		num++; /* user-space dereference: all memory is user memory here */
	if (!spec_parse_unum(num, (size_t)(open - num), &off) || off > LONG_MAX)
		return spec_fail(p, col, "invalid dereference offset");
	inner = open + 1;
	icol = col + (int)(inner - s);
	for (i = (size_t)(inner - s); i < len; i++)
		if (s[i] == ')')
			close = s + i;
	if (!close)
		return spec_fail(p, col + (int)len, "dereference brace is not closed");
	if (close + 1 != s + len)
		return spec_fail(p, col + (int)(close + 1 - s), "unexpected text after the dereference");
	ilen = (size_t)(close - inner);
	if (!ilen)
		return spec_fail(p, icol, "no argument expression");
	if (parse_fetch(p, fa, inner, ilen, icol, depth + 1))
		return -1;
	if (fa->base == UKP_FA_COMM)
		return spec_fail(p, icol, "$comm can not be dereferenced");
	if (fa->base == UKP_FA_DURATION)
		return spec_fail(p, icol, "$duration can not be dereferenced");
	if (fa->base == UKP_FA_GOID)
		return spec_fail(p, icol, "$goid can not be dereferenced");
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
			return spec_fail(p, col, "$retval is only available on return probes");
		fa->base = UKP_FA_RETVAL;
		return 0;
	}
	if (vlen == 4 && !memcmp(v, "comm", 4)) {
		fa->base = UKP_FA_COMM;
		return 0;
	}
	if (vlen == 8 && !memcmp(v, "duration", 8)) {
		if (spec->is_sdt)
			return spec_sdt_duration(p, fa, col);
		if (!spec->is_return)
			return spec_fail(p, col, "$duration is only available on return probes");
		fa->base = UKP_FA_DURATION;
		return 0;
	}
	if (vlen == 4 && !memcmp(v, "goid", 4)) {
		if (spec->is_sdt || spec->is_watch)
			return spec_fail(p, col, "$goid is only available in Go functions");
		fa->base = UKP_FA_GOID;
		return 0;
	}
	if (vlen == 5 && !memcmp(v, "stack", 5)) {
		fa->base = UKP_FA_STACKP;
		return 0;
	}
	if (vlen > 5 && !memcmp(v, "stack", 5)) {
		if (!spec_parse_udec(v + 5, vlen - 5, &n) || n > UKP_SPEC_STACK_MAX)
			return spec_fail(p, col, "invalid stack number (at most %d)", UKP_SPEC_STACK_MAX);
		fa->base = UKP_FA_STACK;
		fa->param = n;
		return 0;
	}
	if (vlen > 3 && !memcmp(v, "arg", 3)) {
		if (!spec_parse_udec(v + 3, vlen - 3, &n) || n < 1 || n > UKP_SPEC_STACK_MAX)
			return spec_fail(p, col, "invalid argument number ($arg1 is the first)");
		if (spec->is_sdt)
			return spec_sdt_arg(p, fa, n, col);
		if (!spec->is_return && spec->offset)
			return spec_fail(p, col, "$argN is only available at a function entry (+0)");
		if (spec->is_watch)
			return spec_fail(p, col, "$argN is not available on watchpoints");
		fa->base = UKP_FA_ARG;
		fa->param = n;
		return 0;
	}
	return spec_fail(p, col, "invalid $-variable (one of $argN, $retval, $duration, $stack, $stackN, "
			 "$comm, $goid)");
}

/* @SYM[+|-OFFS]: a data (or any) symbol's address, resolved by the
 * agent in the traced program. */
static int parse_datasym(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
			 int col)
{
	const char *end = s + len, *q;
	unsigned long off = 0;

	for (q = s + 1; q < end && *q != '+' && *q != '-'; q++)
		if (!spec_sym_char(*q))
			return spec_fail(p, col + (int)(q - s), "invalid character in the symbol name");
	if (q < end && (!spec_parse_unum(q + 1, (size_t)(end - q - 1), &off) || off > LONG_MAX))
		return spec_fail(p, col + (int)(q - s), "invalid offset");
	fa->symbol = strndup(s + 1, (size_t)(q - s - 1));
	if (!fa->symbol)
		return spec_fail(p, col, "out of memory");
	fa->symoff = q < end && *q == '-' ? -(long)off : (long)off;
	fa->base = UKP_FA_SYM;
	fa->deref[fa->nderef++] = 0;
	return 0;
}

/* VAR, VAR->FIELD, VAR.FIELD, VAR[N] and chains of those, $params: kept
 * as written for the CLI's DWARF resolution, which checks the rest. */
static int var_fetch(struct parser *p, struct ukp_fetcharg *fa, const char *s, size_t len,
		     int col)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_$.->[]", s[i]))
			return spec_fail(p, col + (int)i, "invalid character in a variable expression");
	if (p->spec->is_watch)
		return spec_fail(p, col, "variables by name are not available on watchpoints");
	fa->base = UKP_FA_VAR;
	fa->var_col = col;
	fa->var_len = (int)len;
	p->spec->has_vars = true;
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
			return spec_fail(p, col, "register name is not specified");
		reg = ukp_spec_reg_index(s + 1, len - 1);
		if (reg < 0)
			return spec_fail(p, col, "unknown register %.*s", (int)len, s);
		fa->base = UKP_FA_REG;
		fa->param = (unsigned long)reg;
		return 0;
	case '$':
		if (!depth && len == 7 && !memcmp(s, "$params", 7))
			return var_fetch(p, fa, s, len, col);
		return parse_var(p, fa, s, len, col);
	case '@':
		if (len > 1 && (s[1] == '+' || s[1] == '-'))
			return spec_fail(p, col, "file offsets (@+OFFS) are not supported");
		if (len > 1 && !isdigit((unsigned char)s[1]))
			return parse_datasym(p, fa, s, len, col);
		if (!spec_parse_unum(s + 1, len - 1, &addr))
			return spec_fail(p, col, "invalid memory address");
		fa->base = UKP_FA_IMM;
		fa->param = addr;
		fa->deref[fa->nderef++] = 0;
		return 0;
	case '+':
	case '-':
		return parse_deref(p, fa, s, len, col, depth);
	default:
		/* a variable by name, resolved from DWARF by the CLI */
		if (!depth && (isalpha((unsigned char)s[0]) || s[0] == '_'))
			return var_fetch(p, fa, s, len, col);
		return spec_fail(p, col, "invalid fetch argument");
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
		return spec_fail(p, tcol, "bitfield must be bWIDTH@OFFSET/CONTAINER-SIZE");
	slash = memchr(at, '/', (size_t)(end - at));
	if (!slash)
		return spec_fail(p, tcol + (int)(at - t), "bitfield needs a /CONTAINER-SIZE");
	if (!spec_parse_udec(t + 1, (size_t)(at - t - 1), &width) || width == 0 || width > 64)
		return spec_fail(p, tcol + 1, "invalid bitfield width");
	if (!spec_parse_udec(at + 1, (size_t)(slash - at - 1), &offset) || offset > 63)
		return spec_fail(p, tcol + (int)(at + 1 - t), "invalid bitfield offset");
	if (!spec_parse_udec(slash + 1, (size_t)(end - slash - 1), &container) ||
	    (container != 8 && container != 16 && container != 32 && container != 64))
		return spec_fail(p, tcol + (int)(slash + 1 - t),
			    "bitfield container size must be 8, 16, 32 or 64");
	if (width + offset > container)
		return spec_fail(p, tcol, "bitfield does not fit in its container (%lu + %lu > %lu bits)",
			    width, offset, container);
	set_type(fa, ukp_fetch_type_find(UKP_TY_U, (unsigned int)container / 8));
	fa->bf_width = (unsigned int)width;
	fa->bf_offset = (unsigned int)offset;
	return 0;
}

/* The :TYPE of an argument, t[0..tlen) at column tcol. */
static int parse_type(struct parser *p, struct ukp_fetcharg *fa, const char *t, size_t tlen,
		      int tcol)
{
	const struct ukp_fetch_type *row = ukp_fetch_type_named(t, tlen);
	bool found = row != NULL;

	if (row)
		set_type(fa, row);
	if (!found && tlen > 1 && t[0] == 'b' && isdigit((unsigned char)t[1])) {
		if (parse_bitfield(p, fa, t, tlen, tcol))
			return -1;
		found = true;
	}
	if (!found)
		return spec_fail(p, tcol, "unknown type (" TYPES_HINT ")");
	if (fa->base == UKP_FA_COMM && !ukp_fetch_type_of(fa)->is_string)
		return spec_fail(p, tcol, "$comm is a string");
	fa->type_given = true;
	if (p->spec->is_sdt && fa->base == UKP_FA_ARG)
		return spec_sdt_type(p, fa, true, tcol);
	if (ukp_fetch_type_of(fa)->is_string && fa->base != UKP_FA_COMM && !fa->nderef &&
	    fa->base != UKP_FA_VAR)
		return spec_fail(p, tcol,
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

/* Does an argument without NAME= name a variable (not $params)? */
static bool var_word(const char *s, size_t len)
{
	return len && (isalpha((unsigned char)s[0]) || s[0] == '_');
}

/* A variable expression made an argument name: "p->x[2]" gives p_x_2. */
static void var_name(char *s)
{
	char *o = s, *c;

	for (c = s; *c; c++) {
		bool word = isalnum((unsigned char)*c) || *c == '_';

		if (word)
			*o++ = *c;
		else if (o > s && o[-1] != '_')
			*o++ = '_';
	}
	while (o > s && o[-1] == '_')
		o--;
	*o = '\0';
}

/* [NAME=]FETCHARG[:TYPE] */
int spec_parse_arg(struct parser *p, const struct word *w)
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
			return spec_fail(p, w->col, "argument name is not specified");
		if (nlen > UKP_SPEC_ARGNAME_MAX)
			return spec_fail(p, w->col, "argument name is too long (at most %d characters)",
				    UKP_SPEC_ARGNAME_MAX);
		if (!spec_good_name(w->s, nlen))
			return spec_fail(p, w->col, "argument name must follow the rules of C identifiers");
		if (name_used(spec, w->s, nlen))
			return spec_fail(p, w->col, "this argument name is already used");
		memcpy(fa->name, w->s, nlen);
		fa->name[nlen] = '\0';
		body = eq + 1;
		blen = w->len - nlen - 1;
		bcol = w->col + (int)nlen + 1;
		if (!blen)
			return spec_fail(p, bcol, "no argument expression");
	} else if (blen >= 9 && !memcmp(body, "$duration", 9) && (blen == 9 || body[9] == ':') &&
		   !name_used(spec, "duration", 8)) {
		/* what filters and hist keys call it (the kernel's synthetic
		 * events and perf's latency fields name it so) */
		snprintf(fa->name, sizeof(fa->name), "duration");
	} else if (blen >= 5 && !memcmp(body, "$goid", 5) && (blen == 5 || body[5] == ':') &&
		   !name_used(spec, "goid", 4)) {
		snprintf(fa->name, sizeof(fa->name), "goid");
	} else if (var_word(body, blen)) {
		/* a variable by name is named after it (VAR, p->x: p_x) */
		const char *c = memchr(body, ':', blen);
		size_t n = c ? (size_t)(c - body) : blen;

		snprintf(fa->name, sizeof(fa->name), "%.*s", (int)n, body);
		var_name(fa->name);
		if (name_used(spec, fa->name, strlen(fa->name)))
			return spec_fail(p, w->col, "this argument name is already used");
	} else {
		snprintf(fa->name, sizeof(fa->name), "arg%d", spec->nargs + 1);
		if (name_used(spec, fa->name, strlen(fa->name)))
			return spec_fail(p, w->col, "this argument name is already used");
	}

	colon = memchr(body, ':', blen);
	if (blen > UKP_SPEC_ARGSTR_MAX)
		return spec_fail(p, bcol, "argument expression is too long (at most %d characters)",
			    UKP_SPEC_ARGSTR_MAX);
	if (colon == body)
		return spec_fail(p, bcol, "no argument expression");
	if (parse_fetch(p, fa, body, colon ? (size_t)(colon - body) : blen, bcol, 0))
		return -1;

	if (colon) {
		const char *t = colon + 1;

		if (parse_type(p, fa, t, blen - (size_t)(t - body), bcol + (int)(t - body)))
			return -1;
	} else if (fa->base == UKP_FA_COMM) {
		set_type(fa, ukp_fetch_type_find(UKP_TY_STRING, UKP_SPEC_STR_SLOT));
	} else if (spec->is_sdt && fa->base == UKP_FA_ARG) {
		spec_sdt_type(p, fa, false, bcol);
	} else if (fa->base == UKP_FA_DURATION) {
		/* a number of nanoseconds: decimal */
		set_type(fa, ukp_fetch_type_find(UKP_TY_U, 8));
	} else if (fa->base == UKP_FA_GOID) {
		/* Go's int64, as the runtime prints it */
		set_type(fa, ukp_fetch_type_find(UKP_TY_S, 8));
	} else {
		/* The kernel's default on 64-bit: x64. */
		set_type(fa, ukp_fetch_type_find(UKP_TY_X, 8));
	}

	fa->plain_reg = fa->base == UKP_FA_REG && !fa->nderef && !fa->bf_width &&
			!ukp_fetch_type_of(fa)->is_string;
	fa->off = spec->payload;
	if (spec->payload + ukp_fetch_type_of(fa)->slot > UKP_SPEC_PAYLOAD_MAX)
		return spec_fail(p, w->col,
			    "too many arguments: an event holds %d bytes (8 a number, %d a string)",
			    UKP_SPEC_PAYLOAD_MAX, UKP_SPEC_STR_SLOT);
	spec->payload += ukp_fetch_type_of(fa)->slot;
	if (fa->base == UKP_FA_DURATION)
		spec->uses_duration = true;
	spec->nargs++;
	return 0;
}
