/* SPDX-License-Identifier: MIT */
/*
 * raw_syscall.h - x86-64's system call for the agent's own use: no C
 * library wrapper (the program's syscall() may be probed, and in a
 * dynamic program it is the agent's own interposer, raw_fork.c), no
 * errno. [any] context, the hit path and signal handlers included.
 * Returns the kernel's value (-errno on failure).
 */
#ifndef UKPA_RAW_SYSCALL_H
#define UKPA_RAW_SYSCALL_H

/* Always inlined: the instruction is in its caller's code. */
static inline __attribute__((always_inline)) long
ukpa_sys6(long n, long a, long b, long c, long d, long e, long f)
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

#define ukpa_sys(n, a, b, c) ukpa_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define ukpa_sys0(n) ukpa_sys6((n), 0, 0, 0, 0, 0, 0)

#endif /* UKPA_RAW_SYSCALL_H */
