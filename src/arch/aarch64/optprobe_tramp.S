/* SPDX-License-Identifier: MIT */
/*
 * optprobe_tramp.S - the shared half of every AArch64 detour
 * (optprobe.c): ukp_optprobe_common.
 *
 * On entry (blr from the detour): x16 = the site, x30 = the detour's
 * next instruction; [sp, #0..32) holds the probed code's x16, x17 and
 * x30 (at 0, 8, 16); every other register is the probed code's, and
 * sp + 32 its stack pointer.
 *
 * It fills a struct pt_regs, serves the hit (the fast path below, or
 * ukp_optprobe_hit(regs, site, 1): 1, the FP/SIMD state is live, so
 * that every handler not proven to leave it alone runs through
 * arch_vecsafe_call), takes back the general registers and the
 * condition flags (handlers may change them; x16, x17 and x30 through
 * the detour's save slots) and returns to the detour. The FP/SIMD state
 * is never saved here: the library's hit path is built with
 * -mgeneral-regs-only and proven vector-free (vecstate.c).
 *
 *   sp + 304   the detour's saves (x16, x17, x30)
 *   sp + 288   errno (the fast path's), unused
 *   sp + 272   x30 (the detour), the site
 *   sp         struct pt_regs
 * [detour] context: the thread, wherever it was.
 */
#include "pt_regs_asm.h"
#include "fastpath_ops.h" /* the blocks and primitives (src/fastpath.h) */

