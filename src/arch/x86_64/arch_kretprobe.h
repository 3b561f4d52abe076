/* SPDX-License-Identifier: MIT */
/*
 * arch_kretprobe.h - where x86-64 keeps a function's return address at
 * its entry: on top of the stack, at the slot arch_kretprobe_ret_slot()
 * gives (regs->sp). Included by arch.h; [trap].
 */
#ifndef UKP_ARCH_KRETPROBE_H
#define UKP_ARCH_KRETPROBE_H

/* The return address is in memory at its slot for the whole call: the
 * unwinder interposers put the real one back there (kretprobe_unwind.c). */
#define UKP_KRP_RET_IN_SLOT 1
/* DWARF's return-address column (rip) and code alignment factor. */
#define UKP_DWARF_RA_COLUMN 16
#define UKP_DWARF_CODE_ALIGN 1
/* At the entry the CFA is sp + 8 (the call pushed the return address). */
#define UKP_ENTRY_CFA_OFF 8

static inline bool arch_kretprobe_get_ret(const struct pt_regs *regs, uintptr_t slot,
					  uintptr_t *ret)
{
	(void)regs;
	return arch_load_word_nofault(ret, (const void *)slot) == 0;
}

static inline bool arch_kretprobe_set_ret(struct pt_regs *regs, uintptr_t slot, uintptr_t ret)
{
	(void)regs;
	return arch_store_word_nofault((void *)slot, ret) == 0;
}

/* In the trampoline's dispatch: slot is the trampoline frame's own
 * return-address slot (the word the return popped). */
static inline void arch_kretprobe_put_back(struct pt_regs *regs, uintptr_t slot, uintptr_t real)
{
	(void)regs;
	*(uintptr_t *)slot = real;
}

/* [thread] Where the frame at slot keeps its return address while it
 * holds the trampoline: the slot itself (lo, ret: see AArch64's). */
static inline uintptr_t arch_kretprobe_ret_loc(uintptr_t slot, uintptr_t lo, uintptr_t tramp,
					       uintptr_t ret)
{
	uintptr_t cur;

	(void)lo, (void)ret;
	return arch_load_word_nofault(&cur, (const void *)slot) == 0 && cur == tramp ? slot : 0;
}

#endif
