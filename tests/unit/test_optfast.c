// SPDX-License-Identifier: MIT
/*
 * test_optfast.c - the fast path of an optimized hit (optprobe_tramp.S,
 * FAST_HIT): a site whose only probe has a pre_handler proven
 * vector-free is served without the C hit path. These tests check that
 * the fast path is the one taken (the recovery point a handler sees is
 * inside the template, not in trap.c), and that it keeps every promise
 * of the C path: the probe state and registers a handler sees, register
 * writes, errno, a fault in the handler (and copy_from_user_nofault,
 * which does not abandon it), the program's signals held back until the
 * hit is over, a nested hit missed, and the change to the C path (and
 * back) when a second probe comes, the handler is swapped, the probe is
 * disabled or a post_handler appears.
 *
 * The return trampoline's fast path likewise: the return handler sees
 * the probe state and the real return address, its register writes
 * count, errno, faults, held-back signals, recursion, a handler that
 * uses vectors sent to the C path. A kretprobe's entry has its fast path
 * too (x86-64: its own template, ukp_optprobe_krp_entry; AArch64: a case
 * of FAST_HIT): a finished return keeps its instance as the thread's
 * spare and the next entry takes it; a spare stays free for other
 * threads (maxactive) and the reaper, every instance comes back, and a
 * site built for a kretprobe serves any other probe set.
 *
 * Both architectures build this file; their targets (assembly), the
 * registers a handler reads and writes and the raw system call are in
 * the #if blocks below. The fast path exists only when the library's hit
 * path is proven vector-free (ukp_vec_lazy); sanitizer builds and
 * UKPROBES_LAZY_VECTOR=0 (the _eager_vector runs) take the C path, where
 * the same behaviour is asserted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "core/kretprobes.h"
#include "ukprobes.h"
#include "ukp_test.h"

extern uint32_t ukp_vec_lazy;
extern char ukp_optprobe_common_end[];
extern char ukp_kretprobe_trampoline[], ukp_kretprobe_trampoline_end[];

/* of_add(x) = x + 7, of_sub(x) = x - 3 */
#if defined(__x86_64__)
__asm__(
	".text\n"
	".globl of_add\n .type of_add,@function\n"
	"of_add:\n"
	"	movl %edi, %eax\n"
	"	addl $7, %eax\n"
	"	ret\n"
	".size of_add, .-of_add\n"
	".globl of_sub\n .type of_sub,@function\n"
	"of_sub:\n"
	"	movl %edi, %eax\n"
	"	subl $3, %eax\n"
	"	ret\n"
	".size of_sub, .-of_sub\n");
/* where the fast path's template starts (its kretprobe entry is inside) */
extern char ukp_optprobe_common_entry[];
#define FAST_TEMPLATE ukp_optprobe_common_entry
/* the first argument and the return value in struct pt_regs */
#define ARG0(regs) ((regs)->di)
#define RETVAL(regs) ((regs)->ax)
/* the return address at a function's entry */
#define ENTRY_RET(regs) (*(const uintptr_t *)(regs)->sp)
#elif defined(__aarch64__)
#define FN(name) ".globl " #name "\n.type " #name ",%function\n" #name ":\n"
__asm__(".text\n.p2align 4\n"
	FN(of_add)
	"	add w0, w0, #7\n	ret\n"
	".size of_add, .-of_add\n"
	FN(of_sub)
	"	sub w0, w0, #3\n	ret\n"
	".size of_sub, .-of_sub\n");
extern char ukp_optprobe_common[];
#define FAST_TEMPLATE ukp_optprobe_common
#define ARG0(regs) ((regs)->regs[0])
#define RETVAL(regs) ((regs)->regs[0])
#define ENTRY_RET(regs) ((uintptr_t)(regs)->regs[30])
#endif
int of_add(int x);
int of_sub(int x);

/* tgkill without libc (a call through a lazily bound PLT slot would
 * keep the handler from being proven vector-free) */
static void raw_tgkill(long pid, long tid, long sig)
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"(sig)
			 : "rcx", "r11", "memory");
	(void)ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_tgkill;
	register long x0 __asm__("x0") = pid;
	register long x1 __asm__("x1") = tid;
	register long x2 __asm__("x2") = sig;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
#endif
}

static atomic_long hits, fast_hits, other_hits, posts;
static struct kprobe *seen_running;
static unsigned long seen_ip, seen_sp, seen_arg0;
static int seen_in_handler;

/* [detour, ret] Count a handler call in n, and in fast when a fast path
 * made it: the handler's recovery point (the label a fault would jump
 * to) is then in that path's code, [lo, hi), not in trap.c. */
static void count_call(atomic_long *n, atomic_long *fast, const char *lo, const char *hi)
{
	uintptr_t l = (uintptr_t)ukp_ctl.jb[1];

	atomic_fetch_add(n, 1);
	if (l >= (uintptr_t)lo && l < (uintptr_t)hi)
		atomic_fetch_add(fast, 1);
}

/* [detour] A pre_handler call, by the optimized hit's fast path or not. */
static void count_hit(void)
{
	count_call(&hits, &fast_hits, FAST_TEMPLATE, ukp_optprobe_common_end);
}

static int h_count(struct kprobe *p, struct pt_regs *regs)
{
	count_hit();
	seen_running = kprobe_running();
	seen_ip = instruction_pointer(regs);
	seen_sp = user_stack_pointer(regs);
	seen_arg0 = ARG0(regs);
	seen_in_handler = ukp_ctl.in_handler;
	(void)p;
	return 0;
}

static int h_other(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&other_hits, 1);
	(void)p;
	(void)regs;
	return 0;
}

static void h_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&posts, 1);
	(void)p;
	(void)regs;
	(void)flags;
}

/* Sets errno the way a libc call inside a handler would. */
static int h_errno(struct kprobe *p, struct pt_regs *regs)
{
	errno = EXDEV;
	count_hit();
	(void)p;
	(void)regs;
	return 0;
}

