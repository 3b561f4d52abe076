/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - loaded ELF objects and their symbols (the kernel's kallsyms
 * and module list, for one process).
 *
 * Context: every function here runs at registration time, from ordinary
 * (non-signal) context, under the registry mutex. None of it is on the hit
 * path. The module keeps its own cache of parsed objects.
 *
 * The room src/symbols/ (symbols.c, debuginfo.c, program_name.c,
 * module_file.c, eh_frame.c, usdt.c, gopclntab.c): what the objects say. It calls
 * only src/base/ and the arch (scripts/check_layers.py).
 */
#ifndef UKP_SYMBOLS_H
#define UKP_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A loaded ELF object (the executable, a shared library, ld.so, vdso). */
struct ukp_object {
	char *path;          /* as loaded; /proc/self/exe's target for the main program */
	const char *name;    /* basename of path (points into path) */
	uintptr_t base;      /* load bias (dlpi_addr) */
	bool is_main;        /* the main executable */
	uint64_t gen;        /* load generation it was seen in */
};

/* The symbol containing an address. */
struct ukp_symres {
	const struct ukp_object *obj;
	const char *name;    /* symbol name (owned by the cache) */
	uintptr_t start;     /* absolute start address */
	size_t size;         /* size in bytes (to the next symbol when st_size is 0) */
	bool func;           /* a sized STT_FUNC (or IFUNC) symbol: a compiled
			      * function's entry follows the calling convention */
	bool ifunc;          /* an STT_GNU_IFUNC symbol: start is its resolver
			      * (ukp_sym_ifunc_impl gives the code it chose) */
	bool global;         /* bound GLOBAL, WEAK or UNIQUE (not LOCAL) */
	bool debug;          /* known from the object's debug file or MiniDebugInfo
			      * only (not in its own symbol table) */
	bool data;           /* a data symbol (ukp_data_lookup_*): an OBJECT, or
			      * a NOTYPE outside code; size is its st_size */
};

/*
 * Bring the object list up to date with the dynamic loader (new dlopen()s,
 * dlclose()s). Cheap when nothing changed (compares dl_iterate_phdr's
 * adds/subs counters). Returns true when objects were removed since the
 * last call.
 */
bool ukp_objects_refresh(void);

/*
 * [any] Does name name the main program as it was started: the path
 * execve() was given (AT_EXECFN), argv[0] as the program got it, or the
 * basename of either? ("python3" for /usr/bin/python3.11 run through the
 * /usr/bin/python3 symlink.) Its own file names (the real path and its
 * basename) are matched by the lookups themselves.
 */
bool ukp_main_answers_to(const char *name);

/* Generation counter, bumped every time the object list changes. */
uint64_t ukp_objects_generation(void);

/*
 * [reg] Bring the object list up to date once, then keep it as it is
 * until ukp_objects_unpin(): for a run of look-ups that asks about
 * thousands of addresses (a vector-use walk asks at every instruction),
 * where each would ask the loader again. Pins nest. An object loaded
 * meanwhile is not seen until the last unpin.
 */
void ukp_objects_pin(void);
void ukp_objects_unpin(void);

/*
 * Resolve "sym" or "object:sym" to an absolute address. object matches a
 * loaded object's basename ("libz.so.1"), full path, or the basename of its
 * resolved path ("libz.so.1.2.13"); a path (with a '/') also matches when
 * it resolves to the object's file ("./prog", a symlink); the main
 * program also answers to the names of ukp_main_answers_to(). Without object, objects are searched in
 * load order (main program first) and a global definition wins over a local
 * one. Only defined function-like symbols (FUNC, IFUNC, NOTYPE in an
 * executable section) count; an IFUNC gives the implementation the process
 * runs (ukp_sym_lookup_name_ifunc).
 * Returns 0, -ENOENT (no such object or symbol) or -ENOMEM.
 */
int ukp_sym_lookup_name(const char *spec, uintptr_t *addr);

/*
 * The same; *ifunc tells whether the name is an IFUNC (STT_GNU_IFUNC), in
 * which case *addr is not its resolver but the implementation the
 * resolver chose in this process (as gdb resolves IFUNCs). An
 * implementation that no symbol names gets one, "NAME.impl".
 */
int ukp_sym_lookup_name_ifunc(const char *spec, uintptr_t *addr, bool *ifunc);

/* The implementation an IFUNC symbol of a walk or a lookup (sym->ifunc)
 * stands for in this process. Returns 0, -ENOENT, -ENOMEM, -EINVAL. */
int ukp_sym_ifunc_impl(const struct ukp_symres *sym, uintptr_t *impl);

/* The same for the IFUNC symbol name whose resolver is at resolver (a
 * walk's sym->start). Returns 0, -ENOENT, -ENOMEM, -EINVAL. */
int ukp_sym_ifunc_impl_at(uintptr_t resolver, const char *name, uintptr_t *impl);

/*
 * The function-like symbol containing addr, from .symtab when the file has
 * one, else .dynsym and (when addr is in none of its functions) the
 * object's debug file or MiniDebugInfo (debuginfo.h). Returns 0 and fills
 * *res, or -ENOENT.
 */
int ukp_sym_lookup_addr(uintptr_t addr, struct ukp_symres *res);
/* [reg] Is addr in the Go-compiled code of sym's object (between the
 * runtime.text and runtime.etext its symbol table names; false for
 * NULL)? Goroutine stacks are small, and Go's runtime resumes a goroutine
 * at any instruction there (asynchronous preemption) and at points its
 * code does not jump to (a recovered panic's deferreturn call): no jump
 * optimization there. */
bool ukp_sym_go_code(const struct ukp_symres *sym, uintptr_t addr);

