/* SPDX-License-Identifier: MIT */
/*
 * emu_ops.h - the emulated operations of x86-64, shared by the decoder
 * wrapper (insn.c, which chooses one at registration time) and the
 * emulator (core.c, which runs it in the trap handler). Private to
 * src/arch/x86_64; no Zydis type appears here.
 */
#ifndef UKP_X86_EMU_OPS_H
#define UKP_X86_EMU_OPS_H

#include <stddef.h>

#include "ukprobes.h"

/* Values of ukp_arch_insn.emu (meaningful only when !ool). */
enum ukp_emu_op {
	UKP_EMU_NONE = 0,	/* not prepared for emulation */
	UKP_EMU_JMP,		/* eb, e9: ip = next + rel */
	UKP_EMU_JCC,		/* 70-7f, 0f 80-8f: condition in ai->cond */
	UKP_EMU_CALL,		/* e8: push next; ip = next + rel */
	UKP_EMU_RET,		/* c3, c2: ip = pop; sp += imm */
	UKP_EMU_LOOP,		/* e2: --cx != 0 */
	UKP_EMU_LOOPE,		/* e1: --cx != 0 && ZF */
	UKP_EMU_LOOPNE,		/* e0: --cx != 0 && !ZF */
	UKP_EMU_JRCXZ,		/* e3: cx == 0 (no decrement) */
	UKP_EMU_CALL_IND,	/* ff /2: push next; ip = operand */
	UKP_EMU_JMP_IND,	/* ff /4: ip = operand */
};

/* ind_base / ind_index values that are not pt_regs word indices. */
#define UKP_EMU_REG_NONE 0xff
#define UKP_EMU_REG_RIP  0xfe

/* pt_regs seen as an array of words: the index of a named field. */
#define UKP_PT_REGS_WORD(field) \
	((unsigned int)(offsetof(struct pt_regs, field) / sizeof(unsigned long)))
#define UKP_PT_REGS_NWORDS \
	((unsigned int)(sizeof(struct pt_regs) / sizeof(unsigned long)))

#endif /* UKP_X86_EMU_OPS_H */
