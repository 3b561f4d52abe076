/* SPDX-License-Identifier: MIT */
/*
 * thread_block.c - the per-thread blocks' arena (common/thread_block.h):
 * one private anonymous mapping of UKP_TB_COUNT blocks, mapped at the
 * first need, in which a thread's block is found by its GS base (x86-64
 * with FSGSBASE) or as a table keyed by its thread pointer.
 *
 * A block is given by compare-and-swap of its owner word (UNUSED or FREE
 * to CLAIM, then the thread pointer once its rooms are zero), from the
 * thread pointer's first slot on, with the thread's signals blocked (a
 * handler that needs a block meanwhile would take a second one). The
 * blocks of threads that are gone (tgkill(pid, tid, 0): ESRCH) are taken
 * back when the arena is full; a block is given back by its tid word
 * first (compare-and-swap to 0), so that two sweeps, or a sweep and a
 * new owner, never both have it. Private memory: a forked child has its
 * own copy (the forking thread keeps its block, as with TLS: the
 * child's atfork handler, or the first look-up in the child before it,
 * makes it the child thread's); a vfork()
 * child shares its parent's thread and block, as it shares its TLS.
 * exec() resets the GS base (the kernel).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "base/base.h"
#include "base/sys.h"
#include "thread_block.h"

char *ukp_tb_arena;
uintptr_t ukp_tb_gs_lo;
int ukp_tb_gs_fast;
int ukp_tb_go;

/* The block of threads that found none: its rooms' first int (the
 * rooms' "not now" count by convention: the agent's busy) is large, so
 * they record nothing. */
static union {
	struct ukp_tb_head h;
	char b[UKP_TB_SIZE];
} overflow __attribute__((aligned(64))) = {
	.h = { .owner = UKP_TB_FREE, .overflow = 1 },
};

static _Atomic int gs_known; /* 0: not looked at yet, 1: no FSGSBASE, 2: x86-64 with it */
static bool unmapped_once; /* GS bases may point into an arena that is gone */
static _Atomic int fork_pid; /* a forked child's, once its forking thread's block is its own */
#ifdef UKP_FREE
static int arena_pid;        /* the process that mapped the arena */
static _Atomic int fork_told; /* the child ukp_tb_forked was called in */

/* [any] (common/thread_block.h: the agent's replaces it) */
__attribute__((weak)) UKP_TRAP_TEXT void ukp_tb_forked(void)
{
}
#endif
#if defined(__x86_64__)
static bool zero_page;     /* ours at ARCH_TB_GS_BIAS */
#endif

#define HWCAP2_FSGSBASE_BIT (1UL << 1)

/* Are GS bases used (x86-64 with FSGSBASE)? Looked at before the
 * library's other constructors run (they may need a block), never on
 * the hit path (libc's getauxval and getenv are no code of the hit
 * path's: vecstate.c's proof). A block needed before (a handler during
 * an earlier constructor) settles it as "no": the arena is set up for
 * GS bases or not when it is mapped. UKPROBES_GSBASE=0: the table
 * (tests, as on AArch64). */
__attribute__((constructor(101))) static void tb_init_gs(void)
{
	int expect = 0, v = 1;
#if defined(__x86_64__)
	const char *no = getenv("UKPROBES_GSBASE");

	if ((ukp_getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE_BIT) && !(no && !strcmp(no, "0")))
		v = 2;
#endif
	atomic_compare_exchange_strong(&gs_known, &expect, v);
}

__attribute__((constructor)) static void tb_init(void)
{
	pthread_atfork(NULL, NULL, ukp_thread_blocks_after_fork_child);
}

/* [any] Are GS bases used? (tb_init_gs; "no" if asked before it ran) */
static UKP_TRAP_TEXT bool use_gs(void)
{
	int expect = 0;

	if (__builtin_expect(atomic_load_explicit(&gs_known, memory_order_relaxed) == 0, 0))
		atomic_compare_exchange_strong(&gs_known, &expect, 1);
	return atomic_load_explicit(&gs_known, memory_order_relaxed) == 2;
}

/* [any] The overflow block, its rooms saying "not now" (the same plain
 * stores by any thread: set before the first thread is given it). */
static UKP_TRAP_TEXT void *overflow_block(void)
{
	*(volatile int *)(void *)(overflow.b + UKP_TB_LIB_OFF) = 1 << 30;
	*(volatile int *)(void *)(overflow.b + UKP_TB_AGENT_OFF) = 1 << 30;
	overflow.h.self = &overflow;
	return &overflow;
}

