// SPDX-License-Identifier: MIT
/*
 * test_optprobe_regions.c - the regions jump optimization takes beyond
 * straight-line code, run for real: a function shorter than the jump
 * (the region goes on into the padding after its ret or jmp), a tail
 * call through a pointer (from a global, from a struct), and a call that
 * ends the region (relocated as push of the return address + jmp).
 *
 * Each is checked against the breakpoint path: the same function results,
 * the same hit counts and the same registers in the pre_handler, with no
 * trap on the optimized path. For the relocated call: the callee returns
 * into the original code (its return address, backtrace(), a kretprobe
 * on it), a detour is reclaimed while a thread sits in the callee it
 * called, threads keep exact counts while the jump comes and goes, and a
 * (forced) shadow stack keeps the probe a breakpoint.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "ukprobes.h"
#include "ukp_test.h"

__asm__(
	".text\n"
	/* 8d 47 01 | c3: 4 bytes, then the NOPs of the next .p2align */
	".globl rg_short\n .type rg_short,@function\n .p2align 4\n"
	"rg_short:\n"
	"	.cfi_startproc\n"
	"	leal 1(%rdi), %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size rg_short, .-rg_short\n"

	/* ff 67 08: sqlite3OsAccess's shape, a method call through a struct */
	".globl rg_short_ptr\n .type rg_short_ptr,@function\n .p2align 4\n"
	"rg_short_ptr:\n"
	"	.cfi_startproc\n"
	"	jmp *8(%rdi)\n"
	"	.cfi_endproc\n"
	".size rg_short_ptr, .-rg_short_ptr\n"

	/* sqlite3BeginBenignMalloc's shape: a hook in a global, if set */
	".globl rg_ptr_tail\n .type rg_ptr_tail,@function\n .p2align 4\n"
	"rg_ptr_tail:\n"
	"	.cfi_startproc\n"
	"	movq rg_hook(%rip), %rax\n"	/* 7 bytes: the region */
	"	testq %rax, %rax\n"
	"	je 1f\n"
	"	jmp *%rax\n"
	"1:	movl $-1, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size rg_ptr_tail, .-rg_ptr_tail\n"

	/* push; mov; call: the call ends the 8-byte region; returns 3x */
	".globl rg_call\n .type rg_call,@function\n .p2align 4\n"
	"rg_call:\n"
	"	.cfi_startproc\n"
	"	pushq %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	movl %edi, %ebx\n"
	"	call rg_callee\n"
	".globl rg_call_ret\n"
	"rg_call_ret:\n"
	"	addl %ebx, %eax\n"
	"	popq %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size rg_call, .-rg_call\n"

	/* the same through a pointer in memory: call *m(%rip), 9 bytes */
	".globl rg_call_mem\n .type rg_call_mem,@function\n .p2align 4\n"
	"rg_call_mem:\n"
	"	.cfi_startproc\n"
	"	pushq %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	movl %edi, %ebx\n"
	"	call *rg_callee_ptr(%rip)\n"
	".globl rg_call_mem_ret\n"
	"rg_call_mem_ret:\n"
	"	addl %ebx, %eax\n"
	"	popq %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size rg_call_mem, .-rg_call_mem\n"

	/* through a register: call *%rsi, 5 bytes */
	".globl rg_call_reg\n .type rg_call_reg,@function\n .p2align 4\n"
	"rg_call_reg:\n"
	"	.cfi_startproc\n"
	"	pushq %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	movl %edi, %ebx\n"
	"	call *%rsi\n"
	".globl rg_call_reg_ret\n"
	"rg_call_reg_ret:\n"
	"	addl %ebx, %eax\n"
	"	popq %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size rg_call_reg, .-rg_call_reg\n"

	/* through a struct (the fifth argument), with a REX prefix:
	 * call *8(%r8), 7 bytes */
	".globl rg_call_field\n .type rg_call_field,@function\n .p2align 4\n"
	"rg_call_field:\n"
	"	.cfi_startproc\n"
	"	pushq %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -16\n"
	"	movl %edi, %ebx\n"
	"	call *8(%r8)\n"
	".globl rg_call_field_ret\n"
	"rg_call_field_ret:\n"
	"	addl %ebx, %eax\n"
	"	popq %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size rg_call_field, .-rg_call_field\n"
	".p2align 4\n");

