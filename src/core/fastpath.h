/* SPDX-License-Identifier: MIT */
/*
 * fastpath.h - what the arch's assembly fast paths may touch (issue 17):
 * the optimized hit (optprobe_tramp.S), the kretprobe entry template and
 * the return trampoline (kretprobe_tramp.S on x86-64). An arch port
 * writes its fast paths against this file alone.
 *
 * Two blocks, owned by the core, touched by offset:
 *  - the per-site block (struct ukp_fp_site), at the start of struct
 *    ukp_site: the site pointer a detour passes points at it;
 *  - the per-thread block (struct ukp_fp_thread), at the start of the
 *    thread's ukp_ctl (struct ukp_ctlblk), in the library's room of the
 *    thread's block (base/tb_lib.h; no TLS): the arch's macro finds it
 *    (TB_CTL, THREAD_BLOCK) or sends the hit to the C path, which takes
 *    a block for a thread that has none yet.
 * src/asm_offsets.c generates their offsets as FS_* and FT_*; the fast
 * paths' .S files use no other generated offset.
 *
 * Everything else they do goes through the primitives below: operations
 * the core defines here (C, used by the C paths where they do the same
 * thing) and each arch implements once, as assembler macros or a call,
 * in src/arch/<arch>/fastpath_ops.h, against the same C definitions.
 * The macros are the only arch code that sees the layouts of the
 * kretprobe pool, the instances and the return stack
 * (kretprobes_layout.h) and of the public struct kprobe/kretprobe.
 *
 * Context: the fast paths run on the thread ([detour], [ret]) with the
 * program's signal handlers held back (defer_async), under the read
 * side; they must be async-signal-safe, allocation-free and lock-free.
 */
#ifndef UKP_FASTPATH_H
#define UKP_FASTPATH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ukprobes.h"
#include "arch_insn.h" /* ARCH_FAST_KRP_PAIR */
#include "core/kretprobes_layout.h"

struct ukp_site;
struct ukp_thread_rec;

/*
 * The per-site block: what a fast path reads of its site. Written [reg]
 * by kprobes.c (fast_pre, then fast_kp, release) and optimizer.c
 * (detour), read on hits under the read side.
 *   addr      the probe address (regs->ip = addr + UKP_BREAKPOINT_IP_OFFSET,
 *             FP_BREAKPOINT_IP_OFFSET: as after a breakpoint)
 *   fast_kp   the site's only probe when its pre_handler was proven
 *             vector-free, else NULL: no fast path
 *   fast_pre  that handler (the fast path still checks the probe's
 *             current one: ukp_fp_kprobe_ok)
 *   fast_rp   NULL, or a kretprobe without entry_handler registered
 *             after fast_kp at the same function entry (the site's two
 *             children: the usual `p F` + `r F` pair): the fast path
 *             then does that kretprobe's entry first (no C call), then
 *             calls fast_pre; an arch whose fast path does not know the
 *             pair (ARCH_FAST_KRP_PAIR 0) never gets one
 *   detour    the site's detour buffer (the arch knows where in it the
 *             detour resumes), 0 if none yet
 * The field list is a macro so that struct ukp_site embeds it both as
 * the named block (fp) and as plain members (s->addr).
 */
#if ARCH_FAST_KRP_PAIR
#define UKP_FP_SITE_PAIR struct kretprobe *fast_rp;
#else
#define UKP_FP_SITE_PAIR
#endif
#define UKP_FP_SITE_FIELDS                  \
	uintptr_t addr;                     \
	struct kprobe *_Atomic fast_kp;     \
	const void *fast_pre;               \
	UKP_FP_SITE_PAIR                    \
	_Atomic uintptr_t detour;

struct ukp_fp_site {
	UKP_FP_SITE_FIELDS
};

/*
 * The per-thread block: the first fields of the per-thread control block
 * (the kernel's kprobe_ctlblk). Read and written only by its own thread
 * (and its signal handlers).
 *   status, depth         probe status (KPROBE_HIT_*), read-side nesting;
 *   in_handler, defer_async
 *                         >0 while a user handler runs; >0 while the
 *                         program's signal handlers are held back (their
 *                         signals are marked in deferred_mask). Both
 *                         pairs are 32-bit words that the fast paths test
 *                         and clear as one 64-bit word each.
 *   cur_site, cur_kp      what kprobe_running() and the C paths report;
 *   fault_kp              the probe whose handler runs (a fault in it
 *                         calls its fault_handler);
 *   rec                   the grace-period record; its first word is the
 *                         read-side sequence (odd: inside);
 *   deferred_mask         signals held back meanwhile;
 *   jb                    the recovery point of a faulting handler
 *                         (__builtin_setjmp layout: frame pointer, label,
 *                         stack pointer);
 *   rstack                the thread's kretprobe return stack, claimed at
 *                         its first kretprobe hit (C path), or NULL.
 */
