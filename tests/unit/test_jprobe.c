/* SPDX-License-Identifier: MIT */
/*
 * Jprobes (kprobes-2.6 sections 1.2, 4.2 and 9; kernel-behaviour.md §13).
 *
 *  jprobe: the handler mirrors the probed function's arguments (six in
 *    registers, ten with four on the stack, a struct passed by value,
 *    eight doubles in xmm0-7) and the function then runs on the values it
 *    was called with although the handler wrote over its copies;
 *    coexistence with a kprobe and a kretprobe (handler order); one jprobe
 *    per function (-EEXIST); registration errors and register_jprobes()
 *    rollback; disable/enable; the list's "j"; real library functions
 *    (zlib's crc32 and deflateInit2_, libc's qsort); threads; a handler
 *    that returns without jprobe_return(); a handler that faults; a hit
 *    inside a handler; signals held back during a handler; unregistering
 *    while a handler runs.
 *
 * Handlers run on the probed thread, outside any signal handler: they
 * record, the tests assert afterwards. Built for x86-64 and AArch64 (the
 * few differences behind #if; the "six in registers" counts are
 * x86-64's: AArch64 passes eight, test_a64_jprobe.c has its own cases).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "ukprobes.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h" /* arch.h: ukp_jprobe_handler_ret */
#include "ukp_test.h"

static int handler_errors;
#define EXPECT_IN_HANDLER(cond)                                                \
	do {                                                                   \
		if (!(cond))                                                   \
			__atomic_fetch_add(&handler_errors, 1, __ATOMIC_RELAXED); \
	} while (0)

static char *capture_list(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(kprobes_show_list(f), 0);
	fclose(f);
	return buf;
}

/* Writes through a volatile pointer: the compiler must store into the
 * argument's home (its stack slot for a stack argument). */
#define SCRIBBLE(var, val) (*(volatile __typeof__(var) *)&(var) = (val))

/* ================================================ six register arguments */

UKP_TARGET long jp_six(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

static long seen6[6];
static int six_calls;
static struct kprobe *six_running;
static void *six_ret_addr;
static uintptr_t six_frame;

static long j_six(long a, long b, long c, long d, long e, long f)
{
	seen6[0] = a, seen6[1] = b, seen6[2] = c;
	seen6[3] = d, seen6[4] = e, seen6[5] = f;
	six_calls++;
	six_running = kprobe_running();
	six_ret_addr = __builtin_return_address(0);
	/* with frame pointers: the entry's sp - 16, aligned as for a call */
	six_frame = (uintptr_t)__builtin_frame_address(0);
	/* the registers are the handler's: the function must not see this */
	SCRIBBLE(a, -1);
	SCRIBBLE(f, -1);
	jprobe_return();
	return 0;
}

Test(jprobe, six_register_arguments)
{
	struct jprobe jp = { .kp.symbol_name = "jp_six", .entry = JPROBE_ENTRY(j_six) };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect(jp.kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	cr_expect_eq(jp_six(1, 2, 3, 4, 5, 6), 1 + 4 + 9 + 16 + 25 + 36);
	cr_expect_eq(six_calls, 1);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(seen6[i], i + 1, "argument %d: %ld", i, seen6[i]);
	cr_expect_eq(six_running, &jp.kp, "kprobe_running() in the handler");
	cr_expect_eq(six_ret_addr, (void *)ukp_jprobe_handler_ret,
		     "the handler returns into the library's stub");
	cr_expect_eq(six_frame & 15, 0, "the handler's stack is aligned as at a call: %#lx",
		     (unsigned long)six_frame);
	cr_expect_null(kprobe_running());
	cr_expect_eq(jp.kp.nmissed, 0);
	unregister_jprobe(&jp);
	cr_expect_eq(jp_six(1, 1, 1, 1, 1, 1), 21);
	cr_expect_eq(six_calls, 1, "no handler after unregister");
}

/* ================================== ten arguments: four on the stack */

UKP_TARGET long jp_ten(long a, long b, long c, long d, long e, long f, long g, long h, long i,
		       long j)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}

static long seen10[10];

static long j_ten(long a, long b, long c, long d, long e, long f, long g, long h, long i,
		  long j)
{
	seen10[0] = a, seen10[1] = b, seen10[2] = c, seen10[3] = d, seen10[4] = e;
	seen10[5] = f, seen10[6] = g, seen10[7] = h, seen10[8] = i, seen10[9] = j;
	/* the callee owns its stack arguments: the handler writes over its copy */
	SCRIBBLE(g, 0);
	SCRIBBLE(h, 0);
	SCRIBBLE(i, 0);
	SCRIBBLE(j, 0);
	SCRIBBLE(a, 0);
	jprobe_return();
	return 0;
}

static long ten_expected(void)
{
	long s = 0;

	for (long k = 1; k <= 10; k++)
		s += k * (100 + k);
	return s;
}

Test(jprobe, stack_arguments_seen_and_restored)
{
	struct jprobe jp = { .kp.symbol_name = "jp_ten", .entry = j_ten };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_ten(101, 102, 103, 104, 105, 106, 107, 108, 109, 110), ten_expected());
	for (int k = 0; k < 10; k++)
		cr_expect_eq(seen10[k], 101 + k, "argument %d: %ld", k, seen10[k]);
	/* again: the state of the first hit is gone */
	memset(seen10, 0, sizeof(seen10));
	cr_expect_eq(jp_ten(101, 102, 103, 104, 105, 106, 107, 108, 109, 110), ten_expected());
	cr_expect_eq(seen10[9], 110);
	unregister_jprobe(&jp);
}

