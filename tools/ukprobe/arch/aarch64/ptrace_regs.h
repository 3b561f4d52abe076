/* SPDX-License-Identifier: MIT */
/* ptrace_regs.h - AArch64's register block for ptrace_arch.h. */
#ifndef UKPROBE_PTRACE_REGS_H
#define UKPROBE_PTRACE_REGS_H

#include <elf.h>
#include <sys/user.h>

#define UKP_ARCH_EM EM_AARCH64
#define UKP_ARCH_R_RELATIVE R_AARCH64_RELATIVE
#define UKP_ARCH_R_ABS64 R_AARCH64_ABS64
#define UKP_ARCH_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define UKP_ARCH_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define UKP_ARCH_LIBDIRS "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"
#define UKP_ARCH_RED_ZONE 0

struct ukp_regs {
	struct user_regs_struct r; /* regs[31], sp, pc, pstate */
};

#endif