#define UKP_FP_THREAD_FIELDS                 \
	unsigned int status;                 \
	unsigned int depth;                  \
	int in_handler;                      \
	unsigned int defer_async;            \
	struct ukp_site *cur_site;           \
	struct kprobe *cur_kp;               \
	struct kprobe *fault_kp;             \
	struct ukp_thread_rec *rec;          \
	uint64_t deferred_mask;              \
	void *jb[5];                         \
	struct krp_thread *rstack;

struct ukp_fp_thread {
	UKP_FP_THREAD_FIELDS
};

/* ------------------------------------------------------------ primitives */
/*
 * Each arch implements these once (src/arch/<arch>/fastpath_ops.h); the
 * comment names the macro. kretprobes.c's C paths use the pool's, the
 * push and INST_INIT; the others are the fast paths' cases of what its
 * dispatcher and pre_handler do more generally (several entries per
 * frame, gone frames, handlers that need the vector state kept).
 * POOL_PUSH is a call (ukp_krp_recycle) in the assembly.
 *
 * IDLE_OR: the thread is idle (status, depth, in_handler, defer_async
 *   all 0), has its grace-period record (not the overflow one), and no
 *   writer asked for heavy read-side fences (ukp_reader_fence): the
 *   conditions of ukp_read_lock()'s inline case, and of no nesting.
 * READ_ENTER / READ_LEAVE: the read side's sequence +1 (odd: inside;
 *   even: outside), after depth/status were set (ukp_read_lock/unlock).
 * LEAVE_HELD: status/depth and in_handler/defer_async cleared, the read
 *   side left, then ukp_defer_async_flush() if a signal came meanwhile
 *   (ukp_read_unlock + ukp_defer_async_end at the outer level).
 */

/* KPROBE_OK: may the fast path call pre for kp? */
static inline bool ukp_fp_kprobe_ok(const struct kprobe *kp, const void *pre)
{
	return (const void *)*(kprobe_pre_handler_t volatile *)&kp->pre_handler == pre &&
	       !*(kprobe_post_handler_t volatile *)&kp->post_handler &&
	       !(kp->flags & (KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED));
}

/* KRP_HOLDER: the holder of rp (its kp first) when the entry needs no
 * C call (no entry_handler), else NULL. */
static inline struct kretprobe_holder *ukp_fp_krp_holder(const struct kretprobe *rp)
{
	if (*(kretprobe_handler_t volatile *)&rp->entry_handler)
		return NULL;
	return __atomic_load_n(&rp->rph, __ATOMIC_ACQUIRE);
}

/* The instance at index i of h's pool (header in front). */
static inline struct kretprobe_instance *ukp_fp_inst_at(struct kretprobe_holder *h, uint32_t i)
{
	return (struct kretprobe_instance *)(h->insts + (size_t)i * h->stride +
					     sizeof(struct krp_inst_hdr));
}

static inline struct krp_inst_hdr *ukp_fp_inst_hdr(struct kretprobe_instance *ri)
{
	return (struct krp_inst_hdr *)((char *)ri - sizeof(struct krp_inst_hdr));
}

/* POOL_POP: a free instance of h, or NULL (lock-free: an ABA tag in the
 * head's upper half). */
static inline struct kretprobe_instance *ukp_fp_pool_pop(struct kretprobe_holder *h)
{
	uint64_t old = atomic_load_explicit(&h->free_head, memory_order_acquire), new;
	uint32_t i;

	do {
		i = (uint32_t)old;
		if (!i)
			return NULL;
		new = (((old >> 32) + 1) << 32) |
		      atomic_load_explicit(&h->free_next[i - 1], memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&h->free_head, &old, new,
							 memory_order_acquire,
							 memory_order_acquire));
	return ukp_fp_inst_at(h, i - 1);
}

/* POOL_PUSH: ri back to its pool. The holder may be freed once every
 * instance is back: nothing touches it after the push. The fast paths
 * call it (ukp_krp_recycle, C). */
static inline void ukp_fp_pool_push(struct kretprobe_instance *ri)
{
	struct krp_inst_hdr *hd = ukp_fp_inst_hdr(ri);
	struct kretprobe_holder *h = hd->rph;
	uint32_t i = hd->idx;
	uint64_t old = atomic_load_explicit(&h->free_head, memory_order_relaxed), new;

	do {
		atomic_store_explicit(&h->free_next[i], (uint32_t)old, memory_order_relaxed);
		new = (((old >> 32) + 1) << 32) | (i + 1);
	} while (!atomic_compare_exchange_weak_explicit(&h->free_head, &old, new,
							 memory_order_release,
							 memory_order_relaxed));
}

/* SPARE_TAKE: the thread's spare instance when it is one of h's, else
 * NULL (another's spare stays: only its owner fills it, so putting it
 * back races with nobody but a stealer's exchange, which finds it). */
