/* SPDX-License-Identifier: MIT */
/*
 * maps_objects.h - the loaded objects from /proc/self/maps and their
 * headers in memory, without the dynamic loader (maps_objects.c).
 */
#ifndef UKP_SYMBOLS_MAPS_OBJECTS_H
#define UKP_SYMBOLS_MAPS_OBJECTS_H

#include <link.h>

/*
 * dl_iterate_phdr()'s walk, from the kernel's view: cb for each object
 * (the main program, the vDSO, then the others from the highest address
 * down) until it returns non-zero, which is returned; 0 after the last,
 * or -errno when the objects could not be read. [reg]
 */
int ukp_maps_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

#endif
