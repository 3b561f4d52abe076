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
 * entries are read only while they do - inside the scanned parts, or in
 * other code of the object: a table may send some cases to a cold part
 * that no symbol names (CPython's opcode table starts with one), and
 * stopping there would miss the entries after it. The set of targets can
 * grow, which at worst refuses an optimization, but not shrink. A
 * dispatch for which no candidate yields a target is reported as
 * unknown.
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

#include "arch/arch.h"
#include "arch/arch_branches.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */
#include "decoder.h"
#include "base/grow_array.h"
#include "base/lower_bound.h"

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
	size_t from_insn;       /* its index in insns */
	enum table_kind kind;
	bool lea_base;          /* B is every lea candidate; else B = 0 */
	int64_t disp;
	/* resolve_tables: the first dispatch with the same kind, lea_base
	 * and disp (the same tables), and what its reads found */
	size_t first;
	size_t found;
	size_t edge0, edge1;    /* its table edges in edges (when kept) */
};

/* One instruction, as the data flow of a jump register sees it. */
struct finsn {
	uintptr_t at;
	uint8_t len;
	bool falls;             /* execution may go on to the next instruction */
	bool call;              /* clobbers the caller-saved registers */
	bool first;             /* first of its part, or after undecodable bytes */
	uint16_t writes;        /* gprs written */
	int8_t ptr_dst;         /* a pointer load: mov d(%rB),%rD, 64-bit, no index,
				 * not from the stack: D; else NO_GPR */
	bool ptr_rip;           /* ... from rip-relative memory */
	int8_t copy_dst, copy_src; /* mov %rS,%rD (64-bit): D and S; else NO_GPR */
	int8_t jump_reg;        /* jmp *%rJ: J; else NO_GPR */
	uintptr_t target;       /* a direct jmp/jcc/call: its target; else 0 */
};

/* A table read that ended before TABLE_MAX_ENTRIES: n entries from start,
 * at base (TABLE_REL32; 0 for TABLE_ABS64); while edges are kept, the
 * target of each entry in rtargets[t0..t0 + n). A read that starts at one
 * of its entries reads the rest of it, and stops where it stopped: its
 * entries (read once, in switches laid out one after the other, as
 * CPython's _PyUnicode_ToNumeric's 43 tables). */
struct table_run {
	enum table_kind kind;
	uintptr_t base, start;
	size_t n, t0;
};

/* Runs shorter than this are read again (a wrong lea candidate's read
 * stops at once). */
#define RUN_MIN 8u

/* A transfer to target from insns[from]. */
struct edge {
	uintptr_t target;
	size_t from;
};

struct flow_scan {
	const ZydisDecoder *full, *minimal;
	const struct arch_code_part *parts;
	size_t nparts;
	uintptr_t code_lo, code_hi; /* the object's code, for table entries */
	unsigned int flags;
	bool lite;              /* no part needs the full scan (lite_enough) */
	arch_flow_fn fn;
	void *arg;
	struct isum win[WINDOW]; /* ring of the straight-line instructions before */
	unsigned int nwin, head;
	uintptr_t *leas;        /* rip-relative lea values */
	size_t nleas, cap_leas;
	struct dispatch *disp;
	size_t ndisp, cap_disp;
	/* every instruction of the parts (full scans), for the data flow of
	 * jumps through registers (pointer_paths) */
	struct finsn *insns;
	size_t ninsns, cap_insns;
	struct edge *edges;     /* direct and table transfers inside the parts, by target */
	size_t nedges, cap_edges;
	size_t *pending;        /* jmp *%reg to analyse: indexes into insns */
	size_t npending, cap_pending;
	struct table_run *runs; /* the tables read */
	size_t nruns, cap_runs;
	uintptr_t *rtargets;
	size_t nrtargets, cap_rtargets;
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
	d->from_insn = s->ninsns - 1;	/* recorded before it is looked at */
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

