// SPDX-License-Identifier: MIT
/*
 * core.c - AArch64 probe execution: simulation of the instructions that
 * insn.c chose not to run out of line (they read or write pc), as the
 * kernel's arch/arm64/kernel/probes/simulate-insn.c does, and the fix-up
 * after an out-of-line step.
 *
 * Everything here runs in the SIGTRAP handler ([trap]): async-signal-safe,
 * no allocation, no libc call (pt_regs is written field by field, never
 * by an implicit memcpy). Memory is read only through arch_copy_nofault(),
 * so a literal load from an unmapped address becomes -EFAULT instead of a
 * nested SIGSEGV. Every function, static ones included, lives in the trap
 * text section (UKP_TRAP_TEXT) so that the blacklist covers it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/arch.h"
#include "sim_ops.h"

#define A64_PSTATE_N (UINT64_C(1) << 31)
#define A64_PSTATE_Z (UINT64_C(1) << 30)
#define A64_PSTATE_C (UINT64_C(1) << 29)
#define A64_PSTATE_V (UINT64_C(1) << 28)
/* PSTATE.BTYPE, the branch type a BTI landing pad checks (FEAT_BTI) */
#define A64_PSTATE_BTYPE_MASK (UINT64_C(3) << 10)
#define A64_PSTATE_BTYPE_JC (UINT64_C(1) << 10)	/* br x16/x17, br from an unguarded page */
#define A64_PSTATE_BTYPE_C (UINT64_C(2) << 10)	/* blr */

/* [trap] Register r as these instructions read it: 31 is xzr. */
static UKP_TRAP_TEXT uint64_t xreg(const struct pt_regs *regs, unsigned int r)
{
	return r == 31 ? 0 : regs->regs[r];
}

/* [trap] A write to register 31 (xzr) is discarded. */
static UKP_TRAP_TEXT void set_xreg(struct pt_regs *regs, unsigned int r, uint64_t v)
{
	if (r != 31)
		regs->regs[r] = v;
}

/*
 * [trap] ConditionHolds() of the Arm ARM: cond[3:1] picks the test,
 * cond[0] negates it, except that 1111 (nv) is "always" like 1110 (al).
 */
static UKP_TRAP_TEXT bool cond_holds(unsigned int cond, uint64_t pstate)
{
	bool n = (pstate & A64_PSTATE_N) != 0, z = (pstate & A64_PSTATE_Z) != 0;
	bool c = (pstate & A64_PSTATE_C) != 0, v = (pstate & A64_PSTATE_V) != 0;
	bool r;

	switch (cond >> 1) {
	case 0: r = z; break;			/* eq */
	case 1: r = c; break;			/* cs */
	case 2: r = n; break;			/* mi */
	case 3: r = v; break;			/* vs */
	case 4: r = c && !z; break;		/* hi */
	case 5: r = n == v; break;		/* ge */
	case 6: r = n == v && !z; break;	/* gt */
	default: return true;			/* al, nv */
	}
	return (cond & 1) ? !r : r;
}

/* [trap] ldr/ldrsw (literal): nothing changes when the load faults. */
static UKP_TRAP_TEXT int sim_literal(const struct ukp_arch_insn *ai, uintptr_t addr,
				     struct pt_regs *regs, uintptr_t *fault_addr)
{
	uintptr_t src = addr + (uintptr_t)ai->imm;
	uint64_t v;

	if (ai->sim == UKP_SIM_LDR_LIT64) {
		if (arch_copy_nofault(&v, (const void *)src, 8))
			goto fault;
	} else {
		uint32_t w;

		if (arch_copy_nofault(&w, (const void *)src, 4))
			goto fault;
		v = ai->sim == UKP_SIM_LDRSW_LIT ? (uint64_t)(int64_t)(int32_t)w : w;
	}
	set_xreg(regs, ai->reg, v);
	regs->pc = addr + 4;
	return 0;
fault:
	*fault_addr = src;
	return -EFAULT;
}

