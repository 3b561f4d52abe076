/* SPDX-License-Identifier: MIT */
/*
 * glibc code that runs with every signal blocked refuses probes: a
 * breakpoint there raises a blocked SIGTRAP, which the kernel makes
 * fatal. (Found by the torture tier: a random probe inside
 * pthread_create killed the threads of `sort --parallel=2`.)
 *
 *  body:  no instruction of pthread_create past its entry can be
 *         probed (-EINVAL, as the blacklist); before the fix, every
 *         instruction of it could.
 *  entry: a probe on pthread_create's entry works, and threads are
 *         created under it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ukprobes.h"
#include "ukp_test.h"

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	return 0;
}

static void *thread_fn(void *arg)
{
	return arg;
}

Test(libc_masked, body)
{
	struct kprobe kp = { .symbol_name = "libc.so.6:pthread_create", .pre_handler = pre };
	uintptr_t entry;
	unsigned int off, accepted = 0, tried = 0;

	cr_assert_eq(register_kprobe(&kp), 0);
	entry = (uintptr_t)kp.addr;
	unregister_kprobe(&kp);
	/* every byte past the entry: instruction boundaries included */
	for (off = 1; off < 512; off++) {
		struct kprobe k = { .addr = (kprobe_opcode_t *)(entry + off), .pre_handler = pre };
		int ret = register_kprobe(&k);

		tried++;
		if (ret == 0) {
			accepted++;
			unregister_kprobe(&k);
		} else {
			cr_expect(ret == -EINVAL || ret == -ENOENT,
				  "pthread_create+%#x (past the entry): %d", off, ret);
		}
	}
	cr_assert_eq(accepted, 0, "%u of %u addresses inside pthread_create were probed", accepted,
		     tried);
}

static _Atomic unsigned long hits;

static int count(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	atomic_fetch_add(&hits, 1);
	return 0;
}

Test(libc_masked, entry)
{
	struct kprobe kp = { .symbol_name = "libc.so.6:pthread_create", .pre_handler = count };
	pthread_t t[8];
	int i;

	cr_assert_eq(register_kprobe(&kp), 0);
	for (i = 0; i < 8; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, thread_fn, NULL), 0);
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	/* the test runner may start a thread of its own too */
	cr_assert_geq(atomic_load(&hits), 8, "%lu hits", (unsigned long)atomic_load(&hits));
	unregister_kprobe(&kp);
}

/*
 * A thread on its way out: start_thread blocks every signal, then frees
 * the thread's descriptor and stack under the stack cache's lock
 * (__nptl_free_tcb, __nptl_deallocate_stack, __nptl_free_stacks, the
 * private lock's slow paths). A random probe inside
 * __lll_lock_wait_private killed an exiting Python thread (torture tier,
 * open bug 5). Every function of that path refuses probes, down to
 * __nptl_free_stacks, which only the closure over direct calls finds
 * (the local names come from libc's debug file: scripts/setup.sh
 * installs libc6-dbg).
 */
static void refused_everywhere(const char *name, bool need)
{
	unsigned int off;

	/* (the first 16 bytes: each of these functions is longer) */
	for (off = 0; off < 16; off++) {
		struct kprobe k = { .symbol_name = name, .offset = off, .pre_handler = pre };
		int ret = register_kprobe(&k);

		if (ret == -ENOENT && off == 0 && !need)
			cr_skip_test("%s: not in libc's symbols (no libc6-dbg?)", name);
		if (ret == 0)
			unregister_kprobe(&k);
		cr_assert(ret == -EINVAL || (ret == -ENOENT && off > 0),
			  "%s+%#x: %d (want -EINVAL: blacklisted)", name, off, ret);
	}
}

Test(libc_masked, thread_exit_exported)
{
	refused_everywhere("libc.so.6:__lll_lock_wait_private", true);
	refused_everywhere("libc.so.6:__lll_lock_wake_private", true);
}

Test(libc_masked, thread_exit_local)
{
	refused_everywhere("libc.so.6:__nptl_free_tcb", false);
	refused_everywhere("libc.so.6:start_thread", false);
	refused_everywhere("libc.so.6:__nptl_free_stacks", false);
}

/*
 * A new thread before its mask is restored: start_thread's setjmp
 * (_setjmp, __sigsetjmp) ends in a tail jump to __sigjmp_save, where a
 * probe on its entry killed the library's optimizer thread as it
 * started (bench_register, 1 run in 7): the closure follows the jump.
 */
Test(libc_masked, thread_start_local)
{
	refused_everywhere("libc.so.6:__sigjmp_save", false);
}

/* The lock's slow paths are refused, not the code that takes the lock:
 * threads come and go under probes on the entries of the functions they
 * call on their way out that stay probe-able (free). */
Test(libc_masked, threads_exit_under_probes)
{
	struct kprobe kp = { .symbol_name = "libc.so.6:free", .pre_handler = count };
	pthread_t t[64];
	int i, round;

	cr_assert_eq(register_kprobe(&kp), 0);
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 64; i++)
			cr_assert_eq(pthread_create(&t[i], NULL, thread_fn, NULL), 0);
		for (i = 0; i < 64; i++)
			pthread_join(t[i], NULL);
	}
	unregister_kprobe(&kp);
}

/*
 * The child of posix_spawn runs its file actions with every signal
 * blocked: the functions it reaches (close, dup2, fcntl, ...) refuse
 * probes past their first instruction, and keep their entries (users
 * probe those; they are jump-optimized). A random probe inside
 * __close_nocancel killed Python's posix_spawn children (torture tier,
 * python/insn seed 21).
 */
static void body_refused_entry_kept(const char *name, bool need)
{
	struct kprobe entry = { .symbol_name = name, .pre_handler = pre };
	unsigned int off;
	int ret = register_kprobe(&entry);

	if (ret == -ENOENT && !need)
		cr_skip_test("%s: not in libc's symbols (no libc6-dbg?)", name);
	cr_assert_eq(ret, 0, "%s's entry: %d", name, ret);
	unregister_kprobe(&entry);
	/* 12 bytes past the entry's first instruction: the body */
	for (off = 8; off < 20; off++) {
		struct kprobe k = { .symbol_name = name, .offset = off, .pre_handler = pre };

		ret = register_kprobe(&k);
		if (ret == 0)
			unregister_kprobe(&k);
		cr_assert(ret == -EINVAL || ret == -EILSEQ, "%s+%#x: %d (want -EINVAL)", name, off,
			  ret);
	}
}

Test(libc_masked, spawn_child_bodies)
{
	body_refused_entry_kept("libc.so.6:dup2", true);
	body_refused_entry_kept("libc.so.6:__close_nocancel", false);
}
