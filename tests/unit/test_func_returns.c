/* SPDX-License-Identifier: MIT */
/*
 * ukprobes_func_returns(): a function's return instructions, found by
 * decoding it (jumps inside it, a jump table's indirect jump), a tail
 * call refused, and probes on the returns hit once per return;
 * ukprobes_func_exits(): the epilogues before them (x86-64, Go's
 * compiler's forms), not one a jump lands inside, and what a probe at
 * an exit sees against a probe on its return.
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

#if defined(__x86_64__)
/*
 * ukt_fx_go(x): Go 1.20's frame and epilogues: 1 (x >= 0) by the first,
 * 2 by the second, into whose add a jump lands (its exit is its ret).
 * ukt_fx_new(x): x + 3, Go 1.21's epilogue (add; pop %rbp; ret).
 * ukt_fx_pad(x): x, a frame of 128 bytes (freed by sub $-128) and NOPs
 * before the ret (Go's assembler aligns branches).
 */
__asm__(".text\n"
	".globl ukt_fx_go\n.type ukt_fx_go,@function\n.p2align 4\n"
	"ukt_fx_go:\n"
	"	sub $0x18, %rsp\n"
	"	mov %rbp, 0x10(%rsp)\n"
	"	lea 0x10(%rsp), %rbp\n"
	"	test %edi, %edi\n"
	"	js 1f\n"
	"	mov $1, %eax\n"
	".globl ukt_fx_x1\nukt_fx_x1:\n"
	"	mov 0x10(%rsp), %rbp\n"
	"	add $0x18, %rsp\n"
	"	ret\n"
	"1:	mov 0x10(%rsp), %rbp\n"
	"	mov $2, %eax\n"
	"	jmp 2f\n"
	"	mov 0x10(%rsp), %rbp\n"
	"2:	add $0x18, %rsp\n"
	"	ret\n"
	".size ukt_fx_go, .-ukt_fx_go\n"
	".globl ukt_fx_new\n.type ukt_fx_new,@function\n.p2align 4\n"
	"ukt_fx_new:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	sub $0x10, %rsp\n"
	"	lea 3(%rdi), %eax\n"
	".globl ukt_fx_x3\nukt_fx_x3:\n"
	"	add $0x10, %rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ukt_fx_new, .-ukt_fx_new\n"
	".globl ukt_fx_pad\n.type ukt_fx_pad,@function\n.p2align 4\n"
	"ukt_fx_pad:\n"
	"	sub $0x80, %rsp\n"
	"	mov %rbp, 0x78(%rsp)\n"
	"	lea 0x78(%rsp), %rbp\n"
	"	mov %edi, %eax\n"
	".globl ukt_fx_x4\nukt_fx_x4:\n"
	"	mov 0x78(%rsp), %rbp\n"
	"	.byte 0x48, 0x83, 0xec, 0x80\n" /* sub $-0x80,%rsp */
	"	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopw 0(%rax,%rax) */
	"	nop\n"
	"	ret\n"
	".size ukt_fx_pad, .-ukt_fx_pad\n");

int ukt_fx_go(int x);
int ukt_fx_new(int x);
int ukt_fx_pad(int x);
/* (no symbol inside an epilogue: the control-flow check refuses one) */
extern char ukt_fx_x1[], ukt_fx_x3[], ukt_fx_x4[];

