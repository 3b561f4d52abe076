/* SPDX-License-Identifier: MIT */
/*
 * tool_target.S - the function bench_tool_hit calls: the same code as
 * bench_target (targets.S), so that the tool's hit and the library's `o`
 * are measured on the same instructions:
 *   int bench_tool_target(int x, int y) { return x + 1 + y; }
 */
	.text

	.p2align 4
	.globl bench_tool_target
	.type bench_tool_target, @function
bench_tool_target:
	lea 1(%rdi), %eax
	add %esi, %eax
	ret
	.size bench_tool_target, .-bench_tool_target

	.section .note.GNU-stack,"",@progbits
