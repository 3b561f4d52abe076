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

/* [any] The thread pointer: the TCB's self pointer at %fs:0. */
static inline uintptr_t arch_thread_pointer(void)
{
	uintptr_t tp;

	__asm__("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* [any] In a spin-wait loop (the kernel's cpu_relax). */
static inline void arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif /* UKP_ARCH_TLS_H */
