/* SPDX-License-Identifier: MIT */
/*
 * The parsed SPECs' form (common/spec_wire.c), as ukprobe writes it and
 * its agent reads it: every kind of SPEC, filter and trigger comes back
 * as it was parsed (field by field, and the same form again); a form of
 * another version or layout, a truncated one, and records that break
 * what the agent's hit path indexes with are refused; no byte changed in
 * a valid form makes the decoder read or write out of bounds (the
 * sanitizer build checks that).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "hist.h"
#include "proto.h"
#include "spec_wire.h"

#define NREGS 21 /* words of x86-64's struct pt_regs */

/* One -e with its --filter and --trigger, as options.c parses them. */
struct line {
	const char *spec, *filter, *trigger;
};

static const struct line lines[] = {
	{ "p add a=%di:s32 b=$arg2:u32 h=%si:x16", NULL, NULL },
	{ "r:grp/ret libc.so.6:malloc ret=$retval:x64 d=$duration", "d > 1000", NULL },
	{ "p:pts/norm norm x=+0(%di):s64 y=+8($arg1):s64 name=+0(+16(%di)):string c=$comm",
	  "name ~ \"a*\" && (x < -3 || !(y == 4)) && comm != 'sh'", NULL },
	{ "p libc.so.6:write fd=%di:s32 n=%dx:u64", NULL,
	  "hist:keys=n.log2,common_pid.execname:vals=n:sort=n.descending:size=64 if fd == 1" },
	{ "p libc.so.6:read fd=%di:s32 buf=+0(%si):string", "fd >= 0",
	  "hist:keys=buf,fd.buckets=4:vals=hitcount" },
	{ "p libc.so.6:open* f=+0(%di):string", NULL, "stacktrace:5" },
	{ "p add v=@counter+8:u32 s=@0x1000:symbol bf=%ax:b3@4/32 ch=%cx:char", NULL,
	  "traceoff:2 if v & 4" },
	{ "w:wg/env libc.so.6:environ/8:r ip=%ip:symbol", NULL, NULL },
	{ "p libz.so.1:0x4a20 s5=$stack5 sp=$stack", "common_pid == 42", "traceon" },
	{ "p \"operator new(unsigned long)\"", NULL, NULL },
};
#define NLINES (sizeof(lines) / sizeof(lines[0]))

static void parse_line(const struct line *l, struct ukp_spec *s)
{
	struct ukp_spec_error err;

	cr_assert_eq(ukp_spec_parse(l->spec, s, &err), 0, "%s: %s", l->spec, err.msg);
	if (l->filter) {
		cr_assert_eq(ukp_filter_compile(l->filter, s, &s->filter, &err), 0, "%s: %s",
			     l->filter, err.msg);
		s->filter_text = strdup(l->filter);
	}
	if (l->trigger) {
		cr_assert_eq(ukp_trigger_parse(l->trigger, s, &err), 0, "%s: %s", l->trigger,
			     err.msg);
		s->trigger_text = strdup(l->trigger);
	}
}

/* calloc'ed, as ukp_cli_parse_specs gives them */
static struct ukp_spec *parse_all(void)
{
	struct ukp_spec *specs = calloc(NLINES, sizeof(*specs));
	size_t i;

	cr_assert_not_null(specs);
	for (i = 0; i < NLINES; i++)
		parse_line(&lines[i], &specs[i]);
	return specs;
}

static void free_all(struct ukp_spec *specs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		ukp_spec_free(&specs[i]);
	free(specs);
}

static enum ukp_specs_error decode(const void *form, size_t len, struct ukp_spec **out, int *n)
{
	uint32_t version;

	*out = NULL;
	*n = -1;
	return ukp_specs_decode(form, len, NREGS, out, n, &version);
}

static void same_string(const char *a, const char *b, const char *what)
{
	cr_assert((!a && !b) || (a && b && !strcmp(a, b)), "%s: %s / %s", what, a ? a : "(none)",
		  b ? b : "(none)");
}

static void same_filter(const struct ukp_filter *a, const struct ukp_filter *b)
{
	cr_assert((a == NULL) == (b == NULL));
	if (!a)
		return;
	cr_assert_eq(a->npreds, b->npreds);
	cr_assert_eq(a->ninsns, b->ninsns);
	cr_assert_eq(a->args_used, b->args_used);
	cr_assert_eq(a->uses_comm, b->uses_comm);
	cr_assert_eq(memcmp(a->preds, b->preds, (size_t)a->npreds * sizeof(a->preds[0])), 0);
	cr_assert_eq(memcmp(a->insns, b->insns, (size_t)a->ninsns * sizeof(a->insns[0])), 0);
}

