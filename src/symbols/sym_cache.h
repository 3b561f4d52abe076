/* SPDX-License-Identifier: MIT */
/*
 * sym_cache.h - the symbols of an object's debug file (or MiniDebugInfo)
 * kept across runs in the per-user cache (base/disk_cache.h): the first
 * look-up that misses an object's own table reads the whole debug
 * symbol table (libc6-dbg's names libc's local functions, thousands of
 * them) and sorts it; the next process reads them back from one file,
 * already in table order, each with its place among the object's own:
 * no sort, no comparison.
 *
 * An entry ("syms-HASH") holds its key: the object's file
 * (symbols/file_key.h: device, inode, size, times, machine, build-id,
 * and the library's own build-id), where its symbols came from (a debug
 * file found by build-id or debuglink, or the MiniDebugInfo) and that
 * debug file's device, inode, size and times. Then the functions and
 * the data symbols as the symbol table's reading made them (offsets
 * from the load bias, sizes, section ends, binding, type, the name's
 * offset among the names), each kind in table order (symbols.c's
 * address order, best alias first) with its place among the object's
 * own symbols, then the names themselves, with a checksum over the
 * whole entry. A stale key, a truncated, damaged or
 * inconsistent entry is not used (the symbols are read from the debug
 * file again, and stored over it).
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_SYM_CACHE_H
#define UKP_SYM_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/disk_cache.h"
#include "symbols/debuginfo.h"
#include "symbols/file_key.h"
#include "symbols/sym_table.h"

struct ukp_sym_cache_key {
	char magic[8];
	uint32_t version, kind; /* kind: the debug source (sym_cache.c) */
	struct ukp_file_key obj;
	struct ukp_disk_cache_file debug; /* zero for MiniDebugInfo (obj's own) */
};

/* [reg] The key of the debug symbols of the object file elf (as st
 * describes it) from the source of kind ("build-id", "debuglink",
 * "gnu_debugdata": ukp_debugsrc's) whose debug file dst describes (NULL
 * for MiniDebugInfo): false when none can be made (no cache then). */
bool ukp_sym_cache_key(const struct ukp_elf *elf, const struct stat *st, const char *kind,
		       const struct stat *dst, struct ukp_sym_cache_key *k);

/*
 * [reg] The entry of key k, for an object loaded at base whose own
 * symbols (before any debug source joined them) are own[nown] and
 * down[ndown] (data): 1 on a hit, with rd->syms[rd->n] the object's
 * functions joined with the entry's, as symbols.c joins a debug
 * source's (table order, its repeats of the object's own left out),
 * rd->dsyms[rd->dn] the data likewise, rd->strings the entry's names
 * (all malloc()ed); 0 on a miss (or the cache off), rd empty; -ENOMEM.
 */
int ukp_sym_cache_load(const struct ukp_sym_cache_key *k, uintptr_t base,
		       const struct ukp_sym *own, size_t nown, const struct ukp_sym *down,
		       size_t ndown, struct ukp_symread *rd);

/* [reg] Keep the debug source's symbols of the object (loaded at base)
 * whose tables syms[n] and dsyms[dn] have just joined them (the debug
 * ones, each with its place among the object's own), their names all in
 * strings[strbytes]. True when stored (false is no error). */
bool ukp_sym_cache_store(const struct ukp_sym_cache_key *k, uintptr_t base,
			 const struct ukp_sym *syms, size_t n, const struct ukp_sym *dsyms,
			 size_t dn, const char *strings, size_t strbytes);

/* What the last load or store did (tests). */
enum ukp_sym_cache_use {
	UKP_SYM_CACHE_OFF,      /* not used: off, or no key or directory */
	UKP_SYM_CACHE_HIT,      /* read from an entry */
	UKP_SYM_CACHE_MISS,     /* no usable entry */
	UKP_SYM_CACHE_STORED,   /* read from the debug file and written */
};
extern enum ukp_sym_cache_use ukp_sym_cache_last;

#endif /* UKP_SYM_CACHE_H */
