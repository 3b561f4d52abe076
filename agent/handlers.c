/* SPDX-License-Identifier: MIT */
/*
 * handlers.c - [hit] the probe handlers the agent registers: they run in
 * libukprobes' SIGTRAP handler, its detours and its return trampoline,
 * on any thread of the program. Async-signal-safe and allocation-free:
 * they read the probe (immutable once live), count in the thread's own
 * counters (counts.c), and in trace mode write one record into the
 * thread's ring (ring.c) with the fetch arguments (fetch.c).
 *
 * They must stay vector-free (agent.h): libukprobes then calls them from
 * a jump-optimized probe without saving the vector state (with AVX-512,
 * an XSAVE/XRSTOR pair costs far more than the whole hit). Hence the
 * hand-written copy below instead of memcpy.
 *
 * A hit records nothing while the thread runs agent code (ukpa_busy),
 * before the probe was announced (live), or when tracing stopped.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"
#include "filter.h"
#include "filter_branch.h"
#include "go_abi.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* The thread's agent state if the hit is recorded, else NULL (one look
 * for the thread's block per hit: the callers pass it on). */
static inline struct ukpa_thread *recording(const struct ukpa_probe *pr)
{
	struct ukpa_thread *t = ukpa_self();

	if (t->busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed) ||
	    !atomic_load_explicit(&pr->live, memory_order_acquire))
		return NULL;
	return t;
}

/* ukpa_filter_direct(), inlined into stat's handler of such a SPEC */
static inline __attribute__((always_inline)) bool filter_direct(struct ukpa_spec *s,
								const struct ukp_spec *fspec,
								const struct pt_regs *regs,
								const struct pt_regs *entry)
{
	const unsigned long *w = (const unsigned long *)regs;
	const struct ukpa_direct_arg *d = s->direct, *end = d + s->ndirect;
	uint64_t vals[UKP_SPEC_MAX_ARGS];

	for (; d < end; d++) {
		uint64_t v = w[d->reg];

		if (d->nderef) {
			struct ukprobes_fetched r =
				ukprobes_fetch_nofault_value(v, d->deref, d->nderef, d->size);

			/* a fault: the general path fetches again and marks it */
			if (r.err)
				return ukpa_filter_pass(s, fspec, regs, entry);
			v = r.val;
		}
		vals[d->arg] = (v + (uint64_t)d->add) & d->keep;
	}
	return ukp_fbranch_run(s->fb_args, vals);
}

bool ukpa_filter_direct(struct ukpa_spec *s, const struct ukp_spec *fspec,
			const struct pt_regs *regs, const struct pt_regs *entry)
{
	return filter_direct(s, fspec, regs, entry);
}

/* A checked SPEC's hit: does it pass its --filter (and go into its
 * triggers)? A hist that reads only registers takes it, and a filter of
 * registers as they are decides on them, without a fetched record. */
static inline bool passes(const struct ukpa_probe *pr, const struct pt_regs *regs,
			  const struct pt_regs *entry)
{
	struct ukpa_spec *s = pr->spec;

	if (s->hist_regs) {
		ukpa_hist_hit_regs(s->hist, regs);
		return true;
	}
	if (s->fb_regs)
		return ukp_fbranch_run(s->fb, (const uint64_t *)(const void *)regs);
	/* (an SDT probe's own arguments are not the SPEC's: never direct) */
	if (s->fb_args && pr->fspec == &s->spec)
		return ukpa_filter_direct(s, pr->fspec, regs, entry);
	return ukpa_filter_pass(s, pr->fspec, regs, entry);
}

/* stat: count, nothing else */
int ukpa_kp_count(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	struct ukpa_thread *t;

	(void)regs;
	if ((t = recording(pr)))
		ukpa_count_in(t, pr);
	return 0;
}

/* stat with a --filter on the registers as they are and nothing else
 * checked (ukpa_probe.fb_regs): passes() without its dispatch */
int ukpa_kp_count_regs(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	struct ukpa_thread *t;

	if ((t = recording(pr)) && ukp_fbranch_run(pr->fb_regs, (const uint64_t *)(const void *)regs))
		ukpa_count_in(t, pr);
	return 0;
}

/* stat with a --filter on registers and chains from them and nothing
 * else checked (ukpa_spec.fb_args): passes() without its dispatch */
int ukpa_kp_count_direct(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	struct ukpa_thread *t;

	if (!(t = recording(pr)))
		return 0;
	/* (an SDT or Go probe's own arguments are not the SPEC's: never
	 * direct) */
	if (pr->fspec == &pr->spec->spec ? filter_direct(pr->spec, pr->fspec, regs, regs)
					 : ukpa_filter_pass(pr->spec, pr->fspec, regs, regs))
		ukpa_count_in(t, pr);
	return 0;
}

