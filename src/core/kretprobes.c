/* SPDX-License-Identifier: MIT */
/*
 * kretprobes.c - return probes (the kernel's kretprobe code in
 * kernel/kprobes.c and its rethook, for a process).
 *
 * A kretprobe is a kprobe on a function entry whose pre_handler
 * (ukp_kretprobe_pre_handler) takes an instance from the kretprobe's
 * pool, runs the entry_handler, records the real return address on the
 * thread's return stack and writes the trampoline's address over it. The
 * function's ret lands in the trampoline (arch code), which saves the
 * registers and calls ukp_kretprobe_dispatch: it pops this frame's
 * entries, runs the return handlers (oldest registered first) and hands
 * back the real return address.
 *
 * Instances: a holder per registered kretprobe (the kernel's
 * kretprobe_holder) owns maxactive instances in a lock-free pool. Every
 * instance out of the pool holds a reference on the holder; so does the
 * registration. Unregistering clears holder->rp (pending returns skip
 * their handler), waits for a grace period, and drops the registration's
 * reference; the holder is freed, from a registration call, once the
 * last reference is gone and another grace period has passed (every
 * recycling of an instance happens inside a read-side section).
 *
 * Return stacks: a static array of records, one per thread that ever hit
 * a kretprobe, found through an initial-exec TLS pointer. Entries are
 * pushed on the trap path (asynchronous signals blocked) or by the
 * kretprobe template (held back), and consumed by the dispatcher or the
 * trampoline's fast path, the unwinder interposers, and other threads
 * sweeping the records of dead threads. An instance changes hands only
 * through an atomic exchange of the entry's ri field, so that a signal
 * handler nesting on the same thread, or a sweeper, never recycles it
 * twice; the one exception is the trampoline's fast path, which clears
 * the field of its own live thread with a plain store while that
 * thread's signal handlers are held back (no sweeper takes a live
 * thread's entries).
 *
 * Spares: the arch fast paths of an optimized kretprobe (optprobe_tramp.S,
 * kretprobe_tramp.S) keep the instance of the return they finish as the
 * thread's spare, if it has none, instead of pushing it back to its pool,
 * and take it again at the thread's next entry of the same kretprobe: a
 * thread calling a probed function over and over touches no shared
 * cache line. A spare is free: whoever finds a pool empty takes the
 * spares of that pool from every thread (steal_spares) before counting
 * a miss, so that maxactive keeps its meaning (instances in flight), and
 * holders are reaped and dead threads swept with their spares. Only the
 * owner puts an instance into its spare; everyone takes one out with an
 * atomic exchange.
 *
 * Non-local exits (longjmp, exceptions, thread exit) leave entries whose
 * frame is gone. Like uprobes' cleanup_return_instances, a frame is known
 * gone when the stack pointer has moved above its return slot: entries
 * with a slot below the current one are dropped, without handlers,
 * whenever the thread enters a kretprobe or returns through the
 * trampoline; an entry at the very slot a new call uses is gone unless
 * that slot still holds the trampoline (several kretprobes on one
 * function, or a tail call, share one slot: "chained").
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "base/base.h"
#include "process/process.h"
#include "core/kretprobes.h"
#include "core/kretprobes_layout.h"
#include "base/obj_pool.h"
#define KRP_MAX_THREADS 4096
/* tid of a record being claimed or reclaimed */
#define KRP_TID_BUSY (-1)

#define krp_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static struct krp_thread krp_threads[KRP_MAX_THREADS];
static _Atomic unsigned int krp_hiwater; /* records ever claimed: [0, hiwater) */
/* This thread's record, claimed on its first entry: in the per-thread
 * block, where the arch fast paths read it (fastpath.h). */
#define krp_self ukp_ctl.rstack

static struct ukp_fmutex krp_mutex = UKP_FMUTEX_INIT;
/* [krp_mutex] registered holders by owner (batches of thousands) */
#define KRP_HOLDER_BUCKETS 4096
static struct kretprobe_holder *krp_registered[KRP_HOLDER_BUCKETS];
static struct kretprobe_holder *krp_zombies;    /* [krp_mutex] */
static _Atomic unsigned long krp_nholders;
static bool krp_inited;

#define TRAMPOLINE ((uintptr_t)ukp_kretprobe_trampoline)

/* ------------------------------------------------------------ pool */

/* The pool's operations are the fast paths' primitives (fastpath.h):
 * one definition for the C paths and the arch's assembly. */
#define inst_hdr ukp_fp_inst_hdr
#define inst_at ukp_fp_inst_at

/* [trap] A free instance (with a reference on h), or NULL. Only called
 * while the kretprobe is registered. */
static UKP_TRAP_TEXT struct kretprobe_instance *pool_get(struct kretprobe_holder *h)
{
	return ukp_fp_pool_pop(h);
}

