/* SPDX-License-Identifier: MIT */
/*
 * ukprobes_func_returns(): a function's return instructions, found by
 * decoding it (jumps inside it, a jump table's indirect jump), a tail
 * call refused, and probes on the returns hit once per return.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ukprobes.h"

/*
 * ukt_fr_two(x): two returns (x < 0: -1 by the first), a jump back.
 * ukt_fr_tail(x): a tail call of ukt_fr_two.
 * ukt_fr_loop(): spins forever (no return).
 */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl ukt_fr_two\n.type ukt_fr_two,@function\n.p2align 4\n"
	"ukt_fr_two:\n"
	"	testl %edi, %edi\n"
	"	jns 1f\n"
	"	movl $-1, %eax\n"
	".globl ukt_fr_ret1\nukt_fr_ret1:\n"
	"	ret\n"
	"1:	leal 1(%rdi), %eax\n"
	"	cmpl $100, %eax\n"
	"	jb 2f\n"
	"	jmp 1b\n"
	"2:\n"
	".globl ukt_fr_ret2\nukt_fr_ret2:\n"
	"	rep ret\n"
	".size ukt_fr_two, .-ukt_fr_two\n"
	".globl ukt_fr_tail\n.type ukt_fr_tail,@function\n.p2align 4\n"
	"ukt_fr_tail:\n"
	"	addl $1, %edi\n"
	"	jmp ukt_fr_two\n"
	".size ukt_fr_tail, .-ukt_fr_tail\n"
	".globl ukt_fr_loop\n.type ukt_fr_loop,@function\n.p2align 4\n"
	"ukt_fr_loop:\n"
	"	jmp ukt_fr_loop\n"
	".size ukt_fr_loop, .-ukt_fr_loop\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl ukt_fr_two\n.type ukt_fr_two,%function\n.p2align 4\n"
	"ukt_fr_two:\n"
	"	tbz w0, #31, 1f\n"
	"	mov w0, #-1\n"
	".globl ukt_fr_ret1\nukt_fr_ret1:\n"
	"	ret\n"
	"1:	add w0, w0, #1\n"
	"	cmp w0, #100\n"
	"	b.lo 2f\n"
	"	b 1b\n"
	"2:\n"
	".globl ukt_fr_ret2\nukt_fr_ret2:\n"
	"	ret\n"
	".size ukt_fr_two, .-ukt_fr_two\n"
	".globl ukt_fr_tail\n.type ukt_fr_tail,%function\n.p2align 4\n"
	"ukt_fr_tail:\n"
	"	add w0, w0, #1\n"
	"	b ukt_fr_two\n"
	".size ukt_fr_tail, .-ukt_fr_tail\n"
	".globl ukt_fr_loop\n.type ukt_fr_loop,%function\n.p2align 4\n"
	"ukt_fr_loop:\n"
	"	b ukt_fr_loop\n"
	".size ukt_fr_loop, .-ukt_fr_loop\n");
#endif

int ukt_fr_two(int x);
int ukt_fr_tail(int x);
void ukt_fr_loop(void);
extern char ukt_fr_ret1[], ukt_fr_ret2[];

Test(func_returns, two_returns)
{
	unsigned long r[4] = { 0 };
	const char *why = NULL;

	cr_assert_eq(ukprobes_func_returns((void *)ukt_fr_two, r, 4, &why), 2, "%s", why);
	cr_expect_eq(r[0], (unsigned long)ukt_fr_ret1);
	cr_expect_eq(r[1], (unsigned long)ukt_fr_ret2);
	cr_expect_eq(ukprobes_func_returns((void *)ukt_fr_two, r, 1, &why), -E2BIG);
	cr_expect_eq(ukprobes_func_returns((void *)ukt_fr_two, NULL, 0, NULL), -E2BIG);
}

Test(func_returns, tail_call_and_no_return)
{
	unsigned long r[4];
	const char *why = NULL;

	cr_expect_eq(ukprobes_func_returns((void *)ukt_fr_tail, r, 4, &why), -ENOTSUP);
	cr_expect(why && strstr(why, "tail call"), "%s", why ? why : "(none)");
	cr_expect_eq(ukprobes_func_returns((void *)ukt_fr_loop, r, 4, &why), -ENOENT);
	/* not a function's start */
	cr_expect_eq(ukprobes_func_returns((char *)ukt_fr_two + 1, r, 4, &why), -ENOENT);
	cr_expect_eq(ukprobes_func_returns(NULL, r, 4, &why), -EINVAL);
}

/* A probe on each return sees each return once, through either path;
 * the bytes read are the original ones while the probes are in place. */
static unsigned long hits[2];

static int on_ret(struct kprobe *p, struct pt_regs *regs)
{
	hits[p->addr == (kprobe_opcode_t *)ukt_fr_ret2]++;
	return 0;
}

Test(func_returns, probes_on_returns)
{
	unsigned long r[4], again[4];
	struct kprobe kp[2] = { { .pre_handler = on_ret }, { .pre_handler = on_ret } };
	int i;

	cr_assert_eq(ukprobes_func_returns((void *)ukt_fr_two, r, 4, NULL), 2);
	for (i = 0; i < 2; i++) {
		kp[i].addr = (kprobe_opcode_t *)r[i];
		cr_assert_eq(register_kprobe(&kp[i]), 0);
	}
	cr_expect_eq(ukprobes_func_returns((void *)ukt_fr_two, again, 4, NULL), 2);
	cr_expect_eq(again[0], r[0]);
	cr_expect_eq(again[1], r[1]);
	cr_expect_eq(ukt_fr_two(-5), -1);
	cr_expect_eq(ukt_fr_two(5), 6);
	cr_expect_eq(ukt_fr_two(7), 8);
	cr_expect_eq(ukt_fr_tail(1), 3);
	cr_expect_eq(hits[0], 1);
	cr_expect_eq(hits[1], 3);
	for (i = 0; i < 2; i++)
		unregister_kprobe(&kp[i]);
}
