/* SPDX-License-Identifier: MIT */
/*
 * Return probes.
 *
 *  kretprobe_kunit: the kernel's lib/tests/test_kprobes.c cases
 *    test_kretprobe, test_kretprobes, test_stacktrace_on_kretprobe and
 *    test_stacktrace_on_nested_kretprobe, ported: same targets, handlers,
 *    values and assertions; stack traces come from backtrace().
 *  kretprobe: registration errors, the list, what the handler sees and
 *    what survives it, entry_handler and per-instance data, several
 *    kretprobes on one function, recursion, maxactive and nmissed
 *    (threads, deep recursion), disable, unregistering while calls are
 *    pending, fork, unwinder helpers, shadow stacks, and a kretprobe on
 *    every function of libz.so.1 during a zlib workload.
 *
 * Handlers run in signal context (entry) or at the probed function's
 * return: they record, the test asserts afterwards.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "ukprobes.h"
#include "core/kretprobes.h"
#include "symbols/symbols.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "ukp_test.h"

static int handler_errors;
#define EXPECT_IN_HANDLER(cond)                                                \
	do {                                                                   \
		if (!(cond))                                                   \
			__atomic_fetch_add(&handler_errors, 1, __ATOMIC_RELAXED); \
	} while (0)

/* ================================================ the kernel's cases */

#define div_factor 3

static uint32_t rand1, krph_val;
static int st_calls, st_internal_calls; /* handler runs (not in the kernel's test) */
static int (*target)(uint32_t value);
static int (*target2)(uint32_t value);
static unsigned long (*stacktrace_target)(void);
static unsigned long (*stacktrace_driver)(void);
static unsigned long (*internal_target)(void);
static unsigned long target_return_address[2];
static unsigned long myretaddr;

UKP_TARGET int kprobe_target(uint32_t value)
{
	return (value / div_factor);
}

UKP_TARGET int kprobe_target2(uint32_t value)
{
	return (value / div_factor) + 1;
}

UKP_TARGET unsigned long kprobe_stacktrace_internal_target(void)
{
	if (!target_return_address[0])
		target_return_address[0] = (unsigned long)__builtin_return_address(0);
	return target_return_address[0];
}

UKP_TARGET unsigned long kprobe_stacktrace_target(void)
{
	if (!target_return_address[1])
		target_return_address[1] = (unsigned long)__builtin_return_address(0);

	if (internal_target)
		internal_target();

	return target_return_address[1];
}

UKP_TARGET unsigned long kprobe_stacktrace_driver(void)
{
	if (stacktrace_target)
		stacktrace_target();

	/* This is for preventing inlining the function */
	return (unsigned long)__builtin_return_address(0);
}

static int entry_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	EXPECT_IN_HANDLER(kprobe_running() == &get_kretprobe(ri)->kp);
	krph_val = (rand1 / div_factor);
	return 0;
}

static int return_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long ret = regs_return_value(regs);

	EXPECT_IN_HANDLER(kprobe_running() == &get_kretprobe(ri)->kp);
	EXPECT_IN_HANDLER(ret == (rand1 / div_factor));
	EXPECT_IN_HANDLER(krph_val != 0);
	krph_val = rand1;
	return 0;
}

static int return_handler2(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long ret = regs_return_value(regs);

	EXPECT_IN_HANDLER(ret == (rand1 / div_factor) + 1);
	EXPECT_IN_HANDLER(krph_val != 0);
	krph_val = rand1;
	return 0;
}

static struct kretprobe rp = {
	.handler = return_handler,
	.entry_handler = entry_handler,
	.kp.symbol_name = "kprobe_target",
};

static struct kretprobe rp2 = {
	.handler = return_handler2,
	.entry_handler = entry_handler,
	.kp.symbol_name = "kprobe_target2",
};

static int stacktrace_return_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long retval = regs_return_value(regs);
	void *buf[16];
	int i, ret;

	st_calls++;
	EXPECT_IN_HANDLER(kprobe_running() == &get_kretprobe(ri)->kp);
	EXPECT_IN_HANDLER(retval == target_return_address[1]);

	/*
	 * Test stacktrace inside the kretprobe handler, this will involves
	 * kretprobe trampoline, but must include correct return address
	 * of the target function.
	 */
	ret = backtrace(buf, 16);
	EXPECT_IN_HANDLER(ret != 0);

	for (i = 0; i < ret; i++) {
		if ((unsigned long)buf[i] == target_return_address[1])
			break;
	}
	EXPECT_IN_HANDLER(i != ret);

	/* The registers: ip is the real return address (stack_trace_save_regs). */
	EXPECT_IN_HANDLER(regs->ip == target_return_address[1]);
	return 0;
}

static struct kretprobe rp3 = {
	.handler = stacktrace_return_handler,
	.kp.symbol_name = "kprobe_stacktrace_target",
};

static int stacktrace_internal_return_handler(struct kretprobe_instance *ri,
					      struct pt_regs *regs)
{
	unsigned long retval = regs_return_value(regs);
	void *buf[16];
	int i, ret;

	st_internal_calls++;
	EXPECT_IN_HANDLER(kprobe_running() == &get_kretprobe(ri)->kp);
	EXPECT_IN_HANDLER(retval == target_return_address[0]);

	/*
	 * Test stacktrace inside the kretprobe handler for nested case.
	 * The unwinder will find the kretprobe_trampoline address on the
	 * return address, and kretprobe must solve that.
	 */
	ret = backtrace(buf, 16);
	EXPECT_IN_HANDLER(ret != 0);

	for (i = 0; i < ret - 1; i++) {
		if ((unsigned long)buf[i] == target_return_address[0]) {
			EXPECT_IN_HANDLER((unsigned long)buf[i + 1] == target_return_address[1]);
			break;
		}
	}
	EXPECT_IN_HANDLER(i != ret - 1);

	EXPECT_IN_HANDLER(regs->ip == target_return_address[0]);
	return 0;
}

static struct kretprobe rp4 = {
	.handler = stacktrace_internal_return_handler,
	.kp.symbol_name = "kprobe_stacktrace_internal_target",
};

static void kprobes_test_init(void)
{
	target = kprobe_target;
	target2 = kprobe_target2;
	stacktrace_target = kprobe_stacktrace_target;
	internal_target = kprobe_stacktrace_internal_target;
	stacktrace_driver = kprobe_stacktrace_driver;
	srand((unsigned int)time(NULL) ^ (unsigned int)clock());
	do
		rand1 = (uint32_t)rand();
	while (rand1 <= div_factor);
	handler_errors = 0;
}

TestSuite(kretprobe_kunit, .init = kprobes_test_init);

static void test_kretprobe(void)
{
	cr_expect_eq(0, register_kretprobe(&rp));
	target(rand1);
	unregister_kretprobe(&rp);
	cr_expect_eq(krph_val, rand1);
}

Test(kretprobe_kunit, test_kretprobe)
{
	test_kretprobe();
	cr_expect_eq(handler_errors, 0);
	cr_expect_eq(rp.nmissed, 0);
}

Test(kretprobe_kunit, test_kretprobes)
{
	struct kretprobe *rps[2] = { &rp, &rp2 };

	test_kretprobe(); /* the kernel runs it first; rp is reused below */
	/* addr and flags should be cleard for reusing kprobe. */
	rp.kp.addr = NULL;
	rp.kp.flags = 0;
	cr_expect_eq(0, register_kretprobes(rps, 2));

	krph_val = 0;
	target(rand1);
	cr_expect_eq(krph_val, rand1);

	krph_val = 0;
	target2(rand1);
	cr_expect_eq(krph_val, rand1);
	unregister_kretprobes(rps, 2);
	cr_expect_eq(handler_errors, 0);
}