/* [any] Give an instance back (ukp_fp_pool_push: the holder may be
 * freed, after a grace period, as soon as every instance is back). The
 * trampoline's fast path calls it as ukp_krp_recycle. */
static UKP_TRAP_TEXT void recycle(struct kretprobe_instance *ri)
{
	ukp_fp_pool_push(ri);
}

UKP_TRAP_TEXT void ukp_krp_recycle(struct kretprobe_instance *ri)
{
	recycle(ri);
}

/*
 * [any] Take the spares that belong to h (every one when h is NULL) from
 * the thread records: the first one of h is returned (want), the others
 * go back to their pools. Called before counting a miss, when reaping
 * holders, and for the records of dead threads (first..last).
 */
static UKP_TRAP_TEXT struct kretprobe_instance *steal_spares(struct kretprobe_holder *h, bool want,
							     unsigned int first, unsigned int last)
{
	struct kretprobe_instance *got = NULL;
	unsigned int i;

	for (i = first; i < last; i++) {
		struct krp_thread *t = &krp_threads[i];
		struct kretprobe_instance *ri = atomic_load_explicit(&t->spare, memory_order_relaxed);

		if (!ri || (h && inst_hdr(ri)->rph != h))
			continue;
		ri = atomic_exchange_explicit(&t->spare, NULL, memory_order_acquire);
		if (!ri)
			continue;
		if (want && !got && inst_hdr(ri)->rph == h)
			got = ri;
		else
			recycle(ri);
	}
	return got;
}

/*
 * [krp_mutex] Is every instance of an unregistered holder back in its
 * pool? Nothing takes one out any more (pool_get runs only while the
 * kretprobe is registered, and unregistration waited for the trap
 * paths), so the free list only grows: walking it while returns push
 * onto it is safe. This replaces a reference count that cost two atomic
 * read-modify-writes per hit.
 */
static bool all_back(struct kretprobe_holder *h)
{
	uint64_t head = atomic_load_explicit(&h->free_head, memory_order_acquire);
	uint32_t i = (uint32_t)head;
	int n = 0;

	while (i && n <= h->ninst) {
		n++;
		i = atomic_load_explicit(&h->free_next[i - 1], memory_order_relaxed);
	}
	return n == h->ninst;
}

static struct kretprobe_holder *holder_alloc(int n, size_t data_size)
{
	struct kretprobe_holder *h;
	size_t stride = sizeof(struct krp_inst_hdr) + sizeof(struct kretprobe_instance) +
			data_size;
	int i;

	stride = (stride + 15) & ~(size_t)15;
	if ((size_t)n > SIZE_MAX / stride)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->insts = calloc((size_t)n, stride);
	h->free_next = calloc((size_t)n, sizeof(*h->free_next));
	if (!h->insts || !h->free_next) {
		free(h->insts);
		free(h->free_next);
		free(h);
		return NULL;
	}
	h->stride = stride;
	h->ninst = n;
	for (i = 0; i < n; i++) {
		struct krp_inst_hdr *hd = inst_hdr(inst_at(h, (uint32_t)i));

		hd->rph = h;
		hd->idx = (uint32_t)i;
		atomic_init(&h->free_next[i], i + 1 < n ? (uint32_t)i + 2 : 0);
	}
	atomic_init(&h->free_head, 1);
	atomic_fetch_add(&krp_nholders, 1);
	return h;
}

static void holder_free(struct kretprobe_holder *h)
{
	free(h->insts);
	free(h->free_next);
	free(h);
	atomic_fetch_sub(&krp_nholders, 1);
}

/* ---------------------------------------------------- return stacks */

static UKP_TRAP_TEXT unsigned int depth_of(struct krp_thread *t)
{
	return atomic_load_explicit(&t->depth, memory_order_relaxed);
}

/* [thread] Publish a new depth after the entries it covers are final.
 * Only this thread (and signal handlers nesting on it) change it. */
static UKP_TRAP_TEXT void set_depth(struct krp_thread *t, unsigned int d)
{
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&t->depth, d, memory_order_relaxed);
}

/* [any] Recycle the instance of an entry whose frame is gone, if nobody
 * consumed it yet. No handler. */
static UKP_TRAP_TEXT void entry_drop(struct krp_entry *e)
{
	struct kretprobe_instance *ri = atomic_exchange_explicit(&e->ri, NULL,
								  memory_order_relaxed);

	if (ri)
		recycle(ri);
}

static UKP_TRAP_TEXT bool read_word(uintptr_t addr, uintptr_t *v)
{
	return arch_load_word_nofault(v, (const void *)addr) == 0;
}

static UKP_TRAP_TEXT bool write_word(uintptr_t addr, uintptr_t v)
{
	return arch_store_word_nofault((void *)addr, v) == 0;
}

/* [trap] Is the owner of t gone? (Its tid no longer exists in this
 * process, or t was inherited from the parent across fork.) */
