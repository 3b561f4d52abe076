/* SPDX-License-Identifier: MIT */
/* ptrace_regs.h - x86-64's register block for ptrace_arch.h. */
#ifndef UKPROBE_PTRACE_REGS_H
#define UKPROBE_PTRACE_REGS_H

#include <elf.h>
#include <sys/user.h>

#define UKP_ARCH_EM EM_X86_64
#define UKP_ARCH_R_RELATIVE R_X86_64_RELATIVE
#define UKP_ARCH_R_ABS64 R_X86_64_64
#define UKP_ARCH_R_GLOB_DAT R_X86_64_GLOB_DAT
#define UKP_ARCH_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define UKP_ARCH_LIBDIRS "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"
#define UKP_ARCH_RED_ZONE 128

struct ukp_regs {
	struct user_regs_struct r;
};

#endif