static void test_stacktrace_on_kretprobe(void)
{
	unsigned long myretaddr_local = (unsigned long)__builtin_return_address(0);

	myretaddr = myretaddr_local;
	/* addr and flags should be cleard for reusing kprobe. */
	rp3.kp.addr = NULL;
	rp3.kp.flags = 0;

	/*
	 * Run the stacktrace_driver() to record correct return address in
	 * stacktrace_target() and ensure stacktrace_driver() call is not
	 * inlined by checking the return address of stacktrace_driver()
	 * and the return address of this function is different.
	 */
	cr_assert_neq(myretaddr, stacktrace_driver());

	cr_assert_eq(0, register_kretprobe(&rp3));
	cr_assert_neq(myretaddr, stacktrace_driver());
	unregister_kretprobe(&rp3);
}

Test(kretprobe_kunit, test_stacktrace_on_kretprobe)
{
	internal_target = NULL; /* the outer function alone */
	test_stacktrace_on_kretprobe();
	cr_expect_eq(handler_errors, 0);
	cr_expect_eq(st_calls, 1);
	cr_expect_neq(target_return_address[1], 0);
}

static void test_stacktrace_on_nested_kretprobe(void)
{
	unsigned long myretaddr_local = (unsigned long)__builtin_return_address(0);
	struct kretprobe *rps[2] = { &rp3, &rp4 };

	myretaddr = myretaddr_local;
	/* addr and flags should be cleard for reusing kprobe. */
	rp3.kp.addr = NULL;
	rp3.kp.flags = 0;

	/* cr_assert_neq(myretaddr, stacktrace_driver()); */

	cr_assert_eq(0, register_kretprobes(rps, 2));
	cr_assert_neq(myretaddr, stacktrace_driver());
	unregister_kretprobes(rps, 2);
}

Test(kretprobe_kunit, test_stacktrace_on_nested_kretprobe)
{
	/* the kernel's suite runs test_stacktrace_on_kretprobe first: it
	 * records the return addresses this case relies on */
	test_stacktrace_on_kretprobe();
	test_stacktrace_on_nested_kretprobe();
	cr_expect_eq(handler_errors, 0);
	cr_expect_eq(st_calls, 2);
	cr_expect_eq(st_internal_calls, 1);
	cr_expect_neq(target_return_address[0], 0);
	cr_expect_neq(target_return_address[1], 0);
}

/* ====================================================== registration */

/* A function whose first instruction is known: "push %rbp" (1 byte),
 * then "mov %rsp,%rbp" at offset 1. */
__asm__(".text\n"
	".globl krp_asm_target\n"
	".type krp_asm_target, @function\n"
	"krp_asm_target:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size krp_asm_target, .-krp_asm_target\n");
int krp_asm_target(int x);

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs);

static _Atomic int ret_calls, entry_calls;

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&ret_calls, 1);
	return 0;
}

static int count_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&entry_calls, 1);
	return 0;
}

UKP_TARGET long krp_plain(long x)
{
	return x * 7 + 1;
}

static long (*volatile plain)(long) = krp_plain;

Test(kretprobe, errors)
{
	struct kretprobe r = { .handler = count_ret };
	kprobe_opcode_t *addr;

	cr_expect_eq(register_kretprobe(NULL), -EINVAL);

	r.kp.symbol_name = "krp_no_such_function";
	cr_expect_eq(register_kretprobe(&r), -ENOENT);

	/* On an instruction boundary, but not the entry: refused, and the
	 * struct is left as it was (the kernel checks the entry first). */
	memset(&r, 0, sizeof(r));
	r.handler = count_ret;
	r.kp.symbol_name = "krp_asm_target";
	r.kp.offset = 1;
	cr_expect_eq(register_kretprobe(&r), -EINVAL);
	cr_expect_null(r.kp.addr);
	cr_expect_eq(r.kp.flags, 0);

	/* Both addr and symbol_name */
	memset(&r, 0, sizeof(r));
	r.handler = count_ret;
	r.kp.symbol_name = "krp_plain";
	r.kp.addr = (kprobe_opcode_t *)krp_plain;
	cr_expect_eq(register_kretprobe(&r), -EINVAL);

	/* data_size */
	memset(&r, 0, sizeof(r));
	r.handler = count_ret;
	r.kp.symbol_name = "krp_plain";
	r.data_size = KRETPROBE_MAX_DATA_SIZE + 1;
	cr_expect_eq(register_kretprobe(&r), -E2BIG);
	cr_expect_null(r.kp.addr);
	r.data_size = KRETPROBE_MAX_DATA_SIZE;
	cr_expect_eq(register_kretprobe(&r), 0);
	/* twice */
	cr_expect_eq(register_kretprobe(&r), -EINVAL);
	cr_expect_eq(plain(2), 15);
	cr_expect_eq(ret_calls, 1);
	addr = r.kp.addr;
	unregister_kretprobe(&r);
	cr_expect_eq(r.kp.addr, addr, "unregistration keeps addr");
	cr_expect(r.kp.flags & KPROBE_FLAG_DISABLED);
	/* unregistering again is silent and clears addr */
	unregister_kretprobe(&r);
	cr_expect_null(r.kp.addr);
	unregister_kretprobe(NULL);
	unregister_kretprobes(NULL, 3);
	cr_expect_eq(register_kretprobes(NULL, 1), -EINVAL);
	cr_expect_eq(plain(2), 15);
	cr_expect_eq(ret_calls, 1);
}

