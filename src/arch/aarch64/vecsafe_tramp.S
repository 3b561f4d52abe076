/* SPDX-License-Identifier: MIT */
/*
 * vecsafe_tramp.S - arch_vecsafe_call(f, arg): f(arg) with the FP/SIMD
 * state (v0-v31, FPSR, FPCR) kept around it, AArch64.
 *
 * [trap] [detour] The library is built with -mgeneral-regs-only; a
 * handler that was not proven vector-free (vecstate.c) is called through
 * here, so that whatever it does to the FP/SIMD registers the probed
 * code does not see. The save area (32 x 16 bytes + FPSR/FPCR) lives on
 * this frame.
 */
	.section ukprobes_text, "ax", %progbits
	.p2align 4
	.globl arch_vecsafe_call
	.hidden arch_vecsafe_call
	.type arch_vecsafe_call, %function
arch_vecsafe_call:
	.cfi_startproc
	stp x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov x29, sp
	.cfi_def_cfa_register 29
	str x19, [sp, #16]
	.cfi_offset 19, -16
	sub sp, sp, #528
	stp q0, q1, [sp, #0]
	stp q2, q3, [sp, #32]
	stp q4, q5, [sp, #64]
	stp q6, q7, [sp, #96]
	stp q8, q9, [sp, #128]
	stp q10, q11, [sp, #160]
	stp q12, q13, [sp, #192]
	stp q14, q15, [sp, #224]
	stp q16, q17, [sp, #256]
	stp q18, q19, [sp, #288]
	stp q20, q21, [sp, #320]
	stp q22, q23, [sp, #352]
	stp q24, q25, [sp, #384]
	stp q26, q27, [sp, #416]
	stp q28, q29, [sp, #448]
	stp q30, q31, [sp, #480]
	mrs x16, fpsr
	mrs x17, fpcr
	str x16, [sp, #512]
	str x17, [sp, #520]
	mov x16, x0
	mov x0, x1
	blr x16
	mov w19, w0
	ldr x16, [sp, #512]
	ldr x17, [sp, #520]
	msr fpsr, x16
	msr fpcr, x17
	ldp q0, q1, [sp, #0]
	ldp q2, q3, [sp, #32]
	ldp q4, q5, [sp, #64]
	ldp q6, q7, [sp, #96]
	ldp q8, q9, [sp, #128]
	ldp q10, q11, [sp, #160]
	ldp q12, q13, [sp, #192]
	ldp q14, q15, [sp, #224]
	ldp q16, q17, [sp, #256]
	ldp q18, q19, [sp, #288]
	ldp q20, q21, [sp, #320]
	ldp q22, q23, [sp, #352]
	ldp q24, q25, [sp, #384]
	ldp q26, q27, [sp, #416]
	ldp q28, q29, [sp, #448]
	ldp q30, q31, [sp, #480]
	mov w0, w19
	add sp, sp, #528
	ldr x19, [sp, #16]
	.cfi_restore 19
	ldp x29, x30, [sp], #32
	.cfi_def_cfa 31, 0
	.cfi_restore 29
	.cfi_restore 30
	ret
	.cfi_endproc
	.size arch_vecsafe_call, .-arch_vecsafe_call

	.section .note.GNU-stack, "", %progbits
