/* SPDX-License-Identifier: MIT */
/*
 * filter_branch.c - the branch program of a numeric filter
 * (filter_branch.h), built from its postfix program. [init]: no
 * allocation (the tree is on the stack), no library call.
 */
#include "filter_branch.h"

#define SIGN_BIT (1ULL << 63)

struct node {
	int kind;       /* enum ukp_filter_insn */
	int pred;       /* UKP_FI_PRED */
	int a, b;       /* operands (node indices); NOT has a only */
};

struct builder {
	const struct ukp_filter *f;
	const struct ukp_spec *spec;
	enum ukp_fb_source src;
	struct node nodes[3 * UKP_FILTER_MAX_PREDS];
	struct ukp_fbranch *out;
	int next;       /* steps are placed from the last one down */
};

/* The range [a, b] of the values a comparison is true for (a signed one
 * as signed numbers), for op of EQ, LT or GT (the others are their
 * negations); false when it is true for no value. min, max: the values
 * the compared field can have. [init] */
static bool true_range(enum ukp_filter_op op, bool sgn, uint64_t c, uint64_t min, uint64_t max,
		       uint64_t *a, uint64_t *b)
{
	/* the order of the comparison: signed as unsigned with the sign bit
	 * flipped */
	uint64_t flip = sgn ? SIGN_BIT : 0, cf = c ^ flip, minf = min ^ flip, maxf = max ^ flip;

	switch (op) {
	case UKP_FOP_EQ:
		if (cf < minf || cf > maxf)
			return false;
		*a = *b = c;
		return true;
	case UKP_FOP_LT:
		if (cf <= minf)
			return false;
		*a = min;
		*b = cf - 1 > maxf ? max : c - 1;
		return true;
	case UKP_FOP_GT:
		if (cf >= maxf)
			return false;
		*a = cf + 1 < minf ? min : c + 1;
		*b = max;
		return true;
	default:
		return false;
	}
}

/* one comparison's step, its targets given */
static int step(struct builder *b, const struct ukp_filter_pred *pr, unsigned int t,
		unsigned int f)
{
	const struct ukp_fetcharg *fa;
	struct ukp_fb_step *s;
	enum ukp_filter_op op = pr->op;
	uint64_t mask, width, min, max, lo, hi;
	bool swap = false;

	if (pr->is_string || pr->arg < 0 || pr->arg >= b->spec->nargs || b->next <= 0)
		return -1;
	if (pr->size != 1 && pr->size != 2 && pr->size != 4 && pr->size != 8)
		return -1;
	fa = &b->spec->args[pr->arg];
	s = &b->out->steps[--b->next];
	if (b->src == UKP_FB_REGS) {
		if (!fa->plain_reg || fa->param > UINT16_MAX)
			return -1;
		s->src = (uint16_t)fa->param;
		mask = fa->size < 8 ? (1ULL << (fa->size * 8)) - 1 : ~0ULL;
	} else if (b->src == UKP_FB_ARGS) {
		s->src = (uint16_t)pr->arg;
		mask = ~0ULL;
	} else {
		if (fa->off % 8 || fa->off / 8 > UINT16_MAX)
			return -1;
		s->src = (uint16_t)(fa->off / 8);
		mask = ~0ULL;
	}
	s->t = (uint8_t)t;
	s->f = (uint8_t)f;
	if (op == UKP_FOP_AND) {
		/* (x & c) != 0: not (x & c) in [0, 0] */
		s->lo = 0;
		s->mask = mask & pr->val;
		s->len = 1;
		s->t = (uint8_t)f;
		s->f = (uint8_t)t;
		return b->next;
	}
	/* <=, >=, != are the negations of >, <, == */
	if (op == UKP_FOP_NE || op == UKP_FOP_GE || op == UKP_FOP_LE) {
		op = op == UKP_FOP_NE ? UKP_FOP_EQ : op == UKP_FOP_GE ? UKP_FOP_LT : UKP_FOP_GT;
		swap = true;
	} else if (op != UKP_FOP_EQ && op != UKP_FOP_LT && op != UKP_FOP_GT) {
		return -1;
	}
	if (pr->is_signed) {
		/* the low pr->size bytes, sign-extended: the word's other
		 * bits do not count */
		width = pr->size < 8 ? (1ULL << (pr->size * 8)) - 1 : ~0ULL;
		if ((mask & width) != width)
			return -1;
		mask = width;
		max = width >> 1;
		min = ~max;
	} else {
		/* the word as it is, cut to the register's size */
		min = 0;
		max = mask;
	}
	if (!true_range(op, pr->is_signed, pr->val, min, max, &lo, &hi)) {
		/* false for every value: the empty range */
		s->lo = 0;
		s->len = 0;
	} else if (lo == min && hi == max) {
		/* true for every value: false for every value, swapped */
		s->lo = 0;
		s->len = 0;
		swap = !swap;
	} else {
		/* [lo, hi] modulo the mask's width: (x - lo) & mask <= hi - lo */
		s->lo = lo & mask;
		s->len = ((hi - lo) & mask) + 1;
	}
	s->mask = mask;
	if (swap) {
		uint8_t x = s->t;

		s->t = s->f;
		s->f = x;
	}
	return b->next;
}

