/* SPDX-License-Identifier: MIT */
/*
 * syscall_raw.h - raw system calls, arch_syscall3/4/6(), for the
 * library's hit path and for the agent (common/arch/ARCH/syscall_raw.h):
 * no C library wrapper, no errno. [any] context, signal handlers
 * included.
 */
#ifndef UKP_SYSCALL_RAW_H
#define UKP_SYSCALL_RAW_H

#if defined(__x86_64__)
#include "arch/x86_64/syscall_raw.h"
#elif defined(__aarch64__)
#include "arch/aarch64/syscall_raw.h"
#else
#error "no raw system calls for this architecture"
#endif

#endif /* UKP_SYSCALL_RAW_H */