static inline struct kretprobe_instance *ukp_fp_spare_take(struct krp_thread *t,
							   struct kretprobe_holder *h)
{
	struct kretprobe_instance *ri = atomic_exchange(&t->spare, NULL);

	if (ri && ukp_fp_inst_hdr(ri)->rph != h) {
		atomic_store_explicit(&t->spare, ri, memory_order_relaxed);
		ri = NULL;
	}
	return ri;
}

/* SPARE_PUT: keep ri as the thread's spare if it has none (true), else
 * the caller pushes it back to its pool. */
static inline bool ukp_fp_spare_put(struct krp_thread *t, struct kretprobe_instance *ri)
{
	if (atomic_load_explicit(&t->spare, memory_order_relaxed))
		return false;
	atomic_store_explicit(&t->spare, ri, memory_order_relaxed);
	return true;
}

/* RSTACK_ROOM: may t take an entry for the return slot at slot? No
 * shadow stack, not full, and no entry of a gone frame (at or below
 * slot) on top: the C path drops those first. *d = the depth. */
static inline bool ukp_fp_rstack_room(struct krp_thread *t, uintptr_t slot, unsigned int *d)
{
	if (t->shstk)
		return false;
	*d = atomic_load_explicit(&t->depth, memory_order_relaxed);
	return *d == 0 || (*d < KRP_MAX_DEPTH && t->e[*d - 1].slot > slot);
}

/* INST_INIT: an instance's public fields at an entry. */
static inline void ukp_fp_inst_init(struct kretprobe_instance *ri, uintptr_t ret,
				    struct kretprobe *rp, const struct krp_thread *t)
{
	ri->ret_addr = (kprobe_opcode_t *)ret;
	ri->rp = rp;
	ri->task = t->task;
}

/* RSTACK_PUSH: entry d of t's return stack (d = its depth, below
 * KRP_MAX_DEPTH), then the depth published after it. */
static inline void ukp_fp_rstack_push(struct krp_thread *t, unsigned int d, uintptr_t slot,
				      uintptr_t ret, struct kretprobe_instance *ri)
{
	struct krp_entry *e = &t->e[d];

	e->slot = slot;
	e->ret = ret;
	atomic_store_explicit(&e->ri, ri, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&t->depth, d + 1, memory_order_relaxed);
}

/* RSTACK_TOP: the top entry of t when it is the only one of the return
 * slot at slot (else NULL: none, gone frames on top, or chained), *d =
 * the depth. RSTACK_TOP_RI: its instance, NULL when dropped meanwhile. */
static inline struct krp_entry *ukp_fp_rstack_top(struct krp_thread *t, uintptr_t slot,
						  unsigned int *d)
{
	struct krp_entry *e;

	*d = atomic_load_explicit(&t->depth, memory_order_relaxed);
	if (!*d)
		return NULL;
	e = &t->e[*d - 1];
	if (e->slot != slot || (*d > 1 && e[-1].slot == slot))
		return NULL;
	return e;
}

/*
 * RSTACK_POP (the return trampoline's case): the top entry e[d - 1] is
 * the only one of the return slot at slot (RSTACK_TOP checked it, and
 * RSTACK_TOP_RI that its instance is still there); the instance is
 * taken with a plain store (only this thread takes entries of its live
 * stack, its signal handlers held back), the real return address goes
 * back where the return address is kept (*slot: the stack slot on
 * x86-64, whose address is also the frame's identity; on AArch64 the
 * x30 the trampoline restores, the identity being the entry's sp;
 * unwinders see it from then on), then the depth is lowered; returns
 * that address. The C paths take instances with an
 * atomic exchange instead (they may nest).
 */
static inline uintptr_t ukp_fp_rstack_pop(struct krp_thread *t, unsigned int d, uintptr_t *slot)
{
	struct krp_entry *e = &t->e[d - 1];

	atomic_store_explicit(&e->ri, NULL, memory_order_relaxed);
	*slot = e->ret;
	atomic_store_explicit(&t->depth, d - 1, memory_order_relaxed);
	return e->ret;
}

/* RET_HANDLER: the return handler of instance ri's kretprobe, NULL when
 * it has none or is gone (unregistered); the fast path calls it only
 * when it is the one proven vector-free at registration. */
static inline kretprobe_handler_t ukp_fp_ret_handler(struct kretprobe_instance *ri,
						     bool *proven)
{
	struct kretprobe_holder *h = ukp_fp_inst_hdr(ri)->rph;
	struct kretprobe *rp = atomic_load_explicit(&h->rp, memory_order_acquire);
	kretprobe_handler_t fn = rp ? *(kretprobe_handler_t volatile *)&rp->handler : NULL;

	*proven = !fn || (const void *)fn == h->vf_handler;
	return fn;
}

#endif /* UKP_FASTPATH_H */
