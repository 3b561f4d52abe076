/* SPDX-License-Identifier: MIT */
/*
 * agent.h - libukprobe-agent.so, the part of ukprobe that runs inside the
 * traced program (preloaded, or injected: attach.c). It registers the
 * probes the SPECs describe with libukprobes (linked in), writes one
 * record per hit into per-thread ring buffers, and a reader thread sends
 * them to ukprobe (proto.h).
 *
 * Contexts, as the library names them:
 *  [hit]    probe handlers: signal context, async-signal-safe, no malloc,
 *           no locks, no stdio; per-thread state in initial-exec TLS.
 *  [init]   the constructor, destructor, atfork handler and the exec and
 *           dlopen interposers: ordinary context, program threads.
 *  [reader] the reader thread (ordinary context, never traced).
 *
 * The whole agent is blacklisted by libukprobes (its code is in the same
 * shared object as the library's), and every thread while it runs agent
 * code has ukpa_busy set, so the probes it hits in libc (malloc under
 * the library's look-ups, ...) record nothing.
 */
#ifndef UKPROBE_AGENT_H
#define UKPROBE_AGENT_H

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <ukprobes.h>

#include "proto.h"
#include "region.h"
#include "spec.h"
#include "thread_block.h"

/* A fetch argument that is a register as it is (plain_reg): its
 * pt_regs word, its slot in the record, its bytes. */
struct ukpa_plain_arg {
	uint32_t reg, off;
	uint64_t keep;
};

/* A fetch argument a --filter reads straight from the registers
 * (ukpa_filter_direct): a register, then nderef loads in one call
 * (ukprobes_fetch_nofault_value), then add, cut to size bytes (keep): a
 * signed comparison of the branch program reads only those bytes. */
struct ukpa_direct_arg {
	uint16_t arg;             /* its number in the SPEC */
	uint16_t reg;             /* its pt_regs word */
	uint8_t nderef, size;
	const long *deref;        /* the SPEC's offsets */
	long add;
	uint64_t keep;
};

struct ukp_filter_pred;

/* One -e SPEC, in this process image. */
struct ukpa_spec {
	struct ukp_spec spec;     /* @SYM arguments get their address in param */
	uint32_t index;
	bool pending;             /* its object is not loaded yet */
	bool done;                /* resolved (registered, or failed) */
	bool args_ready;          /* @SYM arguments resolved */
	bool again;               /* its object came back after an unload */
	uint8_t retries;          /* spec_resolve() again: its object came back under it */
	int nprobes;              /* probes registered for it */
	_Atomic long stack_left;  /* stacktrace:N: stacks still to take */
	struct ukpa_hist_table *hist; /* hist trigger (hist_hit.c), or NULL */
	_Atomic long onoff_left;  /* traceon/traceoff:N: changes still to make */
	bool checked;             /* a --filter, hist or traceon/traceoff: every
				   * hit goes through ukpa_filter_pass() ... */
	bool hist_regs;           /* ... or, when the hist is all it has and it
				   * reads only registers (ukpa_hist_regs_only),
				   * through ukpa_hist_hit_regs() */
	/* ... or, when the --filter is all it has and compares only numbers
	 * that are registers as they are, through ukp_fbranch_run() on the
	 * registers. A numeric --filter's branch program (fb_regs: on the
	 * registers; else on the fetched record), or NULL */
	struct ukp_fbranch *fb;
	bool fb_regs;
	/* ... or, when the --filter is all it has and compares numbers that
	 * are registers or dereference chains from one (no string, bitfield
	 * or index), through ukpa_filter_direct(): fb_args, its branch
	 * program on the values by argument number, fetched from direct[]
	 * with no record (fb stays for ukpa_filter_pass, which takes a hit
	 * whose chain faults) */
	struct ukp_fbranch *fb_args;
	int ndirect;
	struct ukpa_direct_arg direct[UKP_SPEC_MAX_ARGS];
	/* what ukpa_filter_pass() fetches (ukpa_filter_prepare) */
	bool need_comm, need_pid;
	uint32_t fetch_mask;      /* the arguments read */
	int nplain;               /* -1, or: they are all registers as they are,
				   * plain[0..nplain) */
	struct ukpa_plain_arg plain[UKP_SPEC_MAX_ARGS];
};

/* One registered probe: a SPEC, or one function a glob SPEC matched.
 * Aligned (probe_new) so that what a hit reads of it is one cache line:
 * the second half of kp (the library's fast path checks its pre_handler
 * and flags) and the fields after kp (the handlers'). With every
 * function of a program probed, each line a hit touches is a likely
 * cache miss (the agent's static asserts keep the layout). */
