/* SPDX-License-Identifier: MIT */
/*
 * kretprobes.h - return probes: what kretprobes.c (instances, per-thread
 * return stacks, the trampoline's dispatcher) offers to the unwinder
 * interposers (kretprobe_unwind.c), the list (knobs.c) and the arch code.
 *
 * The per-thread return stack holds one entry per hijacked return: the
 * stack slot that now holds the trampoline address, the real return
 * address, and the instance. It lives in a static record claimed by the
 * thread (not in TLS), so that the instances of a thread that died with
 * returns pending can be reclaimed by another thread.
 *
 * Contexts as in base/base.h: [trap], [reg], [any]. "[thread]" means the
 * calling thread's own return stack, from any context of that thread
 * (signal handlers of the same thread may nest; every update is one
 * store or one atomic exchange, so a nested handler always sees a
 * consistent stack).
 */
#ifndef UKP_KRETPROBES_H
#define UKP_KRETPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ukprobes.h"

struct krp_thread;

/* The kretprobe pre_handler (the list shows its probes as "r"). */
int ukp_kretprobe_pre_handler(struct kprobe *p, struct pt_regs *regs);
/* [trap] How ukp_call_handler calls a kretprobe handler (for vecstate.c). */
int ukp_krp_thunk(void *arg, struct pt_regs *regs);

static inline bool ukp_is_kretprobe(const struct kprobe *p)
{
	return p->pre_handler == ukp_kretprobe_pre_handler;
}

/* The kretprobe of a kprobe that ukp_is_kretprobe() says is one. */
static inline struct kretprobe *ukp_kretprobe_of(struct kprobe *p)
{
	return (struct kretprobe *)(void *)((char *)p - offsetof(struct kretprobe, kp));
}

/*
 * Called by the trampoline with the registers at the return: regs->ax the
 * return value, regs->sp the stack pointer after the return; ret_slot is
 * the stack slot the return address was popped from (regs->sp - 8), which
 * is also the trampoline frame's own return-address slot. Runs the return
 * handlers, stores the real return address into *ret_slot and regs->ip,
 * and returns it; 0 when this thread has no pending return for that slot
 * (the trampoline then raises SIGILL).
 */
uintptr_t ukp_kretprobe_dispatch(struct pt_regs *regs, uintptr_t *ret_slot, int lazy);

/* [ret] An instance back to its pool (the trampoline's fast path, when
 * the thread's spare is taken). */
void ukp_krp_recycle(struct kretprobe_instance *ri);

/*
 * [thread] Put the real return address back wherever a live frame of the
 * calling thread (slots at or above min_sp) still keeps the trampoline
 * (its slot, or where it saved its link register). Returns a mask of
 * restored entries for ukp_krp_rehijack (bit i = return stack entry i)
 * and sets locs[i] (KRP_MAX_DEPTH words) to where each went.
 */
uint64_t ukp_krp_restore(uintptr_t min_sp, uintptr_t *locs);
/* [thread] Undo ukp_krp_restore for the entries in mask that still hold
 * their real return address. */
void ukp_krp_rehijack(uint64_t mask, const uintptr_t *locs);
/* [thread] The unwinder's CIE + FDE for the byte before the trampoline
 * on the calling thread (kretprobe_fde.c), NULL if it has no return
 * stack; *func: the start of the range it covers. */
const void *ukp_krp_pseudo_fde(uintptr_t *func);
/* [any] The real return address for slot on the calling thread (or on
 * the thread task), 0 if none; see kretprobe_find_ret_addr. */
uintptr_t ukp_krp_find_ret(unsigned long task, uintptr_t slot, void **cur);

/* [reg] True when libgcc's unwinder is known (kretprobe_unwind.c; the
 * call also links that file in from the static library). */
bool ukp_krp_unwind_ready(void);

/* [reg] Returns pending on the live threads (kretprobes.c). */
unsigned int ukp_krp_pending(void);
/* [reg] Each return pending on a live thread, once per slot: fn(arg,
 * tid, slot, ret) with the slot that holds the trampoline's address and
 * the real return address to put back there (the freestanding agent's
 * unload: tools/ukprobe/load.c puts them back with every thread stopped,
 * so that the trampoline can go). Returns false, having called fn for
 * none, when a thread with pending returns has a shadow stack (its
 * shadow copy would not match a put-back address). */
bool ukp_krp_each_pending(void (*fn)(void *arg, int tid, uintptr_t slot, uintptr_t ret),
			  void *arg);
/* [any] The trampoline that pending returns come back through. */
uintptr_t ukp_krp_trampoline(void);

/* For tests: kretprobe holders still allocated (registered or waiting
 * for their last instance), and a sweep of dead threads' records plus a
 * reap of the holders nobody can touch any more. */
unsigned long ukp_krp_holders_allocated(void);
void ukp_krp_reap(void);
/* For tests: the calling thread's spare instance (kretprobes.c), or NULL. */
struct kretprobe_instance *ukp_krp_spare_of_self(void);

#endif /* UKP_KRETPROBES_H */