/* stat with a hist read from the registers (and nothing else): the hist,
 * and the count */
int ukpa_kp_hist(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	struct ukpa_thread *t;

	if ((t = recording(pr))) {
		ukpa_hist_hit_regs(pr->hist_regs, regs);
		ukpa_count_in(t, pr);
	}
	return 0;
}

int ukpa_kp_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	struct ukpa_thread *t = recording(pr);

	if (!t)
		return 0;
	/* --filter: a rejected hit is neither counted nor recorded (nor put
	 * in the hist) */
	if (pr->spec->checked && !passes(pr, regs, regs))
		return 0;
	ukpa_count_in(t, pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed))
		ukpa_record_in(t, pr, regs, regs, (uintptr_t)kp->addr, 0);
	return 0;
}

/* stat's return handler (no --filter): count, nothing else, and no
 * entry handler to copy the registers */
int ukpa_rp_count(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr;
	struct ukpa_thread *t;

	(void)regs;
	if (!rp)
		return 0;
	pr = container_of(rp, struct ukpa_probe, rp);
	if ((t = recording(pr)))
		ukpa_count_in(t, pr);
	return 0;
}

/* [hit] A return probe that reads nothing of its entry (no $argN, no
 * $duration, no --filter or trigger: probes.c's probe_setup) has no
 * entry handler: the library's kretprobe entry template then calls no C
 * code at the function's start. Whether the hit is recorded is decided
 * at the return instead. Its arguments read the registers and memory at
 * the return (entry is regs: never read). */
int ukpa_rp_ret_plain(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr;
	struct ukpa_thread *t;

	if (!rp)
		return 0;
	pr = container_of(rp, struct ukpa_probe, rp);
	if (!(t = recording(pr)))
		return 0;
	ukpa_count_in(t, pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed))
		ukpa_record_in(t, pr, regs, regs, (uintptr_t)rp->kp.addr, (uintptr_t)ri->ret_addr);
	return 0;
}

/* Return probes: the registers at the entry are kept for $argN, and the
 * clock for $duration. */
int ukpa_rp_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr = rp ? container_of(rp, struct ukpa_probe, rp) : NULL;
	struct ukpa_entry *e = (struct ukpa_entry *)(void *)ri->data;
	unsigned long *dst = (unsigned long *)(void *)&e->regs;
	const unsigned long *src = (const unsigned long *)regs;
	size_t i;

	if (!pr || !recording(pr))
		return 1; /* no return handler for this call */
	/* not memcpy: libc's uses vector registers. The empty asm keeps the
	 * compiler from turning the loop into a memcpy call. */
	for (i = 0; i < sizeof(*regs) / sizeof(long); i++) {
		dst[i] = src[i];
		__asm__ volatile("" ::: "memory");
	}
	/* last: the time the handler took is not the function's */
	if (pr->spec->spec.uses_duration)
		e->clock = ukpa_clock_now();
	return 0;
}

int ukpa_rp_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr;

	if (!rp || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	pr = container_of(rp, struct ukpa_probe, rp);
	/* --filter: a rejected hit is neither counted nor recorded (nor put
	 * in the hist) */
	if (pr->spec->checked && !passes(pr, regs, (const struct pt_regs *)ri->data))
		return 0;
	ukpa_count_hit(pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed))
		ukpa_record(pr, regs, (const struct pt_regs *)ri->data, (uintptr_t)rp->kp.addr,
			    (uintptr_t)ri->ret_addr);
	return 0;
}

/* Watchpoints (w SPECs): after the access, on the accessing thread, in
 * the library's SIGSEGV or SIGTRAP handler. The event's ip is the next
 * instruction (%ip); its address is the watched one. */
void ukpa_watch_hit(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs)
{
	struct ukpa_probe *pr = bp->overflow_handler_context;

	if (ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed) ||
	    !atomic_load_explicit(&pr->live, memory_order_acquire))
		return;
	/* --filter: a rejected hit is neither counted nor recorded (nor put
	 * in the hist) */
	if (pr->spec->checked && !passes(pr, regs, regs))
		return;
	ukpa_count_hit(pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed))
		ukpa_record(pr, regs, regs, pr->waddr, 0);
}

/* ------------------------------------------------- SDT $duration */

/* A thread's entry times, one stack per pair. */
struct sdt_stack {
	_Atomic int owner;        /* tid, 0 when free */
	uint32_t depth[UKPA_SDT_PAIRS];
	uint64_t t[UKPA_SDT_PAIRS][UKPA_SDT_DEPTH];
};
#define SDT_STACKS 128
static struct sdt_stack sdt_stacks[SDT_STACKS];
/* (the thread's: in its block, agent.h) */
#define my_sdt_stack (*(struct sdt_stack **)&ukpa_self()->sdt_stack)

