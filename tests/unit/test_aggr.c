/* SPDX-License-Identifier: MIT */
/*
 * Aggregate probes (several kprobes on one address), enable/disable and
 * the global knob (kernel-behaviour.md §3, §2.6, §8.2).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ukprobes.h"
#include "ukp_test.h"

UKP_TARGET int agg_target(int v)
{
	return v * 5 + 2;
}

UKP_TARGET int agg_other(int v)
{
	return -v;
}

UKP_TARGET int agg_recursed(int v)
{
	return v + 100;
}

/* call order log: pre handlers push 'a'+i, post handlers 'A'+i */
static char order[64];
static int norder;
static int pre_stop_index = -1;

static int log_pre(struct kprobe *p, struct pt_regs *regs);
static void log_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags);

static struct kprobe probes[3];

static int index_of(struct kprobe *p)
{
	return (int)(p - probes);
}

static int log_pre(struct kprobe *p, struct pt_regs *regs)
{
	int i = index_of(p);

	if (norder < 63)
		order[norder++] = (char)('a' + i);
	if (i == pre_stop_index) {
		/* change the path: resume in agg_other at its entry */
		instruction_pointer_set(regs, (unsigned long)agg_other);
		return 1;
	}
	return 0;
}

static void log_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	if (norder < 63)
		order[norder++] = (char)('A' + index_of(p));
}

static void setup_three(void)
{
	int i;

	memset(probes, 0, sizeof(probes));
	for (i = 0; i < 3; i++) {
		probes[i].symbol_name = "agg_target";
		probes[i].pre_handler = log_pre;
		probes[i].post_handler = log_post;
		cr_assert_eq(register_kprobe(&probes[i]), 0);
	}
	norder = 0;
	memset(order, 0, sizeof(order));
	pre_stop_index = -1;
}

static void teardown_three(void)
{
	struct kprobe *kps[3] = { &probes[0], &probes[1], &probes[2] };

	unregister_kprobes(kps, 3);
}


Test(aggr, handlers_run_newest_first)
{
	setup_three();
	cr_expect_eq(agg_target(3), 17);
	cr_expect_str_eq(order, "cbaCBA");
	teardown_three();
}

Test(aggr, nonzero_pre_handler_stops_chain_and_post)
{
	setup_three();
	pre_stop_index = 1; /* b redirects to agg_other */
	cr_expect_eq(agg_target(3), -3);
	cr_expect_str_eq(order, "cb", "a's pre and every post must not run");
	teardown_three();
}

Test(aggr, disable_one_keeps_site_armed)
{
	setup_three();
	cr_assert_eq(disable_kprobe(&probes[1]), 0);
	cr_expect(probes[1].flags & KPROBE_FLAG_DISABLED);
	cr_expect(ukt_breakpoint_at((void *)agg_target));
	cr_expect_eq(agg_target(1), 7);
	cr_expect_str_eq(order, "caCA");
	cr_expect_eq(disable_kprobe(&probes[1]), 0, "disabling twice is fine");
	cr_assert_eq(disable_kprobe(&probes[0]), 0);
	cr_assert_eq(disable_kprobe(&probes[2]), 0);
	cr_expect_eq(ukt_opcode_at((void *)agg_target), probes[0].opcode, "all disabled: disarmed");
	norder = 0;
	memset(order, 0, sizeof(order));
	cr_expect_eq(agg_target(1), 7);
	cr_expect_eq(norder, 0);
	cr_assert_eq(enable_kprobe(&probes[0]), 0);
	cr_expect(ukt_breakpoint_at((void *)agg_target));
	cr_expect_eq(agg_target(1), 7);
	cr_expect_str_eq(order, "aA");
	teardown_three();
}