/* ========================================== a struct passed by value */

struct five {
	long v[5]; /* 40 bytes: x86-64 passes it on the stack, AArch64 a
		    * pointer to a copy the caller made */
};

UKP_TARGET long jp_struct(int k, struct five s, int m)
{
	return k * 1000000 + s.v[0] + 10 * s.v[1] + 100 * s.v[2] + 1000 * s.v[3] +
	       10000 * s.v[4] + m * 100000;
}

static struct five seen_five;
static int seen_k, seen_m;

static long j_struct(int k, struct five s, int m)
{
	seen_k = k;
	seen_m = m;
	seen_five = s;
#if defined(__x86_64__)
	/* the handler's copy of the stack; on AArch64 the caller's copy,
	 * which the probed function reads next (doc/jprobes.md) */
	for (int i = 0; i < 5; i++)
		SCRIBBLE(s.v[i], -7);
#endif
	jprobe_return();
	return 0;
}

Test(jprobe, struct_by_value)
{
	struct jprobe jp = { .kp.symbol_name = "jp_struct", .entry = j_struct };
	struct five s = { { 1, 2, 3, 4, 5 } };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_struct(3, s, 4), 3000000 + 1 + 20 + 300 + 4000 + 50000 + 400000);
	cr_expect_eq(seen_k, 3);
	cr_expect_eq(seen_m, 4);
	for (int i = 0; i < 5; i++)
		cr_expect_eq(seen_five.v[i], i + 1);
	unregister_jprobe(&jp);
}

/* ==================================== floating point: xmm0-7 arguments */

UKP_TARGET double jp_doubles(double a, double b, double c, double d, double e, double f,
			     double g, double h)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

static double seen_d[8];

static double j_doubles(double a, double b, double c, double d, double e, double f, double g,
			double h)
{
	seen_d[0] = a, seen_d[1] = b, seen_d[2] = c, seen_d[3] = d;
	seen_d[4] = e, seen_d[5] = f, seen_d[6] = g, seen_d[7] = h;
	/* a handler that uses the vector registers */
#if defined(__x86_64__)
	__asm__ volatile("xorps %%xmm0, %%xmm0\n\txorps %%xmm1, %%xmm1\n\t"
			 "xorps %%xmm2, %%xmm2\n\txorps %%xmm3, %%xmm3\n\t"
			 "xorps %%xmm4, %%xmm4\n\txorps %%xmm5, %%xmm5\n\t"
			 "xorps %%xmm6, %%xmm6\n\txorps %%xmm7, %%xmm7"
			 ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7");
#elif defined(__aarch64__)
	__asm__ volatile("movi v0.2d, #0\n\tmovi v1.2d, #0\n\tmovi v2.2d, #0\n\t"
			 "movi v3.2d, #0\n\tmovi v4.2d, #0\n\tmovi v5.2d, #0\n\t"
			 "movi v6.2d, #0\n\tmovi v7.2d, #0"
			 ::: "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7");
#endif
	jprobe_return();
	return 0;
}

Test(jprobe, floating_point_arguments)
{
	struct jprobe jp = { .kp.symbol_name = "jp_doubles", .entry = j_doubles };
	double r;

	cr_assert_eq(register_jprobe(&jp), 0);
	r = jp_doubles(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5);
	cr_expect_eq(r, 0.5 + 3.0 + 7.5 + 14.0 + 22.5 + 33.0 + 45.5 + 60.0, "%f", r);
	for (int i = 0; i < 8; i++)
		cr_expect_eq(seen_d[i], 0.5 + i, "xmm%d: %f", i, seen_d[i]);
	unregister_jprobe(&jp);
}

/* ============================== with a kprobe and a kretprobe: order */

UKP_TARGET int jp_coexist(int x)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return x * 7;
}

