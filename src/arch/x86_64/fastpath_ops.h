/* SPDX-License-Identifier: MIT */
/*
 * fastpath_ops.h - the fast paths' primitives (src/fastpath.h defines
 * each one in C; its comment names the macro) as x86-64 assembler
 * macros, for optprobe_tramp.S and kretprobe_tramp.S. The only x86 code
 * that uses the layouts behind them (the P_* offsets asm_offsets.c
 * generates); the .S files touch the two blocks (FS_*, FT_*) and call
 * these. Context: [detour] / [ret], signals held back where said.
 *
 * Registers: the macros name their operands; where an instruction
 * needs a fixed register (cmpxchg: rax) or a 32-bit name, the comment
 * says which registers they use.
 */
#ifndef UKP_X86_FASTPATH_OPS_H
#define UKP_X86_FASTPATH_OPS_H

#include "asm_offsets.h" /* generated: FS_*, FT_*, P_* (src/asm_offsets.c) */

/*
 * TB_CTL: ctl = the address of this thread's per-thread block (struct
 * ukp_fp_thread at the start of its ukp_ctlblk, in the library's room of
 * its block: base/tb_lib.h), found %gs-relative
 * (common/arch/x86_64/thread_block_arch.h): the block at the GS base is
 * the thread's when its owner word is the thread pointer. Jumps to fail
 * when it is not found that way (no block yet, or GS bases not used so):
 * the C path finds or takes it. Clobbers the flags.
 */
	.macro TB_CTL ctl, fail
	cmpl $0, ukp_tb_gs_fast(%rip)
	je \fail
	movq %gs:(P_TB_GS_BIAS + P_TB_OWNER), \ctl
	cmpq %fs:0, \ctl
	jne \fail
	movq %gs:(P_TB_GS_BIAS + P_TB_SELF), \ctl
	addq $P_TB_CTL, \ctl
	.endm

/*
 * TB_GO_TOP: top = the top of this thread's stack for Go probes' hits
 * (core/go_stack.c, in its per-thread block), found as TB_CTL finds the
 * block. Clobbers the flags (the Go template has read them before).
 * Jumps to fail when the block is not found that way or the thread has
 * no such stack yet (0).
 */
	.macro TB_GO_TOP top, fail
	cmpl $0, ukp_tb_gs_fast(%rip)
	je \fail
	movq %gs:(P_TB_GS_BIAS + P_TB_OWNER), \top
	cmpq %fs:0, \top
	jne \fail
	movq %gs:(P_TB_GS_BIAS + P_TB_GO_TOP), \top
	testq \top, \top
	jz \fail
	.endm

/* TB_CTL_AGAIN: ctl as TB_CTL found it before in this hit (its
 * registers were lost: a handler that faulted, a clobbered ctl). */
	.macro TB_CTL_AGAIN ctl
	movq %gs:(P_TB_GS_BIAS + P_TB_SELF), \ctl
	addq $P_TB_CTL, \ctl
	.endm

/*
 * IDLE_OR (fastpath.h): is this thread idle, with its grace-period
 * record, and no writer asked for heavy read-side fences? Loads ctl =
 * the per-thread block (TB_CTL; TB_CTL_AGAIN when found is 1: the
 * caller found the block at the GS base to be the thread's in this hit)
 * and rec = the record, clobbers tmp and the flags; jumps to fail when
 * not.
 */
	.macro IDLE_OR ctl, rec, tmp, fail, found=0
	.if \found
	TB_CTL_AGAIN \ctl
	.else
	TB_CTL \ctl, \fail
	.endif
	movq FT_STATUS(\ctl), \tmp		/* status, depth */
	orq FT_IN_HANDLER(\ctl), \tmp	/* in_handler, defer_async */
	jnz \fail
	movq FT_REC(\ctl), \rec
	testq \rec, \rec
	jz \fail
	leaq ukp_overflow_rec(%rip), \tmp
	cmpq \tmp, \rec
	je \fail
	cmpb $0, ukp_reader_fence(%rip)
	jne \fail
	.endm

/* READ_ENTER / READ_LEAVE (fastpath.h): the record's sequence (its first
 * word) odd: inside; even: outside. */
	.macro READ_ENTER rec
	addq $1, (\rec)
	.endm
	.macro READ_LEAVE rec
	addq $1, (\rec)
	.endm