/*
 * Data symbols, kept apart from the functions that every look-up above
 * and ukp_for_each_symbol() see: an OBJECT symbol, or a NOTYPE one
 * outside code (_edata), in an allocated section.
 * ukp_data_lookup_name(): "sym" or "object:sym" found as
 * ukp_sym_lookup_name() finds a function (res->size: st_size, 0 when
 * the file gives none). ukp_data_lookup_addr(): the sized data symbol
 * whose bytes hold addr. Both read the debug file or MiniDebugInfo of a
 * file without .symtab when its own table misses. 0, -ENOENT or
 * -ENOMEM.
 */
int ukp_data_lookup_name(const char *spec, struct ukp_symres *res);
int ukp_data_lookup_addr(uintptr_t addr, struct ukp_symres *res);

/* The first loaded object (load order) that name names, as the "object"
 * of "object:sym" does, or NULL. */
const struct ukp_object *ukp_object_named(const char *name);

/* The loaded object containing addr (in any PT_LOAD segment), or NULL. */
const struct ukp_object *ukp_object_of(uintptr_t addr);

/* True if [addr, addr+len) lies inside an executable PT_LOAD segment of a
 * currently loaded object. */
bool ukp_addr_is_text(uintptr_t addr, size_t len);

/* True if obj (a pointer previously returned) is still loaded. */
bool ukp_object_alive(const struct ukp_object *obj);

/*
 * Blacklist entries declared with NOKPROBE_SYMBOL() in any loaded object
 * (its "ukprobes_blacklist" section): calls fn for each one with the
 * symbol's range. Returns the number of entries.
 */
typedef void (*ukp_range_fn)(uintptr_t start, uintptr_t end, const char *name, void *arg);
size_t ukp_for_each_nokprobe(ukp_range_fn fn, void *arg);

/* Iterate over every function-like symbol of every loaded object (for glob
 * probes and probe-everything tests), the debug files' too. IFUNC symbols
 * come as they are (sym->ifunc: start is the resolver). */
typedef void (*ukp_sym_fn)(const struct ukp_symres *sym, void *arg);
void ukp_for_each_symbol(const char *object, ukp_sym_fn fn, void *arg);
/* The same, and with data, each object's data symbols after its
 * functions (sym->data). */
void ukp_for_each_symbol_kind(const char *object, bool data, ukp_sym_fn fn, void *arg);

/*
 * Object files read without loading them (a library the program will
 * dlopen() later): the record of the ELF file at path (a real path), as
 * if it were loaded at 0 (addresses are the file's, base 0), with its
 * PT_LOAD segments from its program headers. Never in the object list
 * of the look-ups above; cached, and read again when the file changed
 * (another inode, size or mtime). NULL with *err: -ENOENT (or another
 * stat() error), -ENOEXEC (not a 64-bit ELF object for this machine, with
 * segments),
 * -ENOMEM. The record stays valid until the next call.
 */
const struct ukp_object *ukp_file_object(const char *path, int *err);
/* The function (data: the variable) name names in a file's record, found
 * as ukp_sym_lookup_name() finds it in one object (globals, then locals;
 * its own table, then its debug file's), an IFUNC as its resolver.
 * 0, -ENOENT or -ENOMEM. */
int ukp_file_sym_named(const struct ukp_object *obj, const char *name, bool data,
		       struct ukp_symres *res);
/* Every function of a file's record (its debug file's too), then with
 * data its data symbols, as ukp_for_each_symbol_kind(). */
void ukp_file_for_each_symbol(const struct ukp_object *obj, bool data, ukp_sym_fn fn, void *arg);
/* The i-th PT_LOAD segment of an object (loaded: absolute addresses; a
 * file's record: the file's), or false past the last. */
bool ukp_object_seg(const struct ukp_object *obj, size_t i, uintptr_t *start, uintptr_t *end,
		    bool *exec);

/*
 * [reg] The function containing addr as ukp_sym_lookup_addr() finds it,
 * else, when no symbol covers addr, the code its object's unwind tables
 * (.eh_frame) say one function holds (res->name "", func false): for a
 * probe that a note places in an unnamed function (an SDT probe of a
 * stripped program, usdt.h). 0, -ENOENT or -ENOMEM.
 */
int ukp_sym_lookup_code(uintptr_t addr, struct ukp_symres *res);

/* [reg] The i-th loaded object (load order; i == 0 brings the list up
 * to date), or NULL past the last. */
const struct ukp_object *ukp_object_nth(size_t i);
/* [reg] Does name name obj, as the "object" of "object:sym" does? */
bool ukp_object_matches(const struct ukp_object *obj, const char *name);
/* [reg] Is [addr, addr+len) inside a not executable PT_LOAD segment of
 * obj, writable or not (RELRO, read-only data)? */
bool ukp_object_data(const struct ukp_object *obj, uintptr_t addr, size_t len);

/* Drop every cached object (after fork in the child it stays valid; used
 * by tests and on exit). */
void ukp_symbols_reset(void);

/* Called with an object whose symbol names (the name of a struct
 * ukp_symres) are about to be freed, as its unload is noticed, or with
 * NULL for every object (ukp_symbols_reset): who kept such a name
 * copies it now. One hook; NULL for none. */
void ukp_symbols_set_names_hook(void (*fn)(const struct ukp_object *obj));

/* module_file.c: the real path (malloc'ed) of the file dlopen(name) from
 * the main program would load, or of name itself when it is a path;
 * NULL when there is none. Not under the registry mutex (it calls
 * dlopen() and dlclose()). */
char *ukp_module_file_find(const char *name);

#endif /* UKP_SYMBOLS_H */
