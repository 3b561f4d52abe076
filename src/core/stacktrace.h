/* SPDX-License-Identifier: MIT */
/*
 * stacktrace.h - what the library tells the hit's unwinder
 * (stacktrace.c; its public side: stack_trace_save_regs() in ukprobes.h).
 */
#ifndef UKP_STACKTRACE_H
#define UKP_STACKTRACE_H

/* [reg] The loaded objects changed (symbols.c's rescan, registry mutex
 * held): rebuild the table of code ranges and .eh_frame_hdr the hit's
 * unwinder reads. */
void ukp_stacktrace_objects_changed(void);

#endif /* UKP_STACKTRACE_H */