		s->nwin = straight_len(s);
		m = j == NO_GPR ? 0 : match_reg_dispatch(s, j, &kind, &lea_base, &disp);
		s->nwin = nwin;
		if (m == 1)
			return push_dispatch(s, from, kind, lea_base, disp);
		if (j != NO_GPR) {	/* a pointer? pointer_paths, after the tables */
			size_t *p = ukp_grow(s->pending, &s->cap_pending, s->npending,
					     sizeof(*p));

			if (!p)
				return -ENOMEM;
			s->pending = p;
			s->pending[s->npending++] = s->ninsns - 1;
			return 0;
		}
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

/*
 * Is the memory operand of a load a place where a pointer is kept, not
 * a table or the stack? d(%rB) and g(%rip), and d(%rB,%rI,1) (a field at
 * a variable offset: an object's vectorcall slot); not a scaled index (a
 * table of addresses, resolved as a jump table or refused), not rsp- or
 * frame-based (d(%rsp), a negative offset from %rbp: a spilled register
 * may hold a computed switch target, see codeflow.c).
 */
static bool pointer_source(const struct isum *is)
{
	if (is->base_rip)
		return is->index == NO_GPR;
	if (is->base == NO_GPR || is->base == 4 /* rsp */ ||
	    (is->base == 5 /* rbp */ && is->disp < 0))
		return false;
	return is->index == NO_GPR || (is->scale == 1 && is->index != 4);
}

/* [reg] Keep one instruction of a full scan for pointer_paths. */
static int record_insn(struct flow_scan *s, uintptr_t at, const ZydisDecodedInstruction *insn,
		       const ZydisDecodedOperand *ops, const struct isum *is)
{
	struct finsn *f = ukp_grow(s->insns, &s->cap_insns, s->ninsns, sizeof(*f));
	bool jmp = insn->mnemonic == ZYDIS_MNEMONIC_JMP;

	if (!f)
		return -ENOMEM;
	s->insns = f;
	f = &s->insns[s->ninsns];
	memset(f, 0, sizeof(*f));
	f->at = at;
	f->len = insn->length;
	f->falls = !jmp && insn->mnemonic != ZYDIS_MNEMONIC_RET;
	f->call = insn->meta.category == ZYDIS_CATEGORY_CALL;
	f->first = !s->ninsns || s->insns[s->ninsns - 1].at + s->insns[s->ninsns - 1].len != at;
	f->writes = is->writes;
	f->ptr_dst = f->copy_dst = f->copy_src = f->jump_reg = NO_GPR;
	if (is->mnem == ZYDIS_MNEMONIC_MOV && is->dst != NO_GPR && is->load && is->load_bits == 64 &&
	    pointer_source(is)) {
		f->ptr_dst = is->dst;
		f->ptr_rip = is->base_rip;
	}
	if (is->mnem == ZYDIS_MNEMONIC_MOV && is->dst != NO_GPR && is->src != NO_GPR && !is->load) {
		f->copy_dst = is->dst;
		f->copy_src = is->src;
	}
	if (jmp && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER)
		f->jump_reg = (int8_t)gpr64(ops[0].reg.value);
	if (insn->raw.imm[0].is_relative)
		f->target = at + insn->length + (uintptr_t)insn->raw.imm[0].value.s;
	s->ninsns++;
	return 0;
}

static int push_edge(struct flow_scan *s, uintptr_t target, size_t from)
{
	struct edge *e = ukp_grow(s->edges, &s->cap_edges, s->nedges, sizeof(*e));

	if (!e)
		return -ENOMEM;
	s->edges = e;
	s->edges[s->nedges].target = target;
	s->edges[s->nedges++].from = from;
	return 0;
}

static int edge_cmp(const void *pa, const void *pb)
{
	const struct edge *a = pa, *b = pb;

	if (a->target != b->target)
		return (a->target > b->target) - (a->target < b->target);
	return (a->from > b->from) - (a->from < b->from);
}

/* First edge to target (s->edges sorted). */
static size_t edge_lower(const struct flow_scan *s, uintptr_t target)
{
	return UKP_LOWER_BOUND(s->edges, s->nedges, target, target);
}

/* rax, rcx, rdx, rsi, rdi, r8-r11: what a call may change (psABI) */
#define CALLER_SAVED 0x0fc7u
/* rdi, rsi, rdx, rcx, r8, r9: the integer arguments (psABI) */
#define ARG_REGS 0x03c6u
/* (instruction, register) pairs looked at per jump, at most */
#define PATH_MAX_VISITS 8192u

struct path_work {
	size_t at;              /* insns index */
	int8_t reg;             /* the register whose value at its entry we want */
};

/*
 * [reg] jmp *%rJ that is no table dispatch (insns[j]): does %rJ hold, on
 * every path that reaches the jump, a pointer loaded from memory without
 * an index register and not from the stack? A backward search over the
 * instructions of the parts: the predecessors of an instruction are the
 * one before it when that one goes on to it (not a jmp or ret), and every
 * direct transfer and resolved table entry to it; along a path the value
 * may be copied from another register (mov %rS,%rJ), may cross a call
 * only in a callee-saved register, and must not come from the function's
 * entry (an argument); an instruction with no predecessor (the padding
 * after a ret) is reached by no path.
 * Every instruction the value passes through on its way (the jump
 * included, the loads not) must not be entered from outside the parts:
 * those are reported as ARCH_FLOW_POINTER_PATH spans for the caller to
 * check (targets of other code, landing pads). Then POINTER or
 * GLOBAL_POINTER (every load rip-relative): target the load when there
 * is one load and the path is the straight run from it to the jump (the
 * caller checks (load, jump] then), else the jump itself. UNKNOWN when
 * the search fails.
 */
static int pointer_paths(struct flow_scan *s, size_t j)
{
	struct path_work *stack = NULL;
	size_t nstack = 0, cap = 0, visits = 0, ndefs = 0, def = 0, i, first = s->ninsns, last = 0;
	uint16_t *seen = calloc(s->ninsns, sizeof(*seen));
	uint8_t *mark = calloc(s->ninsns, 1);
	bool ok = seen && mark, all_rip = true, args = false, straight;
	int ret = 0;

#define PUSH(i_, r_) do {                                                        \
		struct path_work *w_ = ukp_grow(stack, &cap, nstack, sizeof(*stack)); \
		if (!w_) { ret = -ENOMEM; goto out; }                                 \
		stack = w_;                                                           \
		stack[nstack].at = (i_);                                              \
		stack[nstack++].reg = (int8_t)(r_);                                   \
	} while (0)

