/* SPDX-License-Identifier: MIT */
/*
 * fetch_regs.h - the register names a fetch argument's %REG may give, one
 * table per architecture (common/arch/ARCH/fetch_regs.c, the one the
 * build is for): the kernel's names (regs_query_register_offset) and the
 * usual other spellings, each with its word in struct pt_regs. The SPEC
 * parser looks names up in it; the agent's fetch reads that word.
 *
 * [any] constant data.
 */
#ifndef UKPROBE_FETCH_REGS_H
#define UKPROBE_FETCH_REGS_H

#include <stddef.h>

struct ukp_fetch_reg {
	const char *name;         /* without the '%' */
	int index;                /* the word in struct pt_regs */
};

extern const struct ukp_fetch_reg ukp_fetch_regs[];
extern const size_t ukp_fetch_nregs;

/* The registers by their DWARF numbers (the architecture's psABI), as
 * names of the table above: what a variable's location names becomes a
 * %REG fetch. */
extern const char *const ukp_fetch_dwarf_regs[];
extern const size_t ukp_fetch_ndwarf_regs;

#endif /* UKPROBE_FETCH_REGS_H */
