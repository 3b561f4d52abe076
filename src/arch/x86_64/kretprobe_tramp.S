/* SPDX-License-Identifier: MIT */
/*
 * kretprobe_tramp.S - the return trampoline of kretprobes (the kernel's
 * arch_rethook_trampoline, for a process). No trap: a probed function
 * whose return address was swapped for ukp_kretprobe_trampoline "returns"
 * here with a plain ret.
 *
 * On entry: rsp = S + 8, where S is the stack slot the return address
 * was popped from (it still holds the trampoline's address). Every
 * register holds what the function returned with.
 *
 * The frame reuses S as its own return-address slot: the dispatcher
 * writes the real return address there before any handler runs, so that
 * the CFI below (return address at CFA - 8, CFA = S + 8) is true for
 * every unwinder from then on, and the final jmp goes there.
 *
 *   S + 8            caller's stack (CFA)
 *   S       rbp + 8  return address (trampoline, then the real one)
 *   S - 8   rbp      saved rbp
 *   rbp - 168        struct pt_regs
 *   below, 64-aligned: the vector save area (unless ukp_vec_lazy)
 *
 * No red zone to step over: the caller made a call, so it keeps nothing
 * live below its stack pointer (the call itself wrote there).
 *
 * What is kept: every general register (in pt_regs) and the
 * vector and x87 state a C handler may clobber, so that return values in
 * rax, rdx, xmm0, xmm1, st0 and st1 survive any handler: saved here
 * (VEC_SAVE, tramp.h) unless the hit path is vector-free, in which case
 * the dispatcher saves it around each handler that is not (vecstate.c). General registers are restored from pt_regs:
 * a handler may change the return value through regs->ax.
 */
#include "tramp.h" /* pt_regs, and fastpath_ops.h: the blocks and primitives */

	.section ukprobes_text, "ax", @progbits
	.p2align 4
	.skip 11, 0xcc
	/*
	 * The detour of a kretprobe's entry (optprobe_tramp.S,
	 * ukp_optprobe_krp_entry) comes here by a jmp: this call pushes
	 * the trampoline's address, for the CPU's return prediction too.
	 * No FDE covers these bytes: the byte before the trampoline must
	 * have none (see arch.h).
	 */
	.globl ukp_krp_entry_stub
	.hidden ukp_krp_entry_stub
ukp_krp_entry_stub:
	call ukp_optprobe_krp_entry
	.globl ukp_kretprobe_trampoline
	.hidden ukp_kretprobe_trampoline
	.type ukp_kretprobe_trampoline, @function
ukp_kretprobe_trampoline:
	.cfi_startproc simple
	.cfi_def_cfa %rsp, 0
	.cfi_offset %rip, -8
	subq $8, %rsp			/* rsp = S: the return-address slot */
	.cfi_adjust_cfa_offset 8
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq $PT_SIZE, %rsp
	movq %r15, PT_R15(%rsp)
	movq %r14, PT_R14(%rsp)
	movq %r13, PT_R13(%rsp)
	movq %r12, PT_R12(%rsp)
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
	movq (%rbp), %rax
	movq %rax, PT_BP(%rsp)
	/* The flags are not kept: no function keeps them across a call
	 * (the ABI; only DF, which is 0 at every return) and pushfq/popfq
	 * cost more than the rest here. regs->flags reads IF and the reserved bit 1. */
	movq $0x202, PT_FLAGS(%rsp)
	leaq 16(%rbp), %rax		/* S + 8: sp after the return */
	movq %rax, PT_SP(%rsp)
	movq $-1, PT_ORIG_AX(%rsp)
	movq $0, PT_IP(%rsp)
	movq $USER_CS, PT_CS(%rsp)
	movq $USER_DS, PT_SS(%rsp)
	/* No cld: DF is clear at every return (the ABI), as at an entry
	 * (optprobe_tramp.S); cld is not free. */

	/* The vector state: left in the registers when the hit path is
	 * vector-free (ukp_vec_lazy, see optprobe_tramp.S), else kept
	 * 64-byte aligned below pt_regs. */
	movl ukp_vec_lazy(%rip), %r13d	/* r13 is in pt_regs: kept */
	testl %r13d, %r13d
	jnz 1f
	subq ukp_krp_xsave_size(%rip), %rsp
	andq $-64, %rsp
	VEC_SAVE
