/* SPDX-License-Identifier: MIT */
/*
 * unported.S - the code addresses the core knows of features this
 * AArch64 port does not have yet (unported.c): their inits refuse, so
 * nothing ever jumps here; a brk makes a stray jump trap.
 */
	.section ukprobes_text, "ax", %progbits
	.p2align 4

	.section .note.GNU-stack, "", %progbits
