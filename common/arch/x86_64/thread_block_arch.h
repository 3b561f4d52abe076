/* SPDX-License-Identifier: MIT */
/*
 * thread_block_arch.h - the per-thread block on x86-64 (common/thread_block.h).
 *
 * glibc, musl and Go's user code leave %gs alone: each thread's GS base
 * is its block's address less ARCH_TB_GS_BIAS (set by the thread itself,
 * lazily, with wrgsbase: FSGSBASE, Linux 5.9 on), and the block's words
 * are read %gs-relative, as cheaply as an initial-exec TLS variable. The
 * bias makes a GS base of 0 (a thread that never had a block) read the
 * library's zero page at that address instead of faulting: its owner
 * word, ~0, is no thread's (nor 0, a Go thread's %fs:0 before its first
 * look-up: arch_tb_tp). A clone()d thread inherits its creator's GS
 * base, so a block records its owner's thread pointer and a mismatch
 * means a new thread.
 *
 * When that page cannot be mapped, and after the arena was unmapped once
 * (other threads' GS bases may still point into it), the GS base is read
 * with rdgsbase and checked against the arena first. Without FSGSBASE,
 * or for a thread whose GS base is someone else's (not the arena's: never
 * written over), blocks are found in the arena as a table keyed by the
 * thread pointer (ukp_tb_table_find).
 */
#ifndef UKP_THREAD_BLOCK_ARCH_H
#define UKP_THREAD_BLOCK_ARCH_H

#include <stddef.h>
#include <stdint.h>

/* the lowest address mmap allows by default (vm.mmap_min_addr) */
#define ARCH_TB_GS_BIAS 0x10000UL

/* [any] (only when the CPU and kernel allow FSGSBASE) */
static inline uintptr_t arch_tb_rdgsbase(void)
{
	uintptr_t g;

	__asm__ volatile("rdgsbase %0" : "=r"(g));
	return g;
}

/* [any] The thread's key: the TCB's self pointer (glibc, musl), which
 * is the FS base, read as cheaply as a TLS variable (rdfsbase costs
 * more). Go's runtime keeps no self pointer there (ukp_tb_go): a Go
 * thread's word at %fs:0 is 0 until its first look-up here writes its
 * FS base into it (the fast paths then compare %fs:0 as for C threads;
 * a thread's FS base is its own: Go clones with CLONE_SETTLS). */
static inline uintptr_t arch_tb_tp(void)
{
	uintptr_t tp;

	__asm__("movq %%fs:0, %0" : "=r"(tp));
	if (__builtin_expect(!tp, 0) && ukp_tb_go) {
		__asm__ volatile("rdfsbase %0" : "=r"(tp));
		__asm__ volatile("movq %0, %%fs:0" : : "r"(tp) : "memory");
	}
	return tp;
}

/* [any] The calling thread's block if it has one and it is found the
 * fast way, else NULL (then ukp_thread_block_slow). */
static inline void *arch_tb_find(void)
{
	uintptr_t owner, g;
	void *self;

	if (__builtin_expect(ukp_tb_gs_fast != 0, 1)) {
		/* (volatile: a wrgsbase in between is not seen by the compiler) */
		__asm__ volatile("movq %%gs:%c1, %0"
				 : "=r"(owner)
				 : "i"(ARCH_TB_GS_BIAS + offsetof(struct ukp_tb_head, owner)));
		if (owner != arch_tb_tp())
			return NULL;
		__asm__ volatile("movq %%gs:%c1, %0"
				 : "=r"(self)
				 : "i"(ARCH_TB_GS_BIAS + offsetof(struct ukp_tb_head, self)));
		return self;
	}
	if (!ukp_tb_gs_lo)
		return ukp_tb_table_find(arch_tb_tp());
	g = arch_tb_rdgsbase() + ARCH_TB_GS_BIAS;
	if (g - ukp_tb_gs_lo >= UKP_TB_ARENA ||
	    atomic_load_explicit(&((struct ukp_tb_head *)g)->owner, memory_order_relaxed) !=
		    arch_tb_tp())
		return NULL;
	return (void *)g;
}

#endif
