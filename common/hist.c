/* SPDX-License-Identifier: MIT */
/*
 * hist.c - the hist trigger's parser (hist.h): the kernel's syntax and
 * its error cases, reported at the column of the faulty part. Plain C;
 * not for signal context.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_types.h"
#include "filter.h"
#include "hist.h"

struct hp {
	const char *s;            /* the whole trigger */
	struct ukp_spec_error *err;
	const struct ukp_spec *spec;
	struct ukp_hist *h;
};

static int fail(struct hp *p, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct hp *p, const char *at, const char *fmt, ...)
{
	va_list ap;

	p->err->col = (int)(at - p->s);
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static const char *const mod_names[] = {
	[UKP_HM_HEX] = "hex", [UKP_HM_SYM] = "sym", [UKP_HM_SYMOFF] = "sym-offset",
	[UKP_HM_LOG2] = "log2", [UKP_HM_BUCKETS] = "buckets", [UKP_HM_EXECNAME] = "execname",
};

/* FIELD[.MOD] in [b, e): a key (is_key) or a val. */
static int parse_field(struct hp *p, const char *b, const char *e, bool is_key,
		       struct ukp_hist_field *f)
{
	const char *dot = memchr(b, '.', (size_t)(e - b)), *ne = dot ? dot : e;
	size_t len = (size_t)(ne - b);
	int i;

	memset(f, 0, sizeof(*f));
	if (!len)
		return fail(p, b, "empty field name");
	if (len > UKP_SPEC_ARGNAME_MAX)
		return fail(p, b, "field name is too long");
	memcpy(f->name, b, len);
	if (len == 8 && !memcmp(b, "hitcount", 8)) {
		if (is_key)
			return fail(p, b, "hitcount can not be a key");
		f->arg = UKP_HIST_HITCOUNT;
	} else if (len == 10 && !memcmp(b, "common_pid", 10)) {
		f->arg = UKP_HIST_PID;
		f->size = 8;
		p->h->uses_pid = true;
	} else if (len == 4 && !memcmp(b, "comm", 4)) {
		f->arg = UKP_HIST_COMM;
		f->is_string = true;
		f->size = 16;
		p->h->uses_comm = true;
	} else {
		for (i = 0; i < p->spec->nargs; i++)
			if (strlen(p->spec->args[i].name) == len &&
			    !memcmp(p->spec->args[i].name, b, len))
				break;
		if (i == p->spec->nargs)
			return fail(p, b, "the event has no field '%s' (its fetch arguments, "
				    "common_pid, comm%s)", f->name, is_key ? "" : ", hitcount");
		if (ukp_fetch_type_of(&p->spec->args[i])->type == UKP_TY_FLOAT)
			return fail(p, b, "'%s' is floating-point (%s): a hist takes integers and "
				    "strings", f->name, ukp_fetch_type_of(&p->spec->args[i])->name);
		f->arg = i;
		p->h->args_used |= 1u << i;
		f->is_string = ukp_fetch_type_of(&p->spec->args[i])->is_string;
		f->is_signed = ukp_fetch_type_of(&p->spec->args[i])->is_signed;
		f->size = f->is_string ? UKP_SPEC_STR_SLOT : p->spec->args[i].size;
	}
	if (!is_key && f->is_string)
		return fail(p, b, "'%s' is a string: a value must be a number", f->name);
	if (!dot)
		return 0;
	{
		const char *m = dot + 1, *eq = memchr(m, '=', (size_t)(e - m));
		size_t mlen = (size_t)((eq ? eq : e) - m);

		for (i = 1; i < (int)(sizeof(mod_names) / sizeof(mod_names[0])); i++)
			if (strlen(mod_names[i]) == mlen && !memcmp(m, mod_names[i], mlen))
				break;
		if (i == (int)(sizeof(mod_names) / sizeof(mod_names[0])))
			return fail(p, m, "unknown modifier (hex, sym, sym-offset, log2, "
				    "buckets=N, execname)");
		f->mod = (enum ukp_hist_mod)i;
		if (f->arg == UKP_HIST_HITCOUNT)
			return fail(p, m, "hitcount takes no modifier");
		if (!is_key && f->mod != UKP_HM_HEX)
			return fail(p, m, "a value takes only .hex");
		if (f->is_string)
			return fail(p, m, "'%s' is a string: no modifier", f->name);
		if (f->mod == UKP_HM_EXECNAME && f->arg != UKP_HIST_PID)
			return fail(p, m, ".execname is for common_pid");
		if (f->mod == UKP_HM_BUCKETS) {
			char *end;

			if (!eq || eq + 1 == e || eq[1] < '1' || eq[1] > '9')
				return fail(p, eq ? eq + 1 : e, "buckets=N needs a size N from 1");
			f->buckets = strtoull(eq + 1, &end, 10);
			if (end != e || !f->buckets)
				return fail(p, eq + 1, "invalid bucket size");
		} else if (eq) {
			return fail(p, eq, "only buckets takes a value");
		}
		if (f->mod == UKP_HM_EXECNAME) {
			p->h->execname = true;
			p->h->uses_comm = true;
		}
	}
	return 0;
}

/* A comma-separated list in [b, e). */
static int parse_list(struct hp *p, const char *b, const char *e, bool is_key)
{
	struct ukp_hist *h = p->h;

	if (b == e)
		return fail(p, b, is_key ? "no keys" : "no values");
	while (b <= e) {
		const char *c = memchr(b, ',', (size_t)(e - b)), *fe = c ? c : e;
		struct ukp_hist_field f;

		if (parse_field(p, b, fe, is_key, &f))
			return -1;
		if (is_key) {
			if (h->nkeys == UKP_HIST_MAX_KEYS)
				return fail(p, b, "too many keys (at most %d)", UKP_HIST_MAX_KEYS);
			f.off = h->key_bytes;
			h->key_bytes += f.is_string ? (f.size + 7) & ~7u : 8;
			h->keys[h->nkeys++] = f;
		} else if (f.arg != UKP_HIST_HITCOUNT) {
			if (h->nvals == UKP_HIST_MAX_VALS)
				return fail(p, b, "too many values (at most %d)", UKP_HIST_MAX_VALS);
			h->vals[h->nvals++] = f;
		}
		if (!c)
			break;
		b = c + 1;
	}
	return 0;
}

static int parse_sort(struct hp *p, const char *b, const char *e)
{
	struct ukp_hist *h = p->h;

	if (b == e)
		return fail(p, b, "no sort key");
	while (b <= e) {
		const char *c = memchr(b, ',', (size_t)(e - b)), *fe = c ? c : e;
		const char *dot = memchr(b, '.', (size_t)(fe - b)), *ne = dot ? dot : fe;
		size_t len = (size_t)(ne - b);
		struct ukp_hist_sort s = { -2, false };
		int i;

		if (h->nsort == UKP_HIST_MAX_SORT)
			return fail(p, b, "too many sort keys (at most %d)", UKP_HIST_MAX_SORT);
		if (len == 8 && !memcmp(b, "hitcount", 8))
			s.key = -1;
		for (i = 0; s.key == -2 && i < h->nkeys; i++)
			if (strlen(h->keys[i].name) == len && !memcmp(h->keys[i].name, b, len))
				s.key = i;
		for (i = 0; s.key == -2 && i < h->nvals; i++)
			if (strlen(h->vals[i].name) == len && !memcmp(h->vals[i].name, b, len))
				s.key = h->nkeys + i;
		if (s.key == -2)
			return fail(p, b, "sort by a key, a value or hitcount");
		if (dot) {
			size_t ml = (size_t)(fe - dot - 1);

			if (ml == 10 && !memcmp(dot + 1, "descending", 10))
				s.descending = true;
			else if (!(ml == 9 && !memcmp(dot + 1, "ascending", 9)))
				return fail(p, dot + 1, "a sort key takes .descending or .ascending");
		}
		h->sort[h->nsort++] = s;
		if (!c)
			break;
		b = c + 1;
	}
	return 0;
}

static void info_field(char *buf, size_t len, const struct ukp_hist_field *f)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s", f->name);
	n = strlen(buf);
	if (f->mod == UKP_HM_BUCKETS)
		snprintf(buf + n, len - n, ".buckets=%llu", (unsigned long long)f->buckets);
	else if (f->mod != UKP_HM_NONE)
		snprintf(buf + n, len - n, ".%s", mod_names[f->mod]);
}

