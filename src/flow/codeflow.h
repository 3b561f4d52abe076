/* SPDX-License-Identifier: MIT */
/*
 * codeflow.h - may a region of code be replaced by one jump? The control
 * flow part of the jump optimization's safety check (kprobes.rst, "Safety
 * Check"; the kernel's can_optimize()). Whether the instructions of the
 * region can run from a detour buffer is the arch relocator's question,
 * not this one.
 *
 * The room src/flow/ (codeflow.c, code_refs.c, scan_share.c,
 * code_walk.c, func_entry.c): questions about the program's code, asked
 * by the engine. It calls only src/base/, src/symbols/, src/text/ and
 * the arch, never the core or the optimizer (scripts/check_layers.py).
 *
 * Context: [reg] registration time, registry mutex held, may allocate.
 */
#ifndef UKP_CODEFLOW_H
#define UKP_CODEFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/symbols.h"

/*
 * [reg] May [addr, addr + len) be overwritten by one jump, as far as
 * control flow goes?
 * sym: the function containing addr (from ukp_sym_lookup_addr; start/size
 * bound it).
 * Checks: the region lies inside the function and no other symbol starts
 * strictly inside it; no direct jmp/jcc/loop/jrcxz/call/xbegin anywhere in
 * the function, in its GCC ".cold" parts (symbols named NAME.cold or
 * NAME.cold.N in the same object, NAME being any alias of the function),
 * or in code of the object that no symbol covers (candidate cold parts of
 * stripped libraries: the object's .eh_frame FDE ranges not inside any
 * function symbol) targets an address strictly inside (addr, addr+len);
 * every indirect jump in the function and its cold parts has known
 * targets (a resolved jump table) that avoid (addr, addr+len), or is a
 * jump through a pointer loaded from memory or passed by the caller, on
 * every path into the jump (a tail call through a function pointer or
 * the GOT) in a function that takes no address of its own code
 * (codeflow.c, "the pointer rule"); no exception landing pad of the
 * function or its cold parts (their FDEs' LSDAs) is strictly inside the
 * region; no address strictly inside the region is stored by the
 * object's dynamic relocations, held as a literal by a non-PIE
 * executable, or computed by a lea of the function ("the taken-address
 * rule").
 * Returns 0, or a negative errno with *why set to a static English text
 * naming the reason (shown to users in probe listings and reports):
 *   -EBUSY       something jumps into the region (or another function or
 *                a landing pad starts inside it, or its address is taken)
 *   -EOPNOTSUPP  an indirect jump with unknown targets (or code or an
 *                exception table that cannot be analysed)
 *   -EINVAL      the region leaves the function (or is empty)
 *   -ENOENT      the function's object is no longer loaded
 *   -ENOMEM
 * The per-object index (targets of uncovered code, cold parts, FDEs) is
 * built on the first check in an object and kept until
 * ukp_codeflow_forget_dead() finds the object gone.
 */
int ukp_codeflow_check(const struct ukp_symres *sym, uintptr_t addr, size_t len, const char **why);

/*
 * [reg] The same for a region whose code ends at addr + code_len (<= len)
 * with an instruction that leaves (ret, jmp; arch_opt_prepare's
 * code_len): the bytes after it are overwritten but never run from the
 * copy. They may go past the function's end (a function shorter than
 * the jump) when [addr, addr + code_len) is inside the function and the
 * rest is the padding before the next function: fill bytes
 * (arch_is_padding) that no symbol and no FDE covers (the object must
 * have unwind tables), and that, like the whole region, no known jump,
 * landing pad or other symbol's start lands in. Else -EINVAL ("the region
 * leaves the function ..."). code_len == len is ukp_codeflow_check.
 */
int ukp_codeflow_check_exit(const struct ukp_symres *sym, uintptr_t addr, size_t len,
			    size_t code_len, const char **why);

/* [any] If name (keylen bytes, before any "@version") names a GCC cold
 * part, "<base>.cold" or "<base>.cold.<digits>", the length of <base>;
 * else 0. */
size_t ukp_cold_base_len(const char *name, size_t keylen);

/*
 * [reg] Forget the per-object caches of objects that are no longer loaded
 * (ukp_object_alive) - call after dlclose. After ukp_symbols_reset()
 * every object counts as gone, so this forgets all of them (tests).
 */
void ukp_codeflow_forget_dead(void);
/* [reg] Forget the answers remembered since the last call (the checks
 * remember theirs until then: a region is asked about again before it
 * is registered; ukp_codeflow_forget_dead forgets them too). */
void ukp_codeflow_memo_forget(void);

/* What ukp_codeflow_index found. */
struct ukp_codeflow_index {
	uintptr_t *targets;     /* direct targets of uncovered code, sorted, unique */
	size_t ntargets;
	uintptr_t *refs;        /* code references (code_refs.h), sorted, unique */
	size_t nrefs;
	int refs_err;           /* ukp_code_refs_load's result */
	size_t nranges;         /* ranges of code indexed */
	size_t nalone;          /* ... of which decoded on their own */
	size_t nfdes;           /* the FDEs the index was built with, */
	uint64_t fdes_hash;     /* ... a hash of them (offsets from the load bias), */
	int eh_err;             /* ... and ukp_eh_frame_load's result */
	bool cached;            /* in: through the cache (flow_cache.h), as the
				 * check builds it (one pass) */
	int cache_use;          /* out: enum ukp_flow_cache_use */
};

/*
 * [reg] What the check knows of obj, built afresh and not kept (tests):
 * with the index's ranges decoded in the literal scan of a non-PIE
 * executable (one_pass, as the check builds it), or each on its own.
 * With out->cached set (the rest of *out zeroed), through the cache as
 * the check's own build goes. The arrays are malloc()ed. Returns 0 or the
 * build's error.
 */
int ukp_codeflow_index(const struct ukp_object *obj, bool one_pass,
		       struct ukp_codeflow_index *out);

#endif /* UKP_CODEFLOW_H */
