// SPDX-License-Identifier: MIT
/*
 * test_raw_thread_hits.c - libukprobes' per-thread state lives in each
 * thread's block (base/tb_lib.h), not in TLS: a thread started with the
 * raw clone (ukp_sys_thread_start: no TLS of its own, its creator's
 * thread pointer) hits probes while its creator hits the same ones, and
 * neither sees the other's state. Breakpoint hits stepped out of line
 * (a post_handler), boosted hits, optimized hits and return probes
 * (breakpoint and optimized entries, the return trampoline): every count
 * exact, nothing missed, and each handler sees its own probe running.
 * With the state in initial-exec TLS the two threads share it (the
 * probe status, the return stack, the step in progress): misses, wrong
 * returns or a crash.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "base/sys.h"
#include "thread_block.h"
#include "core/core.h"
#include "ukprobes.h"
#include "ukp_test.h"

enum { N = 20000, STACK = 256 * 1024 };

/* Targets in assembly: first instructions known and boostable (and
 * optimizable: five bytes of plain instructions before the ret). */
__asm__(
	".text\n"
	".globl rt_boosted\n .type rt_boosted,@function\n"
	"rt_boosted:\n"
	"	movl %edi, %eax\n"
	"	addl $3, %eax\n"
	"	ret\n"
	".size rt_boosted, .-rt_boosted\n"
	".globl rt_stepped\n .type rt_stepped,@function\n"
	"rt_stepped:\n"
	"	movl %edi, %eax\n"
	"	addl $5, %eax\n"
	"	ret\n"
	".size rt_stepped, .-rt_stepped\n"
	".globl rt_opt\n .type rt_opt,@function\n"
	"rt_opt:\n"
	"	movl %edi, %eax\n"
	"	addl $7, %eax\n"
	"	nop\n nop\n nop\n nop\n nop\n"
	"	ret\n"
	".size rt_opt, .-rt_opt\n");
int rt_boosted(int x);
int rt_stepped(int x);
int rt_opt(int x);

UKP_TARGET long rt_ret(long x)
{
	return x * 2 + 1;
}

static int (*volatile boosted_fn)(int) = rt_boosted;
static int (*volatile stepped_fn)(int) = rt_stepped;
static int (*volatile opt_fn)(int) = rt_opt;
static long (*volatile ret_fn)(long) = rt_ret;

static _Atomic long pre_hits, post_hits, ret_hits, mismatches;

/* [trap] [detour] Each handler checks that the running probe is its
 * own: kprobe_running() reads the thread's control block. */
static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)regs;
	if (kprobe_running() != p)
		atomic_fetch_add(&mismatches, 1);
	atomic_fetch_add(&pre_hits, 1);
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	(void)regs;
	(void)flags;
	if (kprobe_running() != p)
		atomic_fetch_add(&mismatches, 1);
	atomic_fetch_add(&post_hits, 1);
}

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	if (regs_return_value(regs) % 2 != 1)
		atomic_fetch_add(&mismatches, 1);
	atomic_fetch_add(&ret_hits, 1);
	return 0;
}

struct worker {
	bool boosted;          /* also call the boosted target */
	bool stepped;          /* also call the stepped target */
	bool opt;              /* also call the optimized target */
	void *block;           /* the thread's per-thread block */
	unsigned long boosted_hits; /* its own count of boosted hits */
	long wrong;            /* results that were not the function's */
	long calls;            /* rounds of calls made */
	_Atomic long progress; /* rounds made so far */
	struct worker *other;
	_Atomic int *ready;
};

/* Both threads: each starts when both are there, and makes N rounds of
 * calls at least, and more until the other made its N: every call of
 * the slower one races the other's. */
static void calls(struct worker *w)
{
	unsigned long b0 = ukp_tls_boosted_hits;
	long i;

	w->block = ukp_thread_block();
	atomic_fetch_add(w->ready, 1);
	while (atomic_load(w->ready) < 2)
		;
	for (i = 0; i < N || atomic_load(&w->other->progress) < N; i++) {
		if (w->boosted && boosted_fn((int)i) != (int)i + 3)
			w->wrong++;
		if (w->stepped && stepped_fn((int)i) != (int)i + 5)
			w->wrong++;
		if (w->opt && opt_fn((int)i) != (int)i + 7)
			w->wrong++;
		if (ret_fn(i) != i * 2 + 1)
			w->wrong++;
		atomic_store_explicit(&w->progress, i + 1, memory_order_relaxed);
	}
	w->calls = i;
	w->boosted_hits = ukp_tls_boosted_hits - b0;
}

/* The raw thread's body: the program's signals (SIGTRAP for the
 * breakpoints, the library's scan signal) as its creator has them. */