/* [hit] The thread's stack: claimed on its first entry (a dead
 * thread's is taken back when none is free), or NULL. */
static struct sdt_stack *sdt_stack_get(void)
{
	int tid, i, round;

	if (my_sdt_stack)
		return my_sdt_stack;
	tid = (int)ukpa_sys0(SYS_gettid);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < SDT_STACKS; i++) {
			struct sdt_stack *st = &sdt_stacks[i];
			int owner = atomic_load_explicit(&st->owner, memory_order_relaxed);

			if (owner && (round == 0 || ukpa_sys(SYS_tgkill, ukpa_sys0(SYS_getpid), owner, 0) == 0))
				continue;
			if (!atomic_compare_exchange_strong(&st->owner, &owner, tid))
				continue;
			for (int k = 0; k < UKPA_SDT_PAIRS; k++)
				st->depth[k] = 0;
			my_sdt_stack = st;
			return st;
		}
	}
	return NULL;
}

int ukpa_sdt_enter_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_sdt_enter *e = container_of(kp, struct ukpa_sdt_enter, kp);
	struct sdt_stack *st;
	uint32_t d;

	(void)regs;
	if (ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	st = sdt_stack_get();
	if (!st)
		return 0;
	d = st->depth[e->pair - 1]++;
	/* last: the time the handler took is not the function's */
	if (d < UKPA_SDT_DEPTH)
		st->t[e->pair - 1][d] = ukpa_clock_now();
	return 0;
}

int ukpa_kp_sdt_ret(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	struct sdt_stack *st = my_sdt_stack;
	struct ukpa_entry e;
	uint32_t d;

	if (!st || !st->depth[pr->sdt_pair - 1])
		return 0; /* no entry seen: no duration */
	d = --st->depth[pr->sdt_pair - 1];
	if (d >= UKPA_SDT_DEPTH || !recording(pr))
		return 0;
	e.clock = st->t[pr->sdt_pair - 1][d];
	/* (the registers are the return's: $argN are the note's, fetched
	 * from regs; entry is read for $duration only) */
	if (pr->spec->checked && !passes(pr, regs, &e.regs))
		return 0;
	ukpa_count_hit(pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed))
		ukpa_record(pr, regs, &e.regs, (uintptr_t)kp->addr, 0);
	return 0;
}

/* ------------------------------------------------------------- Go */

/*
 * Go functions' r events (go.c): per goroutine, a stack of the entries
 * of probed calls not returned yet. A record's depth is the distance of
 * the call's stack pointer from the top of the goroutine's stack
 * (g.stack.hi): the runtime keeps it when it copies the stack to grow
 * it, and the return instruction finds the same stack pointer as the
 * entry past the stack check. A record deeper than a return (or than a
 * new entry at the same depth) belongs to a call that will never return:
 * a panic unwound it, or the goroutine ended and its g was reused; it is
 * dropped. A goroutine runs on one thread at a time, so its slot has one
 * writer at a time; slots are claimed once per g (the runtime reuses the
 * g of ended goroutines) and never given back.
 */
#define GO_SLOTS 256
#define GO_DEPTH 32
struct go_rec {
	uint64_t depth;
	uint16_t pair;
	struct ukpa_entry e;
};
struct go_slot {
	_Atomic uintptr_t g;
	uint32_t n;
	struct go_rec rec[GO_DEPTH];
};
static struct go_slot go_slots[GO_SLOTS];

/* [hit] The goroutine's slot (claimed when claim), or NULL; *depth: the
 * distance from its stack's top of the stack pointer (plus sp_adj: at an
 * epilogue's start, the return's). */
static struct go_slot *go_slot(const struct pt_regs *regs, unsigned long sp_adj, bool claim,
			       uint64_t *depth)
{
	uintptr_t g = ukpa_go_g(regs), sp = user_stack_pointer(regs) + sp_adj, bounds[2];
	unsigned int h, i;

	/* g.stack.lo, g.stack.hi: the first words of the runtime's g */
	if (!g || copy_from_user_nofault(bounds, (const void *)g, sizeof(bounds)) ||
	    sp < bounds[0] || sp >= bounds[1])
		return NULL; /* not a goroutine's stack with g in its register */
	*depth = bounds[1] - sp;
	h = (unsigned int)((g >> 4) * 0x9e3779b97f4a7c15ull >> 56) % GO_SLOTS;
	for (i = 0; i < GO_SLOTS; i++) {
		struct go_slot *s = &go_slots[(h + i) % GO_SLOTS];
		uintptr_t k = atomic_load_explicit(&s->g, memory_order_acquire);

		if (k == g)
			return s;
		if (k)
			continue;
		if (!claim)
			return NULL;
		if (atomic_compare_exchange_strong(&s->g, &k, g)) {
			s->n = 0;
			return s;
		}
		if (k == g)
			return s;
	}
	return NULL;
}