/* [trap] The simulation proper: everything but BTYPE. */
static UKP_TRAP_TEXT int sim_insn(const struct ukp_arch_insn *ai, uintptr_t addr,
				  struct pt_regs *regs, uintptr_t *fault_addr)
{
	uint64_t next = addr + 4, target = addr + (uint64_t)ai->imm, v;
	bool taken;

	switch (ai->sim) {
	case UKP_SIM_B:
		regs->pc = target;
		return 0;
	case UKP_SIM_BL:
		set_xreg(regs, 30, next);
		regs->pc = target;
		return 0;
	case UKP_SIM_BCOND:
		regs->pc = cond_holds(ai->cond, regs->pstate) ? target : next;
		return 0;
	case UKP_SIM_CBZ:
	case UKP_SIM_CBNZ:
		v = xreg(regs, ai->reg);
		if (!ai->is64)
			v = (uint32_t)v;
		taken = (v == 0) == (ai->sim == UKP_SIM_CBZ);
		regs->pc = taken ? target : next;
		return 0;
	case UKP_SIM_TBZ:
	case UKP_SIM_TBNZ:
		v = (xreg(regs, ai->reg) >> ai->bit) & 1;
		taken = (v == 0) == (ai->sim == UKP_SIM_TBZ);
		regs->pc = taken ? target : next;
		return 0;
	case UKP_SIM_BR:
	case UKP_SIM_RET:
		regs->pc = xreg(regs, ai->reg);
		return 0;
	case UKP_SIM_BLR:
		/* The target is read before x30 is written: blr x30 goes
		 * to the old x30. */
		v = xreg(regs, ai->reg);
		set_xreg(regs, 30, next);
		regs->pc = v;
		return 0;
	case UKP_SIM_ADR:
		set_xreg(regs, ai->reg, target);
		regs->pc = next;
		return 0;
	case UKP_SIM_ADRP:
		set_xreg(regs, ai->reg, (addr & ~(uint64_t)0xfff) + (uint64_t)ai->imm);
		regs->pc = next;
		return 0;
	case UKP_SIM_LDR_LIT32:
	case UKP_SIM_LDR_LIT64:
	case UKP_SIM_LDRSW_LIT:
		return sim_literal(ai, addr, regs, fault_addr);
	default:
		return -EINVAL;	/* not prepared for simulation */
	}
}

/*
 * [trap] PSTATE.BTYPE after the simulated instruction, as the CPU sets it:
 * br and blr set it for the landing pad at their target, every other
 * instruction clears it. (The brk may have been reached by an indirect
 * branch, leaving a BTYPE that must not reach the next instruction.) br
 * sets 11 on the CPU when it is in a guarded page and not through x16
 * or x17; the signal handler cannot tell a guarded page, so it takes 01,
 * which every landing pad (bti c, j, jc) accepts.
 */
static UKP_TRAP_TEXT void set_btype(struct pt_regs *regs, unsigned int sim)
{
	regs->pstate &= ~A64_PSTATE_BTYPE_MASK;
	if (sim == UKP_SIM_BR)
		regs->pstate |= A64_PSTATE_BTYPE_JC;
	else if (sim == UKP_SIM_BLR)
		regs->pstate |= A64_PSTATE_BTYPE_C;
}

/* [trap] */
UKP_TRAP_TEXT int arch_emulate(const struct ukp_arch_insn *ai, uintptr_t addr,
			       struct pt_regs *regs, uintptr_t *fault_addr)
{
	int ret = sim_insn(ai, addr, regs, fault_addr);

	if (!ret)
		set_btype(regs, ai->sim);
	return ret;
}

/* [trap] */
UKP_TRAP_TEXT void arch_resume_ool(const struct ukp_arch_insn *ai, uintptr_t addr,
				   uintptr_t slot, struct pt_regs *regs)
{
	/* Only instructions that neither read nor write pc run out of line
	 * (insn.c simulates or refuses the rest), and svc returns to the
	 * next instruction like any other: nothing else to correct. */
	(void)ai;
	(void)slot;
	regs->pc = addr + 4;
}