Test(spec_wire, every_kind_comes_back_as_parsed)
{
	struct ukp_spec *specs = parse_all(), *back;
	size_t len, len2, i;
	void *form = ukp_specs_encode(specs, NLINES, &len), *form2;
	int n, k;

	cr_assert_not_null(form);
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_OK);
	cr_assert_eq(n, (int)NLINES);
	for (i = 0; i < NLINES; i++) {
		const struct ukp_spec *a = &specs[i], *b = &back[i];

		same_string(a->text, b->text, "text");
		same_string(a->object, b->object, "object");
		same_string(a->symbol, b->symbol, "symbol");
		same_string(a->filter_text, b->filter_text, "filter_text");
		same_string(a->trigger_text, b->trigger_text, "trigger_text");
		cr_assert_str_eq(a->event, b->event);
		cr_assert_str_eq(a->group, b->group);
		cr_assert_eq(a->is_return, b->is_return);
		cr_assert_eq(a->is_watch, b->is_watch);
		cr_assert_eq(a->watch_len, b->watch_len);
		cr_assert_eq(a->is_glob, b->is_glob);
		cr_assert_eq(a->cxx_name, b->cxx_name);
		cr_assert_eq(a->addr, b->addr);
		cr_assert_eq(a->payload, b->payload);
		cr_assert_eq(a->stacktrace, b->stacktrace);
		cr_assert_eq(a->stack_count, b->stack_count);
		cr_assert_eq(a->onoff, b->onoff);
		cr_assert_eq(a->onoff_count, b->onoff_count);
		cr_assert_eq(a->nargs, b->nargs);
		for (k = 0; k < a->nargs; k++) {
			struct ukp_fetcharg x = a->args[k], y = b->args[k];

			same_string(x.symbol, y.symbol, "argument symbol");
			x.symbol = y.symbol = NULL;
			cr_assert_eq(memcmp(&x, &y, sizeof(x)), 0, "%s: argument %d", a->text, k);
		}
		same_filter(a->filter, b->filter);
		same_filter(a->onoff_filter, b->onoff_filter);
		cr_assert((a->hist == NULL) == (b->hist == NULL));
		if (a->hist) {
			cr_assert_str_eq(a->hist->info, b->hist->info);
			cr_assert_eq(a->hist->nkeys, b->hist->nkeys);
			cr_assert_eq(a->hist->key_bytes, b->hist->key_bytes);
			cr_assert_eq(a->hist->size, b->hist->size);
			cr_assert_eq(memcmp(a->hist->keys, b->hist->keys, sizeof(a->hist->keys)), 0);
			same_filter(a->hist->filter, b->hist->filter);
		}
	}
	/* and the same form again: nothing was lost or made up */
	form2 = ukp_specs_encode(back, n, &len2);
	cr_assert_eq(len2, len);
	cr_assert_eq(memcmp(form, form2, len), 0);
	free(form);
	free(form2);
	free_all(specs, NLINES);
	free_all(back, n);
}

Test(spec_wire, none_and_thousands)
{
	struct ukp_spec *specs = calloc(3000, sizeof(*specs)), *back;
	struct ukp_spec_error err;
	char text[64];
	size_t len;
	void *form;
	int i, n;

	form = ukp_specs_encode(specs, 0, &len);
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_OK);
	cr_assert_eq(n, 0);
	free(form);
	free(back);
	for (i = 0; i < 3000; i++) {
		snprintf(text, sizeof(text), "p:e%d libc.so.6:f%d x=%%di", i, i);
		cr_assert_eq(ukp_spec_parse(text, &specs[i], &err), 0);
	}
	form = ukp_specs_encode(specs, 3000, &len);
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_OK);
	cr_assert_eq(n, 3000);
	cr_assert_str_eq(back[2999].event, "e2999");
	cr_assert_str_eq(back[2999].symbol, "f2999");
	free(form);
	free_all(specs, 3000);
	free_all(back, n);
}

static void *form_of(const struct line *l, size_t *len)
{
	struct ukp_spec s;
	void *form;

	memset(&s, 0, sizeof(s));
	parse_line(l, &s);
	form = ukp_specs_encode(&s, 1, len);
	ukp_spec_free(&s);
	return form;
}

