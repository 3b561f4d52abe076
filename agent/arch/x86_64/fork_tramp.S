/* SPDX-License-Identifier: MIT */
/*
 * fork_tramp.S - x86-64's way from a static program's fork system call
 * instruction to the agent's fork, in the thread's own context
 * (agent/free/fork_sites.c), and from an rt_sigprocmask instruction to
 * the library's sigprocmask() (free/signal_sites.c: a mask set in the
 * trap handler is undone by its return). The site's probe sends the thread here with
 * its registers those of the instruction, but rcx, which the system call
 * clobbers, holding the address after the instruction. The call's number
 * and arguments go to ukpa_fork_site_run as a struct ukpa_fork_call; its
 * result comes back in rax, every other register the call keeps as it
 * was (and the flags), and the thread goes on after the instruction, in
 * the parent and in the child.
 */
	.text
	.globl	ukpa_fork_tramp
	.hidden	ukpa_fork_tramp
	.type	ukpa_fork_tramp, @function
ukpa_fork_tramp:
	lea	-128(%rsp), %rsp	/* the program's red zone */
	push	%rcx			/* where the thread goes on */
	pushfq
	push	%rbx
	push	%r9
	push	%r8
	push	%r10
	push	%rdx
	push	%rsi
	push	%rdi
	push	%rax			/* struct ukpa_fork_call starts here */
	mov	%rsp, %rdi
	mov	%rsp, %rbx
	and	$-16, %rsp
	cld
	call	ukpa_fork_site_run
	mov	%rbx, %rsp
	add	$8, %rsp		/* (rax: the result) */
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%r10
	pop	%r8
	pop	%r9
	pop	%rbx
	popfq
	ret	$128
	.size	ukpa_fork_tramp, .-ukpa_fork_tramp
	.section .note.GNU-stack, "", @progbits
