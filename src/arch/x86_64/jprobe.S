/* SPDX-License-Identifier: MIT */
/*
 * jprobe.S - the way into a jprobe handler and the two ways out (see
 * src/jprobes.c and jprobe.c).
 *
 * ukp_jprobe_start
 *   Where the hit's trap returns to: every register as at the hit, but
 *   rsi = the hit's stack pointer, rsp = rdi = that minus rcx words, r11 =
 *   a struct arch_jprobe_start. It copies the top of the stack (return
 *   address and stack arguments) down to rsp, so that the handler can
 *   write over its arguments without touching the probed function's
 *   stack, puts ukp_jprobe_handler_ret in the copy's return-address
 *   slot, reloads rcx, rsi, rdi and r11 and jumps to the handler. Flags
 *   are not touched (DF is clear at a function's entry). It runs on the
 *   thread, outside any signal handler; the memory below the probed
 *   function's stack pointer is free at its entry (the caller's red zone
 *   ends at the return address the call pushed).
 *
 * void arch_jprobe_return_trap(void)
 *   jprobe_return()'s trap: the int3 at ukp_jprobe_return_bp brings the
 *   thread into the library's SIGTRAP handler, which puts back the hit's
 *   state and runs the probed function: it does not return.
 *
 * ukp_jprobe_handler_ret
 *   The return address a jprobe handler finds on its stack: a handler
 *   that returns without calling jprobe_return() lands on this int3,
 *   which recovers the same way (and is counted). An unwinder that walks
 *   out of a handler looks up the byte before a return address: the
 *   `nop` here, whose FDE marks the return address undefined, so that a
 *   backtrace taken inside a handler ends at this frame.
 */
	.section ukprobes_text, "ax", @progbits
	.globl ukp_jprobe_start
	.hidden ukp_jprobe_start
	.type ukp_jprobe_start, @function
ukp_jprobe_start:
	.cfi_startproc
	.cfi_undefined rip
	rep movsq
	leaq ukp_jprobe_handler_ret(%rip), %rcx
	movq %rcx, (%rsp)
	movq 8(%r11), %rcx
	movq 16(%r11), %rsi
	movq 24(%r11), %rdi
	pushq 0(%r11)
	movq 32(%r11), %r11
	ret
	.cfi_endproc
	.size ukp_jprobe_start, .-ukp_jprobe_start

	.globl arch_jprobe_return_trap
	.hidden arch_jprobe_return_trap
	.type arch_jprobe_return_trap, @function
arch_jprobe_return_trap:
	.cfi_startproc
	.globl ukp_jprobe_return_bp
	.hidden ukp_jprobe_return_bp
ukp_jprobe_return_bp:
	int3
	ret
	.cfi_endproc
	.size arch_jprobe_return_trap, .-arch_jprobe_return_trap

	.type ukp_jprobe_handler_ret_frame, @function
ukp_jprobe_handler_ret_frame:
	.cfi_startproc
	.cfi_undefined rip
	nop
	.globl ukp_jprobe_handler_ret
	.hidden ukp_jprobe_handler_ret
ukp_jprobe_handler_ret:
	int3
	ud2
	.cfi_endproc
	.size ukp_jprobe_handler_ret_frame, .-ukp_jprobe_handler_ret_frame

	.section .note.GNU-stack, "", @progbits
