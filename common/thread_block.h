/* SPDX-License-Identifier: MIT */
/*
 * thread_block.h - the per-thread block: each thread's state of
 * libukprobes and of its agent, in memory the library maps, found from
 * the running thread without the program's TLS (a static program's TLS
 * cannot grow, a Go program's thread pointer is Go's: doc/static_agent.md,
 * "Per-thread state without TLS"; the arch part: doc/arch.md).
 *
 * A block is UKP_TB_SIZE bytes (a page: only the pages of threads that
 * took a block are touched): a header (whose thread it is), then one
 * room per user at a fixed offset, so that a lower part needs no type of
 * a higher one: the library's (UKP_TB_LIB_OFF; its layout:
 * src/base/tb_lib.h) and its agent's (UKP_TB_AGENT_OFF). A room is zero
 * when a thread gets its block.
 *
 * ukp_thread_block() is [any] context (signal handlers included: a
 * handler finds the block of the thread it runs on) and allocation-free;
 * a thread's first call takes a block (a few system calls). Blocks live
 * in one arena (src/base/thread_block.c); the block of a thread that is
 * gone is taken again by the next thread that needs one.
 *
 * A room's first int is its "not now" count (the agent's busy): the
 * shared block of threads that found no block of their own (more than
 * UKP_TB_COUNT live threads, or no memory) has it large in every room,
 * so that such threads record nothing.
 */
#ifndef UKP_THREAD_BLOCK_H
#define UKP_THREAD_BLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UKP_TB_SIZE_SHIFT 12
#define UKP_TB_SIZE (1 << UKP_TB_SIZE_SHIFT)
#define UKP_TB_COUNT_SHIFT 14
#define UKP_TB_COUNT (1 << UKP_TB_COUNT_SHIFT)
#define UKP_TB_ARENA ((size_t)UKP_TB_SIZE * UKP_TB_COUNT)
#define UKP_TB_LIB_OFF 64                          /* libukprobes' room */
#define UKP_TB_LIB_SIZE 2048
#define UKP_TB_AGENT_OFF (UKP_TB_LIB_OFF + UKP_TB_LIB_SIZE) /* the agent's */
#define UKP_TB_AGENT_SIZE (UKP_TB_SIZE - UKP_TB_AGENT_OFF)

/* owner values that are no thread pointer */
#define UKP_TB_UNUSED 0   /* never given: a table look-up stops here */
#define UKP_TB_FREE 1     /* given back */
#define UKP_TB_CLAIM 2    /* being given */

struct ukp_tb_head {
	_Atomic uintptr_t owner; /* the thread pointer of the thread it is given to */
	void *self;              /* the block's address */
	_Atomic int tid;         /* that thread's id: its block is taken back when it is gone */
	int overflow;            /* the shared block of threads that found none */
	int pid;                 /* the process it was given in (a forked child has a copy) */
	/* The word the kernel clears when that thread ends (its libc's
	 * thread id word: PR_GET_TID_ADDRESS), or &tid: the table's look-ups
	 * take a block only while it holds tid, so that a thread which libc
	 * gives a gone thread's thread pointer (glibc's stack cache: the
	 * kernel wrote the new thread's id there) is not taken for it. */
	const _Atomic int *tidp;
};

/* (src/base/thread_block.c) */
extern char *ukp_tb_arena;     /* the blocks, NULL until a thread needs one */
extern uintptr_t ukp_tb_gs_lo; /* x86-64: the arena when GS bases are read with rdgsbase */
extern int ukp_tb_gs_fast;     /* x86-64: GS bases are used without rdgsbase */
/* x86-64: the program's threads are Go's own (static Go): their FS base
 * has no self pointer at %fs:0 (Go keeps g at -8 and leaves the word at
 * 0 unused), so a thread's first look-up writes its FS base there, and
 * from then on %fs:0 is its key as in a C library's thread (set by the
 * freestanding agent's entry before anything takes a block). */
extern int ukp_tb_go;
void *ukp_thread_block_slow(void);

#define UKP_TB_HASH_MUL 0x9e3779b97f4a7c15ULL

/* [any] The slot a thread pointer's block is looked for first (the
 * table look-up; the slow path probes on from there). */
static inline size_t ukp_tb_hash(uintptr_t key)
{
	/* (the AArch64 fast paths compute the same: fastpath_ops.h) */
	return (size_t)((key * UKP_TB_HASH_MUL) >> (64 - UKP_TB_COUNT_SHIFT));
}