/* The kernel's "# trigger info:" text. */
static char *make_info(const struct ukp_hist *h, const char *filter)
{
	char buf[1024 + UKP_FILTER_TEXT_MAX];
	size_t n;
	int i;

	snprintf(buf, sizeof(buf), "hist:keys=");
	for (i = 0; i < h->nkeys; i++) {
		if (i)
			strcat(buf, ",");
		info_field(buf, sizeof(buf), &h->keys[i]);
	}
	strcat(buf, ":vals=hitcount");
	for (i = 0; i < h->nvals; i++) {
		strcat(buf, ",");
		info_field(buf, sizeof(buf), &h->vals[i]);
	}
	strcat(buf, ":sort=");
	for (i = 0; i < h->nsort; i++) {
		const struct ukp_hist_sort *s = &h->sort[i];

		if (i)
			strcat(buf, ",");
		strcat(buf, s->key < 0 ? "hitcount" : s->key < h->nkeys ? h->keys[s->key].name
						       : h->vals[s->key - h->nkeys].name);
		if (s->descending)
			strcat(buf, ".descending");
	}
	n = strlen(buf);
	snprintf(buf + n, sizeof(buf) - n, ":size=%u", h->size);
	if (filter) {
		n = strlen(buf);
		snprintf(buf + n, sizeof(buf) - n, " if %s", filter);
	}
	return strdup(buf);
}

