// SPDX-License-Identifier: MIT
/*
 * trap_rearm_race.c - deterministic reproduction of a race in the hit
 * path (src/trap.c), for the owner of that file.
 *
 * A thread executes the int3 of probe site S1; before its SIGTRAP handler
 * enters the read side, S1 is unregistered (ukp_synchronize() does not
 * wait: the thread is not inside yet). The handler's ukp_site_lookup()
 * misses. Before it reads the byte at addr ("our breakpoint was removed
 * after this thread hit it"), another thread registers a new probe at the
 * same address, which writes int3 there again. The handler reads 0xcc,
 * decides the int3 is the program's own, and chains SIGTRAP to the
 * program: with no program handler, the process dies of SIGTRAP. In the
 * churn tests this needs the handler to be preempted in a window of a
 * few instructions, so it is rare there; here two --wrap hooks hold the
 * thread at exactly those two points while the main thread does the
 * unregistration and the registration.
 *
 * Build against the static library and run (from the source root, with
 * a build directory "build"):
 *   cc -O2 -D_GNU_SOURCE -Iinclude -Isrc -Isrc/arch/x86_64 \
 *      tests/repro/trap_rearm_race.c build/src/libukprobes.a \
 *      -Wl,--wrap=ukp_read_lock_slow,--wrap=arch_copy_nofault \
 *      -lZydis -lZycore -lelf -lpthread -ldl -o /tmp/trap_rearm_race
 *   /tmp/trap_rearm_race; echo "exit status $?"
 * Fixed: prints "OK" and exits 0. Broken: killed by SIGTRAP (status 133).
 *
 * A fix in trap.c: when the lookup missed but the byte is an int3, look
 * the site up again before calling the trap foreign (the new site is
 * hashed before its int3 is written, so whoever sees the new int3 also
 * finds the site).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl race_target\n"
	"	.type race_target, @function\n"
	"race_target:\n"
	"	lea 1(%rdi), %eax\n"
	"	ret\n"
	"	.size race_target, .-race_target\n");

int race_target(int x);

static _Atomic int stage;
static __thread int is_worker;
static _Atomic unsigned long hits;

void __real_ukp_read_lock_slow(struct ukp_ctlblk *c);
long __real_arch_copy_nofault(void *dst, const void *src, size_t n);

/* The worker's trap, before it enters the read side (its first trap
 * takes the out-of-line path, which claims its record): let the main
 * thread unregister the probe now. */
void __wrap_ukp_read_lock_slow(struct ukp_ctlblk *c)
{
	if (is_worker && c->depth == 0 && atomic_load(&stage) == 0) {
		atomic_store(&stage, 1);
		while (atomic_load(&stage) != 2)
			__builtin_ia32_pause();
	}
	__real_ukp_read_lock_slow(c);
}

/* The worker's trap, after the lookup missed and before it reads the
 * byte at the address: let the main thread register a new probe there. */
long __wrap_arch_copy_nofault(void *dst, const void *src, size_t n)
{
	if (is_worker && n == 2 && src == (const void *)((uintptr_t)race_target - 1) &&
	    atomic_load(&stage) == 2) {
		atomic_store(&stage, 3);
		while (atomic_load(&stage) != 4)
			__builtin_ia32_pause();
	}
	return __real_arch_copy_nofault(dst, src, n);
}

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	return 0;
}

static void *worker(void *arg)
{
	int (*volatile fn)(int) = race_target;

	(void)arg;
	is_worker = 1;
	if (fn(41) != 42)
		abort();
	return NULL;
}

int main(void)
{
	struct kprobe kp1 = { .addr = (kprobe_opcode_t *)race_target, .pre_handler = pre };
	struct kprobe kp2 = { .addr = (kprobe_opcode_t *)race_target, .pre_handler = pre };
	pthread_t th;

	if (register_kprobe(&kp1)) {
		fprintf(stderr, "register kp1 failed\n");
		return 2;
	}
	pthread_create(&th, NULL, worker, NULL);
	while (atomic_load(&stage) != 1)
		__builtin_ia32_pause();
	unregister_kprobe(&kp1);           /* the worker is not inside yet */
	atomic_store(&stage, 2);
	while (atomic_load(&stage) != 3)
		__builtin_ia32_pause();
	if (register_kprobe(&kp2)) {       /* int3 written again */
		fprintf(stderr, "register kp2 failed\n");
		return 2;
	}
	atomic_store(&stage, 4);
	pthread_join(th, NULL);
	unregister_kprobe(&kp2);
	printf("OK (%lu hits)\n", atomic_load(&hits));
	return 0;
}
