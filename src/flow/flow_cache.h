/* SPDX-License-Identifier: MIT */
/*
 * flow_cache.h - what the flow check learns of an object's file by
 * decoding all of its code (codeflow.c: the direct targets of its
 * uncovered code, and, for a non-PIE executable, the code addresses its
 * image holds as literals), kept across runs in a per-user directory, as
 * perf keeps build-ids in ~/.debug: the next process that loads the same
 * file reads it instead of decoding megabytes of code again.
 *
 * The directory, who may write it, how many entries it keeps and how
 * an entry is written: base/disk_cache.h (the symbols of debug files,
 * symbols/sym_cache.h, share it).
 *
 * An entry ("flow-HASH") holds its key: the file's device, inode, size,
 * modification and change times, machine and build-id, the library's
 * own build-id (symbols/file_key.h), and a hash of what the build took
 * besides the file's bytes (its segments and symbols: the caller's
 * `inputs`, hashed with ukp_disk_cache_mix). Its values (the index, and
 * the FDEs it was built with, which are the file's when eh_frame.h's
 * file_only says so: only then is an entry stored) are offsets from the
 * load bias (a library's entry serves every address it is loaded at),
 * sorted, with a checksum over the whole entry: a stale, truncated or
 * damaged entry is not used (and is replaced by the next store). An
 * entry is used, and stored, only when the object's executable and
 * read-only segments in the process (ukp_read_original) are the file's
 * bytes: the targets were decoded, and the unwind tables read, from the
 * process. That is known without
 * reading them when the mappings there are of the file opened (device,
 * inode, offsets: /proc/self/maps) and /proc/self/pagemap shows a page
 * not present (a fault reads the file) or present and not anonymous (the
 * page cache's): only the pages written since (our breakpoints, anyone's
 * write: anonymous then) or swapped out are compared with the file.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_FLOW_CACHE_H
#define UKP_FLOW_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/disk_cache.h"
#include "symbols/eh_frame.h"
#include "symbols/symbols.h"

/* What a lookup or store did (tests; ukp_codeflow_index says it). */
enum ukp_flow_cache_use {
	UKP_FLOW_CACHE_OFF,     /* not used: off, or no usable directory or file */
	UKP_FLOW_CACHE_HIT,     /* read from an entry */
	UKP_FLOW_CACHE_MISS,    /* no usable entry */
	UKP_FLOW_CACHE_STORED,  /* built and written */
};

/* What an entry keeps: the index's literals and targets and the
 * object's FDEs (ukp_eh_frame_load's, and its result: 0, or -ENOENT
 * without PT_GNU_EH_FRAME), absolute. */
struct ukp_flow_cached {
	uintptr_t *lits;        /* sorted, unique */
	size_t nlits;
	uintptr_t *targets;     /* sorted, unique */
	size_t ntargets;
	struct ukp_fde *fdes;   /* by start, then end */
	size_t nfdes;
	int eh_err;
	bool has_hdr;
};

/*
 * [reg] The entry of obj (whose segments in the process are segs) for
 * inputs: on a hit, what it keeps in *out (the arrays malloc()ed, NULL
 * when empty; ukp_flow_cached_free) and UKP_FLOW_CACHE_HIT; else
 * UKP_FLOW_CACHE_MISS or _OFF with nothing. -ENOMEM when memory ran out.
 */
int ukp_flow_cache_load(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
			uint64_t inputs, struct ukp_flow_cached *out);
void ukp_flow_cached_free(struct ukp_flow_cached *c);

/* [reg] Keep *c: UKP_FLOW_CACHE_STORED, or _OFF when it could not be
 * written or the FDEs cannot be kept (an eh_err other than 0 and -ENOENT;
 * the caller keeps FDEs only when eh_frame.h's file_only); nothing is
 * said: a cache is no error. */
int ukp_flow_cache_store(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
			 size_t nsegs, uint64_t inputs, const struct ukp_flow_cached *c);

/* Tests: the pages of executable and read-only segments the last key
 * covered, and how
 * many of them it compared with the file (the others the page table
 * showed to be the file's). */
extern size_t ukp_flow_cache_pages, ukp_flow_cache_pages_read;
/* Tests: compare every page, as where the page table cannot be read. */
extern bool ukp_flow_cache_compare_all;

#endif /* UKP_FLOW_CACHE_H */
