// SPDX-License-Identifier: MIT
/*
 * stacktrace.c - the kernel's stack_trace_save_regs(): the user stack of
 * a hit, the return addresses of the frames above a handler's registers
 * (ukprobe's stacktrace trigger and ustack take theirs here). A return
 * address that a pending return probe replaced by its trampoline is
 * given back as the caller's (kretprobe_find_ret_addr).
 *
 * Each frame is unwound with the call frame information of its object's
 * .eh_frame (found through .eh_frame_hdr's search table, read by cfi.c,
 * the library's one CFI interpreter), which every x86-64 and AArch64
 * object carries, frame pointer or not (x86-64's glibc has none); where
 * an address has no FDE, with the frame pointer chain (or, at a
 * function's first instruction, the return address where the call left
 * it: arch/ARCH/arch_unwind.h).
 *
 * Only the CFA (from the stack or frame pointer plus an offset), the
 * return address and the frame pointer are followed: what code needs
 * between calls. In the first frame, a return address that no rule has
 * saved yet (AArch64: a leaf, or before the prologue) is the link
 * register's. A frame whose CFA is a DWARF expression (PLT entries,
 * signal frames) or another register ends the walk unless the frame
 * pointer leads on.
 *
 * [hit] stack_trace_save_regs*() are async-signal-safe and
 * allocation-free: every read of the program's memory is a nofault copy,
 * so a corrupt stack, table or an object unloaded under us ends the walk,
 * never the program. Where the objects' code and tables are comes from
 * symbols/stack_objects.c. Built without jump tables (src/meson.build):
 * the agent's handlers call it and stay provably vector-free.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <stdatomic.h>

#include "arch_unwind.h"
#include "base/base.h"
#include "symbols/cfi.h"
#include "symbols/stack_objects.h"

/* The hit's windows onto the CIEs and the FDEs (cfi.h): a CIE or FDE
 * seldom spans two chunks. */
#define ST_CHUNK 256u

static bool rd(uintptr_t addr, void *dst, size_t n)
{
	return arch_copy_nofault(dst, (const void *)addr, n) == 0;
}

/* A walk's windows onto the CIEs and FDEs (cfi.h), and the last CIE
 * parsed: the frames of one object mostly share one. */
struct walk {
	struct ukp_cfi_mem cm, fm;
	struct ukp_cfi_cie cie;
	uintptr_t cie_addr;       /* of cie; 0: none yet */
	uint8_t cie_buf[ST_CHUNK] __attribute__((aligned(16)));
	uint8_t fde_buf[ST_CHUNK] __attribute__((aligned(16)));
};

/* The row at ip, from the FDE of the object's .eh_frame_hdr table.
 * False: no FDE covers ip, or it could not be used. */
static bool find_row(struct walk *w, const struct ukp_stack_range *rg, uintptr_t ip,
		     struct ukp_cfi_row *row)
{
	uint8_t hdr[4];
	struct ukp_cfi_fde f;
	struct ukp_cfi_cur c;
	uint32_t count;
	int32_t ent[2];
	uint64_t lo, hi;
	uintptr_t fde = 0, table, cie_addr;

	if (!rg->hdr || !rd(rg->hdr, hdr, 4) || hdr[0] != 1)
		return false;
	/* the usual encodings (GNU ld, lld): pcrel sdata4 frame pointer,
	 * udata4 count, datarel sdata4 table */
	if (hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b || !rd(rg->hdr + 8, &count, 4))
		return false;
	table = rg->hdr + 12;
	if (table + (uint64_t)count * 8 > rg->hdr_end)
		return false;
	for (lo = 0, hi = count; lo < hi;) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!rd(table + mid * 8, ent, 8))
			return false;
		if (rg->hdr + (intptr_t)ent[0] <= ip) {
			fde = rg->hdr + (intptr_t)ent[1];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (!fde || ukp_cfi_fde_head(&c, &w->fm, fde, &cie_addr))
		return false;
	if (cie_addr != w->cie_addr) {
		w->cie_addr = 0;
		if (ukp_cfi_parse_cie(&w->cm, cie_addr, &w->cie))
			return false;
		w->cie_addr = cie_addr;
	}
	if (ukp_cfi_fde_body(&c, &w->cie, &f) || !f.start || ip < f.start || ip >= f.end)
		return false;
	return ukp_cfi_row_at(&w->cm, &w->cie, &w->fm, &f, ip, UKP_DWARF_FP, row) == 0 &&
	       !row->cfa_expr;
}