struct ukpa_probe {
	char *symbol_name;        /* "obj:sym" for the library, or NULL (by address) */
	char *where;              /* "sym+0xoff/0xsize [obj]" */
	char *object;             /* its object's path */
	uintptr_t func;
	struct kprobe kp;         /* p events */
	/* the handlers' fields, on kp's second line */
	uint32_t id;              /* struct ukp_rec.id */
	uint16_t flags;           /* UKP_PROBE_* */
	_Atomic bool live;        /* its PROBE message went out: hits are recorded */
	struct ukpa_spec *spec;
	/* what its hits fetch: &spec->spec, or for an SDT probe its own
	 * copy with $argN compiled from its note (usdt.c) */
	const struct ukp_spec *fspec;
	/* what stat's handler of the probe reaches with one load, set with
	 * the handler (probe_setup), else NULL: */
	union {
		/* its SPEC's hist when that is all it has and reads only
		 * registers (spec->hist_regs): ukpa_kp_hist */
		struct ukpa_hist_table *hist_regs;
		/* its SPEC's --filter as a branch program on the registers
		 * when that is all it checks (spec->fb_regs):
		 * ukpa_kp_count_regs */
		const struct ukp_fbranch *fb_regs;
	};
	/* the rest: registration, listing, r and w events */
	struct kretprobe rp;      /* r events */
	struct perf_event **wbp;  /* w events: the watchpoint (every thread) */
	uintptr_t waddr;          /* w events: the watched address */
	uintptr_t base;
	int opt;                  /* UKPROBES_OPT_* or -1 */
	/* an SDT NAME__return probe with $duration: its pair's number
	 * (1..UKPA_SDT_PAIRS), whose NAME__entry stack it pops; 0 else */
	uint8_t sdt_pair;
	/* an r event's probe on one exit of a Go function (go.c, the
	 * return instruction or the epilogue before it:
	 * ukprobes_func_exits): a kprobe (kp), not a kretprobe; go_pair:
	 * the entry probe whose goroutine stack it pops (0: none, it only
	 * counts); go_exit: where the registers at the return are */
	bool go_ret;
	uint16_t go_pair;
	uintptr_t go_func;
	struct ukprobes_func_exit go_exit;
	_Atomic unsigned long go_missed; /* returns without their entry */
	char event[UKP_SPEC_NAME_MAX + 1];
	char why[160];            /* why not optimized */
	struct ukpa_probe *next;  /* every probe, in id order */
	/* a p event's probe whose object was unloaded: unregistered, kept
	 * to be registered again (same id) when the object comes back */
	bool retired;
	uintptr_t retired_addr;   /* where it was */
	bool staged;              /* registered disabled by the setup, enabled at its end */
};
#define UKPA_PROBE_ALIGN 64

/* ------------------------------------------------------------ agent.c */
extern _Atomic bool ukpa_tracing;    /* handlers record */
/* trace records events (the kernel's tracing_on): traceon/traceoff
 * triggers and --tracing-off set it; counts and hists go on regardless */
extern _Atomic bool ukpa_trace_on;
extern enum ukp_mode ukpa_mode;
extern bool ukpa_follow;             /* -f */
extern bool ukpa_attached;           /* injected by ukprobe -p (attach.c) */
/*
 * The thread's state of the agent's: its room in the thread's block of
 * the library's (common/thread_block.h: memory the library maps, found
 * without the program's TLS). busy comes first (the room's "not now"
 * count: a thread without a block of its own records nothing).
 */
struct ukpa_thread {
	int busy;                     /* >0 while this thread runs agent code */
	void *thread_ring;            /* ring.c: the thread's ring, NULL until its first record */
	_Atomic uint64_t *counts;     /* counts.c: the thread's count slot, NULL until claimed */
	void *sdt_stack;              /* handlers.c: the thread's SDT pair stack */
	void *script_block;           /* script.c: the thread's block of the script's */
	unsigned script_generation;   /* script.c: the script whose block that is */
	uint64_t hist_last[8];        /* hist_hit.c: the entries counted in last */
	int err;                      /* the freestanding agent's errno (agent/free/sys.c) */
};
_Static_assert(sizeof(struct ukpa_thread) <= UKP_TB_AGENT_SIZE, "the agent's room");
/* [any] The calling thread's (signal handlers included). */
static inline struct ukpa_thread *ukpa_self(void)
{
	return (struct ukpa_thread *)(void *)((char *)ukp_thread_block() + UKP_TB_AGENT_OFF);
}
#define ukpa_busy (ukpa_self()->busy)
/* [init][reader] One packet: the FROM header and len bytes of whole
 * messages. 0 or -1. */
int ukpa_send(const void *buf, size_t len);
/* [reader] The same for the reader's packet number seq (common/region.h). */
int ukpa_send_seq(const void *buf, size_t len, uint32_t seq);
int ukpa_send_shared(const void *buf, size_t len);
/* [reader] The FROM message that starts this image's packets. */
void ukpa_from_header(struct ukp_msg_from *from);
/* [init] Is the agent tracing in this process (and not in a vfork child
 * sharing our memory)? */
