/* SPDX-License-Identifier: MIT */
/*
 * syscall_entry.S - AArch64's syscall() of the dynamic agent
 * (agent/raw_fork.c): the program's calls of the C library's syscall()
 * bind here (it carries glibc's version name). A call that forks (clone
 * without CLONE_VM, CLONE_THREAD, CLONE_VFORK and a stack of its own;
 * clone3 likewise, raw_fork.c reads its arguments; AArch64 has no fork
 * system call) goes to ukpa_syscall_fork, a C function with syscall()'s
 * arguments in the same registers. Every other call is made here as
 * glibc's syscall() makes it: the number from x0, the six arguments from
 * x1..x6, the instruction with nothing pushed (a vfork child, or a child
 * on a stack of its own, goes on from the instruction as with glibc's),
 * and a result from -4095 to -1 is errno's, -1 returned
 * (ukpa_syscall_error).
 * [any]: signal handlers too; nothing is read but the registers.
 */
#define NR_CLONE 220
#define NR_CLONE3 435

	.text
	.globl	ukpa_syscall
	.type	ukpa_syscall, %function
	.symver	ukpa_syscall, syscall@@GLIBC_2.17
	.p2align 2
ukpa_syscall:
	cmp	x0, #NR_CLONE
	b.eq	2f
	cmp	x0, #NR_CLONE3
	b.eq	4f
1:	mov	x8, x0
	mov	x0, x1
	mov	x1, x2
	mov	x2, x3
	mov	x3, x4
	mov	x4, x5
	mov	x5, x6
	svc	#0
	cmn	x0, #4095
	b.cs	5f
	ret
5:	neg	x0, x0
	b	ukpa_syscall_error
2:	/* clone(flags, stack, ...): CLONE_VM | CLONE_VFORK | CLONE_THREAD */
	mov	x9, #0x4100
	movk	x9, #0x1, lsl #16
	tst	x1, x9
	b.ne	1b
	cbnz	x2, 1b
	b	ukpa_syscall_fork
4:	/* clone3(args, size): raw_fork.c reads args; the registers kept */
	stp	x29, x30, [sp, #-80]!
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	str	x6, [sp, #64]
	mov	x0, x1
	mov	x1, x2
	bl	ukpa_clone3_forks
	mov	w9, w0
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldr	x6, [sp, #64]
	ldp	x29, x30, [sp], #80
	cbz	w9, 1b
	b	ukpa_syscall_fork
	.size	ukpa_syscall, .-ukpa_syscall
	.section .note.GNU-stack, "", %progbits
