/* SPDX-License-Identifier: MIT */
/*
 * arch_unwind.h - what stacktrace.c (its only includer) needs of AArch64:
 * the DWARF number of the frame pointer, and where a function's return
 * address is at its first instruction (in the link register x30: bl does
 * not touch the stack). The frame record is [x29] = the caller's x29,
 * [x29 + 8] = the saved x30; the caller's sp is at least x29 + 16. [hit]
 */
#ifndef UKP_ARCH_UNWIND_H
#define UKP_ARCH_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/arch.h"

#define UKP_DWARF_FP 29           /* x29 (UKP_DWARF_SP: arch_insn.h) */
/* Is the frame chain's caller stack pointer exact (the caller's sp is above x29 + 16 by the frame's size)? */
#define UKP_FP_CHAIN_SP_EXACT 0

/* [hit] The link register at the hit. */
static inline uintptr_t arch_unwind_link_register(const struct pt_regs *regs)
{
	return procedure_link_pointer(regs);
}

/* [hit] At a function's first instruction: its return address and the
 * caller's stack pointer (nothing is pushed yet). */
static inline bool arch_unwind_entry_frame(uintptr_t sp, uintptr_t lr, uintptr_t *ra,
					   uintptr_t *cfa)
{
	*ra = lr;
	*cfa = sp;
	return true;
}

/* [hit] The slot a return probe knows a frame's instance by
 * (arch_kretprobe_ret_slot), from the frame's CFA: the stack pointer at the entry. */
static inline uintptr_t arch_unwind_krp_slot(uintptr_t cfa)
{
	return cfa;
}

#endif /* UKP_ARCH_UNWIND_H */