bool ukpa_active(void);
/* exec_follow.c: -f, launched: a static program exec'd is traced too */
void ukpa_exec_follow_init(void);
void ukpa_exec_follow(const char *path);
bool ukpa_spawn_follow(const char *file, bool by_file, bool done);
/* agent.c: with -f, launched: a descriptor the exec'd programs inherit */
bool ukpa_fd_kept(unsigned int fd);
/* [any] The same, or the agent's connection to ukprobe now (attached: a
 * child's exec asks on it, exec_follow.c) */
bool ukpa_fd_kept_now(unsigned int fd);
/* [init] Before _exit(): flush and end this image, if that can be done
 * without waiting long. */
void ukpa_before_exit(void);
/* [init] Before a signal's default action ends the process (script.c):
 * 1 when this call ended the image, 0 when another thread is ending it
 * now (it is not waited for), -1 when it is ended already or the agent
 * is not tracing here. */
int ukpa_end_before_signal(void);

/* The agent's threads (the reader, the attached session's, a script's
 * timer) are started with the library's ukprobes_kthread_create(): the
 * program's handlers never run on them (doc/signals.md). */

/* [init] attach.c's session (see agent.c). */
int ukpa_attach_begin(int fd, enum ukp_mode mode, bool follow, bool no_optimize, int specs_fd,
		      const char *load, int raw_fd, bool tracing_off);
void ukpa_attach_end(bool tracing);
/* [init] In a forked child of an attached process (-f): a new
 * connection to ukprobe (fd or -1), and the thread that waits on it for
 * DETACH (0 or -1). */
int ukpa_attach_connect(void);
int ukpa_attach_forked(int fd);
/* [init] At the end of a forked child's image: until ukprobe has
 * answered its connection (CONFIG), at most ms (see attach.c). */
void ukpa_attach_wait_admitted(int ms);

/* ----------------------------------------------------------- probes.c */
/* [init] Take the SPECs, parsed by ukprobe, from the sealed memfd fd
 * (common/spec_wire.h); the caller keeps or closes fd. 0, or -1 (none of
 * ukprobe's, another version or layout, damaged, no memory: nothing
 * taken). *claimed: the SPEC count the form's header gives, or 0. */
int ukpa_specs_load(int fd, uint32_t *claimed);
int ukpa_specs_count(void);
/* [init] Payload bytes an event of SPEC i needs. */
size_t ukpa_spec_payload(int i);
/* [init] Does an event fetch $duration? */
bool ukpa_specs_use_duration(void);
/* [init] Can an event carry an address to name (a return address, a
 * symbol-typed argument, a stack)? */
bool ukpa_specs_name_addresses(void);
/* [init] The compact records every event fits (common/region.h), or 0:
 * UKP_REGION_REC_COMPACT when every event is an entry probe's with no
 * payload (no arguments, stack), UKP_REGION_REC_CALLER when they are
 * entry and return probes' with none. */
uint32_t ukpa_specs_compact(void);
/* [any] The ip pr's events have: its probe's address, or its function's
 * start for a probe flagged UKP_PROBE_AT_FUNC (a compact record's,
 * common/region.h). */
uintptr_t ukpa_probe_event_ip(const struct ukpa_probe *pr);
/* [init] Resolve and register every SPEC whose object is loaded; mark
 * the others pending. 0, or -1 when a SPEC failed (reported). */
int ukpa_probes_setup(void);
/* [init] Report every SPEC as failed (probes mode: the object to list
 * could not be loaded). */
void ukpa_probes_fail_all(uint32_t what, const char *why);
/* [init][reader] Register the pending SPECs whose objects are loaded now
 * (after dlopen), and re-arm SPECs whose objects came back. */
void ukpa_probes_refresh(void);
/* [init] In a new image that inherited the probes (fork, failed exec):
 * counts from zero, and PROBE messages for every probe again. */
void ukpa_probes_restart(void);
/* [init] Around fork (pthread_atfork): the probe list's lock. */
void ukpa_probes_lock(void);
void ukpa_probes_unlock(void);
void ukpa_probes_after_fork(void);
/* [init] STAT messages of every probe; _nowait gives up (-1) when the
 * list's lock is not free within a second. */
