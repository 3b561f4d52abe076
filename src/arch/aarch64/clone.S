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
	.type arch_clone_thread, %function
arch_clone_thread:
	.cfi_startproc
	and x1, x1, #-16
	stp x5, x6, [x1, #-16]!         /* fn and arg on the new stack */
	mov x9, x3                      /* the kernel's order: flags, sp, ptid, tls, ctid */
	mov x3, x4
	mov x4, x9
	mov x8, #__NR_clone
	svc #0
	cbz x0, 1f
	ret
1:	/* the new thread: nothing above this frame */
	.cfi_undefined x30
	ldp x5, x0, [sp], #16
	mov x29, #0
	mov x30, #0
	blr x5
	mov x8, #__NR_exit
	svc #0
	brk #0
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
	.type arch_thread_exit_unmap, %function
arch_thread_exit_unmap:
	.cfi_startproc
	mov x8, #__NR_munmap
	svc #0
	mov x0, #0
	mov x8, #__NR_exit
	svc #0
	brk #0
	.cfi_endproc
	.size arch_thread_exit_unmap, .-arch_thread_exit_unmap

	.section .note.GNU-stack, "", %progbits
