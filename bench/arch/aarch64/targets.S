/* SPDX-License-Identifier: MIT */
/*
 * targets.S - the functions the benchmarks probe, AArch64 (see
 * bench/arch/x86_64/targets.S and bench.h).
 *
 * int bench_target(int x, int y) { return x + 1 + y; }
 *
 * Its first instruction (add) is stepped out of line by a breakpoint
 * probe (boosted without a post_handler) and relocated into the detour
 * of an optimized one.
 */
	.text

	.p2align 4
	.globl bench_target
	.type bench_target, %function
bench_target:
	add w0, w0, #1
	add w0, w0, w1
	ret
	.size bench_target, .-bench_target

	.p2align 4
	.globl bench_target2
	.type bench_target2, %function
bench_target2:
	add w0, w0, #1
	add w0, w0, w1
	ret
	.size bench_target2, .-bench_target2

/*
 * The bare detour: what a jump-optimized probe cannot avoid. Entered by
 * the b that bench_detour_set() writes over bench_target's first
 * instruction. Builds a struct pt_regs (regs[31], sp, pc, pstate) with
 * every general register, NZCV, pc and sp, calls
 * bench_detour_handler(regs), restores it all, runs the displaced
 * instruction and branches back. No FP/SIMD state is saved.
 */
	.p2align 4
	.globl bench_detour_stub
	.type bench_detour_stub, %function
bench_detour_stub:
	sub sp, sp, #288
	stp x0, x1, [sp, #0]
	stp x2, x3, [sp, #16]
	stp x4, x5, [sp, #32]
	stp x6, x7, [sp, #48]
	stp x8, x9, [sp, #64]
	stp x10, x11, [sp, #80]
	stp x12, x13, [sp, #96]
	stp x14, x15, [sp, #112]
	stp x16, x17, [sp, #128]
	stp x18, x19, [sp, #144]
	stp x20, x21, [sp, #160]
	stp x22, x23, [sp, #176]
	stp x24, x25, [sp, #192]
	stp x26, x27, [sp, #208]
	stp x28, x29, [sp, #224]
	add x9, sp, #288
	stp x30, x9, [sp, #240]		/* regs[30], sp */
	adr x9, bench_target
	mrs x10, nzcv
	stp x9, x10, [sp, #256]		/* pc, pstate */
	mov x0, sp
	bl bench_detour_handler
	ldr x10, [sp, #264]
	msr nzcv, x10
	ldp x0, x1, [sp, #0]
	ldp x2, x3, [sp, #16]
	ldp x4, x5, [sp, #32]
	ldp x6, x7, [sp, #48]
	ldp x8, x9, [sp, #64]
	ldp x10, x11, [sp, #80]
	ldp x12, x13, [sp, #96]
	ldp x14, x15, [sp, #112]
	ldp x16, x17, [sp, #128]
	ldp x18, x19, [sp, #144]
	ldp x20, x21, [sp, #160]
	ldp x22, x23, [sp, #176]
	ldp x24, x25, [sp, #192]
	ldp x26, x27, [sp, #208]
	ldp x28, x29, [sp, #224]
	ldr x30, [sp, #240]
	add sp, sp, #288
	.globl bench_detour_copy
bench_detour_copy:			/* the displaced instruction of bench_target */
	add w0, w0, #1
	b bench_target + 4
	.size bench_detour_stub, .-bench_detour_stub

	.section .note.GNU-stack, "", %progbits
