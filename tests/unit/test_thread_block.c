/* SPDX-License-Identifier: MIT */
/*
 * The per-thread block (common/thread_block.h, src/base/thread_block.c;
 * doc/static_agent.md, "Per-thread state without TLS"): each thread
 * (pthread, the library's raw-clone threads, a forked child's) finds its
 * own block, its signal handlers find the same, a vfork() child shares
 * its parent's (as it shares its TLS), a GS base of someone else's is
 * left alone, a raw thread's block is given back at its end, and the
 * unmap leaves nothing mapped and no GS base set.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sys.h"
#include "thread_block.h"

#if defined(__clang__)
#define RAW_THREAD __attribute__((no_sanitize("address", "undefined"), noinline))
#else
#define RAW_THREAD __attribute__((no_sanitize_address, no_sanitize_undefined, noinline))
#endif

/* a word in the agent's room, as a user of a room would keep one */
static _Atomic long *word(void *b)
{
	return (_Atomic long *)(void *)((char *)b + UKP_TB_AGENT_OFF + 64);
}

static bool overflowed(void *b)
{
	return ((struct ukp_tb_head *)b)->overflow;
}

static bool in_arena(void *b)
{
	return ukp_tb_arena && (uintptr_t)b - (uintptr_t)ukp_tb_arena < UKP_TB_ARENA;
}

#if defined(__x86_64__)
#define BIAS ARCH_TB_GS_BIAS
#else
#define BIAS 0
#endif

static bool gs_used(void)
{
#if defined(__x86_64__)
	return ukp_tb_gs_fast || ukp_tb_gs_lo;
#else
	return false;
#endif
}

Test(thread_block, stable_and_zeroed)
{
	void *b = ukp_thread_block();

	cr_assert(in_arena(b));
	cr_assert_not(overflowed(b));
	cr_assert_eq(atomic_load(word(b)), 0, "a room is zero when given");
	atomic_store(word(b), 42);
	cr_assert_eq(ukp_thread_block(), b);
	cr_assert_eq(atomic_load(word(ukp_thread_block())), 42);
	cr_assert_eq(atomic_load(&((struct ukp_tb_head *)b)->tid), gettid());
#if defined(__x86_64__)
	if (gs_used()) {
		uintptr_t g;

		__asm__ volatile("rdgsbase %0" : "=r"(g));
		cr_assert_eq(g, (uintptr_t)b - ARCH_TB_GS_BIAS, "the GS base is the block's");
	}
#endif
}

#define NTHREADS 8

static pthread_barrier_t bar;
static void *blocks[NTHREADS + 1];
static _Atomic int sig_ok[NTHREADS + 1];
static __thread int my_index;
static void *inherited_gs[NTHREADS + 1];

static void on_usr1(int sig)
{
	(void)sig;
	/* the handler runs on the thread it interrupted: the same block */
	if (ukp_thread_block() == blocks[my_index] &&
	    atomic_load(word(blocks[my_index])) == my_index + 100)
		atomic_store(&sig_ok[my_index], 1);
}

static void *pthread_body(void *arg)
{
	int i = (int)(intptr_t)arg;
	void *b;

	my_index = i;
#if defined(__x86_64__)
	if (gs_used())
		__asm__ volatile("rdgsbase %0" : "=r"(inherited_gs[i]));
#endif
	b = ukp_thread_block();
	blocks[i] = b;
	atomic_store(word(b), i + 100);
	pthread_barrier_wait(&bar); /* every thread alive with its block */
	raise(SIGUSR1);
	pthread_barrier_wait(&bar);
	if (ukp_thread_block() != b || atomic_load(word(b)) != i + 100)
		return (void *)1;
	return NULL;
}

Test(thread_block, pthreads_and_their_handlers)
{
	pthread_t t[NTHREADS];
	int i, j;

	signal(SIGUSR1, on_usr1);
	my_index = NTHREADS;
	blocks[NTHREADS] = ukp_thread_block();
	atomic_store(word(blocks[NTHREADS]), NTHREADS + 100);
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, pthread_body, (void *)(intptr_t)i), 0);
	for (i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		cr_assert_null(r, "thread %d saw its block change", i);
	}
	raise(SIGUSR1);
	for (i = 0; i <= NTHREADS; i++) {
		cr_assert(in_arena(blocks[i]));
		cr_assert_not(overflowed(blocks[i]));
		cr_assert_eq(atomic_load(&sig_ok[i]), 1, "thread %d's handler saw its block", i);
		for (j = 0; j < i; j++)
			cr_assert_neq(blocks[i], blocks[j], "threads %d and %d share a block", i, j);
		/* a new thread starts with its creator's GS base: its own
		 * block is found all the same */
		if (gs_used() && i < NTHREADS)
			cr_assert_eq((char *)inherited_gs[i], (char *)blocks[NTHREADS] - BIAS);
	}
}

/* the first call of a thread made in a signal handler */
static void *first_in_handler;

static void on_usr2(int sig)
{
	(void)sig;
	first_in_handler = ukp_thread_block();
}

