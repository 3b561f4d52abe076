/* SPDX-License-Identifier: MIT */
/*
 * spec.c - parser of probe definitions (see spec.h): the words, the probe
 * type and event name, the probe point; the fetch arguments are
 * spec_fetch.c's.
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

#include "hist.h"
#include "spec_parse.h"

int spec_fail(struct parser *p, int col, const char *fmt, ...)
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

bool spec_good_name(const char *s, size_t len)
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
bool spec_parse_udec(const char *s, size_t len, unsigned long *out)
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
bool spec_parse_unum(const char *s, size_t len, unsigned long *out)
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


/* ------------------------------------------------------------ words */

static int split_words(struct parser *p, const char *text, struct word *w, int max)
{
	int n = 0;
	size_t i = 0, len = strlen(text);

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return spec_fail(p, (int)i, "control character in the definition");
	}
	i = 0;
	while (i < len) {
		size_t start;

		while (i < len && (text[i] == ' ' || text[i] == '\t'))
			i++;
		if (i == len)
			break;
		start = i;
		/* "..." keeps blanks in a word (a C++ name's parameters) */
		while (i < len && text[i] != ' ' && text[i] != '\t') {
			if (text[i++] != '"')
				continue;
			while (i < len && text[i] != '"')
				i++;
			if (i == len)
				return spec_fail(p, (int)start, "the quote is not closed");
			i++;
		}
		if (n == max)
			return spec_fail(p, (int)start, "too many arguments (at most %d)", UKP_SPEC_MAX_ARGS);
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
			return spec_fail(p, col, "group name is not specified");
		if (glen > UKP_SPEC_NAME_MAX)
			return spec_fail(p, col, "group name is too long (at most %d characters)",
				    UKP_SPEC_NAME_MAX);
		if (!spec_good_name(s, glen))
			return spec_fail(p, col, "group name must follow the rules of C identifiers");
		memcpy(spec->group, s, glen);
		spec->group[glen] = '\0';
		ev = slash + 1;
		evlen = len - glen - 1;
		evcol = col + (int)glen + 1;
	}
	if (!evlen)
		return spec_fail(p, evcol, "event name is not specified");
	if (evlen > UKP_SPEC_NAME_MAX)
		return spec_fail(p, evcol, "event name is too long (at most %d characters)",
			    UKP_SPEC_NAME_MAX);
	if (!spec_good_name(ev, evlen))
		return spec_fail(p, evcol, "event name must follow the rules of C identifiers");
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
	else if (w->s[0] == 'w')
		spec->is_watch = true;
	else
		return spec_fail(p, w->col, "probe type must be 'p' (probe), 'r' (return probe) "
				 "or 'w' (watchpoint)");

	if (mlen) {
		unsigned long v;

		if (!spec->is_return)
			return spec_fail(p, w->col + 1, "maxactive is only for return probes");
		/* (a w SPEC gets here too) */
		if (!spec_parse_udec(w->s + 1, mlen, &v) || v == 0)
			return spec_fail(p, w->col + 1, "invalid maxactive number");
		if (v > UKP_SPEC_MAXACTIVE_MAX)
			return spec_fail(p, w->col + 1, "maxactive is too big (at most %d)",
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

bool spec_sym_char(char c)
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
	if (!spec_parse_unum(a, (size_t)(q - a), &spec->addr))
		return spec_fail(p, spec->sym_col, "invalid address");
	spec->is_addr = true;
	spec->off_col = w->col + (int)(q - w->s);
	if (q < end)
		return spec_fail(p, spec->off_col, "an address takes no offset");
	return 0;
}

/* A watchpoint's "[/LEN][:r|w|rw]" at the end of the point: parsed and
 * cut off w (the rest is an ordinary point). */
static int parse_watch_suffix(struct parser *p, struct word *w)
{
	struct ukp_spec *spec = p->spec;
	const char *s = w->s;
	size_t n = w->len, i;

	spec->watch_type = 3; /* rw */
	for (i = n; i > 0 && s[i - 1] != ':' && s[i - 1] != '/' && s[i - 1] != '+'; i--)
		;
	if (i > 0 && s[i - 1] == ':' && (n - i == 1 || n - i == 2) &&
	    (!memcmp(s + i, "r", n - i) || !memcmp(s + i, "w", n - i) || !memcmp(s + i, "rw", n - i))) {
		spec->watch_type = n - i == 2 ? 3 : s[i] == 'r' ? 1 : 2;
		n = i - 1;
	}
	for (i = n; i > 0 && s[i - 1] != '/' && s[i - 1] != ':'; i--)
		;
	if (i > 0 && s[i - 1] == '/') {
		unsigned long len;

		if (!spec_parse_unum(s + i, n - i, &len) || !len)
			return spec_fail(p, w->col + (int)i, "invalid watchpoint length");
		if (len > (1UL << 22))
			return spec_fail(p, w->col + (int)i, "watchpoint length is too big (at most %lu)",
					 1UL << 22);
		spec->watch_len = len;
		n = i - 1;
	}
	w->len = n;
	return 0;
}

/* Characters of a demangled C++ or Rust name, or of a Go name (its
 * package's path: net/http.(*conn).serve), besides spec_sym_char's
 * (blanks and '-' '+' only inside quotes). */
static bool cxx_char(char c)
{
	return c && strchr(":<>~,()&/", c);
}

/* "NAME" in [q, end) (q at the opening quote): the name as an fnmatch
 * pattern into spec->symbol ('*' and '?' stay wildcards; brackets and
 * backslashes are escaped: operator[]). Returns the closing quote. */
static const char *quoted_symbol(struct parser *p, const struct word *w, const char *q,
				 const char *end)
{
	struct ukp_spec *spec = p->spec;
	const char *close = memchr(q + 1, '"', (size_t)(end - q - 1)), *c;
	char *o;

	if (!close) {
		spec_fail(p, w->col + (int)(q - w->s), "the quote is not closed");
		return NULL;
	}
	if (close == q + 1) {
		spec_fail(p, w->col + (int)(q - w->s), "symbol is not specified");
		return NULL;
	}
	spec->symbol = o = malloc(2 * (size_t)(close - q) + 1);
	if (!o) {
		spec_fail(p, spec->sym_col, "out of memory");
		return NULL;
	}
	for (c = q + 1; c < close; c++) {
		if (*c == '*' || *c == '?')
			spec->is_glob = true;
		if (*c == '[' || *c == ']' || *c == '\\')
			*o++ = '\\';
		*o++ = *c;
	}
	*o = '\0';
	return close;
}

/* In OBJ:FILE:LINE or OBJ:FUNC:+N, the ':' before LINE (sym: after
 * OBJ's), or NULL. */
static const char *src_line_colon(const char *sym, const char *end)
{
	const char *c = end, *d;

	while (c > sym && c[-1] != ':')
		c--;
	if (c <= sym + 1 || c == end || (c - 2 >= sym && c[-2] == ':'))
		return NULL;
	d = c < end && *c == '+' ? c + 1 : c;
	if (d == end)
		return NULL;
	for (; d < end; d++)
		if (!isdigit((unsigned char)*d))
			return NULL;
	return c - 1;
}

/* OBJ:FILE:LINE or OBJ:FUNC:+N (the CLI finds their code in the object's
 * DWARF); colon is the one before LINE. */
static int parse_src_point(struct parser *p, const struct word *w, const char *sym,
			   const char *colon)
{
	struct ukp_spec *spec = p->spec;
	const char *end = w->s + w->len, *n = colon + 1;
	unsigned long line;

	spec->src_rel = *n == '+';
	n += spec->src_rel;
	spec->off_col = w->col + (int)(colon + 1 - w->s);
	if (!spec_parse_udec(n, (size_t)(end - n), &line) || line > UINT_MAX ||
	    (!line && !spec->src_rel))
		return spec_fail(p, spec->off_col, "invalid line number");
	if (spec->is_watch)
		return spec_fail(p, spec->sym_col, "a watchpoint takes a symbol or an address, "
				 "not a source line");
	if (spec->is_return)
		return spec_fail(p, spec->off_col, "return probe must be on a function entry, "
				 "not a source line");
	spec->symbol = strndup(sym, (size_t)(colon - sym));
	if (!spec->symbol)
		return spec_fail(p, spec->sym_col, "out of memory");
	/* line 0 of FUNC:+0 is its first line: keep src_line non-zero */
	spec->src_line = (unsigned int)line + spec->src_rel;
	return 0;
}

/* [OBJ:]SYM[+OFFS] or [OBJ:]0xADDR; SYM may be a demangled C++ or
 * Rust name ("..." when it has blanks, '+' or '-'), matched against
 * the demangled names of the object's functions. */
static int parse_point(struct parser *p, const struct word *w)
{
	struct ukp_spec *spec = p->spec;
	const char *s = w->s, *end = w->s + w->len, *colon = NULL, *sym, *q;
	size_t i;

	spec->point_col = w->col;
	if (spec_sdt_point(w))
		return spec_parse_sdt_point(p, w);
	/* OBJ ends at the first ':' that is not half of a "::" (outside
	 * quotes): libstdc++.so.6:std::foo */
	for (i = 0; i < w->len && s[i] != '"'; i++)
		if (s[i] == ':' && (i + 1 == w->len || s[i + 1] != ':') && (!i || s[i - 1] != ':')) {
			colon = s + i;
			break;
		}
	if (colon) {
		if (colon == s)
			return spec_fail(p, w->col, "object name is empty");
		spec->object = strndup(s, (size_t)(colon - s));
		if (!spec->object)
			return spec_fail(p, w->col, "out of memory");
		sym = colon + 1;
	} else {
		sym = s;
	}
	spec->sym_col = w->col + (int)(sym - s);
	if (sym == end || *sym == '+' || *sym == '-')
		return spec_fail(p, spec->sym_col, "symbol is not specified");
	if (colon && (q = src_line_colon(sym, end)))
		return parse_src_point(p, w, sym, q);
	if (isdigit((unsigned char)*sym))
		return parse_addr_point(p, w, sym);
	if (*sym == '"') {
		q = quoted_symbol(p, w, sym, end);
		if (!q)
			return -1;
		spec->cxx_name = true;
		q++;
		goto offset;
	}
	for (q = sym; q < end && *q != '+' && *q != '-'; q++) {
		if (*q == '*' || *q == '?') {
			spec->is_glob = true;
		} else if (*q == '[') {
			const char *close = glob_bracket_end(q, end);

			if (!close)
				return spec_fail(p, w->col + (int)(q - s), "glob bracket is not closed");
			spec->is_glob = true;
			q = close;
		} else if (cxx_char(*q)) {
			spec->cxx_name = true;
		} else if (*q == '"') {
			return spec_fail(p, w->col + (int)(q - s),
					 "a quoted symbol must be the whole symbol (OBJ:\"NAME\")");
		} else if (!spec_sym_char(*q)) {
			return spec_fail(p, w->col + (int)(q - s), "invalid character in the symbol name");
		}
	}
	spec->symbol = strndup(sym, (size_t)(q - sym));
	if (!spec->symbol)
		return spec_fail(p, spec->sym_col, "out of memory");
offset:
	/* a demangled name is matched as a pattern, as a glob is: one probe
	 * per function it names (overloads, clones) */
	if (spec->cxx_name)
		spec->is_glob = true;
	spec->off_col = w->col + (int)(q - s);
	if (q < end) {
		unsigned long off;

		if (*q == '-' && q + 1 < end && isdigit((unsigned char)q[1]) &&
		    spec_parse_unum(q + 1, (size_t)(end - q - 1), &off))
			return spec_fail(p, spec->off_col, "offset must not be negative");
		if (*q == '-' || !spec_parse_unum(q + 1, (size_t)(end - q - 1), &off) || off > UINT_MAX)
			return spec_fail(p, spec->off_col, "invalid offset");
		spec->offset = off;
	}
	if (spec->is_return && spec->offset)
		return spec_fail(p, spec->off_col, "return probe must be on a function entry (+0)");
	if (spec->is_watch && spec->is_glob)
		return spec_fail(p, spec->sym_col, "a watchpoint takes one symbol, not a glob");
	return 0;
}


/* ------------------------------------------------------ interface */

/*
 * The kernel's default event names, made C identifiers: p_SYM_OFFS and
 * r_SYM_0; p_0xADDR for an address; p_OBJ_0xADDR for an address in an
 * object (as uprobe_events' p_FILE_0xOFFSET, OBJ's file name cut at its
 * first '.'). A glob gets its names from its matches (the agent's).
 */
static void default_event(struct ukp_spec *spec)
{
	char c = spec->is_return ? 'r' : spec->is_watch ? 'w' : 'p';

	if (spec->is_glob) {
		spec->event[0] = '\0';
	} else if (spec->is_sdt) {
		/* perf's: NAME (the group is sdt_PROVIDER) */
		snprintf(spec->event, sizeof(spec->event), "%s", strchr(spec->symbol, ':') + 1);
	} else if (spec->is_addr && spec->object) {
		const char *base = strrchr(spec->object, '/');
		size_t blen;

		base = base ? base + 1 : spec->object;
		blen = strcspn(base, ".");
		snprintf(spec->event, sizeof(spec->event), "%c_%.*s_0x%lx", c, (int)blen, base,
			 spec->addr);
	} else if (spec->is_addr) {
		snprintf(spec->event, sizeof(spec->event), "%c_0x%lx", c, spec->addr);
	} else if (spec->src_line) {
		/* perf probe's: FUNC_L3 for FUNC:+3, FILE_42 */
		snprintf(spec->event, sizeof(spec->event), "%c_%s_%s%u", c, spec->symbol,
			 spec->src_rel ? "L" : "", spec->src_line - spec->src_rel);
	} else {
		snprintf(spec->event, sizeof(spec->event), "%c_%s_%lu", c, spec->symbol,
			 spec->offset);
	}
	spec_make_identifier(spec->event);
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
		spec_fail(&p, 0, "empty probe definition");
		goto bad;
	}
	if (parse_head(&p, &w[0]))
		goto bad;
	if (n < 2) {
		spec_fail(&p, (int)strlen(text), "probe point is not specified");
		goto bad;
	}
	if (spec->is_watch && parse_watch_suffix(&p, &w[1]))
		goto bad;
	if (parse_point(&p, &w[1]))
		goto bad;
	if (spec->is_sdt)
		spec_sdt_defaults(&p, &w[0]);
	for (i = 2; i < n; i++)
		if (spec_parse_arg(&p, &w[i]))
			goto bad;
	if (spec->event[0]) {
		spec->event_given = true;
	} else {
		default_event(spec);
		spec->event_col = 0;
	}
	spec->text = strdup(text);
	if (!spec->text) {
		spec_fail(&p, 0, "out of memory");
		goto bad;
	}
	return 0;
bad:
	ukp_spec_free(spec);
	return -1;
}