static char order[16];
static int norder;
static int coexist_seen;

static void note(char c)
{
	if (norder < (int)sizeof(order) - 1)
		order[norder++] = c;
}

static int co_pre(struct kprobe *p, struct pt_regs *regs)
{
	note('p');
	return 0;
}

static void co_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	note('P');
}

static int co_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	note('e');
	return 0;
}

static int co_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	note('r');
	EXPECT_IN_HANDLER(regs_return_value(regs) == 42);
	return 0;
}

static int j_coexist(int x)
{
	note('j');
	coexist_seen = x;
	jprobe_return();
	return 0;
}

Test(jprobe, with_kprobe_and_kretprobe)
{
	struct kprobe kp = { .symbol_name = "jp_coexist", .pre_handler = co_pre,
			     .post_handler = co_post };
	struct jprobe jp = { .kp.symbol_name = "jp_coexist", .entry = j_coexist };
	struct kretprobe rp = { .kp.symbol_name = "jp_coexist", .handler = co_ret,
				.entry_handler = co_entry };
	char *list, line[160];

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(jp_coexist(6), 42);
	/* pre_handlers newest first (kretprobe entry, kprobe), the jprobe
	 * last; post_handlers once the instruction ran; the return handler */
	cr_expect_str_eq(order, "epjPr");
	cr_expect_eq(coexist_seen, 6);
	cr_expect_eq(handler_errors, 0);

	list = capture_list();
	snprintf(line, sizeof(line), "%016lx  j  jp_coexist+0x", (unsigned long)jp.kp.addr);
	cr_expect(strstr(list, line), "%s", list);
	free(list);

	/* without the kprobe's post_handler the site could be optimized:
	 * the jprobe keeps it a breakpoint */
	unregister_kprobe(&kp);
	ukprobes_wait_optimizer();
	cr_expect(!(jp.kp.flags & KPROBE_FLAG_OPTIMIZED));
	cr_expect(!(rp.kp.flags & KPROBE_FLAG_OPTIMIZED));
	norder = 0;
	memset(order, 0, sizeof(order));
	cr_expect_eq(jp_coexist(6), 42);
	cr_expect_str_eq(order, "ejr");
	unregister_kretprobe(&rp);
	unregister_jprobe(&jp);
	cr_expect_eq(handler_errors, 0);
}

/* ================================================ errors and rollback */

UKP_TARGET int jp_other(int x)
{
	return x + 1;
}

static int other_calls;

static int j_other(int x)
{
	other_calls++;
	jprobe_return();
	return 0;
}

static int j_six_as_int(int x)
{
	jprobe_return();
	return 0;
}

Test(jprobe, one_jprobe_per_function)
{
	struct jprobe a = { .kp.symbol_name = "jp_other", .entry = j_other };
	struct jprobe b = { .kp.symbol_name = "jp_other", .entry = j_six_as_int };
	struct kprobe k = { .symbol_name = "jp_other" };

	cr_assert_eq(register_jprobe(&a), 0);
	cr_expect_eq(register_jprobe(&b), -EEXIST);
	/* kprobes may still join it */
	cr_expect_eq(register_kprobe(&k), 0);
	cr_expect_eq(jp_other(1), 2);
	cr_expect_eq(other_calls, 1);
	unregister_kprobe(&k);
	unregister_jprobe(&a);
	/* the place is free again */
	b.kp.addr = NULL;
	b.kp.flags = 0;
	cr_expect_eq(register_jprobe(&b), 0);
	unregister_jprobe(&b);
}

Test(jprobe, registration_errors)
{
	struct jprobe mid = { .kp.symbol_name = "jp_other", .kp.offset = 1, .entry = j_other };
	struct jprobe noent = { .kp.symbol_name = "jp_other" };
	struct jprobe badent = { .kp.symbol_name = "jp_other", .entry = (char *)j_other + 1 };
	struct jprobe nosym = { .kp.symbol_name = "no_such_function_here", .entry = j_other };
	struct jprobe twice = { .kp.symbol_name = "jp_other", .entry = j_other };
	int ret;

	/* not at the function's entry (not even an instruction boundary,
	 * or an inner instruction) */
	ret = register_jprobe(&mid);
	cr_expect(ret == -EINVAL || ret == -EILSEQ, "%d", ret);
	cr_expect_eq(register_jprobe(&noent), -EINVAL);
	cr_expect_eq(register_jprobe(&badent), -EINVAL);
	cr_expect_eq(register_jprobe(&nosym), -ENOENT);
	cr_expect_eq(register_jprobe(NULL), -EINVAL);
	cr_assert_eq(register_jprobe(&twice), 0);
	cr_expect_eq(register_jprobe(&twice), -EINVAL);
	unregister_jprobe(&twice);
	char *list = capture_list();
	cr_expect_str_eq(list, "");
	free(list);
	cr_expect_eq(jp_other(1), 2);
	cr_expect_eq(other_calls, 0);
}

