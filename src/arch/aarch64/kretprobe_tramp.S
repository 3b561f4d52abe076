/* SPDX-License-Identifier: MIT */
/*
 * kretprobe_tramp.S - the return trampoline of kretprobes, AArch64 (the
 * kernel's arch_rethook_trampoline, for a process). A probed function
 * whose link register was swapped for ukp_kretprobe_trampoline at its
 * entry "returns" here with its own ret.
 *
 * On entry: sp = S, the stack pointer of the function's entry (the
 * frame's slot, arch_kretprobe_ret_slot); x30 = the trampoline; every
 * other register holds what the function returned with.
 *
 *   S                 the caller's stack
 *   S - 16            the fast path's scratch: the instance, errno
 *   S - 32            frame record: x29, x30 (the trampoline)
 *   S - 304           struct pt_regs (regs[31], sp, pc, pstate)
 *
 * It fills pt_regs (sp = S, pc = the trampoline, pstate's NZCV), serves
 * the return (the fast path below, or ukp_kretprobe_dispatch(regs, S,
 * 1): 1, the FP/SIMD state is live, so that every handler not proven to
 * leave it alone runs through arch_vecsafe_call), restores every
 * register from pt_regs (handlers may change the return value in
 * regs[0]; the real return address is put in regs[30] and pc) and goes
 * to pc through x16 (x16 and x17 are scratch at a return). The return
 * address of this frame is marked undefined: an unwinder stops here
 * (doc/arch.md).
 */
#include "pt_regs_asm.h"
#include "fastpath_ops.h" /* the blocks and primitives (src/fastpath.h) */

#define FRAME      (PT_SIZE + 32)
#define RI_SLOT    (PT_SIZE + 16)
#define ERRNO_SLOT (PT_SIZE + 24)

	.section ukprobes_text, "ax", %progbits
	.p2align 4
	nop			/* the byte before the trampoline: no FDE */
	.globl ukp_kretprobe_trampoline
	.hidden ukp_kretprobe_trampoline
	.type ukp_kretprobe_trampoline, %function