#define FRAME      (PT_SIZE + 32)
#define SITE_SLOT  (PT_SIZE + 8)
#define ERRNO_SLOT (PT_SIZE + 16)

	/*
	 * The fast path of a hit (ukp_optprobe_hit's work for the usual
	 * case, without the C calls): the thread is idle (no probe status,
	 * handler, read side or held-back signals), has its grace-period
	 * record, no writer asked for heavy read-side fences, and the
	 * site's only probe is enabled, has no post_handler and still has
	 * the pre_handler proven vector-free at registration (the per-site
	 * block's fast_kp/fast_pre, kept by kprobes.c; see src/fastpath.h).
	 * Anything else goes to slow, the C path, with nothing changed.
	 *
	 * The per-thread state is set as ukp_optprobe_hit and call_outer
	 * set it, in the same order: signals held back first, then the
	 * probe status and the read side. errno is kept in its frame slot.
	 * A fault in the handler comes back to 3: by the fault handler's
	 * __builtin_longjmp (frame pointer = pt_regs, the label, the stack
	 * pointer at the call), with only sp and x29 known.
	 * Registers: x19 the site, x20 the per-thread block, x21 the
	 * thread's record, x22 the probe (callee-saved: kept across the
	 * handler; every one of them is restored from pt_regs afterwards);
	 * x9-x13 scratch. A kretprobe's entry (its pre_handler is
	 * ukp_kretprobe_pre_handler) is served at 20 instead of calling it.
	 */
	.macro FAST_HIT slow, regs
	FAST_KP x19, x9, x9
	cbz x9, \slow
	IDLE_OR x20, x21, x9, w9, x10, \slow
	mov x10, #1				/* in_handler = 1, */
	movk x10, #1, lsl #32			/* defer_async = 1 */
	str x10, [x20, #FT_IN_HANDLER]
	mov x10, #FP_HIT_ACTIVE			/* status = ACTIVE, */
	movk x10, #1, lsl #32			/* depth = 1 */
	str x10, [x20, #FT_STATUS]
	READ_ENTER x21, x9			/* odd: inside (ukp_read_lock) */
	/* under the read side: the probe as it is now */
	FAST_KP x19, x22, x9
	cbz x22, 5f
	ldr x10, [x19, #FS_PRE]
	KPROBE_OK x22, x10, x9, w9, 5f
	adrp x9, ukp_kretprobe_pre_handler
	add x9, x9, :lo12:ukp_kretprobe_pre_handler
	cmp x10, x9
	b.eq 20f				/* a kretprobe's entry */
	str x19, [x20, #FT_CUR_SITE]
	str x22, [x20, #FT_CUR_KP]
	str x22, [x20, #FT_FAULT_KP]
	ldr x9, [x19, #FS_ADDR]
	add x9, x9, #FP_BREAKPOINT_IP_OFFSET
	str x9, [sp, #PT_PC]			/* as after a breakpoint */
	adrp x9, ukp_errno_offset
	ldr x9, [x9, :lo12:ukp_errno_offset]
	mrs x11, tpidr_el0
	ldr w12, [x11, x9]
	str w12, [sp, #ERRNO_SLOT]
	mov x9, sp
	adr x11, 3f
	stp x9, x11, [x20, #FT_JB]		/* frame pointer, label */
	str x9, [x20, #(FT_JB + 16)]		/* stack pointer */
	mov x0, x22
	mov x1, sp
	blr x10
1:	/* leave: the state as before, then what was held back */
	str xzr, [x20, #FT_CUR_SITE]
	str xzr, [x20, #FT_CUR_KP]
	str xzr, [x20, #FT_FAULT_KP]
	LEAVE_HELD x20, x21, x9
	adrp x9, ukp_errno_offset
	ldr x9, [x9, :lo12:ukp_errno_offset]
	mrs x11, tpidr_el0
	ldr w12, [sp, #ERRNO_SLOT]
	str w12, [x11, x9]
	b \regs

3:	/* the handler faulted and was abandoned (ukp_sigfault_handler):
	 * sp is as at the call */
	THREAD_BLOCK_AGAIN x20, x9, x10
	ldr x21, [x20, #FT_REC]
	ldr x19, [sp, #SITE_SLOT]
	mov x0, x20
	mov x1, x19
	bl ukp_fast_abandoned
	b 1b

5:	/* not for the fast path after all: undo, then the C path */
	LEAVE_HELD x20, x21, x9
	b \slow

20:	/*
	 * The entry of a kretprobe (the work of ukp_kretprobe_pre_handler,
	 * kretprobes.c, for the usual case): the kretprobe has no
	 * entry_handler, the thread has its return stack (claimed at its
	 * first hit, on the C path), the return address (x30, in pt_regs)
	 * is not the trampoline already (chained), no entry of a gone frame
	 * is to be dropped, and there is an instance: the thread's spare or
	 * one from the pool. Anything else: the C path, with nothing
	 * changed. The order is the C path's: the instance (SPARE_TAKE, or
	 * POOL_POP), the entry written and published by the depth
	 * (RSTACK_PUSH), and last the trampoline's address in x30, which
	 * the detour takes back. No user code runs and nothing here can
	 * fault. Registers: x22 the kretprobe (kp first), x23 its holder,
	 * x24 the return stack, x25 the return address, x26 the slot (the
	 * probed code's sp), x27 the depth, x28 the instance.
	 */
	KRP_HOLDER x22, x23, x9, 5b		/* no entry_handler: the holder */
	ldr x24, [x20, #FT_RSTACK]		/* the return stack */
	cbz x24, 5b
	ldr x25, [sp, #PT_X30]			/* the return address */
	adrp x9, ukp_kretprobe_trampoline
	add x9, x9, :lo12:ukp_kretprobe_trampoline
	cmp x25, x9
	b.eq 5b					/* chained */
	ldr x26, [sp, #PT_SP]			/* the slot */
	RSTACK_ROOM x24, x26, x27, w27, x9, w9, 5b
	SPARE_TAKE x24, x23, x28, x9, w10, 21f	/* this thread's spare instance */
	POOL_POP x23, x28, x9, x10, x11, w11, x12, w13, 5b	/* none free: the C path counts it */
21:	INST_INIT x28, x25, x22, x24, x9
	RSTACK_PUSH x24, x27, w27, x26, x25, x28, x9
	adrp x9, ukp_kretprobe_trampoline
	add x9, x9, :lo12:ukp_kretprobe_trampoline
	str x9, [sp, #PT_X30]
	LEAVE_HELD x20, x21, x9
	b \regs
	.endm

	.section ukprobes_text, "ax", %progbits
	.p2align 4
	.globl ukp_optprobe_common
	.hidden ukp_optprobe_common
	.type ukp_optprobe_common, %function
ukp_optprobe_common:
	.cfi_startproc
	.cfi_undefined 30
	sub sp, sp, #FRAME
	.cfi_def_cfa_offset FRAME
	PT_STORE_X0_X15
	ldp x0, x1, [sp, #FRAME]	/* the probed code's x16, x17 */
	stp x0, x1, [sp, #128]
	PT_STORE_X18_X29
	ldr x0, [sp, #FRAME + 16]	/* its x30 */
	add x1, sp, #FRAME + 32		/* its sp */
	stp x0, x1, [sp, #240]
	mrs x1, nzcv
	stp xzr, x1, [sp, #256]		/* pc (set by either path), pstate */
	stp x30, x16, [sp, #PT_SIZE]	/* the detour, the site */
	mov x19, x16
	FAST_HIT .Lslow, .Lregs
.Lslow:
	mov x0, sp
	mov x1, x19
	mov w2, #1
	bl ukp_optprobe_hit
.Lregs:
	/* the probed code's x16, x17, x30 as the handlers left them, into
	 * the detour's save slots */
	ldp x0, x1, [sp, #128]
	stp x0, x1, [sp, #FRAME]
	ldr x0, [sp, #240]
	str x0, [sp, #FRAME + 16]
	ldr x1, [sp, #264]
	msr nzcv, x1
	ldr x30, [sp, #PT_SIZE]
	PT_LOAD_X0_X15
	PT_LOAD_X18_X29
	add sp, sp, #FRAME
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size ukp_optprobe_common, .-ukp_optprobe_common
	.globl ukp_optprobe_common_end
	.hidden ukp_optprobe_common_end
ukp_optprobe_common_end:

	.section .note.GNU-stack, "", %progbits
