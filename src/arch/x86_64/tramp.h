/* SPDX-License-Identifier: MIT */
/*
 * tramp.h - what the assembly trampolines share (kretprobe_tramp.S,
 * optprobe_tramp.S): the struct pt_regs layout, the user segment
 * selectors, and saving/restoring the whole extended state in the area
 * at (%rsp) (64-byte aligned, ukp_krp_xsave_size bytes; sized by
 * arch_kretprobe_init). Both macros clobber rax, rcx, rdx and flags.
 */
#ifndef UKP_X86_TRAMP_H
#define UKP_X86_TRAMP_H

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

#endif
