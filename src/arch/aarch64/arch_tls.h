/* SPDX-License-Identifier: MIT */
/*
 * arch_tls.h - the thread pointer on AArch64 (TPIDR_EL0).
 *
 * The trap path must not call libc (a probe there would recurse), yet it
 * needs errno and the thread's identity. glibc keeps the thread pointer
 * in TPIDR_EL0 (TLS variant 1: it points at the thread control block,
 * which follows struct pthread), and libc's errno sits at a fixed offset
 * from it (initial-exec TLS), the same in every thread. The thread
 * pointer identifies the thread; unlike x86-64 it is not pthread_self().
 */
#ifndef UKP_ARCH_TLS_H
#define UKP_ARCH_TLS_H

#include <stdint.h>

#include "thread_block.h" /* common/: arch_tb_tp() */

/* [any] The thread pointer: the per-thread block's key
 * (common/arch/aarch64/thread_block_arch.h reads it; one read for both). */
static inline uintptr_t arch_thread_pointer(void)
{
	return arch_tb_tp();
}

/*
 * [reg] The thread control block of a thread of the library's own
 * (base/thread.c), at tp in a zeroed area with room on both sides.
 * AArch64's (TLS variant 1) holds the dynamic thread vector's address
 * (dtv: base/thread.c's, which says "no module's TLS here") and nothing
 * the compiler reads: the stack protector's guard is a global.
 */
static inline void arch_kthread_tcb(uintptr_t tp, uintptr_t dtv)
{
	((uint64_t *)tp)[0] = dtv;
}

/* [any] In a spin-wait loop (the kernel's cpu_relax). */
static inline void arch_cpu_relax(void)
{
	__asm__ volatile("yield" ::: "memory");
}

#endif /* UKP_ARCH_TLS_H */
