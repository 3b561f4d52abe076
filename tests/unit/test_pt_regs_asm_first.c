// SPDX-License-Identifier: MIT
/*
 * test_pt_regs_asm_first.c - <asm/ptrace.h> before <ukprobes.h>: both
 * compile in one file, and a handler written after them gets the
 * library's struct pt_regs (kernel names: ip, ax), which sees the hit.
 * test_pt_regs_asm_after.c checks the other order.
 */
#include <asm/ptrace.h>
#include <ukprobes.h>

#include "pt_regs_check.h"