/* The code of node n, going to t when it is true and to f when false:
 * its first step, or -1. Operands are placed after the step that leads to
 * them, so every target is known when a step is written. */
static int place(struct builder *b, int n, unsigned int t, unsigned int f)
{
	const struct node *nd = &b->nodes[n];
	int right;

	switch (nd->kind) {
	case UKP_FI_PRED:
		return step(b, &b->f->preds[nd->pred], t, f);
	case UKP_FI_NOT:
		return place(b, nd->a, f, t);
	case UKP_FI_AND:
		right = place(b, nd->b, t, f);
		return right < 0 ? -1 : place(b, nd->a, (unsigned int)right, f);
	case UKP_FI_OR:
		right = place(b, nd->b, t, f);
		return right < 0 ? -1 : place(b, nd->a, t, (unsigned int)right);
	}
	return -1;
}

int ukp_fbranch_build(const struct ukp_filter *f, const struct ukp_spec *spec,
		      enum ukp_fb_source src, struct ukp_fbranch *out)
{
	static struct builder zero;
	struct builder b = zero;
	int stack[3 * UKP_FILTER_MAX_PREDS], sp = 0, n = 0, first, i;

	if (f->uses_pid || f->uses_comm || f->ninsns < 1 || f->ninsns > 3 * UKP_FILTER_MAX_PREDS)
		return -1;
	b.f = f;
	b.spec = spec;
	b.src = src;
	b.out = out;
	b.next = UKP_FILTER_MAX_PREDS;
	/* the postfix program as a tree */
	for (i = 0; i < f->ninsns; i++) {
		struct node *nd = &b.nodes[n];

		nd->kind = (int)(f->insns[i] & 0xff);
		switch (nd->kind) {
		case UKP_FI_PRED:
			nd->pred = (int)(f->insns[i] >> 8);
			if (nd->pred >= f->npreds)
				return -1;
			break;
		case UKP_FI_NOT:
			if (sp < 1)
				return -1;
			nd->a = stack[--sp];
			break;
		case UKP_FI_AND:
		case UKP_FI_OR:
			if (sp < 2)
				return -1;
			nd->b = stack[--sp];
			nd->a = stack[--sp];
			break;
		default:
			return -1;
		}
		stack[sp++] = n++;
	}
	if (sp != 1)
		return -1;
	first = place(&b, stack[0], UKP_FB_ACCEPT, UKP_FB_REJECT);
	if (first < 0)
		return -1;
	/* the steps were placed at the array's end: move them to its start */
	out->nsteps = (uint8_t)(UKP_FILTER_MAX_PREDS - b.next);
	for (i = 0; i < out->nsteps; i++) {
		struct ukp_fb_step s = out->steps[b.next + i];

		if (s.t < UKP_FB_ACCEPT)
			s.t = (uint8_t)(s.t - b.next);
		if (s.f < UKP_FB_ACCEPT)
			s.f = (uint8_t)(s.f - b.next);
		out->steps[i] = s;
	}
	out->entry = (uint8_t)(first - b.next);
	/* the outcome for every combination of the steps' results: bit
	 * nsteps - 1 - k of i is step k's (ukp_fbranch_run) */
	out->tabled = out->nsteps <= UKP_FB_TABLE_MAX;
	out->table = 0;
	for (i = 0; out->tabled && i < (1 << out->nsteps); i++) {
		unsigned int at = out->entry;

		while (at < UKP_FB_ACCEPT)
			at = (i >> (out->nsteps - 1 - at)) & 1 ? out->steps[at].t : out->steps[at].f;
		if (at == UKP_FB_ACCEPT)
			out->table |= 1ULL << i;
	}
	return 0;
}
