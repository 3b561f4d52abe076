/* SPDX-License-Identifier: MIT */
/*
 * fetch_regs.c - x86-64's register names for %REG (fetch_regs.h): the
 * kernel's, then the r-spellings. The index is the word in struct
 * pt_regs (include/ukprobes.h: r15 first, ss last).
 */
#include "fetch_regs.h"

const struct ukp_fetch_reg ukp_fetch_regs[] = {
	{ "r15", 0 }, { "r14", 1 }, { "r13", 2 }, { "r12", 3 },
	{ "bp", 4 }, { "bx", 5 }, { "r11", 6 }, { "r10", 7 },
	{ "r9", 8 }, { "r8", 9 }, { "ax", 10 }, { "cx", 11 },
	{ "dx", 12 }, { "si", 13 }, { "di", 14 }, { "orig_ax", 15 },
	{ "ip", 16 }, { "cs", 17 }, { "flags", 18 }, { "sp", 19 },
	{ "ss", 20 },
	{ "rbp", 4 }, { "rbx", 5 }, { "rax", 10 }, { "rcx", 11 },
	{ "rdx", 12 }, { "rsi", 13 }, { "rdi", 14 }, { "rip", 16 },
	{ "eflags", 18 }, { "rsp", 19 }, { "orig_rax", 15 },
};

const size_t ukp_fetch_nregs = sizeof(ukp_fetch_regs) / sizeof(ukp_fetch_regs[0]);

/* The x86-64 psABI's DWARF numbers 0..16 (16: the return address) */
const char *const ukp_fetch_dwarf_regs[] = {
	"ax", "dx", "cx", "bx", "si", "di", "bp", "sp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ip",
};

const size_t ukp_fetch_ndwarf_regs = sizeof(ukp_fetch_dwarf_regs) / sizeof(ukp_fetch_dwarf_regs[0]);
