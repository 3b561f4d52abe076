// SPDX-License-Identifier: MIT
/*
 * branches.c - the control transfers of x86-64 code, for the
 * jump-optimization safety check (see arch_branches.h).
 *
 * Direct transfers carry their target in the instruction. Indirect jumps
 * are resolved only when they are a compiler's switch dispatch:
 *
 *   PIC (GCC, clang):   lea   T(%rip), %rB          (anywhere in the code)
 *                       movslq D(%rB,%rI,4), %rE
 *                       add   %rB, %rE              (or add %rE, %rB)
 *                       jmp   *%rE                  (notrack or not)
 *       targets: T + the int32 entries at T + D
 *   non-PIC:            jmp *T(,%rI,8)   or  mov T(,%rI,8), %rJ ; jmp *%rJ
 *       targets: the 8-byte entries at T (T may also be lea'd into a base)
 *
 * The movslq/add/jmp (or mov/jmp) part must be straight-line code right
 * before the jump. Where T came from is not traced through the control
 * flow: every rip-relative lea of the scanned code is taken as a possible
 * T (a table base spilled to the stack and reloaded is still found). Of a
 * wrong candidate, the first entry almost never lands inside the code, and
 * entries are read only while they do: the set of targets can grow, which
 * at worst refuses an optimization, but not shrink. A dispatch for which
 * no candidate yields a target is reported as unknown.
 *
 * [reg] everything here: registration time, may allocate. Zydis types
 * stay in this file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "arch.h"
#include "arch_branches.h"
#include "decoder.h"
#include "grow_array.h"

/* Entries read from one table at most: far more than any switch has. */
#define TABLE_MAX_ENTRIES 65536u
/* Straight-line instructions kept for recognising a dispatch. */
#define WINDOW 16u
#define NO_GPR (-1)

/* What a recent instruction did, as far as dispatch patterns care. */
struct isum {
	uintptr_t at;           /* its address */
	bool cond;              /* a conditional branch (the window goes on
				 * along its fall-through path) */
	uint16_t writes;        /* general-purpose registers written (bit n = gpr n) */
	ZydisMnemonic mnem;
	int8_t dst;             /* 64-bit register written whole, or NO_GPR */
	int8_t src;             /* add: the 64-bit source register */
	/* a load dst <- [base + index * scale + disp] */
	bool load;
	uint8_t load_bits;      /* size of the memory operand */
	bool base_rip;
	int8_t base, index;     /* NO_GPR when absent */
	uint8_t scale;
	int64_t disp;
};

enum table_kind {
	TABLE_REL32,            /* int32 entries at B + disp, targets B + entry */
	TABLE_ABS64,            /* 8-byte entries at B + disp, targets the entries */
};

/* An indirect jump waiting for the table bases of all the code. */
struct dispatch {
	uintptr_t from;
	enum table_kind kind;
	bool lea_base;          /* B is every lea candidate; else B = 0 */
	int64_t disp;
};

struct flow_scan {
	const ZydisDecoder *full, *minimal;
	const struct arch_code_part *parts;
	size_t nparts;
	unsigned int flags;
	arch_flow_fn fn;
	void *arg;
	struct isum win[WINDOW]; /* ring of the straight-line instructions before */
	unsigned int nwin, head;
	uintptr_t *leas;        /* rip-relative lea values */
	size_t nleas, cap_leas;
	struct dispatch *disp;
	size_t ndisp, cap_disp;
};

/* gpr number 0..15 (rax, rcx, ..., r15) of a register of any width */
static int gpr_of(ZydisRegister reg)
{
	ZydisRegister r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);

	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
		return (int)(r - ZYDIS_REGISTER_RAX);
	return NO_GPR;
}

/* gpr number of a 64-bit register, NO_GPR for any other */
static int gpr64(ZydisRegister reg)
{
	return reg >= ZYDIS_REGISTER_RAX && reg <= ZYDIS_REGISTER_R15 ?
		       (int)(reg - ZYDIS_REGISTER_RAX) : NO_GPR;
}

static bool in_parts(const struct flow_scan *s, uintptr_t a)
{
	size_t i;

	for (i = 0; i < s->nparts; i++)
		if (a >= s->parts[i].addr && a - s->parts[i].addr < s->parts[i].len)
			return true;
	return false;
}