Test(kretprobe, entry_after_endbr64_and_by_address)
{
	struct kretprobe r = { .handler = count_ret };
	kprobe_opcode_t *entry = (kprobe_opcode_t *)krp_plain;
	size_t skip = 0;

	if (entry[0] == 0xf3 && entry[1] == 0x0f && entry[2] == 0x1e && entry[3] == 0xfa)
		skip = 4;
	r.kp.addr = entry;
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(r.kp.addr, entry + skip, "the probe moves past endbr64");
	cr_expect(r.kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	cr_expect_eq(plain(1), 8);
	cr_expect_eq(ret_calls, 1);
	unregister_kretprobe(&r);
	cr_expect_eq(plain(1), 8);
	cr_expect_eq(ret_calls, 1);
}

static int user_pre(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

Test(kretprobe, defaults_and_overwritten_fields)
{
	struct kretprobe r = { .handler = count_ret, .kp.symbol_name = "krp_plain" };
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int expect = 2 * n > 10 ? (int)(2 * n) : 10;

	r.kp.pre_handler = user_pre;
	r.nmissed = 1234;
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(r.maxactive, expect);
	cr_expect_eq(r.nmissed, 0);
	cr_expect_neq(r.kp.pre_handler, user_pre);
	cr_expect_null(r.kp.post_handler);
	unregister_kretprobe(&r);
}

Test(kretprobe, list_shows_r)
{
	struct kretprobe r = { .handler = count_ret, .kp.symbol_name = "krp_plain" };
	struct kprobe k = { .symbol_name = "krp_plain", .pre_handler = user_pre };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(register_kretprobe(&r), 0);
	cr_assert_eq(register_kprobe(&k), 0);
	f = open_memstream(&text, &len);
	cr_assert_eq(kprobes_show_list(f), 0);
	fclose(f);
	/* newest child first: the kprobe, then the kretprobe */
	cr_expect(strstr(text, "  k  krp_plain+0x") != NULL, "%s", text);
	cr_expect(strstr(text, "  r  krp_plain+0x") != NULL, "%s", text);
	cr_expect(strstr(text, "  k  krp_plain") < strstr(text, "  r  krp_plain"), "%s", text);
	free(text);
	disable_kretprobe(&r);
	f = open_memstream(&text, &len);
	kprobes_show_list(f);
	fclose(f);
	cr_expect(strstr(text, "[DISABLED]") != NULL, "%s", text);
	free(text);
	unregister_kprobe(&k);
	unregister_kretprobe(&r);
}

Test(kretprobe, shadow_stack_refused)
{
	extern int ukp_shstk_force;
	struct kretprobe r = { .handler = count_ret, .kp.symbol_name = "krp_plain" };

	ukp_shstk_force = 1;
	cr_expect_eq(register_kretprobe(&r), -EOPNOTSUPP);
	cr_expect_null(r.kp.addr);
	ukp_shstk_force = 0;
	cr_expect_eq(register_kretprobe(&r), 0);
	cr_expect_eq(plain(0), 1);
	cr_expect_eq(ret_calls, 1);
	unregister_kretprobe(&r);
	ukp_shstk_force = -1;
}

static int busy_ret;

static int register_from_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	static struct kretprobe other = { .kp.symbol_name = "krp_asm_target" };

	busy_ret = register_kretprobe(&other);
	return 0;
}

Test(kretprobe, register_in_handler_is_busy)
{
	struct kretprobe r = { .handler = register_from_handler, .kp.symbol_name = "krp_plain" };

	cr_assert_eq(register_kretprobe(&r), 0);
	plain(1);
	unregister_kretprobe(&r);
	cr_expect_eq(busy_ret, -EBUSY);
}

Test(kretprobe, registered_disabled)
{
	struct kretprobe r = { .handler = count_ret, .entry_handler = count_entry,
			       .kp.symbol_name = "krp_plain", .kp.flags = KPROBE_FLAG_DISABLED };

	cr_assert_eq(register_kretprobe(&r), 0);
	plain(1);
	cr_expect_eq(ret_calls + entry_calls, 0);
	cr_assert_eq(enable_kretprobe(&r), 0);
	plain(1);
	cr_expect_eq(entry_calls, 1);
	cr_expect_eq(ret_calls, 1);
	unregister_kretprobe(&r);
}

/* =========================================== what the handler sees */

static unsigned long seen_sp, seen_ip, seen_ret, want_sp, want_ip, entry_ip, entry_arg;

UKP_TARGET long krp_regs_target(long x)
{
	/* with frame pointers: the stack pointer after the return is two
	 * words above the frame pointer */
	want_sp = (unsigned long)__builtin_frame_address(0) + 16;
	want_ip = (unsigned long)__builtin_return_address(0);
	return x + 100;
}

static long (*volatile regs_target)(long) = krp_regs_target;

static int regs_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	entry_ip = regs->ip;
	entry_arg = regs_get_kernel_argument(regs, 0);
	return 0;
}

static int regs_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	seen_sp = regs->sp;
	seen_ip = regs->ip;
	seen_ret = regs_return_value(regs);
	EXPECT_IN_HANDLER(ri->ret_addr == (kprobe_opcode_t *)regs->ip);
	EXPECT_IN_HANDLER(get_kretprobe_retaddr(ri) == regs->ip);
	EXPECT_IN_HANDLER(ri->task == (unsigned long)pthread_self());
	EXPECT_IN_HANDLER(!is_kretprobe_trampoline(regs->ip));
	return 0;
}

/* One call site for every call below. */
__attribute__((noinline)) static long call_regs_target(long x)
{
	long r = regs_target(x);

	__asm__ volatile("" : "+r"(r)); /* not a tail call */
	return r;
}

Test(kretprobe, handler_registers)
{
	struct kretprobe r = { .handler = regs_ret, .entry_handler = regs_entry,
			       .kp.symbol_name = "krp_regs_target" };
	unsigned long real_ip;

	/* the real return address, from a call without the probe */
	cr_expect_eq(call_regs_target(1), 101);
	real_ip = want_ip;
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(call_regs_target(5), 105);
	cr_expect(is_kretprobe_trampoline(want_ip), "the probed call's return was not hijacked");
	cr_expect_eq(seen_ret, 105);
	cr_expect_eq(seen_sp, want_sp);
	cr_expect_eq(seen_ip, real_ip);
	cr_expect_eq(entry_ip, (unsigned long)r.kp.addr + 1);
	cr_expect_eq(entry_arg, 5);
	cr_expect_eq(kprobe_running(), NULL);
	unregister_kretprobe(&r);
	cr_expect_eq(handler_errors, 0);
}

/* ------------------------------------- return values survive handlers */

struct two_longs {
	long a, b;
};
struct two_doubles {
	double x, y;
};

UKP_TARGET struct two_longs krp_ret_rax_rdx(long v)
{
	struct two_longs r = { v * 3, v * 5 };
	return r;
}

UKP_TARGET struct two_doubles krp_ret_xmm01(double v)
{
	struct two_doubles r = { v * 0.5, v * 0.25 };
	return r;
}

UKP_TARGET long double krp_ret_st0(long double v)
{
	return v / 3.0L;
}

UKP_TARGET long double _Complex krp_ret_st01(long double v)
{
	return v / 7.0L + (v / 11.0L) * 1.0iL;
}

UKP_TARGET int krp_ret_errno(int e)
{
	errno = e;
	return -1;
}

typedef float v8sf __attribute__((vector_size(32)));

UKP_TARGET __attribute__((target("avx"))) v8sf krp_ret_ymm0(float v)
{
	v8sf r = { v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6, v + 7 };
	return r;
}

UKP_TARGET double krp_fp_work(double x)
{
	return x * 1.5 + 0.25;
}

UKP_TARGET __attribute__((target("avx"))) static void clobber_avx(void)
{
	__asm__ volatile("vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
			 "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"
			 "vxorps %%ymm2, %%ymm2, %%ymm2" ::: "xmm0", "xmm1", "xmm2");
}

static bool have_avx;

/* lanes of krp_ret_ymm0's result that are wrong */
UKP_TARGET __attribute__((target("avx"))) static int check_ymm0(void)
{
	v8sf (*volatile f)(float) = krp_ret_ymm0;
	v8sf y = f(1.0f);
	int i, bad = 0;

	for (i = 0; i < 8; i++)
		bad += y[i] != 1.0f + (float)i;
	return bad;
}
static volatile long double ld_sink;

/* A handler that uses every kind of register state a C handler may. */
static int clobbering_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	char buf[512];
	volatile double d = krp_fp_work(3.0);
	long double ld = 1.0L;
	int i;

	for (i = 0; i < 6; i++)
		ld = ld * 1.25L + (long double)d;
	ld_sink = ld;
	memset(buf, 0x5a, sizeof(buf)); /* libc's vector memset */
	__asm__ volatile("xorps %%xmm0, %%xmm0\n\txorps %%xmm1, %%xmm1" ::: "xmm0", "xmm1");
	if (have_avx)
		clobber_avx();
	errno = 0;
	(void)buf[3];
	atomic_fetch_add(&ret_calls, 1);
	return 0;
}

