/* SPDX-License-Identifier: MIT */
/*
 * regs.c - x86-64 signal context <-> struct pt_regs.
 *
 * The kernel saves the interrupted registers in the signal frame's
 * ucontext (glibc's gregs[] order); handlers see them as the kernel's
 * struct pt_regs. Every function here is [trap]: async-signal-safe, no
 * libc calls.
 */
#include <ucontext.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

UKP_TRAP_TEXT void arch_regs_from_ucontext(struct pt_regs *regs, const ucontext_t *uc)
{
	const greg_t *g = uc->uc_mcontext.gregs;

	regs->r15 = g[REG_R15];
	regs->r14 = g[REG_R14];
	regs->r13 = g[REG_R13];
	regs->r12 = g[REG_R12];
	regs->bp = g[REG_RBP];
	regs->bx = g[REG_RBX];
	regs->r11 = g[REG_R11];
	regs->r10 = g[REG_R10];
	regs->r9 = g[REG_R9];
	regs->r8 = g[REG_R8];
	regs->ax = g[REG_RAX];
	regs->cx = g[REG_RCX];
	regs->dx = g[REG_RDX];
	regs->si = g[REG_RSI];
	regs->di = g[REG_RDI];
	regs->orig_ax = (unsigned long)-1;
	regs->ip = g[REG_RIP];
	regs->cs = (unsigned long)g[REG_CSGSFS] & 0xffff;
	regs->flags = g[REG_EFL];
	regs->sp = g[REG_RSP];
	regs->ss = 0x2b; /* __USER_DS; the frame does not carry it */
}

UKP_TRAP_TEXT void arch_regs_to_ucontext(ucontext_t *uc, const struct pt_regs *regs)
{
	greg_t *g = uc->uc_mcontext.gregs;

	g[REG_R15] = regs->r15;
	g[REG_R14] = regs->r14;
	g[REG_R13] = regs->r13;
	g[REG_R12] = regs->r12;
	g[REG_RBP] = regs->bp;
	g[REG_RBX] = regs->bx;
	g[REG_R11] = regs->r11;
	g[REG_R10] = regs->r10;
	g[REG_R9] = regs->r9;
	g[REG_R8] = regs->r8;
	g[REG_RAX] = regs->ax;
	g[REG_RCX] = regs->cx;
	g[REG_RDX] = regs->dx;
	g[REG_RSI] = regs->si;
	g[REG_RDI] = regs->di;
	g[REG_RIP] = regs->ip;
	/* sigreturn keeps only the user-changeable flag bits */
	g[REG_EFL] = regs->flags;
	g[REG_RSP] = regs->sp;
}

UKP_TRAP_TEXT uintptr_t arch_uc_ip(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

UKP_TRAP_TEXT void arch_uc_set_ip(ucontext_t *uc, uintptr_t ip)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
}

UKP_TRAP_TEXT int arch_uc_trapnr(const ucontext_t *uc)
{
	return (int)uc->uc_mcontext.gregs[REG_TRAPNO];
}

extern char ukp_nofault_insn[], ukp_nofault_ld8[], ukp_nofault_st8[], ukp_nofault_ld4[],
	ukp_nofault_st4[], ukp_nofault_load[], ukp_nofault_store[], ukp_nofault_fixup[],
	ukp_nofault_chain[], ukp_nofault_last1[], ukp_nofault_last2[], ukp_nofault_last4[],
	ukp_nofault_last8[];

/* [trap] A fault at the copy loop (or the word load/store, or a load of
 * the dereference chain) resumes at
 * the fixup, returning -EFAULT. */
UKP_TRAP_TEXT bool arch_nofault_fixup(uintptr_t ip, uintptr_t *fixup_ip)
{
	if (ip != (uintptr_t)ukp_nofault_insn && ip != (uintptr_t)ukp_nofault_ld8 &&
	    ip != (uintptr_t)ukp_nofault_st8 && ip != (uintptr_t)ukp_nofault_ld4 &&
	    ip != (uintptr_t)ukp_nofault_st4 && ip != (uintptr_t)ukp_nofault_load &&
	    ip != (uintptr_t)ukp_nofault_store && ip != (uintptr_t)ukp_nofault_chain &&
	    ip != (uintptr_t)ukp_nofault_last1 && ip != (uintptr_t)ukp_nofault_last2 &&
	    ip != (uintptr_t)ukp_nofault_last4 && ip != (uintptr_t)ukp_nofault_last8)
		return false;
	*fixup_ip = (uintptr_t)ukp_nofault_fixup;
	return true;
}
