/* SPDX-License-Identifier: MIT */
/*
 * Probes on emulated instructions (the control transfers: jmp, jcc, call,
 * ret, loop, jrcxz, indirect call/jmp through a register or memory) in
 * real running code. For each: the program's result is right, the
 * pre_handler sees ip = addr + 1, the post_handler runs (emulation does
 * not skip it) and sees the ip the instruction went to and the stack it
 * left.
 *
 * The instructions are written in assembly with global labels, so their
 * addresses and encodings are exact. Handlers only record into globals.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ukprobes.h"
#include "ukp_test.h"

__asm__(
	".text\n"
	/* ukt_callee(x) = x + 1; the ret is ukt_callee_ret */
	".globl ukt_callee\n"
	".type ukt_callee,@function\n"
	"ukt_callee:\n"
	"	lea 1(%rdi),%eax\n"
	".globl ukt_callee_ret\n"
	"ukt_callee_ret:\n"
	"	ret\n"
	".size ukt_callee, .-ukt_callee\n"

	/* jmp rel8: returns 1 */
	".globl ukt_jmp8\n"
	".type ukt_jmp8,@function\n"
	"ukt_jmp8:\n"
	"	nop\n"
	".globl ukt_jmp8_insn\n"
	"ukt_jmp8_insn:\n"
	"	.byte 0xeb, 0x06\n"          /* jmp +6 */
	"	mov $0,%eax\n"               /* 5 bytes */
	"	ret\n"                       /* 1 byte */
	".globl ukt_jmp8_target\n"
	"ukt_jmp8_target:\n"
	"	mov $1,%eax\n"
	"	ret\n"
	".size ukt_jmp8, .-ukt_jmp8\n"

	/* jmp rel32 backwards: returns 3 */
	".globl ukt_jmp32\n"
	".type ukt_jmp32,@function\n"
	"ukt_jmp32:\n"
	"	jmp 2f\n"
	".globl ukt_jmp32_target\n"
	"ukt_jmp32_target:\n"
	"	mov $3,%eax\n"
	"	ret\n"
	"2:\n"
	".globl ukt_jmp32_insn\n"
	"ukt_jmp32_insn:\n"
	"	{disp32} jmp ukt_jmp32_target\n"
	"	ud2\n"
	".size ukt_jmp32, .-ukt_jmp32\n"

	/* jl rel8: x < 5 ? 20 : 10 */
	".globl ukt_jl\n"
	".type ukt_jl,@function\n"
	"ukt_jl:\n"
	"	cmp $5,%edi\n"
	".globl ukt_jl_insn\n"
	"ukt_jl_insn:\n"
	"	jl 1f\n"
	".globl ukt_jl_next\n"
	"ukt_jl_next:\n"
	"	mov $10,%eax\n"
	"	ret\n"
	".globl ukt_jl_target\n"
	"ukt_jl_target:\n"
	"1:	mov $20,%eax\n"
	"	ret\n"
	".size ukt_jl, .-ukt_jl\n"

	/* je rel32: x == 5 ? 20 : 10 */
	".globl ukt_je32\n"
	".type ukt_je32,@function\n"
	"ukt_je32:\n"
	"	cmp $5,%edi\n"
	".globl ukt_je32_insn\n"
	"ukt_je32_insn:\n"
	"	{disp32} je 1f\n"
	".globl ukt_je32_next\n"
	"ukt_je32_next:\n"
	"	mov $10,%eax\n"
	"	ret\n"
	".globl ukt_je32_target\n"
	"ukt_je32_target:\n"
	"1:	mov $20,%eax\n"
	"	ret\n"
	".size ukt_je32, .-ukt_je32\n"

	/* jg (jnle) rel8: x > 5 ? 20 : 10 (signed) */
	".globl ukt_jg\n"
	".type ukt_jg,@function\n"
	"ukt_jg:\n"
	"	cmp $5,%edi\n"
	".globl ukt_jg_insn\n"
	"ukt_jg_insn:\n"
	"	jg 1f\n"
	".globl ukt_jg_next\n"
	"ukt_jg_next:\n"
	"	mov $10,%eax\n"
	"	ret\n"
	".globl ukt_jg_target\n"
	"ukt_jg_target:\n"
	"1:	mov $20,%eax\n"
	"	ret\n"
	".size ukt_jg, .-ukt_jg\n"

	/* jbe rel8: x <= 5 ? 20 : 10 (unsigned) */
	".globl ukt_jbe\n"
	".type ukt_jbe,@function\n"
	"ukt_jbe:\n"
	"	cmp $5,%edi\n"
	".globl ukt_jbe_insn\n"
	"ukt_jbe_insn:\n"
	"	jbe 1f\n"
	".globl ukt_jbe_next\n"
	"ukt_jbe_next:\n"
	"	mov $10,%eax\n"
	"	ret\n"
	".globl ukt_jbe_target\n"
	"ukt_jbe_target:\n"
	"1:	mov $20,%eax\n"
	"	ret\n"
	".size ukt_jbe, .-ukt_jbe\n"

	/* call rel32: ukt_callee(x) + 100 */
	".globl ukt_call\n"
	".type ukt_call,@function\n"
	"ukt_call:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	".globl ukt_call_insn\n"
	"ukt_call_insn:\n"
	"	call ukt_callee\n"
	".globl ukt_call_back\n"
	"ukt_call_back:\n"
	"	add $100,%eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ukt_call, .-ukt_call\n"

	/* ret imm16: ukt_retn_caller(x) = x + 7, through a callee that
	 * releases an 8-byte stack argument with ret $8 */
	".globl ukt_retn\n"
	".type ukt_retn,@function\n"
	"ukt_retn:\n"
	"	mov 8(%rsp),%rax\n"
	"	add %rdi,%rax\n"
	".globl ukt_retn_insn\n"
	"ukt_retn_insn:\n"
	"	ret $8\n"
	".size ukt_retn, .-ukt_retn\n"
	".globl ukt_retn_caller\n"
	".type ukt_retn_caller,@function\n"
	"ukt_retn_caller:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	push $7\n"
	"	call ukt_retn\n"
	".globl ukt_retn_back\n"
	"ukt_retn_back:\n"
	"	cmp %rsp,%rbp\n"             /* the argument was released */
	"	je 1f\n"
	"	mov $-1,%rax\n"
	"1:	pop %rbp\n"
	"	ret\n"
	".size ukt_retn_caller, .-ukt_retn_caller\n"

	/* loop: ukt_loop(n) = n (n >= 1), the loop runs n times */
	".globl ukt_loop\n"
	".type ukt_loop,@function\n"
	"ukt_loop:\n"
	"	mov %rdi,%rcx\n"
	"	xor %eax,%eax\n"
	".globl ukt_loop_head\n"
	"ukt_loop_head:\n"
	"	add $1,%eax\n"
	".globl ukt_loop_insn\n"
	"ukt_loop_insn:\n"
	"	loop ukt_loop_head\n"
	".globl ukt_loop_next\n"
	"ukt_loop_next:\n"
	"	ret\n"
	".size ukt_loop, .-ukt_loop\n"

	/* jrcxz: x == 0 ? 2 : 1 */
	".globl ukt_jrcxz\n"
	".type ukt_jrcxz,@function\n"
	"ukt_jrcxz:\n"
	"	mov %rdi,%rcx\n"
	".globl ukt_jrcxz_insn\n"
	"ukt_jrcxz_insn:\n"
	"	jrcxz 1f\n"
	".globl ukt_jrcxz_next\n"
	"ukt_jrcxz_next:\n"
	"	mov $1,%eax\n"
	"	ret\n"
	".globl ukt_jrcxz_target\n"
	"ukt_jrcxz_target:\n"
	"1:	mov $2,%eax\n"
	"	ret\n"
	".size ukt_jrcxz, .-ukt_jrcxz\n"

	/* call *%r11: ukt_callee(x) + 200 */
	".globl ukt_callr\n"
	".type ukt_callr,@function\n"
	"ukt_callr:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	lea ukt_callee(%rip),%r11\n"
	".globl ukt_callr_insn\n"
	"ukt_callr_insn:\n"
	"	call *%r11\n"
	".globl ukt_callr_back\n"
	"ukt_callr_back:\n"
	"	add $200,%eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ukt_callr, .-ukt_callr\n"

	/* jmp *%rax: x + 2 */
	".globl ukt_jmpr\n"
	".type ukt_jmpr,@function\n"
	"ukt_jmpr:\n"
	"	lea ukt_jmpr_target(%rip),%rax\n"
	".globl ukt_jmpr_insn\n"
	"ukt_jmpr_insn:\n"
	"	jmp *%rax\n"
	"	ud2\n"
	".globl ukt_jmpr_target\n"
	"ukt_jmpr_target:\n"
	"	lea 2(%rdi),%eax\n"
	"	ret\n"
	".size ukt_jmpr, .-ukt_jmpr\n"

	/* call *ukt_fnptr(%rip): ukt_callee(x) + 300 */
	".globl ukt_callm\n"
	".type ukt_callm,@function\n"
	"ukt_callm:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	".globl ukt_callm_insn\n"
	"ukt_callm_insn:\n"
	"	call *ukt_fnptr(%rip)\n"
	".globl ukt_callm_back\n"
	"ukt_callm_back:\n"
	"	add $300,%eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ukt_callm, .-ukt_callm\n"

	/* call *(%rsp): the operand is read before the push; + 400 */
	".globl ukt_callsp\n"
	".type ukt_callsp,@function\n"
	"ukt_callsp:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	lea ukt_callee(%rip),%rax\n"
	"	push %rax\n"
	".globl ukt_callsp_insn\n"
	"ukt_callsp_insn:\n"
	"	call *(%rsp)\n"
	".globl ukt_callsp_back\n"
	"ukt_callsp_back:\n"
	"	add $400,%eax\n"
	"	mov %rbp,%rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ukt_callsp, .-ukt_callsp\n"

	/* jmp *(%rdx,%rdi,8) through a table: case x (0..2) -> 10 * (x + 1) */
	".globl ukt_switch\n"
	".type ukt_switch,@function\n"
	"ukt_switch:\n"
	"	lea ukt_jmptab(%rip),%rdx\n"
	".globl ukt_switch_insn\n"
	"ukt_switch_insn:\n"
	"	jmp *(%rdx,%rdi,8)\n"
	".globl ukt_case0\n"
	"ukt_case0:\n"
	"	mov $10,%eax\n"
	"	ret\n"
	".globl ukt_case1\n"
	"ukt_case1:\n"
	"	mov $20,%eax\n"
	"	ret\n"
	".globl ukt_case2\n"
	"ukt_case2:\n"
	"	mov $30,%eax\n"
	"	ret\n"
	".size ukt_switch, .-ukt_switch\n"

	".section .data.rel.ro,\"aw\"\n"
	".balign 8\n"
	".globl ukt_fnptr\n"
	"ukt_fnptr:\n"
	"	.quad ukt_callee\n"
	"ukt_jmptab:\n"
	"	.quad ukt_case0, ukt_case1, ukt_case2\n"
	".text\n");

