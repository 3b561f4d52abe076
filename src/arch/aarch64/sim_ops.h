/* SPDX-License-Identifier: MIT */
/*
 * sim_ops.h - the simulated instructions of AArch64, shared by the
 * decoder (insn.c, which chooses one at registration time) and the
 * simulator (core.c, which runs it in the trap handler). Private to
 * src/arch/aarch64. The operands are in struct ukp_arch_insn: reg, cond,
 * bit, is64 and imm (arch_insn.h).
 */
#ifndef UKP_A64_SIM_OPS_H
#define UKP_A64_SIM_OPS_H

/* Values of ukp_arch_insn.sim (meaningful only when !ool). */
enum ukp_a64_sim {
	UKP_SIM_NONE = 0,	/* not simulated: runs out of line */
	UKP_SIM_B,		/* pc = addr + imm */
	UKP_SIM_BL,		/* x30 = addr + 4; pc = addr + imm */
	UKP_SIM_BCOND,		/* b.cond / bc.cond: NZCV against cond */
	UKP_SIM_CBZ,		/* reg (W or X, is64) == 0 */
	UKP_SIM_CBNZ,
	UKP_SIM_TBZ,		/* bit of reg clear */
	UKP_SIM_TBNZ,
	UKP_SIM_BR,		/* pc = reg */
	UKP_SIM_BLR,		/* pc = reg (read first); x30 = addr + 4 */
	UKP_SIM_RET,		/* pc = reg (x30 unless the encoding says) */
	UKP_SIM_ADR,		/* reg = addr + imm */
	UKP_SIM_ADRP,		/* reg = (addr & ~0xfff) + imm */
	UKP_SIM_LDR_LIT32,	/* reg = zero-extended 32 bits at addr + imm */
	UKP_SIM_LDR_LIT64,	/* reg = 64 bits at addr + imm */
	UKP_SIM_LDRSW_LIT,	/* reg = sign-extended 32 bits at addr + imm */
	UKP_SIM_COUNT
};

#endif /* UKP_A64_SIM_OPS_H */
