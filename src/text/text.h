/* SPDX-License-Identifier: MIT */
/*
 * text/text.h - the program's code as the library sees and changes it
 * (src/text/): writing code (text_patch.c), the code as it was before
 * the library's breakpoints and jumps (text_view.c: the layers that
 * patch code tell it how to undo their patches), instruction
 * boundaries (insn_bounds.c) and executable slots near the code
 * (insn_slot.c). Calls only src/base/, src/symbols/ and the arch.
 */
#ifndef UKP_TEXT_H
#define UKP_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "symbols/symbols.h"

struct ukp_site;

/* ---------------------------------------------------------- text view */
/* text_view.c: the code bytes at addr as the program has them, without
 * the library's breakpoints and jumps; returns how many were readable.
 * [reg] */
size_t ukp_read_original(uintptr_t addr, uint8_t *buf, size_t len);
/* [reg] A layer that patches code registers how to undo its patches in
 * a copy of the code at addr (buf holds len bytes read from there): the
 * core its breakpoints, the optimizer its jumps. Called at their init. */
typedef void (*ukp_text_unpatch_fn)(uintptr_t addr, uint8_t *buf, size_t len);
void ukp_text_view_register(ukp_text_unpatch_fn fn);

/* ------------------------------------------------------------- text */
/* text_patch.c */
int ukp_text_poke(uintptr_t addr, const void *buf, size_t len); /* [reg] */
/* One code write of a batch (ukp_text_poke_many). */
struct ukp_poke {
	uintptr_t addr;
	const void *buf;
	size_t len;
};
int ukp_text_poke_many(struct ukp_poke *v, size_t n); /* [reg] sorts v */
/* The breakpoint instruction's bytes, as written over a probed address. */
extern const uint8_t ukp_breakpoint_insn[UKP_BREAKPOINT_SIZE];
/* [any] Fill n bytes (a multiple of UKP_BREAKPOINT_SIZE) with breakpoints,
 * so that a stray jump into unused code traps. */
void ukp_fill_breakpoints(void *p, size_t n);
bool ukp_text_sync(void);                     /* [reg] serialize every thread */
int ukp_text_init(void);                      /* [reg] */
void ukp_text_after_fork(void);               /* [any] */
void ukp_text_release(void);                  /* [reg] ukprobes_shutdown */

/* insn_bounds.c: instruction boundaries, decoded once per function
 * during a batch. 0, -EILSEQ, or 1 when not known (decode as usual). */
int ukp_bounds_check(const struct ukp_symres *sym, size_t off); /* [reg] */
void ukp_bounds_forget(void);                 /* [reg] at a batch's end */

/* insn_slot.c */
uintptr_t ukp_slot_alloc(uintptr_t near);     /* [reg] 0 when none in reach */
void ukp_slot_free(uintptr_t slot);           /* [reg] no thread may be inside */
void ukp_slot_set_owner(uintptr_t slot, struct ukp_site *s); /* [reg] */
struct ukp_site *ukp_slot_owner(uintptr_t addr, uintptr_t *slot); /* [trap] */

/* n consecutive slots (a detour buffer), freed and owned together. */
uintptr_t ukp_slot_alloc_n(uintptr_t near, unsigned int n); /* [reg] */
void ukp_slot_free_n(uintptr_t slot, unsigned int n);      /* [reg] */
void ukp_slot_set_owner_n(uintptr_t slot, unsigned int n, struct ukp_site *s); /* [reg] */
/* A detour placed in a window [lo, hi] (a punned jump's), or only the
 * place it would take (take false); every slot it overlaps is its. */
uintptr_t ukp_slot_alloc_window(uintptr_t lo, uintptr_t hi, size_t len, bool take); /* [reg] */
void ukp_slot_free_range(uintptr_t a, size_t len);          /* [reg] */
void ukp_slot_set_owner_range(uintptr_t a, size_t len, struct ukp_site *s); /* [reg] */

bool ukp_slot_have_free(uintptr_t near);      /* [reg] a slot without a new chunk */

/* Set while membarrier cannot serialize the threads after a code
 * write (text_patch.c): the grace periods' readers fence instead
 * (process/process.h's ukp_read_lock). */
extern _Atomic bool ukp_reader_fence;

#endif /* UKP_TEXT_H */
