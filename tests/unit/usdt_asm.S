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
