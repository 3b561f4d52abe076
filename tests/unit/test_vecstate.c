// SPDX-License-Identifier: MIT
/*
 * test_vecstate.c - the lazy vector state of the trap-free hit paths
 * (vecstate.c): the library's own hit path is proven vector-free; the
 * proof of a handler says no for each way code can touch the vector,
 * x87 or MXCSR state (or for code it cannot follow) and yes for plain
 * integer code, through direct calls too; a handler proven vector-free
 * is called with the probed code's vector registers live and leaves
 * them alone; one swapped in after registration is called with the
 * state saved.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "ukprobes.h"
#include "ukp_test.h"
#include "ukt_vec.h"

extern uint32_t ukp_vec_lazy;
extern const char *ukp_vec_lazy_why;

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define UKT_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UKT_SANITIZED 1
#endif

static atomic_long hits;

/* ------------------------------------------------ handlers to judge */

/* Plain integer work: vector-free. */
static int h_count(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	regs->r8 = regs->di + 1;
	return 0;
}

/* Integer work in a helper it calls directly: vector-free too. */
__attribute__((noinline)) static long helper_mix(long v)
{
	__asm__ volatile("" : "+r"(v));
	return v * 31 + 7;
}

static int h_calls_helper(struct kprobe *p, struct pt_regs *regs)
{
	regs->r9 = (unsigned long)helper_mix((long)regs->di);
	atomic_fetch_add(&hits, 1);
	return 0;
}

/* Writes a vector register. */
static int h_ymm(struct kprobe *p, struct pt_regs *regs)
{
	__asm__ volatile("vpcmpeqd %%ymm3, %%ymm3, %%ymm3\n vpxor %%ymm7, %%ymm7, %%ymm7\n"
			 "vzeroupper" ::: "xmm3", "xmm7");
	atomic_fetch_add(&hits, 1);
	return 0;
}

/* Changes MXCSR. */
static int h_mxcsr(struct kprobe *p, struct pt_regs *regs)
{
	unsigned int m = 0x1f80;

	__asm__ volatile("ldmxcsr %0" : : "m"(m));
	return 0;
}

/* x87 arithmetic. */
static volatile long double ld_sink;
static int h_x87(struct kprobe *p, struct pt_regs *regs)
{
	ld_sink = ld_sink * 3.0L;
	return 0;
}

/* Calls libc (through the PLT): its string functions use AVX. */
static volatile size_t len_sink;
static int h_libc(struct kprobe *p, struct pt_regs *regs)
{
	len_sink = strlen((const char *)regs->si);
	return 0;
}

/* Calls through a pointer it cannot follow. */
static long (*volatile some_fn)(long) = helper_mix;
static int h_pointer(struct kprobe *p, struct pt_regs *regs)
{
	regs->r9 = (unsigned long)some_fn((long)regs->di);
	return 0;
}

/* --------------------------------------------------------- the tests */

Test(vecstate, the_library_hit_path_is_proven_vector_free)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = h_count };

	/* the proof runs at the first registration */
	cr_assert_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
#ifdef UKT_SANITIZED
	cr_skip_test("sanitizer instrumentation calls its runtime: the state is saved on every hit");
#else
	cr_assert_eq(ukp_vec_lazy, 1, "the hit path was not proven vector-free: %s",
		     ukp_vec_lazy_why ? ukp_vec_lazy_why : "?");
#endif
}

Test(vecstate, handlers_are_judged_by_their_code)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = h_count };

	cr_assert_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
	if (!ukp_vec_lazy)
		cr_skip_test("the hit path saves the vector state: %s", ukp_vec_lazy_why);
	cr_expect(ukp_vec_free_locking((const void *)h_count), "integer code");
	cr_expect(ukp_vec_free_locking((const void *)h_calls_helper), "a direct call to integer code");
	cr_expect_not(ukp_vec_free_locking((const void *)h_ymm), "ymm");
	cr_expect_not(ukp_vec_free_locking((const void *)h_mxcsr), "ldmxcsr");
	cr_expect_not(ukp_vec_free_locking((const void *)h_x87), "x87");
	cr_expect_not(ukp_vec_free_locking((const void *)h_libc), "strlen through the PLT");
	cr_expect_not(ukp_vec_free_locking((const void *)h_pointer), "a call through a pointer");
	/* real library code: vector-free integer code, and AVX2 code */
	cr_expect_not(ukp_vec_free_locking((const void *)memcpy), "libc's memcpy");
}

/* A caller that registers probe by probe (ukprobe's agent: one SPEC at
 * a time) passes the same handlers again and again: each is walked once
 * while the loaded objects stay, and again after they change (another
 * object's code may be at a handler's address after an unload). */