void ukpa_probes_send_stats(void);
int ukpa_probes_send_stats_nowait(void);
/* [reader] The probe of an event id, or NULL. */
const struct ukpa_probe *ukpa_probe_by_id(uint32_t id);
/* [init] Detach: unregister every probe, forget every SPEC. */
void ukpa_probes_unregister_all(void);
/* [any] Probe ids given so far (ids are 0 .. count-1). */
uint32_t ukpa_probes_count(void);
/* [init] Any pending SPEC left? */
bool ukpa_probes_pending(void);
bool ukpa_probes_loader_watched(void);
/* [init] On the thread that called the loader's r_brk (loader.c), with
 * the loader's lock held; state: r_debug's r_state. RT_DELETE (objects
 * are about to be unmapped): no registration starts until the
 * RT_CONSISTENT after it, and none is under way when this returns.
 * RT_CONSISTENT: probes of unloaded objects are forgotten and the SPECs
 * whose objects are mapped now registered. */
void ukpa_probes_loader_event(int state);

/* ----------------------------------------------------------- loader.c */
/* [init] under probes.c's lock: the probe on the loader's r_brk. 0 or a
 * negative errno; *state: r_debug's r_state read after the probe went
 * in. */
int ukpa_loader_watch(int *state);
void ukpa_loader_unwatch(void);
/* [init] r_brk's calls so far; did none come since that count, and is
 * r_state RT_CONSISTENT (or is nothing watched)? A registration that
 * failed while the loader was busy says nothing of the object as it
 * will be once loaded. */
unsigned long ukpa_loader_calls(void);
bool ukpa_loader_settled(unsigned long since);
/* [init] detach, after the unwatch, not under probes.c's lock: wait for
 * the threads still in a loader stop to leave it */
void ukpa_loader_drain(void);
/* [init] in a forked child: the parent's threads in a stop are not its */
void ukpa_loader_after_fork(void);

/* --------------------------------------------------------- handlers.c */
/* [hit] The handlers of the agent's kprobes and kretprobes: _pre records
 * (trace), _count only counts (stat). Both are vector-free (libukprobes
 * proves it when the probe is registered) so that a jump-optimized hit
 * needs no vector state saved: no libc string functions, no calls
 * through pointers, only system calls and code of this object. */
int ukpa_kp_pre(struct kprobe *kp, struct pt_regs *regs);
int ukpa_kp_count(struct kprobe *kp, struct pt_regs *regs);
int ukpa_kp_count_regs(struct kprobe *kp, struct pt_regs *regs);
int ukpa_kp_count_direct(struct kprobe *kp, struct pt_regs *regs);
int ukpa_kp_hist(struct kprobe *kp, struct pt_regs *regs);
int ukpa_rp_count(struct kretprobe_instance *ri, struct pt_regs *regs);
int ukpa_rp_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int ukpa_rp_ret(struct kretprobe_instance *ri, struct pt_regs *regs);
int ukpa_rp_ret_plain(struct kretprobe_instance *ri, struct pt_regs *regs);
void ukpa_watch_hit(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs);
/* SDT $duration (usdt.c): a NAME__entry probe pushes the time on its
 * pair's stack of the thread, the NAME__return probe (sdt_pair) pops
 * it; a return without an entry is not an event. Stacks are per thread
 * (claimed from a fixed set on a thread's first entry), UKPA_SDT_DEPTH
 * deep (deeper entries are counted, not timed). */
#define UKPA_SDT_PAIRS 4
#define UKPA_SDT_DEPTH 64
struct ukpa_sdt_enter {
	struct kprobe kp;
	uint8_t pair;
	struct ukpa_sdt_enter *next;
};
int ukpa_sdt_enter_pre(struct kprobe *kp, struct pt_regs *regs);
int ukpa_kp_sdt_ret(struct kprobe *kp, struct pt_regs *regs);

/* --------------------------------------------------------------- go.c */
/* Go functions (ABIInternal): entry probes past the stack check, $argN
 * from Go's argument registers, and r events as probes on the return
 * instructions, paired with their entry by goroutine (handlers.c). */
/* [init] Is addr Go-compiled code (between runtime.text and
 * runtime.etext of its object)? */
bool ukpa_go_code(uintptr_t addr);
/* [init] Where an entry probe on the Go function at func goes: past its
 * stack check (func when it has none). */
uintptr_t ukpa_go_body(uintptr_t func);
/* [init] spec with each $argN read from Go's argument registers at the
 * function's entry (*out: a copy, or NULL when it has no $argN). 0, or
 * -EINVAL with why and *argi (an argument Go passes on the stack), or
 * -ENOMEM. */
int ukpa_go_compile(const struct ukp_spec *spec, struct ukp_spec **out, uint32_t *argi,
		    char *why, size_t len);
/* A Go function's entry probe for its r events' pairing: pushes the
 * goroutine's entry record (handlers.c). */
struct ukpa_go_enter {
	struct kprobe kp;
	uint16_t pair;
	struct ukpa_go_enter *next;
};
int ukpa_go_enter_pre(struct kprobe *kp, struct pt_regs *regs);
/* An r event's hit at a Go function's return instruction. */
int ukpa_go_ret_pre(struct kprobe *kp, struct pt_regs *regs);
/* [hit] Go's runtime.exit, which ends the process by a raw exit_group:
 * the reader takes what the rings hold first (and names its addresses,
 * which ukprobe cannot once the process is gone), for at most a second. */
