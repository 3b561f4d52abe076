/* SPDX-License-Identifier: MIT */
/*
 * targets.S - the functions the benchmarks probe, in assembly so that
 * what is measured does not depend on the compiler (bench.h). The one
 * behind a 5-byte NOP is in targets_nop5.S: a program that has it looks
 * compiled with -mfentry -mnop-mcount to uftrace, which then patches
 * only such entries.
 *
 * int bench_target(int x, int y) { return x + 1 + y; }
 *
 * Its first instruction (lea) is not emulated: a kprobe with a
 * post_handler runs it out of line, two traps a hit (a boosted one,
 * without post_handler, would take one). The first 5 bytes (lea, add) hold no branch and nothing jumps into them,
 * so a detour jump fits on the entry (the bare detour below, the future
 * optimized probe `o`, uftrace's dynamic patching).
 */
	.text

	.p2align 4
	.globl bench_target
	.type bench_target, @function
bench_target:
	lea 1(%rdi), %eax
	add %esi, %eax
	ret
	.size bench_target, .-bench_target

	.p2align 4
	.globl bench_target2
	.type bench_target2, @function
bench_target2:
	lea 1(%rdi), %eax
	add %esi, %eax
	ret
	.size bench_target2, .-bench_target2

/*
 * The bare detour: what a jump-optimized probe cannot avoid. Entered by
 * the jmp rel32 that bench_detour_set() writes over bench_target's first
 * 5 bytes. Steps over the red zone, builds a struct pt_regs (kernel
 * layout: r15 ... di, orig_ax, ip, cs, flags, sp, ss) with every general
 * register, the flags, ip and sp, calls bench_detour_handler(regs) on a
 * 16-byte aligned stack, restores it all, runs the 5 displaced bytes and
 * jumps back. No vector or x87 state is saved.
 */
	.p2align 4
	.globl bench_detour_stub
	.type bench_detour_stub, @function
bench_detour_stub:
	lea -128(%rsp), %rsp		/* the red zone */
	lea -16(%rsp), %rsp		/* ss, sp */
	pushfq				/* flags */
	lea -24(%rsp), %rsp		/* cs, ip, orig_ax */
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %rax
	push %r8
	push %r9
	push %r10
	push %r11
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	lea 168+128(%rsp), %rax		/* sp before the jump: pt_regs + red zone above */
	mov %rax, 152(%rsp)		/* regs->sp */
	lea bench_target(%rip), %rax
	mov %rax, 128(%rsp)		/* regs->ip: the probe address */
	mov %rsp, %rbx
	and $-16, %rsp
	mov %rbx, %rdi
	call bench_detour_handler
	mov %rbx, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rax
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
	lea 24(%rsp), %rsp
	popfq
	lea 16+128(%rsp), %rsp
	.globl bench_detour_copy
bench_detour_copy:			/* the displaced bytes of bench_target */
	lea 1(%rdi), %eax
	add %esi, %eax
	jmp bench_target + 5
	.size bench_detour_stub, .-bench_detour_stub

	.section .note.GNU-stack, "", @progbits
