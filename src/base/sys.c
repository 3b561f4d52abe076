/* SPDX-License-Identifier: MIT */
/*
 * sys.c - the system as every layer may use it, in any context: raw
 * system calls that go past libc (whose wrappers may be probed, and set
 * errno), and where the calling thread's errno lives.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "base/base.h"

/* [any] */
UKP_TRAP_TEXT long ukp_sys_sigprocmask(int how, const uint64_t *set, uint64_t *old)
{
	return arch_syscall4(__NR_rt_sigprocmask, how, (long)set, (long)old, 8);
}

UKP_TRAP_TEXT int ukp_sys_gettid(void)
{
	return (int)arch_syscall3(__NR_gettid, 0, 0, 0);
}

UKP_TRAP_TEXT int ukp_sys_getpid(void)
{
	return (int)arch_syscall3(__NR_getpid, 0, 0, 0);
}

UKP_TRAP_TEXT long ukp_sys_tgkill(int pid, int tid, int sig)
{
	return arch_syscall3(__NR_tgkill, pid, tid, sig);
}

long ukp_errno_offset;

/* [reg] Where errno lives relative to the thread pointer (the same for
 * every thread: libc's TLS is initial-exec). */
void ukp_errno_init(void)
{
	ukp_errno_offset = (long)((uintptr_t)&errno - arch_thread_pointer());
}
