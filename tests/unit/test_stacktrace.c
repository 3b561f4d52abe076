// SPDX-License-Identifier: MIT
/*
 * test_stacktrace.c - stack_trace_save_regs() and
 * stack_trace_save_regs_from() (the user stack of a hit, unwound with the
 * library's CFI interpreter): from a kprobe's handler at a function's
 * entry, the frames are the function, its caller and the callers above;
 * skipnr drops the first ones and size bounds the count; from a
 * kretprobe's handler (STACK_TRACE_RET) the stack starts at the caller.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>

#include <criterion/criterion.h>

#include <ukprobes.h>

#define NF 16

__attribute__((noinline)) int ukt_st_leaf(int v)
{
	__asm__ volatile("" ::: "memory");
	return v * 3 + 1;
}

__attribute__((noinline)) int ukt_st_mid(int v)
{
	int r = ukt_st_leaf(v) + 1;

	__asm__ volatile("" ::: "memory");
	return r;
}

__attribute__((noinline)) int ukt_st_top(int v)
{
	int r = ukt_st_mid(v) + 2;

	__asm__ volatile("" ::: "memory");
	return r;
}

static unsigned long f_from[NF], f_regs[NF], f_skip[NF], f_small[NF], f_ret[NF];
static unsigned int n_from, n_regs, n_skip, n_small, n_ret;
static unsigned long ip_post;

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	n_from = stack_trace_save_regs_from(regs, (unsigned long)p->addr, STACK_TRACE_ENTRY, f_from,
					    NF, 0);
	n_skip = stack_trace_save_regs_from(regs, (unsigned long)p->addr, STACK_TRACE_ENTRY, f_skip,
					    NF, 1);
	n_small = stack_trace_save_regs_from(regs, (unsigned long)p->addr, STACK_TRACE_ENTRY,
					     f_small, 2, 0);
	return 0;
}

/* after the entry's instruction: regs are those of the next one */
static void post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	(void)p;
	(void)flags;
	n_regs = stack_trace_save_regs(regs, f_regs, NF, 0);
	ip_post = instruction_pointer(regs);
}

static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	n_ret = stack_trace_save_regs_from(regs, (unsigned long)ri->ret_addr, STACK_TRACE_RET, f_ret,
					   NF, 0);
	return 0;
}

/* Is frame a return address (or the address itself) inside name? */
static bool in_func(unsigned long frame, const char *name)
{
	char buf[KSYM_SYMBOL_LEN];
	size_t n = strlen(name);

	sprint_symbol(buf, frame);
	return !strncmp(buf, name, n) && buf[n] == '+';
}

Test(stacktrace, kprobe_entry)
{
	struct kprobe kp = { .symbol_name = "ukt_st_leaf", .pre_handler = pre, .post_handler = post };
	unsigned int i;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukt_st_top(2), 10);
	unregister_kprobe(&kp);

	cr_assert_geq(n_from, 4, "frames: %u", n_from);
	cr_assert_eq(f_from[0], (unsigned long)kp.addr);
	cr_assert(in_func(f_from[1], "ukt_st_mid"));
	cr_assert(in_func(f_from[2], "ukt_st_top"));
	cr_assert(in_func(f_from[3], "stacktrace_kprobe_entry_impl"));
	/* from the post-handler's registers: the next instruction, then
	 * the same callers */
	cr_assert_eq(n_regs, n_from);
	cr_assert_eq(f_regs[0], ip_post);
	cr_assert_gt(ip_post, f_from[0]);
	for (i = 1; i < n_from; i++)
		cr_assert_eq(f_regs[i], f_from[i], "frame %u", i);
	cr_assert_eq(n_skip, n_from - 1);
	for (i = 0; i < n_skip; i++)
		cr_assert_eq(f_skip[i], f_from[i + 1], "frame %u", i);
	cr_assert_eq(n_small, 2);
	cr_assert_eq(f_small[0], f_from[0]);
	cr_assert_eq(f_small[1], f_from[1]);
}

Test(stacktrace, kretprobe)
{
	struct kretprobe rp = { .kp.symbol_name = "ukt_st_mid", .handler = ret_handler };

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq(ukt_st_top(2), 10);
	unregister_kretprobe(&rp);

	cr_assert_geq(n_ret, 2, "frames: %u", n_ret);
	cr_assert(in_func(f_ret[0], "ukt_st_top"));
	cr_assert(in_func(f_ret[1], "stacktrace_kretprobe_impl"));
}
