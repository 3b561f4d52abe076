/* SPDX-License-Identifier: MIT */
/*
 * unported.S - the code addresses the core knows of features this
 * AArch64 port does not have yet (unported.c): their inits refuse, so
 * nothing ever jumps here; a brk makes a stray jump trap.
 */
	.section ukprobes_text, "ax", %progbits
	.p2align 4
	.globl ukp_optprobe_common
	.hidden ukp_optprobe_common
ukp_optprobe_common:
	brk #0x7ff
	.globl ukp_optprobe_common_end
	.hidden ukp_optprobe_common_end
ukp_optprobe_common_end:
	brk #0x7ff

	.section .note.GNU-stack, "", %progbits
