/* SPDX-License-Identifier: MIT */
/*
 * nofault.S - copy memory without faulting (the kernel's
 * copy_from_kernel_nofault with an exception-table fixup), AArch64.
 *
 * long arch_copy_nofault(void *dst, const void *src, size_t n)
 *   returns 0, or -EFAULT (-14) when a byte of src or dst is not
 *   accessible. Only the loads and stores at the ukp_nofault_* labels may
 *   fault; the library's SIGSEGV/SIGBUS handler sees the fault there
 *   (arch_nofault_fixup, regs.c) and resumes at ukp_nofault_fixup.
 * [trap] async-signal-safe; clobbers only x0-x3.
 */
	.section ukprobes_text, "ax", %progbits
	.globl arch_copy_nofault
	.hidden arch_copy_nofault
	.type arch_copy_nofault, %function
	.p2align 4
arch_copy_nofault:
	.cfi_startproc
	/* words while at least 8 bytes are left (unaligned is fine on
	 * normal memory), then bytes */
1:	cmp x2, #8
	b.lo 2f
	.globl ukp_nofault_ld8
	.hidden ukp_nofault_ld8
ukp_nofault_ld8:
	ldr x3, [x1], #8
	.globl ukp_nofault_st8
	.hidden ukp_nofault_st8
ukp_nofault_st8:
	str x3, [x0], #8
	sub x2, x2, #8
	b 1b
2:	cbz x2, 3f
	.globl ukp_nofault_ld1
	.hidden ukp_nofault_ld1
ukp_nofault_ld1:
	ldrb w3, [x1], #1
	.globl ukp_nofault_st1
	.hidden ukp_nofault_st1
ukp_nofault_st1:
	strb w3, [x0], #1
	sub x2, x2, #1
	b 2b
3:	mov x0, #0
	ret
	.globl ukp_nofault_fixup
	.hidden ukp_nofault_fixup
ukp_nofault_fixup:
	mov x0, #-14
	ret
	.cfi_endproc
	.size arch_copy_nofault, .-arch_copy_nofault

/*
 * long arch_load_word_nofault(uintptr_t *v, const void *src)
 * long arch_store_word_nofault(void *dst, uintptr_t v)
 *   one 8-byte access; 0 or -EFAULT as above, through the same fixup.
 */
	.globl arch_load_word_nofault
	.hidden arch_load_word_nofault
	.type arch_load_word_nofault, %function
arch_load_word_nofault:
	.cfi_startproc
	.globl ukp_nofault_load
	.hidden ukp_nofault_load
ukp_nofault_load:
	ldr x2, [x1]
	str x2, [x0]
	mov x0, #0
	ret
	.cfi_endproc
	.size arch_load_word_nofault, .-arch_load_word_nofault

	.globl arch_store_word_nofault
	.hidden arch_store_word_nofault
	.type arch_store_word_nofault, %function
arch_store_word_nofault:
	.cfi_startproc
	.globl ukp_nofault_store
	.hidden ukp_nofault_store
ukp_nofault_store:
	str x1, [x0]
	mov x0, #0
	ret
	.cfi_endproc
	.size arch_store_word_nofault, .-arch_store_word_nofault

/*
 * struct ukprobes_fetched arch_fetch_nofault(uint64_t v, const long *off,
 *                                            unsigned long n, unsigned long size)
 *   a chain of n >= 1 dereferences in one routine: each adds off[i] to
 *   the value (first v) and loads from there, 8 bytes for all but the
 *   last, size bytes (1, 2, 4 or 8, zero-extended) for the last. Returns
 *   {0, value} in x0:x1, or x0 -EFAULT through the same fixup (one window
 *   for the whole chain); the value never passes through memory.
 *   Clobbers x0-x5.
 */
	.globl arch_fetch_nofault
	.hidden arch_fetch_nofault
	.type arch_fetch_nofault, %function
	.p2align 4
arch_fetch_nofault:
	.cfi_startproc
	mov x4, x0
	subs x2, x2, #1
	b.eq 3f
1:	ldr x5, [x1], #8
	add x4, x4, x5
	.globl ukp_nofault_chain
	.hidden ukp_nofault_chain
ukp_nofault_chain:
	ldr x4, [x4]
	subs x2, x2, #1
	b.ne 1b
3:	ldr x5, [x1]
	add x4, x4, x5
	cmp x3, #8
	b.eq 8f
	cmp x3, #4
	b.eq 4f
	cmp x3, #2
	b.eq 2f
	.globl ukp_nofault_last1
	.hidden ukp_nofault_last1
ukp_nofault_last1:
	ldrb w4, [x4]
	b 9f
2:
	.globl ukp_nofault_last2
	.hidden ukp_nofault_last2
ukp_nofault_last2:
	ldrh w4, [x4]
	b 9f
4:
	.globl ukp_nofault_last4
	.hidden ukp_nofault_last4
ukp_nofault_last4:
	ldr w4, [x4]
	b 9f
8:
	.globl ukp_nofault_last8
	.hidden ukp_nofault_last8
ukp_nofault_last8:
	ldr x4, [x4]
9:	mov x1, x4
	mov x0, #0
	ret
	.cfi_endproc
	.size arch_fetch_nofault, .-arch_fetch_nofault

/*
 * The signal return trampoline for the library's own handlers
 * (sa_restorer): rt_sigreturn. Kept here so that it is blacklisted with
 * the rest of the trap path. UKP_RESTORER_SIZE is its length.
 */
	.globl ukp_restore_rt
	.hidden ukp_restore_rt
	.type ukp_restore_rt, %function
	.p2align 4
ukp_restore_rt:
	mov x8, #139
	svc #0
	.size ukp_restore_rt, .-ukp_restore_rt

	.section .note.GNU-stack, "", %progbits
