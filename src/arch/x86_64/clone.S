/* SPDX-License-Identifier: MIT */
/*
 * clone.S - a thread of the library's own, started by the raw clone
 * system call (no pthread_create: nothing of libc's, no allocation).
 *
 * long arch_clone_thread(unsigned long flags, void *stack_top, int *ptid,
 *                        int *ctid, unsigned long tls,
 *                        int (*fn)(void *), void *arg)
 *   returns the new thread's id, or -errno. The thread runs fn(arg) on
 *   stack_top (aligned down to 16) and ends with exit(fn's value); it
 *   starts with its creator's thread pointer unless CLONE_SETTLS: fn must
 *   touch no TLS (no libc, no errno).
 * [reg] context.
 */
#include <asm/unistd.h>

	.text
	.globl arch_clone_thread
	.hidden arch_clone_thread
	.type arch_clone_thread, @function
arch_clone_thread:
	.cfi_startproc
	movq 8(%rsp), %rax              /* arg */
	andq $-16, %rsi
	subq $16, %rsi
	movq %r9, 0(%rsi)               /* fn and arg on the new stack */
	movq %rax, 8(%rsi)
	movq %rcx, %r10                 /* the kernel's order: flags, sp, ptid, ctid, tls */
	movl $__NR_clone, %eax
	syscall
	testq %rax, %rax
	jz 1f
	ret
1:	/* the new thread: nothing above this frame */
	.cfi_undefined %rip
	xorl %ebp, %ebp
	popq %rax
	popq %rdi
	call *%rax
	movl %eax, %edi
	movl $__NR_exit, %eax
	syscall
	hlt
	.cfi_endproc
	.size arch_clone_thread, .-arch_clone_thread

/*
 * void arch_thread_exit_unmap(void *base, size_t len)  [noreturn]
 *   A detached thread's end: munmap its own stack's mapping, then exit,
 *   with nothing on the stack in between (the caller blocked every
 *   signal: no handler may run on the unmapped stack). [reg] context.
 */
	.globl arch_thread_exit_unmap
	.hidden arch_thread_exit_unmap
	.type arch_thread_exit_unmap, @function
arch_thread_exit_unmap:
	.cfi_startproc
	movl $__NR_munmap, %eax
	syscall
	xorl %edi, %edi
	movl $__NR_exit, %eax
	syscall
	hlt
	.cfi_endproc
	.size arch_thread_exit_unmap, .-arch_thread_exit_unmap

/*
 * void arch_sigreturn(void)
 *   The end of a signal handler's frame (SA_RESTORER): rt_sigreturn. For
 *   the freestanding agent's sigaction() (process/signals.c), where no C
 *   library gives one. [trap] context.
 */
	.globl arch_sigreturn
	.hidden arch_sigreturn
	.type arch_sigreturn, @function
arch_sigreturn:
	movl $__NR_rt_sigreturn, %eax
	syscall
	hlt
	.size arch_sigreturn, .-arch_sigreturn

	.section .note.GNU-stack, "", @progbits
