/* SPDX-License-Identifier: MIT */
/*
 * opt_region.h - which instruction keeps a probe point from being
 * jump-optimized, named more finely than the optimizer's reason.
 *
 * The optimizer's reason "an instruction in the region is not
 * relocatable (branch, call, system call, ...)" covers a conditional
 * jump, a tail call, an x87 or VEX-encoded instruction alike; the
 * coverage report wants to know which, to tell what optimizing more
 * would take.
 *
 * Context: ordinary code; uses the library's relocator (internal).
 */
#ifndef UKP_BENCH_OPT_REGION_H
#define UKP_BENCH_OPT_REGION_H

#include <stddef.h>
#include <stdint.h>

/*
 * code: the original bytes at the probe point addr (avail of them). Walks
 * the instructions a 5-byte jump would replace and returns a static
 * description of the first one the library's relocator refuses ("jcc",
 * "jmp (tail call)", "call", "ret", "x87", "VEX/EVEX", or the mnemonic),
 * or NULL when it takes them all.
 */
const char *opt_region_blocker(const uint8_t *code, size_t avail, uintptr_t addr);

#endif /* UKP_BENCH_OPT_REGION_H */
