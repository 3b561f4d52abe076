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
