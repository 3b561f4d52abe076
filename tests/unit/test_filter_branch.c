/* SPDX-License-Identifier: MIT */
/*
 * The branch program of a numeric filter (common/filter_branch.c) against
 * the postfix program it is built from (common/filter_run.c): random
 * filters of every operator, sign and size, combined with &&, || and !,
 * over random and boundary values, read from a record and from the
 * registers, must decide every event alike.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "filter_branch.h"

/* a, b, c, d: four registers as they are, of four sizes and signs; e: a
 * memory fetch (not a register: no program on the registers) */
#define SPEC_REGS "p:ev obj:fn a=%di:s8 b=%si:u16 c=%dx:s32 d=%cx:u64"
#define SPEC_MEM  SPEC_REGS " e=+8(%di):s64"

/* the other sizes and signs, registers as they are */
#define SPEC_REGS2 "p:ev obj:fn a=%r8:u8 b=%r9:s16 c=%ax:u32 d=%bx:s64"

static const char *const fields[] = { "a", "b", "c", "d", "e" };
/* the fields of the SPEC in use that are unsigned (bit per field) */
static unsigned int unsigned_fields = 1u << 1 | 1u << 3;
static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=", "&" };
static const long long consts[] = { 0, 1, -1, 127, -128, 255, 32767, -32768, 65535,
				    2147483647, -2147483647 - 1, 4294967295LL, 100000, -5 };

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static int gen(char *buf, size_t size, int depth, int nfields)
{
	int k = depth > 3 ? 0 : (int)(rnd() % 4);

	if (k == 0) {
		int fi = (int)(rnd() % nfields);
		long long c = consts[rnd() % (sizeof(consts) / sizeof(consts[0]))];

		/* an unsigned field (b, d) takes no negative value */
		if ((unsigned_fields >> fi & 1) && c < 0)
			c = -c;
		return snprintf(buf, size, "%s %s %lld", fields[fi], ops[rnd() % 7], c);
	}
	if (k == 1) {
		int n = snprintf(buf, size, "!(");

		n += gen(buf + n, size - n, depth + 1, nfields);
		return n + snprintf(buf + n, size - n, ")");
	}
	{
		int n = snprintf(buf, size, "(");

		n += gen(buf + n, size - n, depth + 1, nfields);
		n += snprintf(buf + n, size - n, k == 2 ? " && " : " || ");
		n += gen(buf + n, size - n, depth + 1, nfields);
		return n + snprintf(buf + n, size - n, ")");
	}
}

static uint64_t value(void)
{
	switch (rnd() % 4) {
	case 0: return (uint64_t)consts[rnd() % (sizeof(consts) / sizeof(consts[0]))];
	case 1: return (uint64_t)consts[rnd() % (sizeof(consts) / sizeof(consts[0]))] + rnd() % 3 - 1;
	case 2: return rnd() % 300 - 150;
	default: return rnd();
	}
}

static void differ(const char *spec_text, enum ukp_fb_source src, int nfields, int rounds)
{
	struct ukp_spec spec;
	struct ukp_spec_error err;
	int built = 0, tabled = 0;

	cr_assert_eq(ukp_spec_parse(spec_text, &spec, &err), 0, "%s", err.msg);
	for (int r = 0; r < rounds; r++) {
		char text[2048];
		struct ukp_filter *f;
		struct ukp_fbranch fb;

		gen(text, sizeof(text), 0, nfields);
		cr_assert_eq(ukp_filter_compile(text, &spec, &f, &err), 0, "%s: %s", text, err.msg);
		if (ukp_fbranch_build(f, &spec, src, &fb)) {
			/* only a memory fetch read from the registers is refused */
			cr_assert(src == UKP_FB_REGS && strchr(text, 'e'), "%s", text);
			free(f);
			continue;
		}
		built++;
		tabled += fb.tabled;
		cr_assert_eq(fb.tabled, fb.nsteps <= UKP_FB_TABLE_MAX, "%s", text);
		for (int v = 0; v < 64; v++) {
			uint64_t words[64] = { 0 }, regs[32] = { 0 }, args[UKP_SPEC_MAX_ARGS] = { 0 };
			unsigned char data[sizeof(words)];

			for (int i = 0; i < spec.nargs; i++) {
				const struct ukp_fetcharg *fa = &spec.args[i];
				uint64_t x = value();
				uint64_t keep = fa->size < 8 ? (1ULL << (8 * fa->size)) - 1 : ~0ULL;

				/* the slot holds the value cut to the fetch's size,
				 * as ukpa_fetch_args() writes it */
				words[fa->off / 8] = x & keep;
				args[i] = x & keep;
				if (fa->plain_reg)
					regs[fa->param] = x;
			}
			memcpy(data, words, sizeof(words));
			const uint64_t *in = src == UKP_FB_REGS	  ? regs
					     : src == UKP_FB_ARGS ? args
								  : words;
			bool want = ukp_filter_run(f, &spec, data, 0, NULL, 0);
			struct ukp_fbranch steps = fb;

			cr_assert_eq(ukp_fbranch_run(&fb, in), want, "%s, event %d", text, v);
			/* a tabled program step by step decides alike */
			steps.tabled = false;
			cr_assert_eq(ukp_fbranch_run(&steps, in), want, "%s, event %d, stepped", text, v);
		}
		free(f);
	}
	cr_assert(built > rounds / 4, "%d of %d built", built, rounds);
	/* both ways of running a program were taken */
	cr_assert(tabled > built / 8 && tabled < built, "%d of %d tabled", tabled, built);
	ukp_spec_free(&spec);
}

