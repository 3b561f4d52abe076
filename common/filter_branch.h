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
 * are swapped), and every step is the same: one masked load, one sign
 * extension, one xor and one unsigned < (no dispatch on the operator). A
 * signed order is the unsigned one with the sign bit flipped on both
 * sides; x > c is ~x < ~c; x == c is (x ^ c) < 1; x & c is (x & c) < 1
 * with the targets swapped; <=, >=, != are >, <, == with their targets
 * swapped.
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
	uint8_t sh;       /* sign extension: the value's top sh bits copy bit 63 - sh */
	uint8_t t, f;     /* the next step when true, when false (or ACCEPT/REJECT) */
	uint64_t mask;    /* applied to the word first (a register cut to its size) */
	uint64_t flip;    /* xor-ed in after the sign extension */
	uint64_t val;     /* the step is true when the value is below it (unsigned) */
};

struct ukp_fbranch {
	uint8_t entry;    /* the first step (or ACCEPT/REJECT) */
	uint8_t nsteps;
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

	while (i < UKP_FB_ACCEPT) {
		const struct ukp_fb_step *s = &b->steps[i];
		uint64_t v = words[s->src] & s->mask;

		v = ((uint64_t)((int64_t)(v << s->sh) >> s->sh)) ^ s->flip;
		i = v < s->val ? s->t : s->f;
	}
	return i == UKP_FB_ACCEPT;
}

#endif /* UKPROBE_FILTER_BRANCH_H */
