/* SPDX-License-Identifier: MIT */
/*
 * vecsafe_tramp.S - arch_vecsafe_call(f, arg): f(arg) with the vector,
 * x87 and MXCSR state kept around it (VEC_SAVE/VEC_RESTORE, tramp.h).
 *
 * [detour] When the hit path is vector-free (ukp_vec_lazy), the detour
 * and the return trampoline leave that state in the registers; the C
 * side calls each handler that was not proven vector-free through here
 * (vecstate.c). The save area lives on this frame, 64-byte aligned.
 */
#include "tramp.h"

	.section ukprobes_text, "ax", @progbits
	.p2align 4
	.globl arch_vecsafe_call
	.hidden arch_vecsafe_call
	.type arch_vecsafe_call, @function
arch_vecsafe_call:
	.cfi_startproc
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %r12
	.cfi_rel_offset %r12, -8
	pushq %rbx
	.cfi_rel_offset %rbx, -16
	pushq %r13
	.cfi_rel_offset %r13, -24
	pushq %r14
	.cfi_rel_offset %r14, -32
	movq %rdi, %r13			/* f */
	movq %rsi, %r14			/* arg */
	subq ukp_krp_xsave_size(%rip), %rsp
	andq $-64, %rsp
	VEC_SAVE			/* clobbers rax, rcx, rdx; sets r12 */
	movq %r14, %rdi
	call *%r13
	movl %eax, %ebx
	VEC_RESTORE
	movl %ebx, %eax
	leaq -32(%rbp), %rsp
	popq %r14
	.cfi_restore %r14
	popq %r13
	.cfi_restore %r13
	popq %rbx
	.cfi_restore %rbx
	popq %r12
	.cfi_restore %r12
	popq %rbp
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size arch_vecsafe_call, .-arch_vecsafe_call

	.section .note.GNU-stack, "", @progbits