/* (not memcpy, as ukpa_rp_entry) */
static void copy_words(void *dst, const void *src, size_t len)
{
	unsigned long *d = dst;
	const unsigned long *s = src;
	size_t i;

	for (i = 0; i < len / sizeof(long); i++) {
		d[i] = s[i];
		__asm__ volatile("" ::: "memory");
	}
}

int ukpa_go_exit_pre(struct kprobe *kp, struct pt_regs *regs)
{
	(void)kp;
	(void)regs;
	if (!ukpa_busy && atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		ukpa_reader_flush(1000);
	return 0;
}

int ukpa_go_enter_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_go_enter *e = container_of(kp, struct ukpa_go_enter, kp);
	struct go_slot *s;
	struct go_rec *r;
	uint64_t depth;

	if (ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	s = go_slot(regs, 0, true, &depth);
	if (!s)
		return 0;
	while (s->n && (s->rec[s->n - 1].depth > depth ||
			(s->rec[s->n - 1].depth == depth && s->rec[s->n - 1].pair == e->pair)))
		s->n--;
	if (s->n == GO_DEPTH)
		return 0; /* its return finds no entry: counted missed */
	r = &s->rec[s->n];
	r->depth = depth;
	r->pair = e->pair;
	copy_words(&r->e.regs, regs, sizeof(*regs));
	s->n++;
	/* last: the time the handler took is not the function's */
	r->e.clock = ukpa_clock_now();
	return 0;
}

/* [hit] The entry record of pair's call returning at regs, taken off
 * its goroutine's stack, or NULL. */
static const struct ukpa_entry *go_pop(uint16_t pair, const struct pt_regs *regs,
				       unsigned long sp_adj)
{
	struct go_slot *s;
	uint64_t depth;
	uint32_t i;

	s = go_slot(regs, sp_adj, false, &depth);
	if (!s)
		return NULL;
	while (s->n && s->rec[s->n - 1].depth > depth)
		s->n--;
	for (i = s->n; i-- > 0 && s->rec[i].depth == depth;) {
		if (s->rec[i].pair != pair)
			continue;
		/* another r SPEC's record of the same call above it: swapped
		 * down (their order does not matter) */
		if (i != s->n - 1) {
			struct go_rec tmp;

			copy_words(&tmp, &s->rec[i], sizeof(tmp));
			copy_words(&s->rec[i], &s->rec[s->n - 1], sizeof(tmp));
			copy_words(&s->rec[s->n - 1], &tmp, sizeof(tmp));
		}
		s->n--;
		return &s->rec[s->n].e; /* (this goroutine pushes again only later) */
	}
	return NULL;
}

int ukpa_go_ret_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);
	const struct ukpa_entry *e = NULL;
	const struct pt_regs *entry = regs;
	unsigned long caller = 0;
	struct pt_regs at_ret;

	if (pr->go_pair) {
		e = go_pop(pr->go_pair, regs, pr->go_exit.sp_adj);
		if (e)
			entry = &e->regs;
	}
	if (!recording(pr))
		return 0;
	if (pr->go_pair && !e) {
		/* its entry was not seen (deeper than GO_DEPTH pending calls,
		 * or the probes went in while it ran) */
		atomic_fetch_add_explicit(&pr->go_missed, 1, memory_order_relaxed);
		return 0;
	}
	if (pr->go_exit.addr != pr->go_exit.ret &&
	    (pr->spec->checked || ukpa_mode == UKP_MODE_TRACE)) {
		/* at the epilogue's start: what the return will have (the
		 * arguments are read from these registers) */
		copy_words(&at_ret, regs, sizeof(at_ret));
		if (ukpa_go_exit_regs(&at_ret, &pr->go_exit))
			return 0;
		regs = &at_ret;
		if (!e)
			entry = regs;
	}
	if (pr->spec->checked && !passes(pr, regs, entry))
		return 0;
	ukpa_count_hit(pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed)) {
		/* the return address, on top of the stack at the return */
		if (copy_from_user_nofault(&caller, (const void *)user_stack_pointer(regs),
					   sizeof(caller)))
			caller = 0;
		ukpa_record(pr, regs, entry, pr->go_func, caller);
	}
	return 0;
}
