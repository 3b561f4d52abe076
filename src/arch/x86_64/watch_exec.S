/* SPDX-License-Identifier: MIT */
/*
 * watch_exec.S - run one instruction for the program inside the
 * library's SIGSEGV handler (data watchpoints by page protection, see
 * watch.c).
 *
 * int ukp_watch_exec(struct pt_regs *regs, uintptr_t code, void *xsave, uint64_t mask)
 *   Loads the flags and every general register but rsp from regs (and,
 *   when xsave is not NULL, the vector/x87 state from that XSAVE area,
 *   the signal frame's), calls code (the instruction, its memory
 *   operand rewritten to the scratch copy, then ret), and stores the
 *   registers, flags and vector state back. The instruction never uses
 *   rsp, so it runs on the handler's stack. Returns 0, or -EFAULT when
 *   the instruction faulted: the fault handler then resumes at
 *   ukp_watch_exec_fault (arch_watch_fixup).
 *   [trap]
 *
 * long ukp_watch_probe_write(void *addr)
 *   lock orb $0 at addr: 0 if the program could write there, -EFAULT
 *   if not (the same fixup); the byte is unchanged either way.
 */
	.section ukprobes_text, "ax", @progbits
	.globl ukp_watch_exec
	.hidden ukp_watch_exec
	.type ukp_watch_exec, @function
ukp_watch_exec:
	.cfi_startproc
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushq %rdx		/* 24(%rsp): the XSAVE area or 0 */
	pushq %rcx		/* 16(%rsp): its mask */
	pushq %rdi		/*  8(%rsp): regs */
	pushq %rsi		/*  0(%rsp): code */
	testq %rdx, %rdx
	jz 1f
	movq %rdx, %rbx
	movq %rcx, %rax
	movq %rcx, %rdx
	shrq $32, %rdx
	xrstor64 (%rbx)
1:	movq 8(%rsp), %rdi
	pushq 144(%rdi)
	popfq
	movq 0(%rdi), %r15
	movq 8(%rdi), %r14
	movq 16(%rdi), %r13
	movq 24(%rdi), %r12
	movq 32(%rdi), %rbp
	movq 40(%rdi), %rbx
	movq 48(%rdi), %r11
	movq 56(%rdi), %r10
	movq 64(%rdi), %r9
	movq 72(%rdi), %r8
	movq 80(%rdi), %rax
	movq 88(%rdi), %rcx
	movq 96(%rdi), %rdx
	movq 104(%rdi), %rsi
	movq 112(%rdi), %rdi
	call *0(%rsp)
	pushq %rdi
	movq 16(%rsp), %rdi
	popq 112(%rdi)
	movq %r15, 0(%rdi)
	movq %r14, 8(%rdi)
	movq %r13, 16(%rdi)
	movq %r12, 24(%rdi)
	movq %rbp, 32(%rdi)
	movq %rbx, 40(%rdi)
	movq %r11, 48(%rdi)
	movq %r10, 56(%rdi)
	movq %r9, 64(%rdi)
	movq %r8, 72(%rdi)
	movq %rax, 80(%rdi)
	movq %rcx, 88(%rdi)
	movq %rdx, 96(%rdi)
	movq %rsi, 104(%rdi)
	pushfq
	popq 144(%rdi)
	cld
	movq 24(%rsp), %rbx
	testq %rbx, %rbx
	jz 2f
	movq 16(%rsp), %rax
	movq %rax, %rdx
	shrq $32, %rdx
	xsave64 (%rbx)
2:	xorl %eax, %eax
3:	addq $32, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	/* The instruction faulted (rsp as inside the call: the return
	 * address on top). The vector state in the frame stays as it was. */
	.globl ukp_watch_exec_fault
	.hidden ukp_watch_exec_fault
ukp_watch_exec_fault:
	addq $8, %rsp
	cld
	movl $-14, %eax
	jmp 3b
	.cfi_endproc
	.size ukp_watch_exec, .-ukp_watch_exec

	.globl ukp_watch_probe_write
	.hidden ukp_watch_probe_write
	.type ukp_watch_probe_write, @function
ukp_watch_probe_write:
	.cfi_startproc
	.globl ukp_watch_probe_insn
	.hidden ukp_watch_probe_insn
ukp_watch_probe_insn:
	lock orb $0, (%rdi)
	xorl %eax, %eax
	ret
	.globl ukp_watch_probe_fixup
	.hidden ukp_watch_probe_fixup
ukp_watch_probe_fixup:
	movq $-14, %rax
	ret
	.cfi_endproc
	.size ukp_watch_probe_write, .-ukp_watch_probe_write

	.section .note.GNU-stack, "", @progbits
