/* SPDX-License-Identifier: MIT */
/*
 * unwind_arch.h - what unwind.c (its only includer) needs of AArch64:
 * the DWARF numbers of the registers it follows, and where a function's
 * return address is at its first instruction (in the link register x30:
 * bl does not touch the stack). The frame record is [x29] = the caller's
 * x29, [x29 + 8] = the saved x30; the caller's sp is at least x29 + 16.
 */
#ifndef UKPA_UNWIND_ARCH_H
#define UKPA_UNWIND_ARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <ukprobes.h>

#define UW_DW_FP 29               /* x29 */
#define UW_DW_SP 31               /* sp */
/* Is the frame chain's caller stack pointer exact (the caller's sp is above x29 + 16 by the frame's size)? */
#define UW_FP_CHAIN_SP_EXACT 0

/* [hit] The link register at the hit. */
static inline uintptr_t uw_link_register(const struct pt_regs *regs)
{
	return procedure_link_pointer(regs);
}

/* [hit] At a function's first instruction: its return address and the
 * caller's stack pointer (nothing is pushed yet). */
static inline bool uw_entry_frame(uintptr_t sp, uintptr_t lr, uintptr_t *ra, uintptr_t *cfa)
{
	*ra = lr;
	*cfa = sp;
	return true;
}

/* [hit] The slot a return probe knows a frame by (libukprobes'
 * arch_kretprobe_ret_slot), from the frame's CFA: the stack pointer at the entry (arch_kretprobe_ret_slot). */
static inline uintptr_t uw_krp_slot(uintptr_t cfa)
{
	return cfa;
}

#endif /* UKPA_UNWIND_ARCH_H */