UKP_TARGET int jp_inner(int x)
{
	volatile int y = x;

	y = y * 3;
	return y + 1;
}

Test(jprobe, not_on_an_inner_instruction)
{
	/* an instruction boundary inside the function: still refused */
	struct kprobe k = { .symbol_name = "jp_inner" };
	struct jprobe jp = { .kp.symbol_name = "jp_inner", .entry = j_other };
	unsigned char *p;

	cr_assert_eq(register_kprobe(&k), 0);
	p = (unsigned char *)k.addr;
	unregister_kprobe(&k);
	/* the second instruction: ask the kprobe layer where it is */
	for (unsigned int off = 1; off < 16; off++) {
		struct kprobe t = { .addr = (kprobe_opcode_t *)p, .offset = off };

		if (register_kprobe(&t) == 0) {
			unregister_kprobe(&t);
			jp.kp.offset = (unsigned int)(p - (unsigned char *)jp_inner) + off;
			break;
		}
	}
	cr_assert_neq(jp.kp.offset, 0);
	cr_expect_eq(register_jprobe(&jp), -EINVAL);
	cr_expect_null(jp.kp.addr, "addr is given back on failure");
	cr_expect_eq(jp_inner(2), 7);
}

Test(jprobe, register_jprobes_rolls_back)
{
	struct jprobe a = { .kp.symbol_name = "jp_six", .entry = j_six };
	struct jprobe b = { .kp.symbol_name = "jp_other", .entry = j_other };
	struct jprobe c = { .kp.symbol_name = "jp_other", .entry = j_six_as_int };
	struct jprobe *set[] = { &a, &b, &c };
	char *list;

	cr_expect_eq(register_jprobes(set, 0), -EINVAL);
	cr_expect_eq(register_jprobes(set, 3), -EEXIST);
	list = capture_list();
	cr_expect_str_eq(list, "", "the registered prefix is gone: %s", list);
	free(list);
	cr_expect_eq(jp_six(1, 1, 1, 1, 1, 1), 21);
	cr_expect_eq(jp_other(1), 2);
	cr_expect_eq(six_calls + other_calls, 0);

	/* both of the first two again, as a batch */
	a.kp.addr = b.kp.addr = NULL;
	a.kp.flags = b.kp.flags = 0;
	cr_assert_eq(register_jprobes(set, 2), 0);
	cr_expect_eq(jp_six(1, 1, 1, 1, 1, 1), 21);
	cr_expect_eq(jp_other(1), 2);
	cr_expect_eq(six_calls, 1);
	cr_expect_eq(other_calls, 1);
	unregister_jprobes(set, 2);
	/* an unregistered one: addr cleared, as the kernel */
	unregister_jprobe(&c);
	cr_expect_null(c.kp.addr);
}

Test(jprobe, disable_enable_and_list)
{
	struct jprobe jp = { .kp.symbol_name = "jp_other", .entry = j_other };
	char *list, line[160];

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_other(1), 2);
	cr_expect_eq(disable_jprobe(&jp), 0);
	cr_expect_eq(jp_other(2), 3);
	cr_expect_eq(other_calls, 1);
	list = capture_list();
	snprintf(line, sizeof(line), "%016lx  j  jp_other+0x%lx    [DISABLED]\n",
		 (unsigned long)jp.kp.addr, (unsigned long)((char *)jp.kp.addr - (char *)jp_other));
	cr_expect_str_eq(list, line);
	free(list);
	cr_expect_eq(enable_jprobe(&jp), 0);
	cr_expect_eq(jp_other(3), 4);
	cr_expect_eq(other_calls, 2);
	unregister_jprobe(&jp);

	/* registered disabled */
	jp.kp.addr = NULL;
	jp.kp.flags = KPROBE_FLAG_DISABLED;
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_other(3), 4);
	cr_expect_eq(other_calls, 2);
	cr_expect_eq(enable_jprobe(&jp), 0);
	cr_expect_eq(jp_other(3), 4);
	cr_expect_eq(other_calls, 3);
	unregister_jprobe(&jp);
}

/* ===================================================== real libraries */

static uLong seen_crc;
static const Bytef *seen_buf;
static uInt seen_len;

static uLong j_crc32(uLong crc, const Bytef *buf, uInt len)
{
	seen_crc = crc;
	seen_buf = buf;
	seen_len = len;
	jprobe_return();
	return 0;
}

