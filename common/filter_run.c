/* SPDX-License-Identifier: MIT */
/*
 * filter_run.c - the event filter evaluator (filter.h), apart from its
 * compiler: the agent builds this and not the compiler (its filters come
 * compiled, spec_wire.h). [hit]: no allocation, no library call that is
 * not async-signal-safe.
 */
#include <stddef.h>
#include <stdint.h>

#include "filter.h"

bool ukp_filter_glob(const char *pat, const char *str, size_t len)
{
	const char *back_pat = NULL;
	size_t i = 0, back_i = 0;

	for (;;) {
		unsigned char c = i < len ? (unsigned char)str[i] : 0;
		unsigned char d = (unsigned char)*pat++;

		i++;
		switch (d) {
		case '?':
			if (!c)
				return false;
			continue;
		case '*':
			if (!*pat)
				return true;
			back_pat = pat;
			back_i = --i; /* the * may match nothing */
			continue;
		case '[': {
			bool match = false, inverted = *pat == '!';
			const char *cls = pat + inverted;
			unsigned char a = (unsigned char)*cls++;

			/* spans a or a-b; the first may be ']' */
			do {
				unsigned char b = a;

				if (!a)
					goto literal; /* not closed: a plain '[' */
				if (cls[0] == '-' && cls[1] != ']') {
					b = (unsigned char)cls[1];
					if (!b)
						goto literal;
					cls += 2;
				}
				match |= a <= c && c <= b;
			} while ((a = (unsigned char)*cls++) != ']');
			if (match == inverted || !c)
				goto backtrack;
			pat = cls;
			continue;
		}
		case '\\':
			if (*pat)
				d = (unsigned char)*pat++;
			break;
		default:
			break;
		}
literal:
		if (c == d) {
			if (!d)
				return true;
			continue;
		}
backtrack:
		if (!c || !back_pat)
			return false;
		pat = back_pat;
		i = ++back_i;
	}
}

/* [hit] No libc string functions from here on: the agent runs this in
 * the traced thread, where its handlers must leave the vector state
 * alone (libc's str and mem functions use vector registers). */
static bool pred_string(const struct ukp_filter_pred *pr, const char *s, size_t max)
{
	size_t n = 0, i;
	bool eq = true;

	while (n < max && s[n])
		n++;
	if (pr->op == UKP_FOP_GLOB)
		return ukp_filter_glob(pr->str, s, n);
	for (i = 0; i < n && eq; i++)
		eq = pr->str[i] == s[i];
	eq = eq && !pr->str[n];
	return pr->op == UKP_FOP_EQ ? eq : !eq;
}

static bool pred_number(const struct ukp_filter_pred *pr, uint64_t v)
{
	if (pr->is_signed) {
		int64_t sv = (int64_t)v, w = (int64_t)pr->val;

		if (pr->size < 8) { /* sign-extend the field's bytes */
			unsigned int sh = 64 - 8 * pr->size;

			sv = (int64_t)(v << sh) >> sh;
		}
		switch (pr->op) {
		case UKP_FOP_EQ: return sv == w;
		case UKP_FOP_NE: return sv != w;
		case UKP_FOP_LT: return sv < w;
		case UKP_FOP_LE: return sv <= w;
		case UKP_FOP_GT: return sv > w;
		case UKP_FOP_GE: return sv >= w;
		case UKP_FOP_AND: return (v & pr->val) != 0;
		default: return false;
		}
	}
	switch (pr->op) {
	case UKP_FOP_EQ: return v == pr->val;
	case UKP_FOP_NE: return v != pr->val;
	case UKP_FOP_LT: return v < pr->val;
	case UKP_FOP_LE: return v <= pr->val;
	case UKP_FOP_GT: return v > pr->val;
	case UKP_FOP_GE: return v >= pr->val;
	case UKP_FOP_AND: return (v & pr->val) != 0;
	default: return false;
	}
}

static bool pred_run(const struct ukp_filter_pred *pr, const unsigned char *data,
		     uint32_t faults, const char *comm, int pid, const struct ukp_spec *spec)
{
	if (pr->arg == UKP_FILTER_PID)
		return pred_number(pr, (uint64_t)(uint32_t)pid);
	if (pr->arg == UKP_FILTER_COMM)
		return pred_string(pr, comm, 16);
	if (pr->is_string) {
		if (faults & (1u << pr->arg))
			return pred_string(pr, "", 1);
		return pred_string(pr, (const char *)data + spec->args[pr->arg].off,
				   UKP_SPEC_STR_SLOT);
	} else {
		uint64_t v = 0;

		if (!(faults & (1u << pr->arg))) {
			/* one load (a byte loop is not merged into one here):
			 * slots are 8 bytes, little-endian; the type may alias
			 * the record's bytes */
			typedef uint64_t __attribute__((may_alias, aligned(1))) u64_any;

			v = *(const u64_any *)(const void *)(data + spec->args[pr->arg].off);
		}
		return pred_number(pr, v);
	}
}

/* Filters of more than one comparison: the evaluation stack (out of
 * line, so that a one-comparison filter does not set up its frame) */
static __attribute__((noinline)) bool run_stack(const struct ukp_filter *f,
						const struct ukp_spec *spec,
						const unsigned char *data, uint32_t faults,
						const char *comm, int pid)
{
	bool stack[UKP_FILTER_MAX_PREDS];
	int sp = 0, i;

	for (i = 0; i < f->ninsns; i++) {
		uint32_t insn = f->insns[i];

		switch ((enum ukp_filter_insn)(insn & 0xff)) {
		case UKP_FI_PRED:
			stack[sp++] = pred_run(&f->preds[insn >> 8], data, faults, comm, pid, spec);
			break;
		case UKP_FI_AND:
			sp--;
			stack[sp - 1] = stack[sp - 1] && stack[sp];
			break;
		case UKP_FI_OR:
			sp--;
			stack[sp - 1] = stack[sp - 1] || stack[sp];
			break;
		case UKP_FI_NOT:
			stack[sp - 1] = !stack[sp - 1];
			break;
		}
	}
	return sp == 1 && stack[0];
}

bool ukp_filter_run(const struct ukp_filter *f, const struct ukp_spec *spec,
		    const unsigned char *data, uint32_t faults, const char *comm, int pid)
{
	/* the common case, one comparison: no evaluation stack */
	if (f->ninsns == 1)
		return pred_run(&f->preds[0], data, faults, comm, pid, spec);
	return run_stack(f, spec, data, faults, comm, pid);
}
