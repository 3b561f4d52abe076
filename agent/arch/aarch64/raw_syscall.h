/* SPDX-License-Identifier: MIT */
/*
 * raw_syscall.h - AArch64's system call for the agent's own use: no C
 * library wrapper (the program's syscall() may be probed), no errno.
 * [any] context, the hit path and signal handlers included. Returns the
 * kernel's value (-errno on failure). Number in x8, arguments in
 * x0..x5, result in x0.
 */
#ifndef UKPA_RAW_SYSCALL_H
#define UKPA_RAW_SYSCALL_H

/* Always inlined: the instruction is in its caller's code. */
static inline __attribute__((always_inline)) long
ukpa_sys6(long n, long a, long b, long c, long d, long e, long f)
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

#define ukpa_sys(n, a, b, c) ukpa_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define ukpa_sys0(n) ukpa_sys6((n), 0, 0, 0, 0, 0, 0)

#endif /* UKPA_RAW_SYSCALL_H */
