/* SPDX-License-Identifier: MIT */
/*
 * fastpath_ops.h - the fast paths' primitives (src/fastpath.h defines
 * each one in C; its comment names the macro) as AArch64 assembler
 * macros, for optprobe_tramp.S and kretprobe_tramp.S. The only AArch64
 * code that uses the layouts behind them (the P_* offsets asm_offsets.c
 * generates); the .S files touch the two blocks (FS_*, FT_*) and call
 * these. Context: [detour] / [ret], signals held back where said.
 *
 * Memory ordering, against the C definitions: the per-thread block is
 * read and written by its own thread only (and its signal handlers,
 * which see program order): plain loads and stores. The read side is
 * ukp_read_lock/unlock's: its entry a plain store (the writers use
 * membarrier: ukp_reader_fence is checked), its exit a store-release
 * (stlr), so that every access of the read side is before it. The
 * site's fast_kp is published with release (kprobes.c): loaded with
 * ldar (FAST_KP), so that fast_pre and the probe's fields read after it
 * are the ones published with it (x86's TSO gives that for free).
 *
 * The pool's and the spare's atomics are exclusive-access loops
 * (ldaxr/stxr, ldaxr/stlxr: no LSE needed), with no other memory access
 * inside a loop. AArch64 keeps a function's return address in x30, not
 * in its return slot (the slot is the frame's identity, the stack
 * pointer at its entry): RSTACK_POP writes the real return address where
 * the trampoline keeps x30, and the entry reads and writes it in
 * pt_regs.
 */
#ifndef UKP_A64_FASTPATH_OPS_H
#define UKP_A64_FASTPATH_OPS_H

#include "asm_offsets.h" /* generated: FS_*, FT_*, FP_*, P_* (src/asm_offsets.c) */