static void *late_body(void *arg)
{
	(void)arg;
	raise(SIGUSR2);
	return ukp_thread_block();
}

Test(thread_block, first_need_in_a_handler)
{
	pthread_t t;
	void *r;

	signal(SIGUSR2, on_usr2);
	cr_assert_eq(pthread_create(&t, NULL, late_body, NULL), 0);
	pthread_join(t, &r);
	cr_assert(in_arena(first_in_handler));
	cr_assert_eq(r, first_in_handler, "the thread found the block its handler took");
	cr_assert_neq(r, ukp_thread_block());
}

struct raw_shared {
	_Atomic uint32_t done;
	void *block;
	void *block_again;
};

RAW_THREAD static int raw_body(void *arg)
{
	struct raw_shared *s = arg;

	s->block = ukp_thread_block();
	atomic_store(word(s->block), 7);
	s->block_again = ukp_thread_block();
	atomic_store(&s->done, 1);
	return 0;
}

Test(thread_block, raw_clone_thread)
{
	static struct raw_shared s;
	struct ukp_sys_thread t;
	void *mine = ukp_thread_block();

	atomic_store(word(mine), 3);
	cr_assert_eq(ukp_sys_thread_start(&t, 64 * 1024, raw_body, &s), 0);
	ukp_sys_thread_join(&t);
	cr_assert_eq(atomic_load(&s.done), 1);
	cr_assert_eq(s.block, s.block_again);
	cr_assert_eq(ukp_thread_block(), mine);
	if (gs_used()) {
		/* its own block although it has its creator's thread pointer,
		 * given back at its end */
		cr_assert_neq(s.block, mine);
		cr_assert_eq(atomic_load(word(mine)), 3);
		cr_assert_eq(atomic_load(&((struct ukp_tb_head *)s.block)->owner), UKP_TB_FREE);
	} else {
		/* the table is keyed by the thread pointer, which it shares
		 * (thread_block_arch.h): its creator's block, not given back
		 * at its end */
		cr_assert_eq(s.block, mine);
		cr_assert_eq(atomic_load(word(mine)), 7);
	}
}

#if defined(__x86_64__)
/* A thread as Go's runtime makes them (static Go: ukp_tb_go): its own FS
 * base, at a word that holds 0 (Go's m.tls: g at -8, nothing at 0), no
 * GS base (a thread started before the agent). */
struct go_shared {
	uintptr_t tls[2][16];
	_Atomic int started, done;
	uintptr_t fsbase[2], key[2], zero_owner[2];
	void *before[2], *block[2], *again[2], *fast[2];
};

RAW_THREAD static int go_body(void *arg)
{
	static _Atomic int next;
	struct go_shared *s = arg;
	int i = atomic_fetch_add(&next, 1) & 1;
	uintptr_t fs = (uintptr_t)&s->tls[i][1], v, zero = 0;

	arch_syscall3(__NR_arch_prctl, 0x1002 /* ARCH_SET_FS */, (long)fs, 0);
	__asm__ volatile("wrgsbase %0" : : "r"(zero) : "memory");
	s->fsbase[i] = fs;
	if (ukp_tb_gs_fast)
		__asm__ volatile("movq %%gs:%c1, %0"
				 : "=r"(s->zero_owner[i])
				 : "i"(ARCH_TB_GS_BIAS + offsetof(struct ukp_tb_head, owner)));
	s->before[i] = arch_tb_find();
	s->block[i] = ukp_thread_block();
	__asm__ volatile("movq %%fs:0, %0" : "=r"(v));
	s->key[i] = v;
	s->again[i] = ukp_thread_block();
	s->fast[i] = arch_tb_find();
	/* both hold their blocks at once */
	atomic_fetch_add(&s->started, 1);
	while (atomic_load(&s->started) < 2)
		;
	atomic_fetch_add(&s->done, 1);
	return 0;
}

Test(thread_block, go_threads_keyed_by_their_fs_base)
{
	static struct go_shared s;
	struct ukp_sys_thread t[2];
	int i;

	if (!(getauxval(AT_HWCAP2) & 2)) /* HWCAP2_FSGSBASE */
		cr_skip_test("no FSGSBASE: static Go is refused");
	(void)ukp_thread_block();
	ukp_tb_go = 1;
	for (i = 0; i < 2; i++)
		cr_assert_eq(ukp_sys_thread_start(&t[i], 64 * 1024, go_body, &s), 0);
	for (i = 0; i < 2; i++)
		ukp_sys_thread_join(&t[i]);
	ukp_tb_go = 0;
	cr_assert_eq(atomic_load(&s.done), 2);
	for (i = 0; i < 2; i++) {
		cr_assert_null(s.before[i], "no block before the first look-up");
		if (ukp_tb_gs_fast)
			cr_assert_eq(s.zero_owner[i], ~(uintptr_t)0,
				     "the zero page's owner is no thread's, not 0");
		cr_assert(in_arena(s.block[i]));
		cr_assert_eq(s.key[i], s.fsbase[i], "its FS base written at %%fs:0");
		cr_assert_eq(s.again[i], s.block[i]);
		cr_assert_eq(atomic_load(&((struct ukp_tb_head *)s.block[i])->owner) == UKP_TB_FREE ||
				     atomic_load(&((struct ukp_tb_head *)s.block[i])->owner) == s.fsbase[i],
			     1);
		if (gs_used())
			cr_assert_eq(s.fast[i], s.block[i], "found the fast way from then on");
	}
	cr_assert_neq(s.block[0], s.block[1], "two Go threads, two blocks");
}
#endif