/* Writes a register the handler is given: the probed code sees it. */
static int h_set_arg0(struct kprobe *p, struct pt_regs *regs)
{
	ARG0(regs) = 100;
	count_hit();
	(void)p;
	return 0;
}

static volatile int *volatile bad_ptr;
static atomic_long faults;

static int h_fault(struct kprobe *p, struct pt_regs *regs)
{
	count_hit();
	(void)ukt_load_int(bad_ptr); /* SIGSEGV: the handler is abandoned */
	ARG0(regs) = 1000;         /* never reached */
	(void)p;
	return 0;
}

static int h_fault_handler(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	atomic_fetch_add(&faults, 1);
	(void)p;
	(void)regs;
	(void)trapnr;
	return 0;
}

/* copy_from_user_nofault from a bad address: -EFAULT, the handler goes on */
static long nofault_ret;
static int h_nofault(struct kprobe *p, struct pt_regs *regs)
{
	long v = 0;

	count_hit();
	nofault_ret = copy_from_user_nofault(&v, (const void *)bad_ptr, sizeof(v));
	ARG0(regs) = 50;
	(void)p;
	return 0;
}

static atomic_long usr1_count;
static atomic_int usr1_saw_in_handler;
static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&usr1_count, 1);
	/* a held-back signal runs after the hit: no probe state left */
	atomic_store(&usr1_saw_in_handler, ukp_ctl.in_handler + ukp_ctl.status + ukp_ctl.depth);
}

static long usr1_at_handler_end;
static long my_pid, my_tid;

static int h_signal(struct kprobe *p, struct pt_regs *regs)
{
	count_hit();
	raw_tgkill(my_pid, my_tid, SIGUSR1);
	usr1_at_handler_end = atomic_load(&usr1_count);
	(void)p;
	(void)regs;
	return 0;
}

/* The fast path is there when the hit path is lazy. */
static bool fast_expected(void)
{
	return ukp_vec_lazy != 0;
}

/* Does kp's site take the fast path (kp its only probe, proven)? */
static bool site_is_fast(struct kprobe *kp)
{
	struct ukp_site *s;
	bool fast;

	cr_assert_eq(ukp_lock_for_show(), 0);
	s = ukp_site_lookup((uintptr_t)kp->addr);
	fast = s && atomic_load(&s->fast_kp) == kp;
	ukp_unlock_for_show();
	return fast;
}

/* Register and wait for the optimizer; with fast, the site must be a
 * fast-path one (when the hit path is lazy). */
static void reg_check(struct kprobe *kp, bool fast)
{
	cr_assert_eq(register_kprobe(kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(kp), "%p should be optimized", (void *)kp->addr);
	if (fast && fast_expected())
		cr_expect(site_is_fast(kp), "%p: not a fast-path site", (void *)kp->addr);
}

static void reg(struct kprobe *kp)
{
	reg_check(kp, true);
}

static void reset(void)
{
	atomic_store(&hits, 0);
	atomic_store(&fast_hits, 0);
	atomic_store(&other_hits, 0);
	atomic_store(&posts, 0);
}

/* A thread's first hit claims its grace-period record on the C path;
 * every test starts with one, then counts from zero. */
static void warm_up(void)
{
	struct kprobe w = { .symbol_name = "of_sub", .pre_handler = h_other };

	reg_check(&w, false);
	cr_assert_eq(of_sub(5), 2);
	unregister_kprobe(&w);
	cr_assert_not_null(ukp_ctl.rec);
	reset();
}

/* No probe state left after a hit or a return, the read side left. */
static void state_clear(void)
{
	cr_expect_null(kprobe_running());
	cr_expect_eq(ukp_ctl.status, 0);
	cr_expect_eq(ukp_ctl.in_handler, 0);
	cr_expect_eq(ukp_ctl.depth, 0);
	cr_expect_eq(ukp_ctl.defer_async, 0);
	cr_expect_null(ukp_ctl.cur_site);
	cr_expect_null(ukp_ctl.cur_kp);
	cr_expect_null(ukp_ctl.fault_kp);
	cr_expect_eq(ukp_ctl.rec->seq % 2, 0, "the read side is left");
}

/* SIGUSR1 to on_usr1, which counts it (h_signal and r_signal send it). */
static void catch_usr1(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&usr1_count, 0);
	my_pid = getpid();
	my_tid = syscall(SYS_gettid);
}

#if defined(__aarch64__)
Test(optfast, the_library_hit_path_is_proven_so_the_fast_path_exists)
{
	warm_up();
	if (getenv("UKPROBES_LAZY_VECTOR"))
		cr_skip_test("UKPROBES_LAZY_VECTOR is set");
	cr_assert(fast_expected());
}
#endif

Test(optfast, the_fast_path_sets_the_probe_state_a_handler_sees)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_count };

	warm_up();
	reg(&kp);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(of_add(i), i + 7);
	cr_expect_eq(atomic_load(&hits), 100);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 100, "every hit on the fast path");
	cr_expect_eq(seen_running, &kp, "kprobe_running() inside the handler");
	cr_expect_eq(seen_ip, (unsigned long)kp.addr + UKP_BREAKPOINT_IP_OFFSET,
		     "the instruction pointer as at a breakpoint");
	cr_expect_eq(seen_arg0, 99);
	cr_expect_neq(seen_sp, 0);
	cr_expect_eq(seen_in_handler, 1);
	/* all of it undone after the hit */
	state_clear();
	unregister_kprobe(&kp);
	cr_expect_eq(kp.nmissed, 0);
}

#if defined(__aarch64__)
/* of_regs(): x0 = x19..x24, x16, x17, x9 and x15 summed around a probe at
 * of_regs_at, with each set to a known value first (the handler checks
 * what it sees), and 1 << 16 when the flags say equal */
