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

/*
 * [reg] The thread control block of a thread of the library's own
 * (base/thread.c), at tp in a zeroed area with room on both sides: what
 * the C library and the compiler read at the thread pointer. x86-64's TCB
 * (the ABI's, as glibc and musl lay it out): its own address at 0 and at
 * 0x10, the dynamic thread vector at 8 (dtv: base/thread.c's, which says
 * "no module's TLS here"), "more than one thread" at 0x18, the stack
 * protector's guard at 0x28 and glibc's pointer guard at 0x30, both the
 * caller's (the same in every thread of the process).
 */
static inline void arch_kthread_tcb(uintptr_t tp, uintptr_t dtv)
{
	uint64_t guard, ptr_guard;

	__asm__ volatile("movq %%fs:0x28, %0" : "=r"(guard));
	__asm__ volatile("movq %%fs:0x30, %0" : "=r"(ptr_guard));
	((uint64_t *)tp)[0] = tp;
	((uint64_t *)tp)[1] = dtv;
	((uint64_t *)tp)[2] = tp;
	((uint32_t *)tp)[6] = 1;
	((uint64_t *)tp)[5] = guard;
	((uint64_t *)tp)[6] = ptr_guard;
}

/* [any] In a spin-wait loop (the kernel's cpu_relax). */
static inline void arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif /* UKP_ARCH_TLS_H */
