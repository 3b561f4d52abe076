/* SPDX-License-Identifier: MIT */
/*
 * filter.c - event filters (filter.h): the compiler (plain C, malloc;
 * not for signal context) and the evaluator ([hit]: no allocation, no
 * library call that is not async-signal-safe).
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

/* ------------------------------------------------------------ [hit] */

bool ukp_filter_glob(const char *pat, const char *str, size_t len)
{
	const char *back_pat = NULL;
	size_t i = 0, back_i = 0;

	for (;;) {
		unsigned char c = i < len ? (unsigned char)str[i] : 0;
		unsigned char d = (unsigned char)*pat++;

		i++;
		switch (d) {
		case '?':
			if (!c)
				return false;
			continue;
		case '*':
			if (!*pat)
				return true;
			back_pat = pat;
			back_i = --i; /* the * may match nothing */
			continue;
		case '[': {
			bool match = false, inverted = *pat == '!';
			const char *cls = pat + inverted;
			unsigned char a = (unsigned char)*cls++;

			/* spans a or a-b; the first may be ']' */
			do {
				unsigned char b = a;

				if (!a)
					goto literal; /* not closed: a plain '[' */
				if (cls[0] == '-' && cls[1] != ']') {
					b = (unsigned char)cls[1];
					if (!b)
						goto literal;
					cls += 2;
				}
				match |= a <= c && c <= b;
			} while ((a = (unsigned char)*cls++) != ']');
			if (match == inverted || !c)
				goto backtrack;
			pat = cls;
			continue;
		}
		case '\\':
			if (*pat)
				d = (unsigned char)*pat++;
			break;
		default:
			break;
		}
literal:
		if (c == d) {
			if (!d)
				return true;
			continue;
		}
backtrack:
		if (!c || !back_pat)
			return false;
		pat = back_pat;
		i = ++back_i;
	}
}

/* [hit] No libc string functions from here on: the agent runs this in
 * the traced thread, where its handlers must leave the vector state
 * alone (libc's str and mem functions use vector registers). */
static bool pred_string(const struct ukp_filter_pred *pr, const char *s, size_t max)
{
	size_t n = 0, i;
	bool eq = true;

	while (n < max && s[n])
		n++;
	if (pr->op == UKP_FOP_GLOB)
		return ukp_filter_glob(pr->str, s, n);
	for (i = 0; i < n && eq; i++)
		eq = pr->str[i] == s[i];
	eq = eq && !pr->str[n];
	return pr->op == UKP_FOP_EQ ? eq : !eq;
}

static bool pred_number(const struct ukp_filter_pred *pr, uint64_t v)
{
	if (pr->is_signed) {
		int64_t sv = (int64_t)v, w = (int64_t)pr->val;

		if (pr->size < 8) { /* sign-extend the field's bytes */
			unsigned int sh = 64 - 8 * pr->size;

			sv = (int64_t)(v << sh) >> sh;
		}
		switch (pr->op) {
		case UKP_FOP_EQ: return sv == w;
		case UKP_FOP_NE: return sv != w;
		case UKP_FOP_LT: return sv < w;
		case UKP_FOP_LE: return sv <= w;
		case UKP_FOP_GT: return sv > w;
		case UKP_FOP_GE: return sv >= w;
		case UKP_FOP_AND: return (v & pr->val) != 0;
		default: return false;
		}
	}
	switch (pr->op) {
	case UKP_FOP_EQ: return v == pr->val;
	case UKP_FOP_NE: return v != pr->val;
	case UKP_FOP_LT: return v < pr->val;
	case UKP_FOP_LE: return v <= pr->val;
	case UKP_FOP_GT: return v > pr->val;
	case UKP_FOP_GE: return v >= pr->val;
	case UKP_FOP_AND: return (v & pr->val) != 0;
	default: return false;
	}
}

bool ukp_filter_pred_number(const struct ukp_filter_pred *pr, uint64_t v)
{
	return pred_number(pr, v);
}