static bool writes_ip(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	unsigned int i;

	for (i = 0; i < insn->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    (ops[i].reg.value == ZYDIS_REGISTER_RIP || ops[i].reg.value == ZYDIS_REGISTER_EIP))
			return true;
	return false;
}

static int push_lea(struct flow_scan *s, uintptr_t v)
{
	uintptr_t *leas = ukp_grow(s->leas, &s->cap_leas, s->nleas, sizeof(*leas));

	if (!leas)
		return -ENOMEM;
	s->leas = leas;
	s->leas[s->nleas++] = v;
	return 0;
}

static int push_dispatch(struct flow_scan *s, uintptr_t from, enum table_kind kind,
			 bool lea_base, int64_t disp)
{
	struct dispatch *d = ukp_grow(s->disp, &s->cap_disp, s->ndisp, sizeof(*d));

	if (!d)
		return -ENOMEM;
	s->disp = d;
	d = &s->disp[s->ndisp++];
	d->from = from;
	d->kind = kind;
	d->lea_base = lea_base;
	d->disp = disp;
	return 0;
}

/* The i-th most recent instruction of the window (0 = the last one). */
static const struct isum *win_get(const struct flow_scan *s, unsigned int i)
{
	return &s->win[(s->head + WINDOW - 1 - i) % WINDOW];
}

static void win_push(struct flow_scan *s, const struct isum *is)
{
	s->win[s->head] = *is;
	s->head = (s->head + 1) % WINDOW;
	if (s->nwin < WINDOW)
		s->nwin++;
}

/* Index in the window of the last writer of gpr r at or after index from. */
static int last_writer(const struct flow_scan *s, unsigned int from, int r)
{
	unsigned int i;

	for (i = from; i < s->nwin; i++)
		if (win_get(s, i)->writes & (1u << r))
			return (int)i;
	return -1;
}

/* Is gpr r left alone by the window entries from index from up to (not
 * including) index until (from < until: newer ones first)? */
static bool unchanged_since(const struct flow_scan *s, unsigned int from, int r, int until)
{
	int w = last_writer(s, from, r);

	return w < 0 || w >= until;
}

/* Is the window entry a movslq E <- dword [B + I*4 + disp] with base b? */
static bool is_entry_load(const struct isum *is, int e, int b)
{
	return is->mnem == ZYDIS_MNEMONIC_MOVSXD && is->load && is->load_bits == 32 &&
	       is->dst == e && is->base == b && is->index != NO_GPR && is->scale == 4;
}

/*
 * [reg] jmp *%rJ: which dispatch is it? Returns 1 and fills *kind etc.
 * for a table, 0 when not recognised.
 */
static int match_reg_dispatch(const struct flow_scan *s, int j, enum table_kind *kind,
			      bool *lea_base, int64_t *disp)
{
	const struct isum *w1, *w2;
	int i1, i2;

	i1 = last_writer(s, 0, j);
	if (i1 < 0)
		return 0;
	w1 = win_get(s, (unsigned int)i1);

	if (w1->mnem == ZYDIS_MNEMONIC_ADD && w1->dst == j && w1->src != NO_GPR) {
		int other = w1->src;

		/* add %rB, %rE with E = movslq [B + I*4] ... */
		if (other == j)
			return 0;
		i2 = last_writer(s, (unsigned int)i1 + 1, j);
		if (i2 >= 0 && is_entry_load(win_get(s, (unsigned int)i2), j, other) &&
		    unchanged_since(s, (unsigned int)i1 + 1, other, i2)) {
			w2 = win_get(s, (unsigned int)i2);
			goto rel32;
		}
		/* ... or add %rE, %rB with E = movslq [B + I*4] */
		i2 = last_writer(s, (unsigned int)i1 + 1, other);
		if (i2 >= 0 && is_entry_load(win_get(s, (unsigned int)i2), other, j) &&
		    unchanged_since(s, (unsigned int)i1 + 1, j, i2)) {
			w2 = win_get(s, (unsigned int)i2);
			goto rel32;
		}
		return 0;
rel32:
		*kind = TABLE_REL32;
		*lea_base = true;
		*disp = w2->disp;
		return 1;
	}

	if (w1->mnem == ZYDIS_MNEMONIC_MOV && w1->dst == j && w1->load && w1->load_bits == 64) {
		if (!w1->base_rip && w1->index != NO_GPR && w1->scale == 8) {
			*kind = TABLE_ABS64;
			*lea_base = w1->base != NO_GPR;
			*disp = w1->disp;
			return 1;
		}
	}
	return 0;
}

