/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the arch-independent core's private types and interfaces.
 *
 * Contexts named in comments:
 *  [trap]  runs in the library's signal handlers (SIGTRAP and the fault
 *          signals): async-signal-safe, allocation-free, no libc calls, no
 *          locks; per-thread state lives in initial-exec TLS.
 *  [reg]   runs in registration/unregistration/knob calls, from ordinary
 *          context, with ukp_mutex held unless said otherwise.
 *  [any]   either.
 */
#ifndef UKP_INTERNAL_H
#define UKP_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "ukprobes.h"
#include "arch.h"
#include "symbols.h"
#include "fastpath.h"

#define UKP_TLS __attribute__((tls_model("initial-exec"))) __thread

/* ---------------------------------------------------------------- probes */

/* One registered struct kprobe (a child of a site). */
struct ukp_child {
	struct kprobe *kp;
	struct ukp_site *site;
	struct ukp_child *_Atomic next; /* site's list, newest first; read on hits */
	struct ukp_child *idx_next;     /* kprobe-pointer index chain [reg] */
	/* The handlers proven vector-free at registration (vecstate.c),
	 * as ukp_vf_rel() offsets, 0 for none; a hit compares them with
	 * the current pointers (ukp_vf_is). */
	int32_t vf_pre, vf_post;
};

/* Jump optimization of a site (optimizer.c). */
enum { UKP_OPT_NONE, UKP_OPT_READY, UKP_OPT_JUMP };
/* What the jump of a site with a detour replaces and how its copy maps
 * back: apart from the site (optimizer.c's pool), as only a site with a
 * detour needs it; set before the detour is published, freed with the
 * site. */
struct ukp_opt_region {
	uint8_t orig[UKP_OPT_MAX_REGION];    /* the region's original bytes */
	uint8_t jump[UKP_OPT_JUMP_SIZE];
	/* copied instructions: offsets in the region and in the copy */
	uint8_t ninsn;
	uint8_t map_orig[UKP_OPT_MAX_INSNS], map_copy[UKP_OPT_MAX_INSNS];
};
struct ukp_site_opt {
	struct ukp_opt_region *rgn;          /* with the detour, else NULL */
	uint32_t qidx;                       /* its index on the optimizer's queue */
	_Atomic uint8_t state;               /* UKP_OPT_*; read on hits */
	uint8_t queued;                      /* on the optimizer's queue (or in its
					      * round's array): optimizer.c */
	uint8_t ftrace_len;                  /* patchable NOPs at this entry: [FTRACE] */
	bool entry;                          /* at a function's entry */
	uint8_t len;                         /* bytes the jump replaces */
	uint8_t span;                        /* bytes it occupies: len, or for a
					      * punned jump also the next
					      * instructions' bytes its rel32 ends
					      * in (no other probe may go there) */
	uint8_t tries;                       /* rounds a thread was in the way */
	uint8_t why;                         /* why it is not optimized: ukp_opt_why() */
	int16_t err;                         /* the analysis refused it (-errno) */
};

/*
 * One probed address (the kernel's aggregate probe). Sites come from a
 * pool at multiples of 32 bytes (kprobes.c), 160 bytes apart: the first
 * 32 bytes never straddle a cache line. What a breakpoint hit reads
 * follows them (hnext to ainsn, then opt); what only registration and
 * the list read comes last.
 */
struct ukp_site {
	/* First: the block the arch fast paths read (fastpath.h): addr,
	 * fast_kp, fast_pre, detour, also as s->fp. */
	union {
		struct ukp_fp_site fp;
		struct {
			UKP_FP_SITE_FIELDS
		};
	};
	struct ukp_site *_Atomic hnext;      /* hit hash chain (RCU-style) */
	struct ukp_child *_Atomic children;  /* newest first */
	uintptr_t slot;                      /* out-of-line slot, 0 if emulated */
	_Atomic unsigned int inflight;       /* threads between step and trailing trap */
	_Atomic bool armed;                  /* breakpoint written */
	_Atomic bool boosted;                /* a hit ran the boosted copy: the slot
					      * is "dirty" (quarantined when freed) */
	/* [reg] only (bits of one byte, which nothing writes on hits) */
	bool hashed : 1;                     /* reachable from the hit hash */
	bool gone : 1;                       /* its object was unloaded */
	bool batch_pending : 1;              /* new in a register_kprobes() batch:
					      * slot and breakpoint not written yet */
	bool symname_own : 1;                /* symname is a copy of its own (malloc'ed) */
	uint8_t opcode[UKP_BREAKPOINT_SIZE]; /* the original bytes the breakpoint replaces */
	uint32_t symoff;                     /* offset in the containing symbol */
	struct ukp_arch_insn ainsn;
	struct ukp_site_opt opt;
	struct ukp_site *all_next;           /* every site, for the list [reg] */
	struct ukp_site **all_pprev;         /* where all_next points at us */
	const struct ukp_object *obj;
	/* Containing symbol, for the list: the symbol cache's name while
	 * obj's names live, a copy once they go (site_names_keep). */
	const char *symname;
};

