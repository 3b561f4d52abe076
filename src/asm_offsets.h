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
#define SITE_DETOUR     224 /* opt.detour */
/* Where a detour resumes after its template (optprobe.c entry_code). */
#define DETOUR_RESUME   17

/* struct ukp_thread_rec */
#define REC_SEQ         0

/* struct kprobe (include/ukprobes.h) */
#define KP_PRE          32
#define KP_POST         40
#define KP_FLAGS        60
#define KP_FLAGS_OFF    3   /* KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED */
#define KP_HIT_ACTIVE   1   /* KPROBE_HIT_ACTIVE */

/* struct kretprobe (include/ukprobes.h); its kp is at offset 0 */
#define RP_HANDLER      64
#define RP_ENTRY        72
#define RP_RPH          96

/* struct kretprobe_instance (include/ukprobes.h) */
#define RI_RET_ADDR     0
#define RI_RP           8
#define RI_TASK         16

/* kretprobes.c: struct kretprobe_holder, struct krp_inst_hdr (in front
 * of every instance), struct krp_thread and its struct krp_entry. */
#define H_RP            0
#define H_FREE_HEAD     8   /* ABA tag << 32 | (index + 1) */
#define H_FREE_NEXT     16
#define H_INSTS         24
#define H_STRIDE        32
#define H_VF_HANDLER    64
#define INST_HDR_SIZE   16  /* rph at 0 */
#define KT_TASK         8
#define KT_SHSTK        16
#define KT_DEPTH        20
#define KT_SPARE        24
#define KT_E            32
#define E_SIZE          24  /* slot, ret, ri */
#define E_SLOT          0
#define E_RET           8
#define E_RI            16
#define KRP_MAX_DEPTH   64

/* regs->ip of a pre_handler: the probe address plus this (UKP_BREAKPOINT_SIZE) */
#define BREAKPOINT_SIZE 1

#endif /* UKP_ASM_OFFSETS_H */
