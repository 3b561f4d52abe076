/* SPDX-License-Identifier: MIT */
/*
 * sigjmp.S - sigsetjmp() keeps the program's view of its signal mask
 * (AArch64; see src/arch/x86_64/sigjmp.S for why it is assembly).
 *
 * int __sigsetjmp(struct __jmp_buf_tag *env, int savemask)
 * int setjmp(jmp_buf env)   (BSD: saves the mask)
 *
 * The helper runs in a frame of its own that is gone again before glibc's
 * __sigsetjmp is entered with the caller's x29, x30 and sp, so the
 * jmp_buf it fills describes the caller.
 */
	.text
	.globl __sigsetjmp
	.type __sigsetjmp, %function
	.p2align 2
__sigsetjmp:
	.cfi_startproc
	stp x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov x29, sp
	stp x0, x1, [sp, #16]
	bl ukp_vmask_jmp_save
	ldp x0, x1, [sp, #16]
	ldp x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore 29
	.cfi_restore 30
	adrp x16, ukp_real_sigsetjmp
	ldr x16, [x16, :lo12:ukp_real_sigsetjmp]
	br x16
	.cfi_endproc
	.size __sigsetjmp, .-__sigsetjmp

	.globl setjmp
	.type setjmp, %function
setjmp:
	.cfi_startproc
	mov w1, #1
	b __sigsetjmp
	.cfi_endproc
	.size setjmp, .-setjmp

	.section .note.GNU-stack, "", %progbits
