/* SPDX-License-Identifier: MIT */
/*
 * fastpath_ops.h - the fast paths' primitives (src/fastpath.h defines
 * each one in C; its comment names the macro) as AArch64 assembler
 * macros, for optprobe_tramp.S. The only AArch64 code that uses the
 * layouts behind them (the P_* offsets asm_offsets.c generates); the .S
 * files touch the two blocks (FS_*, FT_*) and call these. Context:
 * [detour], signals held back where said.
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
 * Only the primitives of the optimized hit are here: the kretprobe
 * entry and the return trampoline take the C path on AArch64.
 */
#ifndef UKP_A64_FASTPATH_OPS_H
#define UKP_A64_FASTPATH_OPS_H

#include "asm_offsets.h" /* generated: FS_*, FT_*, FP_*, P_* (src/asm_offsets.c) */

/* ctl = the address of this thread's per-thread block (ukp_ctl,
 * initial-exec TLS: the thread pointer plus its offset from the GOT). */
	.macro THREAD_BLOCK ctl, tmp
	mrs \ctl, tpidr_el0
	adrp \tmp, :gottprel:ukp_ctl
	ldr \tmp, [\tmp, #:gottprel_lo12:ukp_ctl]
	add \ctl, \ctl, \tmp
	.endm

/* kp = the site's fast_kp, with acquire (see above); clobbers tmp. */
	.macro FAST_KP site, kp, tmp
	add \tmp, \site, #FS_KP
	ldar \kp, [\tmp]
	.endm

/*
 * IDLE_OR (fastpath.h): is this thread idle, with its grace-period
 * record, and no writer asked for heavy read-side fences? Loads ctl =
 * the per-thread block and rec = the record, clobbers tmp (tmpw its
 * 32-bit name) and the flags; jumps to fail when not.
 */
	.macro IDLE_OR ctl, rec, tmp, tmpw, fail
	THREAD_BLOCK \ctl, \tmp
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

#endif
