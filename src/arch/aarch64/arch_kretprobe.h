/* SPDX-License-Identifier: MIT */
/*
 * arch_kretprobe.h - where AArch64 keeps a function's return address at
 * its entry: in the link register x30. The frame's identity (the slot
 * the core compares, arch_kretprobe_ret_slot) is the stack pointer at
 * the entry, which is also the stack pointer when the function returns.
 * Included by arch.h; [trap].
 */
#ifndef UKP_ARCH_KRETPROBE_H
#define UKP_ARCH_KRETPROBE_H

/* Not in memory at a known place: once the function saved x30 in its
 * frame record, arch_kretprobe_ret_loc finds it for the unwinder
 * interposers. */
#define UKP_KRP_RET_IN_SLOT 0
/* DWARF's return-address column (x30) and code alignment factor. */
#define UKP_DWARF_RA_COLUMN 30
#define UKP_DWARF_CODE_ALIGN 4
/* At the entry the CFA is sp, and the return address is in x30 (the
 * CIE leaves its rule undescribed: "same value"). */
#define UKP_ENTRY_CFA_OFF 0

static inline bool arch_kretprobe_get_ret(const struct pt_regs *regs, uintptr_t slot,
					  uintptr_t *ret)
{
	(void)slot;
	*ret = regs->regs[30];
	return true;
}

static inline bool arch_kretprobe_set_ret(struct pt_regs *regs, uintptr_t slot, uintptr_t ret)
{
	(void)slot;
	regs->regs[30] = ret;
	return true;
}

/* In the trampoline's dispatch: the link register as the return left it
 * without the probe (the trampoline restores x30 from regs). */
static inline void arch_kretprobe_put_back(struct pt_regs *regs, uintptr_t slot, uintptr_t real)
{
	(void)slot;
	regs->regs[30] = real;
}

/*
 * [thread] Where the frame whose entry stack pointer was slot saved its
 * link register, while it holds tramp: the lr word of a frame record
 * (x29, x30) of the calling thread's frame chain lying in [lo, slot).
 * The chain is walked from the caller's record outwards (records only:
 * the copies of x30 in unwinders' contexts are never taken); a record
 * in the range that holds ret says the frame was put back already. 0 if
 * there is none (code without frame records: the unwinder then stops at
 * the trampoline).
 */
static inline __attribute__((always_inline)) uintptr_t
arch_kretprobe_ret_loc(uintptr_t slot, uintptr_t lo, uintptr_t tramp, uintptr_t ret)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0), next, lr;
	unsigned int n;

	for (n = 0; n < 4096 && fp && fp < slot; n++) {
		if (arch_load_word_nofault(&lr, (const void *)(fp + 8)) ||
		    arch_load_word_nofault(&next, (const void *)fp))
			return 0;
		if (fp >= lo && lr == tramp)
			return fp + 8;
		if (fp >= lo && lr == ret)
			return 0;
		if (next <= fp)
			return 0;
		fp = next;
	}
	return 0;
}

#endif