static UKP_TRAP_TEXT bool rec_dead(struct krp_thread *t, int tid, int mypid)
{
	if (t == krp_self)
		return false;
	if (t->pid != mypid)
		return true;
	return ukp_sys_tgkill(mypid, tid, 0) == -ESRCH;
}

/*
 * [any] Reclaim the records of threads that died: their instances go
 * back to their pools, without handlers (the kernel's kprobe_flush_task).
 * all: also free records with no entries (when looking for a free one).
 * Returns the number of records freed.
 */
static UKP_TRAP_TEXT unsigned int sweep_dead(bool all)
{
	unsigned int i, j, freed = 0, n = atomic_load_explicit(&krp_hiwater, memory_order_acquire);
	int mypid = ukp_sys_getpid();

	for (i = 0; i < n; i++) {
		struct krp_thread *t = &krp_threads[i];
		int tid = atomic_load_explicit(&t->tid, memory_order_acquire);

		if (tid <= 0 || t == krp_self)
			continue;
		if (!all && depth_of(t) == 0)
			continue;
		if (!rec_dead(t, tid, mypid))
			continue;
		if (!atomic_compare_exchange_strong(&t->tid, &tid, KRP_TID_BUSY))
			continue;
		for (j = depth_of(t); j-- > 0;)
			entry_drop(&t->e[j]);
		steal_spares(NULL, false, i, i + 1);
		atomic_store_explicit(&t->depth, 0, memory_order_relaxed);
		atomic_store_explicit(&t->tid, 0, memory_order_release);
		freed++;
	}
	return freed;
}

/*
 * [trap] The calling thread's record when its block lost the pointer to
 * it: its own (ukprobe unmapped the blocks after a detach when no return
 * was pending: its depth is 0), or, in a forked child of a static
 * program (no atfork handler: its blocks read zero, thread_block.c), the
 * forking thread's copy, whose pending returns are the child's too
 * (krp_atfork_child's work). NULL if none.
 */
static UKP_TRAP_TEXT struct krp_thread *krp_find_lost(void)
{
	int me = ukp_sys_gettid(), mypid = ukp_sys_getpid();
	unsigned int n = atomic_load_explicit(&krp_hiwater, memory_order_acquire), i;
	unsigned long tp = arch_thread_pointer();

	for (i = 0; i < n; i++) {
		struct krp_thread *t = &krp_threads[i];
		int tid = atomic_load_explicit(&t->tid, memory_order_acquire);

		if (tid <= 0 || t->task != tp)
			continue;
		if ((tid == me && t->pid == mypid && depth_of(t) == 0) ||
		    (t->pid != mypid && atomic_compare_exchange_strong(&t->tid, &tid, me))) {
			t->pid = mypid;
			atomic_store_explicit(&t->tid, me, memory_order_release);
			krp_self = t;
			return t;
		}
	}
	return NULL;
}

/* [trap] This thread's record, claimed on first use; NULL when all are
 * taken by live threads. */
static UKP_TRAP_TEXT struct krp_thread *krp_claim(void)
{
	int round, i;

	if (krp_self)
		return krp_self;
	if (krp_find_lost())
		return krp_self;
	for (round = 0; round < 2; round++) {
		for (i = 0; i < KRP_MAX_THREADS; i++) {
			struct krp_thread *t = &krp_threads[i];
			int expect = 0;

			if (atomic_load_explicit(&t->tid, memory_order_relaxed) != 0)
				continue;
			if (!atomic_compare_exchange_strong(&t->tid, &expect, KRP_TID_BUSY))
				continue;
			t->pid = ukp_sys_getpid();
			t->task = arch_thread_pointer(); /* == pthread_self(), without libc */
			t->shstk = arch_shadow_stack_active();
			atomic_store_explicit(&t->depth, 0, memory_order_relaxed);
			for (unsigned int hw = atomic_load(&krp_hiwater); hw < (unsigned int)i + 1;)
				if (atomic_compare_exchange_weak(&krp_hiwater, &hw, (unsigned int)i + 1))
					break;
			/* pid and the rest before the tid (sweepers read tid first) */
			atomic_store_explicit(&t->tid, ukp_sys_gettid(), memory_order_release);
			krp_self = t;
			return t;
		}
		if (!sweep_dead(true))
			break;
	}
	return NULL;
}

/* ----------------------------------------------------- handler calls */

/*
 * Call an entry or return handler through ukp_call_handler (trap.c): a
 * fault inside it comes back as a non-zero return. While it runs,
 * kprobe_running() is kp and probe hits on this thread are missed.
 *
 * trap: called from the breakpoint path (entry_handler). Otherwise (a
 * return handler, from the dispatcher) the probe status is set for the
 * call. Either way the asynchronous signals are blocked, so the fault
 * handler's mask, which longjmp leaves in place, is the caller's.
 */
