/* SPDX-License-Identifier: MIT */
/*
 * fetch_regs.c - AArch64's register names for %REG (fetch_regs.h): the
 * kernel's (regs_query_register_offset: x0..x30, sp, pc, pstate), then
 * the usual aliases fp and lr. The index is the word in struct pt_regs
 * (include/ukprobes-arch/aarch64.h: regs[31], sp, pc, pstate).
 */
#include "fetch_regs.h"

const struct ukp_fetch_reg ukp_fetch_regs[] = {
	{ "x0", 0 }, { "x1", 1 }, { "x2", 2 }, { "x3", 3 },
	{ "x4", 4 }, { "x5", 5 }, { "x6", 6 }, { "x7", 7 },
	{ "x8", 8 }, { "x9", 9 }, { "x10", 10 }, { "x11", 11 },
	{ "x12", 12 }, { "x13", 13 }, { "x14", 14 }, { "x15", 15 },
	{ "x16", 16 }, { "x17", 17 }, { "x18", 18 }, { "x19", 19 },
	{ "x20", 20 }, { "x21", 21 }, { "x22", 22 }, { "x23", 23 },
	{ "x24", 24 }, { "x25", 25 }, { "x26", 26 }, { "x27", 27 },
	{ "x28", 28 }, { "x29", 29 }, { "x30", 30 }, { "sp", 31 },
	{ "pc", 32 }, { "pstate", 33 }, { "fp", 29 }, { "lr", 30 },
};

const size_t ukp_fetch_nregs = sizeof(ukp_fetch_regs) / sizeof(ukp_fetch_regs[0]);

/* AArch64's DWARF numbers 0..31: x0..x30, sp */
const char *const ukp_fetch_dwarf_regs[] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20",
	"x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",
};

const size_t ukp_fetch_ndwarf_regs = sizeof(ukp_fetch_dwarf_regs) / sizeof(ukp_fetch_dwarf_regs[0]);
