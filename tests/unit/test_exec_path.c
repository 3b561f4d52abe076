/* SPDX-License-Identifier: MIT */
/*
 * Changing the execution path and the registers from handlers
 * (kprobes.rst, "Changing Execution Path"): a pre_handler that sets
 * regs->ip and returns non-zero sends the thread there, with no
 * post_handler and no further child of an aggregate; register changes
 * made by a pre_handler returning 0 or by a post_handler take effect;
 * handlers see ip = addr + 1 (pre) and the next instruction (post);
 * regs_get_kernel_argument() reads the SysV arguments at a function
 * entry.
 *
 * Handlers only record into globals; the assertions come afterwards.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ukprobes.h"
#include "ukp_test.h"

/*
 *  ukt_mov42():  returns 42, set by the mov at ukt_mov42_insn; the next
 *                instruction (ret) is ukt_mov42_next.
 *  ukt_two():    mov $1,%eax (ukt_two_insn); mov $2,%eax (ukt_two_b);
 *                ret (ukt_two_ret): returns 2.
 */
__asm__(
	".text\n"
	".globl ukt_mov42\n"
	".type ukt_mov42,@function\n"
	"ukt_mov42:\n"
	"	nop\n"
	".globl ukt_mov42_insn\n"
	"ukt_mov42_insn:\n"
	"	mov $42,%eax\n"
	".globl ukt_mov42_next\n"
	"ukt_mov42_next:\n"
	"	ret\n"
	".size ukt_mov42, .-ukt_mov42\n"

	".globl ukt_two\n"
	".type ukt_two,@function\n"
	"ukt_two:\n"
	"	nop\n"
	".globl ukt_two_insn\n"
	"ukt_two_insn:\n"
	"	mov $1,%eax\n"
	".globl ukt_two_b\n"
	"ukt_two_b:\n"
	"	mov $2,%eax\n"
	".globl ukt_two_ret\n"
	"ukt_two_ret:\n"
	"	ret\n"
	".size ukt_two, .-ukt_two\n");

int ukt_mov42(void);
int ukt_two(void);
extern char ukt_mov42_insn[], ukt_mov42_next[], ukt_two_insn[], ukt_two_b[], ukt_two_ret[];

UKP_TARGET int ukt_a(int x)
{
	return x * 10 + 1;
}

UKP_TARGET int ukt_b(int x)
{
	return x * 100 + 2;
}

UKP_TARGET long ukt_args8(long a0, long a1, long a2, long a3, long a4, long a5, long a6,
			  long a7)
{
	return a0 + 2 * a1 + 3 * a2 + 4 * a3 + 5 * a4 + 6 * a5 + 7 * a6 + 8 * a7;
}

static volatile int pre_calls, post_calls, other_pre_calls, other_post_calls, errors;
static volatile unsigned long pre_ip, post_ip, post_ax;
static struct kprobe *volatile running_seen;

static void reset(void)
{
	pre_calls = post_calls = other_pre_calls = other_post_calls = errors = 0;
	pre_ip = post_ip = post_ax = 0;
	running_seen = NULL;
}

/* ------------------------------------------------------- redirect */

static int pre_redirect_to_b(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	pre_ip = regs->ip;
	running_seen = kprobe_running();
	regs->ip = (unsigned long)ukt_b;
	return 1;
}

static void post_never(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_calls++;
}

static int other_pre(struct kprobe *p, struct pt_regs *regs)
{
	other_pre_calls++;
	return 0;
}

static void other_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	other_post_calls++;
}

Test(exec_path, pre_handler_redirects_call)
{
	struct kprobe kp = {
		.symbol_name = "ukt_a",
		.pre_handler = pre_redirect_to_b,
		.post_handler = post_never,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_a(3), 302, "the call did not land in ukt_b");
	cr_expect_eq(pre_calls, 1);
	cr_expect_eq(post_calls, 0, "post_handler ran after a changed execution path");
	cr_expect_eq(pre_ip, (unsigned long)kp.addr + 1);
	cr_expect_eq(running_seen, &kp);
	cr_expect_eq(kp.nmissed, 0);
	cr_expect_null(kprobe_running());
	/* again: nothing was left behind */
	cr_expect_eq(ukt_a(4), 402);
	cr_expect_eq(pre_calls, 2);
	cr_expect_eq(post_calls, 0);
	unregister_kprobe(&kp);
	cr_expect_eq(ukt_a(3), 31);
}

