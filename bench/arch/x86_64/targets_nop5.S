/* SPDX-License-Identifier: MIT */
/*
 * targets_nop5.S - bench_target behind a 5-byte NOP at the entry
 * (bench.h): what -mfentry -mnop-mcount or -fpatchable-function-entry=5
 * put there, the site that kernel 6.18 optimizes uprobes on and that
 * uftrace patches without relocating anything.
 */
	.text
	.p2align 4
	.globl bench_target_nop5
	.type bench_target_nop5, @function
bench_target_nop5:
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1) */
	lea 1(%rdi), %eax
	add %esi, %eax
	ret
	.size bench_target_nop5, .-bench_target_nop5

	.section .note.GNU-stack, "", @progbits