/* Entries of the window after the newest conditional branch: a table
 * dispatch is matched on straight-line code only. */
static unsigned int straight_len(const struct flow_scan *s)
{
	unsigned int i;

	for (i = 0; i < s->nwin; i++)
		if (win_get(s, i)->cond)
			return i;
	return s->nwin;
}

/*
 * [reg] jmp *%rJ that is no table dispatch: is %rJ, on the path through
 * the window (which crosses the fall-through of conditional branches),
 * a pointer loaded from memory without an index register and not from
 * the stack? Returns the address of that load (*rip: from rip-relative
 * memory, a global or a GOT slot), or 0.
 */
static uintptr_t pointer_load(const struct flow_scan *s, int j, bool *rip)
{
	const struct isum *w;
	int i = last_writer(s, 0, j);

	if (i < 0)
		return 0;
	w = win_get(s, (unsigned int)i);
	if (w->mnem != ZYDIS_MNEMONIC_MOV || w->dst != j || !w->load || w->load_bits != 64 ||
	    w->index != NO_GPR || w->base == 4 /* rsp */ || (w->base == NO_GPR && !w->base_rip))
		return 0;
	*rip = w->base_rip;
	return w->at;
}

/* [reg] An indirect jmp: report, queue for table resolution, or ignore. */
static int indirect_jump(struct flow_scan *s, uintptr_t from, const ZydisDecodedOperand *op)
{
	enum table_kind kind;
	bool lea_base;
	int64_t disp;
	int m;

	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		int j = gpr64(op->reg.value);
		unsigned int nwin = s->nwin;
		uintptr_t def;
		bool rip = false;

		s->nwin = straight_len(s);
		m = j == NO_GPR ? 0 : match_reg_dispatch(s, j, &kind, &lea_base, &disp);
		s->nwin = nwin;
		if (m == 1)
			return push_dispatch(s, from, kind, lea_base, disp);
		def = j == NO_GPR ? 0 : pointer_load(s, j, &rip);
		if (def)
			return s->fn(s->arg, rip ? ARCH_FLOW_GLOBAL_POINTER : ARCH_FLOW_POINTER, from,
				     def);
	} else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		   op->mem.segment != ZYDIS_REGISTER_FS && op->mem.segment != ZYDIS_REGISTER_GS) {
		int64_t d = op->mem.disp.has_displacement ? op->mem.disp.value : 0;

		if ((op->mem.base == ZYDIS_REGISTER_RIP || op->mem.base == ZYDIS_REGISTER_EIP) &&
		    op->mem.index == ZYDIS_REGISTER_NONE)	/* a global or a GOT slot */
			return s->fn(s->arg, ARCH_FLOW_GLOBAL_POINTER, from, from);
		if (op->mem.index != ZYDIS_REGISTER_NONE && op->mem.scale == 8 &&
		    gpr64(op->mem.index) != NO_GPR) {
			if (op->mem.base == ZYDIS_REGISTER_NONE)
				return push_dispatch(s, from, TABLE_ABS64, false, d);
			if (gpr64(op->mem.base) != NO_GPR)
				return push_dispatch(s, from, TABLE_ABS64, true, d);
		}
		if (op->mem.index == ZYDIS_REGISTER_NONE && op->size == 64 &&
		    gpr64(op->mem.base) != NO_GPR && op->mem.base != ZYDIS_REGISTER_RSP)
			return s->fn(s->arg, ARCH_FLOW_POINTER, from, from); /* jmp *d(%rB) */
	}
	return s->fn(s->arg, ARCH_FLOW_UNKNOWN, from, 0);
}