/* In an aggregate, the children after the redirecting one (older ones)
 * run neither their pre nor their post handler; newer ones run their
 * pre_handler first. */
Test(exec_path, redirect_stops_aggregate)
{
	struct kprobe older = {
		.symbol_name = "ukt_a",
		.pre_handler = other_pre,
		.post_handler = other_post,
	};
	struct kprobe redirect = {
		.symbol_name = "ukt_a",
		.pre_handler = pre_redirect_to_b,
		.post_handler = post_never,
	};
	struct kprobe newer = {
		.symbol_name = "ukt_a",
		.pre_handler = other_pre,
		.post_handler = other_post,
	};

	reset();
	cr_assert_eq(register_kprobe(&older), 0);
	cr_assert_eq(register_kprobe(&redirect), 0);
	cr_expect_eq(ukt_a(5), 502);
	cr_expect_eq(pre_calls, 1);
	cr_expect_eq(other_pre_calls, 0, "an older child's pre_handler ran after a redirect");
	cr_expect_eq(other_post_calls, 0);
	cr_expect_eq(post_calls, 0);

	reset();
	cr_assert_eq(register_kprobe(&newer), 0);
	cr_expect_eq(ukt_a(5), 502);
	cr_expect_eq(other_pre_calls, 1, "only the newer child runs before the redirect");
	cr_expect_eq(pre_calls, 1);
	cr_expect_eq(other_post_calls, 0);
	cr_expect_eq(post_calls, 0);
	cr_expect_eq(older.nmissed + redirect.nmissed + newer.nmissed, 0);
	unregister_kprobe(&newer);
	unregister_kprobe(&redirect);
	unregister_kprobe(&older);
}

/* Returning from the function without running it: ip = return address,
 * the return address popped, ax = the value (the override-return idiom). */
static int pre_override_return(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	regs->ip = regs_get_kernel_stack_nth(regs, 0);
	regs->sp += sizeof(long);
	regs->ax = 1234;
	return 1;
}

Test(exec_path, pre_handler_returns_from_function)
{
	struct kprobe kp = {
		.symbol_name = "ukt_a",
		.pre_handler = pre_override_return,
		.post_handler = post_never,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_a(3), 1234);
	cr_expect_eq(ukt_a(9) + ukt_a(1), 2468);
	cr_expect_eq(pre_calls, 3);
	cr_expect_eq(post_calls, 0);
	unregister_kprobe(&kp);
}

/* --------------------------------------------- register changes */

static int pre_change_arg(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	if (regs_get_kernel_argument(regs, 0) != 3)
		errors++;
	regs->di = 7;
	return 0;
}

static void post_count(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_calls++;
}

Test(exec_path, pre_handler_changes_argument)
{
	struct kprobe kp = {
		.symbol_name = "ukt_a",
		.pre_handler = pre_change_arg,
		.post_handler = post_count,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_a(3), 71, "the changed first argument was not used");
	cr_expect_eq(pre_calls, 1);
	cr_expect_eq(post_calls, 1);
	cr_expect_eq(errors, 0);
	unregister_kprobe(&kp);
}

/* ip as the handlers see it, around an instruction run out of line. */
static int pre_record_ip(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	pre_ip = regs->ip;
	if (instruction_pointer(regs) != regs->ip)
		errors++;
	return 0;
}

static void post_record(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_calls++;
	post_ip = regs->ip;
	post_ax = regs_return_value(regs);
	if (kprobe_running() != p || flags != 0)
		errors++;
}

Test(exec_path, handlers_see_ip)
{
	struct kprobe kp = {
		.addr = (kprobe_opcode_t *)ukt_mov42_insn,
		.pre_handler = pre_record_ip,
		.post_handler = post_record,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_mov42(), 42);
	cr_expect_eq(pre_ip, (unsigned long)ukt_mov42_insn + 1, "pre ip %#lx", pre_ip);
	cr_expect_eq(post_ip, (unsigned long)ukt_mov42_next, "post ip %#lx", post_ip);
	cr_expect_eq(post_ax, 42, "the post_handler sees the instruction's result");
	cr_expect_eq(errors, 0);
	unregister_kprobe(&kp);
}

