/* SPDX-License-Identifier: MIT */
/*
 * core/core.h - the core (src/core/): the registry of sites and probes,
 * the hit paths (trap.c, the arch's fast paths), return probes, jprobes,
 * the blacklist, the knobs, the proofs that handlers leave the vector
 * state alone (vecstate.c), and the public API's look-ups that take the
 * registry mutex (kallsyms*.c, usdt_api.c). Part of the engine (with
 * src/optimizer/, src/process/, src/watch/); the layers below (base,
 * text, symbols, flow) never call it.
 */
#ifndef UKP_CORE_H
#define UKP_CORE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "ukprobes.h"
#include "arch/arch.h"
#include "base/base.h"
#include "base/lock.h"
#include "symbols/symbols.h"
#include "core/fastpath.h"

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

/* [reg] Does the optimized hit's fast path see s as a kretprobe + kprobe
 * pair (fastpath.h's fast_rp)? */
static inline bool ukp_site_fast_pair(const struct ukp_site *s)
{
#if ARCH_FAST_KRP_PAIR
	return atomic_load(&s->fast_kp) && s->fast_rp;
#else
	(void)s;
	return false;
#endif
}

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

/* [any] The calling thread's control block, in its per-thread block
 * (base/tb_lib.h: no TLS; the fast paths find it there too). */
UKP_TB_LIB_FITS(struct ukp_ctlblk, UKP_TBL_CTL, UKP_TBL_CTL_SIZE);
#define ukp_ctl (*UKP_TB_LIB(struct ukp_ctlblk, UKP_TBL_CTL))

/* go_stack.c: the thread's stack for Go probes' hits, in its per-thread
 * block (the Go template reads top %gs-relative: optprobe_tramp.S) */
struct ukp_go_stack {
	uintptr_t top;  /* 0: none yet */
	uintptr_t base;
};
UKP_TB_LIB_FITS(struct ukp_go_stack, UKP_TBL_GO, UKP_TBL_GO_SIZE);
void ukp_go_stack_need(void);

/* Registry (kprobes.c). */
extern struct ukp_fmutex ukp_mutex;
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
/* Take/release the registry mutex from outside the registry (listing,
 * symbol lookups from other modules and the agent); 0 or -errno. */
int ukp_lock_for_show(void);
void ukp_unlock_for_show(void);

/* Slots that ran a boosted copy wait here after unregistration until a
 * thread scan shows nobody can resume in them (kprobes.c). */
extern unsigned int ukp_quarantine_limit;     /* scan once this many wait */
unsigned int ukp_quarantine_reclaim(void);    /* [reg] scan now; returns sites freed */
unsigned int ukp_quarantine_count(void);      /* [reg] */

/* Per-thread counters of the hit path (tests and benchmarks), in the
 * thread's block. */
struct ukp_tb_hits {
	unsigned long boosted_hits; /* hits sent to a boosted copy */
	unsigned long ool_resumes;  /* trailing int3 of a normal copy */
};
UKP_TB_LIB_FITS(struct ukp_tb_hits, UKP_TBL_HITS, UKP_TBL_HITS_SIZE);
#define ukp_tls_boosted_hits (UKP_TB_LIB(struct ukp_tb_hits, UKP_TBL_HITS)->boosted_hits)
#define ukp_tls_ool_resumes (UKP_TB_LIB(struct ukp_tb_hits, UKP_TBL_HITS)->ool_resumes)

/* trap.c */
int ukp_call_handler(struct kprobe *kp, int (*fn)(void *arg, struct pt_regs *regs), void *arg,
		     struct pt_regs *regs, unsigned int status, int fault_ret,
		     bool vec_free); /* [trap] */
/* The library's functions that detours reach through a pointer (for the
 * vector-free proof, vecstate.c). */
int ukp_kprobe_thunk(void *arg, struct pt_regs *regs);     /* [trap] */
/* [detour] The C half of every optimized probe; lazy: the
 * template left the vector state in the registers (ukp_vec_lazy). */
void ukp_optprobe_hit(struct pt_regs *regs, struct ukp_site *s, int lazy);
void ukp_fast_abandoned(struct ukp_ctlblk *c, struct ukp_site *s);
/* [trap] A kretprobe's return handler that may run with the vector
 * state as it is: ukp_call_handler's guarded call, without the thunk. */
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
 * vector state still in the registers? (Remembered for a few handlers
 * while the loaded objects stay the same.) */
bool ukp_vec_free(const void *fn);
/* how many handler proofs ukp_vec_free walked (for tests) */
extern uint64_t ukp_vec_walks;
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
#ifdef UKP_FREE
int ukp_blacklist_exempt(uintptr_t addr);     /* [reg] one address (ukp_blacklisted) */
#endif
void ukp_blacklist_refresh(void);             /* [reg] after dlopen */

#endif /* UKP_CORE_H */