static int seen_level, seen_method, seen_wbits, seen_memlevel, seen_strategy, seen_size;
static char seen_version[16];
static z_streamp seen_strm;

/* eight arguments: version and stream_size on the stack */
static int j_deflateInit2_(z_streamp strm, int level, int method, int windowBits, int memLevel,
			   int strategy, const char *version, int stream_size)
{
	seen_strm = strm;
	seen_level = level;
	seen_method = method;
	seen_wbits = windowBits;
	seen_memlevel = memLevel;
	seen_strategy = strategy;
	seen_size = stream_size;
	if (version)
		for (int i = 0; i < (int)sizeof(seen_version) - 1 && version[i]; i++)
			seen_version[i] = version[i];
	SCRIBBLE(stream_size, 1);
	SCRIBBLE(version, "0.0");
	jprobe_return();
	return 0;
}

Test(jprobe, zlib_functions)
{
	struct jprobe jc = { .kp.symbol_name = "libz.so.1:crc32", .entry = j_crc32 };
	struct jprobe jd = { .kp.symbol_name = "libz.so.1:deflateInit2_",
			     .entry = j_deflateInit2_ };
	static const char text[] = "The quick brown fox jumps over the lazy dog";
	z_stream zs;

	(void)zlibVersion();
	cr_assert_eq(register_jprobe(&jc), 0);
	cr_assert_eq(register_jprobe(&jd), 0);
	cr_expect_eq(crc32(0, (const Bytef *)text, 43), 0x414fa339UL);
	cr_expect_eq(seen_crc, 0);
	cr_expect_eq(seen_buf, (const Bytef *)text);
	cr_expect_eq(seen_len, 43);

	memset(&zs, 0, sizeof(zs));
	cr_expect_eq(deflateInit2(&zs, 7, Z_DEFLATED, -13, 6, Z_FILTERED), Z_OK);
	cr_expect_eq(seen_strm, &zs);
	cr_expect_eq(seen_level, 7);
	cr_expect_eq(seen_method, Z_DEFLATED);
	cr_expect_eq(seen_wbits, -13);
	cr_expect_eq(seen_memlevel, 6);
	cr_expect_eq(seen_strategy, Z_FILTERED);
	cr_expect_str_eq(seen_version, ZLIB_VERSION);
	cr_expect_eq(seen_size, (int)sizeof(z_stream));
	/* zlib saw its real version and size (else Z_VERSION_ERROR), and
	 * the stream works */
	{
		unsigned char out[128], back[64];
		z_stream inf;

		zs.next_in = (Bytef *)text;
		zs.avail_in = 43;
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		cr_expect_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
		memset(&inf, 0, sizeof(inf));
		cr_assert_eq(inflateInit2(&inf, -13), Z_OK);
		inf.next_in = out;
		inf.avail_in = (uInt)(sizeof(out) - zs.avail_out);
		inf.next_out = back;
		inf.avail_out = sizeof(back);
		cr_expect_eq(inflate(&inf, Z_FINISH), Z_STREAM_END);
		cr_expect_eq(inf.total_out, 43);
		cr_expect_eq(memcmp(back, text, 43), 0);
		inflateEnd(&inf);
		deflateEnd(&zs);
	}
	unregister_jprobe(&jc);
	unregister_jprobe(&jd);
	cr_expect_eq(jc.kp.nmissed + jd.kp.nmissed, 0);
}

static void *seen_base;
static size_t seen_nmemb, seen_qsize;
static int (*seen_cmp)(const void *, const void *);