struct krp_call {
	kretprobe_handler_t fn;
	struct kretprobe_instance *ri;
};

UKP_TRAP_TEXT int ukp_krp_thunk(void *arg, struct pt_regs *regs)
{
	struct krp_call *kc = arg;
	int ret = kc->fn(kc->ri, regs);

	UKP_NO_TAIL_CALL(ret);
	return ret;
}

static UKP_TRAP_TEXT int call_krp_handler(kretprobe_handler_t fn, struct kretprobe_instance *ri,
					  struct pt_regs *regs, struct kprobe *kp, bool trap,
					  const void *vf)
{
	struct krp_call kc = { fn, ri };

	return ukp_call_handler(kp, ukp_krp_thunk, &kc, regs, trap ? 0 : KPROBE_HIT_ACTIVE, -EFAULT,
				(const void *)fn == vf);
}

/* --------------------------------------------------------- hit paths */

static UKP_TRAP_TEXT void krp_missed(struct kretprobe *rp)
{
	__atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
}

/*
 * [trap] The entry probe (the kernel's pre_handler_kretprobe +
 * arch_prepare_kretprobe). Always returns 0: the entry instruction runs
 * normally.
 */
UKP_TRAP_TEXT int ukp_kretprobe_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	struct kretprobe *rp = krp_container_of(p, struct kretprobe, kp);
	struct kretprobe_holder *h = __atomic_load_n(&rp->rph, __ATOMIC_ACQUIRE);
	kretprobe_handler_t entry;
	struct kretprobe_instance *ri;
	struct krp_thread *t;
	struct krp_entry *e;
	uintptr_t slot, cur, real;
	unsigned int d;
	bool chained;

	if (!h)
		return 0;
	t = krp_claim();
	if (!t || t->shstk) {
		krp_missed(rp);
		return 0;
	}
	slot = arch_kretprobe_ret_slot(regs);
	if (!arch_kretprobe_get_ret(regs, slot, &cur)) {
		krp_missed(rp);
		return 0;
	}
	chained = cur == TRAMPOLINE;

	/* Frames below this one, or an old frame at this very slot, are
	 * gone (left by longjmp, an exception, ...). */
	d = depth_of(t);
	while (d > 0) {
		e = &t->e[d - 1];
		if (e->slot > slot || (e->slot == slot && chained))
			break;
		entry_drop(e);
		d--;
	}
	set_depth(t, d);

	real = cur;
	if (chained) {
		/* Another kretprobe on this function (or a tail call from a
		 * probed function) hijacked the slot already: share its real
		 * return address, handle both at the one return. */
		if (d == 0 || t->e[d - 1].slot != slot) {
			krp_missed(rp);
			return 0;
		}
		real = t->e[d - 1].ret;
	}
	if (d >= KRP_MAX_DEPTH) {
		krp_missed(rp);
		return 0;
	}
	/* the thread's spare first (a return's fast path keeps it there):
	 * no shared cache line, as on the entry template's path. Looked at
	 * before it is taken: the exchange costs as much as the pool's, and
	 * with calls of many probed functions nested the spare is mostly
	 * another kretprobe's. Only this thread fills it: it can only have
	 * been stolen (NULL) since. */
	ri = atomic_load_explicit(&t->spare, memory_order_relaxed);
	if (ri && inst_hdr(ri)->rph == h)
		ri = atomic_exchange_explicit(&t->spare, NULL, memory_order_acquire);
	else
		ri = NULL;
	if (!ri)
		ri = pool_get(h);
	if (!ri)
		ri = steal_spares(h, true, 0,
				  atomic_load_explicit(&krp_hiwater, memory_order_acquire));
	if (!ri && sweep_dead(false))
		ri = pool_get(h);
	if (!ri) {
		krp_missed(rp);
		return 0;
	}
	ukp_fp_inst_init(ri, real, rp, t);
	entry = *(kretprobe_handler_t volatile *)&rp->entry_handler;
	if (entry && call_krp_handler(entry, ri, regs, p, true, h->vf_entry) != 0) {
		recycle(ri);
		return 0;
	}

	e = &t->e[d];
	ukp_fp_rstack_push(t, d, slot, real, ri);
	if (!chained && !arch_kretprobe_set_ret(regs, slot, TRAMPOLINE)) {
		set_depth(t, d);
		entry_drop(e);
		krp_missed(rp);
	}
	return 0;
}

static int warn_lost(void *arg)
{
	pr_warn("kretprobe: return address not found for the return at slot %#lx; "
		"sending SIGILL\n", (unsigned long)*(uintptr_t *)arg);
	return 0;
}

/*
 * The trampoline's C half (see kretprobes.h). It runs on the thread, at
 * the probed function's return, in whatever context that is. The
 * program's signal handlers are held back while it runs (defer_async, as
 * the breakpoint path blocks them): a program's signal handler that
 * longjmp()s away must not leave from the middle of it, with the read
 * side held and the per-thread probe state half set. Holding them back
 * costs nothing unless a signal arrives (two rt_sigprocmask calls per
 * return did, the cost of a trap).
 */