Test(spec_wire, another_version_or_layout)
{
	size_t len;
	char *form = form_of(&lines[2], &len);
	struct ukp_specs_header h;
	struct ukp_spec *back;
	uint32_t version;
	int n;

	memcpy(&h, form, sizeof(h));
	cr_assert_eq(h.version, UKP_PROTO_VERSION);
	h.version = UKP_PROTO_VERSION + 1;
	memcpy(form, &h, sizeof(h));
	cr_assert_eq(ukp_specs_decode(form, len, NREGS, &back, &n, &version), UKP_SPECS_VERSION);
	cr_assert_eq(version, UKP_PROTO_VERSION + 1);
	h.version = UKP_PROTO_VERSION;
	h.spec_size++;
	memcpy(form, &h, sizeof(h));
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_VERSION);
	h.spec_size--;
	h.magic[0] ^= 1;
	memcpy(form, &h, sizeof(h));
	cr_assert_eq(ukp_specs_decode(form, len, NREGS, &back, &n, &version), UKP_SPECS_NOT_SPECS);
	cr_assert_eq(version, 0);
	h.magic[0] ^= 1;
	memcpy(form, &h, sizeof(h));
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_OK);
	free_all(back, n);
	free(form);
}

Test(spec_wire, truncated)
{
	size_t len, cut;
	char *form = form_of(&lines[3], &len);
	struct ukp_spec *back;
	int n;

	for (cut = 0; cut < len; cut++) {
		char *copy = malloc(cut + 1);

		memcpy(copy, form, cut);
		cr_assert_neq(decode(copy, cut, &back, &n), UKP_SPECS_OK, "%zu of %zu bytes", cut,
			      len);
		free(copy);
	}
	free(form);
}

/* A SPEC parsed, changed by bend, encoded: the decoder must refuse it. */
static void refused(const struct line *l, void (*bend)(struct ukp_spec *), const char *what)
{
	struct ukp_spec s, *back;
	size_t len;
	void *form;
	int n;

	memset(&s, 0, sizeof(s));
	parse_line(l, &s);
	bend(&s);
	form = ukp_specs_encode(&s, 1, &len);
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_DAMAGED, "%s", what);
	free(form);
	ukp_spec_free(&s);
}

static void pred_arg_beyond(struct ukp_spec *s) { s->filter->preds[0].arg = s->nargs; }
static void pred_index_beyond(struct ukp_spec *s) { s->filter->insns[0] = UKP_FI_PRED | 5u << 8; }
static void stack_under(struct ukp_spec *s)
{
	s->filter->insns[0] = UKP_FI_AND;
	s->filter->ninsns = 1;
}
static void two_results(struct ukp_spec *s)
{
	s->filter->insns[1] = UKP_FI_PRED;
	s->filter->ninsns = 2;
}
static void string_as_number(struct ukp_spec *s) { s->filter->preds[0].is_string = false; }
static void register_beyond(struct ukp_spec *s) { s->args[0].param = NREGS; }
static void slot_beyond(struct ukp_spec *s) { s->args[2].off = s->payload; }
static void type_beyond(struct ukp_spec *s) { s->args[0].tidx = 200; }
static void zero_buckets(struct ukp_spec *s) { s->hist->keys[1].buckets = 0; }
static void key_beyond(struct ukp_spec *s) { s->hist->keys[0].off = s->hist->key_bytes; }
static void odd_size(struct ukp_spec *s) { s->hist->size = 48; }
static void no_symbol(struct ukp_spec *s)
{
	free(s->symbol);
	s->symbol = NULL;
}
static void stack_beyond(struct ukp_spec *s) { s->stack_max = 100; }
/* an indexed address (an SDT argument's DISP(%B,%I,S)): its index is a
 * register of struct pt_regs, its scale 1, 2, 4 or 8, and a dereference
 * follows it */
static void index_beyond(struct ukp_spec *s)
{
	s->args[0].index_reg = NREGS;
	s->args[0].index_scale = 4;
}
static void index_scale_3(struct ukp_spec *s)
{
	s->args[0].index_reg = 1;
	s->args[0].index_scale = 3;
}
static void index_scale_16(struct ukp_spec *s)
{
	s->args[0].index_reg = 1;
	s->args[0].index_scale = 16;
}
static void index_no_deref(struct ukp_spec *s)
{
	s->args[0].index_reg = 1;
	s->args[0].index_scale = 8;
}