__asm__(".text\n.p2align 4\n"
	FN(of_regs)
	"	stp x19, x20, [sp, #-48]!\n	stp x21, x22, [sp, #16]\n	stp x23, x24, [sp, #32]\n"
	"	mov x19, #19\n	mov x20, #20\n	mov x21, #21\n	mov x22, #22\n"
	"	mov x23, #23\n	mov x24, #24\n	mov x16, #16\n	mov x17, #17\n"
	"	mov x9, #9\n	mov x15, #15\n	mov x18, x18\n	cmp x9, #9\n"
	".globl of_regs_at\n"
	"of_regs_at:\n"
	"	add x1, x19, x20\n"
	"	cset x2, eq\n"
	"	add x1, x1, x21\n	add x1, x1, x22\n	add x1, x1, x23\n	add x1, x1, x24\n"
	"	add x1, x1, x16\n	add x1, x1, x17\n	add x1, x1, x9\n	add x1, x1, x15\n"
	"	add x0, x1, x2, lsl #16\n"
	"	ldp x21, x22, [sp, #16]\n	ldp x23, x24, [sp, #32]\n	ldp x19, x20, [sp], #48\n"
	"	ret\n"
	".size of_regs, .-of_regs\n");
long of_regs(void);
extern char of_regs_at[];
#define OF_REGS_SUM (19 + 20 + 21 + 22 + 23 + 24 + 16 + 17 + 9 + 15 + (1L << 16))

/* Checks the registers of of_regs_at, then changes x20, x16 and x17
 * (the detour's own save slots) and the flags (Z cleared). Integer code
 * only: GCC would add to x16 and x17 with one NEON add otherwise (and
 * the proof would rightly refuse the handler). */
static atomic_long regs_bad;
__attribute__((target("general-regs-only"))) static int h_regs(struct kprobe *p, struct pt_regs *regs)
{
	static const int want[] = { 19, 20, 21, 22, 23, 24 };

	count_hit();
	for (int i = 0; i < 6; i++)
		if (regs->regs[19 + i] != (unsigned long)want[i])
			atomic_fetch_add(&regs_bad, 1);
	if (regs->regs[16] != 16 || regs->regs[17] != 17 || regs->regs[9] != 9 ||
	    regs->regs[15] != 15 || !(regs->pstate & (1u << 30)) ||
	    regs->pc != (unsigned long)of_regs_at)
		atomic_fetch_add(&regs_bad, 1);
	regs->regs[20] += 1000;
	regs->regs[16] += 100;
	regs->regs[17] += 10000;
	regs->pstate &= ~(1ul << 30);
	(void)p;
	return 0;
}

Test(optfast, the_handler_sees_the_registers_and_its_writes_reach_the_code)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)of_regs_at, .pre_handler = h_regs };

	warm_up();
	atomic_store(&regs_bad, 0);
	reg(&kp);
	/* x20 + 1000, x16 + 100, x17 + 10000, and Z cleared: cset gives 0 */
	for (int i = 0; i < 10; i++)
		cr_assert_eq(of_regs(), OF_REGS_SUM + 1000 + 100 + 10000 - (1L << 16));
	cr_expect_eq(atomic_load(&regs_bad), 0, "the handler saw wrong registers");
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 10);
	unregister_kprobe(&kp);
	cr_expect_eq(of_regs(), OF_REGS_SUM);
}
#endif

Test(optfast, register_writes_reach_the_probed_code)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_set_arg0 };

	warm_up();
	reg(&kp);
	cr_expect_eq(of_add(1), 107);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 1);
	unregister_kprobe(&kp);
	cr_expect_eq(of_add(1), 8);
}

Test(optfast, errno_is_kept)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_errno };

	warm_up();
	errno = 0; /* binds __errno_location's PLT slot before the proof */
	reg(&kp);
	errno = ENOENT;
	cr_expect_eq(of_add(2), 9);
	cr_expect_eq(errno, ENOENT, "errno changed by the handler: %d", errno);
	cr_expect_eq(atomic_load(&hits), 1);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 1);
	unregister_kprobe(&kp);
}

Test(optfast, a_fault_in_the_handler_is_recovered)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_fault,
			     .fault_handler = h_fault_handler };
	unsigned long before = atomic_load(&ukp_handler_fault_count);

	warm_up();
	atomic_store(&faults, 0);
	bad_ptr = (volatile int *)16;
	reg(&kp);
	errno = EAGAIN;
	for (int i = 0; i < 20; i++)
		cr_assert_eq(of_add(i), i + 7, "the handler's register write did not happen");
	cr_expect_eq(errno, EAGAIN);
	cr_expect_eq(atomic_load(&hits), 20);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 20);
	cr_expect_eq(atomic_load(&faults), 20);
	cr_expect_eq(atomic_load(&ukp_handler_fault_count) - before, 20);
	cr_expect_eq(kp.nmissed, 20, "a handler fault counts as missed");
	state_clear();
	/* the probe keeps working, and unregistration does not wait forever */
	kp.pre_handler = h_count;
	cr_expect_eq(of_add(3), 10);
	unregister_kprobe(&kp);
	cr_expect_eq(of_add(3), 10);
}

Test(optfast, copy_from_user_nofault_in_the_handler_fails_and_the_handler_goes_on)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_nofault };

	warm_up();
	bad_ptr = (volatile int *)16;
	reg(&kp);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(of_add(i), 57);
	cr_expect_eq(nofault_ret, -EFAULT);
	cr_expect_eq(atomic_load(&hits), 5);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 5);
	cr_expect_eq(kp.nmissed, 0);
	unregister_kprobe(&kp);
}