/* kprobe_status values (the kernel's) */
#define KPROBE_HIT_ACTIVE 0x1
#define KPROBE_HIT_SS     0x2
#define KPROBE_REENTER    0x4
#define KPROBE_HIT_SSDONE 0x8

struct ukp_thread_rec;

/* The per-thread control block (the kernel's per-CPU kprobe_ctlblk). */
struct ukp_ctlblk {
	/* First: the block the arch fast paths read and write
	 * (fastpath.h, which says what each field is), also as c->fp.
	 * defer_async > 0 while the program's signal handlers are held
	 * back (prog_wrapper re-queues their signals, blocked, and marks
	 * them in deferred_mask; the holder delivers them on its way out)
	 * instead of two rt_sigprocmask calls per hit. */
	union {
		struct ukp_fp_thread fp;
		struct {
			UKP_FP_THREAD_FIELDS
		};
	};
	struct {
		struct ukp_site *site;
		unsigned int status;
	} prev;                          /* one level, as the kernel */
	uint64_t step_mask;              /* signal mask to restore after a step */
	bool step_masked;                /* we blocked signals for the step */
	/* The vector state of the interrupted code is still in the
	 * registers (a detour or the return trampoline with ukp_vec_lazy):
	 * a handler that is not vector-free is called through
	 * arch_vecsafe_call. */
	bool vec_live;
};

extern UKP_TLS struct ukp_ctlblk ukp_ctl;

/* Registry (kprobes.c). */
extern pthread_mutex_t ukp_mutex;
extern bool ukp_all_disarmed;                 /* kprobes_set_enabled(false) */
/* site_hash.c: the hit hash */
struct ukp_site *ukp_site_lookup(uintptr_t addr);   /* [trap] */
void ukp_site_hash_add(struct ukp_site *s);   /* [reg] */
void ukp_site_hash_del(struct ukp_site *s);   /* [reg] */
void ukp_site_hash_reserve(size_t n);         /* [reg] room for n more */
extern struct ukp_site *ukp_all_sites;        /* [reg] */
int ukp_site_arm(struct ukp_site *s);         /* [reg] */
int ukp_site_disarm(struct ukp_site *s);      /* [reg] */
bool ukp_site_wants_armed(const struct ukp_site *s); /* [reg] */
void ukp_gone_sweep(void);                    /* [reg] */
bool ukp_in_probe_context(void);              /* [any] */
int ukp_init(void);                           /* [reg] once */
/* The code bytes at addr as the program has them, without our patches
 * (breakpoints, optimized jumps); returns how many could be read. */
size_t ukp_read_original(uintptr_t addr, uint8_t *buf, size_t len); /* [reg] */
/* Take/release the registry mutex from outside the registry (listing,
 * symbol lookups from other modules and the agent); 0 or -errno. */
int ukp_lock_for_show(void);
void ukp_unlock_for_show(void);

/* ------------------------------------------------------ grace periods */
/* sync.c: a thread is "inside" from trap entry to trap exit. */
struct ukp_thread_rec {
	_Atomic unsigned long seq; /* odd: inside */
	_Atomic int tid;           /* 0: free */
} __attribute__((aligned(64)));
extern struct ukp_thread_rec ukp_overflow_rec;
extern _Atomic bool ukp_reader_fence;
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