static UKP_TRAP_TEXT struct ukp_tb_head *at(char *a, size_t i)
{
	return (struct ukp_tb_head *)(void *)(a + i * UKP_TB_SIZE);
}

/* [any] The thread's key: what its block's owner word holds. */
static UKP_TRAP_TEXT uintptr_t my_key(void)
{
	return arch_tb_tp();
}

/* [any] The calling thread's GS base: block h's (NULL: none). */
static UKP_TRAP_TEXT void set_gs(struct ukp_tb_head *h)
{
#if defined(__x86_64__)
	uintptr_t v = h ? (uintptr_t)h - ARCH_TB_GS_BIAS : 0;

	__asm__ volatile("wrgsbase %0" : : "r"(v) : "memory");
#else
	(void)h;
#endif
}

/* [any] Is the GS base ours (0, or a block's of arena a)? */
static UKP_TRAP_TEXT bool gs_ours(char *a)
{
#if defined(__x86_64__)
	uintptr_t g = arch_tb_rdgsbase();

	return !g || (a && g + ARCH_TB_GS_BIAS - (uintptr_t)a < UKP_TB_ARENA);
#else
	(void)a;
	return true;
#endif
}

#if defined(__x86_64__)
/* [any] The zero page a GS base of 0 reads (thread_block_arch.h): at a
 * fixed address, never in the program's way (below any executable's),
 * or not at all (then rdgsbase is used). Its owner word is ~0, no
 * thread's key (0 would be a Go thread's before its first look-up), and
 * then it is made read-only. */