Test(optfast, program_signals_wait_until_the_hit_is_over)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_signal };

	warm_up();
	catch_usr1();
	reg(&kp);
	for (int i = 0; i < 5; i++) {
		cr_expect_eq(of_add(4), 11);
		cr_expect_eq(usr1_at_handler_end, i, "the program's handler ran inside the probe handler");
		cr_expect_eq(atomic_load(&usr1_count), i + 1, "the held-back signal was delivered");
	}
	cr_expect_eq(atomic_load(&hits), 5);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_hits), 5);
	cr_expect_eq(atomic_load(&usr1_saw_in_handler), 0);
	cr_expect_eq(ukp_ctl.deferred_mask, 0);
	unregister_kprobe(&kp);
}

/* A probe inside the handler: missed, counted, on the fast path too. */
static struct kprobe inner = { .symbol_name = "of_sub", .pre_handler = h_other };
static int h_calls_probed(struct kprobe *p, struct pt_regs *regs)
{
	count_hit();
	ARG0(regs) = (unsigned long)of_sub(10);
	(void)p;
	return 0;
}

Test(optfast, a_hit_inside_the_handler_is_missed)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_calls_probed };

	warm_up();
	reg(&inner);
	/* the outer handler calls of_sub: integer code called directly, so
	 * the proof follows it */
	reg(&kp);
	cr_expect_eq(of_add(1), 14, "the first argument = of_sub(10), then + 7");
	cr_expect_eq(atomic_load(&hits), 1);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 1 : 0);
	cr_expect_eq(atomic_load(&other_hits), 0, "a nested hit ran its handler");
	cr_expect_eq(inner.nmissed, 1);
	cr_expect_eq(of_sub(10), 7);
	cr_expect_eq(atomic_load(&other_hits), 1, "the inner probe works on its own");
	unregister_kprobe(&kp);
	unregister_kprobe(&inner);
}

Test(optfast, a_second_probe_a_swapped_handler_a_disabled_probe_or_a_post_handler)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_count };
	struct kprobe kp2 = { .symbol_name = "of_add", .pre_handler = h_other };

	warm_up();
	reg(&kp);
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 1);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 1 : 0);
	/* two probes (an aggregate): both run, through the C path */
	reg_check(&kp2, false);
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 2);
	cr_expect_eq(atomic_load(&other_hits), 1);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 1 : 0);
	/* back to one: the fast path again */
	unregister_kprobe(&kp2);
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 3);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 2 : 0);
	/* a handler swapped in after registration is not proven: C path */
	kp.pre_handler = h_errno;
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 4);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 2 : 0);
	kp.pre_handler = h_count;
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 3 : 0);
	/* disabled: no handler, by either path; enabled: fast again */
	cr_assert_eq(disable_kprobe(&kp), 0);
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 5);
	cr_assert_eq(enable_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 6);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 4 : 0);
	/* a post_handler: checked at the hit, before the optimizer undoes
	 * the jump; afterwards the probe is a breakpoint with both */
	kp.post_handler = h_post;
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 7);
	cr_expect_eq(atomic_load(&fast_hits), fast_expected() ? 4 : 0);
	unregister_kprobe(&kp);
	cr_expect_eq(of_add(0), 7);
	cr_expect_eq(atomic_load(&hits), 7);
}

/* ------------------------------------------------ the return's fast path */

static atomic_long rets, fast_rets;
static struct kprobe *ret_running;
static unsigned long ret_ip;
#if defined(__aarch64__)
static unsigned long ret_lr;
#endif

/* [ret] A return handler call, by the trampoline's fast path or not. */
static void count_ret(void)
{
	count_call(&rets, &fast_rets, ukp_kretprobe_trampoline, ukp_kretprobe_trampoline_end);
}

static int r_count(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	count_ret();
	ret_running = kprobe_running();
	ret_ip = instruction_pointer(regs);
#if defined(__aarch64__)
	ret_lr = procedure_link_pointer(regs);
#endif
	RETVAL(regs) += 1000; /* the return value the caller sees */
	(void)ri;
	return 0;
}

static int r_errno(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	errno = EXDEV;
	count_ret();
	(void)ri;
	(void)regs;
	return 0;
}

static int r_fault(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	count_ret();
	(void)ukt_load_int(bad_ptr);
	RETVAL(regs) = 5555; /* never reached */
	(void)ri;
	return 0;
}

static int r_signal(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	count_ret();
	raw_tgkill(my_pid, my_tid, SIGUSR1);
	usr1_at_handler_end = atomic_load(&usr1_count);
	(void)ri;
	(void)regs;
	return 0;
}

static void reg_ret(struct kretprobe *rp)
{
	cr_assert_eq(register_kretprobe(rp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&rp->kp));
	atomic_store(&rets, 0);
	atomic_store(&fast_rets, 0);
}

/* AArch64's return cases start from a thread that has its return stack
 * (claimed here, on the C path); x86-64's from one that has none, which
 * their first entry claims: both starts are covered. */
static void ret_warm_up(void)
{
#if defined(__aarch64__)
	struct kretprobe w = { .kp.symbol_name = "of_sub", .handler = NULL, .maxactive = 2 };

	warm_up();
	cr_assert_eq(register_kretprobe(&w), 0);
	cr_assert_eq(of_sub(5), 2);
	unregister_kretprobe(&w);
	cr_assert_not_null(ukp_ctl.rstack);
#else
	warm_up();
#endif
}

__attribute__((noinline)) static int call_of_add(int x)
{
	int r = of_add(x);

	__asm__ volatile("" : "+r"(r));
	return r;
}

Test(optfast, a_return_takes_the_fast_path_and_its_register_writes_count)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	cr_expect_eq(atomic_load(&rets), 100);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 100, "every return on the fast path");
	cr_expect_eq(ret_running, &rp.kp, "kprobe_running() in the return handler");
	cr_expect_neq(ret_ip, 0);
	cr_expect(ret_ip > (unsigned long)call_of_add && ret_ip < (unsigned long)call_of_add + 64,
		  "the instruction pointer is the real return address");
#if defined(__aarch64__)
	cr_expect_eq(ret_lr, ret_ip, "regs->regs[30] too");