int ukpa_go_exit_pre(struct kprobe *kp, struct pt_regs *regs);

/* ----------------------------------------------------------- region.c */
/* The image's shared memory (common/region.h): mapped at one address for
 * the process's life once the first image made it, else NULL. */
extern struct ukp_region_head *ukpa_region;
/* [init] A new file for a new image, in the old one's place. keep: the
 * same process goes on (its threads keep their rings and count slots);
 * else only this thread exists (a forked child). 0 or -errno. */
int ukpa_region_new_image(bool keep);
/* [init] The new image's file, for HELLO (the caller closes it), or -1. */
int ukpa_region_take_fd(void);
/* [init] A forked child that is not traced: away from the parent's file. */
void ukpa_region_forget(void);
/* [init] A detach: the file is unmapped (no thread records any more). */
void ukpa_region_release(void);

/* ----------------------------------------------------------- counts.c */
/* Per-thread hit counters in the region (see counts.c): probe ids below
 * this count in the thread's own slot. */
#define UKPA_COUNT_IDS UKP_REGION_IDS
#define ukpa_my_counts (ukpa_self()->counts)
/* [hit] The first hit of a thread (claims its slot), and hits of
 * threads without one. */
void ukpa_count_slow(struct ukpa_probe *pr);
/* [hit] One hit of pr by the thread whose state t is: a plain add to
 * its own counter. */
static inline void ukpa_count_in(struct ukpa_thread *t, struct ukpa_probe *pr)
{
	_Atomic uint64_t *c = t->counts;

	if (__builtin_expect(c != NULL && pr->id < UKPA_COUNT_IDS, 1))
		atomic_store_explicit(&c[pr->id],
				      atomic_load_explicit(&c[pr->id], memory_order_relaxed) + 1,
				      memory_order_relaxed);
	else
		ukpa_count_slow(pr);
}
/* [hit] The same for the calling thread. */
static inline void ukpa_count_hit(struct ukpa_probe *pr)
{
	ukpa_count_in(ukpa_self(), pr);
}
/* [reader] Give the slots of exited threads back (their counts stay). */
void ukpa_counts_recycle_dead(void);
/* [init][reader] Every hit of pr so far (every slot's count); with the
 * counts lock held. */
uint64_t ukpa_count_of(const struct ukpa_probe *pr);
void ukpa_counts_lock(void);
int ukpa_counts_timedlock(const struct timespec *until);
void ukpa_counts_unlock(void);
/* [init] In a forked child: no slot of the parent's threads. */
void ukpa_counts_after_fork(void);

/* ------------------------------------------------------------ names.c */
/* [init] Event names in use, as "group/event". */
bool ukpa_name_taken(const char *key);
int ukpa_name_add(const char *key);
void ukpa_names_clear(void);
/* [init] A free name for one match (function func) of a glob SPEC: the
 * SPEC's event when given, else the function's name (perf probe's),
 * then _1, _2, ...; taken for it. */
void ukpa_glob_event_name(const struct ukp_spec *spec, const char *func, char *out, size_t len);

/* ------------------------------------------------------------ fetch.c */
/* [hit] Fill data (a record's payload) and *faults (bit i: argument i
 * could not be read; set, never cleared) for the probe's arguments; a
 * $comm argument copies comm (UKP_COMM_LEN bytes). entry: the registers
 * at the function entry (return probes: saved by the entry handler;
 * probes: regs). */
void ukpa_fetch_into(const struct ukp_spec *spec, const struct pt_regs *regs,
		     const struct pt_regs *entry, unsigned char *data, uint32_t *faults,
		     const char *comm);
/* [hit] The same into rec (its data, faults and comm), only the
 * arguments whose bit is set in mask (the others' slots are left as they
 * are): what a filter or a hist reads. */
void ukpa_fetch_some(const struct ukp_spec *spec, const struct pt_regs *regs,
		     const struct pt_regs *entry, struct ukp_rec *rec, uint32_t mask);

/* ------------------------------------------------------- filter_hit.c */
/* [hit] Does this hit pass the SPEC's --filter (if any)? Then its hist
 * and its traceon/traceoff trigger (if any) take it. One of them is
 * set; entry as for ukpa_fetch_args(); fspec the probe's fetch
 * arguments (struct ukpa_probe). */
bool ukpa_filter_pass(struct ukpa_spec *s, const struct ukp_spec *fspec,
		      const struct pt_regs *regs, const struct pt_regs *entry);
/* [hit] (handlers.c) The same for a SPEC with fb_args: its values fetched straight
 * from regs; a faulted one sends the hit to ukpa_filter_pass(). */