/*
 * LEAVE_HELD (fastpath.h): the way out of a fast path that held signals
 * back and took the read side: both words cleared, the read side left,
 * then the signals that came meanwhile delivered. ctl and rec as
 * IDLE_OR loaded them; clobbers rax, rdi, the flags, and the
 * caller-saved registers when it delivers.
 */
	.macro LEAVE_HELD ctl, rec
	xorl %eax, %eax
	movq %rax, FT_STATUS(\ctl)
	READ_LEAVE \rec
	movq %rax, FT_IN_HANDLER(\ctl)
	cmpq $0, FT_DEFERRED(\ctl)
	je .Lleft\@
	movq \ctl, %rdi
	call ukp_defer_async_flush
.Lleft\@:
	.endm

/* KPROBE_OK (ukp_fp_kprobe_ok): kp's pre_handler is pre (a register),
 * it has no post_handler and is enabled; else jump to fail. */
	.macro KPROBE_OK kp, pre, fail
	cmpq \pre, P_KP_PRE(\kp)
	jne \fail
	cmpq $0, P_KP_POST(\kp)
	jne \fail
	testl $P_KP_FLAGS_OFF, P_KP_FLAGS(\kp)
	jnz \fail
	.endm

/* KRP_HOLDER (ukp_fp_krp_holder): h = the holder of kretprobe rp when it
 * has no entry_handler; else (or unregistered) jump to fail. */
	.macro KRP_HOLDER rp, h, fail
	cmpq $0, P_RP_ENTRY(\rp)
	jne \fail
	movq P_RP_RPH(\rp), \h
	testq \h, \h
	jz \fail
	.endm

/*
 * RSTACK_ROOM (ukp_fp_rstack_room): rs may
 * take an entry for the return slot at slot: no shadow stack, not full,
 * and no entry of a gone frame (at or below slot) on top, which the C
 * path drops first. d/d32 = the depth; clobbers tmp; else jump to fail.
 */
	.macro RSTACK_ROOM rs, slot, d, d32, tmp, fail
	cmpb $0, P_KT_SHSTK(\rs)
	jne \fail
	movl P_KT_DEPTH(\rs), \d32
	testl \d32, \d32
	jz .Lroom\@
	cmpl $P_KRP_MAX_DEPTH, \d32
	jae \fail
	leaq (\d, \d, 2), \tmp
	cmpq \slot, (P_KT_E - P_E_SIZE + P_E_SLOT)(\rs, \tmp, 8)
	jbe \fail
.Lroom\@:
	.endm

/* SPARE_TAKE (ukp_fp_spare_take): rax = rs's spare and jump to found
 * when it is one of h's; else fall through (rax clobbered). */
	.macro SPARE_TAKE rs, h, found
	xorl %eax, %eax
	xchgq %rax, P_KT_SPARE(\rs)
	testq %rax, %rax
	jz .Lnospare\@
	cmpq \h, -P_INST_HDR_SIZE(%rax)
	je \found
	movq %rax, P_KT_SPARE(\rs)	/* another's: back (only this thread fills it) */
.Lnospare\@:
	.endm

/* POOL_POP (ukp_fp_pool_pop): rax = a free instance of h's pool; jump
 * to empty when none. Clobbers rbx, rdx, r12 and the flags (h must be
 * none of them). */
	.macro POOL_POP h, empty
	movq P_H_FREE_NEXT(\h), %rbx
	movq P_H_FREE_HEAD(\h), %rax
.Lpop\@:
	testl %eax, %eax
	jz \empty
	movl %eax, %edx
	movl -4(%rbx, %rdx, 4), %edx		/* free_next[index] */
	movq %rax, %r12
	shrq $32, %r12
	addq $1, %r12				/* the ABA tag */
	shlq $32, %r12
	orq %rdx, %r12
	lock cmpxchgq %r12, P_H_FREE_HEAD(\h)
	jne .Lpop\@
	leal -1(%rax), %eax
	imulq P_H_STRIDE(\h), %rax
	addq P_H_INSTS(\h), %rax
	addq $P_INST_HDR_SIZE, %rax		/* the instance */
	.endm