#endif
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0, "every instance came back to the pool");
	cr_expect_eq(call_of_add(1), 8);
}

Test(optfast, a_return_keeps_errno)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_errno, .maxactive = 2 };

	ret_warm_up();
	errno = 0;
	reg_ret(&rp);
	errno = ENOENT;
	cr_expect_eq(call_of_add(2), 9);
	cr_expect_eq(errno, ENOENT, "errno changed by the return handler: %d", errno);
	cr_expect_eq(atomic_load(&rets), 1);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 1);
	unregister_kretprobe(&rp);
}

Test(optfast, a_fault_in_a_return_handler_is_recovered)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_fault, .maxactive = 2 };
	unsigned long before = atomic_load(&ukp_handler_fault_count);

	ret_warm_up();
	bad_ptr = (volatile int *)16;
	reg_ret(&rp);
	errno = EAGAIN;
	for (int i = 0; i < 20; i++)
		cr_assert_eq(call_of_add(i), i + 7, "the return value changed");
	cr_expect_eq(errno, EAGAIN);
	cr_expect_eq(atomic_load(&rets), 20);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 20);
	cr_expect_eq(atomic_load(&ukp_handler_fault_count) - before, 20);
	state_clear();
	/* the instances went back: both serve 20 more returns */
	rp.handler = r_count;
	for (int i = 0; i < 20; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.kp.nmissed, 20, "a handler fault counts on the probe, as on the C path");
	cr_expect_eq(rp.nmissed, 0);
}

Test(optfast, program_signals_wait_until_the_return_handler_is_over)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_signal, .maxactive = 2 };

	ret_warm_up();
	catch_usr1();
	reg_ret(&rp);
	cr_expect_eq(call_of_add(4), 11);
	cr_expect_eq(atomic_load(&rets), 1);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 1);
	cr_expect_eq(usr1_at_handler_end, 0, "the program's handler ran inside the return handler");
	cr_expect_eq(atomic_load(&usr1_count), 1, "the held-back signal was delivered");
	cr_expect_eq(atomic_load(&usr1_saw_in_handler), 0);
	unregister_kretprobe(&rp);
}

/* Not proven vector-free: called with the state saved, from the C half. */
static volatile double r_vec_sink;
static int r_vec(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	r_vec_sink = r_vec_sink * 1.5 + 1.0;
	count_ret();
	(void)ri;
	(void)regs;
	return 0;
}

Test(optfast, a_return_handler_that_uses_vectors_is_called_safely)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_vec, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(call_of_add(i), i + 7);
	cr_expect_eq(atomic_load(&rets), 10);
	cr_expect_eq(atomic_load(&fast_rets), 0, "a vector-using handler called directly");
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

/* Recursion: several pending returns on the thread, each its own frame. */
__attribute__((noinline)) static int rec_caller(int n)
{
	int r;

	if (n == 0)
		return 0;
	r = of_add(n) + rec_caller(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r;
}

Test(optfast, returns_after_nested_calls_all_count)
{
	struct kretprobe rp = { .kp.symbol_name = "rec_caller", .handler = r_count,
				.maxactive = 16 };
	int want = 0;

	ret_warm_up();
	reg_ret(&rp);
	/* each level's return value + 1000, the outer ones adding the
	 * inner ones' */
	for (int n = 1; n <= 10; n++)
		want = n + 7 + want + 1000;
	cr_expect_eq(rec_caller(10), want + 1000);
	cr_expect_eq(atomic_load(&rets), 11);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 11);
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

/* The same recursion, the probe on the callee: one pending return at a
 * time, each level's own. */
Test(optfast, returns_of_a_callee_at_every_level_of_a_recursion_all_count)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 16 };
	int want = 0;

	ret_warm_up();
	reg_ret(&rp);
	for (int n = 1; n <= 10; n++)
		want += n + 7 + 1000;
	cr_expect_eq(rec_caller(10), want);
	cr_expect_eq(atomic_load(&rets), 10);
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

/* ---------------------------------------------- the entry, and spares */

static struct kretprobe_instance *seen_ri, *seen_spare, *seen_entry_spare;

static int r_spare(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	count_ret();
	seen_ri = ri;
	seen_spare = ukp_krp_spare_of_self();
	(void)regs;
	return 0;
}

Test(optfast, a_kretprobe_entry_is_a_fast_path_site)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = NULL, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	if (fast_expected())
		cr_expect(site_is_fast(&rp.kp), "the kretprobe's entry probe is a fast-path site");
	for (int i = 0; i < 50; i++)
		cr_assert_eq(call_of_add(i), i + 7);
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

Test(optfast, a_return_keeps_its_instance_as_spare_and_the_next_entry_takes_it)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_spare, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	cr_assert_eq(call_of_add(1), 8);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(call_of_add(i), i + 7);
		if (!fast_expected())
			continue;
		/* taken by the entry, given back by the return */
		cr_expect_null(seen_spare, "the entry took the spare");
		cr_expect_eq(ukp_krp_spare_of_self(), seen_ri, "the return kept its instance");
	}
	cr_expect_eq(atomic_load(&rets), 21);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 21);
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

static int e_spare(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	seen_entry_spare = ukp_krp_spare_of_self();
	(void)ri;
	(void)regs;
	return 0;
}

/* A kretprobe with an entry_handler is entered on the C path
 * (ukp_kretprobe_pre_handler): it too takes the thread's spare, which
 * the return's fast path kept, before the pool (no shared cache line,
 * one atomic operation per call fewer). */
Test(optfast, an_entry_on_the_c_path_takes_the_spare_too)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_spare,
				.entry_handler = e_spare, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	cr_assert_eq(call_of_add(1), 8);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(call_of_add(i), i + 7);
		if (!fast_expected())
			continue;
		cr_expect_null(seen_entry_spare, "the entry took the spare before its handler");
		cr_expect_null(seen_spare, "the entry took the spare");
		cr_expect_eq(ukp_krp_spare_of_self(), seen_ri, "the return kept its instance");
	}
	cr_expect_eq(atomic_load(&rets), 21);
	state_clear();
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
}

