/* SPDX-License-Identifier: MIT */
/*
 * libc_fnmatch.c - fnmatch(3) with flags 0 (what the agent's glob SPECs
 * use: '/' and a leading '.' are ordinary characters), in the "C"
 * locale: byte ranges, byte classes. [any] context, no allocation, no
 * recursion: a '*' is retried one byte further at each mismatch after it.
 */
#include <ctype.h>
#include <stdbool.h>

#include "base/libc.h"

#define NOMATCH 1 /* FNM_NOMATCH */

static const struct {
	char name[8];
	unsigned short bit;
} classes[] = {
	{ "alnum", _ISalnum }, { "alpha", _ISalpha }, { "blank", _ISblank },
	{ "cntrl", _IScntrl }, { "digit", _ISdigit }, { "graph", _ISgraph },
	{ "lower", _ISlower }, { "print", _ISprint }, { "punct", _ISpunct },
	{ "space", _ISspace }, { "upper", _ISupper }, { "xdigit", _ISxdigit },
};

static int class_index(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (ukp_strnlen(classes[i].name, sizeof(classes[i].name)) == len &&
		    !ukp_strncmp(classes[i].name, name, len))
			return (int)i;
	return -1;
}

static bool known_class(const char *name, size_t len)
{
	return class_index(name, len) >= 0;
}

static bool in_class(const char *name, size_t len, unsigned char c)
{
	return ((*ukp_ctype_b_loc())[c] & classes[class_index(name, len)].bit) != 0;
}

/* One member's character at *pp inside a bracket expression: an escaped
 * or plain byte, or a collating symbol [.c.] / equivalence class [=c=]
 * of one byte (the "C" locale's only ones); *pp moved past it. -1: a
 * collating symbol glibc refuses ("[.ab.]", no ".]"): the pattern then
 * matches nothing. */
static int member(const char **pp)
{
	const char *p = *pp;

	if (p[0] == '[' && (p[1] == '.' || p[1] == '=')) {
		char kind = p[1];

		if (p[2] && p[3] == kind && p[4] == ']') {
			*pp = p + 5;
			return (unsigned char)p[2];
		}
		if (kind == '.')
			return -1;
		/* an unfinished [= is an ordinary '[' */
	}
	if (*p == '\\' && p[1])
		p++;
	*pp = p + 1;
	return (unsigned char)*p;
}

/* The bracket expression after a '[' at p, against c: *match set and the
 * pattern past its ']' returned; NULL when it has no ']' (the '[' is then
 * an ordinary character); *bad set when glibc refuses it (an unknown
 * class, a bad collating symbol: the pattern matches nothing). */
static const char *bracket(const char *p, unsigned char c, bool *match, bool *bad)
{
	bool neg = *p == '!' || *p == '^', hit = false;

	p += neg;
	for (bool first = true;; first = false) {
		int lo, hi;

		if (!*p)
			return NULL;
		if (*p == ']' && !first)
			break;
		if (p[0] == '[' && p[1] == ':') {
			const char *name = p + 2, *end = name;

			while (*end && *end != ']' && !(end[0] == ':' && end[1] == ']'))
				end++;
			if (end[0] == ':') {
				if (!known_class(name, (size_t)(end - name))) {
					*bad = true;
					return NULL;
				}
				hit |= in_class(name, (size_t)(end - name), c);
				p = end + 2;
				continue;
			}
			/* no ":]": an ordinary '[' */
		}
		lo = member(&p);
		if (lo < 0) {
			*bad = true;
			return NULL;
		}
		hi = lo;
		if (p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			hi = member(&p);
			if (hi < 0) {
				*bad = true;
				return NULL;
			}
		}
		hit |= c >= lo && c <= hi;
	}
	*match = hit != neg;
	return p + 1;
}

int ukp_fnmatch(const char *pat, const char *s, int flags)
{
	const char *star_pat = NULL, *star_s = NULL;

	if (flags)
		return -1;
	for (;;) {
		bool ok;

		if (*pat == '*') {
			while (*pat == '*')
				pat++;
			if (!*pat)
				return 0;
			star_pat = pat;
			star_s = s;
			continue;
		}
		if (!*pat && !*s)
			return 0;
		ok = false;
		if (*pat == '\\' && !pat[1])
			return NOMATCH; /* a trailing backslash matches nothing (glibc) */
		if (*pat && *s) {
			const char *after = NULL;
			bool bad = false;

			if (*pat == '?') {
				ok = true;
				pat++;
			} else if (*pat == '[' &&
				   (after = bracket(pat + 1, (unsigned char)*s, &ok, &bad))) {
				pat = after;
			} else if (bad) {
				return NOMATCH;
			} else {
				if (*pat == '\\')
					pat++;
				ok = *pat++ == *s;
			}
		}
		if (ok) {
			s++;
			continue;
		}
		if (!star_pat || !*star_s)
			return NOMATCH;
		s = ++star_s;
		pat = star_pat;
	}
}

UKP_LIBC_ALIAS(ukp_fnmatch, fnmatch)
