/* SPDX-License-Identifier: MIT */
/*
 * unwind_arch.h - what unwind.c (its only includer) needs of x86-64: the
 * DWARF numbers of the registers it follows, and where a function's
 * return address is at its first instruction (on top of the stack: the
 * call pushed it). The frame pointer chain is [rbp] = the caller's rbp,
 * [rbp + 8] = the return address, the caller's rsp = rbp + 16.
 */
#ifndef UKPA_UNWIND_ARCH_H
#define UKPA_UNWIND_ARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <ukprobes.h>

#define UW_DW_FP 6                /* rbp */
#define UW_DW_SP 7                /* rsp */
/* Is the frame chain's caller stack pointer exact (the caller's rsp is rbp + 16)? */
#define UW_FP_CHAIN_SP_EXACT 1

/* [hit] The link register at the hit: x86-64 has none (0). */
static inline uintptr_t uw_link_register(const struct pt_regs *regs)
{
	(void)regs;
	return 0;
}

/* [hit] At a function's first instruction: its return address and the
 * caller's stack pointer. False: unreadable. */
static inline bool uw_entry_frame(uintptr_t sp, uintptr_t lr, uintptr_t *ra, uintptr_t *cfa)
{
	(void)lr;
	*cfa = sp + 8;
	return copy_from_user_nofault(ra, (const void *)sp, 8) == 0;
}

/* [hit] The slot a return probe knows a frame by (libukprobes'
 * arch_kretprobe_ret_slot), from the frame's CFA: where the call pushed the return address. */
static inline uintptr_t uw_krp_slot(uintptr_t cfa)
{
	return cfa - 8;
}

#endif /* UKPA_UNWIND_ARCH_H */
