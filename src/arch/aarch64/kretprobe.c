// SPDX-License-Identifier: MIT
/*
 * kretprobe.c - AArch64 support for return probes: the frame slot at a
 * function entry and the guarded control stack check (see arch.h,
 * arch_kretprobe.h and kretprobe_tramp.S).
 */
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

#ifndef PR_GET_SHADOW_STACK_STATUS
#define PR_GET_SHADOW_STACK_STATUS 74
#endif
#define PR_SHADOW_STACK_ENABLE (1UL << 0)

/* [reg] The trampoline keeps no vector state of its own: nothing to size. */
int arch_kretprobe_init(void)
{
	return 0;
}

/* [trap] The frame's identity: the stack pointer at the entry, which the
 * function's return leaves as it found it. */
UKP_TRAP_TEXT uintptr_t arch_kretprobe_ret_slot(const struct pt_regs *regs)
{
	return regs->sp;
}

/* [any] A guarded control stack (GCS) checks every return against its
 * own copy: the link register cannot be swapped then. A raw system call:
 * this runs on the hit path (a thread's first return probe), where libc
 * may be probed, and a lazily bound PLT slot would take the walk of the
 * vector-use proof into the dynamic linker's resolver. */
bool arch_shadow_stack_active(void)
{
	unsigned long status = 0;

	return arch_syscall4(SYS_prctl, PR_GET_SHADOW_STACK_STATUS, (long)&status, 0, 0) == 0 &&
	       (status & PR_SHADOW_STACK_ENABLE);
}
