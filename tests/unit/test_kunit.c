/* SPDX-License-Identifier: MIT */
/*
 * The kernel's lib/tests/test_kprobes.c cases test_kprobe, test_kprobes
 * and test_kprobe_missed, ported: same targets, same handlers, same
 * values, same assertions. "Not preemptible" becomes "the handler runs in
 * the trap context with kprobe_running() set".
 *
 * Globals are not reset between cases, as in the kernel; each Criterion
 * test runs in its own process, so each case runs its prerequisite first
 * (test_kprobes reuses kp after test_kprobe unregistered it).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "ukprobes.h"
#include "ukp_test.h"

#define div_factor 3

static uint32_t rand1, preh_val, posth_val;
static int (*target)(uint32_t value);
static int (*target2)(uint32_t value);
static int (*recursed_target)(uint32_t value);

UKP_TARGET int kprobe_target(uint32_t value)
{
	return (value / div_factor);
}

UKP_TARGET int kprobe_recursed_target(uint32_t value)
{
	return (value / div_factor);
}

UKP_TARGET int kprobe_target2(uint32_t value)
{
	return (value / div_factor) + 1;
}

/* Failures inside handlers are recorded and asserted afterwards:
 * Criterion's assertions are not async-signal-safe. */
static int handler_errors;
#define EXPECT_IN_HANDLER(cond) do { if (!(cond)) handler_errors++; } while (0)

static int kp_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	EXPECT_IN_HANDLER(kprobe_running() == p);
	preh_val = recursed_target(rand1);
	return 0;
}

static void kp_post_handler(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	uint32_t expval = recursed_target(rand1);

	EXPECT_IN_HANDLER(kprobe_running() == p);
	EXPECT_IN_HANDLER(preh_val == expval);
	posth_val = preh_val + div_factor;
}

static struct kprobe kp = {
	.symbol_name = "kprobe_target",
	.pre_handler = kp_pre_handler,
	.post_handler = kp_post_handler,
};

static int kp_pre_handler2(struct kprobe *p, struct pt_regs *regs)
{
	preh_val = (rand1 / div_factor) + 1;
	return 0;
}

static void kp_post_handler2(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	EXPECT_IN_HANDLER(preh_val == (rand1 / div_factor) + 1);
	posth_val = preh_val + div_factor;
}

static struct kprobe kp2 = {
	.symbol_name = "kprobe_target2",
	.pre_handler = kp_pre_handler2,
	.post_handler = kp_post_handler2,
};

static struct kprobe kp_missed = {
	.symbol_name = "kprobe_recursed_target",
	.pre_handler = kp_pre_handler,
	.post_handler = kp_post_handler,
};

static void kprobes_test_init(void)
{
	target = kprobe_target;
	target2 = kprobe_target2;
	recursed_target = kprobe_recursed_target;
	srand((unsigned int)time(NULL) ^ (unsigned int)clock());
	do
		rand1 = (uint32_t)rand();
	while (rand1 <= div_factor);
	handler_errors = 0;
}

TestSuite(kprobes_test, .init = kprobes_test_init);

static void test_kprobe(void)
{
	cr_expect_eq(0, register_kprobe(&kp));
	target(rand1);
	unregister_kprobe(&kp);
	cr_expect_neq(0, preh_val);
	cr_expect_neq(0, posth_val);
	cr_expect_eq(0, handler_errors);
}

Test(kprobes_test, test_kprobe)
{
	test_kprobe();
	/* pre and post handler each ran once, with the right values */
	cr_expect_eq(preh_val, rand1 / div_factor);
	cr_expect_eq(posth_val, rand1 / div_factor + div_factor);
	cr_expect_eq(kp.nmissed, 0);
}

Test(kprobes_test, test_kprobes)
{
	struct kprobe *kps[2] = { &kp, &kp2 };

	test_kprobe(); /* the kernel runs it first; kp is reused below */
	/* addr and flags should be cleard for reusing kprobe. */
	kp.addr = NULL;
	kp.flags = 0;
	cr_expect_eq(0, register_kprobes(kps, 2));
	preh_val = 0;
	posth_val = 0;
	target(rand1);
	cr_expect_neq(0, preh_val);
	cr_expect_neq(0, posth_val);
	preh_val = 0;
	posth_val = 0;
	target2(rand1);
	cr_expect_neq(0, preh_val);
	cr_expect_neq(0, posth_val);
	unregister_kprobes(kps, 2);
	cr_expect_eq(0, handler_errors);
}

Test(kprobes_test, test_kprobe_missed)
{
	preh_val = 0;
	posth_val = 0;
	cr_expect_eq(0, register_kprobe(&kp_missed));
	recursed_target(rand1);
	unregister_kprobe(&kp_missed);
	/* once from the pre handler, once from the post handler */
	cr_expect_eq(2, kp_missed.nmissed);
	cr_expect_neq(0, preh_val);
	cr_expect_neq(0, posth_val);
	/* the reentrant calls computed the right value */
	cr_expect_eq(preh_val, rand1 / div_factor);
	cr_expect_eq(0, handler_errors);
}

/* Without the reuse idiom, registering the same struct again fails. */
Test(kprobes_test, reuse_without_clearing_addr_fails)
{
	test_kprobe();
	cr_expect_eq(-22, register_kprobe(&kp)); /* addr and symbol_name both set */
}