static void j_qsort(void *base, size_t nmemb, size_t size,
		    int (*cmp)(const void *, const void *))
{
	seen_base = base;
	seen_nmemb = nmemb;
	seen_qsize = size;
	seen_cmp = cmp;
	jprobe_return();
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

Test(jprobe, libc_qsort)
{
	struct jprobe jp = { .kp.symbol_name = "libc.so.6:qsort", .entry = j_qsort };
	int v[] = { 5, 3, 9, 1, 7 };

	/* libc's own qsort (a sanitizer runtime interposes its own) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void (*libc_qsort)(void *, size_t, size_t, int (*)(const void *, const void *));

	cr_assert_not_null(libc);
	libc_qsort = (void (*)(void *, size_t, size_t, int (*)(const void *, const void *)))
		dlsym(libc, "qsort");
	cr_assert_not_null(libc_qsort);
	cr_assert_eq(register_jprobe(&jp), 0);
	libc_qsort(v, 5, sizeof(int), cmp_int);
	unregister_jprobe(&jp);
	cr_expect_eq(seen_base, v);
	cr_expect_eq(seen_nmemb, 5);
	cr_expect_eq(seen_qsize, sizeof(int));
	cr_expect_eq(seen_cmp, cmp_int);
	cr_expect(v[0] == 1 && v[1] == 3 && v[2] == 5 && v[3] == 7 && v[4] == 9);
}

/* ============================================================ threads */

UKP_TARGET long jp_thr(long t, long i, long k)
{
	return t * 1000000 + i * 10 + k;
}

static _Atomic long thr_hits;

static long j_thr(long t, long i, long k)
{
	EXPECT_IN_HANDLER(k == (t ^ i));
	SCRIBBLE(k, -1);
	thr_hits++;
	jprobe_return();
	return 0;
}

#define NTHR 4
#define NCALLS 300

static void *thr_main(void *arg)
{
	long t = (long)arg, bad = 0;

	for (long i = 0; i < NCALLS; i++)
		if (jp_thr(t, i, t ^ i) != t * 1000000 + i * 10 + (t ^ i))
			bad++;
	return (void *)bad;
}

Test(jprobe, threads)
{
	struct jprobe jp = { .kp.symbol_name = "jp_thr", .entry = j_thr };
	pthread_t th[NTHR];
	void *bad;

	cr_assert_eq(register_jprobe(&jp), 0);
	for (long t = 0; t < NTHR; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, thr_main, (void *)(t + 1)), 0);
	for (int t = 0; t < NTHR; t++) {
		pthread_join(th[t], &bad);
		cr_expect_null(bad, "thread %d: wrong results", t);
	}
	unregister_jprobe(&jp);
	cr_expect_eq(thr_hits, NTHR * NCALLS);
	cr_expect_eq(jp.kp.nmissed, 0);
	cr_expect_eq(handler_errors, 0);
}

/* ============================== a handler without jprobe_return() */

static int forgot_calls;

static long j_forgets(long a, long b, long c, long d, long e, long f, long g, long h, long i,
		      long j)
{
	forgot_calls++;
	SCRIBBLE(j, 0);
	return -12345; /* no jprobe_return() */
}

Test(jprobe, handler_returning_without_jprobe_return)
{
	struct jprobe jp = { .kp.symbol_name = "jp_ten", .entry = j_forgets };
	unsigned long before = jprobes_missing_returns();

	cr_assert_eq(register_jprobe(&jp), 0);
	/* the probed function still runs, with its own arguments, and its
	 * caller gets its result */
	cr_expect_eq(jp_ten(101, 102, 103, 104, 105, 106, 107, 108, 109, 110), ten_expected());
	cr_expect_eq(jp_ten(101, 102, 103, 104, 105, 106, 107, 108, 109, 110), ten_expected());
	cr_expect_eq(forgot_calls, 2);
	cr_expect_eq(jprobes_missing_returns() - before, 2);
	cr_expect_eq(jp.kp.nmissed, 0);
	unregister_jprobe(&jp);
}

Test(jprobe, jprobe_return_outside_a_handler_returns)
{
	jprobe_return();
	jprobe_return();
	cr_expect_null(kprobe_running());
}

/* ============================================= a handler that faults */

static int fault_trapnr = -1, fault_calls;

static int jp_fault_handler(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	fault_trapnr = trapnr;
	fault_calls++;
	EXPECT_IN_HANDLER(kprobe_running() == p);
	return 0;
}

static long j_faults(long a, long b, long c, long d, long e, long f)
{
	SCRIBBLE(a, 0);
	(void)ukt_load_int((void *)16);
	jprobe_return();
	return 0;
}

Test(jprobe, handler_fault)
{
	struct jprobe jp = { .kp.symbol_name = "jp_six", .entry = j_faults,
			     .kp.fault_handler = jp_fault_handler };
	unsigned long faults = kprobes_handler_faults();

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_six(1, 2, 3, 4, 5, 6), 91);
	cr_expect_eq(fault_calls, 1);
#if defined(__x86_64__)
	cr_expect_eq(fault_trapnr, 14); /* X86_TRAP_PF */
#else
	/* ESR_ELx.EC of a data abort from EL0; 0 without the frame's ESR
	 * record (qemu-user writes none) */
	cr_expect(fault_trapnr == 0x24 || fault_trapnr == 0, "trapnr %#x", fault_trapnr);
#endif
	cr_expect_eq(jp.kp.nmissed, 1, "nmissed %lu", jp.kp.nmissed);
	cr_expect_eq(kprobes_handler_faults() - faults, 1);
	cr_expect_null(kprobe_running());
	/* (ASan) the abandoned handler's frames left no poison behind */
	cr_expect_null(ukt_stale_stack_poison(), "stale ASan poison at %p below the stack",
		       ukt_stale_stack_poison());
	/* the thread is back to normal: the next hit runs the handler */
	cr_expect_eq(jp_six(1, 2, 3, 4, 5, 6), 91);
	cr_expect_eq(fault_calls, 2);
	unregister_jprobe(&jp);
	cr_expect_eq(handler_errors, 0);
}

