/* SPDX-License-Identifier: MIT */
/*
 * usdt_asm.S - SDT probes written in assembly (test_usdt.c), where a
 * program may keep what C code never does across a probe:
 *
 * long ukt_sdt_flags(long a, long b): 1 if a < b (signed), else 0; the
 *   comparison's flags (OF and SF for setl) are live across the probe,
 *   whose jump-optimized hit takes the template of function entries.
 * long ukt_sdt_df(void): the probe with DF set (std before it, cld
 *   after): the function has an std, so its probe keeps the usual
 *   template; returns DF as it was after the probe (1).
 * void ukt_sdt_symoff(void): a probe whose arguments are fields of a
 *   global as PostgreSQL's notes write them, OFF+SYM(%rip) (GCC writes
 *   "-4@40+CheckpointStats(%rip)"), and SYM+OFF(%rip); the global is
 *   ukt_sdt_words (two 8-byte words: -5 in the low half of the first's
 *   upper half, 0x1122334455667788 in the second).
 * long ukt_sdt_index(const int *a, long i, long zero): a probe whose
 *   arguments have an index register: DISP(%B,%I,S), SYM(,%I,S),
 *   (%B,%I), SYM+DISP(%B,%I,S), a negative DISP, and %fs:SYM@tpoff.
 * ukt_relro_semaphore, ukt_rodata_semaphore: semaphores (test_usdt.c's
 *   ukt:relro and ukt:rodata) in a RELRO section and in read-only data,
 *   with the sections' flags exact (a C section attribute may make the
 *   whole output section writable).
 */
#include <sys/sdt.h>

	.text
	.p2align 4
	.globl ukt_sdt_flags
	.type ukt_sdt_flags, @function
ukt_sdt_flags:
	.cfi_startproc
	cmpq %rsi, %rdi
	STAP_PROBE2(ukt, flags, 8@%rdi, 8@%rsi)
	setl %al
	movzbl %al, %eax
	ret
	.cfi_endproc
	.size ukt_sdt_flags, .-ukt_sdt_flags

	.p2align 4
	.globl ukt_sdt_df
	.type ukt_sdt_df, @function
ukt_sdt_df:
	.cfi_startproc
	std
	STAP_PROBE(ukt, df)
	pushfq
	.cfi_adjust_cfa_offset 8
	popq %rax
	.cfi_adjust_cfa_offset -8
	cld
	shrq $10, %rax
	andl $1, %eax
	ret
	.cfi_endproc
	.size ukt_sdt_df, .-ukt_sdt_df

	.p2align 4
	.globl ukt_sdt_symoff
	.type ukt_sdt_symoff, @function
ukt_sdt_symoff:
	.cfi_startproc
	STAP_PROBE2(ukt, symoff, -4@4+ukt_sdt_words(%rip), 8@ukt_sdt_words+8(%rip))
	ret
	.cfi_endproc
	.size ukt_sdt_symoff, .-ukt_sdt_symoff

	/* long ukt_sdt_index(const int *a, long i, long zero): arguments
	 * with an index register in every x86-64 form, and a thread-local
	 * variable's (which the library leaves undecoded) */
	.p2align 4
	.globl ukt_sdt_index
	.type ukt_sdt_index, @function
ukt_sdt_index:
	.cfi_startproc
	STAP_PROBE6(ukt, index, -4@4(%rdi,%rsi,4), 8@ukt_sdt_words(,%rsi,8), -1@(%rdi,%rsi), -4@ukt_sdt_words+4(%rdx,%rsi,4), -4@-4(%rdi,%rsi,8), -8@%fs:ukt_tls@tpoff)
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size ukt_sdt_index, .-ukt_sdt_index

	.data
	.p2align 3
	.globl ukt_sdt_words
	.type ukt_sdt_words, @object
ukt_sdt_words:
	.long 0
	.long -5
	.quad 0x1122334455667788
	.size ukt_sdt_words, 16

	.section .data.rel.ro.ukt_sem, "aw"
	.p2align 1
	.globl ukt_relro_semaphore
	.type ukt_relro_semaphore, @object
ukt_relro_semaphore:
	.2byte 0
	.size ukt_relro_semaphore, 2

	.section .rodata.ukt_sem, "a"
	.p2align 1
	.globl ukt_rodata_semaphore
	.type ukt_rodata_semaphore, @object
ukt_rodata_semaphore:
	.2byte 0
	.size ukt_rodata_semaphore, 2

	.section .note.GNU-stack, "", @progbits