/* ------------------------------------------------------------- text */
/* text_patch.c */
int ukp_text_poke(uintptr_t addr, const void *buf, size_t len); /* [reg] */
/* [reg] Write len bytes of read-only data (not code) at addr: through
 * /proc/self/mem as the kernel's forced writes, else by mprotect. */
int ukp_data_poke(uintptr_t addr, const void *buf, size_t len);
/* One code write of a batch (ukp_text_poke_many). */
struct ukp_poke {
	uintptr_t addr;
	const void *buf;
	size_t len;
};
int ukp_text_poke_many(struct ukp_poke *v, size_t n); /* [reg] sorts v */
/* The breakpoint instruction's bytes, as written over a probed address. */
extern const uint8_t ukp_breakpoint_insn[UKP_BREAKPOINT_SIZE];
/* [any] Fill n bytes (a multiple of UKP_BREAKPOINT_SIZE) with breakpoints,
 * so that a stray jump into unused code traps. */
void ukp_fill_breakpoints(void *p, size_t n);
bool ukp_text_sync(void);                     /* [reg] serialize every thread */
int ukp_text_init(void);                      /* [reg] */
void ukp_text_after_fork(void);               /* [any] */
void ukp_text_release(void);                  /* [reg] ukprobes_shutdown */

/* insn_bounds.c: instruction boundaries, decoded once per function
 * during a batch. 0, -EILSEQ, or 1 when not known (decode as usual). */
int ukp_bounds_check(const struct ukp_symres *sym, size_t off); /* [reg] */
void ukp_bounds_forget(void);                 /* [reg] at a batch's end */

/* module_file.c: the real path (malloc'ed) of the file dlopen(name) from
 * the main program would load, or of name itself when it is a path;
 * NULL when there is none. Not under the registry mutex (it calls
 * dlopen() and dlclose()). */
char *ukp_module_file_find(const char *name);

/* insn_slot.c */
uintptr_t ukp_slot_alloc(uintptr_t near);     /* [reg] 0 when none in reach */
void ukp_slot_free(uintptr_t slot);           /* [reg] no thread may be inside */
void ukp_slot_set_owner(uintptr_t slot, struct ukp_site *s); /* [reg] */
struct ukp_site *ukp_slot_owner(uintptr_t addr, uintptr_t *slot); /* [trap] */

/* n consecutive slots (a detour buffer), freed and owned together. */
uintptr_t ukp_slot_alloc_n(uintptr_t near, unsigned int n); /* [reg] */
void ukp_slot_free_n(uintptr_t slot, unsigned int n);      /* [reg] */
void ukp_slot_set_owner_n(uintptr_t slot, unsigned int n, struct ukp_site *s); /* [reg] */
/* A detour placed in a window [lo, hi] (a punned jump's), or only the
 * place it would take (take false); every slot it overlaps is its. */
uintptr_t ukp_slot_alloc_window(uintptr_t lo, uintptr_t hi, size_t len, bool take); /* [reg] */
void ukp_slot_free_range(uintptr_t a, size_t len);          /* [reg] */
void ukp_slot_set_owner_range(uintptr_t a, size_t len, struct ukp_site *s); /* [reg] */

/* optimizer.c: jump optimization (see there). [reg] unless said. */
void ukp_opt_init(void);
void ukp_opt_after_fork(void);
void ukp_opt_stop(void);                      /* [reg] teardown.c */
void ukp_opt_site_new(struct ukp_site *s, bool on_entry, bool abi_entry);
/* [reg] s is an SDT probe's nop in the function sym: its detour takes
 * the template of function entries when arch_opt_entry_template_ok says
 * the function allows it (optimizer.c). */
void ukp_opt_site_sdt(struct ukp_site *s, const struct ukp_symres *sym);
void ukp_opt_site_changed(struct ukp_site *s);
/* Hold back waking the optimizer thread while a batch queues its sites
 * (on), then wake it once if anything was queued (off). */
