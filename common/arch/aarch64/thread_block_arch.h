/* SPDX-License-Identifier: MIT */
/*
 * thread_block_arch.h - the per-thread block on AArch64 (common/thread_block.h).
 *
 * TPIDR_EL0 is the runtime's thread pointer and the only writable one:
 * blocks are found in the arena as a lock-free table keyed by it (a
 * thread's block sits at its first slot unless that one was taken). A
 * thread started by the raw clone without CLONE_SETTLS has its
 * creator's thread pointer, hence its block.
 */
#ifndef UKP_THREAD_BLOCK_ARCH_H
#define UKP_THREAD_BLOCK_ARCH_H

#include <stdint.h>

/* [any] */
static inline uintptr_t arch_tb_tp(void)
{
	uintptr_t tp;

	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}

/* [any] The calling thread's block if found at its first slot, else NULL. */
static inline void *arch_tb_find(void)
{
	return ukp_tb_table_find(arch_tb_tp());
}

#endif