/* POOL_PUSH (ukp_fp_pool_push): ri back to its pool, by the C
 * primitive. Clobbers the caller-saved registers. */
	.macro POOL_PUSH ri
	movq \ri, %rdi
	call ukp_krp_recycle
	.endm

/* INST_INIT (ukp_fp_inst_init): the instance's public fields at an
 * entry: the real return address, its kretprobe, the thread. Clobbers
 * tmp. */
	.macro INST_INIT ri, ret, rp, rs, tmp
	movq \ret, P_RI_RET_ADDR(\ri)
	movq \rp, P_RI_RP(\ri)
	movq P_KT_TASK(\rs), \tmp
	movq \tmp, P_RI_TASK(\ri)
	.endm

/* RSTACK_PUSH (ukp_fp_rstack_push): entry d of rs = (slot, ret, ri),
 * then the depth d + 1 published (d/d32 incremented). Clobbers tmp. */
	.macro RSTACK_PUSH rs, d, d32, slot, ret, ri, tmp
	leaq (\d, \d, 2), \tmp
	leaq P_KT_E(\rs, \tmp, 8), \tmp		/* e[depth] */
	movq \slot, P_E_SLOT(\tmp)
	movq \ret, P_E_RET(\tmp)
	movq \ri, P_E_RI(\tmp)
	addl $1, \d32
	movl \d32, P_KT_DEPTH(\rs)
	.endm

/*
 * RSTACK_TOP (ukp_fp_rstack_top): the top entry of rs
 * is the only one for the return slot at slot: e = that entry, eax =
 * the depth; else (none, gone frames on top, or chained: more than one
 * entry for this slot) jump to fail. Clobbers rcx.
 */
	.macro RSTACK_TOP rs, slot, e, fail
	movl P_KT_DEPTH(\rs), %eax
	testl %eax, %eax
	jz \fail
	leaq (%rax, %rax, 2), %rcx
	leaq (P_KT_E - P_E_SIZE)(\rs, %rcx, 8), \e	/* the top entry */
	cmpq \slot, P_E_SLOT(\e)
	jne \fail				/* gone frames to drop first */
	cmpl $1, %eax
	je .Ltop\@
	cmpq \slot, (P_E_SLOT - P_E_SIZE)(\e)
	je \fail				/* chained: more than one */
.Ltop\@:
	.endm

/* RSTACK_TOP_RI: the top entry's instance (ri), or jump to fail when it
 * was dropped meanwhile. */
	.macro RSTACK_TOP_RI e, ri, fail
	movq P_E_RI(\e), \ri
	testq \ri, \ri
	jz \fail
	.endm

/* RET_HANDLER (ukp_fp_ret_handler): fn = the return handler of ri's
 * kretprobe (rp, NULL once gone), 0 when none; jump to unproven when it
 * is not the one proven vector-free. Clobbers tmp. */
	.macro RET_HANDLER ri, rp, fn, fn32, tmp, unproven
	movq -P_INST_HDR_SIZE + P_INST_HDR_RPH(\ri), \tmp	/* the holder */
	movq P_H_RP(\tmp), \rp		/* the kretprobe, NULL once gone */
	xorl \fn32, \fn32
	testq \rp, \rp
	jz .Lrh\@
	movq P_RP_HANDLER(\rp), \fn
	testq \fn, \fn
	jz .Lrh\@
	cmpq P_H_VF_HANDLER(\tmp), \fn
	jne \unproven
.Lrh\@:
	.endm

/* RSTACK_POP (ukp_fp_rstack_pop): the top entry e consumed (a plain
 * store: see there), ret = the real return address, written into the
 * return slot at slot (unwinders see it from here on), then the depth
 * (eax, from RSTACK_TOP) lowered. */
	.macro RSTACK_POP rs, e, slot, ret
	movq $0, P_E_RI(\e)
	movq P_E_RET(\e), \ret
	movq \ret, (\slot)
	subl $1, %eax
	movl %eax, P_KT_DEPTH(\rs)
	.endm

/* SPARE_PUT (ukp_fp_spare_put): ri kept as rs's spare, or jump to full
 * when rs has one (the caller then does POOL_PUSH). */
	.macro SPARE_PUT rs, ri, full
	cmpq $0, P_KT_SPARE(\rs)
	jne \full
	movq \ri, P_KT_SPARE(\rs)
	.endm

#endif
