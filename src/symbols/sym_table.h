/* SPDX-License-Identifier: MIT */
/*
 * sym_table.h - an object's symbols as symbols.c keeps them, and as a
 * symbol table's reading hands them over (symbols.c, sym_cache.c).
 * Private to src/symbols/.
 *
 * Context: [reg].
 */
#ifndef UKP_SYM_TABLE_H
#define UKP_SYM_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One function-like or data symbol. */
struct ukp_sym {
	uintptr_t start;
	size_t size;            /* effective size (st_size, or up to the next symbol) */
	uintptr_t sec_end;      /* end of its section, bounds an unsized symbol */
	const char *name;       /* points into one of ukp_objent.strbufs */
	size_t keylen;          /* length of name before any '@' version suffix */
	unsigned char bind;
	unsigned char type;
	bool sized;             /* st_size != 0 */
	bool debug;             /* from the debug file or MiniDebugInfo */
};

/* Symbols read from one symbol table, before they join the object's. */
struct ukp_symread {
	struct ukp_sym *syms;
	size_t n;
	struct ukp_sym *dsyms;  /* data symbols */
	size_t dn;
	char *strings;          /* their names, strbytes bytes */
	size_t strbytes;
};

#endif /* UKP_SYM_TABLE_H */