UKP_TRAP_TEXT uintptr_t ukp_kretprobe_dispatch(struct pt_regs *regs, uintptr_t *ret_slot, int lazy)
{
	struct kretprobe_instance *mine[KRP_MAX_DEPTH];
	struct ukp_ctlblk *c = &ukp_ctl;
	struct krp_thread *t = krp_self ? krp_self : krp_find_lost();
	uintptr_t slot = (uintptr_t)ret_slot, real = 0;
	int saved_errno = ukp_errno;
	bool saved_live = c->vec_live;
	unsigned int d, n = 0, i;

	c->vec_live = lazy;
	c->defer_async++;
	atomic_signal_fence(memory_order_seq_cst);
	if (!t)
		goto lost;
	ukp_read_lock(c);
	d = depth_of(t);
	/* Frames deeper than this one are gone. */
	while (d > 0 && t->e[d - 1].slot < slot) {
		entry_drop(&t->e[d - 1]);
		d--;
	}
	/* This frame's entries: one per kretprobe that fired at its entry,
	 * the oldest registered on top. */
	while (d > 0 && t->e[d - 1].slot == slot) {
		struct krp_entry *e = &t->e[d - 1];
		struct kretprobe_instance *ri;

		real = e->ret;
		ri = atomic_exchange_explicit(&e->ri, NULL, memory_order_relaxed);
		if (ri)
			mine[n++] = ri;
		d--;
	}
	if (!real) {
		set_depth(t, d);
		ukp_read_unlock(c);
		goto lost;
	}
	/* Unwinders see the real return address from here on. */
	arch_kretprobe_put_back(regs, slot, real);
	instruction_pointer_set(regs, real);
	set_depth(t, d);

	for (i = 0; i < n; i++) {
		struct kretprobe_instance *ri = mine[i];
		struct kretprobe_holder *h = inst_hdr(ri)->rph;
		struct kretprobe *rp = atomic_load_explicit(&h->rp, memory_order_acquire);

		if (rp) {
			kretprobe_handler_t fn = *(kretprobe_handler_t volatile *)&rp->handler;

			if (!fn)
				;
			else if (!c->in_handler && (!lazy || (const void *)fn == h->vf_handler))
				ukp_call_handler_outer(&rp->kp, fn, ri, regs, -EFAULT);
			else
				call_krp_handler(fn, ri, regs, &rp->kp, false, h->vf_handler);
		}
		recycle(ri);
	}
	ukp_read_unlock(c);
	ukp_defer_async_end(c);
	c->vec_live = saved_live;
	ukp_errno = saved_errno;
	return real;
lost:
	ukp_defer_async_end(c);
	c->vec_live = saved_live;
	/* libc formats the message: the vector state must be kept */
	if (lazy)
		arch_vecsafe_call(warn_lost, &slot);
	else
		warn_lost(&slot);
	ukp_errno = saved_errno;
	return 0;
}

/* --------------------------------------- unwinders and thread exit */

/*
 * [thread] Where the frame of entry i keeps its hijacked return address
 * now, or 0: arch_kretprobe_ret_loc() between the next deeper frame's
 * slot (or min_sp) and the entry's own slot.
 */
static uintptr_t ret_loc(struct krp_thread *t, unsigned int i, unsigned int d, uintptr_t min_sp)
{
	struct krp_entry *e = &t->e[i];
	uintptr_t lo = min_sp;
	unsigned int j;

	for (j = i + 1; j < d; j++) {
		if (t->e[j].slot < e->slot) {
			if (t->e[j].slot > lo)
				lo = t->e[j].slot;
			break;
		}
	}
	return arch_kretprobe_ret_loc(e->slot, lo, TRAMPOLINE, e->ret);
}

/* [thread] */
uint64_t ukp_krp_restore(uintptr_t min_sp, uintptr_t *locs)
{
	struct krp_thread *t = krp_self;
	uint64_t mask = 0;
	unsigned int i, d;

	if (!t)
		return 0;
	d = depth_of(t);
	for (i = d; i-- > 0;) {
		struct krp_entry *e = &t->e[i];
		uintptr_t loc;

		if (e->slot < min_sp)
			continue;
		loc = ret_loc(t, i, d, min_sp);
		if (loc && write_word(loc, e->ret)) {
			locs[i] = loc;
			mask |= 1ULL << i;
		}
	}
	return mask;
}

/* [thread] */
void ukp_krp_rehijack(uint64_t mask, const uintptr_t *locs)
{
	struct krp_thread *t = krp_self;
	uintptr_t cur;
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < KRP_MAX_DEPTH && i < depth_of(t); i++) {
		struct krp_entry *e = &t->e[i];

		if ((mask & (1ULL << i)) && read_word(locs[i], &cur) && cur == e->ret)
			write_word(locs[i], TRAMPOLINE);
	}
}