	if (!ok) {
		ret = -ENOMEM;
		goto out;
	}
	PUSH(j, s->insns[j].jump_reg);
	while (ok && nstack) {
		struct path_work w = stack[--nstack];
		const struct finsn *f = &s->insns[w.at];
		bool through;
		size_t e;

		if (seen[w.at] & (1u << w.reg))
			continue;
		seen[w.at] |= (uint16_t)(1u << w.reg);
		mark[w.at] = 1;
		if (++visits > PATH_MAX_VISITS) {
			ok = false;
			break;
		}
		if (f->at == s->parts[0].addr) {
			/* the caller's value: an argument made by other code,
			 * which holds no address inside this function that
			 * the taken-address and label checks do not see */
			if (!(ARG_REGS & (1u << w.reg))) {
				ok = false;
				break;
			}
			ndefs++;
			args = true;
			all_rip = false;
		}
		e = edge_lower(s, f->at);
		/* the instruction before it first (when it may fall through),
		 * then every transfer to it */
		for (i = f->first ? s->ninsns : w.at - 1, through = true;;
		     i = s->edges[e++].from, through = false) {
			const struct finsn *p;

			if (i == s->ninsns) {	/* no fall-through: the edges only */
				if (e < s->nedges && s->edges[e].target == f->at)
					continue;
				break;
			}
			p = &s->insns[i];
			if (through && !p->falls)
				goto next;
			if (p->writes & (1u << w.reg)) {
				if (p->ptr_dst == w.reg) {
					ndefs++;
					def = i;
					all_rip &= p->ptr_rip;
				} else if (p->copy_dst == w.reg && p->copy_src != 4 /* rsp */) {
					PUSH(i, p->copy_src);
				} else {
					ok = false;
					break;
				}
			} else if (p->call && (CALLER_SAVED & (1u << w.reg))) {
				ok = false;
				break;
			} else {
				PUSH(i, w.reg);
			}
next:
			if (!(e < s->nedges && s->edges[e].target == f->at))
				break;
		}
		/* none at all: unreachable (padding after a ret) but from
		 * outside the parts, which the spans let the caller check */
	}
	if (!ok || !ndefs) {
		ret = s->fn(s->arg, ARCH_FLOW_UNKNOWN, s->insns[j].at, 0);
		goto out;
	}
	for (i = 0; i < s->ninsns; i++) {
		if (!mark[i])
			continue;
		first = first < i ? first : i;
		last = i;
	}
	straight = ndefs == 1 && !args && first == def + 1 && last == j;
	for (i = first; straight && i <= last; i++)
		straight = mark[i] && !s->insns[i].first;
	if (straight) {
		ret = s->fn(s->arg, all_rip ? ARCH_FLOW_GLOBAL_POINTER : ARCH_FLOW_POINTER,
			    s->insns[j].at, s->insns[def].at);
		goto out;
	}
	for (i = 0; i < s->ninsns && !ret; i++) {
		size_t k = i;

		if (!mark[i])
			continue;
		while (k + 1 < s->ninsns && mark[k + 1] && !s->insns[k + 1].first)
			k++;
		ret = s->fn(s->arg, ARCH_FLOW_POINTER_PATH, s->insns[i].at, s->insns[k].at);
		i = k;
	}
	if (!ret)
		ret = s->fn(s->arg, all_rip ? ARCH_FLOW_GLOBAL_POINTER : ARCH_FLOW_POINTER,
			    s->insns[j].at, s->insns[j].at);
out:
#undef PUSH
	free(stack);
	free(seen);
	free(mark);
	return ret;
}

