/* SPDX-License-Identifier: MIT */
/*
 * kretprobe_tramp.S - the return trampoline of kretprobes, AArch64 (the
 * kernel's arch_rethook_trampoline, for a process). A probed function
 * whose link register was swapped for ukp_kretprobe_trampoline at its
 * entry "returns" here with its own ret.
 *
 * On entry: sp = S, the stack pointer of the function's entry (the
 * frame's slot, arch_kretprobe_ret_slot); x30 = the trampoline; every
 * other register holds what the function returned with.
 *
 *   S                 the caller's stack
 *   S - 16            frame record: x29, x30 (the trampoline)
 *   S - 288           struct pt_regs (regs[31], sp, pc, pstate)
 *
 * It fills pt_regs (sp = S, pc = the trampoline, pstate's NZCV), calls
 * ukp_kretprobe_dispatch(regs, S, 1) (1: the FP/SIMD state is live, so
 * that every handler not proven to leave it alone runs through
 * arch_vecsafe_call), restores every register from pt_regs (handlers may
 * change the return value in regs[0]; the dispatcher put the real return
 * address in regs[30] and pc) and goes to pc through x16 (x16 and x17
 * are scratch at a return). The return address of this frame is marked
 * undefined: an unwinder stops here (doc/arch.md).
 */
#include "pt_regs_asm.h"

#define FRAME (PT_SIZE + 16)

	.section ukprobes_text, "ax", %progbits
	.p2align 4
	nop			/* the byte before the trampoline: no FDE */
	.globl ukp_kretprobe_trampoline
	.hidden ukp_kretprobe_trampoline
	.type ukp_kretprobe_trampoline, %function
ukp_kretprobe_trampoline:
	.cfi_startproc
	.cfi_undefined 30
	sub sp, sp, #FRAME
	.cfi_def_cfa_offset FRAME
	PT_STORE_X0_X15
	stp x16, x17, [sp, #128]
	PT_STORE_X18_X29
	.cfi_offset 29, -(FRAME - 232)
	add x9, sp, #FRAME
	stp x30, x9, [sp, #240]		/* regs[30], sp */
	adr x9, ukp_kretprobe_trampoline
	mrs x10, nzcv
	stp x9, x10, [sp, #256]		/* pc, pstate */
	stp x29, x30, [sp, #PT_SIZE]
	add x29, sp, #PT_SIZE
	mov x0, sp
	add x1, sp, #FRAME
	mov w2, #1
	bl ukp_kretprobe_dispatch
	cbz x0, 9f
	ldp x16, x10, [sp, #256]	/* pc, pstate */
	msr nzcv, x10
	PT_LOAD_X0_X15
	ldr x17, [sp, #136]
	PT_LOAD_X18_X29
	ldr x30, [sp, #240]
	add sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret x16
	/* No pending return for this frame: nowhere to go (the dispatcher
	 * said why). */
9:	udf #0
	.cfi_endproc
	.size ukp_kretprobe_trampoline, .-ukp_kretprobe_trampoline

	.section .note.GNU-stack, "", %progbits