static int change_ax(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	regs->ax = 4242;
	return 0;
}

Test(kretprobe, return_values_survive)
{
	static const char *const fns[] = { "krp_ret_rax_rdx", "krp_ret_xmm01", "krp_ret_st0",
					   "krp_ret_st01", "krp_ret_errno", "krp_ret_ymm0" };
	struct kretprobe rps[6];
	struct two_longs (*volatile f1)(long) = krp_ret_rax_rdx;
	struct two_doubles (*volatile f2)(double) = krp_ret_xmm01;
	long double (*volatile f3)(long double) = krp_ret_st0;
	long double _Complex (*volatile f4)(long double) = krp_ret_st01;
	int (*volatile f5)(int) = krp_ret_errno;
	int i, expected = 5;

	have_avx = __builtin_cpu_supports("avx");
	memset(rps, 0, sizeof(rps));
	for (i = 0; i < 6; i++) {
		rps[i].handler = clobbering_ret;
		rps[i].kp.symbol_name = fns[i];
		cr_assert_eq(register_kretprobe(&rps[i]), 0, "%s", fns[i]);
	}
	for (int round = 0; round < 3; round++) {
		struct two_longs l = f1(7);
		struct two_doubles d = f2(3.0);
		long double s = f3(10.0L);
		long double _Complex c = f4(77.0L);

		cr_expect_eq(l.a, 21);
		cr_expect_eq(l.b, 35);
		cr_expect_eq(d.x, 1.5);
		cr_expect_eq(d.y, 0.75);
		cr_expect_eq(s, 10.0L / 3.0L);
		cr_expect_eq(__real__ c, 77.0L / 7.0L);
		cr_expect_eq(__imag__ c, 77.0L / 11.0L);
		errno = 0;
		cr_expect_eq(f5(1234), -1);
		cr_expect_eq(errno, 1234, "errno changed across the return handler");
		if (have_avx) {
			cr_expect_eq(check_ymm0(), 0, "ymm0 lanes changed by the handler");
			expected = 6;
		}
	}
	cr_expect_eq(ret_calls, 3 * expected);
	for (i = 0; i < 6; i++)
		unregister_kretprobe(&rps[i]);
}

Test(kretprobe, handler_may_change_the_return_value)
{
	struct kretprobe r = { .handler = change_ax, .kp.symbol_name = "krp_plain" };

	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(plain(1), 4242);
	unregister_kretprobe(&r);
	cr_expect_eq(plain(1), 8);
}

/* ===================================== entry_handler and private data */

struct call_data {
	long arg;
	unsigned long magic;
	unsigned long task;
};

static _Atomic int data_mismatch, refused_returns;

static int data_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct call_data *cd = (struct call_data *)ri->data;
	long arg = (long)regs_get_kernel_argument(regs, 0);

	if (((uintptr_t)ri->data & 15) != 0)
		atomic_fetch_add(&data_mismatch, 1);
	cd->arg = arg;
	cd->magic = 0xfeedface;
	cd->task = (unsigned long)pthread_self();
	atomic_fetch_add(&entry_calls, 1);
	/* refuse the return probe for multiples of 3 */
	return arg % 3 == 0;
}

static int data_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct call_data *cd = (struct call_data *)ri->data;

	if (cd->magic != 0xfeedface || (long)regs_return_value(regs) != cd->arg * 7 + 1 ||
	    cd->task != ri->task || ri->task != (unsigned long)pthread_self() ||
	    get_kretprobe(ri) == NULL)
		atomic_fetch_add(&data_mismatch, 1);
	if (cd->arg % 3 == 0)
		atomic_fetch_add(&refused_returns, 1);
	cd->magic = 0;
	atomic_fetch_add(&ret_calls, 1);
	return 0;
}

Test(kretprobe, entry_handler_and_data)
{
	struct kretprobe r = { .handler = data_ret, .entry_handler = data_entry,
			       .data_size = sizeof(struct call_data),
			       .kp.symbol_name = "krp_plain" };
	long i;

	cr_assert_eq(register_kretprobe(&r), 0);
	for (i = 0; i < 30; i++)
		cr_expect_eq(plain(i), i * 7 + 1);
	unregister_kretprobe(&r);
	cr_expect_eq(entry_calls, 30);
	cr_expect_eq(ret_calls, 20, "entry_handler's refusals must cancel the return");
	cr_expect_eq(refused_returns, 0);
	cr_expect_eq(data_mismatch, 0);
	cr_expect_eq(r.nmissed, 0);
}

/* ================================= several kretprobes on one function */

static char order[32];
static _Atomic int norder;

#define ORDER_HANDLERS(X)                                                       \
	static int X##_entry(struct kretprobe_instance *ri, struct pt_regs *regs) \
	{                                                                       \
		order[atomic_fetch_add(&norder, 1)] = #X[0];                    \
		return 0;                                                       \
	}                                                                       \
	static int X##_ret(struct kretprobe_instance *ri, struct pt_regs *regs) \
	{                                                                       \
		EXPECT_IN_HANDLER(regs_return_value(regs) == 36);               \
		order[atomic_fetch_add(&norder, 1)] = #X[0] - 'A' + 'a';        \
		return 0;                                                       \
	}
ORDER_HANDLERS(A)
ORDER_HANDLERS(B)
ORDER_HANDLERS(C)

static int k_pre(struct kprobe *p, struct pt_regs *regs)
{
	order[atomic_fetch_add(&norder, 1)] = 'K';
	return 0;
}

Test(kretprobe, several_on_one_function)
{
	struct kretprobe a = { .handler = A_ret, .entry_handler = A_entry,
			       .kp.symbol_name = "krp_plain" };
	struct kretprobe b = { .handler = B_ret, .entry_handler = B_entry,
			       .kp.symbol_name = "krp_plain" };
	struct kretprobe c = { .handler = C_ret, .entry_handler = C_entry,
			       .kp.symbol_name = "krp_plain" };
	struct kprobe k = { .symbol_name = "krp_plain", .pre_handler = k_pre };
	struct kretprobe *all[3] = { &a, &b, &c };

	cr_assert_eq(register_kretprobes(all, 3), 0);
	cr_assert_eq(register_kprobe(&k), 0);
	cr_expect_eq(plain(5), 36);
	/* entry: newest first (K, C, B, A); return: oldest registered first */
	cr_expect_str_eq(order, "KCBAabc");
	/* one disabled: the others still fire */
	memset(order, 0, sizeof(order));
	norder = 0;
	cr_assert_eq(disable_kretprobe(&b), 0);
	cr_expect_eq(plain(5), 36);
	cr_expect_str_eq(order, "KCAac");
	unregister_kprobe(&k);
	unregister_kretprobes(all, 3);
	cr_expect_eq(handler_errors, 0);
}

/* ================================================== recursion */

static long (*volatile recurse)(long);

/* Recursion through a pointer: GCC turns direct accumulating recursion
 * into a loop. */
UKP_TARGET long krp_recurse(long n)
{
	if (n <= 0)
		return 0;
	return recurse(n - 1) + n;
}

static long (*volatile recurse)(long) = krp_recurse;
static _Atomic long last_returned_arg = -1;

