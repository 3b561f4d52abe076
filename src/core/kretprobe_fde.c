// SPDX-License-Identifier: MIT
/*
 * kretprobe_fde.c - the unwinder's frame information for the return
 * trampoline's address (kretprobe_unwind.c): one CIE and one FDE in
 * .eh_frame format for a frame of its own at the byte before the
 * trampoline (it moves no register; CFA = sp + 8, see PSEUDO_CFA_OFF),
 * whose return address is computed, not read: a DWARF expression
 * (DW_CFA_val_expression) looks up the pending entry of the walking
 * thread's return stack whose frame this is, and gives its real return
 * address.
 *
 * The lookup reads the return stack as it is, and changes nothing: an
 * unwinder only walking the stack (glibc's backtrace() reached without
 * our interposer, as __backtrace or from inside libc; libgcc's
 * _Unwind_Backtrace through a handle on libgcc_s) leaves every return
 * probe armed. Frames an exception or a thread exit leaves keep their
 * entries until the next entry or return of the thread finds them
 * stale, as after longjmp. Its key is the frame's identity, the slot
 * the entry recorded: the trampoline frame's sp is the sp the probed
 * function's return leaves, its own CFA at the entry, slot +
 * UKP_ENTRY_CFA_OFF. Of the entries of a chained slot (a second
 * kretprobe on the function, a tail call), the one whose return address
 * is not the trampoline. None (an entry dropped meanwhile): 0, where
 * libgcc's walk ends.
 *
 * The expression names the thread's record by address (DWARF has no
 * thread pointer), so each record has its own copy, built on its first
 * use; it depends on the record's address alone, so a record that
 * another thread takes over later keeps it, and a signal handler's walk
 * that builds it meanwhile writes the same bytes.
 */
#include <stdatomic.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "core/kretprobes.h"
#include "core/kretprobes_layout.h"

#define DW_EH_PE_absptr        0x00
#define DW_CFA_def_cfa         0x0c
#define DW_CFA_val_offset      0x14
#define DW_CFA_val_expression  0x16
#define DW_CFA_nop             0x00
#define DW_OP_const8u          0x0e
#define DW_OP_constu           0x10
#define DW_OP_dup              0x12
#define DW_OP_drop             0x13
#define DW_OP_pick             0x15
#define DW_OP_swap             0x16
#define DW_OP_deref            0x06
#define DW_OP_deref_size       0x94
#define DW_OP_minus            0x1c
#define DW_OP_mul              0x1e
#define DW_OP_plus             0x22
#define DW_OP_plus_uconst      0x23
#define DW_OP_skip             0x2f
#define DW_OP_bra              0x28
#define DW_OP_eq               0x29
#define DW_OP_le               0x2c
#define DW_OP_ne               0x2e
#define DW_OP_lit0             0x30

_Static_assert(offsetof(struct krp_entry, slot) == 0, "the lookup reads slot at +0");
_Static_assert(sizeof(struct krp_entry) < 128 && offsetof(struct krp_entry, ret) < 128,
	       "one-byte ULEB128 operands");
_Static_assert(sizeof(((struct krp_thread *)0)->depth) == 4, "depth read as 4 bytes");
/*
 * The frame's CFA is sp + 8, and sp is described on its own: libgcc
 * knows a frame by its CFA (the caller's by the CFA of the frame below
 * it), and a zero-size frame would share its identity with its caller,
 * where an exception's second phase stops (and aborts: the trampoline
 * has no handler). Real frames' CFAs are 16-aligned on both
 * architectures; this one, 8 past one, is nobody else's.
 */
#define PSEUDO_CFA_OFF 8
_Static_assert(PSEUDO_CFA_OFF + UKP_ENTRY_CFA_OFF < 128, "one-byte ULEB128 operand");

static size_t put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return 8;
}

static size_t put_const8u(unsigned char *p, uint64_t v)
{
	p[0] = DW_OP_const8u;
	return 1 + put_u64(p + 1, v);
}

/* A branch at p (DW_OP_bra or DW_OP_skip) to target: the offset counts
 * from the end of the branch's operand. */
static size_t put_branch(unsigned char *p, unsigned char op, const unsigned char *target)
{
	int16_t off = (int16_t)(target - (p + 3));

	p[0] = op;
	memcpy(p + 1, &off, 2);
	return 3;
}

/*
 * The return address's expression, CFA on the stack (the result is the
 * top of the stack at the end):
 *   key = CFA - PSEUDO_CFA_OFF - UKP_ENTRY_CFA_OFF; p = &e[depth]
 *   loop: if p <= &e[0] goto none; p--
 *         if p->slot != key || p->ret == trampoline goto loop
 *         result p->ret
 *   none: result 0
 * Returns its length.
 */
