/* SPDX-License-Identifier: MIT */
/*
 * objects_changed.h - telling libukprobes that the loaded objects
 * changed. The agent's build of the library finds the objects without
 * the program's loader, in /proc/self/maps, and keeps what it read for a
 * moment (src/symbols/iterate_objects.c); whoever knows the set changed
 * says so, so that the next look-up reads again: the library's dlclose()
 * interposer, the agent's dlopen() interposer and its loader stops.
 * Defined by libukprobes (nothing to do in libukprobes.so, where the
 * loader's own counters say it). [init]
 */
#ifndef UKP_COMMON_OBJECTS_CHANGED_H
#define UKP_COMMON_OBJECTS_CHANGED_H

void ukp_objects_changed(void);

#endif