Test(vecstate, a_handler_is_walked_once_while_the_objects_stay)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = h_count };
	const void *fns[] = { (const void *)h_count, (const void *)h_calls_helper,
			      (const void *)h_ymm, (const void *)h_mxcsr, (const void *)h_x87,
			      (const void *)h_libc, (const void *)h_pointer };
	const bool want[] = { true, true, false, false, false, false, false };
	const char *libs[] = { "libsqlite3.so.0", "libbz2.so.1.0", "libz.so.1" };
	uint64_t walks;
	size_t i;
	void *lib;
	int round;

	cr_assert_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
	if (!ukp_vec_lazy)
		cr_skip_test("the hit path saves the vector state: %s", ukp_vec_lazy_why);
	(void)ukp_vec_free_locking(fns[0]);
	walks = ukp_vec_walks;
	for (round = 0; round < 3; round++)
		for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
			cr_expect_eq(ukp_vec_free_locking(fns[i]), want[i], "round %d, handler %zu",
				     round, i);
	/* the first handler was walked before: the six others once each */
	cr_expect_eq(ukp_vec_walks - walks, 6, "%lu walks",
		     (unsigned long)(ukp_vec_walks - walks));
	/* a library not loaded yet */
	lib = NULL;
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]) && !lib; i++)
		if (!dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD))
			lib = dlopen(libs[i], RTLD_NOW);
	cr_assert(lib, "none of libsqlite3, libbz2, libz could be loaded: %s", dlerror());
	walks = ukp_vec_walks;
	cr_expect(ukp_vec_free_locking(fns[0]));
	cr_expect(ukp_vec_free_locking(fns[0]));
	cr_expect_eq(ukp_vec_walks - walks, 1, "after a load: %lu walks",
		     (unsigned long)(ukp_vec_walks - walks));
	dlclose(lib);
}

Test(vecstate, a_vector_free_handler_runs_with_the_vector_registers_live)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = h_calls_helper };

	if (!__builtin_cpu_supports("avx"))
		cr_skip_test("no AVX");
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp));
	ukt_vec_roundtrip(50);
	cr_expect_eq(atomic_load(&hits), 50);
	unregister_kprobe(&kp);
}

Test(vecstate, a_handler_swapped_in_later_is_called_with_the_state_saved)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = h_count };

	if (!__builtin_cpu_supports("avx"))
		cr_skip_test("no AVX");
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp));
	ukt_vec_roundtrip(10);
	/* not proven: its pointer no longer matches the proven one */
	*(kprobe_pre_handler_t volatile *)&kp.pre_handler = h_ymm;
	ukt_vec_roundtrip(10);
	cr_expect_eq(atomic_load(&hits), 20);
	unregister_kprobe(&kp);
}

/* A child keeps a proven handler in 32 bits (ukp_vf_rel): handlers
 * gigabytes apart (the program's, the library's, an agent's) each keep
 * their proof, a pointer next to one is not taken for it, and one out of
 * reach of every base is kept as unproven. (The addresses are numbers
 * only: nothing is called.) */
Test(vecstate, proven_handlers_far_apart_keep_their_proofs)
{
	uintptr_t a = (uintptr_t)h_count;
	const uintptr_t fns[] = {
		a, a + 64, a - 4096,                        /* one base */
		a + (3UL << 30), a + (3UL << 30) - 100,     /* a second */
		a - (5UL << 30),                            /* a third */
		a + (9UL << 30), a + (9UL << 30) + (500UL << 20), /* a fourth */
	};
	size_t i;
	int32_t rel;

	cr_assert_eq(ukp_lock_for_show(), 0);
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		rel = ukp_vf_rel((const void *)fns[i]);
		cr_expect_neq(rel, 0, "%zu: %#lx not kept", i, (unsigned long)fns[i]);
		cr_expect(ukp_vf_is(rel, (const void *)fns[i]), "%zu: %#lx", i, (unsigned long)fns[i]);
		cr_expect_eq(ukp_vf_fn(rel), (const void *)fns[i], "%zu", i);
		cr_expect_not(ukp_vf_is(rel, (const void *)(fns[i] + 4)), "%zu: next to it", i);
		cr_expect_not(ukp_vf_is(rel, (const void *)(fns[i] - 4)), "%zu: before it", i);
		cr_expect_not(ukp_vf_is(rel, (const void *)(fns[i] + (1UL << 32))), "%zu: 4 GiB on", i);
	}
	/* a fifth place: no base left */
	rel = ukp_vf_rel((const void *)(a + (20UL << 30)));
	cr_expect_eq(rel, 0);
	cr_expect_not(ukp_vf_is(rel, (const void *)(a + (20UL << 30))));
	cr_expect_null(ukp_vf_fn(0));
	ukp_unlock_for_show();
}