/* [any] */
uintptr_t ukp_krp_find_ret(unsigned long task, uintptr_t slot, void **cur)
{
	struct krp_thread *t = NULL;
	unsigned int i, start;

	if (!task || task == arch_thread_pointer()) {
		t = krp_self;
	} else {
		unsigned int n = atomic_load_explicit(&krp_hiwater, memory_order_acquire);

		for (i = 0; i < n; i++) {
			if (atomic_load_explicit(&krp_threads[i].tid, memory_order_acquire) > 0 &&
			    krp_threads[i].task == task) {
				t = &krp_threads[i];
				break;
			}
		}
	}
	if (!t)
		return 0;
	start = depth_of(t);
	if (cur && *cur && (uintptr_t)*cur - 1 < start)
		start = (unsigned int)((uintptr_t)*cur - 1);
	for (i = start; i-- > 0;) {
		struct krp_entry *e = &t->e[i];

		if (e->slot != slot)
			continue;
		/* skip the other entries of a chained slot */
		while (i > 0 && t->e[i - 1].slot == slot)
			i--;
		if (cur)
			*cur = (void *)(uintptr_t)(i + 1);
		return e->ret;
	}
	return 0;
}

/* ---------------------------------------------------- registration */

static void krp_atfork_prepare(void)
{
	ukp_fmutex_lock(&krp_mutex);
}

static void krp_atfork_parent(void)
{
	ukp_fmutex_unlock(&krp_mutex);
}

/* Only this thread exists in the child: it keeps its record (pending
 * returns work in the child); the others' are reclaimed lazily. */
static void krp_atfork_child(void)
{
	ukp_fmutex_init(&krp_mutex);
	if (ukp_tb_mapped() && krp_self) {
		krp_self->pid = ukp_sys_getpid();
		atomic_store_explicit(&krp_self->tid, ukp_sys_gettid(), memory_order_release);
	}
}

/* [krp_mutex] */
static int krp_init_locked(void)
{
	int ret;

	if (krp_inited)
		return 0;
	/* The core first: its fork handlers must be registered before ours
	 * (ours then run first in the parent: krp_mutex before ukp_mutex). */
	if (ukp_init())
		return -EINVAL;
	ret = arch_kretprobe_init();
	if (ret)
		return ret;
	if (!ukp_krp_unwind_ready())
		pr_info("kretprobes: libgcc_s not found: exceptions cannot unwind through "
			"pending return probes\n");
	pthread_atfork(krp_atfork_prepare, krp_atfork_parent, krp_atfork_child);
	krp_inited = true;
	return 0;
}

static unsigned int holder_hash(const struct kretprobe *rp)
{
	return (unsigned int)(((uintptr_t)rp >> 3) * 0x9E3779B1u) % KRP_HOLDER_BUCKETS;
}

/* [krp_mutex] The holder of a registered kretprobe, or NULL. */
static struct kretprobe_holder *holder_of(const struct kretprobe *rp)
{
	struct kretprobe_holder *h;

	for (h = krp_registered[holder_hash(rp)]; h; h = h->next)
		if (h->owner == rp)
			return h;
	return NULL;
}

static void registered_add(struct kretprobe_holder *h)
{
	struct kretprobe_holder **head = &krp_registered[holder_hash(h->owner)];

	h->next = *head;
	*head = h;
}

static void registered_del(struct kretprobe_holder *h)
{
	struct kretprobe_holder **pp;

	for (pp = &krp_registered[holder_hash(h->owner)]; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			h->next = NULL;
			return;
		}
	}
}

/* [krp_mutex] Free the holders whose last instance came back. */
static void krp_reap_locked(void)
{
	struct kretprobe_holder **pp, *h, *dead = NULL;
	struct ukp_ctlblk *c = &ukp_ctl;

	if (!krp_zombies)
		return;
	ukp_read_lock(c);
	sweep_dead(false);
	for (h = krp_zombies; h; h = h->next)
		steal_spares(h, false, 0, atomic_load_explicit(&krp_hiwater, memory_order_acquire));
	ukp_read_unlock(c);
	for (pp = &krp_zombies; (h = *pp);) {
		if (all_back(h)) {
			*pp = h->next;
			h->next = dead;
			dead = h;
		} else {
			pp = &h->next;
		}
	}
	if (!dead)
		return;
	/* Whoever pushed the last instance back has left its read side. */
	ukp_synchronize();
	while ((h = dead)) {
		dead = h->next;
		holder_free(h);
	}
}

/* [reg] Asked once: glibc reads /sys/devices/system/cpu/online at each
 * call, and a thousand kretprobes registered would read it a thousand
 * times; a pool sized for the CPUs at the first is as good. */
