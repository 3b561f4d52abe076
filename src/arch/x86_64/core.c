// SPDX-License-Identifier: MIT
/*
 * core.c - x86-64 probe execution: emulation of the control transfers
 * that insn.c chose not to run out of line, and the fix-up after an
 * out-of-line step.
 *
 * Everything here runs in the SIGTRAP handler ([trap]): async-signal-safe,
 * no allocation, no libc call (not even an implicit memcpy: pt_regs is
 * only ever written field by field). User memory is touched only through
 * arch_copy_nofault(), so a bad stack or a bad indirect target becomes
 * -EFAULT instead of a nested SIGSEGV. Every function, static ones
 * included, lives in the trap text section (UKP_TRAP_TEXT) so that the
 * blacklist covers it: a probe in here would recurse.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"	/* arch.h, UKP_TRAP_TEXT */
#include "emu_ops.h"

#define X86_FLAGS_CF (1UL << 0)
#define X86_FLAGS_PF (1UL << 2)
#define X86_FLAGS_ZF (1UL << 6)
#define X86_FLAGS_SF (1UL << 7)
#define X86_FLAGS_OF (1UL << 11)

_Static_assert(UKP_PT_REGS_WORD(r15) == 0 && UKP_PT_REGS_WORD(ax) == 10 &&
	       UKP_PT_REGS_WORD(ip) == 16 && UKP_PT_REGS_WORD(sp) == 19 &&
	       UKP_PT_REGS_NWORDS == 21, "struct pt_regs is not the kernel's x86-64 layout");

static UKP_TRAP_TEXT unsigned long reg_word(const struct pt_regs *regs, unsigned int idx)
{
	return ((const unsigned long *)regs)[idx];
}

/* [trap] Read one word of user memory; on a fault say where. */
static UKP_TRAP_TEXT int read_word(uintptr_t uaddr, unsigned long *val,
				   uintptr_t *fault_addr)
{
	if (arch_copy_nofault(val, (const void *)uaddr, sizeof(*val))) {
		*fault_addr = uaddr;
		return -EFAULT;
	}
	return 0;
}

/* [trap] Write one word of user memory; on a fault say where. */
static UKP_TRAP_TEXT int write_word(uintptr_t uaddr, unsigned long val,
				    uintptr_t *fault_addr)
{
	if (arch_copy_nofault((void *)uaddr, &val, sizeof(val))) {
		*fault_addr = uaddr;
		return -EFAULT;
	}
	return 0;
}

/*
 * [trap] The condition of jcc/setcc/cmovcc number cc. Even cc test a
 * flag combination, odd cc its negation. Every term is reduced to a
 * bool before it is combined: the kernel's JNG/JNLE emulation once
 * went wrong by mixing a flag mask into a boolean expression.
 */
static UKP_TRAP_TEXT bool cond_true(unsigned int cc, unsigned long flags)
{
	static const unsigned long masks[6] = {
		X86_FLAGS_OF,			/* o */
		X86_FLAGS_CF,			/* b */
		X86_FLAGS_ZF,			/* z */
		X86_FLAGS_CF | X86_FLAGS_ZF,	/* be */
		X86_FLAGS_SF,			/* s */
		X86_FLAGS_PF,			/* p */
	};
	bool match;

	if (cc < 0xc) {
		match = (flags & masks[cc >> 1]) != 0;
	} else {
		match = !(flags & X86_FLAGS_SF) != !(flags & X86_FLAGS_OF);	/* l */
		if (cc >= 0xe)
			match = match || (flags & X86_FLAGS_ZF) != 0;		/* le */
	}
	return match != (bool)(cc & 1);
}

/* [trap] loop/loope/loopne/jrcxz: cx is as wide as the address size. */
static UKP_TRAP_TEXT void emulate_loop(const struct ukp_arch_insn *ai, unsigned long next,
				       struct pt_regs *regs)
{
	unsigned long cx = regs->cx;
	bool taken;

	if (ai->emu == UKP_EMU_JRCXZ) {
		taken = (ai->addr_size == 32 ? (uint32_t)cx : cx) == 0;
	} else {
		/* A 32-bit count is written back as ecx: zero-extended into
		 * rcx like every 32-bit register write (test_insn checks this
		 * against the CPU). */
		cx = ai->addr_size == 32 ? (uint32_t)(cx - 1) : cx - 1;
		regs->cx = cx;
		taken = cx != 0;
		if (ai->emu == UKP_EMU_LOOPE)
			taken = taken && (regs->flags & X86_FLAGS_ZF);
		else if (ai->emu == UKP_EMU_LOOPNE)
			taken = taken && !(regs->flags & X86_FLAGS_ZF);
	}
	regs->ip = taken ? next + ai->rel : next;
}

