/* SPDX-License-Identifier: MIT */
/*
 * asm_offsets.c - the offsets and constants the assembly fast paths use
 * (src/arch/<arch>/), taken from the C definitions at build time as the
 * kernel's asm-offsets.c does: compiled to assembly only, each DEFINE()
 * leaves a "->NAME VALUE" marker that scripts/gen_asm_offsets.py turns
 * into #defines in the build's asm_offsets.h. Never linked.
 *
 * Two groups (fastpath.h is the contract): FS_* and FT_*, the per-site
 * and per-thread blocks, which the fast paths' .S files use; P_*, the
 * layouts behind the primitives, which only the arch's primitive macros
 * (src/arch/<arch>/fastpath_ops.h) use. scripts/check_layout.sh keeps
 * P_* out of the .S files.
 */
#include <stddef.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "core/fastpath.h"

#define DEFINE(sym, val) __asm__ volatile("\n.ascii \"->" #sym " %c0\"" : : "i"((long)(val)))
#define OFFSET(sym, str, mem) DEFINE(sym, offsetof(struct str, mem))

/* The blocks are where the fast paths find them: at the site pointer and
 * at the per-thread control block's TLS address. */
_Static_assert(offsetof(struct ukp_site, fp) == 0 && offsetof(struct ukp_site, addr) == 0 &&
	       offsetof(struct ukp_site, detour) == offsetof(struct ukp_fp_site, detour),
	       "per-site block first");
_Static_assert(offsetof(struct ukp_ctlblk, fp) == 0 &&
	       offsetof(struct ukp_ctlblk, rstack) == offsetof(struct ukp_fp_thread, rstack),
	       "per-thread block first");
/* status/depth and in_handler/defer_async: two 64-bit words */
_Static_assert(offsetof(struct ukp_fp_thread, depth) == 4 &&
	       offsetof(struct ukp_fp_thread, defer_async) == 12 &&
	       sizeof(((struct ukp_fp_thread *)0)->defer_async) == 4, "idle words");
/* the record's first word is its read-side sequence */
_Static_assert(offsetof(struct ukp_thread_rec, seq) == 0, "read-side sequence first");
_Static_assert(sizeof(((struct krp_thread *)0)->depth) == 4, "depth is 32 bits");

void ukp_asm_offsets(void);