static int raw_body(void *arg)
{
	uint64_t none = 0;

	ukp_sys_sigprocmask(SIG_SETMASK, &none, NULL);
	calls(arg);
	return 0;
}

static void *blk_of_raw;

static int raw_block(void *arg)
{
	(void)arg;
	blk_of_raw = ukp_thread_block();
	return 0;
}

/* A raw thread has a block of its own where the GS base finds it
 * (x86-64 with FSGSBASE); else it shares its creator's
 * (common/thread_block.h), and with it the library's state. */
static void need_own_blocks(void)
{
	struct ukp_sys_thread t;

	cr_assert_eq(ukp_sys_thread_start(&t, STACK, raw_block, NULL), 0);
	ukp_sys_thread_join(&t);
	if (blk_of_raw == ukp_thread_block())
		cr_skip_test("a raw thread shares its creator's block here (no FSGSBASE)");
}

static void race(struct worker *mine, struct worker *raw)
{
	struct ukp_sys_thread t;
	_Atomic int ready = 0;

	mine->ready = raw->ready = &ready;
	mine->other = raw;
	raw->other = mine;
	cr_assert_eq(ukp_sys_thread_start(&t, STACK, raw_body, raw), 0);
	calls(mine);
	ukp_sys_thread_join(&t);
	cr_assert_neq(mine->block, raw->block, "the raw thread has a block of its own");
	cr_expect_eq(mine->wrong, 0);
	cr_expect_eq(raw->wrong, 0, "the raw thread's calls returned what they should");
}

Test(raw_thread_hits, breakpoints_steps_boosts_and_returns, .timeout = 120)
{
	struct kprobe boost = { .symbol_name = "rt_boosted", .pre_handler = count_pre };
	struct kprobe step = { .symbol_name = "rt_stepped", .pre_handler = count_pre,
			       .post_handler = count_post };
	struct kretprobe r = { .handler = count_ret, .maxactive = 8,
			       .kp.symbol_name = "rt_ret" };
	struct worker mine = { .boosted = true, .stepped = true }, raw = mine;
	long calls_made;

	need_own_blocks();
	cr_assert_eq(kprobes_set_optimization(false), 0);
	cr_assert_eq(register_kprobe(&boost), 0);
	cr_assert_eq(register_kprobe(&step), 0);
	cr_assert_eq(register_kretprobe(&r), 0);
	race(&mine, &raw);
	calls_made = mine.calls + raw.calls;
	cr_expect_eq(pre_hits, 2 * calls_made, "every pre_handler call");
	cr_expect_eq(post_hits, calls_made, "every post_handler call");
	cr_expect_eq(ret_hits, calls_made, "every return");
	cr_expect_eq(mismatches, 0, "a handler saw another probe running (shared state)");
	cr_expect_eq(boost.nmissed + step.nmissed + r.kp.nmissed + r.nmissed, 0);
	/* each thread's own count, in its block (the return probe's entry
	 * may be boosted too: then both count two a round) */
	cr_expect(mine.boosted_hits == (unsigned long)mine.calls ||
		  mine.boosted_hits == 2 * (unsigned long)mine.calls,
		  "the creator's boosted hits: %lu in %ld rounds", mine.boosted_hits, mine.calls);
	cr_expect_eq(raw.boosted_hits * (unsigned long)mine.calls,
		     mine.boosted_hits * (unsigned long)raw.calls,
		     "the raw thread's boosted hits: %lu in %ld rounds", raw.boosted_hits, raw.calls);
	unregister_kretprobe(&r);
	unregister_kprobe(&step);
	unregister_kprobe(&boost);
}

Test(raw_thread_hits, optimized_hits_and_returns, .timeout = 120)
{
	struct kprobe opt = { .symbol_name = "rt_opt", .pre_handler = count_pre };
	struct kretprobe r = { .handler = count_ret, .maxactive = 8,
			       .kp.symbol_name = "rt_ret" };
	struct worker mine = { .opt = true }, raw = mine;
	long calls_made;

	need_own_blocks();
	cr_assert_eq(kprobes_set_optimization(true), 0);
	cr_assert_eq(register_kprobe(&opt), 0);
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&opt), "rt_opt should be optimized");
	race(&mine, &raw);
	calls_made = mine.calls + raw.calls;
	cr_expect_eq(pre_hits, calls_made, "every pre_handler call");
	cr_expect_eq(ret_hits, calls_made, "every return");
	cr_expect_eq(mismatches, 0, "a handler saw another probe running (shared state)");
	cr_expect_eq(opt.nmissed + r.kp.nmissed + r.nmissed, 0);
	cr_expect_eq(mine.boosted_hits + raw.boosted_hits, 0, "no trap on the optimized path");
	unregister_kretprobe(&r);
	unregister_kprobe(&opt);
}