Test(thread_block, fork_child_has_its_copy)
{
	void *b = ukp_thread_block();
	int pipefd[2], st;
	pid_t pid;
	char c;

	atomic_store(word(b), 11);
	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		void *cb = ukp_thread_block();
		int ok = cb == b && atomic_load(word(cb)) == 11 &&
			 atomic_load(&((struct ukp_tb_head *)cb)->tid) == gettid();

		atomic_store(word(cb), 22);
		c = ok ? 'y' : 'n';
		if (write(pipefd[1], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(read(pipefd[0], &c, 1), 1);
	cr_assert_eq(c, 'y', "the child found the forking thread's block, its tid the child's");
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(atomic_load(word(b)), 11, "the child's writes are its own");
	cr_assert_eq(atomic_load(&((struct ukp_tb_head *)b)->tid), gettid());
}

static int vfork_pipe;
static void *vfork_parent_block;

__attribute__((noinline)) static void vfork_child(void)
{
	char c = ukp_thread_block() == vfork_parent_block ? 'y' : 'n';

	/* (a pipe, not memory: qemu-user runs vfork() as fork()) */
	_exit(write(vfork_pipe, &c, 1) == 1 ? 0 : 2);
}

/* (out of line: nothing of it lives in the frame vfork() shares) */
__attribute__((noinline)) static void *block_of_mine(void)
{
	return ukp_thread_block();
}

Test(thread_block, vfork_child_shares_its_parents)
{
	int pipefd[2], st;
	pid_t pid;
	char c;

	vfork_parent_block = block_of_mine();
	atomic_store(word(vfork_parent_block), 5);
	cr_assert_eq(pipe(pipefd), 0);
	vfork_pipe = pipefd[1];
	pid = vfork();
	if (pid == 0)
		vfork_child();
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(read(pipefd[0], &c, 1), 1);
	cr_assert_eq(c, 'y', "the vfork() child found its parent's block");
	cr_assert_eq(atomic_load(word(vfork_parent_block)), 5);
	cr_assert_eq(block_of_mine(), vfork_parent_block);
}

#if defined(__x86_64__)
Test(thread_block, a_gs_base_of_someone_elses_stays)
{
	/* (the block's words are read at ARCH_TB_GS_BIAS from the GS base) */
	static char theirs[ARCH_TB_GS_BIAS + 4096];
	uintptr_t g;
	void *b;

	ukp_thread_block();
	if (!gs_used())
		cr_skip_test("no FSGSBASE: blocks are found by the table only");
	__asm__ volatile("wrgsbase %0" : : "r"((uintptr_t)theirs) : "memory");
	b = ukp_thread_block();
	cr_assert(in_arena(b));
	cr_assert_eq(ukp_thread_block(), b);
	__asm__ volatile("rdgsbase %0" : "=r"(g));
	cr_assert_eq(g, (uintptr_t)theirs, "the program's GS base is left alone");
	__asm__ volatile("wrgsbase %0" : : "r"((uintptr_t)0) : "memory");
}
#endif

static bool mapped(uintptr_t a)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	bool found = false;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
			found = true;
	fclose(f);
	return found;
}

Test(thread_block, unmap_leaves_nothing)
{
	void *b = ukp_thread_block();
	uintptr_t a = (uintptr_t)ukp_tb_arena;

	bool zero_page = gs_used() && ukp_tb_gs_fast;

	cr_assert(mapped(a));
	if (zero_page)
		cr_assert(mapped(BIAS), "the page a GS base of 0 reads");
	ukp_thread_blocks_unmap();
	cr_assert_null(ukp_tb_arena);
	cr_assert_not(mapped(a));
	cr_assert_not(mapped((uintptr_t)b));
	if (zero_page)
		cr_assert_not(mapped(BIAS));
#if defined(__x86_64__)
	{
		uintptr_t g;

		if (getauxval(AT_HWCAP2) & 2) { /* HWCAP2_FSGSBASE */
			__asm__ volatile("rdgsbase %0" : "=r"(g));
			cr_assert_eq(g, 0, "no GS base left");
		}
	}
#endif
	/* a later need maps the arena again; other threads' GS bases may
	 * point into the old one: they are checked from now on */
	b = ukp_thread_block();
	cr_assert(in_arena(b));
	cr_assert_eq(atomic_load(word(b)), 0);
	cr_assert_eq(ukp_thread_block(), b);
	cr_assert_eq(ukp_tb_gs_fast, 0);
}
