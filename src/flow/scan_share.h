/* SPDX-License-Identifier: MIT */
/*
 * scan_share.h - scans of a whole object's code shared with a helper
 * thread (scan_share.c): the same findings, reported in the same order
 * on the calling thread, as the scan alone.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_SCAN_SHARE_H
#define UKP_SCAN_SHARE_H

#include <stdbool.h>
#include <stddef.h>

#include "arch/arch_branches.h"

/*
 * [reg] arch_scan_literals(sc), the same findings in the same order (but
 * for ranges across chunks, left undone for the caller); a large whole
 * scan (from and to 0) is shared with a helper thread that calls none of
 * sc's callbacks.
 */
int ukp_scan_literals(const struct arch_literal_scan *sc);

/*
 * [reg] arch_scan_flow(&parts[i], 1, 0, 0, ARCH_FLOW_DIRECT_ONLY, ...) of
 * every part, in order, its DIRECT findings reported as fn(arg, i, from,
 * target); a stop as there (fn's non-zero value, returned). Parts of
 * ukp_share_min bytes or more in all are shared with a helper thread,
 * which calls no fn.
 */
int ukp_scan_ranges(const struct arch_code_part *parts, size_t n, arch_range_fn fn, void *arg);

/* The smallest scan to share (bytes), how many scans the helper had a
 * part in, and whether to let the helper start first (tests). */
extern size_t ukp_share_min, ukp_shared_scans;
extern bool ukp_share_wait;

#endif /* UKP_SCAN_SHARE_H */
