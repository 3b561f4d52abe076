/* SPDX-License-Identifier: MIT */
/*
 * nofault.S - copy memory without faulting (the kernel's
 * copy_from_kernel_nofault with an exception-table fixup).
 *
 * long arch_copy_nofault(void *dst, const void *src, size_t n)
 *   returns 0, or -EFAULT (-14) when a byte of src or dst is not
 *   accessible. The only instructions that may fault are the rep movsb
 *   at ukp_nofault_insn and the moves at ukp_nofault_ld8/st8/ld4/st4; the
 *   library's SIGSEGV/SIGBUS handler sees the fault there
 *   (arch_nofault_fixup) and resumes at ukp_nofault_fixup.
 * [trap] async-signal-safe; clobbers only rax, rcx, rsi, rdi.
 */
	.section ukprobes_text, "ax", @progbits
	.globl arch_copy_nofault
	.hidden arch_copy_nofault
	.type arch_copy_nofault, @function
arch_copy_nofault:
	.cfi_startproc
	/* a word or half of one (the usual fetch) by one move: rep movsb is
	 * slow to start up */
	cmpq $8, %rdx
	je 8f
	cmpq $4, %rdx
	je 4f
	movq %rdx, %rcx
	.globl ukp_nofault_insn
	.hidden ukp_nofault_insn
ukp_nofault_insn:
	rep movsb
	xorl %eax, %eax
	ret
8:
	.globl ukp_nofault_ld8
	.hidden ukp_nofault_ld8
ukp_nofault_ld8:
	movq (%rsi), %rcx
	.globl ukp_nofault_st8
	.hidden ukp_nofault_st8
ukp_nofault_st8:
	movq %rcx, (%rdi)
	xorl %eax, %eax
	ret
4:
	.globl ukp_nofault_ld4
	.hidden ukp_nofault_ld4
ukp_nofault_ld4:
	movl (%rsi), %ecx
	.globl ukp_nofault_st4
	.hidden ukp_nofault_st4
ukp_nofault_st4:
	movl %ecx, (%rdi)
	xorl %eax, %eax
	ret
	.globl ukp_nofault_fixup
	.hidden ukp_nofault_fixup
ukp_nofault_fixup:
	movq $-14, %rax
	ret
	.cfi_endproc
	.size arch_copy_nofault, .-arch_copy_nofault

/*
 * long arch_load_word_nofault(uintptr_t *v, const void *src)
 * long arch_store_word_nofault(void *dst, uintptr_t v)
 *   one 8-byte access (a rep movsb is slow to start up);
 *   0 or -EFAULT as above, through the same fixup. Clobber only rax
 *   (and rdx for the load).
 */
	.globl arch_load_word_nofault
	.hidden arch_load_word_nofault
	.type arch_load_word_nofault, @function
arch_load_word_nofault:
	.cfi_startproc
	.globl ukp_nofault_load
	.hidden ukp_nofault_load
ukp_nofault_load:
	movq (%rsi), %rdx
	movq %rdx, (%rdi)
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size arch_load_word_nofault, .-arch_load_word_nofault

	.globl arch_store_word_nofault
	.hidden arch_store_word_nofault
	.type arch_store_word_nofault, @function
arch_store_word_nofault:
	.cfi_startproc
	.globl ukp_nofault_store
	.hidden ukp_nofault_store
ukp_nofault_store:
	movq %rsi, (%rdi)
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size arch_store_word_nofault, .-arch_store_word_nofault

/*
 * struct ukprobes_fetched arch_fetch_nofault(uint64_t v, const long *off,
 *                                            unsigned long n, unsigned long size)
 *   a chain of n >= 1 dereferences in one routine: each adds off[i] to
 *   the value (first v) and loads from there, 8 bytes for all but the
 *   last, size bytes (1, 2, 4 or 8, zero-extended) for the last. Returns
 *   {0, value} in rax:rdx, or rax -EFAULT through the same fixup (one
 *   window for the whole chain: no per-load setup); the value never
 *   passes through memory. Clobbers rax, rdx, rsi.
 */
	.globl arch_fetch_nofault
	.hidden arch_fetch_nofault
	.type arch_fetch_nofault, @function
arch_fetch_nofault:
	.cfi_startproc
	movq %rdi, %rax
	decq %rdx
	jz 3f
1:	addq (%rsi), %rax
	addq $8, %rsi
	.globl ukp_nofault_chain
	.hidden ukp_nofault_chain
ukp_nofault_chain:
	movq (%rax), %rax
	decq %rdx
	jnz 1b
3:	addq (%rsi), %rax
	cmpq $8, %rcx
	je 8f
	cmpq $4, %rcx
	je 4f
	cmpq $2, %rcx
	je 2f
	.globl ukp_nofault_last1
	.hidden ukp_nofault_last1
ukp_nofault_last1:
	movzbl (%rax), %eax
	jmp 9f
2:
	.globl ukp_nofault_last2
	.hidden ukp_nofault_last2
ukp_nofault_last2:
	movzwl (%rax), %eax
	jmp 9f
4:
	.globl ukp_nofault_last4
	.hidden ukp_nofault_last4
ukp_nofault_last4:
	movl (%rax), %eax
	jmp 9f
8:
	.globl ukp_nofault_last8
	.hidden ukp_nofault_last8
ukp_nofault_last8:
	movq (%rax), %rax
9:	movq %rax, %rdx
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size arch_fetch_nofault, .-arch_fetch_nofault

/*
 * The signal return trampoline for the library's own handlers
 * (sa_restorer): rt_sigreturn. Kept here so that it is blacklisted with
 * the rest of the trap path.
 */
	.globl ukp_restore_rt
	.hidden ukp_restore_rt
	.type ukp_restore_rt, @function
	.align 16
ukp_restore_rt:
	movq $15, %rax
	syscall
	hlt
	.size ukp_restore_rt, .-ukp_restore_rt

	.section .note.GNU-stack, "", @progbits
