/* SPDX-License-Identifier: MIT */
/*
 * base/base.h - the lowest layer: what every part of the library may use
 * (src/base/: the log, raw system calls usable in any context, where
 * errno lives, the library's own threads, pools and sorted arrays).
 * It calls nothing of the layers above (scripts/check_layers.py).
 *
 * Contexts named in comments, everywhere in src/:
 *  [trap]  runs in the library's signal handlers (SIGTRAP and the fault
 *          signals), or in a detour or trampoline: async-signal-safe,
 *          allocation-free, no libc calls, no locks; per-thread state
 *          lives in the thread's block (base/tb_lib.h), never in TLS.
 *  [reg]   runs in registration/unregistration/knob calls, from ordinary
 *          context, with ukp_mutex held unless said otherwise.
 *  [any]   either.
 */
#ifndef UKP_BASE_H
#define UKP_BASE_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "ukprobes.h"
#include "arch/arch.h"

#include "base/tb_lib.h"

/* log.c */
void ukp_pr(enum ukprobes_print_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_warn(...) ukp_pr(UKPROBES_WARN, __VA_ARGS__)
#define pr_info(...) ukp_pr(UKPROBES_INFO, __VA_ARGS__)
#define pr_debug(...) ukp_pr(UKPROBES_DEBUG, __VA_ARGS__)

/* sys.c: raw system calls usable in [trap] */
long ukp_sys_sigprocmask(int how, const uint64_t *set, uint64_t *old);
int ukp_sys_gettid(void);
int ukp_sys_getpid(void);
unsigned long ukp_getauxval(unsigned long type); /* getauxval(), errno kept */
long ukp_sys_tgkill(int pid, int tid, int sig);
/* sys.c */
/*
 * errno of the calling thread without calling libc's __errno_location()
 * (which may itself be probed): its offset from the thread pointer is
 * measured once at start-up.
 */
extern long ukp_errno_offset;
#ifdef UKP_FREE
/* the freestanding agent's errno is its own, in the thread's block */
#include <errno.h>
#define ukp_errno errno
#else
#define ukp_errno (*(int *)(arch_thread_pointer() + ukp_errno_offset))
#endif
void ukp_errno_init(void);                    /* [reg] before any handler */

/* sys.c: the freestanding agent's own image (agent/free/entry.c sets it
 * from the load block): anonymous memory the loader wrote, no object of
 * the maps, yet code (symbols.c ukp_addr_is_text) and never probed
 * (core/blacklist.c). Both 0 elsewhere. */
extern uintptr_t ukp_self_text_lo, ukp_self_text_hi;

#define UKP_SCAN_SIG 64                       /* SIGRTMAX, owned by the library (process/threads.c) */
/* The signals the library keeps deliverable in the kernel's mask; the
 * program's view of them is kept apart (process/sigmask.c). */
#define UKP_OWNED_MASK ((1ULL << (SIGTRAP - 1)) | (1ULL << (SIGSEGV - 1)) | \
			(1ULL << (SIGBUS - 1)) | (1ULL << (SIGFPE - 1)) |  \
			(1ULL << (SIGILL - 1)) | (1ULL << (UKP_SCAN_SIG - 1)))

/* thread.c: a thread of the library, started with every signal but the
 * library's own blocked, so that it never runs the program's handlers:
 * in ukprobe's agent (built with UKP_AGENT) a raw one that borrows
 * nothing of the program's (ukprobes_kthread_run()), in libukprobes.so a
 * pthread (its code allocates with libc's malloc, whose per-thread cache
 * a raw thread never gives back). Joined by ukprobes_kthread_join(). */
/* [any] Raw threads of the library's (ukprobes_kthread_run) started and
 * not yet past their function: the freestanding agent's unload waits
 * for none. */
extern _Atomic int ukp_kthreads_live;
int ukp_kthread_start(struct ukprobes_kthread *t, void *(*fn)(void *), void *arg,
		      const char *name); /* [reg] 0 or an errno value */

#endif /* UKP_BASE_H */