static void *call_of_add_ten(void *arg)
{
	for (int i = 0; i < 10; i++)
		if (call_of_add(i) != i + 7)
			return (void *)1;
	(void)arg;
	return NULL;
}

Test(optfast, a_spare_is_free_for_the_other_threads)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_spare, .maxactive = 1 };
	pthread_t th;
	void *ret;

	ret_warm_up();
	reg_ret(&rp);
	cr_assert_eq(call_of_add(1), 8);
	cr_assert_eq(call_of_add(2), 9);
	if (fast_expected())
		cr_assert_not_null(ukp_krp_spare_of_self(), "this thread keeps the one instance");
	/* the other thread finds the pool empty and takes the spare */
	cr_assert_eq(pthread_create(&th, NULL, call_of_add_ten, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_null(ret);
	cr_expect_null(ukp_krp_spare_of_self());
	/* and back: from the record of the thread that ended */
	cr_assert_eq(call_of_add(3), 10);
	cr_expect_eq(atomic_load(&rets), 13);
	cr_expect_eq(rp.nmissed, 0, "a spare counted as in flight");
	unregister_kretprobe(&rp);
}

Test(optfast, a_holder_with_an_instance_in_a_spare_is_reaped)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_spare, .maxactive = 2 };
	unsigned long holders0;

	ret_warm_up();
	ukp_krp_reap();
	holders0 = ukp_krp_holders_allocated();
	reg_ret(&rp);
	cr_assert_eq(call_of_add(1), 8);
	cr_assert_eq(call_of_add(2), 9);
	if (fast_expected())
		cr_assert_not_null(ukp_krp_spare_of_self());
	unregister_kretprobe(&rp);
	ukp_krp_reap();
	cr_expect_null(ukp_krp_spare_of_self(), "the reaper took the spare back");
	cr_expect_eq(ukp_krp_holders_allocated(), holders0, "holder not freed");
}

/* A site optimized for a kretprobe alone (x86-64: a detour that enters
 * its own template, ukp_optprobe_krp_entry; AArch64: FAST_HIT's
 * kretprobe case) serves any other probe set there by the C path, and
 * the stack and the return prediction stay balanced (a wrong way out
 * would crash or return to the wrong place). */
Test(optfast, a_kretprobe_site_serves_a_kprobe_added_later_and_left_alone)
{
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 4 };
	struct kprobe kp2 = { .symbol_name = "of_add", .pre_handler = h_count };

	ret_warm_up();
	reg_ret(&rp);
	cr_assert_eq(call_of_add(1), 1008);
	cr_assert_eq(register_kprobe(&kp2), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&rets), 11);
	unregister_kretprobe(&rp);
	cr_assert(kprobe_optimized(&kp2));
	for (int i = 0; i < 10; i++)
		cr_assert_eq(call_of_add(i), i + 7);
	cr_expect_eq(atomic_load(&hits), 20);
	cr_expect_eq(atomic_load(&rets), 11);
	state_clear();
	unregister_kprobe(&kp2);
	cr_expect_eq(rp.nmissed, 0);
}

#if defined(__x86_64__)
/* Every argument register, al of a variadic call and the vector
 * arguments reach a function whose kretprobe entry took the fast path. */
__attribute__((noinline)) long krp_six(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

__attribute__((noinline)) double krp_vsum(int n, ...)
{
	va_list ap;
	double sum = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		sum += va_arg(ap, double);
	va_end(ap);
	return sum;
}

Test(optfast, arguments_survive_a_kretprobe_entry)
{
	struct kretprobe r6 = { .kp.symbol_name = "krp_six", .handler = r_spare, .maxactive = 4 };
	struct kretprobe rv = { .kp.symbol_name = "krp_vsum", .handler = r_spare, .maxactive = 4 };
	long (*volatile six)(long, long, long, long, long, long) = krp_six;
	double (*volatile vsum)(int, ...) = krp_vsum;

	warm_up();
	cr_assert_eq(register_kretprobe(&r6), 0);
	cr_assert_eq(register_kretprobe(&rv), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&r6.kp) && kprobe_optimized(&rv.kp));
	atomic_store(&rets, 0);
	atomic_store(&fast_rets, 0);
	for (long i = 0; i < 5; i++) {
		cr_assert_eq(six(i, 1, 2, 3, 4, 5), i + 2 + 6 + 12 + 20 + 30);
		cr_assert_eq(vsum(3, 1.5, 2.25, (double)i), 3.75 + (double)i);
	}
	cr_expect_eq(atomic_load(&rets), 10);
	if (fast_expected()) {
		cr_expect_eq(atomic_load(&fast_rets), 10);
		cr_expect_not_null(ukp_krp_spare_of_self());
	}
	unregister_kretprobe(&r6);
	unregister_kretprobe(&rv);
	cr_expect_eq(r6.nmissed + rv.nmissed, 0);
}
#elif defined(__aarch64__)
/* The entry's fast path with every argument register live: x0-x7 and
 * the return address reach the function and its caller unchanged. */
__asm__(".text\n.p2align 4\n"
	FN(of_args)
	"	add x0, x0, x1\n	add x0, x0, x2\n	add x0, x0, x3\n	add x0, x0, x4\n"
	"	add x0, x0, x5\n	add x0, x0, x6\n	add x0, x0, x7\n	ret\n"
	".size of_args, .-of_args\n");
long of_args(long, long, long, long, long, long, long, long);

