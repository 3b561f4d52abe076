// SPDX-License-Identifier: MIT
/*
 * insn_a64_stub.S - the register loader test_insn_a64.c copies into its
 * executable buffer, so that an instruction under test runs with every
 * register known: x0 points to { uint64_t x[31]; uint64_t nzcv; }, the
 * stub sets NZCV and x30..x0, and the word after it, which the test
 * writes (a b to the instruction), leaves every register as loaded.
 * Position-independent (it only loads relative to x0), so it runs from
 * any copy. Not a function: nothing returns; the test's SIGTRAP handler
 * takes the registers where the instruction led.
 */
	.section .rodata
	.balign 4
	.globl a64_stub_begin, a64_stub_end
a64_stub_begin:
	ldr	x1, [x0, #248]
	msr	nzcv, x1
	ldp	x2, x3, [x0, #16]
	ldp	x4, x5, [x0, #32]
	ldp	x6, x7, [x0, #48]
	ldp	x8, x9, [x0, #64]
	ldp	x10, x11, [x0, #80]
	ldp	x12, x13, [x0, #96]
	ldp	x14, x15, [x0, #112]
	ldp	x16, x17, [x0, #128]
	ldp	x18, x19, [x0, #144]
	ldp	x20, x21, [x0, #160]
	ldp	x22, x23, [x0, #176]
	ldp	x24, x25, [x0, #192]
	ldp	x26, x27, [x0, #208]
	ldp	x28, x29, [x0, #224]
	ldr	x30, [x0, #240]
	ldr	x1, [x0, #8]
	ldr	x0, [x0]
a64_stub_end:
	.section .note.GNU-stack, "", %progbits