static int default_maxactive(void)
{
	static _Atomic int known;
	int v = atomic_load_explicit(&known, memory_order_relaxed);
	long n;

	if (v)
		return v;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	v = 2 * n > 10 ? (int)(2 * n) : 10;
	atomic_store_explicit(&known, v, memory_order_relaxed);
	return v;
}

/* The handler last proven (or not) vector-free: a batch's kretprobes
 * mostly share their handlers, and the proof walks code. */
struct vf_memo {
	kretprobe_handler_t fn;
	const void *proven; /* fn, or NULL */
};

/* [krp_mutex] fn if it is proven vector-free (vecstate.c), else NULL. */
static const void *vf_proven(struct vf_memo *m, kretprobe_handler_t fn)
{
	if (!fn)
		return NULL;
	if (m->fn != fn) {
		m->fn = fn;
		m->proven = ukp_vec_free_locking((const void *)fn) ? (const void *)fn : NULL;
	}
	return m->proven;
}

/*
 * [krp_mutex] rp's holder (maxactive instances), in place and published
 * before rp's probe is registered: the probe works as soon as it is
 * armed, which is when its batch is, or at once at a site a kprobe has
 * armed already. vf: the batch's memos of entry handlers and handlers.
 */
static int holder_prepare(struct kretprobe *rp, struct vf_memo vf[2],
			  struct kretprobe_holder **out)
{
	struct kretprobe_holder *h;

	if (holder_of(rp)) {
		pr_warn("kretprobes: the same kretprobe is registered twice\n");
		return -EINVAL;
	}
	if (rp->data_size > KRETPROBE_MAX_DATA_SIZE)
		return -E2BIG;
	if (rp->maxactive <= 0)
		rp->maxactive = default_maxactive();
	h = holder_alloc(rp->maxactive, rp->data_size);
	if (!h)
		return -ENOMEM;
	/* As the kernel: the user's pre/post handlers are overwritten (and
	 * the pre_handler makes the kprobe a kretprobe's: register_kprobes
	 * checks its point as register_kretprobe does). */
	rp->kp.pre_handler = ukp_kretprobe_pre_handler;
	rp->kp.post_handler = NULL;
	atomic_store_explicit(&h->rp, rp, memory_order_relaxed);
	h->owner = rp;
	h->vf_entry = vf_proven(&vf[0], rp->entry_handler);
	h->vf_handler = vf_proven(&vf[1], rp->handler);
	rp->nmissed = 0;
	__atomic_store_n(&rp->rph, h, __ATOMIC_RELEASE);
	registered_add(h);
	*out = h;
	return 0;
}

/*
 * [krp_mutex] The holders hs[] of rps[] (NULL entries skipped), whose
 * probes are unregistered or never were: no return handler of theirs
 * runs after this, and they wait among the zombies for their instances
 * to come back.
 */
static void holders_retire(struct kretprobe **rps, struct kretprobe_holder **hs, int num)
{
	bool any = false;
	int i;

	for (i = 0; i < num; i++) {
		if (!hs[i])
			continue;
		registered_del(hs[i]);
		hs[i]->owner = NULL;
		atomic_store_explicit(&hs[i]->rp, NULL, memory_order_release);
		any = true;
	}
	if (any)
		ukp_synchronize();
	for (i = 0; i < num; i++) {
		if (!hs[i])
			continue;
		__atomic_store_n(&rps[i]->rph, NULL, __ATOMIC_RELAXED);
		hs[i]->next = krp_zombies;
		krp_zombies = hs[i];
	}
	krp_reap_locked();
}

/*
 * The kernel's register_kretprobes: all or nothing. Every kretprobe's
 * holder is prepared first, then their kprobes go in one
 * register_kprobes() batch (one write per page and one thread
 * synchronization for all of them). On a failure the ones registered so
 * far are unregistered, and the error returned.
 */
UKPROBES_API int register_kretprobes(struct kretprobe **rps, int num)
{
	struct vf_memo vf[2] = { { 0 } };
	struct kretprobe_holder **hs;
	struct kprobe **kps;
	int i, ret;

	if (num <= 0 || !rps)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	hs = ukp_batch_zalloc((size_t)num * sizeof(*hs));
	kps = ukp_batch_zalloc((size_t)num * sizeof(*kps));
	if (!hs || !kps) {
		ukp_batch_free(hs);
		ukp_batch_free(kps);
		return -ENOMEM;
	}
	ukp_fmutex_lock(&krp_mutex);
	ret = krp_init_locked();
	if (!ret) {
		krp_reap_locked();
		if (arch_shadow_stack_active()) {
			pr_warn("kretprobes: return addresses cannot be rewritten under a shadow "
				"stack\n");
			ret = -EOPNOTSUPP;
		}
	}
	for (i = 0; !ret && i < num; i++) {
		ret = rps[i] ? holder_prepare(rps[i], vf, &hs[i]) : -EINVAL;
		kps[i] = rps[i] ? &rps[i]->kp : NULL;
	}
	if (!ret)
		ret = register_kprobes(kps, num);
	if (ret)
		holders_retire(rps, hs, num);
	ukp_fmutex_unlock(&krp_mutex);
	ukp_batch_free(hs);
	ukp_batch_free(kps);
	return ret;
}

