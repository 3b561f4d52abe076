/* SPDX-License-Identifier: MIT */
/*
 * maps_objects.h - the loaded objects from /proc/self/maps and their
 * headers in memory, without the dynamic loader (maps_objects.c).
 */
#ifndef UKP_SYMBOLS_MAPS_OBJECTS_H
#define UKP_SYMBOLS_MAPS_OBJECTS_H

#include <link.h>

#include "objects_changed.h" /* ukp_objects_changed() */

/*
 * dl_iterate_phdr()'s walk, from the kernel's view: cb for each object
 * (the main program, the vDSO, then the others from the highest address
 * down) until it returns non-zero, which is returned; 0 after the last,
 * or -errno when the objects could not be read. [reg]
 */
int ukp_maps_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/*
 * The loaded objects as the library walks them (iterate_objects.c), with
 * dl_iterate_phdr()'s callback: the dynamic loader's own list in
 * libukprobes.so (an ordinary library of the program's: the loader's
 * list is exact and costs no system call), ukp_maps_iterate_phdr() in
 * the agent's build (UKP_OWN_OBJECTS: the agent calls nothing of the
 * program's loader, doc/static_agent.md). Its dlpi_adds and dlpi_subs
 * change when the set does, in both. [reg]
 */
int ukp_iterate_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/*
 * The loaded object with a PT_LOAD segment holding addr (dladdr()'s
 * dli_fname and dli_fbase): its load bias, its program headers, and its
 * name (as ukp_iterate_objects() gives it: "" for the main program) in
 * name[len] unless name is NULL. 0, -ENOENT when no object holds addr, -ERANGE when the name
 * does not fit. [reg]
 */
struct ukp_object_at {
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	size_t phnum;
};
int ukp_object_at(uintptr_t addr, struct ukp_object_at *out, char *name, size_t len);

#endif