bool ukpa_filter_direct(struct ukpa_spec *s, const struct ukp_spec *fspec,
			const struct pt_regs *regs, const struct pt_regs *entry);
/* [init] What ukpa_filter_pass() needs for s, worked out once, and
 * whether s->fb on the registers does instead. */
void ukpa_filter_prepare(struct ukpa_spec *s);

/* ------------------------------------------------------------- usdt.c */
/* One note an SDT SPEC matches: the library's description, its strings
 * owned here. */
struct ukpa_sdt {
	struct usdt_probe p;
	char *provider, *name, *args, *modpath;
};
/* [init] The notes of the loaded objects that spec (is_sdt) names: 0,
 * -ENOENT (none), -ENOMEM; free with ukpa_usdt_matches_free. */
int ukpa_usdt_matches(const struct ukp_spec *spec, struct ukpa_sdt **out, size_t *n);
void ukpa_usdt_matches_free(struct ukpa_sdt *v, size_t n);
/* [init] The addresses of the notes PROVIDER:NAME of the loaded object
 * at modpath: 0 (*out malloc'ed), -ENOENT, -ENOMEM. */
int ukpa_usdt_addrs(const char *modpath, const char *provider, const char *name,
		    unsigned long **out, size_t *n);
/* [init] Does the file at path have a note spec names? *what says what
 * was not found. */
bool ukpa_usdt_file_has(const char *path, const struct ukp_spec *spec, uint32_t *what);
/* [init] spec's fetch arguments at note p: *out a malloc'ed copy of
 * spec with each $argN compiled from p's argument spec, or NULL when
 * spec has none. 0, -ENOMEM, or -EINVAL with why (and *argi the
 * argument) when p has no such argument or one ukprobe does not decode. */
int ukpa_usdt_compile(const struct ukp_spec *spec, const struct usdt_probe *p,
		      struct ukp_spec **out, uint32_t *argi, char *why, size_t len);

/* ----------------------------------------------------------- unwind.c */
/* [hit] From ukpa_record(): the stack of a stacktrace event into data,
 * the record's payload (ip, caller as ukpa_record() has them). */
void ukpa_stack_record(const struct ukpa_probe *pr, const struct pt_regs *regs, uintptr_t ip,
		       uintptr_t caller, unsigned char *data);

/* --------------------------------------------------------- hist_hit.c */
struct ukp_hist;
struct ukpa_hist_table;
/* [init] spec->hist's (index: the SPEC's) */
struct ukpa_hist_table *ukpa_hist_new(const struct ukp_spec *spec, uint32_t index);
void ukpa_hist_free(struct ukpa_hist_table *t);                  /* [init] */
void ukpa_hist_reset(struct ukpa_hist_table *t);                 /* [init] */
void ukpa_hist_place(struct ukpa_hist_table *t);                 /* [init] */
/* [init] every SPEC's hist table into the image's region (once it has
 * one, before any probe is registered) */
void ukpa_probes_place_hists(void);
/* [hit] One hit that passed --filter: the hist's own filter, then its
 * entry. data/faults: the fetched arguments; comm, pid when the hist
 * uses them. */
void ukpa_hist_hit(struct ukpa_hist_table *t, const struct ukp_spec *spec,
		   const unsigned char *data, uint32_t faults, const char *comm, int pid);
/* [init] Does the hist read only registers as they are (plain_reg
 * arguments; no filter of its own, no comm, no common_pid)? Its hits can
 * then go to ukpa_hist_hit_regs(). */
bool ukpa_hist_regs_only(const struct ukpa_hist_table *t);
/* [hit] The hit of such a hist, straight from the registers. */
void ukpa_hist_hit_regs(struct ukpa_hist_table *t, const struct pt_regs *regs);
/* [init] The table to ukprobe (UKPM_SYM, UKPM_HIST). */
void ukpa_hist_send(const struct ukpa_hist_table *t, uint32_t spec);

/* --------------------------------------------------------- demangle.c */
/* [init] Is name a mangled C++ or Rust symbol? Its demangled form
 * (malloc'ed), or NULL when it is not one or does not demangle. */
bool ukpa_mangled(const char *name);
char *ukpa_demangle(const char *name);
/* [init] The qualified name in a demangled one, without return type,
 * template arguments and parameters ("int ns::f<int>(int)": "ns::f"),
 * for event names. */
void ukpa_demangled_base(const char *demangled, char *out, size_t len);
/* [init] Does a glob SPEC's pattern match the function name (a symbol
 * table's, its version suffix dropped), as it is or demangled? */
bool ukpa_glob_matches(const char *pattern, const char *name);

