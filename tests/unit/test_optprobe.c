// SPDX-License-Identifier: MIT
/*
 * test_optprobe.c - jump optimization: optimized probes give the same
 * handler results as breakpoints; [OPTIMIZED] follows the knob, a
 * post_handler, disable and a neighbouring probe; the red zone, vector,
 * x87 and flag state survive a handler that clobbers them; faults in the
 * detour's copy reach the program at the original instruction; return
 * probes with optimized entries; [FTRACE] entries; code whose control
 * flow forbids a jump stays a working breakpoint; and threads that run
 * the probed code while probes are optimized and unoptimized over and
 * over.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "ukprobes.h"
#include "ukp_test.h"
#include "ukt_vec.h"

/* Targets in assembly: the instructions at each probe point are known. */
__asm__(
	".text\n"
	/* 89 f8 | 83 c0 07: a 5-byte region of two instructions */
	".globl op_add\n .type op_add,@function\n"
	"op_add:\n"
	"	movl %edi, %eax\n"
	"	addl $7, %eax\n"
	"	ret\n"
	".size op_add, .-op_add\n"

	/* A leaf that keeps its data in the red zone across the probe. */
	".globl op_redzone\n .type op_redzone,@function\n"
	"op_redzone:\n"
	"	movq %rdi, -8(%rsp)\n"
	"	movq %rsi, -128(%rsp)\n"
	".globl op_redzone_probe\n"
	"op_redzone_probe:\n"
	"	movq -8(%rsp), %rax\n"		/* 48 8b 44 24 f8 */
	"	addq -128(%rsp), %rax\n"
	"	ret\n"
	".size op_redzone, .-op_redzone\n"


	/* Two x87 values live across the probe: returns st0 - st1 (as double). */
	".globl op_x87\n .type op_x87,@function\n"
	"op_x87:\n"
	"	fldl (%rdi)\n"
	"	fldl 8(%rdi)\n"
	".globl op_x87_probe\n"
	"op_x87_probe:\n"
	"	movl $2, %eax\n"			/* b8 02 00 00 00 */
	"	fsubp\n"				/* st1 - st0 */
	"	fstpl (%rsi)\n"
	"	ret\n"
	".size op_x87, .-op_x87\n"

	/* Flags live across the probe: cmp, probe, then setcc of each flag
	 * into the bytes of (%rdx); DF set across it when %ecx != 0. */
	".globl op_flags\n .type op_flags,@function\n"
	"op_flags:\n"
	"	testl %ecx, %ecx\n"
	"	jz 1f\n"
	"	std\n"
	"1:	cmpl %esi, %edi\n"
	".globl op_flags_probe\n"
	"op_flags_probe:\n"
	"	movl $3, %eax\n"			/* b8 03 00 00 00: no flags */
	"	setc 0(%rdx)\n"
	"	setz 1(%rdx)\n"
	"	sets 2(%rdx)\n"
	"	seto 3(%rdx)\n"
	"	setp 4(%rdx)\n"
	"	pushfq\n"
	"	popq %rax\n"
	"	shrq $10, %rax\n"
	"	andl $1, %eax\n"
	"	movb %al, 5(%rdx)\n"			/* DF */
	"	cld\n"
	"	ret\n"
	".size op_flags, .-op_flags\n"

	/* The same at a function's entry (the template without pushfq):
	 * op_eflags_call compares and calls op_eflags_entry, whose first
	 * instruction leaves the flags alone. */
	".globl op_eflags_call\n .type op_eflags_call,@function\n"
	"op_eflags_call:\n"
	"	cmpl %esi, %edi\n"
	"	call op_eflags_entry\n"
	"	ret\n"
	".size op_eflags_call, .-op_eflags_call\n"
	".globl op_eflags_entry\n .type op_eflags_entry,@function\n"
	"op_eflags_entry:\n"
	"	movl $3, %eax\n"			/* b8 03 00 00 00: no flags */
	"	setc 0(%rdx)\n"
	"	setz 1(%rdx)\n"
	"	sets 2(%rdx)\n"
	"	seto 3(%rdx)\n"
	"	setp 4(%rdx)\n"
	"	ret\n"
	".size op_eflags_entry, .-op_eflags_entry\n"

	/* A first instruction that faults on a bad pointer. */
	".globl op_load\n .type op_load,@function\n"
	"op_load:\n"
	"	movl (%rdi), %eax\n"			/* 8b 07 */
	"	addl $1, %eax\n"			/* 83 c0 01 */
	"	ret\n"
	".size op_load, .-op_load\n"

	/* A loop back into the region: the jump would break it. */
	".globl op_loop\n .type op_loop,@function\n"
	"op_loop:\n"
	"	xorl %eax, %eax\n"			/* 31 c0 */
	"2:	addl $1, %eax\n"			/* 83 c0 01: a jump target */
	"	cmpl %edi, %eax\n"
	"	jl 2b\n"
	"	ret\n"
	".size op_loop, .-op_loop\n"

	/* Starts with a call, which is the whole region: relocated as
	 * push of the return address and a jump (test_optprobe_regions.c). */
	".globl op_call\n .type op_call,@function\n"
	"op_call:\n"
	"	call op_add\n"
	"	ret\n"
	".size op_call, .-op_call\n"

	/* A call through a register in the region: not relocatable. */
	".globl op_call_reg\n .type op_call_reg,@function\n"
	"op_call_reg:\n"
	"	call *%rsi\n"
	"	addl $1, %eax\n"
	"	ret\n"
	".size op_call_reg, .-op_call_reg\n"

	/* rep movsb in the region: a thread stays in the detour's copy. */
	".globl op_copy\n .type op_copy,@function\n"
	"op_copy:\n"
	"	movq %rdx, %rcx\n"
	".globl op_copy_probe\n"
	"op_copy_probe:\n"
	"	rep movsb\n"				/* f3 a4 */
	"	movl $4, %eax\n"			/* b8 04 00 00 00 */
	"	ret\n"
	".size op_copy, .-op_copy\n"

	/* jcc in the region (re-encoded with a rel32 in the copy) */
	".globl op_jcc\n .type op_jcc,@function\n"
	"op_jcc:\n"
	"	testl %edi, %edi\n"			/* 85 ff */
	"	je 3f\n"				/* 74 xx */
	"	movl $1, %eax\n"			/* b8 01 00 00 00 */
	"	ret\n"
	"3:	movl $2, %eax\n"
	"	ret\n"
	".size op_jcc, .-op_jcc\n"

	/* a tail call: jmp rel32 is the whole region */
	".globl op_tail\n .type op_tail,@function\n"
	"op_tail:\n"
	"	jmp op_add\n"
	".size op_tail, .-op_tail\n"

	/* a tail call through memory (a GOT slot): ff 25, rip-relative */
	".globl op_got\n .type op_got,@function\n"
	"op_got:\n"
	"	jmp *op_got_slot(%rip)\n"
	".size op_got, .-op_got\n"
	".section .data.rel.ro,\"aw\"\n .p2align 3\n"
	"op_got_slot: .quad op_add\n"
	".text\n"

	/* A 5-byte NOP entry (clang's -fpatchable-function-entry=5). */
	".globl op_nop5\n .type op_nop5,@function\n"
	"op_nop5:\n"
	"	nopl 0x8(%rax,%rax,1)\n"
	"	leal 3(%rdi), %eax\n"
	"	ret\n"
	".size op_nop5, .-op_nop5\n");

