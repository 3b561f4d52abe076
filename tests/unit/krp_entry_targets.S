/* SPDX-License-Identifier: MIT */
/*
 * krp_entry_targets.S - function symbols for test_kretprobe_entry.c whose
 * start calls may or may not reach, as the call frame information says.
 */
	.text

/* A FUNC symbol inside another function, after a push: the word on top
 * of the stack there is the saved %rbx, not a return address. */
	.globl ukt_krp_pushed_outer
	.type ukt_krp_pushed_outer, @function
	.p2align 4
ukt_krp_pushed_outer:
	.cfi_startproc
	pushq %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	movl %edi, %ebx
	.globl ukt_krp_after_push
	.type ukt_krp_after_push, @function
ukt_krp_after_push:
	leal 1(%rbx), %eax
	popq %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size ukt_krp_after_push, . - ukt_krp_after_push
	.size ukt_krp_pushed_outer, . - ukt_krp_pushed_outer

/* A second entry inside a function that pushed nothing (as glibc's
 * strcasecmp falls into strcasecmp_l): called directly, or reached from
 * the outer entry with the same return address on top of the stack. */
	.globl ukt_krp_fall_outer
	.type ukt_krp_fall_outer, @function
	.p2align 4
ukt_krp_fall_outer:
	.cfi_startproc
	addl $100, %edi
	.globl ukt_krp_fall_inner
	.type ukt_krp_fall_inner, @function
ukt_krp_fall_inner:
	leal (%rdi,%rdi), %eax
	ret
	.cfi_endproc
	.size ukt_krp_fall_inner, . - ukt_krp_fall_inner
	.size ukt_krp_fall_outer, . - ukt_krp_fall_outer

/* An outermost frame, as a thread's or a clone child's first function:
 * the unwind table says there is no return address. */
	.globl ukt_krp_outermost
	.type ukt_krp_outermost, @function
	.p2align 4
ukt_krp_outermost:
	.cfi_startproc
	.cfi_undefined %rip
	xorl %ebp, %ebp
	ud2
	.cfi_endproc
	.size ukt_krp_outermost, . - ukt_krp_outermost

/* The same shape as ukt_krp_after_push without unwind information: no
 * table to ask, so it is accepted (the rule needs the table). */
	.globl ukt_krp_nocfi
	.type ukt_krp_nocfi, @function
	.p2align 4
ukt_krp_nocfi:
	leal 3(%rdi), %eax
	ret
	.size ukt_krp_nocfi, . - ukt_krp_nocfi

	.section .note.GNU-stack, "", @progbits
