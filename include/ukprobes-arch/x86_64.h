/* SPDX-License-Identifier: MIT */
/*
 * ukprobes-arch/x86_64.h - the x86-64 part of <ukprobes.h>: struct
 * pt_regs with the kernel's field names and order, its accessors, and
 * kprobe_opcode_t. Include <ukprobes.h>, not this file.
 *
 * <asm/ptrace.h> (the kernel's user-space header) has its own struct
 * pt_regs: the same layout with other names (rip, rsp, rax, ...). Both
 * orders of inclusion work:
 *  - <asm/ptrace.h> first: its struct keeps the tag; ours is named
 *    ukp_pt_regs and the macro pt_regs names it, so that code written
 *    after <ukprobes.h> (handlers: regs->ip, regs->ax) gets ours;
 *  - <ukprobes.h> first: ours is struct pt_regs and a later
 *    <asm/ptrace.h> adds nothing (its guard is set; its flag macros,
 *    <asm/processor-flags.h>, come from here; its PTRACE_* requests are
 *    <sys/ptrace.h>'s). Including <asm/ptrace-abi.h> here would break a
 *    later <sys/ptrace.h>.
 */
#ifndef UKPROBES_ARCH_X86_64_H
#define UKPROBES_ARCH_X86_64_H

#ifdef _ASM_X86_PTRACE_H
#define pt_regs ukp_pt_regs
#else
#define _ASM_X86_PTRACE_H 1
#if defined(__has_include)
#if __has_include(<asm/processor-flags.h>)
#include <asm/processor-flags.h>
#endif
#endif
#endif

/*
 * Register state at a probe hit. At a breakpoint hit, ip is the probed
 * address + 1 (as the kernel shows it: past the int3); in a post_handler
 * it is the address of the next instruction to run. Handlers may change
 * any field; the change takes effect.
 */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
};

typedef unsigned char kprobe_opcode_t;

/*
 * The n-th word above the stack pointer (n = 0 is *sp), read without
 * faulting; 0 when the address cannot be read.
 */
UKPROBES_API unsigned long regs_get_kernel_stack_nth(const struct pt_regs *regs,
						      unsigned int n);

static inline unsigned long instruction_pointer(const struct pt_regs *regs)
{
	return regs->ip;
}

static inline void instruction_pointer_set(struct pt_regs *regs, unsigned long val)
{
	regs->ip = val;
}

static inline unsigned long user_stack_pointer(const struct pt_regs *regs)
{
	return regs->sp;
}

/* The frame pointer (rbp): the caller's rbp is at [bp], the return address at [bp + 8]. */
static inline unsigned long frame_pointer(const struct pt_regs *regs)
{
	return regs->bp;
}

static inline unsigned long regs_return_value(const struct pt_regs *regs)
{
	return regs->ax;
}

/*
 * SysV x86-64 integer argument n (0-based) of a function, valid at its
 * entry: di, si, dx, cx, r8, r9, then the stack above the return address.
 */
static inline unsigned long regs_get_kernel_argument(const struct pt_regs *regs,
						     unsigned int n)
{
	switch (n) {
	case 0: return regs->di;
	case 1: return regs->si;
	case 2: return regs->dx;
	case 3: return regs->cx;
	case 4: return regs->r8;
	case 5: return regs->r9;
	default: return regs_get_kernel_stack_nth(regs, n - 5);
	}
}

#endif /* UKPROBES_ARCH_X86_64_H */