Test(optfast, arguments_survive_a_kretprobe_entry)
{
	struct kretprobe rp = { .kp.symbol_name = "of_args", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	for (long i = 0; i < 10; i++)
		cr_assert_eq(of_args(i, 1, 2, 3, 4, 5, 6, 7 << i), i + 21 + (7 << i) + 1000);
	cr_expect_eq(atomic_load(&rets), 10);
	if (fast_expected())
		cr_expect_eq(atomic_load(&fast_rets), 10);
	unregister_kretprobe(&rp);
}
#endif

/* Threads entering and returning at once: the pool's compare-and-swap,
 * the spares taken from other threads when it is empty, and every
 * instance back at the end (a lost one would count as missed forever). */
static struct kretprobe stress_rp;
static atomic_long stress_bad;

static int r_stress(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&rets, 1);
	RETVAL(regs) += 1000;
	(void)ri;
	return 0;
}

static void *stress_thread(void *arg)
{
	for (int i = 0; i < 3000; i++) {
		int r = call_of_add(i);

		/* a missed entry runs no return handler */
		if (r != i + 7 + 1000 && r != i + 7)
			atomic_fetch_add(&stress_bad, 1);
	}
	(void)arg;
	return NULL;
}

Test(optfast, threads_share_the_pool_and_the_spares)
{
	pthread_t th[4];

	stress_rp = (struct kretprobe){ .kp.symbol_name = "of_add", .handler = r_stress,
					.maxactive = 3 };
	ret_warm_up();
	reg_ret(&stress_rp);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, stress_thread, NULL), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_join(th[i], NULL), 0);
	cr_expect_eq(atomic_load(&stress_bad), 0);
	cr_expect_eq(atomic_load(&rets) + (long)stress_rp.nmissed, 4 * 3000,
		     "%ld returns and %d missed entries", atomic_load(&rets), stress_rp.nmissed);
	/* every instance is back (in the pool or a spare): maxactive
	 * entries in a row on this thread all find one */
	atomic_store(&rets, 0);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	unregister_kretprobe(&stress_rp);
}

/* --------------------------- a kprobe and a newer kretprobe: the pair */

/*
 * A function with a kprobe and, registered after it, a kretprobe without
 * entry_handler (a tracer's `p F` and `r F`): x86-64's fast path serves
 * both (fastpath.h's fast_rp): the kretprobe's entry first, as on the
 * C path (the newer probe runs first), then the kprobe's handler. Where
 * the kretprobe's entry cannot be done without C (a thread's first
 * entry, no free instance), its pre_handler is called from the fast
 * path. Other arches, the eager runs and the other order take the C
 * path; the behaviour asserted is the same.
 */
static uintptr_t seen_slot;

static int h_pair(struct kprobe *p, struct pt_regs *regs)
{
	h_count(p, regs);
	/* the return address as the handler sees it */
	seen_slot = ENTRY_RET(regs);
	return 0;
}

static int h_skip(struct kprobe *p, struct pt_regs *regs)
{
	count_hit();
	(void)p;
	(void)regs;
	return 1; /* skip the rest of the chain */
}

static bool pair_expected(void)
{
	return ARCH_FAST_KRP_PAIR && fast_expected();
}

/* Is the site of kp served as the pair of kp and rp? */
static bool site_is_pair(struct kprobe *kp, struct kretprobe *rp)
{
	bool pair = false;
#if ARCH_FAST_KRP_PAIR
	struct ukp_site *s;

	cr_assert_eq(ukp_lock_for_show(), 0);
	s = ukp_site_lookup((uintptr_t)kp->addr);
	pair = s && atomic_load(&s->fast_kp) == kp && s->fast_rp == rp;
	ukp_unlock_for_show();
#else
	(void)kp;
	(void)rp;
#endif
	return pair;
}

/* kp, then rp (the newer), optimized; the counts from zero */
static void reg_pair(struct kprobe *kp, struct kretprobe *rp)
{
	cr_assert_eq(register_kprobe(kp), 0);
	cr_assert_eq(register_kretprobe(rp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(kp));
	if (pair_expected())
		cr_expect(site_is_pair(kp, rp), "%p: not served as a pair", (void *)kp->addr);
	else
		cr_expect(!site_is_pair(kp, rp));
	reset();
	atomic_store(&rets, 0);
	atomic_store(&fast_rets, 0);
}

Test(optfast, a_pair_takes_the_fast_path_and_the_kretprobe_goes_first)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_pair };
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	reg_pair(&kp, &rp);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	cr_expect_eq(atomic_load(&hits), 100);
	cr_expect_eq(atomic_load(&rets), 100);
	if (pair_expected()) {
		cr_expect_eq(atomic_load(&fast_hits), 100, "every entry on the fast path");
		cr_expect_eq(atomic_load(&fast_rets), 100);
	}
	cr_expect_eq(seen_running, &kp);
	cr_expect_eq(seen_in_handler, 1);
	cr_expect_eq(seen_ip, (unsigned long)kp.addr + UKP_BREAKPOINT_IP_OFFSET);
	cr_expect_eq(seen_slot, (uintptr_t)ukp_kretprobe_trampoline,
		     "the kprobe's handler runs after the newer kretprobe's entry");
	cr_expect(ret_ip > (unsigned long)call_of_add && ret_ip < (unsigned long)call_of_add + 64,
		  "the return handler sees the real return address");
	state_clear();
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
	cr_expect_eq(kp.nmissed, 0);
	cr_expect_eq(rp.nmissed, 0);
	cr_expect_eq(call_of_add(1), 8);
}

/* The other order (the kprobe newer) is no pair: the C path runs the
 * kprobe first, which then sees the real return address. */
Test(optfast, a_kretprobe_older_than_the_kprobe_is_no_pair)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_pair };
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	reg_ret(&rp);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_expect(!site_is_pair(&kp, &rp));
	reset();
	for (int i = 0; i < 10; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&fast_hits), 0);
	cr_expect(seen_slot > (uintptr_t)call_of_add && seen_slot < (uintptr_t)call_of_add + 64,
		  "the newer kprobe ran before the kretprobe's entry");
	state_clear();
	unregister_kprobe(&kp);
	unregister_kretprobe(&rp);
}

