/* SPDX-License-Identifier: MIT */
/*
 * optprobe_tramp.S - the shared half of every jump-optimized probe (the
 * kernel's optprobe_template, for a process). No trap: the probe point's
 * first bytes are a jmp rel32 to the probe's detour buffer (optprobe.c
 * builds it):
 *
 *   detour+0   lea -128(%rsp), %rsp        step over the red zone
 *   detour+5   push site(%rip)             the probe, for the callback
 *   detour+11  call *common(%rip)          here
 *   detour+17  lea 136(%rsp), %rsp         drop the site and the red zone
 *   detour+25  the displaced instructions, relocated
 *              jmp addr + len
 *
 * On entry here:
 *   0(%rsp)    return address (detour + 17)
 *   8(%rsp)    the site
 *   16(%rsp)   the probed code's red zone (128 bytes)
 *   144(%rsp)  where the probed code's stack pointer points
 *
 * The frame: the flags (pushfq), a struct pt_regs with every general
 * register, the flags and the probed code's sp, then, 64-byte aligned,
 * the vector/x87 save area. ukp_optprobe_hit(regs, site) runs the
 * handlers; general registers come back from pt_regs (a handler may
 * change them), ip and sp changes are ignored (kprobes.rst, "NOTE for
 * geeks").
 *
 * Vector and x87 state: XSAVE and XRSTOR cost about 150 ns per pair on
 * this kind of machine (a KVM guest), ten times the rest of the hit, so
 * the usual case saves by hand exactly what a C handler may clobber:
 * xmm0-15 (with AVX, all of ymm0-15: glibc's string functions use AVX
 * and end with vzeroupper, which clears every upper half) and MXCSR
 * (reloaded only if a handler changed it). That is the whole user state
 * when XCR0 holds nothing beyond x87/SSE/AVX (ukp_opt_vec_mode, set by
 * arch_opt_init). The x87 stack must be empty for a C handler; if TOP is
 * not 0 (the probed code has values on it), or XCR0 has more (AVX-512),
 * the slow path saves everything with XSAVE(C)/FXSAVE like the return
 * trampoline.
 *
 * Flags come back without popfq (8 ns here): OF by an add, the other
 * arithmetic flags by sahf, DF by std when it was set. A handler's change
 * of TF, AC, ID or IF in regs->flags is ignored.
 */
#include "tramp.h"

/* Offset from rsp after pushfq + sub PT_SIZE to the probed code's sp. */
#define ENTRY_SP  (PT_SIZE + 8 + 144)
#define SITE_SLOT (PT_SIZE + 8 + 8)

/* ukp_opt_vec_mode */
#define VEC_FULL 0
#define VEC_SSE  1
#define VEC_AVX  2

#define MXCSR_SAVED 512
#define MXCSR_AFTER 516

	.section ukprobes_text, "ax", @progbits
	.p2align 6
	.globl ukp_optprobe_common
	.hidden ukp_optprobe_common
	.type ukp_optprobe_common, @function
