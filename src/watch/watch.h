/* SPDX-License-Identifier: MIT */
/*
 * watch.h - data watchpoints (watch.c), for the rest of the library.
 *
 * The room src/watch/: part of the engine (with src/core/,
 * src/optimizer/, src/process/); the rooms below never call it.
 */
#ifndef UKP_WATCH_H
#define UKP_WATCH_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <ucontext.h>

/* [trap] A fault on a watched page that the program may make: handled
 * (true), or the program's (false). */
bool ukp_watch_fault(int sig, siginfo_t *info, ucontext_t *uc);
/* [trap] A SIGTRAP other than an int3: the end of an in-place step or a
 * debug-register breakpoint of ours (true). */
bool ukp_watch_sigtrap(siginfo_t *info, ucontext_t *uc);
/* [any] For the system call wrappers (watch_syscalls.c). */
bool ukp_watch_overlaps(uintptr_t a, size_t len);
int ukp_watch_check_user(const void *a, size_t len, bool write);
int ukp_watch_user_copy(void *user, void *bounce, size_t len, bool write, uintptr_t ip);
/* [reg] registry mutex held: kprobes_show_list's watchpoint lines. */
void ukp_watch_show(FILE *out);

/* Set once a page has been protected for a watchpoint: from then on
 * the signal interposers keep SIGSEGV out of the masks the program sets
 * (signals.c), as they keep SIGTRAP out: a fault with SIGSEGV blocked
 * would kill the process. */
extern _Atomic bool ukp_watch_keep_segv;

/* Counters (tests, benchmarks): instructions run for the program on a
 * scratch copy, and instructions stepped in place. */
extern _Atomic unsigned long ukp_watch_emulated;
extern _Atomic unsigned long ukp_watch_inplace_steps;
/* Accesses that could be neither run on a copy nor stepped in place
 * (ARCH_WATCH_STEP_IN_PLACE 0): the program got the fault. */
extern _Atomic unsigned long ukp_watch_refused;

#endif