static size_t build_ret_expr(unsigned char *x, struct krp_thread *t)
{
	uintptr_t base = (uintptr_t)&t->e[0];
	unsigned char *loop, *none, *bra_none, *bra_loop1, *bra_loop2, *skip_end;
	size_t n = 0;

	x[n++] = DW_OP_constu;
	x[n++] = PSEUDO_CFA_OFF + UKP_ENTRY_CFA_OFF;
	x[n++] = DW_OP_minus;
	/* a 0 below the key: libgcc's DW_OP_pick never reaches the bottom
	 * element, and the 0 is the result when nothing is found */
	x[n++] = DW_OP_lit0;
	x[n++] = DW_OP_swap;                    /* 0, key */
	n += put_const8u(x + n, (uintptr_t)&t->depth);
	x[n++] = DW_OP_deref_size;
	x[n++] = 4;
	x[n++] = DW_OP_constu;
	x[n++] = sizeof(struct krp_entry);
	x[n++] = DW_OP_mul;
	n += put_const8u(x + n, base);
	x[n++] = DW_OP_plus;                    /* key, p */
	loop = x + n;
	x[n++] = DW_OP_dup;
	n += put_const8u(x + n, base);
	x[n++] = DW_OP_le;
	bra_none = x + n;
	n += 3;
	x[n++] = DW_OP_constu;
	x[n++] = sizeof(struct krp_entry);
	x[n++] = DW_OP_minus;                   /* key, p */
	x[n++] = DW_OP_dup;
	x[n++] = DW_OP_deref;                   /* key, p, p->slot */
	x[n++] = DW_OP_pick;
	x[n++] = 2;
	x[n++] = DW_OP_ne;
	bra_loop1 = x + n;
	n += 3;
	x[n++] = DW_OP_dup;
	x[n++] = DW_OP_plus_uconst;
	x[n++] = offsetof(struct krp_entry, ret);
	x[n++] = DW_OP_deref;
	n += put_const8u(x + n, (uintptr_t)ukp_kretprobe_trampoline);
	x[n++] = DW_OP_eq;
	bra_loop2 = x + n;
	n += 3;
	x[n++] = DW_OP_plus_uconst;
	x[n++] = offsetof(struct krp_entry, ret);
	x[n++] = DW_OP_deref;
	x[n++] = DW_OP_swap;
	x[n++] = DW_OP_drop;                    /* p->ret */
	skip_end = x + n;
	n += 3;
	none = x + n;
	x[n++] = DW_OP_drop;
	x[n++] = DW_OP_drop;                    /* 0 */
	put_branch(bra_none, DW_OP_bra, none);
	put_branch(bra_loop1, DW_OP_bra, loop);
	put_branch(bra_loop2, DW_OP_bra, loop);
	put_branch(skip_end, DW_OP_skip, x + n);
	return n;
}

/* The CIE and FDE for t into t->eh (KRP_EH_SIZE bytes: 24 of CIE, 112 of
 * FDE with the expression's 81, the terminator), with absolute addresses
 * (no relocation). Returns the FDE. */
static const void *build_pseudo_fde(struct krp_thread *t)
{
	unsigned char *p = t->eh, *cie = t->eh, *fde;
	size_t n = 4, len;

	/* CIE: "zR", data alignment -8, pointers absolute, CFA and sp */
	n += put_u32(p + n, 0);         /* CIE id */
	p[n++] = 1;                     /* version */
	p[n++] = 'z';
	p[n++] = 'R';
	p[n++] = 0;
	p[n++] = UKP_DWARF_CODE_ALIGN;  /* uleb128 */
	p[n++] = 0x78;                  /* data alignment -8 (sleb128) */
	p[n++] = UKP_DWARF_RA_COLUMN;
	p[n++] = 1;                     /* augmentation data length */
	p[n++] = DW_EH_PE_absptr;
	p[n++] = DW_CFA_def_cfa;
	p[n++] = UKP_DWARF_SP;
	p[n++] = PSEUDO_CFA_OFF;        /* uleb128 */
	p[n++] = DW_CFA_val_offset;     /* sp = CFA - PSEUDO_CFA_OFF */
	p[n++] = UKP_DWARF_SP;
	p[n++] = PSEUDO_CFA_OFF / 8;    /* factored by -8 */
	while (n % 8)
		p[n++] = DW_CFA_nop;
	put_u32(p, (uint32_t)(n - 4));

	fde = p + n;
	n = 4;
	n += put_u32(fde + n, (uint32_t)((fde + 4) - cie)); /* CIE pointer */
	n += put_u64(fde + n, (uintptr_t)ukp_kretprobe_trampoline - 1); /* pc begin */
	n += put_u64(fde + n, 2);                            /* pc range */
	fde[n++] = 0;                                        /* augmentation length */
	fde[n++] = DW_CFA_val_expression;
	fde[n++] = UKP_DWARF_RA_COLUMN;
	len = build_ret_expr(fde + n + 1, t);
	fde[n++] = (unsigned char)len;                       /* uleb128: < 128 */
	n += len;
	while (n % 8)
		fde[n++] = DW_CFA_nop;
	put_u32(fde + n, 0); /* terminator */
	/* last: a length that is not 0 says the FDE is complete */
	put_u32(fde, (uint32_t)(n - 4));
	return fde;
}

/* [thread] (kretprobes.h) */
const void *ukp_krp_pseudo_fde(uintptr_t *func)
{
	struct krp_thread *t = ukp_ctl.rstack;
	const unsigned char *fde;

	/* no return stack: no pending return, the trampoline is no frame */
	if (!t)
		return NULL;
	fde = t->eh + KRP_EH_FDE_OFF;
	if (!fde[0] && build_pseudo_fde(t) != fde)
		return NULL;
	*func = (uintptr_t)ukp_kretprobe_trampoline - 1;
	return fde;
}