int ukp_hist_parse(const char *text, int col, struct ukp_spec *spec, struct ukp_spec_error *err)
{
	struct hp p = { text - col, err, spec, NULL };
	const char *s = text, *end, *filter = NULL, *sort_b = NULL, *sort_e = NULL;
	bool have_keys = false, have_vals = false, have_sort = false, have_size = false;
	unsigned long long size = UKP_HIST_DEFAULT_SIZE;

	if (spec->hist)
		return fail(&p, s, "this event has a hist trigger already");
	p.h = calloc(1, sizeof(*p.h));
	if (!p.h)
		return fail(&p, s, "out of memory");
	/* the parameters end at the first blank: " if FILTER" may follow */
	for (end = s; *end && *end != ' ' && *end != '\t'; end++)
		;
	if (*s != ':' || s + 1 == end) {
		fail(&p, s, "hist needs keys (hist:keys=FIELD[,FIELD]...)");
		goto bad;
	}
	s++;
	while (s < end) {
		const char *c = memchr(s, ':', (size_t)(end - s)), *pe = c ? c : end;
		const char *eq = memchr(s, '=', (size_t)(pe - s));
		size_t nl = eq ? (size_t)(eq - s) : (size_t)(pe - s);

		if (!eq) {
			fail(&p, s, (nl == 5 && !memcmp(s, "pause", 5)) ||
					    (nl == 4 && !memcmp(s, "cont", 4)) ||
					    (nl == 5 && !memcmp(s, "clear", 5))
				    ? "pause, cont and clear are for a running hist: not supported"
				    : "expected keys=, vals=, sort= or size=");
			goto bad;
		}
		if ((nl == 4 && !memcmp(s, "keys", 4)) || (nl == 3 && !memcmp(s, "key", 3))) {
			if (have_keys) {
				fail(&p, s, "keys given twice");
				goto bad;
			}
			have_keys = true;
			if (parse_list(&p, eq + 1, pe, true))
				goto bad;
		} else if ((nl == 4 && !memcmp(s, "vals", 4)) ||
			   (nl == 6 && !memcmp(s, "values", 6))) {
			if (have_vals) {
				fail(&p, s, "vals given twice");
				goto bad;
			}
			have_vals = true;
			if (parse_list(&p, eq + 1, pe, false))
				goto bad;
		} else if (nl == 4 && !memcmp(s, "sort", 4)) {
			if (have_sort) {
				fail(&p, s, "sort given twice");
				goto bad;
			}
			/* after the keys and vals, wherever it is written */
			have_sort = true;
			sort_b = eq + 1;
			sort_e = pe;
		} else if (nl == 4 && !memcmp(s, "size", 4)) {
			char *e;

			if (have_size || eq[1] < '1' || eq[1] > '9') {
				fail(&p, eq + 1, have_size ? "size given twice" : "size needs a number");
				goto bad;
			}
			have_size = true;
			size = strtoull(eq + 1, &e, 10);
			if (e != pe || size > UKP_HIST_MAX_SIZE) {
				fail(&p, eq + 1, "invalid size (1 to %u)", UKP_HIST_MAX_SIZE);
				goto bad;
			}
		} else if (nl == 4 && !memcmp(s, "name", 4)) {
			fail(&p, s, "named (shared) histograms are not supported");
			goto bad;
		} else {
			fail(&p, s, "expected keys=, vals=, sort= or size=");
			goto bad;
		}
		s = pe + 1;
	}
	if (!have_keys) {
		fail(&p, text + 1, "hist needs keys (hist:keys=FIELD[,FIELD]...)");
		goto bad;
	}
	if (have_sort) {
		if (parse_sort(&p, sort_b, sort_e))
			goto bad;
	} else {
		p.h->sort[p.h->nsort++] = (struct ukp_hist_sort){ -1, false };
	}
	for (p.h->size = 1; p.h->size < size; p.h->size *= 2)
		;
	/* " if FILTER": the trigger's own filter */
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end) {
		if (strncmp(end, "if", 2) || (end[2] != ' ' && end[2] != '\t')) {
			fail(&p, end, "unexpected text after the trigger (if FILTER?)");
			goto bad;
		}
		filter = end + 3;
		while (*filter == ' ' || *filter == '\t')
			filter++;
		if (ukp_filter_compile(filter, spec, &p.h->filter, err)) {
			err->col += (int)(filter - p.s);
			goto bad;
		}
		p.h->uses_pid |= p.h->filter->uses_pid;
		p.h->uses_comm |= p.h->filter->uses_comm;
		p.h->args_used |= p.h->filter->args_used;
	}
	p.h->info = make_info(p.h, filter);
	if (!p.h->info) {
		fail(&p, text, "out of memory");
		goto bad;
	}
	spec->hist = p.h;
	return 0;
bad:
	ukp_hist_free(p.h);
	return -1;
}
