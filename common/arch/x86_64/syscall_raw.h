/* SPDX-License-Identifier: MIT */
/*
 * syscall_raw.h - raw system calls for the hit path: no libc wrapper
 * (no errno, no cancellation point, nothing that could be probed).
 * [any] context, signal handlers included. Returns the kernel's value
 * (-errno on failure).
 */
#ifndef UKP_ARCH_SYSCALL_RAW_H
#define UKP_ARCH_SYSCALL_RAW_H

/* Always inlined, at -O0 too: the system call instruction is in its
 * caller's code and section (a thread scan takes a thread blocked in a
 * call for one where its caller is). */

static inline __attribute__((always_inline)) long
arch_syscall4(long n, long a, long b, long c, long d)
{
	long ret;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline __attribute__((always_inline)) long
arch_syscall3(long n, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Five and six arguments: mmap, futex with a timeout, clone. */
static inline __attribute__((always_inline)) long
arch_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

#endif