int ukt_callee(long x);
int ukt_jmp8(void);
int ukt_jmp32(void);
int ukt_jl(int x);
int ukt_je32(int x);
int ukt_jg(int x);
int ukt_jbe(unsigned int x);
int ukt_call(long x);
long ukt_retn_caller(long x);
int ukt_loop(long n);
int ukt_jrcxz(long x);
int ukt_callr(long x);
int ukt_jmpr(long x);
int ukt_callm(long x);
int ukt_callsp(long x);
int ukt_switch(long x);

extern char ukt_callee_ret[], ukt_jmp8_insn[], ukt_jmp8_target[], ukt_jmp32_insn[],
	ukt_jmp32_target[], ukt_jl_insn[], ukt_jl_next[], ukt_jl_target[], ukt_je32_insn[],
	ukt_je32_next[], ukt_je32_target[], ukt_jg_insn[], ukt_jg_next[], ukt_jg_target[],
	ukt_jbe_insn[], ukt_jbe_next[], ukt_jbe_target[], ukt_call_insn[], ukt_call_back[],
	ukt_retn_insn[], ukt_retn_back[], ukt_loop_insn[], ukt_loop_head[], ukt_loop_next[],
	ukt_jrcxz_insn[], ukt_jrcxz_next[], ukt_jrcxz_target[], ukt_callr_insn[],
	ukt_callr_back[], ukt_jmpr_insn[], ukt_jmpr_target[], ukt_callm_insn[],
	ukt_callm_back[], ukt_callsp_insn[], ukt_callsp_back[], ukt_switch_insn[], ukt_case0[],
	ukt_case1[], ukt_case2[];

