/* SPDX-License-Identifier: MIT */
/*
 * arch_tls.h - the thread pointer on x86-64 (%fs base).
 *
 * The trap path must not call libc (a probe there would recurse), yet it
 * needs errno and the thread's identity. With glibc on x86-64 the thread
 * pointer is the thread's struct pthread (pthread_self()), and libc's
 * errno sits at a fixed offset from it (initial-exec TLS), the same in
 * every thread.
 */
#ifndef UKP_ARCH_TLS_H
#define UKP_ARCH_TLS_H

#include <stdint.h>

#include "thread_block.h" /* common/: arch_tb_tp() */

/* [any] The thread pointer: the per-thread block's key
 * (common/arch/x86_64/thread_block_arch.h reads it; one read for both). */
static inline uintptr_t arch_thread_pointer(void)
{
	return arch_tb_tp();
}

/* [any] In a spin-wait loop (the kernel's cpu_relax). */
static inline void arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif /* UKP_ARCH_TLS_H */
