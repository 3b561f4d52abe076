/* SPDX-License-Identifier: MIT */
/*
 * asm_offsets.c - the offsets and constants the assembly fast paths use
 * (src/arch/<arch>/*.S), taken from the C definitions at build time as
 * the kernel's asm-offsets.c does: compiled to assembly only, each
 * DEFINE() leaves a "->NAME VALUE" marker that scripts/gen_asm_offsets.py
 * turns into #defines in the build's asm_offsets.h. Never linked.
 *
 * What the fast paths may touch: the per-thread control block (struct
 * ukp_ctlblk, its read-side record), the probe site (struct ukp_site),
 * the public struct kprobe/kretprobe/kretprobe_instance, and
 * kretprobes.c's holder, instance header and per-thread return stack
 * (kretprobes_layout.h). An arch port writes its fast paths against
 * these names.
 */
#include <stddef.h>

#include "internal.h"
#include "kretprobes_layout.h"

#define DEFINE(sym, val) __asm__ volatile("\n.ascii \"->" #sym " %c0\"" : : "i"((long)(val)))
#define OFFSET(sym, str, mem) DEFINE(sym, offsetof(struct str, mem))

void ukp_asm_offsets(void);

void ukp_asm_offsets(void)
{
	/* struct ukp_ctlblk: status and depth, in_handler and defer_async
	 * are 32-bit pairs the fast paths test as one 64-bit word */
	OFFSET(CTL_STATUS, ukp_ctlblk, status);
	OFFSET(CTL_DEPTH, ukp_ctlblk, depth);
	OFFSET(CTL_IN_HANDLER, ukp_ctlblk, in_handler);
	OFFSET(CTL_DEFER_ASYNC, ukp_ctlblk, defer_async);
	OFFSET(CTL_CUR_SITE, ukp_ctlblk, cur_site);
	OFFSET(CTL_CUR_KP, ukp_ctlblk, cur_kp);
	OFFSET(CTL_FAULT_KP, ukp_ctlblk, fault_kp);
	OFFSET(CTL_REC, ukp_ctlblk, rec);
	OFFSET(CTL_DEFERRED, ukp_ctlblk, deferred_mask);
	OFFSET(CTL_JB, ukp_ctlblk, jb);

	/* struct ukp_site */
	OFFSET(SITE_ADDR, ukp_site, addr);
	OFFSET(SITE_FAST_KP, ukp_site, fast_kp);
	OFFSET(SITE_FAST_PRE, ukp_site, fast_pre);
	OFFSET(SITE_DETOUR, ukp_site, opt.detour);

	/* struct ukp_thread_rec */
	OFFSET(REC_SEQ, ukp_thread_rec, seq);

	/* struct kprobe */
	OFFSET(KP_PRE, kprobe, pre_handler);
	OFFSET(KP_POST, kprobe, post_handler);
	OFFSET(KP_FLAGS, kprobe, flags);
	DEFINE(KP_FLAGS_OFF, KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED);
	DEFINE(KP_HIT_ACTIVE, KPROBE_HIT_ACTIVE);

	/* struct kretprobe (its kp at 0) and struct kretprobe_instance */
	OFFSET(RP_HANDLER, kretprobe, handler);
	OFFSET(RP_ENTRY, kretprobe, entry_handler);
	OFFSET(RP_RPH, kretprobe, rph);
	OFFSET(RI_RET_ADDR, kretprobe_instance, ret_addr);
	OFFSET(RI_RP, kretprobe_instance, rp);
	OFFSET(RI_TASK, kretprobe_instance, task);

	/* kretprobes_layout.h: the holder and its lock-free pool, the header
	 * in front of every instance, a thread's return stack */
	OFFSET(H_RP, kretprobe_holder, rp);
	OFFSET(H_FREE_HEAD, kretprobe_holder, free_head);
	OFFSET(H_FREE_NEXT, kretprobe_holder, free_next);
	OFFSET(H_INSTS, kretprobe_holder, insts);
	OFFSET(H_STRIDE, kretprobe_holder, stride);
	OFFSET(H_VF_HANDLER, kretprobe_holder, vf_handler);
	DEFINE(INST_HDR_SIZE, sizeof(struct krp_inst_hdr));
	OFFSET(INST_HDR_RPH, krp_inst_hdr, rph);
	OFFSET(KT_TASK, krp_thread, task);
	OFFSET(KT_SHSTK, krp_thread, shstk);
	OFFSET(KT_DEPTH, krp_thread, depth);
	OFFSET(KT_SPARE, krp_thread, spare);
	OFFSET(KT_E, krp_thread, e);
	DEFINE(E_SIZE, sizeof(struct krp_entry));
	OFFSET(E_SLOT, krp_entry, slot);
	OFFSET(E_RET, krp_entry, ret);
	OFFSET(E_RI, krp_entry, ri);
	DEFINE(KRP_MAX_DEPTH, KRP_MAX_DEPTH);

	/* regs->ip of a pre_handler: the probe address plus this */
	DEFINE(BREAKPOINT_SIZE, UKP_BREAKPOINT_SIZE);
}
