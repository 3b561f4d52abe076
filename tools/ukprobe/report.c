/* SPDX-License-Identifier: MIT */
/*
 * report.c - ukprobe's error messages, and the check of every -e SPEC
 * before anything runs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PREFIX "ukprobe: error: "

void ukp_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs(PREFIX, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ukp_warn(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("ukprobe: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ukp_spec_err(const char *spec, int col, const char *fmt, ...)
{
	va_list ap;
	const char *c;
	int i;

	fflush(stdout);
	fputs(PREFIX, stderr);
	/* tabs would move the caret: show them as spaces */
	for (c = spec; *c; c++)
		fputc(*c == '\t' ? ' ' : *c, stderr);
	fputs(": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (i = 0; i < (int)strlen(PREFIX) + col; i++)
		fputc(' ', stderr);
	fputs("^\n", stderr);
}

int ukp_cli_parse_specs(char **texts, int n, struct ukp_spec **out)
{
	struct ukp_spec *specs;
	int i, j;

	if (n <= 0) {
		ukp_err("no probe: give at least one -e SPEC");
		return -1;
	}
	if (n > 65535) {
		ukp_err("too many probes");
		return -1;
	}
	specs = calloc((size_t)n, sizeof(*specs));
	if (!specs) {
		ukp_err("out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct ukp_spec_error err;

		if (ukp_spec_parse(texts[i], &specs[i], &err)) {
			ukp_spec_err(texts[i], err.col, "%s", err.msg);
			ukp_cli_free_specs(specs, i);
			return -1;
		}
		/* an event name is unique in its group, as in tracefs */
		for (j = 0; j < i; j++) {
			if (!strcmp(specs[i].group, specs[j].group) &&
			    !strcmp(specs[i].event, specs[j].event)) {
				ukp_spec_err(texts[i], specs[i].event_col,
					     "event %s/%s is already defined (by -e '%s')",
					     specs[i].group, specs[i].event, specs[j].text);
				ukp_cli_free_specs(specs, i + 1);
				return -1;
			}
		}
	}
	*out = specs;
	return 0;
}

void ukp_cli_free_specs(struct ukp_spec *specs, int n)
{
	int i;

	if (!specs)
		return;
	for (i = 0; i < n; i++)
		ukp_spec_free(&specs[i]);
	free(specs);
}