/* The walk: ukpa's unwinder of old, now the library's. */
static unsigned int unwind(uintptr_t ip, uintptr_t sp, uintptr_t bp, uintptr_t lr,
			   enum stack_trace_from from, unsigned long *store, unsigned int size,
			   unsigned int skipnr)
{
	unsigned int n = 0, seen = 0;
	bool sp_known = true;     /* false: sp is a lower bound (the frame chain) */
	void *krp_cur = NULL;     /* kretprobe_find_ret_addr's, outwards */
	struct walk w;

	/* the windows: any address, each chunk read without faulting */
	ukp_cfi_mem_init(&w.cm, w.cie_buf, ST_CHUNK, 0, UINTPTR_MAX);
	ukp_cfi_mem_init(&w.fm, w.fde_buf, ST_CHUNK, 0, UINTPTR_MAX);
	w.cie_addr = 0;

	while (n < size) {
		/* a return address: the frame's row is that of the call */
		uintptr_t at = seen || from == STACK_TRACE_RET ? ip - 1 : ip;
		const struct ukp_stack_range *rg = ukp_stack_range_of(at);
		struct ukp_cfi_row row;
		uintptr_t cfa, ra, nbp = bp;
		bool from_lr = false;     /* ra is the link register's */

		if (seen++ >= skipnr)
			store[n++] = ip;
		if (!rg)
			break;
		if (find_row(&w, rg, at, &row)) {
			if (row.cfa_reg == UKP_DWARF_SP && sp_known)
				cfa = sp + (uintptr_t)row.cfa_off;
			else if (row.cfa_reg == UKP_DWARF_SP && row.fp_rule == UKP_CFI_AT_CFA)
				/* past its prologue, a function that saves the
				 * frame pointer points it at where it saved it */
				cfa = bp - (uintptr_t)row.fp_off;
			else if (row.cfa_reg == UKP_DWARF_FP)
				cfa = bp + (uintptr_t)row.cfa_off;
			else
				break;
			if (row.rule == UKP_CFI_SAME && seen == 1 && lr && from != STACK_TRACE_RET) {
				ra = lr;
				from_lr = true;
			} else if (row.rule != UKP_CFI_AT_CFA || !rd(cfa + (uintptr_t)row.ra_off, &ra, 8)) {
				break; /* undefined: the outermost frame */
			}
			if (row.fp_rule == UKP_CFI_AT_CFA && !rd(cfa + (uintptr_t)row.fp_off, &nbp, 8))
				break;
			sp_known = true;
		} else if (seen == 1 && from == STACK_TRACE_ENTRY) {
			/* a function's first instruction: nothing pushed yet */
			if (!arch_unwind_entry_frame(sp, lr, &ra, &cfa))
				break;
			from_lr = lr != 0;
		} else {
			/* the frame pointer chain */
			if (bp < sp || (bp & 7) || bp - sp > (1UL << 24) || !rd(bp, &nbp, 8) ||
			    !rd(bp + 8, &ra, 8))
				break;
			cfa = bp + 16;
			sp_known = UKP_FP_CHAIN_SP_EXACT;
		}
		/* a return probe's trampoline for the return address: the
		 * caller it stands for (its instance's return address, the
		 * instance known by its frame's slot), as the kernel's
		 * unwinders do */
		if (is_kretprobe_trampoline(ra)) {
			unsigned long real = kretprobe_find_ret_addr(
				0, (void *)arch_unwind_krp_slot(cfa), &krp_cur);

			if (real)
				ra = real;
		}
		/* the end, or not going up the stack (a frame that has
		 * pushed nothing is left once, by the link register) */
		if (!ra || cfa < sp || (cfa == sp && !from_lr))
			break;
		ip = ra;
		sp = cfa;
		bp = nbp;
	}
	return n;
}

/* [hit] */
UKPROBES_API unsigned int stack_trace_save_regs_from(const struct pt_regs *regs, unsigned long ip,
						     enum stack_trace_from from,
						     unsigned long *store, unsigned int size,
						     unsigned int skipnr)
{
	uintptr_t lr = from == STACK_TRACE_RET ? 0 : arch_unwind_link_register(regs);

	return unwind(ip, user_stack_pointer(regs), frame_pointer(regs), lr, from, store, size,
		      skipnr);
}

/* [hit] */
UKPROBES_API unsigned int stack_trace_save_regs(struct pt_regs *regs, unsigned long *store,
						unsigned int size, unsigned int skipnr)
{
	return stack_trace_save_regs_from(regs, instruction_pointer(regs), STACK_TRACE_INSIDE,
					  store, size, skipnr);
}