Test(aggr, unregister_one_child_keeps_others)
{
	setup_three();
	unregister_kprobe(&probes[2]);
	cr_expect_eq(agg_target(2), 12);
	cr_expect_str_eq(order, "baBA");
	unregister_kprobe(&probes[0]);
	unregister_kprobe(&probes[1]);
	cr_expect_eq(ukt_opcode_at((void *)agg_target), probes[1].opcode, "last one gone: original byte");
	norder = 0;
	cr_expect_eq(agg_target(2), 12);
	cr_expect_eq(norder, 0);
}

Test(aggr, enable_disable_unregistered_is_einval)
{
	struct kprobe kp = { .symbol_name = "agg_target" };

	cr_expect_eq(enable_kprobe(&kp), -EINVAL);
	cr_expect_eq(disable_kprobe(&kp), -EINVAL);
}

/* Reentrant hits count in every child's nmissed, disabled ones too. */
static struct kprobe rp[2];
static int reenter_pre(struct kprobe *p, struct pt_regs *regs)
{
	agg_recursed(1);
	return 0;
}

Test(aggr, nmissed_counts_every_child)
{
	struct kprobe caller = { .symbol_name = "agg_target", .pre_handler = reenter_pre };

	memset(rp, 0, sizeof(rp));
	rp[0].symbol_name = rp[1].symbol_name = "agg_recursed";
	rp[0].pre_handler = rp[1].pre_handler = log_pre;
	cr_assert_eq(register_kprobe(&rp[0]), 0);
	cr_assert_eq(register_kprobe(&rp[1]), 0);
	cr_assert_eq(disable_kprobe(&rp[1]), 0);
	cr_assert_eq(register_kprobe(&caller), 0);
	cr_expect_eq(agg_target(1), 7);
	cr_expect_eq(rp[0].nmissed, 1);
	cr_expect_eq(rp[1].nmissed, 1);
	cr_expect_eq(caller.nmissed, 0);
	unregister_kprobe(&caller);
	unregister_kprobe(&rp[0]);
	unregister_kprobe(&rp[1]);
}

static int knob_hits;
static int knob_pre(struct kprobe *p, struct pt_regs *regs)
{
	knob_hits++;
	return 0;
}

Test(knob, global_disarm_keeps_per_probe_state)
{
	struct kprobe a = { .symbol_name = "agg_target", .pre_handler = knob_pre };
	struct kprobe b = { .symbol_name = "agg_other", .pre_handler = knob_pre };
	struct kprobe c = { .symbol_name = "agg_recursed", .pre_handler = knob_pre };

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_assert_eq(disable_kprobe(&b), 0);
	cr_expect(kprobes_enabled());
	cr_assert_eq(kprobes_set_enabled(false), 0);
	cr_expect(!kprobes_enabled());
	cr_expect_eq(ukt_opcode_at((void *)agg_target), a.opcode);
	cr_expect_eq(a.flags & KPROBE_FLAG_DISABLED, 0, "own flags untouched");
	knob_hits = 0;
	agg_target(1);
	agg_other(1);
	cr_expect_eq(knob_hits, 0);
	/* registered while disarmed: hashed, not armed */
	cr_assert_eq(register_kprobe(&c), 0);
	agg_recursed(1);
	cr_expect_eq(knob_hits, 0);
	/* the kernel's quirk: enabling a standalone probe while globally
	 * disarmed succeeds without arming it */
	cr_expect_eq(enable_kprobe(&b), 0);
	agg_other(1);
	cr_expect_eq(knob_hits, 0);
	cr_expect_eq(disable_kprobe(&b), 0);
	cr_assert_eq(kprobes_set_enabled(true), 0);
	cr_expect(kprobes_enabled());
	agg_target(1);
	agg_recursed(1);
	agg_other(1);
	cr_expect_eq(knob_hits, 2, "a and c fire; b stays disabled");
	cr_expect(b.flags & KPROBE_FLAG_DISABLED);
	cr_expect_eq(kprobes_set_enabled(true), 0, "already enabled: no-op");
	unregister_kprobe(&a);
	unregister_kprobe(&b);
	unregister_kprobe(&c);
}