/* ====================================== hits inside a jprobe handler */

UKP_TARGET int jp_rec(int x)
{
	return x * 2;
}

static int rec_calls, rec_inner;
static int kp_in_handler_hits;

static int rec_kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	kp_in_handler_hits++;
	return 0;
}

static int j_rec(int x)
{
	rec_calls++;
	/* the probed function itself, and another probe: both missed */
	rec_inner = jp_rec(x + 1) + jp_other(0);
	jprobe_return();
	return 0;
}

Test(jprobe, hits_inside_the_handler_are_missed)
{
	struct jprobe jp = { .kp.symbol_name = "jp_rec", .entry = j_rec };
	struct kprobe k = { .symbol_name = "jp_other", .pre_handler = rec_kp_pre };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert_eq(register_kprobe(&k), 0);
	cr_expect_eq(jp_rec(5), 10);
	cr_expect_eq(rec_calls, 1);
	cr_expect_eq(rec_inner, 12 + 1);
	cr_expect_eq(jp.kp.nmissed, 1, "nmissed %lu", jp.kp.nmissed);
	cr_expect_eq(k.nmissed, 1, "k.nmissed %lu", k.nmissed);
	cr_expect_eq(kp_in_handler_hits, 0);
	/* out of the handler, both fire again */
	cr_expect_eq(jp_other(0), 1);
	cr_expect_eq(kp_in_handler_hits, 1);
	unregister_kprobe(&k);
	unregister_jprobe(&jp);
}

static int busy_ret = 1;

static int j_registers(int x)
{
	struct kprobe k = { .symbol_name = "jp_six" };

	busy_ret = register_kprobe(&k);
	jprobe_return();
	return 0;
}

Test(jprobe, registration_from_a_handler_is_busy)
{
	struct jprobe jp = { .kp.symbol_name = "jp_rec", .entry = j_registers };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_rec(1), 2);
	cr_expect_eq(busy_ret, -EBUSY);
	unregister_jprobe(&jp);
}

/* ============================= signals are held back during a handler */

static volatile sig_atomic_t usr1_runs;
static int usr1_during_handler = -1;

static void on_usr1(int sig)
{
	usr1_runs++;
}

static int j_signals(int x)
{
	raise(SIGUSR1);
	usr1_during_handler = usr1_runs;
	jprobe_return();
	return 0;
}

Test(jprobe, program_signals_wait_for_the_handler)
{
	struct jprobe jp = { .kp.symbol_name = "jp_rec", .entry = j_signals };
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_rec(4), 8);
	cr_expect_eq(usr1_during_handler, 0, "the program's handler ran inside the jprobe handler");
	cr_expect_eq(usr1_runs, 1, "the signal was delivered after it");
	unregister_jprobe(&jp);
}

/* ============================= unregistering waits for running handlers */

static atomic_int in_slow, release_slow, unreg_done, done_seen_in_handler = -1;

static int j_slow(int x)
{
	atomic_store(&in_slow, 1);
	while (!atomic_load(&release_slow))
		;
	done_seen_in_handler = atomic_load(&unreg_done);
	jprobe_return();
	return 0;
}

static void *unreg_main(void *arg)
{
	unregister_jprobe(arg);
	atomic_store(&unreg_done, 1);
	return NULL;
}

static void *call_slow(void *arg)
{
	return (void *)(long)jp_rec(21);
}

Test(jprobe, unregister_waits_for_a_running_handler)
{
	struct jprobe jp = { .kp.symbol_name = "jp_rec", .entry = j_slow };
	pthread_t caller, unreg;
	void *ret;

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert_eq(pthread_create(&caller, NULL, call_slow, NULL), 0);
	while (!atomic_load(&in_slow))
		;
	cr_assert_eq(pthread_create(&unreg, NULL, unreg_main, &jp), 0);
	/* let the unregistering thread get as far as it can */
	for (int i = 0; i < 1000 && !atomic_load(&unreg_done); i++)
		sched_yield();
	atomic_store(&release_slow, 1);
	pthread_join(caller, &ret);
	pthread_join(unreg, NULL);
	cr_expect_eq((long)ret, 42);
	cr_expect_eq(done_seen_in_handler, 0, "unregister_jprobe returned while the handler ran");
}

/* ====================================== a variadic function's arguments */

UKP_TARGET long jp_va(int n, ...)
{
	va_list ap;
	long s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += (i + 1) * va_arg(ap, long);
	va_end(ap);
	return s;
}

static long seen_va[12];
static int seen_va_n;

