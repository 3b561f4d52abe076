/* SPDX-License-Identifier: MIT */
/*
 * targets_nop5.S - bench_target behind the nops of a patchable entry
 * (-fpatchable-function-entry=2), AArch64: the site of an [FTRACE]
 * probe (bench.h). The name is x86's (a 5-byte NOP there).
 */
	.text
	.p2align 4
	.globl bench_target_nop5
	.type bench_target_nop5, %function
bench_target_nop5:
	nop
	nop
	add w0, w0, #1
	add w0, w0, w1
	ret
	.size bench_target_nop5, .-bench_target_nop5

	.section .note.GNU-stack, "", %progbits