/* [reg] The jumps through registers, once every transfer is known. */
static int resolve_pointers(struct flow_scan *s)
{
	size_t i;
	int ret;

	if (!s->npending)
		return 0;
	for (i = 0; i < s->ninsns; i++) {
		if (s->insns[i].target) {
			ret = push_edge(s, s->insns[i].target, i);
			if (ret)
				return ret;
		}
	}
	if (s->nedges)
		ukp_sort(s->edges, s->nedges, sizeof(*s->edges), edge_cmp);
	for (i = 0; i < s->npending; i++) {
		ret = pointer_paths(s, s->pending[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] One decoded instruction of a full scan. */
static int full_insn(struct flow_scan *s, uintptr_t at, const ZydisDecodedInstruction *insn,
		     const ZydisDecodedOperand *ops)
{
	struct isum is;
	int ret;

	summarise(&is, insn, ops);
	ret = record_insn(s, at, insn, ops, &is);
	if (ret)
		return ret;
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
	is.at = at;
	is.cond = insn->meta.category == ZYDIS_CATEGORY_COND_BR;
	win_push(s, &is);
	return 0;
}

/* A finding of the table decoder's scan: a direct transfer from at to
 * value, or (lea) a rip-relative lea of value. */
struct lite_find {
	uintptr_t at, value;
	bool lea;
};

/* The findings lite_enough keeps, on the stack: no allocation per
 * function (while probes of an earlier batch are breakpoints, each call
 * into a probed malloc would be a hit). A function with more is decoded
 * again by scan_part. */
#define LITE_FINDS 256u

/*
 * [reg] Can the parts be scanned with the table decoder? The full scan
 * reads operands for the jumps through registers and memory (dispatch
 * tables, pointer paths) and the rip-relative leas; a function without
 * such a jump, every byte of it decodable, reports the same with the
 * direct transfers and the leas alone (most functions: the decoding of
 * operands was most of a probe's analysis). When it can, what that scan
 * finds, in its order, into finds[LITE_FINDS] (*nfinds of them; more than
 * LITE_FINDS: *nfinds is LITE_FINDS + 1 and finds not filled in full):
 * the scan is this decoding's. 1 (yes) or 0.
 */
static int lite_enough(const struct flow_scan *s, struct lite_find *finds, size_t *nfinds)
{
	struct x86_lite lite;
	size_t i, pos;

	*nfinds = 0;
	for (i = 0; i < s->nparts; i++) {
		const struct arch_code_part *p = &s->parts[i];

		for (pos = 0; pos < p->len; pos += lite.len) {
			uintptr_t at = p->addr + pos;
			int k;

			if (!ukp_x86_decode_lite(s->minimal, p->code + pos, p->len - pos, &lite) ||
			    lite.flow == LITE_FLOW_FULL)
				return 0;
			/* as scan_part: the transfer, then the lea */
			for (k = 0; k < 2; k++) {
				if (k == 0 ? !lite.imm[0].rel : lite.flow != LITE_FLOW_LEA_RIP)
					continue;
				if (*nfinds == LITE_FINDS) {
					*nfinds = LITE_FINDS + 1;	/* too many to keep */
					continue;
				}
				if (*nfinds > LITE_FINDS)
					continue;
				finds[*nfinds].at = at;
				finds[*nfinds].lea = k == 1;
				finds[(*nfinds)++].value = at + lite.len +
					(k == 0 ? (uintptr_t)lite.imm[0].value : (uintptr_t)lite.disp);
			}
		}
	}
	return 1;
}

/* [reg] scan_part's lite findings of every part, as lite_enough kept them. */
static int lite_report(struct flow_scan *s, const struct lite_find *finds, size_t n)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = finds[i].lea ? push_lea(s, finds[i].value) :
				     s->fn(s->arg, ARCH_FLOW_DIRECT, finds[i].at, finds[i].value);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] Decode one part, reporting as we go. */
static int scan_part(struct flow_scan *s, const struct arch_code_part *p)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct x86_lite lite;
	size_t pos = 0;
	int ret;

	s->nwin = 0;
	while (pos < p->len) {
		uintptr_t at = p->addr + pos;

		if ((s->flags & ARCH_FLOW_DIRECT_ONLY) || s->lite) {
			/* lengths and relative immediates: the table decoder */
			if (!ukp_x86_decode_lite(s->minimal, p->code + pos, p->len - pos, &lite)) {
				pos++;
				continue;
			}
			if (lite.imm[0].rel) {
				ret = s->fn(s->arg, ARCH_FLOW_DIRECT, at,
					    at + lite.len + (uintptr_t)lite.imm[0].value);
				if (ret)
					return ret;
			}
			if (lite.flow == LITE_FLOW_LEA_RIP && !(s->flags & ARCH_FLOW_DIRECT_ONLY)) {
				ret = push_lea(s, at + lite.len + (uintptr_t)lite.disp);
				if (ret)
					return ret;
			}
			pos += lite.len;
			continue;
		}
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(s->full, p->code + pos, p->len - pos, &insn,
							 ops))) {
			ret = s->fn(s->arg, ARCH_FLOW_UNDECODABLE, at, 0);
			if (ret)
				return ret;
			s->nwin = 0;
			pos++;
			continue;
		}
		ret = full_insn(s, at, &insn, ops);
		if (ret)
			return ret;
		pos += insn.length;
	}
	return 0;
}

