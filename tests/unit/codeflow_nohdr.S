/* SPDX-License-Identifier: MIT */
/*
 * codeflow_nohdr.S - a shared object linked without .eh_frame_hdr (so
 * without PT_GNU_EH_FRAME), for test_codeflow.c: the flow check must then
 * find the code no symbol covers in the gaps between symbols.
 */
	.text

/* Code after it that no symbol covers jumps to entry + 2 (refused). */
	.globl ukt_nohdr_victim
	.type ukt_nohdr_victim, @function
	.p2align 4
ukt_nohdr_victim:
	movl %edi, %eax			/* 2 bytes */
.Lmid:
	addl %esi, %eax			/* 2 bytes, entry + 2 */
	addl $3, %eax			/* 3 bytes */
	ret
	.size ukt_nohdr_victim, . - ukt_nohdr_victim
	xorl %esi, %esi
	jmp .Lmid

/* Nothing jumps into its entry (accepted). */
	.globl ukt_nohdr_plain
	.type ukt_nohdr_plain, @function
	.p2align 4
ukt_nohdr_plain:
	leal (%rdi,%rdi,2), %eax	/* 3 bytes */
	addl %esi, %eax			/* 2 bytes */
	ret
	.size ukt_nohdr_plain, . - ukt_nohdr_plain

/* A function of its own jumps past its first instruction (glibc's
 * __mempcpy_*_erms into __memmove_*_erms, as a static non-PIE program
 * links them: refused). */
	.globl ukt_nohdr_enter
	.type ukt_nohdr_enter, @function
	.p2align 4
ukt_nohdr_enter:
	movl %edi, %eax
	addl %esi, %eax
	jmp .Lbody
	.size ukt_nohdr_enter, . - ukt_nohdr_enter

	.globl ukt_nohdr_entered
	.type ukt_nohdr_entered, @function
	.p2align 4
ukt_nohdr_entered:
	movl %edi, %eax			/* 2 bytes */
.Lbody:
	addl $3, %eax			/* 3 bytes, entry + 2 */
	addl %esi, %eax			/* 2 bytes */
	ret
	.size ukt_nohdr_entered, . - ukt_nohdr_entered

/* Shorter than the jump: without FDEs the padding cannot be told from
 * code that no symbol covers (refused). */
	.globl ukt_nohdr_short
	.type ukt_nohdr_short, @function
	.p2align 4
ukt_nohdr_short:
	xorl %eax, %eax
	ret
	.size ukt_nohdr_short, . - ukt_nohdr_short
	.p2align 4

	.section .note.GNU-stack, "", @progbits
