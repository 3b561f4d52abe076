/* SPDX-License-Identifier: MIT */
/*
 * asm_offsets.h - where the fields that the optimized hit's fast path
 * (arch optprobe_tramp.S) reads and writes live in the core's structs:
 * struct ukp_ctlblk, struct ukp_site, struct ukp_thread_rec and the
 * public struct kprobe (LP64). trap.c checks every value against the C
 * layout at compile time (the kernel's asm-offsets, by hand).
 */
#ifndef UKP_ASM_OFFSETS_H
#define UKP_ASM_OFFSETS_H

/* struct ukp_ctlblk */
#define CTL_STATUS      0   /* status (u32), then depth (u32) */
#define CTL_DEPTH       4
#define CTL_IN_HANDLER  8   /* in_handler (s32), then defer_async (u32) */
#define CTL_DEFER_ASYNC 12
#define CTL_CUR_SITE    16
#define CTL_CUR_KP      24
#define CTL_FAULT_KP    32
#define CTL_REC         40
#define CTL_DEFERRED    48
#define CTL_JB          56  /* __builtin_setjmp: frame pointer, label, sp */

/* struct ukp_site */
#define SITE_ADDR       0
#define SITE_FAST_KP    8
#define SITE_FAST_PRE   16

/* struct ukp_thread_rec */
#define REC_SEQ         0

/* struct kprobe (include/ukprobes.h) */
#define KP_PRE          32
#define KP_POST         40
#define KP_FLAGS        60
#define KP_FLAGS_OFF    3   /* KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED */
#define KP_HIT_ACTIVE   1   /* KPROBE_HIT_ACTIVE */

/* regs->ip of a pre_handler: the probe address plus this (UKP_BREAKPOINT_SIZE) */
#define BREAKPOINT_SIZE 1

#endif /* UKP_ASM_OFFSETS_H */