Test(func_exits, epilogues)
{
	struct ukprobes_func_exit x[4];
	const char *why = NULL;

	unsigned long r[4];

	cr_assert_eq(ukprobes_func_returns((void *)ukt_fx_go, r, 4, &why), 2, "%s", why);
	cr_assert_eq(ukprobes_func_exits((void *)ukt_fx_go, x, 4, &why), 2, "%s", why);
	/* mov 0x10(%rsp),%rbp (5 bytes); add $0x18,%rsp (4); ret */
	cr_expect_eq(x[0].addr, (unsigned long)ukt_fx_x1);
	cr_expect_eq(x[0].ret, r[0]);
	cr_expect_eq(r[0], (unsigned long)ukt_fx_x1 + 9);
	cr_expect_eq(x[0].sp_adj, 0x18);
	cr_expect_eq(x[0].fp_at, 0x10);
	/* a jump lands on its add: the ret itself */
	cr_expect_eq(x[1].addr, r[1]);
	cr_expect_eq(x[1].ret, r[1]);
	cr_expect_eq(x[1].sp_adj, 0);
	cr_expect_lt(x[1].fp_at, 0);
	/* add $0x10,%rsp (4 bytes); pop %rbp; ret */
	cr_assert_eq(ukprobes_func_exits((void *)ukt_fx_new, x, 4, &why), 1, "%s", why);
	cr_expect_eq(x[0].addr, (unsigned long)ukt_fx_x3);
	cr_expect_eq(x[0].ret, (unsigned long)ukt_fx_x3 + 5);
	cr_expect_eq(x[0].sp_adj, 0x18);
	cr_expect_eq(x[0].fp_at, 0x10);
	cr_assert_eq(ukprobes_func_exits((void *)ukt_fx_pad, x, 4, &why), 1, "%s", why);
	cr_expect_eq(x[0].addr, (unsigned long)ukt_fx_x4);
	cr_expect_eq(x[0].ret, (unsigned long)ukt_fx_x4 + 5 + 4 + 6 + 1);
	cr_expect_eq(x[0].sp_adj, 0x80);
	cr_expect_eq(x[0].fp_at, 0x78);
	cr_expect_eq(ukt_fx_pad(42), 42);
	/* the same errors as ukprobes_func_returns */
	cr_expect_eq(ukprobes_func_exits((void *)ukt_fx_go, x, 1, &why), -E2BIG);
	cr_expect_eq(ukprobes_func_exits((void *)ukt_fr_tail, x, 4, &why), -ENOTSUP);
	cr_expect_eq(ukprobes_func_exits(NULL, x, 4, &why), -EINVAL);
}

/* At an exit, the stack pointer plus sp_adj and the word at fp_at are
 * what the return instruction finds in its stack and frame pointers,
 * and the result is already there. */
static struct {
	unsigned long sp, fp, ax;
	unsigned int n;
} at_exit[2], at_ret[2];
static struct ukprobes_func_exit fx[2];

static int on_exit_pt(struct kprobe *p, struct pt_regs *regs)
{
	int i = p->addr != (kprobe_opcode_t *)fx[0].addr;

	at_exit[i].sp = regs->sp + fx[i].sp_adj;
	at_exit[i].fp = *(unsigned long *)(regs->sp + (unsigned long)fx[i].fp_at);
	at_exit[i].ax = regs->ax;
	at_exit[i].n++;
	return 0;
}

static int on_ret_pt(struct kprobe *p, struct pt_regs *regs)
{
	int i = p->addr != (kprobe_opcode_t *)fx[0].ret;

	at_ret[i].sp = regs->sp;
	at_ret[i].fp = regs->bp;
	at_ret[i].ax = regs->ax;
	at_ret[i].n++;
	return 0;
}

Test(func_exits, probes_at_exits)
{
	struct kprobe kp[4] = { { .pre_handler = on_exit_pt }, { .pre_handler = on_exit_pt },
				{ .pre_handler = on_ret_pt }, { .pre_handler = on_ret_pt } };
	int i;

	cr_assert_eq(ukprobes_func_exits((void *)ukt_fx_go, fx, 1, NULL), -E2BIG);
	cr_assert_eq(ukprobes_func_exits((void *)ukt_fx_new, fx + 1, 1, NULL), 1);
	{
		struct ukprobes_func_exit two[2];

		cr_assert_eq(ukprobes_func_exits((void *)ukt_fx_go, two, 2, NULL), 2);
		fx[0] = two[0];
	}
	for (i = 0; i < 2; i++) {
		kp[i].addr = (kprobe_opcode_t *)fx[i].addr;
		kp[2 + i].addr = (kprobe_opcode_t *)fx[i].ret;
	}
	for (i = 0; i < 4; i++)
		cr_assert_eq(register_kprobe(&kp[i]), 0);
	cr_expect_eq(ukt_fx_go(5), 1);
	cr_expect_eq(ukt_fx_new(4), 7);
	for (i = 0; i < 4; i++)
		unregister_kprobe(&kp[i]);
	for (i = 0; i < 2; i++) {
		cr_expect_eq(at_exit[i].n, 1);
		cr_expect_eq(at_ret[i].n, 1);
		cr_expect_eq(at_exit[i].sp, at_ret[i].sp);
		cr_expect_eq(at_exit[i].fp, at_ret[i].fp);
		cr_expect_eq(at_exit[i].ax, at_ret[i].ax);
	}
	cr_expect_eq(at_ret[0].ax & 0xffffffff, 1);
	cr_expect_eq(at_ret[1].ax & 0xffffffff, 7);
}
#endif