/* ------------------------------------------------------------- ring.c */
/* [init] The text of addr to ukprobe at once (UKPM_SYM). */
void ukpa_send_sym(uint64_t addr);
/* [hit] A reading of the clock events are stamped with (counter ticks, or
 * ns where the counter is not usable), and the ns a span of
 * readings lasted ($duration). */
uint64_t ukpa_clock_now(void);
uint64_t ukpa_clock_span_ns(uint64_t span);

/* What a return probe keeps from its function's entry (kretprobe
 * instance data): the registers, for $argN, and the entry's clock
 * reading, for $duration. */
struct ukpa_entry {
	struct pt_regs regs;
	uint64_t clock;
};

/* [init] trace -o FILE: the descriptor of the file the reader writes
 * (UKP_ENV_RAW_FD's value, or NULL). Before ukpa_rings_init(). */
void ukpa_rings_set_file(const char *fdtext);
/* [init] The same with a descriptor (an attached process: it came with
 * CONFIG); ukpa_rings_close_file() closes it when the session ends,
 * after the reader's last pass. */
void ukpa_rings_set_fd(int fd);
void ukpa_rings_close_file(void);
int ukpa_rings_init(void);                                     /* [init] */
int ukpa_reader_start(void);                 /* [init] start, or wake a parked one */
void ukpa_reader_objects_seen(void);         /* [init] the loaded objects looked at */
/* [init] Stop tracing, wait for handlers that are writing, drain every
 * ring, stop the reader (waiting for it at most timeout_ms, or for ever
 * when negative; it parks, it does not exit). Returns the number of
 * events lost. */
uint64_t ukpa_reader_stop(int timeout_ms);
/* [init] After ukpa_reader_stop(), at a detach: the thread ends. */
void ukpa_reader_exit(void);
/* [init] Wait (at most timeout_ms) until the events recorded so far are
 * sent. */
void ukpa_reader_flush(int timeout_ms);
/* [hit] Record one hit. caller: return address (return probes) or 0. */
void ukpa_record(const struct ukpa_probe *pr, const struct pt_regs *regs,
		 const struct pt_regs *entry, uintptr_t ip, uintptr_t caller);
/* [hit] The same by the thread whose state t is. */
void ukpa_record_in(struct ukpa_thread *t, const struct ukpa_probe *pr,
		    const struct pt_regs *regs, const struct pt_regs *entry, uintptr_t ip,
		    uintptr_t caller);
/* [init] In a forked child: empty rings in a region of its own
 * (region.c), nothing announced yet. 0 or -errno. */
int ukpa_rings_after_fork(void);
/* [init] A new image in the same process (the first, a failed exec, an
 * attach): a new region (counts from zero, the threads' rings empty),
 * nothing announced yet. 0 or -errno. */
int ukpa_rings_new_image(void);
/* [init][reader] "sym+0xoff/0xsize [obj]" of addr into buf; *func the
 * symbol's start. prefer: a "[obj:]sym" to name the symbol by when it is
 * one of its aliases (or NULL). */
void ukpa_symbolize(uintptr_t addr, char *buf, size_t len, uintptr_t *func, const char *prefer);

/* ---------------------------------------------------------- objects.c */
/* A loaded object, found by the names libukprobes accepts for it (file
 * name as linked, path, real file name, real path). */
struct ukpa_obj {
	char path[4096];          /* as loaded; the main program's real path */
	uintptr_t base;           /* load bias */
	bool is_main;
};
int ukpa_obj_find(const char *name, struct ukpa_obj *out);     /* [init] 0 or -ENOENT */
/* [init][reader] The loader's counters of objects added and removed
 * (the freestanding agent's walk: a digest of the set, and 0): equal
 * twice, no object came or went between (objects.c). */
struct ukpa_loader_counters {
	unsigned long long adds, subs;
};
void ukpa_loader_counters(struct ukpa_loader_counters *c);
/* [init] Is [vaddr, vaddr+1) in an executable segment of the object's
 * file? */
bool ukpa_obj_is_code(const struct ukpa_obj *obj, uint64_t vaddr);
/* [init] Is addr in an executable segment of a loaded object? */
bool ukpa_addr_is_code(uintptr_t addr);
/* [init] The loaded object with a segment holding addr (dladdr()'s
 * question, answered from the library's object table: no call into the
 * program's loader): its path (as loaded; the main program's real path),
 * bias and program headers. 0 or -ENOENT. */
struct ukpa_obj_at {
	struct ukpa_obj obj;
	const ElfW(Phdr) *phdr;
	size_t phnum;
};
int ukpa_obj_at(const void *addr, struct ukpa_obj_at *out);
/* [init] The file a not yet loaded object name would load (malloc'ed
 * real path), or NULL: a path as it is; a name searched as dlopen() would
 * (the library's find_module_file()). */
