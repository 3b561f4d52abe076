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
 * frame, only its unwind information says where, so the unwinder
 * interposers cannot put the real address back (doc/arch.md). */
#define UKP_KRP_RET_IN_SLOT 0
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

#endif
