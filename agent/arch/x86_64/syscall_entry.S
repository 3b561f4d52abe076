/* SPDX-License-Identifier: MIT */
/*
 * syscall_entry.S - x86-64's syscall() of the dynamic agent
 * (agent/raw_fork.c): the program's calls of the C library's syscall()
 * bind here (it carries glibc's version name). A call that forks (fork;
 * clone without CLONE_VM, CLONE_THREAD, CLONE_VFORK and a stack of its
 * own; clone3 likewise, raw_fork.c reads its arguments) goes to
 * ukpa_syscall_fork, a C function with syscall()'s arguments in the same
 * registers and stack slot. Every other call is made here as glibc's
 * syscall() makes it: the number from rdi, the six arguments from rsi,
 * rdx, rcx, r8, r9 and the stack, the instruction with nothing but the
 * return address on the stack (a vfork child, or a child on a stack of
 * its own, goes on from the instruction as with glibc's), and a result
 * from -4095 to -1 is errno's, -1 returned (ukpa_syscall_error).
 * [any]: signal handlers too; nothing is read but the registers.
 */
#define NR_CLONE 56
#define NR_FORK 57
#define NR_CLONE3 435
/* CLONE_VM | CLONE_VFORK | CLONE_THREAD */
#define NOT_FORK 0x14100

	.text
	.globl	ukpa_syscall

	.type	ukpa_syscall, @function
	.symver	ukpa_syscall, syscall@@GLIBC_2.2.5
ukpa_syscall:
	cmp	$NR_FORK, %rdi
	je	3f
	cmp	$NR_CLONE, %rdi
	je	2f
	cmp	$NR_CLONE3, %rdi
	je	4f
1:	mov	%rdi, %rax
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	mov	%r8, %r10
	mov	%r9, %r8
	mov	8(%rsp), %r9
	syscall
	cmp	$-4095, %rax
	jae	5f
	ret
5:	neg	%rax
	mov	%rax, %rdi
	jmp	ukpa_syscall_error
2:	/* clone(flags, stack, ...) */
	test	$NOT_FORK, %esi
	jnz	1b
	test	%rdx, %rdx
	jnz	1b
3:	jmp	ukpa_syscall_fork
4:	/* clone3(args, size): raw_fork.c reads args; the registers kept */
	push	%rdi
	push	%rsi
	push	%rdx
	push	%rcx
	push	%r8
	push	%r9
	sub	$8, %rsp
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	call	ukpa_clone3_forks
	add	$8, %rsp
	test	%eax, %eax
	pop	%r9
	pop	%r8
	pop	%rcx
	pop	%rdx
	pop	%rsi
	pop	%rdi
	jz	1b
	jmp	ukpa_syscall_fork
	.size	ukpa_syscall, .-ukpa_syscall
	.section .note.GNU-stack, "", @progbits