void ukp_opt_defer_kick(bool on);
/* [reg] The detours of a batch's new sites, before they are armed. */
void ukp_opt_batch_prepare(struct ukp_site **v, size_t n);
void ukp_opt_site_dead(struct ukp_site *s);
void ukp_opt_sites_dead(struct ukp_site **v, size_t n);
/* The site's region (s->opt.rgn) back to the pool, as the site is freed. */
void ukp_opt_site_free(struct ukp_site *s);
void ukp_opt_unoptimize(struct ukp_site *s);
void ukp_opt_neighbour(uintptr_t addr, bool appears);
void ukp_opt_unpatch(uintptr_t addr, uint8_t *buf, size_t len);
int ukp_opt_would(uintptr_t a, const struct ukp_symres *sym, bool on_entry, const char **why);
const char *ukp_opt_why(const struct ukp_site *s);  /* [reg] */
extern bool ukp_opt_pun;                      /* punned jumps (tests turn them off) */
/* [detour] The C half of every optimized probe (trap.c); lazy: the
 * template left the vector state in the registers (ukp_vec_lazy). */

/* Slots that ran a boosted copy wait here after unregistration until a
 * thread scan shows nobody can resume in them (kprobes.c). */
extern unsigned int ukp_quarantine_limit;     /* scan once this many wait */
unsigned int ukp_quarantine_reclaim(void);    /* [reg] scan now; returns sites freed */
unsigned int ukp_quarantine_count(void);      /* [reg] */
bool ukp_slot_have_free(uintptr_t near);      /* [reg] a slot without a new chunk */

/* Per-thread counters of the hit path (tests and benchmarks). */
extern UKP_TLS unsigned long ukp_tls_boosted_hits;  /* hits sent to a boosted copy */
extern UKP_TLS unsigned long ukp_tls_ool_resumes;   /* trailing int3 of a normal copy */

/* ------------------------------------------------------------ threads */
/* threads.c: where the threads are (see there). */
#define UKP_SCAN_SIG 64                       /* SIGRTMAX, owned by the library */
#define UKP_SCAN_MAX_RANGES 64
struct ukp_range {
	uintptr_t start, end;                 /* [start, end) */
};
void ukp_uc_push(ucontext_t *uc);             /* [trap] around a program handler */
void ukp_uc_pop(void);                        /* [trap] */
void ukp_scan_handler(int sig, siginfo_t *info, void *ucv); /* [trap] */
uint64_t ukp_threads_scan(const struct ukp_range *r, unsigned int n); /* [reg] */
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
void ukp_signals_uninstall(void);             /* [reg] teardown.c */
bool ukp_signals_installed(void);             /* [trap] */
void ukp_signals_rewrap(void);                /* [reg] */
void ukp_chain_signal(int sig, siginfo_t *info, ucontext_t *uc); /* [trap] */
void ukp_deliver_fault(int sig, int code, uintptr_t fault_addr, ucontext_t *uc); /* [trap] */
uintptr_t ukp_libc_restorer(void);            /* glibc's __restore_rt, or 0 */
void ukp_restore_rt(void);                    /* our own restorer (asm) */
extern const uint64_t ukp_async_mask;         /* signals blocked during steps */
extern const uint64_t ukp_fault_mask;         /* SIGSEGV|SIGBUS|SIGFPE|SIGILL|SIGTRAP */
/* The signals the library keeps deliverable in the kernel's mask; the
 * program's blocking of them is virtual (sigmask.c). */
#define UKP_OWNED_MASK ((1ULL << (SIGTRAP - 1)) | (1ULL << (SIGSEGV - 1)) | \
			(1ULL << (SIGBUS - 1)) | (1ULL << (SIGFPE - 1)) |  \
			(1ULL << (SIGILL - 1)) | (1ULL << (UKP_SCAN_SIG - 1)))
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
int ukp_thread_start(pthread_t *t, void *(*fn)(void *), void *arg); /* [reg] a thread of the library */
bool ukp_exec_mask_enter(uint64_t *saved);    /* [any] around an execve */
void ukp_exec_mask_leave(const uint64_t *saved);
/* raw syscalls usable in [trap] */
long ukp_sys_sigprocmask(int how, const uint64_t *set, uint64_t *old);
int ukp_sys_gettid(void);
int ukp_sys_getpid(void);
long ukp_sys_tgkill(int pid, int tid, int sig);

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

/* trap.c */
/*
 * errno of the calling thread without calling libc's __errno_location()
 * (which may itself be probed): its offset from the thread pointer is
 * measured once at start-up.
 */
