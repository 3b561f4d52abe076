/* SPDX-License-Identifier: MIT */
/*
 * optprobe_tramp.S - the shared half of every AArch64 detour
 * (optprobe.c): ukp_optprobe_common.
 *
 * On entry (blr from the detour): x16 = the site, x30 = the detour's
 * next instruction; [sp, #0..32) holds the probed code's x16, x17 and
 * x30 (at 0, 8, 16); every other register is the probed code's, and
 * sp + 32 its stack pointer.
 *
 * It fills a struct pt_regs (pc is set by the C half), calls
 * ukp_optprobe_hit(regs, site, 1) (1: the FP/SIMD state is live, so
 * that every handler not proven to leave it alone runs through
 * arch_vecsafe_call), takes back the general registers and the
 * condition flags (handlers may change them; x16, x17 and x30 through
 * the detour's save slots) and returns to the detour.
 *
 *   sp + 288   the detour's saves (x16, x17, x30)
 *   sp + 272   x30 (the detour), x19 (scratch: the site)
 *   sp         struct pt_regs
 * [detour] context: the thread, wherever it was.
 */
#include "pt_regs_asm.h"

#define FRAME (PT_SIZE + 16)

	.section ukprobes_text, "ax", %progbits
	.p2align 4
	.globl ukp_optprobe_common
	.hidden ukp_optprobe_common
	.type ukp_optprobe_common, %function
ukp_optprobe_common:
	.cfi_startproc
	.cfi_undefined 30
	sub sp, sp, #FRAME
	.cfi_def_cfa_offset FRAME
	PT_STORE_X0_X15
	ldp x0, x1, [sp, #FRAME]	/* the probed code's x16, x17 */
	stp x0, x1, [sp, #128]
	PT_STORE_X18_X29
	ldr x0, [sp, #FRAME + 16]	/* its x30 */
	add x1, sp, #FRAME + 32		/* its sp */
	stp x0, x1, [sp, #240]
	mrs x1, nzcv
	stp xzr, x1, [sp, #256]		/* pc (set by the C half), pstate */
	stp x30, x19, [sp, #PT_SIZE]
	mov x0, sp
	mov x1, x16
	mov w2, #1
	bl ukp_optprobe_hit
	/* the probed code's x16, x17, x30 as the handlers left them, into
	 * the detour's save slots */
	ldp x0, x1, [sp, #128]
	stp x0, x1, [sp, #FRAME]
	ldr x0, [sp, #240]
	str x0, [sp, #FRAME + 16]
	ldr x1, [sp, #264]
	msr nzcv, x1
	ldr x30, [sp, #PT_SIZE]
	PT_LOAD_X0_X15
	PT_LOAD_X18_X29
	add sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size ukp_optprobe_common, .-ukp_optprobe_common
	.globl ukp_optprobe_common_end
	.hidden ukp_optprobe_common_end
ukp_optprobe_common_end:

	.section .note.GNU-stack, "", %progbits