char *ukpa_obj_file(const char *name);
/* [init] For a SPEC waiting for its object: does the file have the
 * function (or a function matching the glob, or code at the address)?
 * Fills *what with UKP_WHAT_SYMBOL/NOMATCH/ADDR when not (OBJECT: the
 * file is no object), and *addr with the function's ELF address (an
 * IFUNC's: its resolver's) plus the offset. */
bool ukpa_file_has_point(const char *path, const struct ukp_spec *spec, uint32_t *what,
			 uint64_t *addr);

/* --------------------------------------------------------- datasyms.c */
/* [init] The address of a variable (or a function) named name: in object
 * first (NULL: none), then in every loaded object in load order, globals
 * first. 0 or -ENOENT. */
int ukpa_datasym_lookup(const char *object, const char *name, uintptr_t *addr);
/* The same with the symbol's size (0 if the file gives none). */
int ukpa_datasym_lookup_size(const char *object, const char *name, uintptr_t *addr,
			     uint64_t *size);
/* [any but hit] "sym+0xoff/0xsize [obj]" of addr in the sized symbol info
 * (a look-up's), or false. */
bool ukpa_datasym_format(const struct ksym_info *info, uintptr_t addr, char *buf, size_t len);
/* [init, reader] The same for the symbol holding addr. */
bool ukpa_datasym_symbolize(uintptr_t addr, char *buf, size_t len);

/* ----------------------------------------------------------- script.c */
/* [init] Load the compiled script UKPROBE_SCRIPT names, if any (before
 * ukpa_rings_init and the probes). 0, or -1 (said why). */
int ukpa_script_load(const char *path);
/* [init] attached: the script CONFIG named, loaded by
 * ukpa_script_load_set() once the SPECs are (0 when none, or -1) */
void ukpa_script_set_path(const char *path);
int ukpa_script_load_set(void);
bool ukpa_script_loaded(void);
/* [init] The largest record a script's hit emits (0: no script). */
size_t ukpa_script_payload(void);
/* [init] The script's handler for SPEC spec, or NULL. */
kprobe_pre_handler_t ukpa_script_kp(uint32_t spec);
kretprobe_handler_t ukpa_script_rp(uint32_t spec);
/* [init] START and BEGIN, once the probes are in; END and every map
 * once the last hit is recorded. */
void ukpa_script_begin(void);
/* exec: the image ends at an exec (with -f, another follows) */
void ukpa_script_end(bool exec);
/* [init] -f: root the launched (or attached) process's pid, whose images
 * run END and the interval probes; first: this image runs BEGIN (before
 * ukpa_script_load) */
void ukpa_script_set_root(pid_t root, bool first);
/* [init] -f: in a forked child (atfork), its own empty maps */
void ukpa_script_after_fork(void);
/* [hit] ring.c: a script's record of pr. */
void ukpa_record_data(const struct ukpa_probe *pr, uintptr_t ip, const void *data, uint32_t len);

/* -------------------------------------------------------- interpose.c */
/* [init] libc's dlopen, for the agent's own use. */
void *ukpa_real_dlopen(const char *file, int mode);

#ifdef UKP_FREE
/* free/signal_sites.c: the program's rt_sigaction and rt_sigprocmask
 * system calls go through the library's sigaction() and sigprocmask()
 * ([init], probes.c's lock) */
int ukpa_signal_sites_watch(void);
void ukpa_signal_sites_unwatch(void);
/* [hit] free/fork_sites.c: at a fork or clone instruction of the
 * program's (-f): true if the thread was sent to the agent's fork. */
bool ukpa_fork_site_pre(struct pt_regs *regs, uintptr_t addr);
/* [hit] (fork_sites.c) Does the system call nr(a0, a1, ...) fork (fork;
 * clone or clone3 without CLONE_VM, CLONE_THREAD, CLONE_VFORK or a stack
 * of its own)? */
bool ukpa_call_forks(long nr, unsigned long a0, unsigned long a1);
/* free/syscall_fn.c: with -f in a static program, the calls of its
 * syscall() that may fork, probed ([init], probes.c's lock) */
int ukpa_syscall_calls_watch(void);
void ukpa_syscall_calls_unwatch(void);
/* (fork_sites.c) [hit] Sends the thread at the system call site at addr
 * to the trampoline, where ukpa_fork_site_run makes the call in its own
 * context (an rt_sigprocmask through ukpa_sigprocmask_site_run). */
void ukpa_site_call_divert(struct pt_regs *regs, uintptr_t addr);
extern _Atomic int ukpa_forks_running;
/* free/script_map.c: `ukprobe run`'s compiled script at path mapped and
 * bound to the agent without a loader ([init]): its handle and *desc
 * (its ukp_script), or NULL with err (one line) */
void *ukpa_script_map(const char *path, const void **desc, char *err, size_t errlen);
void ukpa_script_unmap(void *h);
#endif

#endif /* UKPROBE_AGENT_H */