int op_add(int x);
long op_redzone(long a, long b);
extern char op_redzone_probe[];
void op_x87(const double *in, double *out);
extern char op_x87_probe[];
void op_flags(int a, int b, unsigned char *out, int df);
extern char op_flags_probe[];
int op_load(const int *p);
int op_loop(int n);
int op_call(int x);
int op_call_reg(int x, int (*fn)(int));
int op_nop5(int x);
int op_copy(void *dst, const void *src, size_t n);
int op_jcc(int x);
int op_tail(int x);
int op_got(int x);
extern char op_copy_probe[];

/* GCC's -fpatchable-function-entry=5: five one-byte NOPs. */
__attribute__((patchable_function_entry(5, 0))) UKP_TARGET int op_patchable(int x)
{
	return x * 5;
}

static atomic_long hits, posts;
static struct pt_regs seen;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	seen = *regs;
	atomic_fetch_add(&hits, 1);
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	(void)p;
	(void)regs;
	(void)flags;
	atomic_fetch_add(&posts, 1);
}

/* A handler that clobbers what C code may: every vector register (glibc's
 * AVX string functions end with vzeroupper), the flags, MXCSR status,
 * and the x87 stack (long double arithmetic). */
static volatile long double ld_sink;
static int clobber_pre(struct kprobe *p, struct pt_regs *regs)
{
	char buf[256];
	volatile long double x = 3.0L;

	(void)p;
	(void)regs;
	memset(buf, 'x', sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = 0;
	__asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n"
			 "vmovdqa %%ymm0, %%ymm5\n vmovdqa %%ymm0, %%ymm9\n vmovdqa %%ymm0, %%ymm15\n"
			 "vzeroupper" ::: "xmm0", "xmm5", "xmm9", "xmm15");
	ld_sink = x / 7.0L + (long double)strlen(buf);
	atomic_fetch_add(&hits, 1);
	return 0;
}

