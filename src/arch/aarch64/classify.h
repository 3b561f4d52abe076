/* SPDX-License-Identifier: MIT */
/*
 * classify.h - the AArch64 decoder's one entry point (insn.c), shared with
 * the relocation of optimized regions (reloc.c). Private to
 * src/arch/aarch64.
 */
#ifndef UKP_A64_CLASSIFY_H
#define UKP_A64_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/arch.h"

/*
 * [reg] Classify insn into ai (sim and its operands, blocking, why; ai
 * zeroed by the caller). Returns 0 (simulated when ai->sim, else run out
 * of line) or the -errno arch_prepare_insn refuses it with; sets *boost
 * to whether an out-of-line copy may run anywhere with no trap after it
 * (no pc use, no system call, no wait, no trap by design).
 */
int ukp_a64_classify(struct ukp_arch_insn *ai, uint32_t insn, bool *boost);

#endif /* UKP_A64_CLASSIFY_H */
