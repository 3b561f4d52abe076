/* SPDX-License-Identifier: MIT */
/*
 * pt_regs_check.h - the body of test_pt_regs_asm_first/_after: a probe
 * whose handler reads the instruction pointer and the first argument
 * through struct pt_regs, included after the headers under test.
 */
#include <criterion/criterion.h>
#include <stddef.h>

static volatile unsigned long seen_ip, seen_arg;

__attribute__((noinline)) int ukt_ptregs_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	seen_ip = instruction_pointer(regs);
	seen_arg = regs_get_kernel_argument(regs, 0);
	return 0;
}

Test(pt_regs_header, handler_sees_the_hit)
{
	struct kprobe kp = { .symbol_name = "ukt_ptregs_target", .pre_handler = pre };

#if defined(__x86_64__)
	/* the kernel's x86-64 order: ip is word 16, sp word 19 */
	cr_assert_eq(offsetof(struct pt_regs, ip), 16 * sizeof(unsigned long));
	cr_assert_eq(offsetof(struct pt_regs, sp), 19 * sizeof(unsigned long));
#endif
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukt_ptregs_target(41), 42);
	/* x86-64 shows the address past the int3, AArch64 the address */
	cr_assert(seen_ip >= (unsigned long)kp.addr && seen_ip <= (unsigned long)kp.addr + 1);
	cr_assert_eq(seen_arg, 41);
	unregister_kprobe(&kp);
}