/* ------------------------------------------------------- recording */

#define MAX_REC 16

static volatile int pre_calls, post_calls, errors;
static volatile unsigned long pre_ip[MAX_REC], pre_sp[MAX_REC];
static volatile unsigned long post_ip[MAX_REC], post_sp[MAX_REC], post_tos[MAX_REC];
static volatile unsigned long post_cx[MAX_REC];

static int pre_rec(struct kprobe *p, struct pt_regs *regs)
{
	if (pre_calls < MAX_REC) {
		pre_ip[pre_calls] = regs->ip;
		pre_sp[pre_calls] = regs->sp;
	}
	if (kprobe_running() != p)
		errors++;
	pre_calls++;
	return 0;
}

static void post_rec(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	if (post_calls < MAX_REC) {
		post_ip[post_calls] = regs->ip;
		post_sp[post_calls] = regs->sp;
		post_tos[post_calls] = regs_get_kernel_stack_nth(regs, 0);
		post_cx[post_calls] = regs->cx;
	}
	if (kprobe_running() != p || flags != 0)
		errors++;
	post_calls++;
}

static struct kprobe kp;

static void probe_at(void *addr)
{
	memset(&kp, 0, sizeof(kp));
	kp.addr = addr;
	kp.pre_handler = pre_rec;
	kp.post_handler = post_rec;
	pre_calls = post_calls = errors = 0;
	cr_assert_eq(register_kprobe(&kp), 0, "cannot probe %p", addr);
}

