/* SPDX-License-Identifier: MIT */
/*
 * format.c - argument values as ftrace prints them, and the output file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "format.h"
#include "fetch_types.h"

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

/* Hand-written number formatting: a trace to a file has millions of
 * lines, and printf's format parsing is most of their cost. Each writes
 * backwards from end and returns the first character. */
static char *fmt_dec(char *end, unsigned long v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

static char *fmt_hex(char *end, unsigned long v)
{
	do {
		*--end = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	return end;
}

/* What printf("%*lu", width, v) and ("%0*lu") write, into out (room for
 * 24 + width). Returns the length. */
size_t ukp_fmt_ulong(char *out, unsigned long v, int width, bool zero)
{
	char buf[24], *p = fmt_dec(buf + sizeof(buf), v);
	size_t n = (size_t)(buf + sizeof(buf) - p), pad = (size_t)width > n ? (size_t)width - n : 0;

	memset(out, zero ? '0' : ' ', pad);
	memcpy(out + pad, p, n);
	return pad + n;
}

static void put_number(FILE *out, unsigned long v, const struct ukp_fetch_type *t)
{
	char buf[32], *end = buf + sizeof(buf), *p;

	if (t->hex) {
		p = fmt_hex(end, v);
		*--p = 'x';
		*--p = '0';
	} else if (t->is_signed) {
		p = fmt_dec(end, (long)v < 0 ? -v : v);
		if ((long)v < 0)
			*--p = '-';
	} else {
		p = fmt_dec(end, v);
	}
	fwrite(p, 1, (size_t)(end - p), out);
}

unsigned long ukp_arg_number(const struct ukp_fetcharg *fa, const unsigned char *slot)
{
	unsigned int bits = fa->size * 8;
	unsigned long v;

	memcpy(&v, slot, sizeof(v));
	if (fa->bf_width)
		return v; /* the agent extracted the field */
	if (bits < 64)
		v &= (1UL << bits) - 1;
	if (ukp_fetch_type_of(fa)->is_signed && bits < 64 && (v & (1UL << (bits - 1))))
		v |= ~0UL << bits;
	return v;
}

int ukp_format_float(char *buf, size_t len, unsigned long bits, unsigned int size)
{
	double d;
	int prec;

	if (size == 4) {
		float f;
		uint32_t w = (uint32_t)bits;

		memcpy(&f, &w, sizeof(f));
		d = f;
	} else {
		memcpy(&d, &bits, sizeof(d));
	}
	/* the fewest digits that read back as the same value */
	for (prec = 6; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, d);
		if (size == 4 ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d)
			return (int)strlen(buf);
	}
	return snprintf(buf, len, "%.17g", d);
}

static void put_char(FILE *out, unsigned char c)
{
	if (c == '\'' || c == '\\')
		fprintf(out, "'\\%c'", c);
	else if (c < 0x20 || c >= 0x7f)
		fprintf(out, "'\\x%02x'", c);
	else
		fprintf(out, "'%c'", c);
}

void ukp_format_args(FILE *out, const struct ukp_image *img, const struct ukp_spec *spec,
		     const struct ukp_rec *rec)
{
	char buf[32];
	int i;

	for (i = 0; i < spec->nargs; i++) {
		const struct ukp_fetcharg *fa = &spec->args[i];
		const struct ukp_fetch_type *t = ukp_fetch_type_of(fa);
		const unsigned char *slot = rec->data + fa->off;
		unsigned long v;

		fputc(' ', out);
		fputs(fa->name, out);
		fputc('=', out);
		if (rec->faults & (1u << i)) {
			/* a variable the debug information has no value of here */
			fputs(fa->base == UKP_FA_UNAVAIL ? "(unavailable)" : "(fault)", out);
			continue;
		}
		if (t->print == UKP_PRINT_STRING) {
			put_string(out, slot, UKP_SPEC_STR_SLOT);
			continue;
		}
		v = ukp_arg_number(fa, slot);
		if (t->print == UKP_PRINT_CHAR)
			put_char(out, (unsigned char)v);
		else if (t->print == UKP_PRINT_SYMBOL)
			fputs(ukp_image_addr(img, v, buf, sizeof(buf)), out);
		else if (t->print == UKP_PRINT_FLOAT)
			fwrite(buf, 1, (size_t)ukp_format_float(buf, sizeof(buf), v, fa->size), out);
		else
			put_number(out, v, t);
	}
}

/* --trigger stacktrace: the frames under the event, as ftrace prints a
 * stack: " => func+0xoff [obj]" (the symbol without its size). */
void ukp_format_stack(FILE *out, const struct ukp_image *img, const struct ukp_spec *spec,
		      const struct ukp_rec *rec)
{
	char buf[32];
	uint64_t n, v, i;

	memcpy(&n, rec->data + spec->stack_off, 8);
	for (i = 0; i < n && i < spec->stack_max; i++) {
		const char *text, *size, *rest;

		memcpy(&v, rec->data + spec->stack_off + 8 + 8 * i, 8);
		text = ukp_image_addr(img, v, buf, sizeof(buf));
		size = strstr(text, "/0x");
		rest = size ? size + strcspn(size, " ") : NULL;
		if (size && (size_t)(size - text) < 4096)
			fprintf(out, " => %.*s%s\n", (int)(size - text), text, rest);
		else
			fprintf(out, " => %s\n", text);
	}
}
