// SPDX-License-Identifier: MIT
/*
 * regs.c - AArch64 signal context <-> struct pt_regs, the trap number,
 * and the fixups of nofault.S.
 *
 * The kernel saves the interrupted registers in the signal frame's
 * mcontext (struct sigcontext: regs[31], sp, pc, pstate, then records in
 * __reserved: FP/SIMD, ESR, ...). Every function here is [trap]:
 * async-signal-safe, no libc calls.
 */
#include <asm/sigcontext.h>
#include <ucontext.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "sigframe.h"

/* NZCV and BTYPE: the pstate bits a context may change. */
#define PSTATE_USER_BITS (UINT64_C(0xf0000000) | (UINT64_C(3) << 10))

/* ESR_ELx.EC of a BRK instruction from AArch64 state. */
#define ESR_EC_BRK64 0x3c

UKP_TRAP_TEXT void arch_regs_from_ucontext(struct pt_regs *regs, const ucontext_t *uc)
{
	const mcontext_t *m = &uc->uc_mcontext;
	int i;

	for (i = 0; i < 31; i++)
		regs->regs[i] = m->regs[i];
	regs->sp = m->sp;
	regs->pc = m->pc;
	regs->pstate = m->pstate;
}

UKP_TRAP_TEXT void arch_regs_to_ucontext(ucontext_t *uc, const struct pt_regs *regs)
{
	mcontext_t *m = &uc->uc_mcontext;
	int i;

	for (i = 0; i < 31; i++)
		m->regs[i] = regs->regs[i];
	m->sp = regs->sp;
	m->pc = regs->pc;
	/* rt_sigreturn refuses a pstate that is not user mode: what the
	 * program's own code may change is taken, the condition flags
	 * NZCV (a handler's, a simulated compare) and BTYPE (set by a
	 * simulated branch, cleared for a stub entered as by a return) */
	m->pstate = (m->pstate & ~PSTATE_USER_BITS) | (regs->pstate & PSTATE_USER_BITS);
}

UKP_TRAP_TEXT uintptr_t arch_uc_ip(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.pc;
}

UKP_TRAP_TEXT void arch_uc_set_ip(ucontext_t *uc, uintptr_t ip)
{
	uc->uc_mcontext.pc = ip;
}

/* [trap] The ESR record of the frame, if the kernel wrote one. */
static UKP_TRAP_TEXT bool uc_esr(const ucontext_t *uc, uint64_t *esr)
{
	const struct esr_context *e = a64_frame_record(uc, ESR_MAGIC, sizeof(*e));

	if (!e)
		return false;
	*esr = e->esr;
	return true;
}

/*
 * [trap] The exception class of the syndrome (ESR_ELx.EC). The kernel
 * records the ESR for faults; for a trap without the record (a brk, or
 * an emulator that leaves it out), a brk at pc makes it ESR_EC_BRK64 and
 * anything else 0.
 */
UKP_TRAP_TEXT int arch_uc_trapnr(const ucontext_t *uc)
{
	uint64_t esr;
	uint32_t insn;

	if (uc_esr(uc, &esr))
		return (int)((esr >> 26) & 0x3f);
	if (arch_copy_nofault(&insn, (const void *)uc->uc_mcontext.pc, sizeof(insn)) == 0 &&
	    (insn & 0xffe0001fu) == 0xd4200000u)
		return ESR_EC_BRK64;
	return 0;
}

extern char ukp_nofault_ld8[], ukp_nofault_st8[], ukp_nofault_ld1[], ukp_nofault_st1[],
	ukp_nofault_load[], ukp_nofault_store[], ukp_nofault_fixup[], ukp_nofault_chain[],
	ukp_nofault_last1[], ukp_nofault_last2[], ukp_nofault_last4[], ukp_nofault_last8[];

/* [trap] A fault at one of the accesses of nofault.S resumes at the
 * fixup, returning -EFAULT. */
UKP_TRAP_TEXT bool arch_nofault_fixup(uintptr_t ip, uintptr_t *fixup_ip)
{
	if (ip != (uintptr_t)ukp_nofault_ld8 && ip != (uintptr_t)ukp_nofault_st8 &&
	    ip != (uintptr_t)ukp_nofault_ld1 && ip != (uintptr_t)ukp_nofault_st1 &&
	    ip != (uintptr_t)ukp_nofault_load && ip != (uintptr_t)ukp_nofault_store &&
	    ip != (uintptr_t)ukp_nofault_chain && ip != (uintptr_t)ukp_nofault_last1 &&
	    ip != (uintptr_t)ukp_nofault_last2 && ip != (uintptr_t)ukp_nofault_last4 &&
	    ip != (uintptr_t)ukp_nofault_last8)
		return false;
	*fixup_ip = (uintptr_t)ukp_nofault_fixup;
	return true;
}