static void rearm(void)
{
	pre_calls = post_calls = errors = 0;
}

/* One hit: pre at addr + 1, post at want_ip, sp moved by sp_delta. */
static void expect_one_hit(void *addr, void *want_ip, long sp_delta)
{
	cr_expect_eq(pre_calls, 1, "pre_handler ran %d times", pre_calls);
	cr_expect_eq(post_calls, 1, "post_handler ran %d times", post_calls);
	cr_expect_eq(errors, 0);
	cr_expect_eq(pre_ip[0], (unsigned long)addr + 1, "pre ip %#lx, expected %p + 1",
		     pre_ip[0], addr);
	cr_expect_eq(post_ip[0], (unsigned long)want_ip, "post ip %#lx, expected %p",
		     post_ip[0], want_ip);
	cr_expect_eq((long)(post_sp[0] - pre_sp[0]), sp_delta, "sp moved by %ld, expected %ld",
		     (long)(post_sp[0] - pre_sp[0]), sp_delta);
	cr_expect_eq(kp.nmissed, 0);
}

static void done(void)
{
	unregister_kprobe(&kp);
}

/* ----------------------------------------------------------- jmp */

Test(emulate, jmp_rel8)
{
	cr_assert_eq(ukt_jmp8(), 1);
	probe_at(ukt_jmp8_insn);
	cr_expect_eq(ukt_jmp8(), 1);
	expect_one_hit(ukt_jmp8_insn, ukt_jmp8_target, 0);
	done();
}

Test(emulate, jmp_rel32_backwards)
{
	cr_assert_eq((unsigned char)ukt_jmp32_insn[0], 0xe9);
	probe_at(ukt_jmp32_insn);
	cr_expect_eq(ukt_jmp32(), 3);
	expect_one_hit(ukt_jmp32_insn, ukt_jmp32_target, 0);
	done();
}

/* ----------------------------------------------------------- jcc */

static void jcc_case(int (*fn)(int), char *insn, char *next, char *target, int x, bool taken)
{
	probe_at(insn);
	cr_expect_eq(fn(x), taken ? 20 : 10, "x = %d", x);
	expect_one_hit(insn, taken ? target : next, 0);
	done();
}