static int rec_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(long *)ri->data = (long)regs_get_kernel_argument(regs, 0);
	atomic_fetch_add(&entry_calls, 1);
	return 0;
}

static int rec_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	long n = *(long *)ri->data;

	/* returns come innermost first, each with its own call's value */
	EXPECT_IN_HANDLER((long)regs_return_value(regs) == n * (n + 1) / 2);
	EXPECT_IN_HANDLER(last_returned_arg == n - 1 || (n == 0 && last_returned_arg == -1) ||
			  last_returned_arg == -2);
	last_returned_arg = n;
	atomic_fetch_add(&ret_calls, 1);
	return 0;
}

/*
 * recurse(depth) under a kretprobe with maxactive instances: the
 * outermost calls get one (at most 64 per thread), the inner ones are
 * missed; every return that has one sees its own call's value, innermost
 * first.
 */
static void recursion_case(int maxactive, long depth, unsigned long probed)
{
	struct kretprobe r = { .handler = rec_ret, .entry_handler = rec_entry,
			       .data_size = sizeof(long), .maxactive = maxactive,
			       .kp.symbol_name = "krp_recurse" };

	last_returned_arg = probed == (unsigned long)depth + 1 ? -1 : -2;
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(recurse(depth), depth * (depth + 1) / 2);
	cr_expect_eq(entry_calls, probed);
	cr_expect_eq(ret_calls, probed);
	cr_expect_eq(r.nmissed, depth + 1 - (long)probed);
	/* and everything is free again */
	last_returned_arg = -1;
	cr_expect_eq(recurse(3), 6);
	cr_expect_eq(ret_calls, probed + 4);
	unregister_kretprobe(&r);
	cr_expect_eq(handler_errors, 0);
}

Test(kretprobe, recursion_matches_each_call)
{
	recursion_case(40, 30, 31);
}

Test(kretprobe, deep_recursion_is_capped_per_thread)
{
	/* 101 nested calls: the outermost 64 get an instance */
	recursion_case(500, 100, 64);
}

Test(kretprobe, maxactive_limits_recursion)
{
	recursion_case(5, 20, 5);
}

/* ================================================= threads */

static pthread_barrier_t barrier;

UKP_TARGET long krp_wait_in(long x)
{
	pthread_barrier_wait(&barrier); /* everybody inside */
	pthread_barrier_wait(&barrier); /* the test counted */
	return x + 1;
}

static long (*volatile wait_in)(long) = krp_wait_in;

static void *waiter(void *arg)
{
	long x = (long)(intptr_t)arg;

	return (void *)(intptr_t)(wait_in(x) != x + 1);
}

Test(kretprobe, maxactive_and_nmissed_with_threads, .timeout = 60)
{
	enum { NT = 12, MAXA = 4 };
	struct kretprobe r = { .handler = count_ret, .entry_handler = count_entry,
			       .maxactive = MAXA, .kp.symbol_name = "krp_wait_in" };
	pthread_t th[NT];
	int round, i;

	cr_assert_eq(register_kretprobe(&r), 0);
	for (round = 1; round <= 3; round++) {
		pthread_barrier_init(&barrier, NULL, NT + 1);
		for (i = 0; i < NT; i++)
			pthread_create(&th[i], NULL, waiter, (void *)(intptr_t)i);
		pthread_barrier_wait(&barrier);
		cr_expect_eq(entry_calls, round * MAXA);
		cr_expect_eq(r.nmissed, round * (NT - MAXA));
		pthread_barrier_wait(&barrier);
		for (i = 0; i < NT; i++) {
			void *bad;

			pthread_join(th[i], &bad);
			cr_expect_null(bad);
		}
		cr_expect_eq(ret_calls, round * MAXA);
		pthread_barrier_destroy(&barrier);
	}
	unregister_kretprobe(&r);
}

static void *hammer(void *arg)
{
	long base = (long)(intptr_t)arg * 1000000, i, bad = 0;

	for (i = 0; i < 3000; i++)
		bad += plain(base + i) != (base + i) * 7 + 1;
	return (void *)(intptr_t)bad;
}

Test(kretprobe, threads_match_their_own_calls, .timeout = 120)
{
	enum { NT = 8 };
	struct kretprobe r = { .handler = data_ret, .entry_handler = data_entry,
			       .data_size = sizeof(struct call_data), .maxactive = 64,
			       .kp.symbol_name = "krp_plain" };
	pthread_t th[NT];
	int i;

	cr_assert_eq(register_kretprobe(&r), 0);
	for (i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, hammer, (void *)(intptr_t)(i + 1));
	for (i = 0; i < NT; i++) {
		void *bad;

		pthread_join(th[i], &bad);
		cr_expect_null(bad);
	}
	unregister_kretprobe(&r);
	cr_expect_eq(r.nmissed, 0);
	cr_expect_eq(entry_calls, NT * 3000);
	/* every third call's return was refused by the entry handler */
	cr_expect_eq(ret_calls, entry_calls - NT * 1000);
	cr_expect_eq(data_mismatch, 0);
	cr_expect_eq(refused_returns, 0);
}

/* ===================================== disable, unregister while live */

static sem_t sem_in, sem_out;

UKP_TARGET long krp_blocking(long x)
{
	sem_post(&sem_in);
	sem_wait(&sem_out);
	return x * 2;
}

static long (*volatile blocking)(long) = krp_blocking;

static void *blocker(void *arg)
{
	return (void *)(intptr_t)blocking((long)(intptr_t)arg);
}

Test(kretprobe, disable_keeps_pending_returns)
{
	struct kretprobe r = { .handler = count_ret, .entry_handler = count_entry,
			       .kp.symbol_name = "krp_blocking" };
	pthread_t th;
	void *res;

	sem_init(&sem_in, 0, 0);
	sem_init(&sem_out, 0, 0);
	cr_assert_eq(register_kretprobe(&r), 0);
	pthread_create(&th, NULL, blocker, (void *)21);
	sem_wait(&sem_in);
	cr_assert_eq(disable_kretprobe(&r), 0);
	sem_post(&sem_out);
	pthread_join(th, &res);
	cr_expect_eq((long)(intptr_t)res, 42);
	cr_expect_eq(entry_calls, 1);
	cr_expect_eq(ret_calls, 1, "a pending return still runs its handler");
	/* disabled: no new instance */
	sem_post(&sem_out);
	cr_expect_eq(blocking(1), 2);
	cr_expect_eq(entry_calls, 1);
	cr_assert_eq(enable_kretprobe(&r), 0);
	sem_post(&sem_out);
	cr_expect_eq(blocking(1), 2);
	cr_expect_eq(ret_calls, 2);
	unregister_kretprobe(&r);
}

Test(kretprobe, unregister_while_calls_are_pending)
{
	enum { NT = 4 };
	struct kretprobe r = { .handler = count_ret, .entry_handler = count_entry,
			       .kp.symbol_name = "krp_blocking" };
	unsigned long holders0 = ukp_krp_holders_allocated();
	pthread_t th[NT];
	int i;

	sem_init(&sem_in, 0, 0);
	sem_init(&sem_out, 0, 0);
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(ukp_krp_holders_allocated(), holders0 + 1);
	for (i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, blocker, (void *)(intptr_t)(i + 10));
	for (i = 0; i < NT; i++)
		sem_wait(&sem_in);
	cr_expect_eq(entry_calls, NT);
	unregister_kretprobe(&r);
	/* the instances are still out: the memory stays */
	cr_expect_eq(ukp_krp_holders_allocated(), holders0 + 1);
	memset(&r, 0xa5, sizeof(r)); /* the caller may reuse the struct */
	for (i = 0; i < NT; i++)
		sem_post(&sem_out);
	for (i = 0; i < NT; i++) {
		void *res;

		pthread_join(th[i], &res);
		cr_expect_eq((long)(intptr_t)res, 2 * (i + 10));
	}
	cr_expect_eq(ret_calls, 0, "handlers of an unregistered kretprobe must not run");
	ukp_krp_reap();
	cr_expect_eq(ukp_krp_holders_allocated(), holders0, "holder not freed");
}

