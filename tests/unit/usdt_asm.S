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

	.section .note.GNU-stack, "", @progbits