Test(emulate, jl_taken)      { jcc_case(ukt_jl, ukt_jl_insn, ukt_jl_next, ukt_jl_target, 3, true); }
Test(emulate, jl_not_taken)  { jcc_case(ukt_jl, ukt_jl_insn, ukt_jl_next, ukt_jl_target, 5, false); }
Test(emulate, jl_negative)   { jcc_case(ukt_jl, ukt_jl_insn, ukt_jl_next, ukt_jl_target, -9, true); }
Test(emulate, je32_taken)
{
	cr_assert_eq((unsigned char)ukt_je32_insn[0], 0x0f);
	jcc_case(ukt_je32, ukt_je32_insn, ukt_je32_next, ukt_je32_target, 5, true);
}
Test(emulate, je32_not_taken) { jcc_case(ukt_je32, ukt_je32_insn, ukt_je32_next, ukt_je32_target, 6, false); }
Test(emulate, jg_taken)      { jcc_case(ukt_jg, ukt_jg_insn, ukt_jg_next, ukt_jg_target, 6, true); }
Test(emulate, jg_equal)      { jcc_case(ukt_jg, ukt_jg_insn, ukt_jg_next, ukt_jg_target, 5, false); }
Test(emulate, jg_less)       { jcc_case(ukt_jg, ukt_jg_insn, ukt_jg_next, ukt_jg_target, -100, false); }

static int jbe_wrap(int x)
{
	return ukt_jbe((unsigned int)x);
}

Test(emulate, jbe_taken)     { jcc_case(jbe_wrap, ukt_jbe_insn, ukt_jbe_next, ukt_jbe_target, 5, true); }
Test(emulate, jbe_not_taken) { jcc_case(jbe_wrap, ukt_jbe_insn, ukt_jbe_next, ukt_jbe_target, -1, false); }

/* The condition is taken from the flags as the pre_handler left them. */
static int pre_set_zf(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	regs->flags |= 0x40; /* ZF */
	return 0;
}

Test(emulate, jcc_follows_flags_changed_by_pre_handler)
{
	memset(&kp, 0, sizeof(kp));
	kp.addr = (kprobe_opcode_t *)ukt_je32_insn;
	kp.pre_handler = pre_set_zf;
	kp.post_handler = post_rec;
	pre_calls = post_calls = 0;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_je32(6), 20, "the branch ignored the pre_handler's ZF");
	cr_expect_eq(post_ip[0], (unsigned long)ukt_je32_target);
	done();
}

/* ---------------------------------------------------- call / ret */

Test(emulate, call_rel32)
{
	probe_at(ukt_call_insn);
	cr_expect_eq(ukt_call(5), 106);
	expect_one_hit(ukt_call_insn, ukt_callee, -8);
	cr_expect_eq(post_tos[0], (unsigned long)ukt_call_back, "pushed return address %#lx",
		     post_tos[0]);
	done();
}

Test(emulate, ret)
{
	probe_at(ukt_callee_ret);
	cr_expect_eq(ukt_call(5), 106);
	expect_one_hit(ukt_callee_ret, ukt_call_back, 8);
	/* and a ret reached from another caller returns there */
	rearm();
	cr_expect_eq(ukt_callr(1), 202);
	cr_expect_eq(post_ip[0], (unsigned long)ukt_callr_back);
	done();
}

Test(emulate, ret_imm16)
{
	cr_assert_eq((unsigned char)ukt_retn_insn[0], 0xc2);
	cr_assert_eq(ukt_retn_caller(5), 12);
	probe_at(ukt_retn_insn);
	cr_expect_eq(ukt_retn_caller(5), 12, "ret $8 did not release its argument");
	expect_one_hit(ukt_retn_insn, ukt_retn_back, 16);
	done();
}

/* ---------------------------------------------------- loop / jrcxz */

Test(emulate, loop)
{
	int i;

	probe_at(ukt_loop_insn);
	cr_expect_eq(ukt_loop(5), 5);
	cr_expect_eq(pre_calls, 5);
	cr_expect_eq(post_calls, 5);
	for (i = 0; i < 4; i++) {
		cr_expect_eq(post_ip[i], (unsigned long)ukt_loop_head, "iteration %d", i);
		cr_expect_eq(post_cx[i], (unsigned long)(4 - i), "iteration %d: cx %lu", i,
			     post_cx[i]);
	}
	cr_expect_eq(post_ip[4], (unsigned long)ukt_loop_next);
	cr_expect_eq(post_cx[4], 0);
	cr_expect_eq(pre_ip[0], (unsigned long)ukt_loop_insn + 1);
	cr_expect_eq(kp.nmissed, 0);
	done();
}