UKPROBES_API int register_kretprobe(struct kretprobe *rp)
{
	return register_kretprobes(&rp, 1);
}

UKPROBES_API void unregister_kretprobes(struct kretprobe **rps, int num)
{
	struct kretprobe_holder **hs;
	struct kprobe **kps;
	int i, m = 0;

	if (num <= 0 || !rps || ukp_in_probe_context())
		return;
	hs = ukp_batch_zalloc((size_t)num * sizeof(*hs));
	kps = ukp_batch_zalloc((size_t)num * sizeof(*kps));
	if (!hs || !kps) {
		ukp_batch_free(hs);
		ukp_batch_free(kps);
		return;
	}
	ukp_fmutex_lock(&krp_mutex);
	for (i = 0; i < num; i++) {
		if (!rps[i])
			continue;
		hs[i] = holder_of(rps[i]);
		if (!hs[i]) {
			/* as unregister_kprobe on a probe that is not registered */
			rps[i]->kp.addr = NULL;
			continue;
		}
		kps[m++] = &rps[i]->kp;
	}
	/* No new instance after this (it waits for the trap paths). */
	unregister_kprobes(kps, m);
	holders_retire(rps, hs, num);
	ukp_fmutex_unlock(&krp_mutex);
	ukp_batch_free(hs);
	ukp_batch_free(kps);
}

UKPROBES_API void unregister_kretprobe(struct kretprobe *rp)
{
	unregister_kretprobes(&rp, 1);
}

UKPROBES_API int disable_kretprobe(struct kretprobe *rp)
{
	return rp ? disable_kprobe(&rp->kp) : -EINVAL;
}

UKPROBES_API int enable_kretprobe(struct kretprobe *rp)
{
	return rp ? enable_kprobe(&rp->kp) : -EINVAL;
}

/* [any] Valid for an instance handed to a handler. */
UKPROBES_API struct kretprobe *get_kretprobe(struct kretprobe_instance *ri)
{
	if (!ri)
		return NULL;
	return atomic_load_explicit(&inst_hdr(ri)->rph->rp, memory_order_acquire);
}

UKPROBES_API bool is_kretprobe_trampoline(unsigned long addr)
{
	return addr == TRAMPOLINE;
}

/*
 * [reg] Returns still to come through the trampoline: the entries of
 * every live thread's record (the dead threads' reclaimed first). The
 * freestanding agent's unload waits for none (the trampoline is its
 * code, the records its memory).
 */
unsigned int ukp_krp_pending(void)
{
	unsigned int i, n, total = 0;

	sweep_dead(false);
	n = atomic_load_explicit(&krp_hiwater, memory_order_acquire);
	for (i = 0; i < n; i++)
		if (atomic_load_explicit(&krp_threads[i].tid, memory_order_acquire) != 0)
			total += depth_of(&krp_threads[i]);
	return total;
}

/* [reg] */
bool ukp_krp_each_pending(void (*fn)(void *arg, int tid, uintptr_t slot, uintptr_t ret),
			  void *arg)
{
	unsigned int i, j, d, n;

	sweep_dead(false);
	n = atomic_load_explicit(&krp_hiwater, memory_order_acquire);
	for (i = 0; i < n; i++)
		if (atomic_load_explicit(&krp_threads[i].tid, memory_order_acquire) > 0 &&
		    depth_of(&krp_threads[i]) && krp_threads[i].shstk)
			return false;
	for (i = 0; i < n; i++) {
		struct krp_thread *t = &krp_threads[i];
		int tid = atomic_load_explicit(&t->tid, memory_order_acquire);

		if (tid <= 0)
			continue;
		d = depth_of(t);
		/* (a chained slot's real address is its first entry's) */
		for (j = 0; j < d; j++)
			if (j == 0 || t->e[j - 1].slot != t->e[j].slot)
				fn(arg, tid, t->e[j].slot, t->e[j].ret);
	}
	return true;
}

/* [any] */
uintptr_t ukp_krp_trampoline(void)
{
	return TRAMPOLINE;
}

/* ------------------------------------------------------------ tests */

unsigned long ukp_krp_holders_allocated(void)
{
	return atomic_load(&krp_nholders);
}

struct kretprobe_instance *ukp_krp_spare_of_self(void)
{
	return krp_self ? atomic_load(&krp_self->spare) : NULL;
}

void ukp_krp_reap(void)
{
	ukp_fmutex_lock(&krp_mutex);
	krp_reap_locked();
	ukp_fmutex_unlock(&krp_mutex);
}
