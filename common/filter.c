/* SPDX-License-Identifier: MIT */
/*
 * filter.c - the event filter compiler (filter.h): plain C, malloc; not
 * for signal context. The CLI's only: the agent gets filters compiled
 * (spec_wire.h) and runs them with filter_run.c.
 *
 * Grammar, with && binding tighter than || (as the kernel's):
 *
 *   or   := and ( "||" and )*
 *   and  := not ( "&&" not )*
 *   not  := "!" not | "(" or ")" | pred
 *   pred := FIELD OP VALUE
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_types.h"
#include "filter.h"

#define MAX_DEPTH 64 /* nested parentheses and '!' */

struct fparser {
	const char *s;
	size_t pos;
	int depth;
	const struct ukp_spec *spec;
	struct ukp_filter *f;
	struct ukp_spec_error *err;
};

static int fail(struct fparser *p, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct fparser *p, size_t col, const char *fmt, ...)
{
	va_list ap;

	p->err->col = (int)col;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static void skip_space(struct fparser *p)
{
	while (is_space(p->s[p->pos]))
		p->pos++;
}

static int emit(struct fparser *p, enum ukp_filter_insn kind, int pred)
{
	struct ukp_filter *f = p->f;

	if (f->ninsns >= (int)(sizeof(f->insns) / sizeof(f->insns[0])))
		return fail(p, p->pos, "too many terms in the filter (at most %d)",
			    UKP_FILTER_MAX_PREDS);
	f->insns[f->ninsns++] = (uint32_t)kind | ((uint32_t)pred << 8);
	return 0;
}

/* The fields an error message lists. */
static void field_list(const struct ukp_spec *spec, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < spec->nargs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s, ", spec->args[i].name);
	if (n < len)
		snprintf(buf + n, len - n, "common_pid, comm");
}

static int parse_value_string(struct fparser *p, struct ukp_filter_pred *pr)
{
	const char *s = p->s;
	size_t start = p->pos, b, e;

	if (s[start] == '"' || s[start] == '\'') {
		const char *q = strchr(s + start + 1, s[start]);

		if (!q)
			return fail(p, start, "missing matching quote");
		b = start + 1;
		e = (size_t)(q - s);
		p->pos = e + 1;
	} else {
		e = start;
		while (s[e] && !is_space(s[e]) && s[e] != '(' && s[e] != ')' && s[e] != '&' &&
		       s[e] != '|')
			e++;
		if (e == start)
			return fail(p, start, "expected a string value");
		b = start;
		p->pos = e;
	}
	if (e - b >= sizeof(pr->str))
		return fail(p, start, "string value too long (at most %zu characters)",
			    sizeof(pr->str) - 1);
	memcpy(pr->str, s + b, e - b);
	pr->str[e - b] = '\0';
	return 0;
}

static int parse_value_number(struct fparser *p, struct ukp_filter_pred *pr, const char *field)
{
	const char *s = p->s;
	size_t start = p->pos, e = start;
	char buf[32], *end;

	if (s[e] == '-' || s[e] == '+')
		e++;
	while (is_word(s[e]))
		e++;
	if (e == start)
		return fail(p, start, "expected a number");
	if (e - start >= sizeof(buf))
		return fail(p, start, "invalid number");
	memcpy(buf, s + start, e - start);
	buf[e - start] = '\0';
	errno = 0;
	if (pr->is_signed) {
		long long v = strtoll(buf, &end, 0);

		pr->val = (uint64_t)v;
	} else {
		if (buf[0] == '-')
			return fail(p, start, "%s is unsigned: a negative value never matches", field);
		pr->val = strtoull(buf, &end, 0);
	}
	if (errno || *end || end == buf)
		return fail(p, start, "invalid number");
	p->pos = e;
	return 0;
}

static const struct {
	const char *text;
	enum ukp_filter_op op;
} ops[] = {
	/* two-character operators first */
	{ "==", UKP_FOP_EQ }, { "!=", UKP_FOP_NE }, { "<=", UKP_FOP_LE }, { ">=", UKP_FOP_GE },
	{ "<", UKP_FOP_LT }, { ">", UKP_FOP_GT }, { "&", UKP_FOP_AND }, { "~", UKP_FOP_GLOB },
};

static int parse_pred(struct fparser *p)
{
	struct ukp_filter *f = p->f;
	struct ukp_filter_pred *pr;
	size_t start = p->pos, len, i, opcol;
	char name[UKP_SPEC_ARGNAME_MAX + 1];
	int a;

	while (is_word(p->s[p->pos]))
		p->pos++;
	len = p->pos - start;
	if (!len)
		return fail(p, start, p->s[start] ? "expected a field name" : "expected a predicate");
	if (f->npreds >= UKP_FILTER_MAX_PREDS)
		return fail(p, start, "too many terms in the filter (at most %d)",
			    UKP_FILTER_MAX_PREDS);
	pr = &f->preds[f->npreds];
	snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1),
		 p->s + start);
	for (a = 0; a < p->spec->nargs; a++)
		if (strlen(p->spec->args[a].name) == len &&
		    !memcmp(p->spec->args[a].name, p->s + start, len))
			break;
	if (a < p->spec->nargs) {
		const struct ukp_fetcharg *fa = &p->spec->args[a];

		if (ukp_fetch_type_of(fa)->type == UKP_TY_FLOAT)
			return fail(p, start, "'%s' is floating-point (%s): a filter compares "
				    "integers and strings", name, ukp_fetch_type_of(fa)->name);
		pr->arg = a;
		p->f->args_used |= 1u << a;
		pr->is_string = ukp_fetch_type_of(fa)->is_string;
		pr->is_signed = ukp_fetch_type_of(fa)->is_signed && !fa->bf_width;
		pr->size = fa->bf_width ? 8 : fa->size;
	} else if (len == 10 && !memcmp(p->s + start, "common_pid", 10)) {
		pr->arg = UKP_FILTER_PID;
		pr->is_signed = true;
		pr->size = 4;
		f->uses_pid = true;
	} else if (len == 4 && !memcmp(p->s + start, "comm", 4)) {
		pr->arg = UKP_FILTER_COMM;
		pr->is_string = true;
		f->uses_comm = true;
	} else {
		char fields[160];

		field_list(p->spec, fields, sizeof(fields));
		return fail(p, start, "event %s has no field %.*s (fields: %s)", p->spec->event,
			    (int)len, p->s + start, fields);
	}
	skip_space(p);
	opcol = p->pos;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strncmp(p->s + p->pos, ops[i].text, strlen(ops[i].text)))
			break;
	if (i == sizeof(ops) / sizeof(ops[0]))
		return fail(p, opcol, "expected an operator (== != < <= > >= & ~)");
	pr->op = ops[i].op;
	p->pos += strlen(ops[i].text);
	if (pr->is_string && pr->op != UKP_FOP_EQ && pr->op != UKP_FOP_NE && pr->op != UKP_FOP_GLOB)
		return fail(p, opcol, "%s is a string: it takes == != ~", name);
	if (!pr->is_string && pr->op == UKP_FOP_GLOB)
		return fail(p, opcol, "%s is a number: ~ is for strings", name);
	skip_space(p);
	if (pr->is_string ? parse_value_string(p, pr) : parse_value_number(p, pr, name))
		return -1;
	f->npreds++;
	return emit(p, UKP_FI_PRED, f->npreds - 1);
}

