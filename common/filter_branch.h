/* SPDX-License-Identifier: MIT */
/*
 * filter_branch.h - a numeric event filter as a branch program, the form
 * the traced thread evaluates (ukp_fbranch_run) instead of the postfix
 * program of filter.h.
 *
 * The postfix program computes every comparison and combines the results
 * on a stack. Here each comparison is one step that jumps to the next step
 * on true and on false, so && and || stop as soon as the outcome is known
 * (as the kernel's filter_match_preds does), ! costs nothing (its targets
 * are swapped), and every step is the same: a subtraction, a mask and one
 * unsigned < (no dispatch on the operator, no sign extension). The values
 * a comparison is true for are a range of the word's low bits, taken
 * modulo their width: x < c of a signed 32-bit x is [0x80000000, c - 1]
 * wrapping through 0, x == c is [c, c], x & c is (x & c) in [0, 0] with
 * the targets swapped; <=, >=, != are >, <, == with their targets
 * swapped; a comparison true or false for every value is the empty range,
 * its targets swapped when always true.
 *
 * Values come from an array of 64-bit words: the event record's argument
 * slots (struct ukp_fetcharg.off / 8), or the registers as struct pt_regs
 * holds them when every argument the filter reads is one
 * (ukp_fetcharg.plain_reg), cut to the argument's size.
 */
#ifndef UKPROBE_FILTER_BRANCH_H
#define UKPROBE_FILTER_BRANCH_H

#include <stdbool.h>
#include <stdint.h>

#include "filter.h"

#define UKP_FB_ACCEPT 0xfe
#define UKP_FB_REJECT 0xff

struct ukp_fb_step {
	uint16_t src;     /* the word read */
	uint8_t t, f;     /* the next step when true, when false (or ACCEPT/REJECT) */
	uint64_t lo;      /* the range's first value */
	uint64_t mask;    /* the bits compared (a register cut to its size, x & c's c) */
	uint64_t len;     /* true when (word - lo) & mask is below it (unsigned) */
};

/* A program of at most this many steps is run as a truth table */
#define UKP_FB_TABLE_MAX 6

struct ukp_fbranch {
	uint8_t entry;    /* the first step (or ACCEPT/REJECT) */
	uint8_t nsteps;
	bool tabled;      /* nsteps <= UKP_FB_TABLE_MAX: run by table */
	uint64_t table;   /* bit m: accepted when step k is true for bit nsteps-1-k of m */
	struct ukp_fb_step steps[UKP_FILTER_MAX_PREDS];
};

/* Where ukp_fbranch_build() reads the values from: the record's slots,
 * struct pt_regs, or an array of the arguments' values indexed by their
 * number in the SPEC (each as its record slot would hold it). */
enum ukp_fb_source { UKP_FB_RECORD, UKP_FB_REGS, UKP_FB_ARGS };

/*
 * [init] Build the branch program of f for spec, its values read from
 * src. Returns 0, or -1 when f cannot be one: it compares a string, comm
 * or common_pid, or (UKP_FB_REGS) an argument that is not a register as
 * it is, or (UKP_FB_RECORD) a slot that is not 8-byte aligned. No
 * allocation.
 */
int ukp_fbranch_build(const struct ukp_filter *f, const struct ukp_spec *spec,
		      enum ukp_fb_source src, struct ukp_fbranch *out);

/*
 * [hit] Does the event pass? words: the record's payload as 64-bit words
 * (UKP_FB_RECORD, with no argument the filter reads faulted: the postfix
 * program compares a faulted one as 0), struct pt_regs (UKP_FB_REGS),
 * or the values by argument number (UKP_FB_ARGS, none faulted).
 * Async-signal-safe, no call.
 */
static inline bool ukp_fbranch_run(const struct ukp_fbranch *b, const uint64_t *words)
{
	unsigned int i = b->entry;

	/* a few steps: all of them, no step waiting for the one before
	 * (its index loaded from it), then the outcome from the table */
	if (__builtin_expect(b->tabled, 1)) {
		unsigned int m = 0, k;

		/* bit nsteps - 1 - k: step k's result, shifted in (the
		 * comparison's carry); unrolled: no loop counter */
#pragma GCC unroll 6
		for (k = 0; k < UKP_FB_TABLE_MAX; k++) {
			const struct ukp_fb_step *s = &b->steps[k];

			if (k == b->nsteps)
				break;
			m += m + (((words[s->src] - s->lo) & s->mask) < s->len);
		}
		return (b->table >> m) & 1;
	}

	while (i < UKP_FB_ACCEPT) {
		const struct ukp_fb_step *s = &b->steps[i];
		uint64_t v = (words[s->src] - s->lo) & s->mask;

		i = v < s->len ? s->t : s->f;
	}
	return i == UKP_FB_ACCEPT;
}

#endif /* UKPROBE_FILTER_BRANCH_H */
