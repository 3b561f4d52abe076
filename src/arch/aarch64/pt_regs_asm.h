/* SPDX-License-Identifier: MIT */
/*
 * pt_regs_asm.h - assembler macros that store and load the general
 * registers of a struct pt_regs at sp (include/ukprobes-arch/aarch64.h:
 * regs[31], sp, pc, pstate, 272 bytes), for the trampolines
 * (kretprobe_tramp.S, optprobe_tramp.S). x16, x17 and x30 are each
 * trampoline's own business.
 */
#ifndef UKP_PT_REGS_ASM_H
#define UKP_PT_REGS_ASM_H

#define PT_SIZE   272
#define PT_X16    128
#define PT_X30    240
#define PT_SP     248
#define PT_PC     256
#define PT_PSTATE 264

	.macro PT_STORE_X0_X15
	stp x0, x1, [sp, #0]
	stp x2, x3, [sp, #16]
	stp x4, x5, [sp, #32]
	stp x6, x7, [sp, #48]
	stp x8, x9, [sp, #64]
	stp x10, x11, [sp, #80]
	stp x12, x13, [sp, #96]
	stp x14, x15, [sp, #112]
	.endm

	.macro PT_STORE_X18_X29
	stp x18, x19, [sp, #144]
	stp x20, x21, [sp, #160]
	stp x22, x23, [sp, #176]
	stp x24, x25, [sp, #192]
	stp x26, x27, [sp, #208]
	stp x28, x29, [sp, #224]
	.endm

	.macro PT_LOAD_X0_X15
	ldp x0, x1, [sp, #0]
	ldp x2, x3, [sp, #16]
	ldp x4, x5, [sp, #32]
	ldp x6, x7, [sp, #48]
	ldp x8, x9, [sp, #64]
	ldp x10, x11, [sp, #80]
	ldp x12, x13, [sp, #96]
	ldp x14, x15, [sp, #112]
	.endm

	.macro PT_LOAD_X18_X29
	ldp x18, x19, [sp, #144]
	ldp x20, x21, [sp, #160]
	ldp x22, x23, [sp, #176]
	ldp x24, x25, [sp, #192]
	ldp x26, x27, [sp, #208]
	ldp x28, x29, [sp, #224]
	.endm

#endif
