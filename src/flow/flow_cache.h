/* SPDX-License-Identifier: MIT */
/*
 * flow_cache.h - what the flow check learns of an object's file by
 * decoding all of its code (codeflow.c: the direct targets of its
 * uncovered code, and, for a non-PIE executable, the code addresses its
 * image holds as literals), kept across runs in a per-user directory, as
 * perf keeps build-ids in ~/.debug: the next process that loads the same
 * file reads it instead of decoding megabytes of code again.
 *
 * Where: $UKPROBES_CACHE when it names a directory (an absolute path),
 * else $XDG_CACHE_HOME/ukprobes, else $HOME/.cache/ukprobes;
 * UKPROBES_CACHE=0 turns it off, as does a program whose effective user
 * is not its real one. A directory keeps ukp_flow_cache_max entries at
 * most (the oldest written go first). The directory must belong to the effective user
 * and be writable by no one else (made so, mode 0700, when missing);
 * an entry must belong to the user, be writable by no one else and be a
 * regular file, or it is not read.
 *
 * An entry is named by a hash of its key and holds the key itself: the
 * file's device, inode, size, modification and change times and
 * build-id, the machine, and a hash of what the build took besides the
 * file's bytes (its segments, symbols, FDEs, ranges: the caller's
 * `inputs`). Its values are offsets from the load bias (a library's
 * entry serves every address it is loaded at), sorted, with a checksum
 * over the whole entry: a stale, truncated or damaged entry is not used
 * (and is replaced by the next store). Stores write a temporary file in
 * the directory and rename it over the entry: a reader sees a whole
 * entry or none. An entry is used, and stored, only when the object's
 * executable segments in the process (ukp_read_original) are the file's
 * bytes: the targets were decoded from the process.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_FLOW_CACHE_H
#define UKP_FLOW_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/eh_frame.h"
#include "symbols/symbols.h"

/* What a lookup or store did (tests; ukp_codeflow_index says it). */
enum ukp_flow_cache_use {
	UKP_FLOW_CACHE_OFF,     /* not used: off, or no usable directory or file */
	UKP_FLOW_CACHE_HIT,     /* read from an entry */
	UKP_FLOW_CACHE_MISS,    /* no usable entry */
	UKP_FLOW_CACHE_STORED,  /* built and written */
};

/* A hash of words, for the caller's inputs: h = ukp_flow_cache_mix(h, w). */
static inline uint64_t ukp_flow_cache_mix(uint64_t h, uint64_t w)
{
	h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/*
 * [reg] The entry of obj (whose segments in the process are segs) for
 * inputs: on a hit, the literals and targets, absolute, sorted and
 * unique (malloc()ed, NULL when none), and UKP_FLOW_CACHE_HIT; else
 * UKP_FLOW_CACHE_MISS or _OFF with nothing. -ENOMEM when memory ran out.
 */
int ukp_flow_cache_load(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
			uint64_t inputs, uintptr_t **lits, size_t *nlits, uintptr_t **targets,
			size_t *ntargets);

/* [reg] Keep them (sorted and unique): UKP_FLOW_CACHE_STORED, or _OFF when
 * they could not be written (nothing is said: a cache is no error). */
int ukp_flow_cache_store(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
			 size_t nsegs, uint64_t inputs, const uintptr_t *lits, size_t nlits,
			 const uintptr_t *targets, size_t ntargets);

/* Tests: a directory to use instead of the environment's ("" or NULL:
 * the environment's), and whether the cache is off for this process. */
extern const char *ukp_flow_cache_dir_override;
extern bool ukp_flow_cache_off;
/* The most entries a directory keeps: a store into a full one removes the
 * entries written longest ago first (tests lower it). */
extern size_t ukp_flow_cache_max;

#endif /* UKP_FLOW_CACHE_H */