/* A pre_handler's "skip the rest" does not undo the newer kretprobe's
 * entry, which ran before it. */
Test(optfast, a_pair_whose_kprobe_skips_the_rest_keeps_its_return)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_skip };
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	reg_pair(&kp, &rp);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&rets), 10);
	if (pair_expected())
		cr_expect_eq(atomic_load(&fast_hits), 10);
	state_clear();
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
}

/* A fault in the kprobe's handler: abandoned and counted; the
 * kretprobe's entry, done before it, still gets its return. */
Test(optfast, a_fault_in_a_pairs_handler_keeps_the_return)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_fault,
			     .fault_handler = h_fault_handler };
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	atomic_store(&faults, 0);
	bad_ptr = (volatile int *)16;
	reg_pair(&kp, &rp);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(call_of_add(i), i + 7 + 1000);
	cr_expect_eq(atomic_load(&hits), 20);
	cr_expect_eq(atomic_load(&faults), 20);
	cr_expect_eq(atomic_load(&rets), 20);
	if (pair_expected())
		cr_expect_eq(atomic_load(&fast_hits), 20);
	cr_expect_eq(kp.nmissed, 20, "a handler fault counts as missed");
	cr_expect_eq(rp.nmissed, 0);
	state_clear();
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
}

__attribute__((noinline)) int pair_rec(int n)
{
	int r;

	if (n == 0)
		return 0;
	r = pair_rec(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static int r_plain(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	count_ret();
	(void)ri;
	(void)regs;
	return 0;
}

/* No free instance (deeper than maxactive): the fast path calls the
 * kretprobe's pre_handler, which counts the miss; the kprobe's handler
 * runs at every level. */
Test(optfast, a_pair_deeper_than_maxactive_misses_the_rest)
{
	struct kprobe kp = { .symbol_name = "pair_rec", .pre_handler = h_count };
	struct kretprobe rp = { .kp.symbol_name = "pair_rec", .handler = r_plain, .maxactive = 2 };

	ret_warm_up();
	reg_pair(&kp, &rp);
	cr_assert_eq(pair_rec(5), 5);
	cr_expect_eq(atomic_load(&hits), 6);
	cr_expect_eq(atomic_load(&rets), 2);
	cr_expect_eq(rp.nmissed, 4);
	if (pair_expected())
		cr_expect_eq(atomic_load(&fast_hits), 6);
	/* every instance came back */
	cr_assert_eq(pair_rec(1), 1);
	cr_expect_eq(atomic_load(&rets), 4);
	cr_expect_eq(rp.nmissed, 4);
	state_clear();
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
}

static void *pair_thread(void *arg)
{
	for (int i = 0; i < 10; i++)
		if (call_of_add(i) != i + 7 + 1000)
			return (void *)1;
	(void)arg;
	return NULL;
}

/* Another thread: its first hit takes the C path (it claims its
 * grace-period record and return stack there), the others the pair's
 * fast path, with its own return stack. (A thread that has its record
 * but no return stack yet, as this test's thread after ret_warm_up,
 * gets it from the pre_handler called by the fast path: the first
 * pair test.) */
Test(optfast, a_pair_on_a_new_thread)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_count };
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 4 };
	pthread_t th;
	void *ret;

	ret_warm_up();
	reg_pair(&kp, &rp);
	cr_assert_eq(pthread_create(&th, NULL, pair_thread, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_null(ret);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&rets), 10);
	cr_expect_eq(rp.nmissed, 0);
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
}

/* The pair comes and goes with its probes' state: a disabled kretprobe
 * (C path, no return), enabled again; one of the two unregistered (the
 * other's own fast path), registered again. */
Test(optfast, a_pair_follows_its_probes)
{
	struct kprobe kp = { .symbol_name = "of_add", .pre_handler = h_count };
	struct kretprobe rp = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };
	struct kretprobe rp2 = { .kp.symbol_name = "of_add", .handler = r_count, .maxactive = 2 };

	ret_warm_up();
	reg_pair(&kp, &rp);
	cr_assert_eq(disable_kretprobe(&rp), 0);
	cr_assert_eq(call_of_add(1), 8);
	cr_expect_eq(atomic_load(&hits), 1);
	cr_expect_eq(atomic_load(&rets), 0);
	cr_expect_eq(atomic_load(&fast_hits), 0, "a disabled kretprobe: the C path");
	cr_assert_eq(enable_kretprobe(&rp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert_eq(call_of_add(1), 1008);
	cr_expect_eq(atomic_load(&rets), 1);
	cr_expect_eq(atomic_load(&fast_hits), pair_expected() ? 1 : 0);
	unregister_kretprobe(&rp);
	cr_expect(site_is_fast(&kp) || !fast_expected(), "the kprobe alone: its fast path");
	cr_assert_eq(call_of_add(1), 8);
	cr_expect_eq(atomic_load(&hits), 3);
	cr_expect_eq(atomic_load(&rets), 1);
	cr_assert_eq(register_kretprobe(&rp2), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_expect_eq(site_is_pair(&kp, &rp2), pair_expected());
	cr_assert_eq(call_of_add(1), 1008);
	cr_expect_eq(atomic_load(&hits), 4);
	cr_expect_eq(atomic_load(&rets), 2);
	unregister_kprobe(&kp);
	cr_expect(site_is_fast(&rp2.kp) || !fast_expected(), "the kretprobe alone: its fast path");
	cr_assert_eq(call_of_add(1), 1008);
	cr_expect_eq(atomic_load(&hits), 4);
	cr_expect_eq(atomic_load(&rets), 3);
	state_clear();
	unregister_kretprobe(&rp2);
	cr_expect_eq(rp.nmissed + rp2.nmissed, 0);
}