/* [any] Is h the block of the thread whose key it holds (the thread
 * that took it, not a later one with the same thread pointer)? */
static inline bool ukp_tb_live(const struct ukp_tb_head *h)
{
	return atomic_load_explicit(h->tidp, memory_order_relaxed) ==
	       atomic_load_explicit(&h->tid, memory_order_relaxed);
}

/* [any] The block at the thread pointer's first slot if it is the
 * thread's, else NULL. */
static inline void *ukp_tb_table_find(uintptr_t key)
{
	char *a = ukp_tb_arena;
	struct ukp_tb_head *h;

	if (!a)
		return NULL;
	h = (struct ukp_tb_head *)(void *)(a + ukp_tb_hash(key) * UKP_TB_SIZE);
	return atomic_load_explicit(&h->owner, memory_order_acquire) == key && ukp_tb_live(h) ? h
											: NULL;
}

#if defined(__x86_64__)
#include "arch/x86_64/thread_block_arch.h"
#elif defined(__aarch64__)
#include "arch/aarch64/thread_block_arch.h"
#else
#error "no per-thread block for this architecture"
#endif

/* [any] The calling thread's block (never NULL: a thread that finds no
 * free block shares one whose rooms say so, UKP_TB_OVERFLOW). */
static inline void *ukp_thread_block(void)
{
	void *b = arch_tb_find();

	if (__builtin_expect(b != NULL, 1))
		return b;
	return ukp_thread_block_slow();
}

/* [any] Has any thread a block (an arena mapped)? A fork handler that only
 * puts the forking thread's block state right has nothing to do without
 * one, and must not take a block for it: after a detach ukprobe unmaps
 * the dynamic agent's blocks (tools/ukprobe/load.c, ukp_unmap_blocks), and
 * a fork in the program then would map them again, in the parent and the
 * child, for nothing. */
static inline bool ukp_tb_mapped(void)
{
	return __atomic_load_n(&ukp_tb_arena, __ATOMIC_ACQUIRE) != NULL;
}

/* [any] The calling thread's block is given back (a thread of the
 * library's at its end; a later call takes one again). */
void ukp_thread_block_release(void);
/* [any] In a thread the library starts with the raw clone: it shares its
 * creator's thread pointer, so it must not find its creator's block.
 * False when it cannot help it (found by the table: AArch64, x86-64
 * without FSGSBASE): then the thread shares its creator's block and
 * must not give it back. */
bool ukp_thread_block_forget(void);
/* [reg] In a forked child: the forking thread's block is its own under
 * the child's tid; every other thread's is given back. */
void ukp_thread_blocks_after_fork_child(void);
#ifdef UKP_FREE
/* [any] The freestanding build (no atfork handler runs there): called in
 * a forked child at its first need of a block (its copy of the arena
 * reads zero: MADV_WIPEONFORK), before anything else of the child's hit
 * runs. The library's is an empty weak one; the agent's replaces it at
 * link time (agent/agent.c). A direct call, not a notifier: an indirect
 * call on the hit path fails the handlers' vector-free proof (every hit
 * would save the vector state). */
void ukp_tb_forked(void);
#endif
/* [reg] Every block unmapped and the calling thread's GS base reset:
 * only when no thread can be in code that holds its block (no handler,
 * no agent code), e.g. by an unloader that has every thread stopped. */
void ukp_thread_blocks_unmap(void);

/*
 * What an unloader with every thread of the process stopped needs to
 * unmap the blocks from outside (ukprobe, after a detach from a dynamic
 * program: tools/ukprobe/load.c, ukp_unmap_blocks): the arena and the
 * zero page, the block bases that are the arena's (x86-64's GS bases:
 * each put back to 0), and the library's words that say an arena is
 * mapped (written 0 once it is not: the state of a library that never
 * mapped one, valid because no thread's block base points anywhere
 * any more).
 */
struct ukp_tb_unload {
	uint64_t arena, arena_len;   /* 0: none mapped */
	uint64_t zero, zero_len;     /* the zero page; 0: none */
	uint64_t base_lo, base_hi;   /* block bases of the arena's: [lo, hi) */
	struct {
		uint64_t addr, len;  /* a word of the library's */
	} clear[4];
};
/* [reg] Filled from the current state (the arena stays as it is). */
const struct ukp_tb_unload *ukp_thread_blocks_unload_info(void);

#endif /* UKP_THREAD_BLOCK_H */