extern long ukp_errno_offset;
#define ukp_errno (*(int *)(arch_thread_pointer() + ukp_errno_offset))
void ukp_errno_init(void);                    /* [reg] before any handler */
int ukp_call_handler(struct kprobe *kp, int (*fn)(void *arg, struct pt_regs *regs), void *arg,
		     struct pt_regs *regs, unsigned int status, int fault_ret,
		     bool vec_free); /* [trap] */
/* The library's functions that detours reach through a pointer (for the
 * vector-free proof, vecstate.c). */
int ukp_kprobe_thunk(void *arg, struct pt_regs *regs);     /* [trap] */
void ukp_optprobe_hit(struct pt_regs *regs, struct ukp_site *s, int lazy);
void ukp_fast_abandoned(struct ukp_ctlblk *c, struct ukp_site *s);
/* [trap] A kretprobe's return handler at the outer level (in_handler ==
 * 0) that may run with the vector state as it is: ukp_call_handler's
 * work, leaner (see there). */
int ukp_call_handler_outer(struct kprobe *kp, kretprobe_handler_t fn,
			   struct kretprobe_instance *ri, struct pt_regs *regs, int fault_ret);

/* After a call through a handler pointer: the call stays a call, not a
 * tail jump, so that the vector-free proof of the hit path (whose
 * indirect calls are the handlers, checked on their own) sees no
 * indirect jump. */
#define UKP_NO_TAIL_CALL(v) __asm__ volatile("" : "+r"(v))

/* vecstate.c */
/* [reg] Once, at start-up: prove the library's hit path vector-free and
 * set ukp_vec_lazy (unless UKPROBES_VEC_LAZY=0). */
void ukp_vecstate_init(void);
/* [reg] May fn, as a handler, be called with the interrupted code's
 * vector state still in the registers? */
bool ukp_vec_free(const void *fn);
/* [reg] The same, taking the registry mutex. */
bool ukp_vec_free_locking(const void *fn);
/*
 * A proven handler's address in 32 bits (two in every child instead of
 * two pointers): an offset of +-512 MiB, times 4, plus which of
 * UKP_VF_BASES bases it is from; 0 for none. The first handler out of
 * reach of the bases set so far sets the next one (once, before any
 * child holding an offset from it is published): the program's handlers,
 * the library's own (kretprobes, jprobes), an agent's. A handler out of
 * reach of them all is not kept as proven: it is called as an unproven
 * one, slower, never wrong.
 */
#define UKP_VF_BASES 4
extern uintptr_t ukp_vf_base[UKP_VF_BASES];
int32_t ukp_vf_rel(const void *fn);           /* [reg] */
/* [any] Is fn the handler at rel (not 0)? (>> of a negative int is
 * arithmetic in GCC and Clang) */
static inline bool ukp_vf_is(int32_t rel, const void *fn)
{
	return rel && (uintptr_t)fn - ukp_vf_base[rel & (UKP_VF_BASES - 1)] ==
			      (uintptr_t)(intptr_t)(rel >> 2);
}
/* [reg] The handler at rel, or NULL. */
static inline const void *ukp_vf_fn(int32_t rel)
{
	return rel ? (const void *)(ukp_vf_base[rel & (UKP_VF_BASES - 1)] +
				    (uintptr_t)(intptr_t)(rel >> 2))
		   : NULL;
}
void ukp_sigtrap_handler(int sig, siginfo_t *info, void *ucv);  /* [trap] */
void ukp_sigfault_handler(int sig, siginfo_t *info, void *ucv); /* [trap] */
extern _Atomic unsigned long ukp_handler_fault_count;

/* blacklist.c */
int ukp_blacklist_init(void);                 /* [reg] */
bool ukp_blacklisted(uintptr_t addr);         /* [reg] */
void ukp_blacklist_refresh(void);             /* [reg] after dlopen */

/* log.c */
void ukp_pr(enum ukprobes_print_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_warn(...) ukp_pr(UKPROBES_WARN, __VA_ARGS__)
#define pr_info(...) ukp_pr(UKPROBES_INFO, __VA_ARGS__)
#define pr_debug(...) ukp_pr(UKPROBES_DEBUG, __VA_ARGS__)

#endif /* UKP_INTERNAL_H */
