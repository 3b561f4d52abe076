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

/* one comparison's step, its targets given */
static int step(struct builder *b, const struct ukp_filter_pred *pr, unsigned int t,
		unsigned int f)
{
	const struct ukp_fetcharg *fa;
	struct ukp_fb_step *s;
	uint64_t flip;
	bool sext;

	if (pr->is_string || pr->arg < 0 || pr->arg >= b->spec->nargs || b->next <= 0)
		return -1;
	fa = &b->spec->args[pr->arg];
	s = &b->out->steps[--b->next];
	if (b->src == UKP_FB_REGS) {
		if (!fa->plain_reg || fa->param > UINT16_MAX)
			return -1;
		s->src = (uint16_t)fa->param;
		s->mask = fa->size < 8 ? (1ULL << (fa->size * 8)) - 1 : ~0ULL;
	} else if (b->src == UKP_FB_ARGS) {
		s->src = (uint16_t)pr->arg;
		s->mask = ~0ULL;
	} else {
		if (fa->off % 8 || fa->off / 8 > UINT16_MAX)
			return -1;
		s->src = (uint16_t)(fa->off / 8);
		s->mask = ~0ULL;
	}
	/* signed order is unsigned order with the sign bit flipped; & tests
	 * the bits as the slot holds them */
	sext = pr->is_signed && pr->op != UKP_FOP_AND;
	s->sh = sext && pr->size < 8 ? (uint8_t)(64 - 8 * pr->size) : 0;
	flip = sext ? SIGN_BIT : 0;
	s->t = (uint8_t)t;
	s->f = (uint8_t)f;
	/* every operator as one unsigned v < val (filter_branch.h) */
	switch (pr->op) {
	case UKP_FOP_NE:
		s->t = (uint8_t)f;
		s->f = (uint8_t)t;
		/* fall through */
	case UKP_FOP_EQ:
		/* (x ^ flip) == (c ^ flip): x ^ c < 1 */
		s->flip = pr->val;
		s->val = 1;
		break;
	case UKP_FOP_GE:
		s->t = (uint8_t)f;
		s->f = (uint8_t)t;
		/* fall through */
	case UKP_FOP_LT:
		s->flip = flip;
		s->val = pr->val ^ flip;
		break;
	case UKP_FOP_LE:
		s->t = (uint8_t)f;
		s->f = (uint8_t)t;
		/* fall through */
	case UKP_FOP_GT:
		/* x > c: ~x < ~c */
		s->flip = ~flip;
		s->val = ~(pr->val ^ flip);
		break;
	case UKP_FOP_AND:
		/* (x & c) != 0: not (x & c) < 1 */
		s->mask &= pr->val;
		s->flip = 0;
		s->val = 1;
		s->t = (uint8_t)f;
		s->f = (uint8_t)t;
		break;
	default:
		return -1;
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
	return 0;
}