Test(emulate, jrcxz)
{
	probe_at(ukt_jrcxz_insn);
	cr_expect_eq(ukt_jrcxz(0), 2);
	expect_one_hit(ukt_jrcxz_insn, ukt_jrcxz_target, 0);
	rearm();
	cr_expect_eq(ukt_jrcxz(1L << 32), 1, "jrcxz looked at ecx only");
	expect_one_hit(ukt_jrcxz_insn, ukt_jrcxz_next, 0);
	done();
}

/* ------------------------------------------------------- indirect */

Test(emulate, call_register)
{
	probe_at(ukt_callr_insn);
	cr_expect_eq(ukt_callr(5), 206);
	expect_one_hit(ukt_callr_insn, ukt_callee, -8);
	cr_expect_eq(post_tos[0], (unsigned long)ukt_callr_back);
	done();
}

Test(emulate, jmp_register)
{
	probe_at(ukt_jmpr_insn);
	cr_expect_eq(ukt_jmpr(5), 7);
	expect_one_hit(ukt_jmpr_insn, ukt_jmpr_target, 0);
	done();
}

Test(emulate, call_memory_rip_relative)
{
	/* ff 15: the kernel refuses memory operands; this library
	 * emulates them */
	cr_assert_eq((unsigned char)ukt_callm_insn[0], 0xff);
	cr_assert_eq((unsigned char)ukt_callm_insn[1], 0x15);
	probe_at(ukt_callm_insn);
	cr_expect_eq(ukt_callm(5), 306);
	expect_one_hit(ukt_callm_insn, ukt_callee, -8);
	cr_expect_eq(post_tos[0], (unsigned long)ukt_callm_back);
	done();
}

Test(emulate, call_through_stack_top)
{
	probe_at(ukt_callsp_insn);
	cr_expect_eq(ukt_callsp(5), 406);
	expect_one_hit(ukt_callsp_insn, ukt_callee, -8);
	cr_expect_eq(post_tos[0], (unsigned long)ukt_callsp_back);
	done();
}

Test(emulate, jmp_table_base_index_scale)
{
	static char *const cases[3] = { ukt_case0, ukt_case1, ukt_case2 };
	long x;

	probe_at(ukt_switch_insn);
	for (x = 0; x < 3; x++) {
		rearm();
		cr_expect_eq(ukt_switch(x), 10 * (x + 1));
		expect_one_hit(ukt_switch_insn, cases[x], 0);
	}
	done();
}

/* A C call through a function pointer in a global: whatever instruction
 * the compiler chose for it, probing it gives the right result and the
 * post_handler lands in the callee. */
static int (*volatile c_fnptr)(long) = ukt_callee;

UKP_TARGET int ukt_c_indirect(long x)
{
	return c_fnptr(x) + 500;
}

static int pre_count_only(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	return 0;
}

Test(emulate, every_instruction_of_a_c_caller)
{
	/* Probe each instruction of ukt_c_indirect in turn (the size comes
	 * from the end of the function: the next symbol is far enough). */
	unsigned int off, probed = 0;
	const unsigned char *f = (const unsigned char *)ukt_c_indirect;

	for (off = 0; off < 64; off++) {
		struct kprobe k = { .addr = (kprobe_opcode_t *)(f + off),
				    .pre_handler = pre_count_only,
				    .post_handler = post_rec };
		int r;

		pre_calls = post_calls = errors = 0;
		r = register_kprobe(&k);
		if (r)
			continue; /* not an instruction boundary, or past the end */
		probed++;
		cr_expect_eq(ukt_c_indirect(5), 506, "probe at +%u", off);
		cr_expect_leq(pre_calls, 1, "probe at +%u", off);
		cr_expect_eq(post_calls, pre_calls, "probe at +%u", off);
		unregister_kprobe(&k);
		if (f[off] == 0xc3)
			break;
	}
	cr_expect_geq(probed, 2);
}