static bool pred_run(const struct ukp_filter_pred *pr, const unsigned char *data,
		     uint32_t faults, const char *comm, int pid, const struct ukp_spec *spec)
{
	if (pr->arg == UKP_FILTER_PID)
		return pred_number(pr, (uint64_t)(uint32_t)pid);
	if (pr->arg == UKP_FILTER_COMM)
		return pred_string(pr, comm, 16);
	if (pr->is_string) {
		if (faults & (1u << pr->arg))
			return pred_string(pr, "", 1);
		return pred_string(pr, (const char *)data + spec->args[pr->arg].off,
				   UKP_SPEC_STR_SLOT);
	} else {
		uint64_t v = 0;

		if (!(faults & (1u << pr->arg))) {
			/* one load (a byte loop is not merged into one here):
			 * slots are 8 bytes, little-endian; the type may alias
			 * the record's bytes */
			typedef uint64_t __attribute__((may_alias, aligned(1))) u64_any;

			v = *(const u64_any *)(const void *)(data + spec->args[pr->arg].off);
		}
		return pred_number(pr, v);
	}
}

/* Filters of more than one comparison: the evaluation stack (out of
 * line, so that a one-comparison filter does not set up its frame) */
static __attribute__((noinline)) bool run_stack(const struct ukp_filter *f,
						const struct ukp_spec *spec,
						const unsigned char *data, uint32_t faults,
						const char *comm, int pid)
{
	bool stack[UKP_FILTER_MAX_PREDS];
	int sp = 0, i;

	for (i = 0; i < f->ninsns; i++) {
		uint32_t insn = f->insns[i];

		switch ((enum ukp_filter_insn)(insn & 0xff)) {
		case UKP_FI_PRED:
			stack[sp++] = pred_run(&f->preds[insn >> 8], data, faults, comm, pid, spec);
			break;
		case UKP_FI_AND:
			sp--;
			stack[sp - 1] = stack[sp - 1] && stack[sp];
			break;
		case UKP_FI_OR:
			sp--;
			stack[sp - 1] = stack[sp - 1] || stack[sp];
			break;
		case UKP_FI_NOT:
			stack[sp - 1] = !stack[sp - 1];
			break;
		}
	}
	return sp == 1 && stack[0];
}

bool ukp_filter_run(const struct ukp_filter *f, const struct ukp_spec *spec,
		    const unsigned char *data, uint32_t faults, const char *comm, int pid)
{
	/* the common case, one comparison: no evaluation stack */
	if (f->ninsns == 1)
		return pred_run(&f->preds[0], data, faults, comm, pid, spec);
	return run_stack(f, spec, data, faults, comm, pid);
}

/* ------------------------------------------------------------ wire */

int ukp_spec_parse_line(const char *line, struct ukp_spec *spec, struct ukp_spec_error *err,
			bool *err_in_option)
{
	const char *sep = strchr(line, UKP_FILTER_SEP);
	char *head;
	int ret;

	if (err_in_option)
		*err_in_option = false;
	if (!sep)
		return ukp_spec_parse(line, spec, err);
	head = strndup(line, (size_t)(sep - line));
	if (!head) {
		memset(spec, 0, sizeof(*spec));
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -1;
	}
	ret = ukp_spec_parse(head, spec, err);
	free(head);
	if (ret)
		return -1;
	while (sep) {
		const char *opt = sep + 1, *next = strchr(opt, UKP_FILTER_SEP);
		char tag = *opt, *text, **keep;

		if (tag != 'F' && tag != 'T') {
			memset(err, 0, sizeof(*err));
			snprintf(err->msg, sizeof(err->msg), "unknown event option");
			goto bad;
		}
		text = strndup(opt + 1, next ? (size_t)(next - opt - 1) : strlen(opt + 1));
		if (!text) {
			snprintf(err->msg, sizeof(err->msg), "out of memory");
			goto bad;
		}
		if (tag == 'F' && !spec->filter) {
			ret = ukp_filter_compile(text, spec, &spec->filter, err);
			keep = &spec->filter_text;
		} else if (tag == 'T' && !spec->trigger_text) {
			ret = ukp_trigger_parse(text, spec, err);
			keep = &spec->trigger_text;
		} else {
			memset(err, 0, sizeof(*err));
			snprintf(err->msg, sizeof(err->msg), "repeated event option");
			ret = -1;
		}
		if (ret) {
			free(text);
			if (err_in_option)
				*err_in_option = true;
			goto bad;
		}
		*keep = text;
		sep = next;
	}
	return 0;
bad:
	ukp_spec_free(spec);
	return -1;
}
