// SPDX-License-Identifier: MIT
/*
 * test_errno.c - the library leaves the program's errno alone: its own
 * system calls go through the system layer (src/base/sys.h: raw calls
 * returning -errno), and the few libc calls it still makes for itself
 * (sigaction, whose glibc refuses its own signals 32 and 33 with EINVAL)
 * put errno back. Each step below (the first registration, which sets
 * the library up; hits; the optimizer's jumps; a return probe; a refused
 * registration; a data watchpoint; unregistering) runs with errno set
 * to a value no call returns, and must find it so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <ukprobes.h>

#define MARK 4242

static int pre_hits, ret_hits, watch_hits;

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	pre_hits++;
	return 0;
}

static int on_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	(void)regs;
	ret_hits++;
	return 0;
}

static void on_watch(struct perf_event *bp, struct perf_sample_data *data, struct pt_regs *regs)
{
	(void)bp;
	(void)data;
	(void)regs;
	watch_hits++;
}

__attribute__((noinline)) int ute_target(int v)
{
	__asm__ volatile("" ::: "memory");
	return v * 3 + 1;
}

static volatile long watched[64] __attribute__((aligned(4096)));

/* run step with errno at MARK; errno must be MARK after it */
#define STEP(what, ...)                                                                        \
	do {                                                                                   \
		errno = MARK;                                                                  \
		__VA_ARGS__;                                                                   \
		cr_assert_eq(errno, MARK, "%s changed errno to %d", what, errno);              \
	} while (0)

Test(program_errno, kprobe_set_up_hit_optimized_removed)
{
	struct kprobe kp = { .symbol_name = "ute_target", .pre_handler = pre };
	int ret = 0, i, sum = 0;

	/* the first registration of the process sets the library up */
	STEP("register_kprobe", ret = register_kprobe(&kp));
	cr_assert_eq(ret, 0, "register: %d", ret);
	STEP("hits", for (i = 0; i < 100; i++) sum += ute_target(i));
	STEP("ukprobes_wait_optimizer", ukprobes_wait_optimizer());
	STEP("optimized hits", for (i = 0; i < 100; i++) sum += ute_target(i));
	cr_assert_eq(pre_hits, 200, "hits: %d", pre_hits);
	STEP("unregister_kprobe", unregister_kprobe(&kp));
	cr_assert(sum > 0);
}

Test(program_errno, libc_kretprobe_refused)
{
	struct kprobe kp = { .symbol_name = "getppid", .pre_handler = pre };
	struct kretprobe rp = { .kp.symbol_name = "ute_target", .handler = on_ret };
	struct kprobe bad = { .symbol_name = "ute_no_such_function", .pre_handler = pre };
	int ret = 0, i;

	STEP("register_kprobe on libc", ret = register_kprobe(&kp));
	cr_assert_eq(ret, 0, "register: %d", ret);
	STEP("libc hits", for (i = 0; i < 10; i++) getppid());
	STEP("register_kretprobe", ret = register_kretprobe(&rp));
	cr_assert_eq(ret, 0, "register_kretprobe: %d", ret);
	STEP("return hits", for (i = 0; i < 10; i++) ute_target(i));
	cr_assert_eq(ret_hits, 10);
	STEP("a refused registration", ret = register_kprobe(&bad));
	cr_assert_lt(ret, 0, "a probe on no function: %d", ret);
	STEP("unregister_kretprobe", unregister_kretprobe(&rp));
	STEP("unregister_kprobe", unregister_kprobe(&kp));
	cr_assert_eq(pre_hits, 10);
}

Test(program_errno, watchpoint)
{
	struct perf_event_attr attr;
	struct perf_event *bp = NULL;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)&watched[8];
	attr.bp_len = HW_BREAKPOINT_LEN_8;
	attr.bp_type = HW_BREAKPOINT_W;
	STEP("register_user_hw_breakpoint",
	     bp = register_user_hw_breakpoint(&attr, on_watch, NULL, gettid()));
	cr_assert(!IS_ERR(bp), "register: %ld", PTR_ERR(bp));
	STEP("a watched write", watched[8] = 7);
	cr_assert_eq(watch_hits, 1);
	STEP("unregister_hw_breakpoint", unregister_hw_breakpoint(bp));
}
