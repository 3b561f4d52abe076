/* SPDX-License-Identifier: MIT */
/*
 * sigjmp.S - sigsetjmp() keeps the program's view of its signal mask.
 *
 * glibc's __sigsetjmp saves the kernel's mask, which never holds the
 * library's own signals (sigmask.c); their part of the program's view is
 * written next to it first (ukp_vmask_jmp_save, into the words of
 * __saved_mask the kernel does not use), and the long jumps put it back
 * (sigmask.c). A function that returns twice cannot be wrapped by a C
 * function: this one calls the helper, then jumps to glibc's, whose frame
 * is the caller's.
 *
 * int __sigsetjmp(struct __jmp_buf_tag *env, int savemask)
 * int setjmp(jmp_buf env)   (BSD: saves the mask; the setjmp() macro of
 *                            <setjmp.h> is _setjmp, which does not)
 */
	.text
	.globl __sigsetjmp
	.type __sigsetjmp, @function
__sigsetjmp:
	.cfi_startproc
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	pushq %rsi
	.cfi_adjust_cfa_offset 8
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call ukp_vmask_jmp_save
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	popq %rsi
	.cfi_adjust_cfa_offset -8
	popq %rdi
	.cfi_adjust_cfa_offset -8
	jmp *ukp_real_sigsetjmp(%rip)
	.cfi_endproc
	.size __sigsetjmp, .-__sigsetjmp

	.globl setjmp
	.type setjmp, @function
setjmp:
	.cfi_startproc
	movl $1, %esi
	jmp __sigsetjmp
	.cfi_endproc
	.size setjmp, .-setjmp

	.section .note.GNU-stack, "", @progbits
