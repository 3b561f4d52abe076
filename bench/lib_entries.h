/* SPDX-License-Identifier: MIT */
/*
 * lib_entries.h - the function entries a loaded shared library exports:
 * every defined FUNC and GNU_IFUNC symbol of its .dynsym with global,
 * weak or unique binding and default or protected visibility, one entry
 * per address (aliases and symbol versions of one function are merged).
 *
 * An IFUNC symbol's value is its resolver, which runs once at relocation;
 * what the program calls is the implementation the resolver returns. The
 * resolver is called the way ld.so calls it on x86-64 (no arguments) and
 * the implementation is the entry, marked ifunc (several IFUNC symbols may
 * share one implementation; an implementation that is also an ordinary
 * exported function is that function's entry).
 *
 * Context: ordinary code, not a probe handler (it allocates and reads the
 * file). No ukprobes call.
 */
#ifndef UKP_BENCH_LIB_ENTRIES_H
#define UKP_BENCH_LIB_ENTRIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lib_entry {
	uintptr_t addr;       /* absolute address of the function's first byte */
	size_t size;          /* its symbol's size (IFUNC implementations: 0) */
	const char *name;     /* one of its names (a public one when there is) */
	unsigned int names;   /* .dynsym symbols (aliases, versions) at addr */
	bool ifunc;           /* the implementation of an IFUNC symbol only */
};

struct lib_entries {
	char path[4096];      /* the file as loaded (link map) */
	uintptr_t base;       /* load bias */
	struct lib_entry *v;  /* sorted by address */
	size_t n;
	size_t func_syms;     /* exported defined FUNC symbols */
	size_t ifunc_syms;    /* exported defined IFUNC symbols */
	size_t ifunc_impls;   /* distinct implementations they resolve to */
	size_t ifunc_shared;  /* ... of which are also an ordinary entry */
	char *strtab;         /* owns the names */
};

/*
 * Fill *le for the loaded library handle (from dlopen; dlopen(NULL) for
 * the main program, read from /proc/self/exe). Returns 0, or
 * -errno with a message in err (no file, no .dynsym, no memory).
 */
int lib_entries_load(void *handle, struct lib_entries *le, char *err, size_t errlen);
void lib_entries_free(struct lib_entries *le);

#endif /* UKP_BENCH_LIB_ENTRIES_H */
