/* SPDX-License-Identifier: MIT */
/*
 * jprobe.S - jprobe_return()'s trap and the return address a jprobe
 * handler gets, AArch64 (see src/jprobes.c). jprobes themselves are not
 * ported yet (unported.c refuses them); jprobe_return() called without a
 * jprobe handler on the thread traps and returns, as on x86-64.
 *
 * void arch_jprobe_return_trap(void)
 *   the brk at ukp_jprobe_return_bp brings the thread into the
 *   library's SIGTRAP handler.
 */
	.section ukprobes_text, "ax", %progbits
	.p2align 2
	.globl arch_jprobe_return_trap
	.hidden arch_jprobe_return_trap
	.type arch_jprobe_return_trap, %function
arch_jprobe_return_trap:
	.cfi_startproc
	.globl ukp_jprobe_return_bp
	.hidden ukp_jprobe_return_bp
ukp_jprobe_return_bp:
	brk #0x004
	ret
	.cfi_endproc
	.size arch_jprobe_return_trap, .-arch_jprobe_return_trap

	.globl ukp_jprobe_handler_ret
	.hidden ukp_jprobe_handler_ret
ukp_jprobe_handler_ret:
	brk #0x004

	.section .note.GNU-stack, "", %progbits
