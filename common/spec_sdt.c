/* SPDX-License-Identifier: MIT */
/*
 * spec_sdt.c - the SDT probe point of a SPEC (spec.h): perf's
 * [OBJ:]%PROVIDER:NAME, and what its $argN are.
 *
 * An SDT probe's arguments are described by its note ("-4@%eax
 * 8@-16(%rbp)"), which only the traced process's objects have: $argN is
 * kept as the Nth SDT argument (UKP_FA_ARG) and the agent compiles it,
 * probe by probe, into the fetch forms of the note's spec
 * (agent/usdt.c). Untyped, it is s64: the value as the note types it,
 * sign- or zero-extended from its size. $argN:string is the string it
 * points to (as +0($argN):string).
 *
 * The CLI's alone, as the rest of the parser; plain C, not for signal
 * context.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_types.h"
#include "spec_parse.h"

#define SDT_MAX_ARGS 12 /* <sys/sdt.h>'s STAP_PROBE12 */

bool spec_sdt_point(const struct word *w)
{
	size_t i;

	if (w->len && w->s[0] == '%')
		return true;
	for (i = 0; i + 1 < w->len && w->s[i] != '"'; i++)
		if (w->s[i] == ':' && w->s[i + 1] == '%')
			return true;
	return false;
}

/* PROVIDER or NAME at s[0..len): name characters and glob wildcards. */
static int sdt_part(struct parser *p, const char *s, size_t len, int col, const char *what)
{
	size_t i;

	if (!len)
		return spec_fail(p, col, "SDT %s is not specified (OBJ:%%PROVIDER:NAME)", what);
	for (i = 0; i < len; i++) {
		if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == ']') {
			p->spec->is_glob = true;
			continue;
		}
		if (s[i] == '+' || s[i] == '-')
			return spec_fail(p, col + (int)i, "an SDT probe takes no offset");
		if (!spec_sym_char(s[i]))
			return spec_fail(p, col + (int)i, "invalid character in the SDT %s", what);
	}
	return 0;
}

int spec_parse_sdt_point(struct parser *p, const struct word *w)
{
	struct ukp_spec *spec = p->spec;
	const char *s = w->s, *end = w->s + w->len, *pct, *colon;

	pct = s[0] == '%' ? s : NULL;
	if (!pct)
		for (pct = s; pct + 1 < end && !(pct[0] == ':' && pct[1] == '%'); pct++)
			;
	if (pct != s) {
		if (pct == s || pct[-1] == ':')
			return spec_fail(p, w->col, "object name is empty");
		spec->object = strndup(s, (size_t)(pct - s));
		if (!spec->object)
			return spec_fail(p, w->col, "out of memory");
		pct++;
	}
	spec->is_sdt = true;
	spec->sym_col = w->col + (int)(pct + 1 - s);
	colon = memchr(pct + 1, ':', (size_t)(end - pct - 1));
	if (!colon)
		return spec_fail(p, spec->sym_col,
				 "SDT probe name is not specified (OBJ:%%PROVIDER:NAME)");
	if (sdt_part(p, pct + 1, (size_t)(colon - pct - 1), spec->sym_col, "provider") ||
	    sdt_part(p, colon + 1, (size_t)(end - colon - 1), w->col + (int)(colon + 1 - s),
		     "probe name"))
		return -1;
	spec->off_col = w->col + (int)w->len;
	if (spec->is_return)
		return spec_fail(p, w->col, "an SDT probe is a 'p' probe (its place is no function "
				 "entry to return from)");
	if (spec->is_watch)
		return spec_fail(p, w->col, "an SDT probe is a 'p' probe, not a watchpoint");
	spec->symbol = strndup(pct + 1, (size_t)(end - pct - 1));
	if (!spec->symbol)
		return spec_fail(p, spec->sym_col, "out of memory");
	return 0;
}

/* sdt_PROVIDER when the head named no group and PROVIDER is no glob. */
void spec_sdt_defaults(struct parser *p, const struct word *head)
{
	struct ukp_spec *spec = p->spec;
	size_t plen = strcspn(spec->symbol, ":");

	if (memchr(head->s, '/', head->len) || strcspn(spec->symbol, "*?[") < plen ||
	    plen + 4 > UKP_SPEC_NAME_MAX)
		return;
	snprintf(spec->group, sizeof(spec->group), "sdt_%.*s", (int)plen, spec->symbol);
	spec_make_identifier(spec->group);
}

int spec_sdt_arg(struct parser *p, struct ukp_fetcharg *fa, unsigned long n, int col)
{
	if (n > SDT_MAX_ARGS)
		return spec_fail(p, col, "an SDT probe has at most %d arguments ($arg1..$arg%d)",
				 SDT_MAX_ARGS, SDT_MAX_ARGS);
	fa->base = UKP_FA_ARG;
	fa->param = n;
	return 0;
}

int spec_sdt_type(struct parser *p, struct ukp_fetcharg *fa, bool typed, int tcol)
{
	(void)tcol;
	if (!typed) {
		spec_set_type(fa, ukp_fetch_type_find(UKP_TY_S, 8));
		fa->sdt_default = true;
		return 0;
	}
	/* $argN:string: the string it points to */
	if (ukp_fetch_type_of(fa)->is_string && !fa->nderef) {
		fa->deref[0] = 0;
		fa->nderef = 1;
	}
	(void)p;
	return 0;
}

/* $duration: only at a NAME__return probe, paired with NAME__entry */
int spec_sdt_duration(struct parser *p, struct ukp_fetcharg *fa, int col)
{
	const char *name = strchr(p->spec->symbol, ':') + 1;
	size_t n = strlen(name);

	if (n < 8 || strcmp(name + n - 8, "__return"))
		return spec_fail(p, col, "$duration at an SDT probe is for a NAME__return probe "
				 "(the time since its NAME__entry)");
	fa->base = UKP_FA_DURATION;
	return 0;
}