/*
 * THREAD_BLOCK: ctl = the address of this thread's per-thread block
 * (struct ukp_fp_thread at the start of its ukp_ctlblk, in the library's
 * room of its block: base/tb_lib.h), found in the blocks' table by the
 * thread pointer at its first slot (ukp_tb_hash,
 * common/arch/aarch64/thread_block_arch.h). Jumps to fail when it is not
 * there (no block yet, one at another slot, or a gone thread's that
 * had the same thread pointer: ukp_tb_live): the C path finds or takes
 * it. Clobbers tmp, tmp2 and the flags.
 */
	.macro TB_SLOT ctl, tp, tmp
	movz \tmp, #P_TB_HASH_MUL_0
	movk \tmp, #P_TB_HASH_MUL_1, lsl #16
	movk \tmp, #P_TB_HASH_MUL_2, lsl #32
	movk \tmp, #P_TB_HASH_MUL_3, lsl #48
	mul \tmp, \tp, \tmp
	lsr \tmp, \tmp, #(64 - P_TB_COUNT_SHIFT)
	add \ctl, \ctl, \tmp, lsl #P_TB_SIZE_SHIFT
	.endm

	.macro THREAD_BLOCK ctl, tmp, tmp2, fail
	adrp \ctl, ukp_tb_arena
	ldr \ctl, [\ctl, :lo12:ukp_tb_arena]
	cbz \ctl, \fail
	mrs \tmp2, tpidr_el0
	TB_SLOT \ctl, \tmp2, \tmp
	ldr \tmp, [\ctl, #P_TB_OWNER]
	cmp \tmp, \tmp2
	b.ne \fail
	ldr \tmp, [\ctl, #P_TB_TIDP]		/* ukp_tb_live: not a gone */
	ldrsw \tmp, [\tmp]			/* thread's with this thread */
	ldrsw \tmp2, [\ctl, #P_TB_TID]		/* pointer */
	cmp \tmp, \tmp2
	b.ne \fail
	add \ctl, \ctl, #P_TB_CTL
	.endm

/* THREAD_BLOCK_AGAIN: ctl as THREAD_BLOCK found it before in this hit
 * (its registers were lost: a handler that faulted). */
	.macro THREAD_BLOCK_AGAIN ctl, tmp, tmp2
	adrp \ctl, ukp_tb_arena
	ldr \ctl, [\ctl, :lo12:ukp_tb_arena]
	mrs \tmp2, tpidr_el0
	TB_SLOT \ctl, \tmp2, \tmp
	add \ctl, \ctl, #P_TB_CTL
	.endm

/* kp = the site's fast_kp, with acquire (see above); clobbers tmp. */
	.macro FAST_KP site, kp, tmp
	add \tmp, \site, #FS_KP
	ldar \kp, [\tmp]
	.endm

/*
 * IDLE_OR (fastpath.h): is this thread idle, with its grace-period
 * record, and no writer asked for heavy read-side fences? Loads ctl =
 * the per-thread block (THREAD_BLOCK) and rec = the record, clobbers tmp
 * (tmpw its 32-bit name), tmp2 and the flags; jumps to fail when not.
 */
	.macro IDLE_OR ctl, rec, tmp, tmpw, tmp2, fail
	THREAD_BLOCK \ctl, \tmp, \tmp2, \fail
	ldr \tmp, [\ctl, #FT_STATUS]		/* status, depth */
	cbnz \tmp, \fail
	ldr \tmp, [\ctl, #FT_IN_HANDLER]	/* in_handler, defer_async */
	cbnz \tmp, \fail
	ldr \rec, [\ctl, #FT_REC]
	cbz \rec, \fail
	adrp \tmp, ukp_overflow_rec
	add \tmp, \tmp, :lo12:ukp_overflow_rec
	cmp \tmp, \rec
	b.eq \fail
	adrp \tmp, ukp_reader_fence
	ldrb \tmpw, [\tmp, :lo12:ukp_reader_fence]
	cbnz \tmpw, \fail
	.endm

/* READ_ENTER / READ_LEAVE (fastpath.h): the record's sequence (its first
 * word) odd: inside; even: outside. Clobber tmp. */
	.macro READ_ENTER rec, tmp
	ldr \tmp, [\rec]
	add \tmp, \tmp, #1
	str \tmp, [\rec]
	.endm
	.macro READ_LEAVE rec, tmp
	ldr \tmp, [\rec]
	add \tmp, \tmp, #1
	stlr \tmp, [\rec]
	.endm

/*
 * LEAVE_HELD (fastpath.h): the way out of a fast path that held signals
 * back and took the read side: both words cleared, the read side left,
 * then the signals that came meanwhile delivered. ctl and rec as
 * IDLE_OR loaded them (they must be callee-saved registers when the
 * caller needs them afterwards); clobbers tmp, x0, x30 and, when it
 * delivers, the caller-saved registers.
 */
	.macro LEAVE_HELD ctl, rec, tmp
	str xzr, [\ctl, #FT_STATUS]
	READ_LEAVE \rec, \tmp
	str xzr, [\ctl, #FT_IN_HANDLER]
	ldr \tmp, [\ctl, #FT_DEFERRED]
	cbz \tmp, .Lleft\@
	mov x0, \ctl
	bl ukp_defer_async_flush
.Lleft\@:
	.endm

/* KPROBE_OK (ukp_fp_kprobe_ok): kp's pre_handler is pre (a register),
 * it has no post_handler and is enabled; else jump to fail. Clobbers
 * tmp (tmpw its 32-bit name) and the flags. */
	.macro KPROBE_OK kp, pre, tmp, tmpw, fail
	ldr \tmp, [\kp, #P_KP_PRE]
	cmp \tmp, \pre
	b.ne \fail
	ldr \tmp, [\kp, #P_KP_POST]
	cbnz \tmp, \fail
	ldr \tmpw, [\kp, #P_KP_FLAGS]
	tst \tmpw, #P_KP_FLAGS_OFF
	b.ne \fail
	.endm

/* KRP_HOLDER (ukp_fp_krp_holder): h = the holder of kretprobe rp (with
 * acquire) when it has no entry_handler; else (or unregistered) jump to
 * fail. Clobbers tmp. */
	.macro KRP_HOLDER rp, h, tmp, fail
	ldr \tmp, [\rp, #P_RP_ENTRY]
	cbnz \tmp, \fail
	add \h, \rp, #P_RP_RPH
	ldar \h, [\h]
	cbz \h, \fail
	.endm

/*
 * RSTACK_ROOM (ukp_fp_rstack_room): rs may take an entry for the frame
 * whose slot is slot: no shadow stack, not full, and no entry of a gone
 * frame (at or below slot) on top, which the C path drops first. d (dw
 * its 32-bit name) = the depth; clobbers tmp (tmpw) and the flags; else
 * jump to fail.
 */
	.macro RSTACK_ROOM rs, slot, d, dw, tmp, tmpw, fail
	ldrb \tmpw, [\rs, #P_KT_SHSTK]
	cbnz \tmpw, \fail
	ldr \dw, [\rs, #P_KT_DEPTH]
	cbz \dw, .Lroom\@
	cmp \dw, #P_KRP_MAX_DEPTH
	b.hs \fail
	mov \tmp, #P_E_SIZE
	madd \tmp, \d, \tmp, \rs
	ldur \tmp, [\tmp, #(P_KT_E - P_E_SIZE + P_E_SLOT)]	/* e[depth - 1].slot */
	cmp \tmp, \slot
	b.ls \fail
.Lroom\@:
	.endm

/* SPARE_TAKE (ukp_fp_spare_take): ri = rs's spare (an atomic exchange
 * with NULL) and jump to found when it is one of h's; else fall through
 * (ri clobbered). Clobbers tmp and stw (a 32-bit register). */
	.macro SPARE_TAKE rs, h, ri, tmp, stw, found
	add \tmp, \rs, #P_KT_SPARE
.Lxchg\@:
	ldaxr \ri, [\tmp]
	stlxr \stw, xzr, [\tmp]
	cbnz \stw, .Lxchg\@
	cbz \ri, .Lnospare\@
	ldur \tmp, [\ri, #(P_INST_HDR_RPH - P_INST_HDR_SIZE)]
	cmp \tmp, \h
	b.eq \found
	str \ri, [\rs, #P_KT_SPARE]	/* another's: back (only this thread fills it) */
.Lnospare\@:
	.endm

/*
 * POOL_POP (ukp_fp_pool_pop): ri = a free instance of h's pool; jump to
 * empty when none. The head is read with acquire, then replaced by a
 * compare-and-swap (ldaxr/stxr, nothing else inside) with the next free
 * index under a new ABA tag. Clobbers head, old, new (neww its 32-bit
 * name), idx, stw and the flags.
 */
	.macro POOL_POP h, ri, head, old, new, neww, idx, stw, empty
	add \head, \h, #P_H_FREE_HEAD
.Lpop\@:
	ldar \old, [\head]
	and \idx, \old, #0xffffffff
	cbz \idx, \empty
	sub \idx, \idx, #1
	ldr \ri, [\h, #P_H_FREE_NEXT]
	ldr \neww, [\ri, \idx, lsl #2]		/* free_next[index] */
	lsr \ri, \old, #32
	add \ri, \ri, #1			/* the ABA tag */
	orr \new, \new, \ri, lsl #32
	ldaxr \ri, [\head]
	cmp \ri, \old
	b.ne .Lagain\@
	stxr \stw, \new, [\head]
	cbnz \stw, .Lpop\@
	b .Lgot\@
.Lagain\@:
	clrex
	b .Lpop\@
.Lgot\@:
	ldr \ri, [\h, #P_H_STRIDE]
	ldr \new, [\h, #P_H_INSTS]
	madd \ri, \idx, \ri, \new
	add \ri, \ri, #P_INST_HDR_SIZE		/* the instance */
	.endm

/* INST_INIT (ukp_fp_inst_init): the instance's public fields at an
 * entry: the real return address, its kretprobe, the thread. Clobbers
 * tmp. */
	.macro INST_INIT ri, ret, rp, rs, tmp
	str \ret, [\ri, #P_RI_RET_ADDR]
	str \rp, [\ri, #P_RI_RP]
	ldr \tmp, [\rs, #P_KT_TASK]
	str \tmp, [\ri, #P_RI_TASK]
	.endm

/* RSTACK_PUSH (ukp_fp_rstack_push): entry d of rs = (slot, ret, ri),
 * then the depth d + 1 published (dw incremented). Clobbers tmp. */
	.macro RSTACK_PUSH rs, d, dw, slot, ret, ri, tmp
	mov \tmp, #P_E_SIZE
	madd \tmp, \d, \tmp, \rs
	add \tmp, \tmp, #P_KT_E		/* e[depth] */
	str \slot, [\tmp, #P_E_SLOT]
	str \ret, [\tmp, #P_E_RET]
	str \ri, [\tmp, #P_E_RI]
	add \dw, \dw, #1
	str \dw, [\rs, #P_KT_DEPTH]
	.endm

/*
 * RSTACK_TOP (ukp_fp_rstack_top): the top entry of rs is the only one
 * for the frame whose slot is slot: e = that entry, d (dw its 32-bit
 * name) = the depth; else (none, gone frames on top, or chained) jump
 * to fail. Clobbers tmp and the flags.
 */
	.macro RSTACK_TOP rs, slot, e, d, dw, tmp, fail
	ldr \dw, [\rs, #P_KT_DEPTH]
	cbz \dw, \fail
	sub \tmp, \d, #1
	mov \e, #P_E_SIZE
	madd \e, \tmp, \e, \rs
	add \e, \e, #P_KT_E			/* e[depth - 1] */
	ldr \tmp, [\e, #P_E_SLOT]
	cmp \tmp, \slot
	b.ne \fail				/* gone frames to drop first */
	cmp \dw, #1
	b.eq .Ltop\@
	ldur \tmp, [\e, #(P_E_SLOT - P_E_SIZE)]
	cmp \tmp, \slot
	b.eq \fail				/* chained: more than one */
.Ltop\@:
	.endm

/* RSTACK_TOP_RI: the top entry's instance (ri), or jump to fail when it
 * was dropped meanwhile. */
	.macro RSTACK_TOP_RI e, ri, fail
	ldr \ri, [\e, #P_E_RI]
	cbz \ri, \fail
	.endm

/* RET_HANDLER (ukp_fp_ret_handler): fn = the return handler of ri's
 * kretprobe (rp, loaded with acquire, NULL once gone), 0 when none; jump
 * to unproven when it is not the one proven vector-free. Clobbers tmp
 * and the flags. */
	.macro RET_HANDLER ri, rp, fn, tmp, unproven
	ldur \tmp, [\ri, #(P_INST_HDR_RPH - P_INST_HDR_SIZE)]	/* the holder */
	add \rp, \tmp, #P_H_RP
	ldar \rp, [\rp]			/* the kretprobe, NULL once gone */
	mov \fn, xzr
	cbz \rp, .Lrh\@
	ldr \fn, [\rp, #P_RP_HANDLER]
	cbz \fn, .Lrh\@
	ldr \tmp, [\tmp, #P_H_VF_HANDLER]
	cmp \tmp, \fn
	b.ne \unproven
.Lrh\@:
	.endm

/* RSTACK_POP (ukp_fp_rstack_pop): the top entry e consumed (a plain
 * store: see there), ret = the real return address, written to loc
 * (where the return address is kept: on AArch64 the x30 the trampoline
 * restores), then the depth d (from RSTACK_TOP) lowered. */
	.macro RSTACK_POP rs, e, dw, loc, ret
	str xzr, [\e, #P_E_RI]
	ldr \ret, [\e, #P_E_RET]
	str \ret, [\loc]
	sub \dw, \dw, #1
	str \dw, [\rs, #P_KT_DEPTH]
	.endm

/* SPARE_PUT (ukp_fp_spare_put): ri kept as rs's spare, or jump to full
 * when rs has one (the caller then does POOL_PUSH). Clobbers tmp. */
	.macro SPARE_PUT rs, ri, tmp, full
	ldr \tmp, [\rs, #P_KT_SPARE]
	cbnz \tmp, \full
	str \ri, [\rs, #P_KT_SPARE]
	.endm

/* POOL_PUSH (ukp_fp_pool_push): ri back to its pool, by the C
 * primitive. Clobbers the caller-saved registers. */
	.macro POOL_PUSH ri
	mov x0, \ri
	bl ukp_krp_recycle
	.endm

#endif
