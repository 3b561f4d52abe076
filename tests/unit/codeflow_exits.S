/* SPDX-License-Identifier: MIT */
/*
 * codeflow_exits.S - regions that end the detour's copy early, for
 * test_codeflow.c: functions shorter than the 5-byte jump, whose region
 * runs on into the padding after them (accepted only when the padding is
 * nothing but fill that no symbol, FDE or jump reaches), and calls as the
 * last instruction of a region. Judged, never run. Every function has an
 * FDE, like compiled code.
 */
	.text

/* xor; ret (3 bytes), then .p2align's NOPs (accepted). */
	.globl ukt_flow_short_ret
	.type ukt_flow_short_ret, @function
	.p2align 4
ukt_flow_short_ret:
	.cfi_startproc
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size ukt_flow_short_ret, . - ukt_flow_short_ret

/* A jump of the function lands in its padding (refused: -EBUSY). */
	.globl ukt_flow_short_target
	.type ukt_flow_short_target, @function
	.p2align 4
ukt_flow_short_target:
	.cfi_startproc
	je .Lst_pad			/* 2 bytes */
	ret
	.cfi_endproc
	.size ukt_flow_short_target, . - ukt_flow_short_target
	nop
.Lst_pad:
	nop				/* entry + 4 */

/* Another symbol starts in the padding (refused: -EBUSY). */
	.globl ukt_flow_short_sym
	.type ukt_flow_short_sym, @function
	.p2align 4
ukt_flow_short_sym:
	.cfi_startproc
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size ukt_flow_short_sym, . - ukt_flow_short_sym
	nop
	.globl ukt_flow_pad_symbol
	.type ukt_flow_pad_symbol, @function
ukt_flow_pad_symbol:			/* entry + 4 */
	nop
	ret
	.size ukt_flow_pad_symbol, . - ukt_flow_pad_symbol

/* Code with unwind information but no symbol right after it (a static
 * function of a stripped library; refused: -EINVAL). */
	.globl ukt_flow_short_fde
	.type ukt_flow_short_fde, @function
	.p2align 4
ukt_flow_short_fde:
	.cfi_startproc
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size ukt_flow_short_fde, . - ukt_flow_short_fde
	.cfi_startproc
	nop
	nop
	movl $1, %eax
	ret
	.cfi_endproc

/* Bytes after it that are no fill (refused: -EINVAL). */
	.globl ukt_flow_short_code
	.type ukt_flow_short_code, @function
	.p2align 4
ukt_flow_short_code:
	.cfi_startproc
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size ukt_flow_short_code, . - ukt_flow_short_code
	movq %rdi, %rax

/* push; mov; call: the call ends the region (accepted). */
	.globl ukt_flow_call_last
	.type ukt_flow_call_last, @function
	.p2align 4
ukt_flow_call_last:
	.cfi_startproc
	pushq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	movq %rdi, %rbx			/* 3 bytes */
	call getpid@PLT			/* 5 bytes: the region is 9 */
	movl %ebx, %eax
	popq %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size ukt_flow_call_last, . - ukt_flow_call_last

/* A call through a register in the middle of the region (refused: its
 * callee would return into the region). */
	.globl ukt_flow_call_reg
	.type ukt_flow_call_reg, @function
	.p2align 4
ukt_flow_call_reg:
	.cfi_startproc
	movl %edi, %eax			/* 2 bytes */
	call *%rsi			/* 2 bytes */
	movl $1, %eax
	ret
	.cfi_endproc
	.size ukt_flow_call_reg, . - ukt_flow_call_reg

/* A call through a register ending the region (accepted). */
	.globl ukt_flow_call_reg_last
	.type ukt_flow_call_reg_last, @function
	.p2align 4
ukt_flow_call_reg_last:
	.cfi_startproc
	pushq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	movl %edi, %ebx			/* 2 bytes */
	call *%rsi			/* 2 bytes: the region is 5 */
	addl %ebx, %eax
	popq %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size ukt_flow_call_reg_last, . - ukt_flow_call_reg_last

/* A call through the stack ending the region (refused: the push of the
 * return address would move the operand). */
	.globl ukt_flow_call_stack
	.type ukt_flow_call_stack, @function
	.p2align 4
ukt_flow_call_stack:
	.cfi_startproc
	pushq %rbx			/* 1 byte */
	.cfi_adjust_cfa_offset 8
	movl %edi, %ebx			/* 2 bytes */
	call *8(%rsp)			/* 4 bytes */
	popq %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size ukt_flow_call_stack, . - ukt_flow_call_stack

	.p2align 4
	.section .note.GNU-stack, "", @progbits
