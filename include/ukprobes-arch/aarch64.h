/* SPDX-License-Identifier: MIT */
/*
 * ukprobes-arch/aarch64.h - the AArch64 part of <ukprobes.h>: struct
 * pt_regs with the kernel's arm64 names (regs[31], sp, pc, pstate), its
 * accessors, and kprobe_opcode_t (one 32-bit instruction). Include
 * <ukprobes.h>, not this file. <asm/ptrace.h> on arm64 has struct
 * user_pt_regs only, so there is nothing to clash with.
 */
#ifndef UKPROBES_ARCH_AARCH64_H
#define UKPROBES_ARCH_AARCH64_H

#include <stdint.h>

/*
 * Register state at a probe hit. At a breakpoint hit, pc is the probed
 * address (brk leaves it there); in a post_handler it is the address of
 * the next instruction to run. Handlers may change any field; the change
 * takes effect. regs[30] is the link register (x30).
 */
struct pt_regs {
	uint64_t regs[31];
	uint64_t sp;
	uint64_t pc;
	uint64_t pstate;
};

typedef uint32_t kprobe_opcode_t;

/*
 * The n-th word above the stack pointer (n = 0 is *sp), read without
 * faulting; 0 when the address cannot be read.
 */
UKPROBES_API unsigned long regs_get_kernel_stack_nth(const struct pt_regs *regs,
						      unsigned int n);

static inline unsigned long instruction_pointer(const struct pt_regs *regs)
{
	return regs->pc;
}

static inline void instruction_pointer_set(struct pt_regs *regs, unsigned long val)
{
	regs->pc = val;
}

static inline unsigned long user_stack_pointer(const struct pt_regs *regs)
{
	return regs->sp;
}

/* The frame pointer (x29): the frame record there holds the caller's x29, then x30. */
static inline unsigned long frame_pointer(const struct pt_regs *regs)
{
	return regs->regs[29];
}

/* The link register: where a function returns to, at its entry. */
static inline unsigned long procedure_link_pointer(const struct pt_regs *regs)
{
	return regs->regs[30];
}

static inline unsigned long regs_return_value(const struct pt_regs *regs)
{
	return regs->regs[0];
}

/*
 * AAPCS64 integer argument n (0-based) of a function, valid at its entry:
 * x0..x7, then the stack (the caller's outgoing area at sp).
 */
static inline unsigned long regs_get_kernel_argument(const struct pt_regs *regs,
						     unsigned int n)
{
	if (n < 8)
		return regs->regs[n];
	return regs_get_kernel_stack_nth(regs, n - 8);
}

#endif /* UKPROBES_ARCH_AARCH64_H */
