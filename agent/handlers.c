/* SPDX-License-Identifier: MIT */
/*
 * handlers.c - [hit] the probe handlers the agent registers: they run in
 * libukprobes' SIGTRAP handler (and the return trampoline), on any thread
 * of the program. Async-signal-safe and allocation-free: they read the
 * probe (immutable once live), count, and write one record into the
 * thread's ring (ring.c) with the fetch arguments (fetch.c).
 *
 * A hit records nothing while the thread runs agent code (ukpa_busy),
 * before the probe was announced (live), or when tracing stopped.
 */
#include <stddef.h>
#include <string.h>

#include "agent.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

int ukpa_kp_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);

	if (ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed) ||
	    !atomic_load_explicit(&pr->live, memory_order_acquire))
		return 0;
	atomic_fetch_add_explicit(&pr->hits, 1, memory_order_relaxed);
	if (ukpa_mode == UKP_MODE_TRACE)
		ukpa_record(pr, regs, regs, (uintptr_t)kp->addr, 0);
	return 0;
}

/*
 * stat's handlers: a count and nothing else. Kept apart from the tracing
 * ones, whose record path calls libc, so that the library proves them
 * vector-free and a jump-optimized hit takes its assembly fast path
 * instead of saving the vector state around the call.
 */
int ukpa_kp_count(struct kprobe *kp, struct pt_regs *regs)
{
	struct ukpa_probe *pr = container_of(kp, struct ukpa_probe, kp);

	(void)regs;
	if (!ukpa_busy && atomic_load_explicit(&ukpa_tracing, memory_order_relaxed) &&
	    atomic_load_explicit(&pr->live, memory_order_acquire))
		atomic_fetch_add_explicit(&pr->hits, 1, memory_order_relaxed);
	return 0;
}

int ukpa_rp_count(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr;

	(void)regs;
	if (!rp || ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	pr = container_of(rp, struct ukpa_probe, rp);
	if (atomic_load_explicit(&pr->live, memory_order_acquire))
		atomic_fetch_add_explicit(&pr->hits, 1, memory_order_relaxed);
	return 0;
}

/* Return probes: the registers at the entry are kept for $argN. */
int ukpa_rp_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr = rp ? container_of(rp, struct ukpa_probe, rp) : NULL;

	if (!pr || ukpa_busy || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed) ||
	    !atomic_load_explicit(&pr->live, memory_order_acquire))
		return 1; /* no return handler for this call */
	memcpy(ri->data, regs, sizeof(*regs));
	return 0;
}

int ukpa_rp_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct ukpa_probe *pr;

	if (!rp || !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		return 0;
	pr = container_of(rp, struct ukpa_probe, rp);
	atomic_fetch_add_explicit(&pr->hits, 1, memory_order_relaxed);
	if (ukpa_mode == UKP_MODE_TRACE)
		ukpa_record(pr, regs, (const struct pt_regs *)ri->data, (uintptr_t)rp->kp.addr,
			    (uintptr_t)ri->ret_addr);
	return 0;
}