static bool is_optimized(struct kprobe *kp)
{
	return kprobe_optimized(kp);
}

static bool list_has(const char *tag)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool found;

	kprobes_show_list(f);
	fclose(f);
	found = strstr(buf, tag) != NULL;
	free(buf);
	return found;
}

/* Register and wait for the optimizer. */
static void reg(struct kprobe *kp)
{
	cr_assert_eq(register_kprobe(kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
}

Test(optprobe, optimized_gives_the_same_results_as_a_breakpoint)
{
	struct kprobe kp = { .symbol_name = "op_add", .pre_handler = count_pre };
	struct pt_regs bp_regs;
	int i;

	cr_assert_eq(kprobes_set_optimization(false), 0);
	reg(&kp);
	cr_expect(!is_optimized(&kp));
	cr_expect_eq(op_add(5), 12);
	bp_regs = seen;
	cr_assert_eq(kprobes_set_optimization(true), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(is_optimized(&kp), "op_add's entry should be optimized");
	unsigned long b0 = ukp_tls_boosted_hits, o0 = ukp_tls_ool_resumes;
	for (i = 0; i < 1000; i++)
		cr_assert_eq(op_add(i), i + 7);
	cr_expect_eq(atomic_load(&hits), 1001);
	cr_expect_eq(ukp_tls_boosted_hits, b0, "no trap on the optimized path");
	cr_expect_eq(ukp_tls_ool_resumes, o0);
	op_add(5);
	cr_expect_eq(seen.ip, bp_regs.ip, "regs->ip is addr + 1 on both paths");
	cr_expect_eq(seen.ip, (unsigned long)kp.addr + 1);
	cr_expect_eq(seen.di, 5);
	cr_expect_eq(seen.sp & 0xf, 8, "sp as at a call's entry");
	unregister_kprobe(&kp);
	cr_expect_eq(op_add(1), 8);
}

static int set_di_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	regs->di = 100;
	return 0;
}

static int change_ip_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	regs->ip = (unsigned long)op_call; /* ignored when optimized */
	atomic_fetch_add(&hits, 1);
	return 1;
}

Test(optprobe, register_changes_are_kept_and_ip_changes_ignored)
{
	struct kprobe kp = { .symbol_name = "op_add", .pre_handler = set_di_pre };

	reg(&kp);
	cr_assert(is_optimized(&kp));
	cr_expect_eq(op_add(1), 107);
	unregister_kprobe(&kp);

	struct kprobe kp2 = { .symbol_name = "op_add", .pre_handler = change_ip_pre };
	reg(&kp2);
	cr_assert(is_optimized(&kp2));
	cr_expect_eq(op_add(1), 8, "the NOTE for geeks: ip changes are ignored");
	cr_expect_eq(atomic_load(&hits), 1);
	unregister_kprobe(&kp2);
}

Test(optprobe, the_list_shows_optimized_with_the_knob_post_disable_and_neighbour)
{
	struct kprobe kp = { .symbol_name = "op_add", .pre_handler = count_pre };
	struct kprobe post = { .symbol_name = "op_add", .pre_handler = count_pre,
			       .post_handler = count_post };
	struct kprobe nb = { .symbol_name = "op_add", .offset = 2, .pre_handler = count_pre };

	cr_expect(kprobes_optimization());
	reg(&kp);
	cr_expect(list_has("[OPTIMIZED]"));
	cr_assert_eq(kprobes_set_optimization(false), 0);
	cr_expect(!kprobes_optimization());
	cr_expect(!is_optimized(&kp));
	cr_expect(!list_has("[OPTIMIZED]"));
	cr_expect_eq(op_add(1), 8);
	cr_assert_eq(kprobes_set_optimization(true), 0);
	ukprobes_wait_optimizer();
	cr_expect(list_has("[OPTIMIZED]"));

	/* a post_handler (an aggregate child with one) */
	reg(&post);
	cr_expect(!is_optimized(&kp));
	cr_expect(!list_has("[OPTIMIZED]"));
	atomic_store(&hits, 0);
	cr_expect_eq(op_add(1), 8);
	cr_expect_eq(atomic_load(&hits), 2);
	cr_expect_eq(atomic_load(&posts), 1);
	unregister_kprobe(&post);
	ukprobes_wait_optimizer();
	cr_expect(is_optimized(&kp));

	/* disable */
	cr_assert_eq(disable_kprobe(&kp), 0);
	cr_expect(!is_optimized(&kp));
	cr_expect(list_has("[DISABLED]"));
	cr_expect(!list_has("[OPTIMIZED]"));
	cr_assert_eq(enable_kprobe(&kp), 0);
	ukprobes_wait_optimizer();
	cr_expect(is_optimized(&kp));

	/* a probe inside the region (op_add+2) */
	reg(&nb);
	cr_expect(!is_optimized(&kp));
	atomic_store(&hits, 0);
	cr_expect_eq(op_add(2), 9);
	cr_expect_eq(atomic_load(&hits), 2, "both probes fire");
	unregister_kprobe(&nb);
	ukprobes_wait_optimizer();
	cr_expect(is_optimized(&kp));
	cr_expect_eq(op_add(2), 9);
	unregister_kprobe(&kp);
	cr_expect(!list_has("[OPTIMIZED]"));
}

Test(optprobe, red_zone_survives)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)op_redzone_probe,
			     .pre_handler = clobber_pre };

	reg(&kp);
	cr_assert(is_optimized(&kp));
	for (long i = 0; i < 100; i++)
		cr_assert_eq(op_redzone(i, 1000 * i), 1001 * i);
	cr_expect_eq(atomic_load(&hits), 100);
	unregister_kprobe(&kp);
}