/* [reg] Summarise one decoded instruction for the window. */
static void summarise(struct isum *is, const ZydisDecodedInstruction *insn,
		      const ZydisDecodedOperand *ops)
{
	unsigned int i;

	memset(is, 0, sizeof(*is));
	is->mnem = insn->mnemonic;
	is->dst = is->src = is->base = is->index = NO_GPR;
	for (i = 0; i < insn->operand_count; i++) {
		int r;

		if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		r = gpr_of(ops[i].reg.value);
		if (r != NO_GPR)
			is->writes |= (uint16_t)(1u << r);
	}
	if (insn->operand_count_visible < 2 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return;
	is->dst = (int8_t)gpr64(ops[0].reg.value);
	if (ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER) {
		is->src = (int8_t)gpr64(ops[1].reg.value);
	} else if (ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		   ops[1].mem.type == ZYDIS_MEMOP_TYPE_MEM &&
		   ops[1].mem.segment != ZYDIS_REGISTER_FS && ops[1].mem.segment != ZYDIS_REGISTER_GS) {
		is->load = true;
		is->load_bits = (uint8_t)ops[1].size;
		is->base_rip = ops[1].mem.base == ZYDIS_REGISTER_RIP;
		is->base = (int8_t)gpr64(ops[1].mem.base);
		is->index = (int8_t)gpr64(ops[1].mem.index);
		is->scale = ops[1].mem.scale;
		is->disp = ops[1].mem.disp.has_displacement ? ops[1].mem.disp.value : 0;
		/* a base or index that is not a 64-bit gpr: not a table load */
		if ((ops[1].mem.base != ZYDIS_REGISTER_NONE && !is->base_rip && is->base == NO_GPR) ||
		    (ops[1].mem.index != ZYDIS_REGISTER_NONE && is->index == NO_GPR))
			is->load = false;
	}
}

/* [reg] One decoded instruction of a full scan. */
static int full_insn(struct flow_scan *s, uintptr_t at, const ZydisDecodedInstruction *insn,
		     const ZydisDecodedOperand *ops)
{
	struct isum is;
	int ret;

	if (insn->raw.imm[0].is_relative) {
		uintptr_t target = at + insn->length + (uintptr_t)insn->raw.imm[0].value.s;

		ret = s->fn(s->arg, ARCH_FLOW_DIRECT, at, target);
		if (ret)
			return ret;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_LEA && insn->operand_count_visible >= 2 &&
	    ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[1].mem.base == ZYDIS_REGISTER_RIP &&
	    ops[1].mem.index == ZYDIS_REGISTER_NONE && gpr64(ops[0].reg.value) != NO_GPR) {
		ret = push_lea(s, at + insn->length + (uintptr_t)ops[1].mem.disp.value);
		if (ret)
			return ret;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_JMP && !insn->raw.imm[0].is_relative) {
		if (insn->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
			ret = s->fn(s->arg, ARCH_FLOW_UNKNOWN, at, 0);
		else
			ret = indirect_jump(s, at, &ops[0]);
		if (ret)
			return ret;
	}
	if (writes_ip(insn, ops) && insn->meta.category != ZYDIS_CATEGORY_COND_BR) {
		s->nwin = 0;	/* a dispatch is straight-line code */
		return 0;
	}
	summarise(&is, insn, ops);
	is.at = at;
	is.cond = insn->meta.category == ZYDIS_CATEGORY_COND_BR;
	win_push(s, &is);
	return 0;
}

/* [reg] Decode one part, reporting as we go. */
static int scan_part(struct flow_scan *s, const struct arch_code_part *p)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t pos = 0;
	int ret;

	s->nwin = 0;
	while (pos < p->len) {
		uintptr_t at = p->addr + pos;
		ZyanStatus st;

		if (s->flags & ARCH_FLOW_DIRECT_ONLY)
			st = ZydisDecoderDecodeInstruction(s->minimal, NULL, p->code + pos,
							   p->len - pos, &insn);
		else
			st = ZydisDecoderDecodeFull(s->full, p->code + pos, p->len - pos,
						    &insn, ops);
		if (!ZYAN_SUCCESS(st)) {
			if (!(s->flags & ARCH_FLOW_DIRECT_ONLY)) {
				ret = s->fn(s->arg, ARCH_FLOW_UNDECODABLE, at, 0);
				if (ret)
					return ret;
			}
			s->nwin = 0;
			pos++;
			continue;
		}
		if (s->flags & ARCH_FLOW_DIRECT_ONLY) {
			if (insn.raw.imm[0].is_relative) {
				ret = s->fn(s->arg, ARCH_FLOW_DIRECT, at,
					    at + insn.length + (uintptr_t)insn.raw.imm[0].value.s);
				if (ret)
					return ret;
			}
		} else {
			ret = full_insn(s, at, &insn, ops);
			if (ret)
				return ret;
		}
		pos += insn.length;
	}
	return 0;
}

/*
 * [reg] Read the table of one dispatch at base; report every target while
 * they stay inside the parts. Returns the callback's value or 0; counts
 * the targets in *found.
 */
static int read_table(struct flow_scan *s, const struct dispatch *d, uintptr_t base,
		      size_t *found)
{
	uintptr_t at = base + (uintptr_t)d->disp;
	size_t size = d->kind == TABLE_REL32 ? 4 : 8;
	unsigned int i;
	int ret;

	for (i = 0; i < TABLE_MAX_ENTRIES; i++, at += size) {
		uintptr_t target;

		if (d->kind == TABLE_REL32) {
			int32_t e;

			if (arch_copy_nofault(&e, (const void *)at, sizeof(e)))
				break;
			target = base + (uintptr_t)(intptr_t)e;
		} else {
			uint64_t e;

			if (arch_copy_nofault(&e, (const void *)at, sizeof(e)))
				break;
			target = (uintptr_t)e;
		}
		if (!in_parts(s, target))
			break;
		(*found)++;
		ret = s->fn(s->arg, ARCH_FLOW_TABLE, d->from, target);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] Every queued dispatch against every candidate base. */
static int resolve_tables(struct flow_scan *s)
{
	size_t i, k;
	int ret;

	s->nleas = ukp_addrs_sort_unique(s->leas, s->nleas);
	for (k = 0; k < s->nleas; k++) {
		if (!in_parts(s, s->leas[k]))
			continue;
		ret = s->fn(s->arg, ARCH_FLOW_ADDRESS, 0, s->leas[k]);
		if (ret)
			return ret;
	}
	for (i = 0; i < s->ndisp; i++) {
		const struct dispatch *d = &s->disp[i];
		size_t found = 0;

		if (d->lea_base) {
			for (k = 0; k < s->nleas; k++) {
				ret = read_table(s, d, s->leas[k], &found);
				if (ret)
					return ret;
			}
		} else {
			ret = read_table(s, d, 0, &found);
			if (ret)
				return ret;
		}
		if (!found) {
			ret = s->fn(s->arg, ARCH_FLOW_UNKNOWN, d->from, 0);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* [reg] */
int arch_scan_flow(const struct arch_code_part *parts, size_t nparts, unsigned int flags,
		   arch_flow_fn fn, void *arg)
{
	struct flow_scan *s;
	size_t i;
	int ret = 0;

	if (!ukp_x86_decoder(false) || !ukp_x86_decoder(true))
		return -EILSEQ;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->full = ukp_x86_decoder(false);
	s->minimal = ukp_x86_decoder(true);
	s->parts = parts;
	s->nparts = nparts;
	s->flags = flags;
	s->fn = fn;
	s->arg = arg;
	for (i = 0; i < nparts && !ret; i++)
		ret = scan_part(s, &parts[i]);
	if (!ret && !(flags & ARCH_FLOW_DIRECT_ONLY))
		ret = resolve_tables(s);
	free(s->leas);
	free(s->disp);
	free(s);
	return ret;
}

/* [reg] */
bool arch_is_padding(const uint8_t *code, size_t avail, size_t len)
{
	const ZydisDecoder *dec = ukp_x86_decoder(true);
	ZydisDecodedInstruction insn;
	size_t pos = 0;

	if (!dec)
		return false;
	if (len > avail)
		return false;
	while (pos < len) {
		if (code[pos] == 0x00 || code[pos] == 0xcc) {
			pos++;
			continue;
		}
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code + pos, avail - pos,
								&insn)) ||
		    insn.mnemonic != ZYDIS_MNEMONIC_NOP)
			return false;
		pos += insn.length;
	}
	return true;
}