ukp_optprobe_common:
	.cfi_startproc simple
	/* CFA = the probed code's stack pointer; its return address is
	 * unknown here, so unwinders stop at this frame. */
	.cfi_def_cfa %rsp, 144
	.cfi_undefined %rip
	pushfq
	.cfi_adjust_cfa_offset 8
	subq $PT_SIZE, %rsp
	.cfi_adjust_cfa_offset PT_SIZE
	movq %r15, PT_R15(%rsp)
	movq %r14, PT_R14(%rsp)
	movq %r13, PT_R13(%rsp)
	movq %r12, PT_R12(%rsp)
	movq %rbp, PT_BP(%rsp)
	movq %rbx, PT_BX(%rsp)
	movq %r11, PT_R11(%rsp)
	movq %r10, PT_R10(%rsp)
	movq %r9, PT_R9(%rsp)
	movq %r8, PT_R8(%rsp)
	movq %rax, PT_AX(%rsp)
	movq %rcx, PT_CX(%rsp)
	movq %rdx, PT_DX(%rsp)
	movq %rsi, PT_SI(%rsp)
	movq %rdi, PT_DI(%rsp)
	movq PT_SIZE(%rsp), %rax
	movq %rax, PT_FLAGS(%rsp)
	leaq ENTRY_SP(%rsp), %rax
	movq %rax, PT_SP(%rsp)
	movq $-1, PT_ORIG_AX(%rsp)
	movq $USER_CS, PT_CS(%rsp)
	movq $USER_DS, PT_SS(%rsp)
	movq %rsp, %rbx			/* pt_regs, kept across the call */
	.cfi_def_cfa_register %rbx

	subq ukp_krp_xsave_size(%rip), %rsp
	andq $-64, %rsp
	movl ukp_opt_vec_mode(%rip), %r12d
	testl %r12d, %r12d
	jz .Lslow_save
	fnstsw %ax
	testw $0x3800, %ax		/* x87 TOP: values on the stack? */
	jnz .Lslow_save_forced
	stmxcsr MXCSR_SAVED(%rsp)
	cmpl $VEC_AVX, %r12d
	jne .Lsse_save
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
	/* Clean upper halves for the handlers' SSE code: a legacy SSE
	 * instruction with dirty upper halves costs about 70 ns here. */
	vzeroupper
	jmp .Lcall
.Lsse_save:
	movups %xmm0, 0(%rsp)
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
	jmp .Lcall

.Lslow_save_forced:
	xorl %r12d, %r12d
.Lslow_save:
	XSTATE_SAVE			/* handlers start with an empty x87 stack */

.Lcall:
	cld
	movq %rbx, %rdi
	movq SITE_SLOT(%rbx), %rsi
	call ukp_optprobe_hit

	testl %r12d, %r12d
	jz .Lslow_restore
	stmxcsr MXCSR_AFTER(%rsp)
	movl MXCSR_SAVED(%rsp), %eax
	cmpl MXCSR_AFTER(%rsp), %eax
	je 1f
	ldmxcsr MXCSR_SAVED(%rsp)
1:	cmpl $VEC_AVX, %r12d
	jne .Lsse_restore
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
	jmp .Lregs
.Lsse_restore:
	movups 0(%rsp), %xmm0
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
	jmp .Lregs
.Lslow_restore:
	XSTATE_RESTORE

.Lregs:
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	movq PT_R15(%rsp), %r15
	movq PT_R14(%rsp), %r14
	movq PT_R13(%rsp), %r13
	movq PT_R12(%rsp), %r12
	movq PT_BP(%rsp), %rbp
	movq PT_BX(%rsp), %rbx
	movq PT_R11(%rsp), %r11
	movq PT_R10(%rsp), %r10
	movq PT_R9(%rsp), %r9
	movq PT_R8(%rsp), %r8
	movq PT_CX(%rsp), %rcx
	movq PT_DX(%rsp), %rdx
	movq PT_SI(%rsp), %rsi
	movq PT_DI(%rsp), %rdi
	/* The flags, from regs->flags: DF, then OF, then the rest. */
	testl $0x400, PT_FLAGS(%rsp)
	jz 1f
	std
1:	movzbl PT_FLAGS+1(%rsp), %eax	/* flags 15:8; OF is bit 3 */
	shrl $3, %eax
	andl $1, %eax
	addb $0x7f, %al			/* 1 + 0x7f overflows: OF = old OF */
	movb PT_FLAGS(%rsp), %ah	/* SF ZF AF PF CF */
	sahf
	movq PT_AX(%rsp), %rax
	leaq PT_SIZE+8(%rsp), %rsp	/* pt_regs and the pushed flags */
	.cfi_adjust_cfa_offset -(PT_SIZE + 8)
	ret
	.cfi_endproc
	.size ukp_optprobe_common, .-ukp_optprobe_common
	.globl ukp_optprobe_common_end
	.hidden ukp_optprobe_common_end
ukp_optprobe_common_end:

	.section .note.GNU-stack, "", @progbits
