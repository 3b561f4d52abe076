/* SPDX-License-Identifier: MIT */
/*
 * tramp.h - what the assembly trampolines share (kretprobe_tramp.S,
 * optprobe_tramp.S): the struct pt_regs layout, the user segment
 * selectors, and saving/restoring the whole extended state in the area
 * at (%rsp) (64-byte aligned, ukp_krp_xsave_size bytes; sized by
 * arch_kretprobe_init). Both macros clobber rax, rcx, rdx and flags.
 * The fast paths' primitives (IDLE_OR, LEAVE_HELD, ...) are in fastpath_ops.h.
 *
 * VEC_SAVE/VEC_RESTORE keep what a C function may clobber in the same
 * area, the cheap way when it can: xmm0-15 (with AVX, all of ymm0-15:
 * glibc's string functions end with vzeroupper, which clears every
 * upper half) and MXCSR (reloaded only if it changed), chosen by
 * ukp_opt_vec_mode (optprobe.c). XSAVE and XRSTOR cost more than the whole hit per
 * pair on this kind of machine (a KVM guest), ten times the rest of a
 * hit. The x87 stack must be empty for C code; if TOP is not 0 (the
 * interrupted code has values on it), or XCR0 has state beyond
 * x87/SSE/AVX (AVX-512), VEC_SAVE takes the XSTATE_SAVE path. VEC_SAVE
 * leaves in r12d what VEC_RESTORE needs: the caller keeps r12 across.
 */
#ifndef UKP_X86_TRAMP_H
#define UKP_X86_TRAMP_H

#include "fastpath_ops.h" /* the blocks' offsets and the primitives (src/fastpath.h) */
#include "detour.h"        /* DETOUR_RESUME */

#define PT_R15     0
#define PT_R14     8
#define PT_R13     16
#define PT_R12     24
#define PT_BP      32
#define PT_BX      40
#define PT_R11     48
#define PT_R10     56
#define PT_R9      64
#define PT_R8      72
#define PT_AX      80
#define PT_CX      88
#define PT_DX      96
#define PT_SI      104
#define PT_DI      112
#define PT_ORIG_AX 120
#define PT_IP      128
#define PT_CS      136
#define PT_FLAGS   144
#define PT_SP      152
#define PT_SS      160
#define PT_SIZE    168

#define USER_CS 0x33
#define USER_DS 0x2b

/* XSAVEC (or XSAVE, or FXSAVE without OSXSAVE) everything the OS
 * enabled but AMX, then an empty x87 stack for the handlers. */
	.macro XSTATE_SAVE
	movq ukp_krp_xsave_mask(%rip), %rax
	testq %rax, %rax
	jz 91f
	/* XRSTOR faults unless the reserved header bytes are zero. */
	xorl %ecx, %ecx
	movq %rcx, 512(%rsp)
	movq %rcx, 520(%rsp)
	movq %rcx, 528(%rsp)
	movq %rcx, 536(%rsp)
	movq %rcx, 544(%rsp)
	movq %rcx, 552(%rsp)
	movq %rcx, 560(%rsp)
	movq %rcx, 568(%rsp)
	movq %rax, %rdx
	shrq $32, %rdx
	cmpq $0, ukp_krp_xsavec(%rip)
	je 92f
	xsavec64 (%rsp)
	jmp 93f
92:	xsave64 (%rsp)
	jmp 93f
91:	fxsave64 (%rsp)
93:	fninit
	.endm

	.macro XSTATE_RESTORE
	movq ukp_krp_xsave_mask(%rip), %rax
	testq %rax, %rax
	jz 94f
	movq %rax, %rdx
	shrq $32, %rdx
	xrstor64 (%rsp)
	jmp 95f
94:	fxrstor64 (%rsp)
95:
	.endm


/* ukp_opt_vec_mode */
#define VEC_FULL 0
#define VEC_SSE  1
#define VEC_AVX  2