struct rg_obj {
	long pad;
	int (*method)(struct rg_obj *o);
	int value;
};

int rg_short(int x);
int rg_short_ptr(struct rg_obj *o);
int rg_ptr_tail(int x);
int rg_call(int x);
int rg_call_mem(int x);
int rg_call_reg(int x, int (*f)(int));
int rg_call_field(int x, long b, long c, long d, const void *tbl);
extern char rg_call_ret[], rg_call_mem_ret[], rg_call_reg_ret[], rg_call_field_ret[];
extern int ukp_shstk_force;

__attribute__((used)) int (*rg_hook)(int);
int rg_callee(int x);
__attribute__((used)) int (*rg_callee_ptr)(int) = rg_callee;

static UKP_TARGET int rg_method(struct rg_obj *o)
{
	return o->value * 10;
}

static UKP_TARGET int rg_hook_fn(int x)
{
	return x - 100;
}

/* The callee of the relocated calls: where it returns to, a backtrace,
 * and (when asked) a wait that keeps the thread inside it. */
static void *_Atomic callee_ret;
static void *callee_frames[8];
static int callee_nframes;
static atomic_bool want_frames, hold_in_callee, in_callee;

UKP_TARGET int rg_callee(int x)
{
	atomic_store(&callee_ret, __builtin_return_address(0));
	if (atomic_load(&want_frames))
		callee_nframes = backtrace(callee_frames, 8);
	if (atomic_load(&hold_in_callee)) {
		atomic_store(&in_callee, true);
		while (atomic_load(&hold_in_callee))
			usleep(100);
	}
	return 2 * x;
}

static atomic_long hits;
static struct pt_regs seen;

static int record_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	seen = *regs;
	atomic_fetch_add(&hits, 1);
	return 0;
}

