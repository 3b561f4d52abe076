/* SPDX-License-Identifier: MIT */
/*
 * func_entry.h - is a function entry reached by calls? A return probe
 * swaps the word on top of the stack at the entry for its trampoline:
 * that word must be the return address of a call.
 *
 * Context: [reg] registration time, registry mutex held, may allocate.
 */
#ifndef UKP_FUNC_ENTRY_H
#define UKP_FUNC_ENTRY_H

#include <stdint.h>

#include "symbols/symbols.h"

/*
 * [reg] addr is sym's entry (the kernel's kprobe_on_func_entry: its
 * start, or past its endbr64). Is it entered by calls, with the return
 * address on top of the stack? Refused (-EINVAL, *why a static English
 * text naming the reason):
 *  - the ELF entry point of its object (the program's _start, ld.so's
 *    _start): the kernel enters it with argc where a return address
 *    would be;
 *  - a GCC cold part (NAME.cold, NAME.cold.N): reached by jumps from
 *    NAME, never called;
 *  - any address where the object's call frame information says the
 *    return address is not on top of the stack: the CFA is not the stack
 *    pointer plus the return address's size, or the return address is
 *    not saved right below it (undefined in an outermost frame, or code
 *    entered by a jump after its function pushed something).
 * Where no FDE covers addr only the first two rules apply. Returns 0 when
 * nothing refuses it (or the tables cannot be read: -EILSEQ is not a
 * refusal), -EINVAL, or -ENOMEM.
 */
int ukp_func_entry_called(const struct ukp_symres *sym, uintptr_t addr, const char **why);

#endif /* UKP_FUNC_ENTRY_H */