/* ======================================================== fork */

static int fork_child_calls;

static int fork_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	fork_child_calls++;
	EXPECT_IN_HANDLER((long)regs_return_value(regs) == 77 ||
			  (long)regs_return_value(regs) == 88);
	return 0;
}

UKP_TARGET long krp_forks(long x)
{
	pid_t pid = fork();

	if (pid == 0)
		return 77;
	waitpid(pid, (int *)(intptr_t)x, 0);
	return 88;
}

static long (*volatile forks)(long) = krp_forks;

Test(kretprobe, fork_with_pending_return)
{
	struct kretprobe r = { .handler = fork_ret, .kp.symbol_name = "krp_forks" };
	int status = -1;
	long v;

	cr_assert_eq(register_kretprobe(&r), 0);
	v = forks((long)(intptr_t)&status);
	if (v == 77) {
		/* the child: its pending return worked, and the handler ran */
		_exit(fork_child_calls == 1 && handler_errors == 0 ? 0 : 1);
	}
	cr_expect_eq(v, 88);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	cr_expect_eq(fork_child_calls, 1);
	unregister_kretprobe(&r);
}

Test(kretprobe, fork_reclaims_other_threads_instances)
{
	struct kretprobe r = { .handler = count_ret, .entry_handler = count_entry,
			       .maxactive = 1, .kp.symbol_name = "krp_blocking" };
	pthread_t th;
	pid_t pid;
	int status;

	sem_init(&sem_in, 0, 0);
	sem_init(&sem_out, 0, 0);
	cr_assert_eq(register_kretprobe(&r), 0);
	pthread_create(&th, NULL, blocker, (void *)3);
	sem_wait(&sem_in); /* the only instance is out, in that thread */
	pid = fork();
	if (pid == 0) {
		/* That thread does not exist here: its instance comes back. */
		sem_init(&sem_out, 0, 1);
		sem_init(&sem_in, 0, 0);
		long v = blocking(5);

		_exit(v == 10 && ret_calls == 1 && r.nmissed == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	sem_post(&sem_out);
	pthread_join(th, NULL);
	cr_expect_eq(ret_calls, 1);
	unregister_kretprobe(&r);
}

/* ============================================ tail calls, helpers */

UKP_TARGET long krp_tail_callee(long x)
{
	return x + 1000;
}

/* A function that tail-jumps into another probed function: both
 * kretprobes share one return slot. */
__asm__(".text\n"
	".globl krp_tail_caller\n"
	".type krp_tail_caller, @function\n"
	"krp_tail_caller:\n"
	"	add $1, %rdi\n"
	"	jmp krp_tail_callee\n"
	".size krp_tail_caller, .-krp_tail_caller\n");
long krp_tail_caller(long x);

static char tail_order[8];
static int ntail;

static int tail_ret_caller(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	tail_order[ntail++] = 'r';
	EXPECT_IN_HANDLER(regs_return_value(regs) == 1006);
	return 0;
}

static int tail_ret_callee(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	tail_order[ntail++] = 'e';
	EXPECT_IN_HANDLER(regs_return_value(regs) == 1006);
	return 0;
}

Test(kretprobe, tail_call_shares_the_return)
{
	struct kretprobe a = { .handler = tail_ret_caller, .kp.symbol_name = "krp_tail_caller" };
	struct kretprobe b = { .handler = tail_ret_callee, .kp.symbol_name = "krp_tail_callee" };
	long (*volatile f)(long) = krp_tail_caller;

	cr_assert_eq(register_kretprobe(&a), 0);
	cr_assert_eq(register_kretprobe(&b), 0);
	cr_expect_eq(f(5), 1006);
	/* the callee's frame is the newer one: its handler first */
	cr_expect_str_eq(tail_order, "er");
	cr_expect_eq(f(5), 1006);
	cr_expect_str_eq(tail_order, "erer");
	unregister_kretprobe(&a);
	unregister_kretprobe(&b);
	cr_expect_eq(handler_errors, 0);
}

static unsigned long inside_ra, inside_real, other_real, handler_real;
static void *inside_slot;
static pthread_t inside_thread;

UKP_TARGET long krp_look_at_my_slot(long x)
{
	void *cur = NULL;

	inside_ra = (unsigned long)__builtin_return_address(0);
	inside_slot = (char *)__builtin_frame_address(0) + 8;
	inside_real = kretprobe_find_ret_addr(0, inside_slot, &cur);
	if (x) {
		sem_post(&sem_in);
		sem_wait(&sem_out);
	}
	return x;
}

static int find_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	handler_real = (unsigned long)ri->ret_addr;
	return 0;
}

static void *look_thread(void *arg)
{
	long (*volatile f)(long) = krp_look_at_my_slot;

	return (void *)(intptr_t)f(1);
}

Test(kretprobe, unwinder_helpers)
{
	struct kretprobe r = { .handler = find_ret, .kp.symbol_name = "krp_look_at_my_slot" };
	long (*volatile f)(long) = krp_look_at_my_slot;

	cr_assert_eq(register_kretprobe(&r), 0);
	cr_expect_eq(f(0), 0);
	cr_expect(is_kretprobe_trampoline(inside_ra), "the slot holds the trampoline");
	cr_expect_neq(inside_real, 0);
	cr_expect_eq(inside_real, handler_real);
	cr_expect(!is_kretprobe_trampoline(handler_real));
	cr_expect_eq(kretprobe_find_ret_addr(0, inside_slot, NULL), 0, "gone after the return");

	/* another thread, stopped inside */
	sem_init(&sem_in, 0, 0);
	sem_init(&sem_out, 0, 0);
	pthread_create(&inside_thread, NULL, look_thread, NULL);
	sem_wait(&sem_in);
	other_real = kretprobe_find_ret_addr((unsigned long)inside_thread, inside_slot, NULL);
	cr_expect_eq(other_real, inside_real);
	sem_post(&sem_out);
	pthread_join(inside_thread, NULL);
	cr_expect_eq(handler_real, other_real);
	unregister_kretprobe(&r);
}

/* ============================================ faults in handlers */

static volatile int *volatile bad_pointer = (int *)16;

static int faulting_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&ret_calls, 1);
	*bad_pointer = 1;
	return 0;
}

static int faulting_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&entry_calls, 1);
	*bad_pointer = 1;
	return 0;
}