static void reg(struct kprobe *kp)
{
	cr_assert_eq(register_kprobe(kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
}

/* One target: call it on the breakpoint path, then optimized, with the
 * same inputs; everything the pre_handler and the caller see must match. */
typedef int (*run_fn)(int i);

static struct rg_obj obj = { .method = rg_method };

static int run_short(int i) { return rg_short(i); }
static int run_short_ptr(int i) { obj.value = i; return rg_short_ptr(&obj); }
static int run_ptr_tail(int i) { rg_hook = (i & 1) ? rg_hook_fn : NULL; return rg_ptr_tail(i); }
static int run_call(int i) { return rg_call(i); }
static int run_call_mem(int i) { return rg_call_mem(i); }
static int run_call_reg(int i) { return rg_call_reg(i, rg_callee); }
static void *const rg_callee_tbl[2] = { NULL, (void *)rg_callee };
static int run_call_field(int i) { return rg_call_field(i, 0, 0, 0, rg_callee_tbl); }

#define RUNS 64

static void same_as_breakpoint(const char *name, void *fn, run_fn run)
{
	struct kprobe kp = { .addr = fn, .pre_handler = record_pre };
	int bp_res[RUNS];
	unsigned long bp_di[RUNS], bp_sp[RUNS], b0, o0;
	const char *why = NULL;
	long h0;
	int i;

	cr_assert_eq(ukprobes_optimizable(fn, &why), UKPROBES_OPT_JUMP, "%s: %s", name,
		     why ? why : "-");
	cr_assert_eq(kprobes_set_optimization(false), 0);
	reg(&kp);
	cr_assert(!kprobe_optimized(&kp));
	h0 = atomic_load(&hits);
	for (i = 0; i < RUNS; i++) {
		bp_res[i] = run(i);
		bp_di[i] = seen.di;
		bp_sp[i] = seen.sp;
	}
	cr_expect_eq(atomic_load(&hits) - h0, RUNS);

	cr_assert_eq(kprobes_set_optimization(true), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp), "%s is not [OPTIMIZED]", name);
	h0 = atomic_load(&hits);
	b0 = ukp_tls_boosted_hits;
	o0 = ukp_tls_ool_resumes;
	for (i = 0; i < RUNS; i++) {
		int res = run(i);

		cr_expect_eq(res, bp_res[i], "%s(%d): optimized %d, breakpoint %d", name, i, res,
			     bp_res[i]);
		cr_expect_eq(seen.di, bp_di[i], "%s(%d): di", name, i);
		cr_expect_eq(seen.sp, bp_sp[i], "%s(%d): sp", name, i);
		cr_expect_eq(seen.ip, (unsigned long)fn + 1, "%s: ip", name);
	}
	cr_expect_eq(atomic_load(&hits) - h0, RUNS, "%s: %ld hits", name,
		     atomic_load(&hits) - h0);
	cr_expect_eq(ukp_tls_boosted_hits, b0, "%s: a trap on the optimized path", name);
	cr_expect_eq(ukp_tls_ool_resumes, o0);
	unregister_kprobe(&kp);
	for (i = 0; i < RUNS; i++)
		cr_expect_eq(run(i), bp_res[i], "%s(%d) after unregistration", name, i);
}

Test(regions, short_functions_into_their_padding)
{
	same_as_breakpoint("rg_short", (void *)rg_short, run_short);
	cr_expect_eq(rg_short(41), 42);
}

Test(regions, pointer_tail_calls)
{
	same_as_breakpoint("rg_short_ptr", (void *)rg_short_ptr, run_short_ptr);
	same_as_breakpoint("rg_ptr_tail", (void *)rg_ptr_tail, run_ptr_tail);
	rg_hook = rg_hook_fn;
	cr_expect_eq(rg_ptr_tail(142), 42);
	rg_hook = NULL;
	cr_expect_eq(rg_ptr_tail(142), -1);
}

Test(regions, calls_ending_the_region)
{
	same_as_breakpoint("rg_call", (void *)rg_call, run_call);
	same_as_breakpoint("rg_call_mem", (void *)rg_call_mem, run_call_mem);
	same_as_breakpoint("rg_call_reg", (void *)rg_call_reg, run_call_reg);
	same_as_breakpoint("rg_call_field", (void *)rg_call_field, run_call_field);
}

/* Through a register or a struct: the callee returns into the original
 * code, right after the call. */
Test(regions, relocated_indirect_calls_return_into_the_original_code)
{
	struct kprobe a = { .addr = (void *)rg_call_reg, .pre_handler = record_pre };
	struct kprobe b = { .addr = (void *)rg_call_field, .pre_handler = record_pre };

	reg(&a);
	reg(&b);
	cr_assert(kprobe_optimized(&a) && kprobe_optimized(&b));
	cr_expect_eq(rg_call_reg(5, rg_callee), 15);
	cr_expect_eq(atomic_load(&callee_ret), (void *)rg_call_reg_ret);
	cr_expect_eq(rg_call_field(6, 0, 0, 0, rg_callee_tbl), 18);
	cr_expect_eq(atomic_load(&callee_ret), (void *)rg_call_field_ret);
	cr_expect_eq(atomic_load(&hits), 2);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
}

/* The callee of a relocated call returns into the original code, and
 * the unwinder walks through the caller from there. */
Test(regions, relocated_call_returns_into_the_original_code)
{
	struct kprobe a = { .addr = (void *)rg_call, .pre_handler = record_pre };
	struct kprobe b = { .addr = (void *)rg_call_mem, .pre_handler = record_pre };
	bool found = false;
	int i;

	reg(&a);
	reg(&b);
	cr_assert(kprobe_optimized(&a) && kprobe_optimized(&b));
	atomic_store(&want_frames, true);
	cr_expect_eq(rg_call(5), 15);
	cr_expect_eq(atomic_load(&callee_ret), (void *)rg_call_ret);
	for (i = 0; i < callee_nframes; i++)
		found |= callee_frames[i] == (void *)rg_call_ret;
	cr_expect(found, "backtrace() from the callee does not go through rg_call");
	cr_expect_geq(callee_nframes, 3, "%d frames", callee_nframes);
	cr_expect_eq(rg_call_mem(5), 15);
	cr_expect_eq(atomic_load(&callee_ret), (void *)rg_call_mem_ret);
	atomic_store(&want_frames, false);
	cr_expect_eq(atomic_load(&hits), 2);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
}

static atomic_long rets;
static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	if (regs_return_value(regs) == 14)
		atomic_fetch_add(&rets, 1);
	return 0;
}