ukp_kretprobe_trampoline:
	.cfi_startproc
	.cfi_undefined 30
	sub sp, sp, #FRAME
	.cfi_def_cfa_offset FRAME
	PT_STORE_X0_X15
	stp x16, x17, [sp, #128]
	PT_STORE_X18_X29
	.cfi_offset 29, -(FRAME - 232)
	add x9, sp, #FRAME
	stp x30, x9, [sp, #240]		/* regs[30], sp */
	adr x9, ukp_kretprobe_trampoline
	mrs x10, nzcv
	stp x9, x10, [sp, #256]		/* pc, pstate */
	stp x29, x30, [sp, #PT_SIZE]
	add x29, sp, #PT_SIZE

	/*
	 * The fast path (the dispatcher's work for the usual return): one
	 * pending kretprobe on this frame, an idle thread with its return
	 * stack, and a return handler proven vector-free (or none).
	 * Anything else goes to the dispatcher with nothing changed. The
	 * order is the dispatcher's: signals held back, read side, the
	 * entry consumed (RSTACK_POP, src/fastpath.h: the real return
	 * address into regs[30], the depth; then pc), the probe state set,
	 * the handler called, then the state cleared, the instance kept as
	 * the thread's spare (SPARE_PUT: the next entry's fast path takes
	 * it, optprobe_tramp.S) or, when it has one, back to its pool
	 * (POOL_PUSH), the read side left and what was held back
	 * delivered.
	 *
	 * Registers (callee-saved, all restored from pt_regs at 2:): x19
	 * done (0) or undone (1), x20 the per-thread block, x21 the
	 * grace-period record, x22 the return stack, x23 the instance, x24
	 * its kretprobe, x25 the handler; x9-x13 scratch. A fault in the
	 * handler comes back to 6: by the fault handler's __builtin_longjmp
	 * (x29 and sp as at the call), which keeps no other register: the
	 * instance and errno are in the frame's scratch words.
	 */
	IDLE_OR x20, x21, x9, w9, x10, 3f
	ldr x22, [x20, #FT_RSTACK]		/* the return stack */
	cbz x22, 3f
	movz x10, #1, lsl #32			/* defer_async = 1, then the */
	str x10, [x20, #FT_IN_HANDLER]		/* read side: depth = 1 */
	str x10, [x20, #FT_STATUS]
	READ_ENTER x21, x9			/* odd: inside */
	add x11, sp, #FRAME			/* S */
	RSTACK_TOP x22, x11, x12, x13, w13, x9, 8f	/* this frame's one entry */
	RSTACK_TOP_RI x12, x23, 8f		/* dropped meanwhile */
	RET_HANDLER x23, x24, x25, x9, 8f	/* not proven: the dispatcher */
	str x23, [sp, #RI_SLOT]
	/* Consumed. A plain store, not the exchange of the C paths: only
	 * this thread takes entries of its live return stack, and its
	 * signal handlers are held back. */
	add x11, sp, #PT_X30
	RSTACK_POP x22, x12, w13, x11, x10
	str x10, [sp, #PT_PC]
	cbz x25, 5f
	adrp x9, ukp_errno_offset
	ldr x9, [x9, :lo12:ukp_errno_offset]
	mrs x11, tpidr_el0
	ldr w12, [x11, x9]
	str w12, [sp, #ERRNO_SLOT]
	str x24, [x20, #FT_CUR_KP]
	str x24, [x20, #FT_FAULT_KP]
	mov x10, #1				/* in_handler 1, */
	movk x10, #1, lsl #32			/* defer_async 1 */
	str x10, [x20, #FT_IN_HANDLER]
	mov x10, #FP_HIT_ACTIVE			/* status ACTIVE, */
	movk x10, #1, lsl #32			/* depth 1 */
	str x10, [x20, #FT_STATUS]
	adr x11, 6f
	stp x29, x11, [x20, #FT_JB]		/* frame pointer, label */
	mov x9, sp
	str x9, [x20, #(FT_JB + 16)]		/* stack pointer */
	mov x0, x23
	mov x1, sp
	blr x25
7:	str xzr, [x20, #FT_CUR_KP]
	str xzr, [x20, #FT_FAULT_KP]
	str wzr, [x20, #FT_IN_HANDLER]
	str wzr, [x20, #FT_STATUS]
	adrp x9, ukp_errno_offset
	ldr x9, [x9, :lo12:ukp_errno_offset]
	mrs x11, tpidr_el0
	ldr w12, [sp, #ERRNO_SLOT]
	str w12, [x11, x9]
5:	/* the instance: the thread's spare if it has none, else back to
	 * its pool */
	SPARE_PUT x22, x23, x9, 1f
	b 4f
1:	POOL_PUSH x23
4:	mov x19, #0				/* done: the way out */
	b 9f
8:	mov x19, #1				/* undo: then the dispatcher */
9:	LEAVE_HELD x20, x21, x9
	cbz x19, 2f
	b 3f
6:	/* the handler faulted and was abandoned (ukp_sigfault_handler) */
	THREAD_BLOCK_AGAIN x20, x9, x10
	ldr x21, [x20, #FT_REC]
	ldr x22, [x20, #FT_RSTACK]		/* (the longjmp keeps no register) */
	ldr x23, [sp, #RI_SLOT]
	mov x0, x20
	mov x1, xzr
	bl ukp_fast_abandoned
	b 7b

3:	mov x0, sp
	add x1, sp, #FRAME
	mov w2, #1
	bl ukp_kretprobe_dispatch
	cbz x0, 10f
2:	ldp x16, x10, [sp, #256]	/* pc, pstate */
	msr nzcv, x10
	PT_LOAD_X0_X15
	ldr x17, [sp, #136]
	PT_LOAD_X18_X29
	ldr x30, [sp, #240]
	add sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret x16
	/* No pending return for this frame: nowhere to go (the dispatcher
	 * said why). */
10:	udf #0
	.cfi_endproc
	.size ukp_kretprobe_trampoline, .-ukp_kretprobe_trampoline
	.globl ukp_kretprobe_trampoline_end
	.hidden ukp_kretprobe_trampoline_end
ukp_kretprobe_trampoline_end:

	.section .note.GNU-stack, "", %progbits
