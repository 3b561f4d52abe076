/* SPDX-License-Identifier: MIT */
/*
 * gopclntab.h - the function table a Go executable carries for its own
 * runtime (pclntab): the names and bounds of its Go functions, which a
 * stripped binary (-ldflags=-s) keeps when its ELF symbol table is gone.
 *
 * [reg] context; nothing here allocates: the table is read in place from
 * the file's bytes (struct ukp_elf), which must stay open while it is
 * used.
 */
#ifndef UKP_GOPCLNTAB_H
#define UKP_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/elf_read.h"

/* A validated pclntab (Go 1.18 and later: header magic 0xfffffff0 or
 * 0xfffffff1), in the file's bytes. Addresses are link-time ones. */
struct ukp_gopcln {
	const uint8_t *hdr;      /* the header, in the file's bytes */
	size_t size;             /* bytes from hdr to the end of its segment */
	size_t nfunc;
	uint64_t text;           /* the runtime's textStart (runtime.text) */
	uint64_t etext;          /* the end of the last function (runtime.etext) */
	uint64_t funcname;       /* offsets from hdr: the name strings, */
	uint64_t pctab;          /* the pc-value tables, */
	uint64_t pcln;           /* the functab and the _func records */
	unsigned int quantum;    /* instruction size unit of the pc tables */
};

/*
 * Find the pclntab of elf: its .gopclntab section, or (a PIE keeps it
 * inside .data.rel.ro; a file may have no sections at all) the header
 * found by its magic in a loaded segment without code, in an object
 * whose notes say it was built by Go (the "Go" build-id note). 0, or
 * -ENOENT when there is none (not a Go object, or an older table).
 */
int ukp_gopclntab_find(const struct ukp_elf *elf, struct ukp_gopcln *p);

/*
 * Function i (< p->nfunc): its entry (link-time address), its size (to
 * the end of its code as its stack-pointer table covers it, else to the
 * next function) and its name (NUL-terminated, in the file's bytes).
 * false when the record is damaged.
 */
bool ukp_gopclntab_func(const struct ukp_gopcln *p, size_t i, uint64_t *entry, uint64_t *size,
			const char **name);

#endif
