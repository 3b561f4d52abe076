/* SPDX-License-Identifier: MIT */
/*
 * syscall_raw.h - raw system calls for the hit path: no libc wrapper
 * (no errno, no cancellation point, nothing that could be probed).
 * [any] context, signal handlers included. Returns the kernel's value
 * (-errno on failure). AArch64: number in x8, arguments in x0..x5,
 * result in x0, svc #0.
 */
#ifndef UKP_ARCH_SYSCALL_RAW_H
#define UKP_ARCH_SYSCALL_RAW_H

/* Always inlined, at -O0 too: the system call instruction is in its
 * caller's code and section (a thread scan takes a thread blocked in a
 * call for one where its caller is). */

static inline __attribute__((always_inline)) long
arch_syscall4(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3)
			 : "memory");
	return x0;
}

static inline __attribute__((always_inline)) long
arch_syscall3(long n, long a, long b, long c)
{
	return arch_syscall4(n, a, b, c, 0);
}

/* Five and six arguments: mmap, futex with a timeout, clone. */
static inline __attribute__((always_inline)) long
arch_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}

#endif