/*
 * [reg] Read the table of one dispatch at base; report every target while
 * they stay inside the parts. Returns the callback's value or 0; counts
 * the targets in *found. The edges are for pointer_paths: none when no
 * jump waits for it (the scan queued them all).
 */
/* A run of kind at base with an entry at at, or NULL. */
static const struct table_run *run_at(const struct flow_scan *s, enum table_kind kind,
				      uintptr_t base, uintptr_t at, size_t size)
{
	size_t i;

	for (i = 0; i < s->nruns; i++) {
		const struct table_run *r = &s->runs[i];

		if (r->kind == kind && r->base == base && at >= r->start &&
		    (at - r->start) % size == 0 && (at - r->start) / size < r->n)
			return r;
	}
	return NULL;
}

/* [reg] A read of d's table from entry j of r: r's entries from j on (its
 * targets were reported when r was read); d's own edges. */
static int run_again(struct flow_scan *s, const struct dispatch *d, const struct table_run *r,
		     size_t j, size_t *found)
{
	size_t e;
	int ret;

	*found += r->n - j;
	if (!s->npending)
		return 0;
	for (e = r->t0 + j; e < r->t0 + r->n; e++) {
		if (!in_parts(s, s->rtargets[e]))
			continue;
		ret = push_edge(s, s->rtargets[e], d->from_insn);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] Keep the read of n entries from start as a run. */
static int run_add(struct flow_scan *s, enum table_kind kind, uintptr_t base, uintptr_t start,
		   size_t n, size_t t0)
{
	struct table_run *r = ukp_grow(s->runs, &s->cap_runs, s->nruns, sizeof(*r));

	if (!r)
		return -ENOMEM;
	s->runs = r;
	s->runs[s->nruns++] = (struct table_run){ kind, base, start, n, t0 };
	return 0;
}

static int read_table(struct flow_scan *s, const struct dispatch *d, uintptr_t base,
		      size_t *found)
{
	uintptr_t at = base + (uintptr_t)d->disp, start = at;
	size_t size = d->kind == TABLE_REL32 ? 4 : 8, t0 = s->nrtargets;
	const struct table_run *r = run_at(s, d->kind, base, at, size);
	unsigned int i;
	int ret;

	if (r)
		return run_again(s, d, r, (at - r->start) / size, found);
	for (i = 0; i < TABLE_MAX_ENTRIES; i++, at += size) {
		uintptr_t target;
		bool inside;

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
		inside = in_parts(s, target);
		if (!inside && (target < s->code_lo || target >= s->code_hi))
			break;
		if (s->npending) {
			uintptr_t *t = ukp_grow(s->rtargets, &s->cap_rtargets, s->nrtargets,
						sizeof(*t));

			if (!t)
				return -ENOMEM;
			s->rtargets = t;
			s->rtargets[s->nrtargets++] = target;
		}
		(*found)++;
		/* a case in other code of the object (a cold part that no
		 * symbol names): the table goes on */
		if (!inside)
			continue;
		ret = s->npending ? push_edge(s, target, d->from_insn) : 0;
		if (!ret)
			ret = s->fn(s->arg, ARCH_FLOW_TABLE, d->from, target);
		if (ret)
			return ret;
	}
	if (i < TABLE_MAX_ENTRIES && i >= RUN_MIN)
		return run_add(s, d->kind, base, start, i, t0);
	s->nrtargets = t0;
	return 0;
}

/* Dispatch indexes by kind, lea_base, disp, then index. */
static int same_table_cmp(const void *pa, const void *pb, void *arg)
{
	const struct flow_scan *s = arg;
	size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
	const struct dispatch *a = &s->disp[ia], *b = &s->disp[ib];

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->lea_base != b->lea_base)
		return a->lea_base ? 1 : -1;
	if (a->disp != b->disp)
		return a->disp < b->disp ? -1 : 1;
	return (ia > ib) - (ia < ib);
}

