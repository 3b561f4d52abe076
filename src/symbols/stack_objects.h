/* SPDX-License-Identifier: MIT */
/*
 * stack_objects.h - the loaded objects' executable segments and their
 * .eh_frame_hdr, for the hit's unwinder (core/stacktrace.c).
 */
#ifndef UKP_STACK_OBJECTS_H
#define UKP_STACK_OBJECTS_H

#include <stdint.h>

struct ukp_stack_range {
	uintptr_t lo, hi;         /* an executable segment */
	uintptr_t hdr;            /* its object's .eh_frame_hdr, or 0 */
	uintptr_t hdr_end;
};

/* [reg] The loaded objects changed (symbols.c's rescan, registry mutex
 * held): rebuild the table. */
void ukp_stacktrace_objects_changed(void);
/* [hit] The executable segment holding ip, or NULL. */
const struct ukp_stack_range *ukp_stack_range_of(uintptr_t ip);

#endif /* UKP_STACK_OBJECTS_H */