Test(regions, kretprobe_on_the_callee_of_a_relocated_call)
{
	struct kprobe kp = { .addr = (void *)rg_call, .pre_handler = record_pre };
	struct kretprobe rp = { .kp.symbol_name = "rg_callee", .handler = ret_handler,
				.maxactive = 4 };

	reg(&kp);
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp));
	for (int i = 0; i < 10; i++)
		cr_expect_eq(rg_call(7), 21);
	cr_expect_eq(atomic_load(&rets), 10);
	cr_expect_eq(atomic_load(&hits), 10);
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
}

/* A thread in the callee of a relocated call is not in the detour: the
 * detour is reclaimed under it, and it returns to the original code. */
static void *call_and_hold(void *arg)
{
	*(int *)arg = rg_call(4);
	return NULL;
}

Test(regions, detour_reclaimed_while_a_thread_is_in_the_callee)
{
	struct kprobe kp = { .addr = (void *)rg_call, .pre_handler = record_pre };
	pthread_t t;
	unsigned int q0;
	int res = 0;

	reg(&kp);
	cr_assert(kprobe_optimized(&kp));
	atomic_store(&hold_in_callee, true);
	pthread_create(&t, NULL, call_and_hold, &res);
	while (!atomic_load(&in_callee))
		usleep(100);
	unregister_kprobe(&kp);
	q0 = ukp_quarantine_count();
	cr_assert_geq(q0, 1);
	cr_expect_eq(ukp_quarantine_reclaim(), q0, "the thread in the callee holds the detour");
	atomic_store(&hold_in_callee, false);
	pthread_join(t, NULL);
	cr_expect_eq(res, 12);
	cr_expect_eq(atomic_load(&callee_ret), (void *)rg_call_ret);
}

/* Threads call through the relocated call while its jump comes and goes:
 * every call is counted once, every result is right. */
static atomic_bool churn_stop;
static void *churn_thread(void *arg)
{
	long *calls = arg;

	for (int i = 0; !atomic_load(&churn_stop); i++) {
		if (rg_call(i & 0xffff) != 3 * (i & 0xffff) || rg_short(i) != i + 1)
			abort();
		(*calls)++;
	}
	return NULL;
}

Test(regions, churn_exact_counts)
{
	struct kprobe a = { .addr = (void *)rg_call, .pre_handler = record_pre };
	struct kprobe b = { .addr = (void *)rg_short, .pre_handler = record_pre };
	pthread_t t[2];
	long calls[2] = { 0, 0 };
	struct timespec t0, now;
	int rounds = 0;

	reg(&a);
	reg(&b);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn_thread, &calls[i]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		cr_assert_eq(kprobes_set_optimization(false), 0);
		cr_assert_eq(kprobes_set_optimization(true), 0);
		cr_assert_eq(ukprobes_wait_optimizer(), 0);
		ukp_quarantine_reclaim();
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 2);
	atomic_store(&churn_stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(atomic_load(&hits), 2 * (calls[0] + calls[1]), "hits %ld, calls %ld",
		     atomic_load(&hits), calls[0] + calls[1]);
	cr_log_info("%d rounds, %ld calls\n", rounds, calls[0] + calls[1]);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
}

/* Under a shadow stack the callee's ret would find no copy of the return
 * address: the probe stays a breakpoint, and works. */
Test(regions, shadow_stack_keeps_a_call_a_breakpoint)
{
	struct kprobe kp = { .addr = (void *)rg_call, .pre_handler = record_pre };
	const char *why = NULL;

	ukp_shstk_force = 1;
	ukp_opt_pun = false;
	cr_expect_eq(ukprobes_optimizable((void *)rg_call, &why), UKPROBES_OPT_NONE);
	cr_expect(why && strstr(why, "shadow stack"), "%s", why ? why : "-");
	reg(&kp);
	cr_expect(!kprobe_optimized(&kp));
	cr_expect_eq(rg_call(3), 9);
	cr_expect_eq(atomic_load(&hits), 1);
	unregister_kprobe(&kp);
	/* (whole regions: a punned jump over the push alone would copy no
	 * call, but its one possible target may be taken) */
	ukp_opt_pun = true;
	ukp_shstk_force = -1;
	/* rg_short has no call: unaffected */
	cr_expect_eq(ukprobes_optimizable((void *)rg_short, NULL), UKPROBES_OPT_JUMP);
}