#define VEC_MXCSR_SAVED 512
#define VEC_MXCSR_AFTER 516

	.macro VEC_SAVE
	movl ukp_opt_vec_mode(%rip), %r12d
	testl %r12d, %r12d
	jz 81f
	fnstsw %ax
	testw $0x3800, %ax		/* x87 TOP: values on the stack? */
	jnz 80f
	stmxcsr VEC_MXCSR_SAVED(%rsp)
	cmpl $VEC_AVX, %r12d
	jne 82f
	vmovdqu %ymm0, 0(%rsp)
	vmovdqu %ymm1, 32(%rsp)
	vmovdqu %ymm2, 64(%rsp)
	vmovdqu %ymm3, 96(%rsp)
	vmovdqu %ymm4, 128(%rsp)
	vmovdqu %ymm5, 160(%rsp)
	vmovdqu %ymm6, 192(%rsp)
	vmovdqu %ymm7, 224(%rsp)
	vmovdqu %ymm8, 256(%rsp)
	vmovdqu %ymm9, 288(%rsp)
	vmovdqu %ymm10, 320(%rsp)
	vmovdqu %ymm11, 352(%rsp)
	vmovdqu %ymm12, 384(%rsp)
	vmovdqu %ymm13, 416(%rsp)
	vmovdqu %ymm14, 448(%rsp)
	vmovdqu %ymm15, 480(%rsp)
	/* Clean upper halves for the C code's SSE: a legacy SSE
	 * instruction with dirty upper halves is costly (bench/). */
	vzeroupper
	jmp 89f
82:	movups %xmm0, 0(%rsp)
	movups %xmm1, 16(%rsp)
	movups %xmm2, 32(%rsp)
	movups %xmm3, 48(%rsp)
	movups %xmm4, 64(%rsp)
	movups %xmm5, 80(%rsp)
	movups %xmm6, 96(%rsp)
	movups %xmm7, 112(%rsp)
	movups %xmm8, 128(%rsp)
	movups %xmm9, 144(%rsp)
	movups %xmm10, 160(%rsp)
	movups %xmm11, 176(%rsp)
	movups %xmm12, 192(%rsp)
	movups %xmm13, 208(%rsp)
	movups %xmm14, 224(%rsp)
	movups %xmm15, 240(%rsp)
	jmp 89f
80:	xorl %r12d, %r12d
81:	XSTATE_SAVE			/* C code starts with an empty x87 stack */
89:
	.endm

	.macro VEC_RESTORE
	testl %r12d, %r12d
	jz 86f
	stmxcsr VEC_MXCSR_AFTER(%rsp)
	movl VEC_MXCSR_SAVED(%rsp), %eax
	cmpl VEC_MXCSR_AFTER(%rsp), %eax
	je 84f
	ldmxcsr VEC_MXCSR_SAVED(%rsp)
84:	cmpl $VEC_AVX, %r12d
	jne 85f
	vmovdqu 0(%rsp), %ymm0
	vmovdqu 32(%rsp), %ymm1
	vmovdqu 64(%rsp), %ymm2
	vmovdqu 96(%rsp), %ymm3
	vmovdqu 128(%rsp), %ymm4
	vmovdqu 160(%rsp), %ymm5
	vmovdqu 192(%rsp), %ymm6
	vmovdqu 224(%rsp), %ymm7
	vmovdqu 256(%rsp), %ymm8
	vmovdqu 288(%rsp), %ymm9
	vmovdqu 320(%rsp), %ymm10
	vmovdqu 352(%rsp), %ymm11
	vmovdqu 384(%rsp), %ymm12
	vmovdqu 416(%rsp), %ymm13
	vmovdqu 448(%rsp), %ymm14
	vmovdqu 480(%rsp), %ymm15
	jmp 87f
85:	movups 0(%rsp), %xmm0
	movups 16(%rsp), %xmm1
	movups 32(%rsp), %xmm2
	movups 48(%rsp), %xmm3
	movups 64(%rsp), %xmm4
	movups 80(%rsp), %xmm5
	movups 96(%rsp), %xmm6
	movups 112(%rsp), %xmm7
	movups 128(%rsp), %xmm8
	movups 144(%rsp), %xmm9
	movups 160(%rsp), %xmm10
	movups 176(%rsp), %xmm11
	movups 192(%rsp), %xmm12
	movups 208(%rsp), %xmm13
	movups 224(%rsp), %xmm14
	movups 240(%rsp), %xmm15
	jmp 87f
86:	XSTATE_RESTORE
87:
	.endm

#endif