/* [trap] The target of ff /2 or ff /4: a register or a word in memory. */
static UKP_TRAP_TEXT int indirect_target(const struct ukp_arch_insn *ai, unsigned long next,
					 const struct pt_regs *regs, unsigned long *target,
					 uintptr_t *fault_addr)
{
	unsigned long ea;

	if (!ai->ind_mem) {
		*target = reg_word(regs, ai->ind_base);
		return 0;
	}

	ea = (unsigned long)ai->ind_disp;
	if (ai->ind_base == UKP_EMU_REG_RIP)
		ea += next;
	else if (ai->ind_base != UKP_EMU_REG_NONE)
		ea += reg_word(regs, ai->ind_base);
	if (ai->ind_index != UKP_EMU_REG_NONE)
		ea += reg_word(regs, ai->ind_index) * ai->ind_scale;
	if (ai->addr_size == 32)	/* 0x67: the address wraps at 4 GiB */
		ea = (uint32_t)ea;
	return read_word(ea, target, fault_addr);
}

/* [trap] Push the return address, then go. Nothing changes on a fault. */
static UKP_TRAP_TEXT int emulate_call(struct pt_regs *regs, unsigned long ret_addr,
				      unsigned long target, uintptr_t *fault_addr)
{
	unsigned long sp = regs->sp - sizeof(unsigned long);

	if (write_word(sp, ret_addr, fault_addr))
		return -EFAULT;
	regs->sp = sp;
	regs->ip = target;
	return 0;
}

/* [trap] ret / ret imm16: the immediate is released after the pop. */
static UKP_TRAP_TEXT int emulate_ret(const struct ukp_arch_insn *ai, struct pt_regs *regs,
				     uintptr_t *fault_addr)
{
	unsigned long ret_addr;

	if (read_word(regs->sp, &ret_addr, fault_addr))
		return -EFAULT;
	regs->sp += sizeof(unsigned long) + ai->imm;
	regs->ip = ret_addr;
	return 0;
}

/* [trap] */
UKP_TRAP_TEXT int arch_emulate(const struct ukp_arch_insn *ai, uintptr_t addr,
			       struct pt_regs *regs, uintptr_t *fault_addr)
{
	unsigned long next = addr + ai->len;
	unsigned long target;
	int ret;

	switch (ai->emu) {
	case UKP_EMU_JMP:
		regs->ip = next + ai->rel;
		return 0;
	case UKP_EMU_JCC:
		regs->ip = cond_true(ai->cond, regs->flags) ? next + ai->rel : next;
		return 0;
	case UKP_EMU_CALL:
		return emulate_call(regs, next, next + ai->rel, fault_addr);
	case UKP_EMU_RET:
		return emulate_ret(ai, regs, fault_addr);
	case UKP_EMU_LOOP:
	case UKP_EMU_LOOPE:
	case UKP_EMU_LOOPNE:
	case UKP_EMU_JRCXZ:
		emulate_loop(ai, next, regs);
		return 0;
	case UKP_EMU_CALL_IND:
	case UKP_EMU_JMP_IND:
		/* The operand is read before the push: call *(%rsp) and
		 * call *%rsp see the old sp, as on the CPU. */
		ret = indirect_target(ai, next, regs, &target, fault_addr);
		if (ret)
			return ret;
		if (ai->emu == UKP_EMU_CALL_IND)
			return emulate_call(regs, next, target, fault_addr);
		regs->ip = target;
		return 0;
	default:
		return -EINVAL;	/* not prepared for emulation */
	}
}

/* [trap] */
UKP_TRAP_TEXT void arch_resume_ool(const struct ukp_arch_insn *ai, uintptr_t addr,
				   uintptr_t slot, struct pt_regs *regs)
{
	/* Only straight-line instructions run out of line (insn.c emulates
	 * or refuses the rest), so execution continues after the original. */
	regs->ip = addr + ai->len;
	/* syscall stored its return address, slot + len, in rcx. */
	if (ai->is_syscall)
		regs->cx = addr + ai->len;
}

/*
 * [reg] glibc's x86-64 dynamic linker calls a resolver with no arguments
 * (its resolvers read the CPU features it computed); gdb passes AT_HWCAP
 * in the first argument register, which such a resolver ignores and one
 * written for the generic ELF convention expects. Not trap text: it runs
 * only at registration.
 */
uintptr_t arch_ifunc_resolve(uintptr_t resolver)
{
	uintptr_t (*fn)(unsigned long) = (uintptr_t (*)(unsigned long))resolver;

	return fn(ukp_getauxval(AT_HWCAP));
}
