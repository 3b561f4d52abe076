/* SPDX-License-Identifier: MIT */
/*
 * spec_parse.h - the SPEC parser's insides, shared by spec.c (the
 * definition, its name and probe point), spec_fetch.c (the fetch
 * arguments and their types) and spec_parsed.c (names made from a parsed
 * SPEC). Not for other files: spec.h is the interface.
 */
#ifndef UKPROBE_SPEC_PARSE_H
#define UKPROBE_SPEC_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "spec.h"

/* One whitespace-separated word of the SPEC. */
struct word {
	const char *s;
	size_t len;
	int col;
};

#define MAX_WORDS (UKP_SPEC_MAX_ARGS + 2) /* the head, the probe point, the args */

struct parser {
	struct ukp_spec *spec;
	struct ukp_spec_error *err;
	bool failed;
};

/* Record the first error (column and message); returns -1. */
int spec_fail(struct parser *p, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A C identifier. */
bool spec_good_name(const char *s, size_t len);
/* An unsigned decimal number that is the whole of s[0..len). */
bool spec_parse_udec(const char *s, size_t len, unsigned long *out);
/* A number in C notation (0x.., 0.., decimal) that is the whole of
 * s[0..len), without sign. */
bool spec_parse_unum(const char *s, size_t len, unsigned long *out);
/* A character of a symbol name. */
bool spec_sym_char(char c);

/* Make s a C identifier in place: what is not alnum or '_' becomes '_'
 * (spec_parsed.c). */
void spec_make_identifier(char *s);

/* [OBJ:]%PROVIDER:NAME (spec_sdt.c): is w an SDT probe point; parse
 * it; its default group and event; what $argN and its type are there. */
struct ukp_fetch_type;
/* fa gets the type of row t (spec_fetch.c). */
void spec_set_type(struct ukp_fetcharg *fa, const struct ukp_fetch_type *t);
bool spec_sdt_point(const struct word *w);
int spec_parse_sdt_point(struct parser *p, const struct word *w);
void spec_sdt_defaults(struct parser *p, const struct word *head);
int spec_sdt_arg(struct parser *p, struct ukp_fetcharg *fa, unsigned long n, int col);
int spec_sdt_type(struct parser *p, struct ukp_fetcharg *fa, bool typed, int tcol);
int spec_sdt_duration(struct parser *p, struct ukp_fetcharg *fa, int col);

/* One [NAME=]FETCHARG[:TYPE] word (spec_fetch.c). */
int spec_parse_arg(struct parser *p, const struct word *w);

#endif /* UKPROBE_SPEC_PARSE_H */