Test(kretprobe, faulting_handlers_are_abandoned)
{
	struct kretprobe r = { .handler = faulting_ret, .kp.symbol_name = "krp_plain" };
	struct kretprobe e = { .handler = count_ret, .entry_handler = faulting_entry,
			       .kp.symbol_name = "krp_regs_target" };
	unsigned long faults0 = kprobes_handler_faults();
	sigset_t before, after;

	sigemptyset(&before);
	sigaddset(&before, SIGUSR2);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_assert_eq(register_kretprobe(&e), 0);
	cr_expect_eq(plain(3), 22);
	cr_expect_eq(plain(4), 29);
	cr_expect_eq(ret_calls, 2);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	cr_expect(sigismember(&after, SIGUSR2) && !sigismember(&after, SIGUSR1) &&
			  !sigismember(&after, SIGALRM),
		  "signal mask not restored after a faulting return handler");
	cr_expect_eq(r.kp.nmissed, 2);
	/* a faulting entry handler cancels that call's return probe */
	cr_expect_eq(regs_target(1), 101);
	cr_expect_eq(entry_calls, 1);
	cr_expect_eq(ret_calls, 2);
	cr_expect_eq(kprobes_handler_faults() - faults0, 3);
	cr_expect_eq(kprobe_running(), NULL);
	unregister_kretprobe(&r);
	unregister_kretprobe(&e);
}

static int kp_hits;

static int counting_pre(struct kprobe *p, struct pt_regs *regs)
{
	kp_hits++;
	return 0;
}

/*
 * A return handler at the outer level that may run with the vector state
 * as it is takes the lean call (ukp_call_handler_outer): proven
 * vector-free when the state is left live, or any handler when the
 * trampoline saved it. Its fault is abandoned like any other, and the
 * thread's probe state is as before: no probe running, not in a handler
 * (registration is allowed), the status clear (the next probe hit runs
 * its handler, the next return its own).
 */
extern uint32_t ukp_vec_lazy;

static _Atomic int lean_calls;

static int lean_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	int n = atomic_fetch_add(&lean_calls, 1);

	EXPECT_IN_HANDLER(kprobe_running() == &get_kretprobe(ri)->kp);
	if (n == 0)
		*bad_pointer = 1; /* the first one faults */
	return 0;
}

Test(kretprobe, lean_outer_return_handler_fault_restores_state)
{
	struct kretprobe r = { .handler = lean_ret, .kp.symbol_name = "krp_plain" };
	struct kprobe k = { .symbol_name = "krp_regs_target", .pre_handler = counting_pre };
	unsigned long faults0 = kprobes_handler_faults();

	if (ukp_vec_lazy)
		cr_assert(ukp_vec_free_locking((const void *)lean_ret),
			  "the handler must take the lean call");
	cr_assert_eq(register_kretprobe(&r), 0);
	cr_assert_eq(register_kprobe(&k), 0);
	kp_hits = 0;
	cr_expect_eq(plain(3), 22);
	cr_expect_eq(lean_calls, 1);
	cr_expect_eq(kprobes_handler_faults() - faults0, 1);
	cr_expect_eq(r.kp.nmissed, 1);
	cr_expect_eq(kprobe_running(), NULL);
	cr_expect(!ukp_in_probe_context());
	/* the status is clear: hits and returns run their handlers */
	cr_expect_eq(regs_target(1), 101);
	cr_expect_eq(kp_hits, 1);
	cr_expect_eq(k.nmissed, 0);
	cr_expect_eq(plain(4), 29);
	cr_expect_eq(lean_calls, 2);
	cr_expect_eq(r.kp.nmissed, 1);
	unregister_kprobe(&k);
	unregister_kretprobe(&r);
	cr_expect_eq(handler_errors, 0);
}

static int calls_probed(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&ret_calls, 1);
	EXPECT_IN_HANDLER(regs_target(2) == 102);
	return 0;
}

Test(kretprobe, probe_hits_in_return_handlers_are_missed)
{
	struct kretprobe r = { .handler = calls_probed, .kp.symbol_name = "krp_plain" };
	struct kprobe k = { .symbol_name = "krp_regs_target", .pre_handler = counting_pre };

	cr_assert_eq(register_kretprobe(&r), 0);
	cr_assert_eq(register_kprobe(&k), 0);
	cr_expect_eq(plain(1), 8);
	cr_expect_eq(ret_calls, 1);
	cr_expect_eq(kp_hits, 0);
	cr_expect_eq(k.nmissed, 1);
	cr_expect_eq(regs_target(1), 101);
	cr_expect_eq(kp_hits, 1);
	unregister_kprobe(&k);
	unregister_kretprobe(&r);
	cr_expect_eq(handler_errors, 0);
}

/* ============================ every function of libz.so.1, for real */


struct zfn {
	struct kretprobe rp;
	struct kprobe kp;
	char *name;
	uintptr_t start;
	_Atomic unsigned long entries, returns, hits;
	int err;
};

static struct zfn *zfns;
static size_t nzfns;

static void collect_zfn(const struct ukp_symres *sym, void *arg)
{
	struct zfn *z;

	if (!sym->name || !sym->size)
		return;
	zfns = realloc(zfns, (nzfns + 1) * sizeof(*zfns));
	z = &zfns[nzfns++];
	memset(z, 0, sizeof(*z));
	z->name = strdup(sym->name);
	z->start = sym->start;
}

static int z_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct zfn *z = (struct zfn *)get_kretprobe(ri);

	atomic_fetch_add_explicit(&z->entries, 1, memory_order_relaxed);
	*(uintptr_t *)ri->data = regs->sp;
	return 0;
}

static int z_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct zfn *z = (struct zfn *)get_kretprobe(ri);

	/* the stack pointer after the return is one word above the entry's */
	if (regs->sp != *(uintptr_t *)ri->data + 8)
		__atomic_fetch_add(&handler_errors, 1, __ATOMIC_RELAXED);
	atomic_fetch_add_explicit(&z->returns, 1, memory_order_relaxed);
	return 0;
}

static int z_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct zfn *z = (struct zfn *)((char *)p - offsetof(struct zfn, kp));

	atomic_fetch_add_explicit(&z->hits, 1, memory_order_relaxed);
	return 0;
}

/* gzip file functions on a memfd: write, read back, compare. */
static uint64_t gz_round_trip(const unsigned char *src, size_t len)
{
	char line[128], buf[4096];
	uint64_t digest = 0;
	size_t got = 0;
	gzFile gz;
	int fd, n;

	fd = memfd_create("krp-gz", 0);
	cr_assert_geq(fd, 0);
	gz = gzdopen(dup(fd), "wb9");
	cr_assert_not_null(gz);
	gzbuffer(gz, 8192);
	cr_assert_eq(gzwrite(gz, src, (unsigned)len), (int)len);
	gzprintf(gz, "line %d of %s\n", 42, "the gz stream");
	gzputs(gz, "second line\n");
	gzputc(gz, 'x');
	gzsetparams(gz, 1, Z_DEFAULT_STRATEGY);
	gzwrite(gz, src, 1000);
	gzflush(gz, Z_SYNC_FLUSH);
	cr_assert_eq(gzclose(gz), Z_OK);
	lseek(fd, 0, SEEK_SET);
	gz = gzdopen(dup(fd), "rb");
	cr_assert_not_null(gz);
	while (got < len && (n = gzread(gz, buf, sizeof(buf) < len - got ? sizeof(buf) : (unsigned)(len - got))) > 0) {
		cr_assert_eq(memcmp(buf, src + got, (size_t)n), 0);
		got += (size_t)n;
	}
	cr_assert_eq(got, len);
	cr_assert_not_null(gzgets(gz, line, sizeof(line)));
	cr_assert_str_eq(line, "line 42 of the gz stream\n");
	cr_assert_not_null(gzgets(gz, line, sizeof(line)));
	n = gzgetc(gz);
	cr_assert_eq(n, 'x');
	gzungetc(n, gz);
	cr_assert_eq(gzgetc(gz), 'x');
	digest = (uint64_t)gztell(gz) ^ ((uint64_t)gzeof(gz) << 40);
	gzclose(gz);
	close(fd);
	return digest;
}