1:	andq $-16, %rsp
	testl %r13d, %r13d
	jz 3f
	/*
	 * The fast path (the dispatcher's work for the usual return): one
	 * pending kretprobe on this frame, an idle thread, and a return
	 * handler proven vector-free (or none). Anything else goes to the
	 * dispatcher with nothing changed. The order is the dispatcher's:
	 * signals held back, read side, the entry consumed (RSTACK_POP,
	 * src/fastpath.h: the real return address into S, the depth, then
	 * regs->ip), the probe
	 * state set, the handler called, then the state cleared, the
	 * instance kept as the thread's spare (SPARE_PUT) or, when it
	 * has one, back to its pool (POOL_PUSH), the read side left and what was held
	 * back delivered.
	 *
	 * Registers (all restored from pt_regs at 2:): r12 the thread's
	 * ukp_ctl (in its per-thread block: TB_CTL), r14 the grace-period record, r15
	 * the return stack, rbx the instance. Scratch words at (%rsp): the
	 * instance, errno. A fault in the handler comes back to 6: by the
	 * fault handler's __builtin_longjmp (rbp = this frame, rsp as at
	 * the call).
	 */
	subq $16, %rsp
	IDLE_OR %r12, %r14, %rax, 3f
	movq FT_RSTACK(%r12), %r15		/* the return stack */
	testq %r15, %r15
	jz 3f
	/* defer_async = 1, then the read side: depth = 1 */
	movabsq $(1 << 32), %rax
	movq %rax, FT_IN_HANDLER(%r12)
	movq %rax, FT_STATUS(%r12)
	READ_ENTER %r14				/* odd: inside */
	leaq 8(%rbp), %rsi			/* S */
	RSTACK_TOP %r15, %rsi, %rdx, 8f		/* this frame's one entry */
	RSTACK_TOP_RI %rdx, %rbx, 8f		/* dropped meanwhile */
	RET_HANDLER %rbx, %rdi, %r8, %r8d, %rcx, 8f	/* not proven: the safe call */
	movq %rbx, (%rsp)
	/* Consumed. A plain store, not the exchange of the C paths (a
	 * locked instruction would wait here for the frame's stores):
	 * only this thread takes entries of its live return stack, and
	 * its signal handlers are held back. */
	RSTACK_POP %r15, %rdx, %rsi, %rcx
	movq %rcx, (PT_IP - PT_SIZE)(%rbp)
	testq %r8, %r8
	jz 5f
	movq ukp_errno_offset(%rip), %rcx
	movl %fs:(%rcx), %ecx
	movl %ecx, 8(%rsp)
	movq %rdi, FT_CUR_KP(%r12)
	movq %rdi, FT_FAULT_KP(%r12)
	movabsq $(1 << 32 | 1), %rax
	movq %rax, FT_IN_HANDLER(%r12)	/* in_handler 1, defer_async 1 */
	movabsq $(1 << 32 | FP_HIT_ACTIVE), %rax
	movq %rax, FT_STATUS(%r12)		/* status ACTIVE, depth 1 */
	movq %rbp, FT_JB(%r12)
	leaq 6f(%rip), %rax
	movq %rax, (FT_JB + 8)(%r12)
	movq %rsp, (FT_JB + 16)(%r12)
	movq %rbx, %rdi
	leaq -PT_SIZE(%rbp), %rsi
	call *%r8
7:	xorl %eax, %eax
	movq %rax, FT_CUR_KP(%r12)
	movq %rax, FT_FAULT_KP(%r12)
	movl %eax, FT_IN_HANDLER(%r12)
	movl %eax, FT_STATUS(%r12)
	movq ukp_errno_offset(%rip), %rcx
	movl 8(%rsp), %eax
	movl %eax, %fs:(%rcx)
5:	/* the instance: the thread's spare if it has none, else back to
	 * its pool */
	SPARE_PUT %r15, %rbx, 1f
	jmp 4f
1:	POOL_PUSH %rbx
4:	xorl %ebx, %ebx				/* done: the way out */
	jmp 9f
8:	movl $1, %ebx				/* undo: then the dispatcher */
9:	LEAVE_HELD %r12, %r14
	testl %ebx, %ebx
	jz 2f
	jmp 3f
6:	/* the handler faulted and was abandoned (ukp_sigfault_handler) */
	TB_CTL_AGAIN %r12
	movq FT_REC(%r12), %r14
	movq FT_RSTACK(%r12), %r15		/* (the longjmp keeps no register) */
	movq (%rsp), %rbx
	movq %r12, %rdi
	xorl %esi, %esi
	call ukp_fast_abandoned
	jmp 7b
3:	leaq -PT_SIZE(%rbp), %rdi
	leaq 8(%rbp), %rsi
	movl %r13d, %edx
	call ukp_kretprobe_dispatch
	testq %rax, %rax
	jz 9f
	testl %r13d, %r13d
	jnz 2f
	VEC_RESTORE
2:
	leaq -PT_SIZE(%rbp), %rsp
	movq PT_BP(%rsp), %rax		/* regs->bp becomes the saved rbp */
	movq %rax, (%rbp)
	movq PT_R15(%rsp), %r15
	movq PT_R14(%rsp), %r14
	movq PT_R13(%rsp), %r13
	movq PT_R12(%rsp), %r12
	movq PT_BX(%rsp), %rbx
	movq PT_R11(%rsp), %r11
	movq PT_R10(%rsp), %r10
	movq PT_R9(%rsp), %r9
	movq PT_R8(%rsp), %r8
	movq PT_AX(%rsp), %rax
	movq PT_CX(%rsp), %rcx
	movq PT_DX(%rsp), %rdx
	movq PT_SI(%rsp), %rsi
	movq PT_DI(%rsp), %rdi
	.cfi_remember_state
	movq %rbp, %rsp
	popq %rbp
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	/* To the real return address, in S. A ret: when the entry came
	 * through ukp_krp_entry_stub, the CPU predicted the probed
	 * function's ret to here, and the caller's return address is next
	 * in its return stack buffer, so this ret is predicted too. */
	ret
	.cfi_restore_state
	/* No pending return for this slot: nowhere to go. */
9:	ud2
	.cfi_endproc
	.size ukp_kretprobe_trampoline, .-ukp_kretprobe_trampoline
	.globl ukp_kretprobe_trampoline_end
	.hidden ukp_kretprobe_trampoline_end
ukp_kretprobe_trampoline_end:

	.section .note.GNU-stack, "", @progbits