/* [reg] Each dispatch's first with the same tables (->first). A switch
 * dispatched from many places (a computed goto at the end of every case)
 * has its table read once. */
static int group_tables(struct flow_scan *s)
{
	size_t *by, i;

	for (i = 0; i < s->ndisp; i++)
		s->disp[i].first = i;
	if (s->ndisp < 2)
		return 0;
	by = malloc(s->ndisp * sizeof(*by));
	if (!by)
		return -ENOMEM;
	for (i = 0; i < s->ndisp; i++)
		by[i] = i;
	ukp_sort_r(by, s->ndisp, sizeof(*by), same_table_cmp, s);
	for (i = 1; i < s->ndisp; i++) {
		const struct dispatch *a = &s->disp[by[i - 1]];
		struct dispatch *b = &s->disp[by[i]];

		if (a->kind == b->kind && a->lea_base == b->lea_base && a->disp == b->disp)
			b->first = a->first;
	}
	free(by);
	return 0;
}

/* [reg] d reads the tables its first read: the same targets, the same
 * count; its own edges (the callbacks had them all). */
static int replay_tables(struct flow_scan *s, const struct dispatch *d, size_t *found)
{
	const struct dispatch *f = &s->disp[d->first];
	size_t e;
	int ret;

	*found = f->found;
	for (e = f->edge0; e < f->edge1; e++) {
		ret = push_edge(s, s->edges[e].target, d->from_insn);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] Every queued dispatch against every candidate base (a table
 * that several dispatches share: read at the first, its targets
 * reported once). */
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
	ret = group_tables(s);
	if (ret)
		return ret;
	for (i = 0; i < s->ndisp; i++) {
		struct dispatch *d = &s->disp[i];
		size_t found = 0;

		if (d->first != i) {
			ret = replay_tables(s, d, &found);
		} else {
			d->edge0 = s->nedges;
			for (k = 0; k < (d->lea_base ? s->nleas : 1) && !ret; k++)
				ret = read_table(s, d, d->lea_base ? s->leas[k] : 0, &found);
			d->edge1 = s->nedges;
			d->found = found;
		}
		if (ret)
			return ret;
		if (!found) {
			ret = s->fn(s->arg, ARCH_FLOW_UNKNOWN, d->from, 0);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* [reg] */
int arch_scan_flow(const struct arch_code_part *parts, size_t nparts, uintptr_t code_lo,
		   uintptr_t code_hi, unsigned int flags, arch_flow_fn fn, void *arg)
{
	struct lite_find finds[LITE_FINDS];
	struct flow_scan *s;
	size_t i, nfinds = 0;
	bool kept = false;
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
	s->code_lo = code_lo;
	s->code_hi = code_hi;
	s->flags = flags;
	s->fn = fn;
	s->arg = arg;
	if (!(flags & (ARCH_FLOW_DIRECT_ONLY | ARCH_FLOW_FULL))) {
		s->lite = lite_enough(s, finds, &nfinds);
		kept = s->lite && nfinds <= LITE_FINDS;
		ret = kept ? lite_report(s, finds, nfinds) : 0;
	}
	for (i = 0; i < nparts && !ret && !kept; i++)
		ret = scan_part(s, &parts[i]);
	if (!ret && !(flags & ARCH_FLOW_DIRECT_ONLY))
		ret = resolve_tables(s);
	if (!ret && !(flags & ARCH_FLOW_DIRECT_ONLY))
		ret = resolve_pointers(s);
	free(s->leas);
	free(s->disp);
	free(s->insns);
	free(s->edges);
	free(s->pending);
	free(s->runs);
	free(s->rtargets);
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

/* [reg] Report v when it lies in [lo, hi). */
static int literal(uintptr_t v, uintptr_t lo, uintptr_t hi, arch_literal_fn fn, void *arg)
{
	return v >= lo && v < hi ? fn(arg, v) : 0;
}

/*
 * The decodings of a literal scan by code offset, for the flow ranges it
 * also serves (struct arch_literal_scan): a slot per offset modulo the
 * size, so a range scanned right after the literal scan passed its end
 * finds every one of the scan's decodings in it while the range is
 * shorter than that. Only successful ones are kept.
 */
#define DCACHE_SIZE 65536u

struct dcache_ent {
	uint32_t pos1;          /* code offset + 1; 0: empty */
	uint8_t len;
	bool rel;               /* imm[0] is relative: a direct transfer */
	int64_t rel_value;
};

/*
 * [reg] The DIRECT findings of sc->ranges[i]: scan_part's DIRECT_ONLY
 * walk over it, with the range's end as the decoding limit. A decoding
 * the literal scan made at the same offset (with a farther limit) stands
 * for this one when the instruction ends within the range's limit: the
 * decoder reads an instruction's own bytes and no more, so the same
 * bytes give the same instruction. Otherwise it is decoded here.
 */
static int flow_range(const ZydisDecoder *dec, const struct arch_literal_scan *sc,
		      const struct dcache_ent *cache, size_t i)
{
	const struct arch_flow_range *r = &sc->ranges[i];
	size_t pos = r->start - sc->addr, end = r->end - sc->addr;
	int ret;

	while (pos < end) {
		const struct dcache_ent *e = cache ? &cache[pos % DCACHE_SIZE] : NULL;
		struct x86_lite insn;
		size_t len;
		bool rel;
		int64_t v;

		if (e && e->pos1 == pos + 1 && e->len <= end - pos) {
			len = e->len;
			rel = e->rel;
			v = e->rel_value;
		} else if (ukp_x86_decode_lite(dec, sc->code + pos, end - pos, &insn)) {
			len = insn.len;
			rel = insn.imm[0].rel;
			v = (int64_t)insn.imm[0].value;
		} else {
			pos++;
			continue;
		}
		if (rel) {
			ret = sc->range_fn(sc->range_arg, i, sc->addr + pos,
					   sc->addr + pos + len + (uintptr_t)v);
			if (ret)
				return ret;
		}
		pos += len;
	}
	return 0;
}

/* [reg] The ranges from *next on that end at or before offset upto (and
 * those this scan does not serve: skipped); *due: the end of the next
 * one (SIZE_MAX: none). */
static int flow_ranges_upto(const ZydisDecoder *dec, const struct arch_literal_scan *sc,
			    const struct dcache_ent *cache, size_t *next, size_t upto, size_t *due)
{
	const size_t to = sc->to ? sc->to : sc->len;
	int ret;

	*due = SIZE_MAX;
	for (; *next < sc->nranges; (*next)++) {
		struct arch_flow_range *r = &sc->ranges[*next];

		/* (another piece may be writing the done flag of a range
		 * that is not this one's) */
		if (r->start >= r->end || r->start < sc->addr || r->start - sc->addr < sc->from ||
		    r->end - sc->addr > to || r->done)
			continue;
		if (r->end - sc->addr > upto) {
			*due = r->end - sc->addr;
			break;
		}
		ret = flow_range(dec, sc, cache, *next);
		if (ret)
			return ret;
		r->done = true;
	}
	return 0;
}

/* [reg] */
int arch_scan_literals(const struct arch_literal_scan *sc)
{
	const ZydisDecoder *dec = ukp_x86_decoder(true);
	const uintptr_t lo = sc->lo, hi = sc->hi;
	struct dcache_ent *cache = NULL;
	struct x86_lite insn;
	const size_t to = sc->to ? sc->to : sc->len;
	/* in locals: the callbacks could change *sc for all the compiler
	 * knows, which would read them again at every instruction */
	const uint8_t *const code = sc->code;
	const size_t len = sc->len, nsync = sc->nsync;
	const uintptr_t addr = sc->addr, *const sync = sc->sync;
	size_t pos = sc->from, k = 0, next = 0, due = 0;
	uintptr_t ks = nsync ? sync[0] : UINTPTR_MAX; /* sync[k], or none */
	int ret = 0;

	if (!dec)
		return -EILSEQ;
	/* without the cache, the ranges are decoded on their own; a piece
	 * takes the one the pieces before it on this thread filled (the
	 * same code's decodings, by offset: valid in any piece) */
	if (sc->nranges && sc->range_fn) {
		cache = sc->cache ? *sc->cache : NULL;
		if (!cache)
			cache = calloc(DCACHE_SIZE, sizeof(*cache));
		if (sc->cache)
			*sc->cache = cache;
	}
	while (pos < to) {
		uintptr_t at = addr + pos, next_at;
		unsigned int i;

		if (sc->range_fn && pos >= due) {
			ret = flow_ranges_upto(dec, sc, cache, &next, pos, &due);
			if (ret)
				goto out;
		}
		while (ks < at)
			ks = ++k < nsync ? sync[k] : UINTPTR_MAX;
		if (!ukp_x86_decode_lite(dec, code + pos, len - pos, &insn)) {
			pos++;
			continue;
		}
		if (cache && pos < UINT32_MAX) {
			struct dcache_ent *e = &cache[pos % DCACHE_SIZE];

			e->pos1 = (uint32_t)pos + 1;
			e->len = insn.len;
			e->rel = insn.imm[0].rel;
			e->rel_value = (int64_t)insn.imm[0].value;
		}
		next_at = at + insn.len;
		/* an instruction that would cover a known boundary is a wrong
		 * decoding (data, or a desynchronised start): resume there */
		if (ks > at && ks < next_at) {
			pos = ks - addr;
			continue;
		}
		for (i = 0; i < 2; i++) {
			const typeof(insn.imm[0]) *imm = &insn.imm[i];

			if (imm->size < 32 || imm->rel)
				continue;
			if (imm->size == 32) {
				ret = literal((uintptr_t)(uint32_t)imm->value, lo, hi, sc->fn, sc->arg);
				if (!ret)
					ret = literal((uintptr_t)(int64_t)(int32_t)imm->value, lo, hi,
						      sc->fn, sc->arg);
			} else {
				ret = literal((uintptr_t)imm->value, lo, hi, sc->fn, sc->arg);
			}
			if (ret)
				goto out;
		}
		if (insn.disp_size >= 32) {
			bool rip = insn.has_modrm && insn.mod == 0 && insn.rm == 5;

			ret = literal(rip ? next_at + (uintptr_t)insn.disp : (uintptr_t)insn.disp, lo,
				      hi, sc->fn, sc->arg);
			if (ret)
				goto out;
		}
		pos += insn.len;
	}
	if (sc->range_fn)
		ret = flow_ranges_upto(dec, sc, cache, &next, to, &due);
	if (sc->stopped)
		*sc->stopped = pos;
out:
	if (!sc->cache)
		free(cache);
	return ret;
}
