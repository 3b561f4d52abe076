/* SPDX-License-Identifier: MIT */
/*
 * process/process.h - the process around the probes (src/process/):
 * grace periods (sync.c), where every thread may resume (threads.c),
 * the signal handlers and their chaining (signals.c), the program's view
 * of its signal mask (sigmask.c), the exec family (exec.c). Part of the
 * engine (with src/core/, src/optimizer/, src/watch/).
 */
#ifndef UKP_PROCESS_H
#define UKP_PROCESS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "base/base.h"
#include "core/core.h"
#include "text/text.h"

/* ------------------------------------------------------ grace periods */
/* sync.c: a thread is "inside" from trap entry to trap exit. */
struct ukp_thread_rec {
	_Atomic unsigned long seq; /* odd: inside */
	_Atomic int tid;           /* 0: free */
} __attribute__((aligned(64)));
extern struct ukp_thread_rec ukp_overflow_rec;
void ukp_read_lock_slow(struct ukp_ctlblk *c);  /* [trap] */
void ukp_read_unlock_overflow(void);            /* [trap] */

/* [trap] Enter the read side (nests). The usual case inline: a thread
 * with its record, writers that use membarrier (so the hit path only
 * stops the compiler: ukp_synchronize makes every running thread
 * execute the barrier, liburcu's memb flavour). */
static inline void ukp_read_lock(struct ukp_ctlblk *c)
{
	struct ukp_thread_rec *r = c->rec;

	if (__builtin_expect(c->depth || !r || r == &ukp_overflow_rec ||
			     atomic_load_explicit(&ukp_reader_fence, memory_order_relaxed), 0)) {
		ukp_read_lock_slow(c);
		return;
	}
	c->depth = 1;
	atomic_store_explicit(&r->seq, atomic_load_explicit(&r->seq, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

/* [trap] Leave the read side. */
static inline void ukp_read_unlock(struct ukp_ctlblk *c)
{
	struct ukp_thread_rec *r;

	if (--c->depth)
		return;
	r = c->rec;
	if (__builtin_expect(r == &ukp_overflow_rec, 0)) {
		ukp_read_unlock_overflow();
		return;
	}
	atomic_store_explicit(&r->seq, atomic_load_explicit(&r->seq, memory_order_relaxed) + 1,
			      memory_order_release);
}
void ukp_synchronize(void);                   /* [reg] wait for every thread inside */
void ukp_sync_after_fork_child(void);         /* [reg] */

/* ------------------------------------------------------------ threads */
/* threads.c: where the threads are (see there). */
#define UKP_SCAN_MAX_RANGES 64
struct ukp_range {
	uintptr_t start, end;                 /* [start, end) */
};
void ukp_uc_push(ucontext_t *uc);             /* [trap] around a program handler */
void ukp_uc_pop(void);                        /* [trap] */
void ukp_scan_handler(int sig, siginfo_t *info, void *ucv); /* [trap] */
uint64_t ukp_threads_scan(const struct ukp_range *r, unsigned int n); /* [reg] */
bool ukp_threads_drain(void);                 /* [reg] pending SIGTRAPs taken */
void ukp_threads_after_fork_child(void);      /* [reg] */
extern _Atomic unsigned long ukp_scan_count;  /* scans done */
extern _Atomic unsigned long ukp_scan_inside; /* ranges found (maybe) occupied */
extern _Atomic unsigned long ukp_scan_timeouts; /* scans with a silent thread */
extern _Atomic unsigned long ukp_scan_signalled; /* threads sent the scan signal */
extern _Atomic unsigned long ukp_scan_blocked; /* threads seen blocked, not signalled */
extern bool ukp_scan_without_proc;            /* tests: as if /proc had no syscall file */

/* ------------------------------------------------------------ signals */
/* signals.c */
int ukp_signals_install(void);                /* [reg], or [any] when not yet done */
bool ukp_signals_uninstall(void);             /* [reg] teardown.c; false: left installed */
extern _Atomic bool ukp_signals_on;          /* installed (signals.c) */
/* [trap] inline: the public nofault fetches check it on every call */
static inline bool ukp_signals_installed(void)
{
	return atomic_load_explicit(&ukp_signals_on, memory_order_acquire);
}
void ukp_signals_rewrap(void);                /* [reg] */
void ukp_chain_signal(int sig, siginfo_t *info, ucontext_t *uc); /* [trap] */
void ukp_deliver_fault(int sig, int code, uintptr_t fault_addr, ucontext_t *uc); /* [trap] */
uintptr_t ukp_libc_restorer(void);            /* glibc's __restore_rt, or 0 */
void ukp_restore_rt(void);                    /* our own restorer (asm) */
extern const uint64_t ukp_async_mask;         /* signals blocked during steps */
extern const uint64_t ukp_fault_mask;         /* SIGSEGV|SIGBUS|SIGFPE|SIGILL|SIGTRAP */
/* The signals the library keeps deliverable in the kernel's mask; the
 * program's blocking of them is virtual (sigmask.c). */
/* sigmask.c: the program's view of its mask, per thread. */
struct ukp_vmask_frame {
	uint64_t prev;   /* the program's owned bits before the handler */
	uint64_t kernel; /* owned bits the kernel had in uc (the library's) */
};
uint64_t ukp_vmask_get(void);                 /* [trap] */
void ukp_vmask_set(uint64_t m);               /* [trap] */
bool ukp_vmask_hold(int sig, const siginfo_t *info, bool *forced); /* [trap] */
void ukp_vmask_flush(void);                   /* [trap] */
void ukp_vmask_enter(ucontext_t *uc, uint64_t add, struct ukp_vmask_frame *f); /* [trap] */
void ukp_vmask_leave(ucontext_t *uc, const struct ukp_vmask_frame *f); /* [trap] */
bool ukp_exec_mask_enter(uint64_t *saved);    /* [any] around an execve */
/* exec.c: called around each execve system call the library makes (a
 * PATH search makes one per directory) with its path, then, if it
 * failed, with NULL; may run in a vfork() child. Set once, before any
 * exec (ukprobe's agent: its -f of static programs). */
extern void (*ukp_exec_call_hook)(const char *path);
/* Around the posix_spawn()/posix_spawnp() of FILE the program calls
 * (sigmask.c): before it with done false, returning whether it wants to
 * be called after it (done true); glibc's child makes its execve
 * itself, unseen by the exec interposers. [any] on program threads. */
extern bool (*ukp_spawn_call_hook)(const char *file, bool by_file, bool done);
void ukp_exec_mask_leave(const uint64_t *saved);

/* signals.c: leave a defer_async section, delivering what was held back */
void ukp_defer_async_flush(struct ukp_ctlblk *c);  /* [trap] */
static inline void ukp_defer_async_end(struct ukp_ctlblk *c)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (--c->defer_async)
		return;
	/* a signal from here on is not held back: it sees defer_async 0 */
	atomic_signal_fence(memory_order_seq_cst);
	if (c->deferred_mask)
		ukp_defer_async_flush(c);
}

#endif /* UKP_PROCESS_H */
