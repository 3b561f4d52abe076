/* SPDX-License-Identifier: MIT */
/*
 * jprobe.S - the way into a jprobe handler and the two ways out, AArch64
 * (see src/jprobes.c and jprobe.c).
 *
 * ukp_jprobe_start
 *   Where the hit's trap returns to: every register as at the hit, but
 *   sp = the hit's sp minus x16 bytes (a multiple of 16, at most
 *   ARCH_JPROBE_STACK_BYTES), x17 = a struct arch_jprobe_start. It copies
 *   the x16 bytes of the stack top (the stack arguments) down to sp, so
 *   that the handler can write over them without touching the probed
 *   function's stack, sets x30 to ukp_jprobe_handler_ret, reloads x17
 *   and branches to the handler through x16 (as a PLT or veneer would:
 *   x16 and x17 are scratch at a call; "bti c" accepts it). The flags
 *   are not touched (cbz, not subs). It runs on the thread, outside any
 *   signal handler: the signal frame lay where the copy goes. Nothing
 *   below a function's sp is live at its entry (AAPCS64 has no red
 *   zone).
 *
 * void arch_jprobe_return_trap(void)
 *   jprobe_return()'s trap: the brk at ukp_jprobe_return_bp brings the
 *   thread into the library's SIGTRAP handler, which puts back the hit's
 *   state and runs the probed function: it does not return (it returns
 *   when no jprobe handler runs on the thread).
 *
 * ukp_jprobe_handler_ret
 *   The return address a jprobe handler gets in x30: a handler that
 *   returns without calling jprobe_return() lands on this brk, which
 *   recovers the same way (and is counted). An unwinder looks up the
 *   instruction before a return address: the nop here, whose FDE marks
 *   x30 undefined, so that a backtrace taken inside a handler ends at
 *   this frame.
 */
	.section ukprobes_text, "ax", %progbits
	.p2align 2
	.globl ukp_jprobe_start
	.hidden ukp_jprobe_start
	.type ukp_jprobe_start, %function
ukp_jprobe_start:
	.cfi_startproc
	.cfi_undefined 30
	cbz x16, 2f
1:	sub x16, x16, #8
	ldr x30, [x17, #8]		/* src */
	ldr x30, [x30, x16]
	str x30, [sp, x16]
	cbnz x16, 1b
2:	adr x30, ukp_jprobe_handler_ret
	ldr x16, [x17, #0]		/* entry */
	ldr x17, [x17, #16]		/* the hit's x17 */
	br x16
	.cfi_endproc
	.size ukp_jprobe_start, .-ukp_jprobe_start

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

	.type ukp_jprobe_handler_ret_frame, %function
ukp_jprobe_handler_ret_frame:
	.cfi_startproc
	.cfi_undefined 30
	nop
	.globl ukp_jprobe_handler_ret
	.hidden ukp_jprobe_handler_ret
ukp_jprobe_handler_ret:
	brk #0x004
	udf #0
	.cfi_endproc
	.size ukp_jprobe_handler_ret_frame, .-ukp_jprobe_handler_ret_frame

	.section .note.GNU-stack, "", %progbits