Test(optprobe, vector_registers_survive)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = clobber_pre };

	if (!__builtin_cpu_supports("avx"))
		cr_skip_test("no AVX");
	reg(&kp);
	cr_assert(is_optimized(&kp));
	ukt_vec_roundtrip(20);
	cr_expect_eq(atomic_load(&hits), 20);
	unregister_kprobe(&kp);
}

extern int ukp_opt_force_xsave;

Test(optprobe, vector_registers_survive_the_xsave_path)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)ukt_vec_probe, .pre_handler = clobber_pre };

	if (!__builtin_cpu_supports("avx"))
		cr_skip_test("no AVX");
	ukp_opt_force_xsave = 1; /* before the first optimization in this process */
	reg(&kp);
	cr_assert(is_optimized(&kp));
	ukt_vec_roundtrip(20);
	unregister_kprobe(&kp);
}

Test(optprobe, x87_stack_survives)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)op_x87_probe, .pre_handler = clobber_pre };
	double in[2] = { 10.5, 0.25 }, want = 0, out = 0;

	op_x87(in, &want);
	cr_assert(want == 10.25 || want == -10.25);
	reg(&kp);
	cr_assert(is_optimized(&kp));
	for (int i = 0; i < 10; i++) {
		op_x87(in, &out);
		cr_assert_eq(out, want);
	}
	unregister_kprobe(&kp);
}

