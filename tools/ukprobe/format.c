/* SPDX-License-Identifier: MIT */
/*
 * format.c - argument values as ftrace prints them, and the output file.
 */
#include <errno.h>
#include <string.h>

#include "cli.h"

static void put_string(FILE *out, const unsigned char *s, size_t max)
{
	size_t i;

	fputc('"', out);
	for (i = 0; i < max && s[i]; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
	if (i == max)
		fputs("...", out); /* longer than an event holds */
}

void ukp_format_args(FILE *out, const struct ukp_spec *spec, const struct ukp_rec *rec)
{
	int i;

	for (i = 0; i < spec->nargs; i++) {
		const struct ukp_fetcharg *fa = &spec->args[i];
		const unsigned char *slot = rec->data + fa->off;
		unsigned long v;
		unsigned int bits = fa->size * 8;

		fprintf(out, " %s=", fa->name);
		if (rec->faults & (1u << i)) {
			fputs("(fault)", out);
			continue;
		}
		if (fa->type == UKP_TY_STRING) {
			put_string(out, slot, UKP_SPEC_STR_SLOT);
			continue;
		}
		memcpy(&v, slot, sizeof(v));
		if (bits < 64)
			v &= (1UL << bits) - 1;
		switch (fa->type) {
		case UKP_TY_U:
			fprintf(out, "%lu", v);
			break;
		case UKP_TY_S:
			if (bits < 64 && (v & (1UL << (bits - 1))))
				v |= ~0UL << bits;
			fprintf(out, "%ld", (long)v);
			break;
		default:
			fprintf(out, "0x%lx", v);
			break;
		}
	}
}

FILE *ukp_open_output(const char *path)
{
	FILE *f;

	if (!path)
		return stdout;
	f = fopen(path, "w");
	if (!f)
		ukp_err("cannot open %s: %s", path, strerror(errno));
	return f;
}