static UKP_TRAP_TEXT bool map_zero_page(void)
{
	long r = arch_syscall6(__NR_mmap, ARCH_TB_GS_BIAS, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (r == (long)ARCH_TB_GS_BIAS) {
		atomic_store_explicit(&((struct ukp_tb_head *)ARCH_TB_GS_BIAS)->owner, ~(uintptr_t)0,
				      memory_order_relaxed);
		if (!arch_syscall3(__NR_mprotect, r, 4096, PROT_READ)) {
			ukp_own_map_note((void *)r, 4096);
			return true;
		}
		arch_syscall3(__NR_munmap, r, 4096, 0);
		return false;
	}
	if (r > 0 || r < -4095) /* (a kernel without MAP_FIXED_NOREPLACE: elsewhere) */
		arch_syscall3(__NR_munmap, r, 4096, 0);
	return false;
}
#endif

/* [any] The arena, mapped by the first thread that needs it (a thread
 * that loses the race unmaps its own). NULL if it cannot be mapped. */
static UKP_TRAP_TEXT char *arena(void)
{
	char *a = __atomic_load_n(&ukp_tb_arena, __ATOMIC_ACQUIRE), *none = NULL;
	long r;

	if (a)
		return a;
	r = arch_syscall6(__NR_mmap, 0, UKP_TB_ARENA, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r < 0 && r > -4096)
		return NULL;
	a = (char *)r;
	if (!__atomic_compare_exchange_n(&ukp_tb_arena, &none, a, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		arch_syscall3(__NR_munmap, (long)a, UKP_TB_ARENA, 0);
		return none;
	}
	ukp_own_map_note(a, UKP_TB_ARENA);
#ifdef UKP_FREE
	/* No atfork handler runs in a static program (none can be given
	 * to its C library): a forked child's copy of the arena reads zero,
	 * so that its first hit takes a block (claim), which tells the
	 * agent (ukp_tb_forked) before anything is recorded in the
	 * parent's shared memory. */
	arena_pid = ukp_sys_getpid();
	arch_syscall3(__NR_madvise, (long)a, UKP_TB_ARENA, MADV_WIPEONFORK);
#endif
#if defined(__x86_64__)
	if (use_gs() && !unmapped_once && map_zero_page()) {
		zero_page = true;
		__atomic_store_n(&ukp_tb_gs_fast, 1, __ATOMIC_RELEASE);
	}
	else if (use_gs())
		__atomic_store_n(&ukp_tb_gs_lo, (uintptr_t)a, __ATOMIC_RELEASE);
#endif
	return a;
}

/* [any] Give a block back if its thread (tid) is gone, or unconditionally
 * when dead is false and tid is the caller's. */
static UKP_TRAP_TEXT void give_back(struct ukp_tb_head *h, int tid)
{
	int expect = tid;

	if (tid > 0 && atomic_compare_exchange_strong(&h->tid, &expect, 0))
		atomic_store_explicit(&h->owner, UKP_TB_FREE, memory_order_release);
}

static UKP_TRAP_TEXT const _Atomic int *tid_word(struct ukp_tb_head *h);

/* [any] h made the calling thread's (a forked child's copy of its
 * parent thread's block). */
static UKP_TRAP_TEXT void adopt(struct ukp_tb_head *h)
{
	atomic_store(&h->tid, ukp_sys_gettid());
	h->pid = ukp_sys_getpid();
	h->tidp = tid_word(h);
}

/* [any] The thread pointer's block, probing from its first slot. */
static UKP_TRAP_TEXT struct ukp_tb_head *table_lookup(char *a, uintptr_t key)
{
	size_t i = ukp_tb_hash(key), n;

	for (n = 0; n < UKP_TB_COUNT; n++) {
		struct ukp_tb_head *h = at(a, (i + n) & (UKP_TB_COUNT - 1));
		uintptr_t o = atomic_load_explicit(&h->owner, memory_order_acquire);

		if (o == key && ukp_tb_live(h))
			return h;
		if (o == key && h->pid != ukp_sys_getpid() &&
		    atomic_load(&fork_pid) != ukp_sys_getpid()) {
			/* the forking thread's, in its child before the atfork
			 * handler said so (libc wrote the child's tid already;
			 * no other thread runs yet) */
			adopt(h);
			return h;
		}
		if (o == key)
			give_back(h, atomic_load(&h->tid)); /* a gone thread's */
		if (o == UKP_TB_UNUSED)
			break;
	}
	return NULL;
}

/* [any] The word the kernel clears at the calling thread's end (the one
 * its libc or the library's raw clone gave it), or h's own tid word when
 * it has none or cannot say (a kernel without PR_GET_TID_ADDRESS). */
static UKP_TRAP_TEXT const _Atomic int *tid_word(struct ukp_tb_head *h)
{
	int *p = NULL;

	if (arch_syscall3(__NR_prctl, PR_GET_TID_ADDRESS, (long)&p, 0) == 0 && p &&
	    *(volatile int *)p == atomic_load(&h->tid))
		return (const _Atomic int *)p;
	return &h->tid;
}

/* [any] The blocks of threads that are gone, given back. */
static UKP_TRAP_TEXT void sweep(char *a)
{
	int pid = ukp_sys_getpid();
	size_t i;

	for (i = 0; i < UKP_TB_COUNT; i++) {
		struct ukp_tb_head *h = at(a, i);
		uintptr_t o = atomic_load_explicit(&h->owner, memory_order_acquire);
		int tid;

		if (o == UKP_TB_UNUSED || o == UKP_TB_FREE || o == UKP_TB_CLAIM)
			continue;
		tid = atomic_load(&h->tid);
		if (tid > 0 && ukp_sys_tgkill(pid, tid, 0) == -ESRCH)
			give_back(h, tid);
	}
}

/* [any] A free block made the key's, its rooms zero; NULL if every
 * block belongs to a live thread. */
static UKP_TRAP_TEXT struct ukp_tb_head *claim(char *a, uintptr_t key)
{
	size_t i = ukp_tb_hash(key), n;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (n = 0; n < UKP_TB_COUNT; n++) {
			struct ukp_tb_head *h = at(a, (i + n) & (UKP_TB_COUNT - 1));
			uintptr_t o = atomic_load_explicit(&h->owner, memory_order_relaxed);
			volatile uint64_t *w;
			size_t k;

			if (o != UKP_TB_UNUSED && o != UKP_TB_FREE)
				continue;
			if (!atomic_compare_exchange_strong(&h->owner, &o, UKP_TB_CLAIM))
				continue;
			/* (volatile: no memset call, which could be probed) */
			w = (volatile uint64_t *)(void *)((char *)h + UKP_TB_LIB_OFF);
			for (k = 0; k < (UKP_TB_SIZE - UKP_TB_LIB_OFF) / 8; k++)
				w[k] = 0;
			h->self = h;
			atomic_store(&h->tid, ukp_sys_gettid());
			h->pid = ukp_sys_getpid();
#ifdef UKP_FREE
			/* (a forked child: its arena was wiped, see arena()) */
			if (h->pid != arena_pid && atomic_exchange(&fork_told, h->pid) != h->pid)
				ukp_tb_forked();
#endif
			h->tidp = tid_word(h);
			atomic_store_explicit(&h->owner, key, memory_order_release);
			return h;
		}
		sweep(a);
	}
	return NULL;
}

UKP_TRAP_TEXT void *ukp_thread_block_slow(void)
{
	uint64_t all = ~0ULL, old;
	struct ukp_tb_head *h;
	char *a = arena();
	uintptr_t key = my_key();
	bool table;

	if (!a)
		return overflow_block();
	table = !use_gs();
	if (!table && !gs_ours(a))
		table = true; /* (never written over: found by the table) */
	if (table && (h = table_lookup(a, key)))
		return h;
	ukp_sys_sigprocmask(SIG_SETMASK, &all, &old);
	/* (a handler may have given this thread its block before the mask) */
	h = table ? table_lookup(a, key) : arch_tb_find();
	if (!h) {
		h = claim(a, key);
		if (h && !table)
			set_gs(h);
	}
	ukp_sys_sigprocmask(SIG_SETMASK, &old, NULL);
	return h ? (void *)h : overflow_block();
}

/* [any] The calling thread's block if it has one (not the overflow's). */
static UKP_TRAP_TEXT struct ukp_tb_head *mine(void)
{
	char *a = __atomic_load_n(&ukp_tb_arena, __ATOMIC_ACQUIRE);

	if (!a)
		return NULL;
	if (use_gs() && gs_ours(a))
		return arch_tb_find();
	return table_lookup(a, my_key());
}

UKP_TRAP_TEXT void ukp_thread_block_release(void)
{
	struct ukp_tb_head *h = mine();

	if (h)
		give_back(h, atomic_load(&h->tid));
	ukp_thread_block_forget();
}

UKP_TRAP_TEXT bool ukp_thread_block_forget(void)
{
	char *a = __atomic_load_n(&ukp_tb_arena, __ATOMIC_ACQUIRE);

	if (!use_gs() || !gs_ours(a))
		return false;
	set_gs(NULL);
	return true;
}

/* (the other threads' blocks hold tids that are not the child's: the
 * next sweep takes them back) */
void ukp_thread_blocks_after_fork_child(void)
{
	struct ukp_tb_head *me = mine();

	if (me)
		adopt(me);
	atomic_store(&fork_pid, ukp_sys_getpid());
}

void ukp_thread_blocks_unmap(void)
{
	char *a;

	/* (other threads' GS bases still point into it: from now on they are
	 * read with rdgsbase and checked) */
	unmapped_once = true;
	__atomic_store_n(&ukp_tb_gs_fast, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&ukp_tb_gs_lo, 0, __ATOMIC_RELEASE);
	a = __atomic_exchange_n(&ukp_tb_arena, NULL, __ATOMIC_ACQ_REL);
	if (!a)
		return;
	if (use_gs() && gs_ours(a))
		set_gs(NULL);
	ukp_own_unmap_note(a, UKP_TB_ARENA);
	arch_syscall3(__NR_munmap, (long)a, UKP_TB_ARENA, 0);
#if defined(__x86_64__)
	if (zero_page) {
		ukp_own_unmap_note((void *)ARCH_TB_GS_BIAS, 4096);
		arch_syscall3(__NR_munmap, ARCH_TB_GS_BIAS, 4096, 0);
	}
	zero_page = false;
#endif
}

const struct ukp_tb_unload *ukp_thread_blocks_unload_info(void)
{
	static struct ukp_tb_unload u;
	char *a = __atomic_load_n(&ukp_tb_arena, __ATOMIC_ACQUIRE);

	memset(&u, 0, sizeof(u));
	if (!a)
		return &u;
	u.arena = (uintptr_t)a;
	u.arena_len = UKP_TB_ARENA;
#if defined(__x86_64__)
	if (zero_page) {
		u.zero = ARCH_TB_GS_BIAS;
		u.zero_len = 4096;
	}
	u.base_lo = (uintptr_t)a - ARCH_TB_GS_BIAS;
	u.base_hi = u.base_lo + UKP_TB_ARENA;
	u.clear[2].addr = (uintptr_t)&ukp_tb_gs_fast;
	u.clear[2].len = sizeof(ukp_tb_gs_fast);
	u.clear[3].addr = (uintptr_t)&zero_page;
	u.clear[3].len = sizeof(zero_page);
#endif
	u.clear[0].addr = (uintptr_t)&ukp_tb_arena;
	u.clear[0].len = sizeof(ukp_tb_arena);
	u.clear[1].addr = (uintptr_t)&ukp_tb_gs_lo;
	u.clear[1].len = sizeof(ukp_tb_gs_lo);
	return &u;
}