Test(optprobe, flags_survive)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)op_flags_probe, .pre_handler = clobber_pre };
	static const int pairs[][2] = { { 1, 2 }, { 2, 1 }, { 5, 5 }, { INT32_MIN, 1 },
					{ INT32_MAX, -1 }, { 0, 3 } };
	unsigned char want[6], got[6];

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		for (int df = 0; df < 2; df++) {
			op_flags(pairs[i][0], pairs[i][1], want, df);
			kp.addr = (kprobe_opcode_t *)op_flags_probe;
			kp.flags = 0;
			reg(&kp);
			cr_assert(is_optimized(&kp), "round %zu/%d", i, df);
			op_flags(pairs[i][0], pairs[i][1], got, df);
			unregister_kprobe(&kp);
			cr_assert_arr_eq(want, got, 6, "flags of cmp %d, %d (df %d)", pairs[i][0],
					 pairs[i][1], df);
		}
	}
}

void op_eflags_call(int a, int b, unsigned char *out);

static unsigned long seen_flags;
static int flags_pre(struct kprobe *p, struct pt_regs *regs)
{
	seen_flags = regs->flags;
	return clobber_pre(p, regs);
}

Test(optprobe, flags_survive_at_an_entry)
{
	struct kprobe kp = { .symbol_name = "op_eflags_entry", .pre_handler = flags_pre };
	static const int pairs[][2] = { { 1, 2 }, { 2, 1 }, { 5, 5 }, { INT32_MIN, 1 },
					{ INT32_MAX, -1 }, { 0, 3 } };
	unsigned char want[5], got[5];

	reg(&kp);
	cr_assert(is_optimized(&kp));
	cr_assert(kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		unsigned long f;

		cr_assert_eq(kprobes_set_optimization(false), 0);
		op_eflags_call(pairs[i][0], pairs[i][1], want); /* a breakpoint */
		f = seen_flags;
		cr_assert_eq(kprobes_set_optimization(true), 0);
		cr_assert_eq(ukprobes_wait_optimizer(), 0);
		cr_assert(is_optimized(&kp));
		op_eflags_call(pairs[i][0], pairs[i][1], got);
		cr_assert_arr_eq(want, got, 5, "flags of cmp %d, %d", pairs[i][0], pairs[i][1]);
		/* the handler saw the arithmetic flags the breakpoint path saw */
		cr_assert_eq(seen_flags & 0x8d5, f & 0x8d5, "regs->flags %#lx, breakpoint %#lx",
			     seen_flags, f);
		cr_assert(seen_flags & 0x200);
		cr_assert_not(seen_flags & 0x400, "DF");
	}
	unregister_kprobe(&kp);
}

static sigjmp_buf segv_jb;
static volatile uintptr_t segv_ip, segv_addr;

static void segv_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	segv_ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	segv_addr = (uintptr_t)info->si_addr;
	siglongjmp(segv_jb, 1);
}

Test(optprobe, a_fault_in_the_detour_copy_reaches_the_program_at_the_original_ip)
{
	struct kprobe kp = { .symbol_name = "op_load", .pre_handler = count_pre };
	struct sigaction sa = { .sa_sigaction = segv_handler, .sa_flags = SA_SIGINFO };
	int v = 41;

	reg(&kp);
	cr_assert(is_optimized(&kp));
	cr_expect_eq(op_load(&v), 42);
	sigaction(SIGSEGV, &sa, NULL);
	if (sigsetjmp(segv_jb, 1) == 0) {
		op_load((const int *)16);
		cr_assert_fail("no fault");
	}
	cr_expect_eq(segv_ip, (uintptr_t)op_load, "ip %#lx, op_load %p", segv_ip, (void *)op_load);
	cr_expect_eq(segv_addr, 16);
	cr_expect_eq(atomic_load(&hits), 2);
	unregister_kprobe(&kp);
}