Test(filter_branch, record_agrees_with_postfix)
{
	differ(SPEC_MEM, UKP_FB_RECORD, 5, 3000);
}

Test(filter_branch, argument_values_agree_with_postfix)
{
	differ(SPEC_MEM, UKP_FB_ARGS, 5, 3000);
}

Test(filter_branch, registers_agree_with_postfix)
{
	differ(SPEC_REGS, UKP_FB_REGS, 4, 3000);
}

Test(filter_branch, other_sizes_agree_with_postfix)
{
	unsigned_fields = 1u << 0 | 1u << 2;
	differ(SPEC_REGS2, UKP_FB_REGS, 4, 3000);
	differ(SPEC_REGS2, UKP_FB_ARGS, 4, 3000);
	differ(SPEC_REGS2, UKP_FB_RECORD, 4, 3000);
}

Test(filter_branch, refused_for_strings_pid_comm)
{
	struct ukp_spec spec;
	struct ukp_spec_error err;
	struct ukp_filter *f;
	struct ukp_fbranch fb;
	const char *texts[] = { "s == \"x\"", "common_pid == 1", "comm == \"sh\"",
				"a == 1 && s ~ \"x*\"" };

	cr_assert_eq(ukp_spec_parse(SPEC_REGS " s=+0(%si):string", &spec, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cr_assert_eq(ukp_filter_compile(texts[i], &spec, &f, &err), 0, "%s", err.msg);
		cr_assert_eq(ukp_fbranch_build(f, &spec, UKP_FB_RECORD, &fb), -1, "%s", texts[i]);
		free(f);
	}
	ukp_spec_free(&spec);
}

/* && and || stop at the first comparison that decides, as the kernel's
 * filters do: the steps taken are the ones needed */
Test(filter_branch, short_circuit_order)
{
	struct ukp_spec spec;
	struct ukp_spec_error err;
	struct ukp_filter *f;
	struct ukp_fbranch fb;

	cr_assert_eq(ukp_spec_parse(SPEC_REGS, &spec, &err), 0, "%s", err.msg);
	cr_assert_eq(ukp_filter_compile("a == 1 || b == 2 && !(c < 3)", &spec, &f, &err), 0);
	cr_assert_eq(ukp_fbranch_build(f, &spec, UKP_FB_REGS, &fb), 0);
	cr_assert_eq(fb.nsteps, 3);
	/* the first step is a's: true accepts at once */
	cr_assert_eq(fb.steps[fb.entry].t, UKP_FB_ACCEPT);
	/* c < 3 under ! : the one step whose true rejects, and whose false
	 * accepts */
	{
		int c = -1, n = 0;

		for (int i = 0; i < fb.nsteps; i++)
			if (fb.steps[i].t == UKP_FB_REJECT) {
				c = i;
				n++;
			}
		cr_assert_eq(n, 1);
		cr_assert_eq(fb.steps[c].f, UKP_FB_ACCEPT);
		cr_assert_eq(fb.steps[c].src, spec.args[2].param); /* c, %dx */
	}
	free(f);
	ukp_spec_free(&spec);
}