/* A real zlib workload; returns a digest of everything it produced. */
static uint64_t zlib_workload(void)
{
	static unsigned char src[96 * 1024], comp[128 * 1024], back[96 * 1024];
	uint64_t digest = 1469598103934665603ull;
	size_t i;
	int level;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)("return probes in user space "[i % 28] + (i >> 12) * 3 +
					 ((i * 2654435761u) >> 29));
	for (level = 1; level <= 9; level += 4) {
		uLongf clen = sizeof(comp), blen = sizeof(back);

		cr_assert_eq(compress2(comp, &clen, src, sizeof(src), level), Z_OK);
		cr_assert_eq(uncompress(back, &blen, comp, clen), Z_OK);
		cr_assert_eq(blen, sizeof(src));
		cr_assert_eq(memcmp(back, src, blen), 0);
		for (i = 0; i < clen; i++)
			digest = (digest ^ comp[i]) * 1099511628211ull;
	}
	/* streaming, small buffers, a raw deflate and a gzip stream */
	for (int wbits = -15; wbits <= 31; wbits += 46) {
		z_stream d, f;
		unsigned char out[512];
		size_t produced = 0;

		memset(&d, 0, sizeof(d));
		cr_assert_eq(deflateInit2(&d, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
		d.next_in = src;
		d.avail_in = sizeof(src);
		do {
			d.next_out = comp + produced;
			d.avail_out = sizeof(out);
			cr_assert_neq(deflate(&d, Z_FINISH), Z_STREAM_ERROR);
			produced = d.total_out;
		} while (d.avail_out == 0);
		deflateEnd(&d);
		memset(&f, 0, sizeof(f));
		cr_assert_eq(inflateInit2(&f, wbits), Z_OK);
		f.next_in = comp;
		f.avail_in = (uInt)produced;
		f.next_out = back;
		f.avail_out = 700;
		while (inflate(&f, Z_NO_FLUSH) == Z_OK) {
			f.avail_out = 700;
			if (f.total_out >= sizeof(back))
				break;
		}
		cr_assert_eq(f.total_out, sizeof(src));
		inflateEnd(&f);
		cr_assert_eq(memcmp(back, src, sizeof(src)), 0);
		for (i = 0; i < produced; i++)
			digest = (digest ^ comp[i]) * 1099511628211ull;
	}
	digest ^= crc32(0, src, sizeof(src));
	digest ^= (uint64_t)adler32(1, src, sizeof(src)) << 32;
	digest ^= crc32_combine(crc32(0, src, 1000), crc32(0, src + 1000, 2000), 2000);
	digest ^= compressBound(sizeof(src));
	digest = (digest * 31) ^ gz_round_trip(src, sizeof(src) / 4);
	return digest;
}

Test(kretprobe, every_function_of_libz, .timeout = 300)
{
	uint64_t ref, probed, after;
	size_t i, registered = 0, refused = 0, hit_fns = 0;
	unsigned long entries = 0;

	ref = zlib_workload();
	cr_assert_eq(ukp_lock_for_show(), 0);
	ukp_for_each_symbol("libz.so.1", collect_zfn, NULL);
	ukp_unlock_for_show();
	cr_assert_gt(nzfns, 50, "only %zu functions in libz.so.1", nzfns);

	/* The reference counts: a plain kprobe on every entry. */
	for (i = 0; i < nzfns; i++) {
		zfns[i].kp.addr = (kprobe_opcode_t *)zfns[i].start;
		zfns[i].kp.pre_handler = z_pre;
		zfns[i].err = register_kprobe(&zfns[i].kp);
	}
	cr_expect_eq(zlib_workload(), ref);
	for (i = 0; i < nzfns; i++)
		if (!zfns[i].err)
			unregister_kprobe(&zfns[i].kp);

	/* A kretprobe on every entry. */
	for (i = 0; i < nzfns; i++) {
		struct zfn *z = &zfns[i];

		z->rp.kp.addr = (kprobe_opcode_t *)z->start;
		z->rp.handler = z_ret;
		z->rp.entry_handler = z_entry;
		z->rp.data_size = sizeof(uintptr_t);
		z->rp.maxactive = 16;
		z->err = register_kretprobe(&z->rp);
		if (z->err) {
			refused++;
			fprintf(stderr, "libz.so.1: %s refused: %d\n", z->name, z->err);
		} else {
			registered++;
		}
	}
	cr_expect_leq(refused * 20, nzfns, "more than 5%% of libz's functions refused");
	probed = zlib_workload();
	cr_expect_eq(probed, ref, "the workload's output changed under kretprobes");
	for (i = 0; i < nzfns; i++) {
		struct zfn *z = &zfns[i];

		if (z->err)
			continue;
		cr_expect_eq(z->rp.nmissed, 0, "%s: %d missed", z->name, z->rp.nmissed);
		cr_expect_eq(z->entries, z->returns, "%s: %lu entries, %lu returns", z->name,
			     z->entries, z->returns);
		cr_expect_eq(z->entries, z->hits, "%s: %lu entries, %lu kprobe hits", z->name,
			     z->entries, z->hits);
		entries += z->entries;
		hit_fns += z->entries != 0;
	}
	fprintf(stderr, "libz.so.1: %zu kretprobes, %lu calls in %zu functions\n", registered,
		entries, hit_fns);
	cr_expect_geq(hit_fns, 30);
	cr_expect_eq(handler_errors, 0);
	for (i = 0; i < nzfns; i++)
		if (!zfns[i].err)
			unregister_kretprobe(&zfns[i].rp);
	after = zlib_workload();
	cr_expect_eq(after, ref);
	for (i = 0; i < nzfns; i++)
		cr_expect_eq(zfns[i].entries, zfns[i].returns);
}

/* The global knob stops new instances, not pending returns (§5.5). */
Test(kretprobe, global_disarm_keeps_pending_returns)
{
	struct kretprobe r = { .handler = count_ret, .entry_handler = count_entry,
			       .kp.symbol_name = "krp_blocking" };
	pthread_t th;
	void *res;

	sem_init(&sem_in, 0, 0);
	sem_init(&sem_out, 0, 0);
	cr_assert_eq(register_kretprobe(&r), 0);
	pthread_create(&th, NULL, blocker, (void *)4);
	sem_wait(&sem_in);
	cr_assert_eq(kprobes_set_enabled(false), 0);
	sem_post(&sem_out);
	pthread_join(th, &res);
	cr_expect_eq((long)(intptr_t)res, 8);
	cr_expect_eq(ret_calls, 1);
	sem_post(&sem_out);
	cr_expect_eq(blocking(2), 4);
	cr_expect_eq(entry_calls, 1);
	cr_assert_eq(kprobes_set_enabled(true), 0);
	sem_post(&sem_out);
	cr_expect_eq(blocking(2), 4);
	cr_expect_eq(entry_calls, 2);
	cr_expect_eq(ret_calls, 2);
	unregister_kretprobe(&r);
}