Test(spec_wire, what_the_hit_path_indexes_with)
{
	refused(&lines[2], pred_arg_beyond, "a predicate on a field that does not exist");
	refused(&lines[2], pred_index_beyond, "an instruction naming no predicate");
	refused(&lines[2], stack_under, "an and with one operand");
	refused(&lines[2], two_results, "a program that leaves two results");
	refused(&lines[2], string_as_number, "a string field compared as a number");
	refused(&lines[0], register_beyond, "a register beyond struct pt_regs");
	refused(&lines[0], slot_beyond, "an argument's slot beyond the payload");
	refused(&lines[0], type_beyond, "a type that is no row of the table");
	refused(&lines[4], zero_buckets, ".buckets=0 (a division by zero)");
	refused(&lines[3], key_beyond, "a key field beyond the key");
	refused(&lines[3], odd_size, "a table size that is no power of two");
	refused(&lines[1], no_symbol, "a probe by name without its name");
	refused(&lines[5], stack_beyond, "a stack beyond the record");
	refused(&lines[2], index_beyond, "an index register beyond struct pt_regs");
	refused(&lines[2], index_scale_3, "an index scale of 3");
	refused(&lines[2], index_scale_16, "an index scale of 16");
	refused(&lines[0], index_no_deref, "an index with no dereference after it");
}

/* An indexed address comes back as it went (x=+0(%di) with %si * 8) */
Test(spec_wire, index_comes_back)
{
	struct ukp_spec s, *back;
	size_t len;
	void *form;
	int n;

	memset(&s, 0, sizeof(s));
	parse_line(&lines[2], &s);
	s.args[0].index_reg = 1;
	s.args[0].index_scale = 8;
	form = ukp_specs_encode(&s, 1, &len);
	cr_assert_eq(decode(form, len, &back, &n), UKP_SPECS_OK);
	cr_assert_eq(back[0].args[0].index_reg, 1);
	cr_assert_eq(back[0].args[0].index_scale, 8);
	cr_assert_eq(back[0].args[1].index_scale, 0);
	ukp_spec_free(&back[0]);
	free(back);
	free(form);
	ukp_spec_free(&s);
}

Test(spec_wire, every_byte_changed)
{
	struct ukp_spec *specs = parse_all(), *back;
	size_t len, i;
	unsigned char *form = ukp_specs_encode(specs, NLINES, &len);
	int n, ok = 0;

	for (i = sizeof(struct ukp_specs_header); i < len; i++) {
		static const unsigned char flips[] = { 0x01, 0x80, 0xff };
		size_t f;

		for (f = 0; f < sizeof(flips); f++) {
			form[i] ^= flips[f];
			if (decode(form, len, &back, &n) == UKP_SPECS_OK) {
				ok++;
				free_all(back, n);
			}
			form[i] ^= flips[f];
		}
	}
	/* some bytes are free (a name's letters, a comparison's value) */
	cr_assert_gt(ok, 0);
	free(form);
	free_all(specs, NLINES);
}

/* A record cut short after its struct's first part, with bytes other
 * than zeros where the writer's pointers were: the decoder must not take
 * them for pointers of its own (free them) when it gives up. The form's
 * layout (spec_wire.c): the header, an 8-byte record head, the struct up
 * to its args. */
Test(spec_wire, cut_short_with_bytes_in_pointers)
{
	size_t len, first = offsetof(struct ukp_spec, args);
	char *form = form_of(&lines[1], &len);
	size_t rec = sizeof(struct ukp_specs_header), cut = rec + 8 + ((first + 7) & ~(size_t)7) + 8;
	struct ukp_specs_header h;
	struct ukp_spec *back;
	uint32_t rec_size = (uint32_t)(cut - rec);
	int n;

	cr_assert_lt(cut, len);
	memset(form + rec + 8 + offsetof(struct ukp_spec, text), 0xa5, sizeof(uintptr_t));
	memset(form + rec + 8 + offsetof(struct ukp_spec, object), 0x5a, sizeof(uintptr_t));
	memcpy(&h, form, sizeof(h));
	h.size = cut;
	memcpy(form, &h, sizeof(h));
	memcpy(form + rec, &rec_size, sizeof(rec_size));
	cr_assert_eq(decode(form, cut, &back, &n), UKP_SPECS_DAMAGED);
	free(form);
}