static int parse_or(struct fparser *p);

static int parse_not(struct fparser *p)
{
	int ret;

	skip_space(p);
	if (++p->depth > MAX_DEPTH)
		return fail(p, p->pos, "too deeply nested (at most %d levels)", MAX_DEPTH);
	if (p->s[p->pos] == '!' && p->s[p->pos + 1] != '=') {
		p->pos++;
		ret = parse_not(p);
		if (!ret)
			ret = emit(p, UKP_FI_NOT, 0);
	} else if (p->s[p->pos] == '(') {
		size_t open = p->pos++;

		ret = parse_or(p);
		if (!ret) {
			skip_space(p);
			if (p->s[p->pos] != ')')
				ret = fail(p, p->s[p->pos] ? p->pos : open,
					   p->s[p->pos] ? "expected && || or )" : "this ( is not closed");
			else
				p->pos++;
		}
	} else {
		ret = parse_pred(p);
	}
	p->depth--;
	return ret;
}

static int parse_and(struct fparser *p)
{
	if (parse_not(p))
		return -1;
	for (;;) {
		skip_space(p);
		if (strncmp(p->s + p->pos, "&&", 2))
			return 0;
		p->pos += 2;
		if (parse_not(p) || emit(p, UKP_FI_AND, 0))
			return -1;
	}
}

static int parse_or(struct fparser *p)
{
	if (parse_and(p))
		return -1;
	for (;;) {
		skip_space(p);
		if (strncmp(p->s + p->pos, "||", 2))
			return 0;
		p->pos += 2;
		if (parse_and(p) || emit(p, UKP_FI_OR, 0))
			return -1;
	}
}

int ukp_filter_compile(const char *text, const struct ukp_spec *spec, struct ukp_filter **out,
		       struct ukp_spec_error *err)
{
	struct fparser p = { .s = text, .spec = spec, .err = err };
	size_t i, len = strlen(text);

	memset(err, 0, sizeof(*err));
	*out = NULL;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return fail(&p, i, "control character in the filter");
	}
	if (len > UKP_FILTER_TEXT_MAX)
		return fail(&p, UKP_FILTER_TEXT_MAX, "filter too long (at most %d characters)",
			    UKP_FILTER_TEXT_MAX);
	skip_space(&p);
	if (!text[p.pos])
		return fail(&p, p.pos, "empty filter");
	p.f = calloc(1, sizeof(*p.f));
	if (!p.f)
		return fail(&p, 0, "out of memory");
	if (parse_or(&p))
		goto bad;
	skip_space(&p);
	if (text[p.pos]) {
		fail(&p, p.pos, text[p.pos] == ')' ? "this ) has no (" : "expected && or ||");
		goto bad;
	}
	for (i = 0; i < (size_t)spec->nargs; i++)
		if (spec->args[i].base == UKP_FA_COMM)
			p.f->uses_comm = true; /* the fetch copies the thread's name */
	*out = p.f;
	return 0;
bad:
	free(p.f);
	return -1;
}
