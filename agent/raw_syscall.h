/* SPDX-License-Identifier: MIT */
/*
 * raw_syscall.h - system calls for the agent's own use, the library's
 * raw ones (common/syscall_raw.h): no C library wrapper (the program's
 * syscall() may be probed, and in a dynamic program it is the agent's
 * own interposer, raw_fork.c), no errno. [any] context, the hit path and
 * signal handlers included. Return the kernel's value (-errno on
 * failure).
 */
#ifndef UKPA_RAW_SYSCALL_H
#define UKPA_RAW_SYSCALL_H

#include "syscall_raw.h"

#define ukpa_sys6(n, a, b, c, d, e, f)                                                        \
	arch_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
#define ukpa_sys(n, a, b, c) arch_syscall6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define ukpa_sys0(n) arch_syscall6((n), 0, 0, 0, 0, 0, 0)

#endif /* UKPA_RAW_SYSCALL_H */
