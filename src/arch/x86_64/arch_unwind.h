/* SPDX-License-Identifier: MIT */
/*
 * arch_unwind.h - what stacktrace.c (its only includer) needs of x86-64:
 * the DWARF number of the frame pointer, and where a function's return
 * address is at its first instruction (on top of the stack: the call
 * pushed it). The frame pointer chain is [rbp] = the caller's rbp,
 * [rbp + 8] = the return address, the caller's rsp = rbp + 16. [hit]
 */
#ifndef UKP_ARCH_UNWIND_H
#define UKP_ARCH_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/arch.h"

#define UKP_DWARF_FP 6            /* rbp (UKP_DWARF_SP: arch_insn.h) */
/* Is the frame chain's caller stack pointer exact (the caller's rsp is rbp + 16)? */
#define UKP_FP_CHAIN_SP_EXACT 1

/* [hit] The link register at the hit: x86-64 has none (0). */
static inline uintptr_t arch_unwind_link_register(const struct pt_regs *regs)
{
	(void)regs;
	return 0;
}

/* [hit] At a function's first instruction: its return address and the
 * caller's stack pointer. False: unreadable. */
static inline bool arch_unwind_entry_frame(uintptr_t sp, uintptr_t lr, uintptr_t *ra,
					   uintptr_t *cfa)
{
	(void)lr;
	*cfa = sp + 8;
	return arch_copy_nofault(ra, (const void *)sp, 8) == 0;
}

/* [hit] The slot a return probe knows a frame's instance by
 * (arch_kretprobe_ret_slot), from the frame's CFA: where the call pushed the return address. */
static inline uintptr_t arch_unwind_krp_slot(uintptr_t cfa)
{
	return cfa - 8;
}

#endif /* UKP_ARCH_UNWIND_H */
