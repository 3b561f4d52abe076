// SPDX-License-Identifier: MIT
/*
 * unported.c - the arch entry points of the feature this AArch64 port
 * does not have yet: data watchpoints (doc/arch.md lists it). Their
 * init answers -EOPNOTSUPP, so register_wide_hw_breakpoint and the
 * others fail with it; their per-hit entry points below are never
 * reached while it refuses, and say so by failing safe.
 */
#include <errno.h>

#include "internal.h"

/* --- data watchpoints */
int arch_watch_init(void)
{
	return -EOPNOTSUPP;
}

UKP_TRAP_TEXT int arch_watch_step(const struct arch_watch_mem *m, struct pt_regs *regs,
				  ucontext_t *uc, struct arch_watch_access *acc, unsigned int *nacc,
				  struct arch_watch_fault *f)
{
	(void)m, (void)regs, (void)uc, (void)acc, (void)f;
	*nacc = 0;
	return -EOPNOTSUPP;
}

UKP_TRAP_TEXT bool arch_watch_fixup(uintptr_t ip, int sig, int code, uintptr_t addr,
				    uintptr_t *fixup_ip)
{
	(void)ip, (void)sig, (void)code, (void)addr, (void)fixup_ip;
	return false;
}

UKP_TRAP_TEXT long arch_watch_probe_write(uintptr_t addr)
{
	(void)addr;
	return -EFAULT;
}

UKP_TRAP_TEXT bool arch_uc_fault_write(const ucontext_t *uc)
{
	(void)uc;
	return false;
}

UKP_TRAP_TEXT void arch_uc_set_single_step(ucontext_t *uc, bool on)
{
	(void)uc, (void)on; /* AArch64 user space has no single-step flag */
}
