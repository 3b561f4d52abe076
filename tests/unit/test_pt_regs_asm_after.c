// SPDX-License-Identifier: MIT
/*
 * test_pt_regs_asm_after.c - <ukprobes.h> before <asm/ptrace.h> (and
 * <sys/ptrace.h> after both, whose PTRACE_* requests <asm/ptrace-abi.h>
 * would clash with): everything compiles in one file and the handler
 * sees the hit through the library's struct pt_regs.
 */
#include <ukprobes.h>
#include <asm/ptrace.h>
#include <sys/ptrace.h>

#include "pt_regs_check.h"

Test(pt_regs_header, sys_ptrace_requests_usable)
{
	cr_assert_eq((int)PTRACE_GETREGSET, 0x4204);
}