/* the same prototype: va_arg walks the registers, then the stack copy */
static long j_va(int n, ...)
{
	va_list ap;

	seen_va_n = n;
	va_start(ap, n);
	for (int i = 0; i < n && i < 12; i++)
		seen_va[i] = va_arg(ap, long);
	va_end(ap);
	jprobe_return();
	return 0;
}

Test(jprobe, variadic_function)
{
	struct jprobe jp = { .kp.symbol_name = "jp_va", .entry = j_va };
	long want = 0;

	for (int i = 1; i <= 10; i++)
		want += i * (i * 11L);
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_va(10, 11L, 22L, 33L, 44L, 55L, 66L, 77L, 88L, 99L, 110L), want);
	cr_expect_eq(seen_va_n, 10);
	for (int i = 0; i < 10; i++)
		cr_expect_eq(seen_va[i], (i + 1) * 11L, "argument %d: %ld", i + 1, seen_va[i]);
	unregister_jprobe(&jp);
}

/* ==================== a function whose first instruction is emulated */

/* A tail-call thunk: its only instruction, a jmp (b), is emulated after
 * the handler (no out-of-line copy). */
#if defined(__x86_64__)
#define THUNK_TYPE "@function"
#define THUNK_JUMP "jmp"
#else
#define THUNK_TYPE "%function"
#define THUNK_JUMP "b"
#endif
__asm__(".text\n"
	".globl jp_thunk\n"
	".type jp_thunk, " THUNK_TYPE "\n"
	"jp_thunk:\n"
	"\t" THUNK_JUMP " jp_six\n"
	".size jp_thunk, .-jp_thunk\n");
long jp_thunk(long a, long b, long c, long d, long e, long f);

static long seen_thunk[6];

static long j_thunk(long a, long b, long c, long d, long e, long f)
{
	seen_thunk[0] = a, seen_thunk[5] = f;
	jprobe_return();
	return 0;
}

Test(jprobe, emulated_first_instruction)
{
	struct jprobe jp = { .kp.symbol_name = "jp_thunk", .entry = j_thunk };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_thunk(1, 2, 3, 4, 5, 6), 91);
	cr_expect_eq(jp_thunk(1, 2, 3, 4, 5, 6), 91);
	cr_expect_eq(seen_thunk[0], 1);
	cr_expect_eq(seen_thunk[5], 6);
	unregister_jprobe(&jp);
}

/* ========== registering and unregistering while threads keep calling */

static atomic_int churn_stop;

static void *churn_main(void *arg)
{
	long t = (long)arg, bad = 0;

	for (long i = 0; !atomic_load(&churn_stop); i++)
		if (jp_thr(t, i, t ^ i) != t * 1000000 + i * 10 + (t ^ i))
			bad++;
	return (void *)bad;
}

Test(jprobe, register_unregister_under_load)
{
	struct jprobe jp = { .kp.symbol_name = "jp_thr", .entry = j_thr };
	pthread_t th[2];
	void *bad;
	long before;

	for (long t = 0; t < 2; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, churn_main, (void *)(t + 1)), 0);
	for (int round = 0; round < 20; round++) {
		before = thr_hits;
		jp.kp.addr = NULL;
		jp.kp.flags = 0;
		cr_assert_eq(register_jprobe(&jp), 0);
		while (thr_hits < before + 20)
			sched_yield();
		unregister_jprobe(&jp);
	}
	atomic_store(&churn_stop, 1);
	for (int t = 0; t < 2; t++) {
		pthread_join(th[t], &bad);
		cr_expect_null(bad, "thread %d: wrong results", t);
	}
	cr_expect_eq(handler_errors, 0);
	/* no handler runs once unregister_jprobe returned */
	before = thr_hits;
	cr_expect_eq(jp_thr(1, 2, 3), 1000023);
	cr_expect_eq(thr_hits, before);
}

/* ============================================================== fork */

Test(jprobe, fork_child_keeps_the_jprobe)
{
	struct jprobe jp = { .kp.symbol_name = "jp_ten", .entry = j_ten };
	int status;
	pid_t pid;

	cr_assert_eq(register_jprobe(&jp), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int ok = jp_ten(101, 102, 103, 104, 105, 106, 107, 108, 109, 110) == ten_expected() &&
			 seen10[9] == 110 && seen10[0] == 101;
		_exit(ok ? 0 : 3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	/* the parent's own hits are unaffected */
	memset(seen10, 0, sizeof(seen10));
	cr_expect_eq(jp_ten(101, 102, 103, 104, 105, 106, 107, 108, 109, 110), ten_expected());
	cr_expect_eq(seen10[6], 107);
	unregister_jprobe(&jp);
}
