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
#include "filter.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline bool recording(const struct ukpa_probe *pr)
{
	return !ukpa_busy && atomic_load_explicit(&ukpa_tracing, memory_order_relaxed) &&
	       atomic_load_explicit(&pr->live, memory_order_acquire);
}

/* A checked SPEC's hit: does it pass its --filter (and go into its
 * triggers)? A hist that reads only registers takes it, and a filter of
 * one comparison of a register decides, without a fetched record. */
static inline bool passes(const struct ukpa_probe *pr, const struct pt_regs *regs,
			  const struct pt_regs *entry)
{
	struct ukpa_spec *s = pr->spec;

	if (s->hist_regs) {
		ukpa_hist_hit_regs(s->hist, regs);
		return true;
	}
	if (s->reg_pred)
		return ukp_filter_pred_number(s->reg_pred,
					      ((const unsigned long *)regs)[s->reg_pred_arg.reg] &
						      s->reg_pred_arg.keep);
	return ukpa_filter_pass(s, pr->fspec, regs, entry);
}

/* stat: count, nothing else */
int ukpa_kp_count(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);

	(void)regs;
	if (recording(pr))
		ukpa_count_hit(pr);
	return 0;
}

/* stat with a hist read from the registers (and nothing else): the hist,
 * and the count */
int ukpa_kp_hist(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);

	if (recording(pr)) {
		ukpa_hist_hit_regs(pr->hist_regs, regs);
		ukpa_count_hit(pr);
	}
	return 0;
}

int ukpa_kp_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);

	if (!recording(pr))
		return 0;
	/* --filter: a rejected hit is neither counted nor recorded (nor put
	 * in the hist) */
	if (pr->spec->checked && !passes(pr, regs, regs))
		return 0;
	ukpa_count_hit(pr);
	if (ukpa_mode == UKP_MODE_TRACE && atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed))
		ukpa_record(pr, regs, regs, (uintptr_t)kp->addr, 0);
	return 0;
}

/* stat's return handler (no --filter): count, nothing else, and no
 * entry handler to copy the registers */
int ukpa_rp_count(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr;

	(void)regs;
	if (!rp)
		return 0;
	pr = container_of(rp, struct ukpa_probe, rp);
	if (recording(pr))
		ukpa_count_hit(pr);
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
static UKPA_TLS struct sdt_stack *my_sdt_stack;

/* [hit] The thread's stack: claimed on its first entry (a dead
 * thread's is taken back when none is free), or NULL. */
static struct sdt_stack *sdt_stack_get(void)
{
	int tid, i, round, saved;

	if (my_sdt_stack)
		return my_sdt_stack;
	tid = (int)syscall(SYS_gettid);
	saved = errno; /* (tgkill's ESRCH is not the program's) */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < SDT_STACKS; i++) {
			struct sdt_stack *st = &sdt_stacks[i];
			int owner = atomic_load_explicit(&st->owner, memory_order_relaxed);

			if (owner && (round == 0 || syscall(SYS_tgkill, getpid(), owner, 0) == 0))
				continue;
			if (!atomic_compare_exchange_strong(&st->owner, &owner, tid))
				continue;
			for (int k = 0; k < UKPA_SDT_PAIRS; k++)
				st->depth[k] = 0;
			my_sdt_stack = st;
			errno = saved;
			return st;
		}
	}
	errno = saved;
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
