/* SPDX-License-Identifier: MIT */
/*
 * code_refs.h - the addresses of code that a loaded object's dynamic
 * relocations store into memory: function pointers, vtables, and, in
 * position-independent code, every table of label addresses (GNU C's
 * "labels as values", &&label). For the jump-optimization safety check
 * (codeflow.c): a jump through a pointer can only land where some code
 * address was materialized, and in an ET_DYN object an absolute address
 * that lands in memory is either computed by code (a rip-relative lea,
 * which the branch scanner sees) or written by the dynamic loader from
 * one of these relocations. A non-PIE executable needs no relocation for
 * an absolute address: for one, every literal of its image that is a code
 * address counts instead.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_CODE_REFS_H
#define UKP_CODE_REFS_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch_branches.h"
#include "symbols/eh_frame.h"
#include "symbols/symbols.h"

/*
 * Direct transfers that the caller wants from ranges of the object's code
 * (codeflow.c's index): an executable's code is decoded for its literals
 * anyway, and the ranges inside code whose bytes in the process
 * (ukp_read_original) are those of the file are scanned in the same pass
 * (struct arch_literal_scan) and marked done; the caller scans the rest.
 */
struct ukp_code_refs_flow {
	struct arch_flow_range *ranges; /* sorted by start */
	size_t n;
	arch_range_fn fn;
	void *arg;
};

/*
 * [reg] Read the object's dynamic relocations from its file (symbols/elf_read.h) and
 * return, sorted and without duplicates, the addresses they store that
 * lie in one of the executable segments in segs (the object's PT_LOAD
 * segments, as ukp_eh_frame_load found them in memory):
 *   R_X86_64_RELATIVE, IRELATIVE, RELATIVE64 and RELR   base + addend
 *   R_X86_64_64, 32, 32S, GLOB_DAT, JUMP_SLOT            S + addend, S from
 *       .dynsym when the symbol is defined in the object, else the value
 *       the loader stored (read from memory now; a symbol of another
 *       object, or one of ours it was bound to, at its start)
 * Other types (TLS offsets, PC-relative text relocations, COPY) store no
 * absolute code address.
 * A non-PIE executable (ET_EXEC) holds the absolute addresses of its
 * code without relocations: for one, every code address its image holds
 * as a literal is added (code_refs.c, literal_refs): the literals of the
 * instructions of its executable sections (decoded linearly, resuming at
 * each of the nsync sorted addresses of sync - symbol and FDE starts -
 * that a decoding would step over), and every 8-byte word at a 4-byte
 * aligned address of the rest of its loaded image. flow (or NULL): the
 * ranges to scan in the same pass, above.
 * what: UKP_REFS_RELOCS (the relocations' addresses), UKP_REFS_LITERALS
 * (an executable's literals), or both; the file is checked against the
 * image either way (codeflow.c's cache, flow_cache.h, keeps the literals,
 * which the file alone decides, and reads the relocations every time:
 * lazy binding changes what the loader stored).
 * *out is malloc()ed (NULL when *n is 0). Returns 0, or
 *   -ENOTSUP  the object is neither ET_DYN nor ET_EXEC, or has REL
 *             relocations (implicit addends in x86-64 code: not handled)
 *   -ENOENT   the file cannot be read, no longer matches the image, or
 *             its relocation sections do not add up to what its dynamic
 *             section announces (section headers stripped); no decoder
 *             for an executable's code
 *   -ENOMEM
 */
int ukp_code_refs_load(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
		       size_t nsegs, const uintptr_t *sync, size_t nsync,
		       struct ukp_code_refs_flow *flow, unsigned int what, uintptr_t **out,
		       size_t *n);

#define UKP_REFS_RELOCS 1u
#define UKP_REFS_LITERALS 2u

#endif /* UKP_CODE_REFS_H */