Test(optprobe, unsafe_regions_stay_breakpoints_that_work)
{
	struct kprobe loop = { .symbol_name = "op_loop", .pre_handler = count_pre };
	struct kprobe call = { .symbol_name = "op_call_reg", .pre_handler = count_pre };
	const char *why = NULL;

	/* the jump over whole instructions alone (test_optprobe_pun.c
	 * optimizes both with a punned jump over their first instruction) */
	ukp_opt_pun = false;
	cr_expect_eq(ukprobes_optimizable((void *)op_loop, &why), UKPROBES_OPT_NONE);
	cr_expect(why != NULL);
	cr_expect_eq(ukprobes_optimizable((void *)op_call_reg, &why), UKPROBES_OPT_NONE);
	cr_expect(why && strstr(why, "call"), "%s", why ? why : "-");
	cr_expect_eq(ukprobes_optimizable((void *)op_add, &why), UKPROBES_OPT_JUMP);
	cr_expect_eq(ukprobes_optimizable((void *)op_call, &why), UKPROBES_OPT_JUMP);
	reg(&loop);
	reg(&call);
	cr_expect(!is_optimized(&loop));
	cr_expect(!is_optimized(&call));
	cr_expect_eq(op_loop(10), 10);
	cr_expect_eq(op_call_reg(1, op_add), 9);
	cr_expect_eq(atomic_load(&hits), 2);
	unregister_kprobe(&loop);
	unregister_kprobe(&call);
	ukp_opt_pun = true;
}

Test(optprobe, ftrace_entries)
{
	struct kprobe a = { .symbol_name = "op_nop5", .pre_handler = count_pre,
			    .post_handler = count_post };
	struct kprobe b = { .symbol_name = "op_patchable", .pre_handler = count_pre };

	cr_expect_eq(ukprobes_optimizable((void *)op_nop5, NULL), UKPROBES_OPT_FTRACE);
	reg(&a);
	reg(&b);
	cr_expect(kprobe_ftrace(&a));
	cr_expect(kprobe_ftrace(&b));
	cr_expect(!is_optimized(&a));
	cr_expect(list_has("[FTRACE]"));
	cr_expect_eq(op_nop5(1), 4);
	cr_expect_eq(op_patchable(3), 15);
	cr_expect_eq(atomic_load(&hits), 2);
	cr_expect_eq(atomic_load(&posts), 1, "post_handlers run on [FTRACE] probes");
	unregister_kprobe(&a);
	unregister_kprobe(&b);
	cr_expect_eq(op_nop5(1), 4);
}

static atomic_long rets;
static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	if (regs_return_value(regs) == 12)
		atomic_fetch_add(&rets, 1);
	return 0;
}

Test(optprobe, kretprobe_entry_is_optimized)
{
	struct kretprobe rp = { .kp.symbol_name = "op_add", .handler = ret_handler,
				.maxactive = 4 };
	unsigned long b0, o0;

	cr_assert_eq(register_kretprobe(&rp), 0);
	ukprobes_wait_optimizer();
	cr_assert(is_optimized(&rp.kp));
	b0 = ukp_tls_boosted_hits;
	o0 = ukp_tls_ool_resumes;
	for (int i = 0; i < 100; i++)
		cr_assert_eq(op_add(5), 12);
	cr_expect_eq(atomic_load(&rets), 100);
	cr_expect_eq(ukp_tls_boosted_hits, b0);
	cr_expect_eq(ukp_tls_ool_resumes, o0);
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

/* Threads run op_add in tight loops while the probe is optimized and
 * unoptimized over and over: every call is counted exactly once. */
static atomic_bool churn_stop;
static void *churn_thread(void *arg)
{
	long *calls = arg;

	while (!atomic_load_explicit(&churn_stop, memory_order_relaxed)) {
		if (op_add(1) != 8)
			abort();
		(*calls)++;
	}
	return NULL;
}

static int nothing_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	return 0;
}

