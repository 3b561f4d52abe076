/* SPDX-License-Identifier: MIT */
/*
 * report.c - ukprobe's error messages, and the check of every -e SPEC
 * before anything runs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PREFIX "ukprobe: error: "
#define WPREFIX "ukprobe: warning: "

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

static void spec_report(const char *prefix, const char *spec, int col, const char *fmt,
			va_list ap)
{
	const char *c;
	int i;

	fflush(stdout);
	fputs(prefix, stderr);
	/* tabs would move the caret: show them as spaces */
	for (c = spec; *c; c++)
		fputc(*c == '\t' ? ' ' : *c, stderr);
	fputs(": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	for (i = 0; i < (int)strlen(prefix) + col; i++)
		fputc(' ', stderr);
	fputs("^\n", stderr);
}

void ukp_spec_err(const char *spec, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	spec_report(PREFIX, spec, col, fmt, ap);
	va_end(ap);
}

void ukp_spec_warn(const char *spec, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	spec_report(WPREFIX, spec, col, fmt, ap);
	va_end(ap);
}

static const char *where_searched(const struct ukp_spec *spec)
{
	return spec->object ? spec->object : "the program or its libraries";
}

int ukp_explain_failure(const struct ukp_spec *spec, const struct ukp_failure *f, char *buf,
			size_t len)
{
	int off_or_sym = spec->offset ? spec->off_col : spec->sym_col;
	char why[200] = "";

	if (f->why && f->why[0])
		snprintf(why, sizeof(why), " (%s)", f->why);
	switch (f->what) {
	case UKP_WHAT_OBJECT:
		if (f->why && f->why[0])
			snprintf(buf, len, "cannot load %s: %s", spec->object, f->why);
		else
			snprintf(buf, len, "object %s is neither loaded in the program nor found "
				 "on disk", spec->object);
		return spec->point_col;
	case UKP_WHAT_SYMBOL:
		if (spec->is_sdt)
			snprintf(buf, len, "SDT probe %%%s not found in %s", spec->symbol,
				 where_searched(spec));
		else
			snprintf(buf, len, "symbol %s not found in %s", spec->symbol,
				 where_searched(spec));
		return spec->sym_col;
	case UKP_WHAT_NOMATCH:
		if (spec->is_sdt) {
			snprintf(buf, len, "no SDT probe matches %%%s in %s", spec->symbol,
				 where_searched(spec));
			return spec->sym_col;
		}
		snprintf(buf, len, "no function matches %s in %s", spec->symbol,
			 where_searched(spec));
		return spec->sym_col;
	case UKP_WHAT_DATASYM:
		snprintf(buf, len, "data symbol %s not found in %s", spec->args[f->argi].symbol,
			 where_searched(spec));
		return spec->args[f->argi].col;
	case UKP_WHAT_SDT_ARG:
		snprintf(buf, len, "%s", f->why && f->why[0] ? f->why : "no such SDT argument");
		return spec->args[f->argi].col;
	case UKP_WHAT_ADDR:
		snprintf(buf, len, "0x%lx is not in the code of %s", (unsigned long)spec->addr,
			 spec->object ? spec->object : "any loaded object");
		return spec->sym_col;
	default:
		break;
	}
	switch (-f->err) {
	case ENOENT:
		if (spec->is_addr && spec->object)
			snprintf(buf, len, "no function of %s contains 0x%lx", spec->object,
				 (unsigned long)spec->addr);
		else if (spec->is_addr)
			snprintf(buf, len, "no function of a loaded object contains 0x%lx",
				 (unsigned long)f->addr);
		else
			snprintf(buf, len, "symbol %s not found in %s", spec->symbol,
				 where_searched(spec));
		return spec->sym_col;
	case EILSEQ:
		snprintf(buf, len, "probe point is not an instruction boundary%s", why);
		return off_or_sym;
	case EINVAL:
		if (spec->is_return && f->why && f->why[0])
			snprintf(buf, len, "cannot put a return probe here: %s", f->why);
		else if (spec->is_return)
			snprintf(buf, len, "cannot put a return probe here (blacklisted, or not a "
				 "function entry)%s", why);
		else
			snprintf(buf, len, "cannot probe this address (blacklisted, or not code)%s",
				 why);
		return spec->is_return ? spec->sym_col : off_or_sym;
	case ENOEXEC:
		/* $goid where the code is not Go's (agent/probes.c) */
		snprintf(buf, len, "%s", f->why && f->why[0] ? f->why : "$goid: not Go code");
		for (int i = 0; i < spec->nargs; i++)
			if (spec->args[i].base == UKP_FA_GOID)
				return spec->args[i].col;
		return spec->point_col;
	case EOPNOTSUPP:
		if (spec->is_return)
			snprintf(buf, len, "return probes are not possible here (the instruction, "
				 "or a shadow stack)%s", why);
		else
			snprintf(buf, len, "the instruction at the probe point cannot be probed%s",
				 why);
		return spec->is_return ? spec->sym_col : off_or_sym;
	default:
		snprintf(buf, len, "cannot register the probe: %s%s", strerror(-f->err), why);
		return spec->point_col;
	}
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
		/* an event name is unique in its group, as in tracefs (a
		 * glob's names are made unique as they are given) */
		for (j = 0; j < i && !specs[i].is_glob; j++) {
			if (!specs[j].is_glob && !strcmp(specs[i].group, specs[j].group) &&
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
		ukp_spec_release(&specs[i]);
	free(specs);
}