static void post_change_ax(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_calls++;
	post_ax = regs->ax;
	regs->ax = 99;
}

Test(exec_path, post_handler_changes_result)
{
	struct kprobe kp = {
		.addr = (kprobe_opcode_t *)ukt_mov42_insn,
		.post_handler = post_change_ax,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_mov42(), 99, "the post_handler's ax was not used");
	cr_expect_eq(post_ax, 42);
	cr_expect_eq(post_calls, 1);
	unregister_kprobe(&kp);
}

/* A post_handler that moves ip on skips the instruction there. */
static void post_skip(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_calls++;
	post_ip = regs->ip;
	regs->ip = (unsigned long)ukt_two_ret;
}

Test(exec_path, post_handler_changes_ip)
{
	struct kprobe kp = {
		.addr = (kprobe_opcode_t *)ukt_two_insn,
		.post_handler = post_skip,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_two(), 1, "mov $2 was not skipped");
	cr_expect_eq(post_ip, (unsigned long)ukt_two_b);
	unregister_kprobe(&kp);
	cr_expect_eq(ukt_two(), 2);
}

/* A pre_handler that jumps over the probed instruction itself (and
 * emulates it differently): the instruction does not run. */
static int pre_skip_insn(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	regs->ip = (unsigned long)ukt_two_ret;
	regs->ax = 5;
	return 1;
}

Test(exec_path, pre_handler_skips_probed_instruction)
{
	struct kprobe kp = {
		.addr = (kprobe_opcode_t *)ukt_two_b,
		.pre_handler = pre_skip_insn,
		.post_handler = post_never,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_two(), 5, "the probed mov $2 ran");
	cr_expect_eq(pre_calls, 1);
	cr_expect_eq(post_calls, 0);
	unregister_kprobe(&kp);
}

/* ------------------------------------------------------ arguments */

static volatile unsigned long args_seen[8], stack_seen[3], entry_sp;

static int pre_read_args(struct kprobe *p, struct pt_regs *regs)
{
	unsigned int i;

	pre_calls++;
	for (i = 0; i < 8; i++)
		args_seen[i] = regs_get_kernel_argument(regs, i);
	for (i = 0; i < 3; i++)
		stack_seen[i] = regs_get_kernel_stack_nth(regs, i);
	entry_sp = regs->sp;
	return 0;
}

Test(exec_path, kernel_arguments_at_entry)
{
	static const long v[8] = { 11, -22, 33, 0x4400000000L, 55, 66, 777, -888 };
	struct kprobe kp = {
		.symbol_name = "ukt_args8",
		.pre_handler = pre_read_args,
	};
	long expect = 0;
	unsigned int i;

	for (i = 0; i < 8; i++)
		expect += (long)(i + 1) * v[i];
	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	cr_expect_eq(ukt_args8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]), expect);
	cr_expect_eq(pre_calls, 1);
	for (i = 0; i < 8; i++)
		cr_expect_eq((long)args_seen[i], v[i], "argument %u: %ld, expected %ld", i,
			     (long)args_seen[i], v[i]);
	/* at the entry sp points at the return address; 6 and 7 follow */
	cr_expect_eq((long)stack_seen[1], v[6]);
	cr_expect_eq((long)stack_seen[2], v[7]);
	cr_expect_eq(entry_sp % 16, 8, "sp %#lx is not a call frame", entry_sp);
	unregister_kprobe(&kp);
}

/* Changing a stack argument through memory at regs->sp. */
static int pre_change_stack_arg(struct kprobe *p, struct pt_regs *regs)
{
	pre_calls++;
	((long *)regs->sp)[2] = 1000; /* argument 7 */
	regs->r9 = 0;                  /* argument 5 */
	return 0;
}

Test(exec_path, pre_handler_changes_stack_argument)
{
	struct kprobe kp = {
		.symbol_name = "ukt_args8",
		.pre_handler = pre_change_stack_arg,
	};

	reset();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_args8(1, 1, 1, 1, 1, 1, 1, 1), 1 + 2 + 3 + 4 + 5 + 0 + 7 + 8000);
	unregister_kprobe(&kp);
}