void ukp_asm_offsets(void)
{
	/* the per-site block */
	OFFSET(FS_ADDR, ukp_fp_site, addr);
	OFFSET(FS_KP, ukp_fp_site, fast_kp);
	OFFSET(FS_PRE, ukp_fp_site, fast_pre);
#if ARCH_FAST_KRP_PAIR
	OFFSET(FS_RP, ukp_fp_site, fast_rp);
#endif
	OFFSET(FS_DETOUR, ukp_fp_site, detour);

	/* the per-thread block */
	OFFSET(FT_STATUS, ukp_fp_thread, status);
	OFFSET(FT_DEPTH, ukp_fp_thread, depth);
	OFFSET(FT_IN_HANDLER, ukp_fp_thread, in_handler);
	OFFSET(FT_DEFER_ASYNC, ukp_fp_thread, defer_async);
	OFFSET(FT_CUR_SITE, ukp_fp_thread, cur_site);
	OFFSET(FT_CUR_KP, ukp_fp_thread, cur_kp);
	OFFSET(FT_FAULT_KP, ukp_fp_thread, fault_kp);
	OFFSET(FT_REC, ukp_fp_thread, rec);
	OFFSET(FT_DEFERRED, ukp_fp_thread, deferred_mask);
	OFFSET(FT_JB, ukp_fp_thread, jb);
	OFFSET(FT_RSTACK, ukp_fp_thread, rstack);

	/* where a thread's per-thread block is: in the library's room of its
	 * block (base/tb_lib.h, common/thread_block.h); only the arch's
	 * macro that finds it uses these */
	OFFSET(P_TB_OWNER, ukp_tb_head, owner);
	OFFSET(P_TB_SELF, ukp_tb_head, self);
	OFFSET(P_TB_TID, ukp_tb_head, tid);
	OFFSET(P_TB_TIDP, ukp_tb_head, tidp);
	DEFINE(P_TB_CTL, UKP_TB_LIB_OFF + UKP_TBL_CTL);
	DEFINE(P_TB_GO_TOP, UKP_TB_LIB_OFF + UKP_TBL_GO + offsetof(struct ukp_go_stack, top));
	DEFINE(P_TB_SIZE_SHIFT, UKP_TB_SIZE_SHIFT);
	DEFINE(P_TB_COUNT_SHIFT, UKP_TB_COUNT_SHIFT);
	DEFINE(P_TB_HASH_MUL_0, UKP_TB_HASH_MUL & 0xffff); /* (16 bits each: movk) */
	DEFINE(P_TB_HASH_MUL_1, (UKP_TB_HASH_MUL >> 16) & 0xffff);
	DEFINE(P_TB_HASH_MUL_2, (UKP_TB_HASH_MUL >> 32) & 0xffff);
	DEFINE(P_TB_HASH_MUL_3, UKP_TB_HASH_MUL >> 48);
#ifdef ARCH_TB_GS_BIAS
	DEFINE(P_TB_GS_BIAS, ARCH_TB_GS_BIAS);
#endif

	/* constants of the contract */
	DEFINE(FP_HIT_ACTIVE, KPROBE_HIT_ACTIVE);
	DEFINE(FP_BREAKPOINT_SIZE, UKP_BREAKPOINT_SIZE);
	DEFINE(FP_BREAKPOINT_IP_OFFSET, UKP_BREAKPOINT_IP_OFFSET);

	/* behind the primitives only: struct kprobe/kretprobe and
	 * kretprobe_instance (public), the holder's pool, the instance
	 * header, the return stack (kretprobes_layout.h) */
	OFFSET(P_KP_PRE, kprobe, pre_handler);
	OFFSET(P_KP_POST, kprobe, post_handler);
	OFFSET(P_KP_FLAGS, kprobe, flags);
	DEFINE(P_KP_FLAGS_OFF, KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED);
	OFFSET(P_RP_HANDLER, kretprobe, handler);
	OFFSET(P_RP_ENTRY, kretprobe, entry_handler);
	OFFSET(P_RP_RPH, kretprobe, rph);
	OFFSET(P_RI_RET_ADDR, kretprobe_instance, ret_addr);
	OFFSET(P_RI_RP, kretprobe_instance, rp);
	OFFSET(P_RI_TASK, kretprobe_instance, task);
	OFFSET(P_H_RP, kretprobe_holder, rp);
	OFFSET(P_H_FREE_HEAD, kretprobe_holder, free_head);
	OFFSET(P_H_FREE_NEXT, kretprobe_holder, free_next);
	OFFSET(P_H_INSTS, kretprobe_holder, insts);
	OFFSET(P_H_STRIDE, kretprobe_holder, stride);
	OFFSET(P_H_VF_HANDLER, kretprobe_holder, vf_handler);
	DEFINE(P_INST_HDR_SIZE, sizeof(struct krp_inst_hdr));
	OFFSET(P_INST_HDR_RPH, krp_inst_hdr, rph);
	OFFSET(P_KT_TASK, krp_thread, task);
	OFFSET(P_KT_SHSTK, krp_thread, shstk);
	OFFSET(P_KT_DEPTH, krp_thread, depth);
	OFFSET(P_KT_SPARE, krp_thread, spare);
	OFFSET(P_KT_E, krp_thread, e);
	DEFINE(P_E_SIZE, sizeof(struct krp_entry));
	OFFSET(P_E_SLOT, krp_entry, slot);
	OFFSET(P_E_RET, krp_entry, ret);
	OFFSET(P_E_RI, krp_entry, ri);
	DEFINE(P_KRP_MAX_DEPTH, KRP_MAX_DEPTH);
}