Test(optprobe, churn_exact_counts)
{
	struct kprobe kp = { .symbol_name = "op_add", .pre_handler = count_pre };
	struct kprobe nb = { .symbol_name = "op_add", .offset = 2, .pre_handler = nothing_pre };
	pthread_t t[2];
	long calls[2] = { 0, 0 };
	struct timespec t0, now;
	int rounds = 0, optimized = 0;

	reg(&kp);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn_thread, &calls[i]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		cr_assert_eq(kprobes_set_optimization(false), 0);
		cr_assert(!is_optimized(&kp));
		cr_assert_eq(kprobes_set_optimization(true), 0);
		ukprobes_wait_optimizer();
		optimized += is_optimized(&kp);
		if (rounds % 4 == 0) {
			nb.addr = NULL;
			nb.flags = 0;
			cr_assert_eq(register_kprobe(&nb), 0);
			cr_assert(!is_optimized(&kp));
			unregister_kprobe(&nb);
			ukprobes_wait_optimizer();
		}
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 2);
	atomic_store(&churn_stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(atomic_load(&hits), calls[0] + calls[1], "hits %ld, calls %ld",
		     atomic_load(&hits), calls[0] + calls[1]);
	cr_expect_gt(optimized, rounds / 2, "optimized in %d of %d rounds", optimized, rounds);
	cr_log_info("%d rounds, %ld calls, optimized %d times\n", rounds, calls[0] + calls[1],
		    optimized);
	unregister_kprobe(&kp);
}

/* A detour buffer is not reclaimed while a thread runs in it (here: a
 * long rep movsb copied into the detour), and is once it has left. */
static atomic_bool copy_started;
static void *copy_thread(void *arg)
{
	size_t n = 256UL << 20;
	void *dst = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *src = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	atomic_store(&copy_started, true);
	if (op_copy(dst, src, n) != 4)
		abort();
	munmap(dst, n);
	munmap(src, n);
	return NULL;
}

static int started_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	atomic_store(&copy_started, true);
	return 0;
}

Test(optprobe, detours_are_reclaimed_only_when_no_thread_is_inside)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)op_copy_probe, .pre_handler = started_pre };
	pthread_t t;
	unsigned int q0;
	char a[64], b[64] = "x";

	reg(&kp);
	cr_assert(is_optimized(&kp));
	cr_assert_eq(op_copy(a, b, sizeof(b)), 4);
	atomic_store(&copy_started, false);
	pthread_create(&t, NULL, copy_thread, NULL);
	while (!atomic_load(&copy_started))
		;
	usleep(2000); /* past the handler, inside the copy of rep movsb */
	unregister_kprobe(&kp);
	q0 = ukp_quarantine_count();
	cr_assert_geq(q0, 1, "an optimized probe's site waits in quarantine");
	cr_expect_eq(ukp_quarantine_reclaim(), 0, "the thread is still in the detour");
	pthread_join(t, NULL);
	cr_expect_eq(ukp_quarantine_reclaim(), q0, "freed once the thread has left");
	cr_expect_eq(ukp_quarantine_count(), 0);
}

/* UKPROBES_OPTIMIZATION=0 at start-up turns the knob off (this test's
 * process has not started the library yet). */
Test(optprobe, environment_variable_turns_the_knob_off)
{
	struct kprobe kp = { .symbol_name = "op_add", .pre_handler = count_pre };

	setenv("UKPROBES_OPTIMIZATION", "0", 1);
	reg(&kp);
	cr_expect(!kprobes_optimization());
	cr_expect(!is_optimized(&kp));
	cr_expect_eq(op_add(1), 8);
	cr_expect_eq(atomic_load(&hits), 1);
	cr_assert_eq(kprobes_set_optimization(true), 0);
	ukprobes_wait_optimizer();
	cr_expect(is_optimized(&kp));
	unregister_kprobe(&kp);
}

Test(optprobe, jumps_in_the_region_are_relocated)
{
	struct kprobe a = { .symbol_name = "op_jcc", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "op_tail", .pre_handler = count_pre };
	struct kprobe c = { .symbol_name = "op_got", .pre_handler = count_pre };

	reg(&a);
	reg(&b);
	reg(&c);
	cr_assert(is_optimized(&a));
	cr_assert(is_optimized(&b));
	cr_assert(is_optimized(&c));
	for (int i = 0; i < 10; i++) {
		cr_assert_eq(op_jcc(i), i ? 1 : 2);
		cr_assert_eq(op_tail(i), i + 7);
		cr_assert_eq(op_got(i), i + 7);
	}
	cr_expect_eq(atomic_load(&hits), 30);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
	unregister_kprobe(&c);
}
