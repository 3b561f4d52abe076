// SPDX-License-Identifier: MIT
/*
 * test_a64_jprobe.c - AArch64 only: jprobes against the AAPCS64 calling
 * convention (doc/jprobes.md; the behaviour every architecture shares is
 * in test_jprobe.c).
 *
 *  - every register, exactly: an assembly caller loads x0-x29, NZCV,
 *    v0-v7 (both halves) and two stack arguments with known values and
 *    calls a probed assembly function; an assembly handler records what
 *    it gets (x0-x15 and x18-x29 as at the hit, x30 =
 *    ukp_jprobe_handler_ret, sp 512 bytes below the hit's, a copy of the
 *    stack arguments there), then scribbles over all of it; the probed
 *    function records what it gets after jprobe_return(): everything as
 *    the caller set it, x16, x17 and the flags included;
 *  - C prototypes: twelve integer arguments (four on the stack), eight
 *    doubles in v0-v7 with a float and a double spilled to the stack,
 *    128-bit vector arguments, the handler writing over all of them;
 *  - a first instruction simulated after the handler (b), a handler
 *    without jprobe_return(), jprobe_return() outside a handler, a kprobe
 *    at the same address, a fault in the handler, a backtrace taken in
 *    the handler (it ends at the library's stub).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ukprobes.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h" /* arch.h: ukp_jprobe_handler_ret, ARCH_JPROBE_STACK_BYTES */
#include "ukp_test.h"

#define FN(name) ".globl " #name "\n.type " #name ",%function\n" #name ":\n"
#define END(name) ".size " #name ", .-" #name "\n"
#define OBJ(name, size) \
	".globl " #name "\n.type " #name ",%object\n" #name ":\n.space " #size "\n" END(name)

/* What a register snapshot holds (in this order, 8 bytes each, then
 * v0-v7 as 16 bytes each). */
enum { S_X0 = 0, S_X30 = 30, S_SP = 31, S_NZCV = 32, S_ARG0 = 33, S_ARG1 = 34, S_WORDS = 35 };
struct snap {
	uint64_t x[S_WORDS + 1]; /* + padding: v stays 16-byte aligned */
	uint64_t v[8][2];
};
_Static_assert(sizeof(struct snap) == 36 * 8 + 128, "the offsets below");

/* Store every register into the struct snap at x9 (x9 itself comes from
 * [sp], where the caller of the macro pushed it with x10; stack
 * arguments at sp + 16 + OFF). */
#define SNAP(OFF)                                                              \
	"	stp x0, x1, [x9, #0]\n	stp x2, x3, [x9, #16]\n"               \
	"	stp x4, x5, [x9, #32]\n	stp x6, x7, [x9, #48]\n"               \
	"	ldp x0, x1, [sp]\n	stp x8, x0, [x9, #64]\n"               \
	"	stp x1, x11, [x9, #80]\n	stp x12, x13, [x9, #96]\n"     \
	"	stp x14, x15, [x9, #112]\n	stp x16, x17, [x9, #128]\n"    \
	"	stp x18, x19, [x9, #144]\n	stp x20, x21, [x9, #160]\n"    \
	"	stp x22, x23, [x9, #176]\n	stp x24, x25, [x9, #192]\n"    \
	"	stp x26, x27, [x9, #208]\n	stp x28, x29, [x9, #224]\n"    \
	"	add x0, sp, #16\n	stp x30, x0, [x9, #240]\n"             \
	"	mrs x0, nzcv\n	str x0, [x9, #256]\n"                          \
	"	ldp x0, x1, [sp, #16 + " #OFF "]\n	stp x0, x1, [x9, #264]\n" \
	"	stp q0, q1, [x9, #288]\n	stp q2, q3, [x9, #320]\n"      \
	"	stp q4, q5, [x9, #352]\n	stp q6, q7, [x9, #384]\n"

__asm__(".text\n.p2align 4\n"
	/* void a_jr_call(void *stack): the caller. Loads every register
	 * with regs_in's values, pushes its two stack arguments (on the
	 * stack that ends at stack, when not NULL), calls a_jr_target and
	 * restores its callee-saved registers and its stack. */
	FN(a_jr_call)
	"	stp x29, x30, [sp, #-112]!\n	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n	stp x21, x22, [sp, #32]\n"
	"	stp x23, x24, [sp, #48]\n	stp x25, x26, [sp, #64]\n"
	"	stp x27, x28, [sp, #80]\n	str x18, [sp, #96]\n"
	"	mov x10, sp\n	adrp x11, a_jr_saved_sp\n	str x10, [x11, :lo12:a_jr_saved_sp]\n"
	"	cbz x0, 1f\n	mov sp, x0\n"
	"1:	adrp x9, regs_in\n	add x9, x9, :lo12:regs_in\n"
	"	ldp x0, x1, [x9, #264]\n	stp x0, x1, [sp, #-16]!\n"	/* stack arguments */
	"	ldr x0, [x9, #256]\n	msr nzcv, x0\n"
	"	ldp q0, q1, [x9, #288]\n	ldp q2, q3, [x9, #320]\n"
	"	ldp q4, q5, [x9, #352]\n	ldp q6, q7, [x9, #384]\n"
	"	ldp x0, x1, [x9, #0]\n	ldp x2, x3, [x9, #16]\n"
	"	ldp x4, x5, [x9, #32]\n	ldp x6, x7, [x9, #48]\n"
	"	ldr x8, [x9, #64]\n	ldp x10, x11, [x9, #80]\n"
	"	ldp x12, x13, [x9, #96]\n	ldp x14, x15, [x9, #112]\n"
	"	ldp x16, x17, [x9, #128]\n	ldp x18, x19, [x9, #144]\n"
	"	ldp x20, x21, [x9, #160]\n	ldp x22, x23, [x9, #176]\n"
	"	ldp x24, x25, [x9, #192]\n	ldp x26, x27, [x9, #208]\n"
	"	ldr x28, [x9, #224]\n	ldr x9, [x9, #72]\n"
	"	bl a_jr_target\n"
	"	adrp x11, a_jr_saved_sp\n	ldr x10, [x11, :lo12:a_jr_saved_sp]\n	mov sp, x10\n"
	"	ldp x19, x20, [sp, #16]\n	ldp x21, x22, [sp, #32]\n"
	"	ldp x23, x24, [sp, #48]\n	ldp x25, x26, [sp, #64]\n"
	"	ldp x27, x28, [sp, #80]\n	ldr x18, [sp, #96]\n"
	"	ldp x29, x30, [sp], #112\n	ret\n"
	END(a_jr_call)
	/* The probed function: records what it gets into seen_target. */
	FN(a_jr_target)
	"	stp x9, x10, [sp, #-16]!\n"
	"	adrp x9, seen_target\n	add x9, x9, :lo12:seen_target\n"
	SNAP(0)
	"	ldp x9, x10, [sp], #16\n	ret\n"
	END(a_jr_target)
	/* The jprobe handler: records what it gets into seen_handler, then
	 * writes over every register and its stack arguments. */
	FN(a_jr_handler)
	"	stp x9, x10, [sp, #-16]!\n"
	"	adrp x9, seen_handler\n	add x9, x9, :lo12:seen_handler\n"
	SNAP(0)
	"	add sp, sp, #16\n"
	"	mov x0, #-1\n	stp x0, x0, [sp]\n"
	"	movi v0.16b, #0xa5\n	movi v1.16b, #0xa5\n	movi v2.16b, #0xa5\n"
	"	movi v3.16b, #0xa5\n	movi v4.16b, #0xa5\n	movi v5.16b, #0xa5\n"
	"	movi v6.16b, #0xa5\n	movi v7.16b, #0xa5\n"
	"	mov x1, #-1\n	mov x2, #-1\n	mov x3, #-1\n	mov x4, #-1\n"
	"	mov x5, #-1\n	mov x6, #-1\n	mov x7, #-1\n	mov x8, #-1\n"
	"	mov x15, #-1\n	mov x16, #-1\n	mov x17, #-1\n	mov x29, #-1\n"
	"	cmn x0, #1\n"	/* NZCV = 0110 */
	"	bl jprobe_return\n"
	"	brk #0x77\n"	/* jprobe_return() does not return here */
	END(a_jr_handler)
	".data\n.p2align 4\n"
	OBJ(regs_in, 416) OBJ(seen_target, 416) OBJ(seen_handler, 416) OBJ(a_jr_saved_sp, 16)
	".text\n");

void a_jr_call(void *stack), a_jr_target(void), a_jr_handler(void);
extern struct snap regs_in, seen_target, seen_handler;

/* Call a_jr_target through a_jr_call(stack) with a jprobe on it, and
 * check every register the handler and the function got; the handler's
 * sp must be copy_bytes below the hit's. */
static void check_registers(void *stack, size_t copy_bytes)
{
	struct jprobe jp = { .kp.addr = (void *)a_jr_target, .entry = (void *)a_jr_handler };
	uintptr_t hit_sp;
	int i;

	for (i = 0; i < 31; i++)
		regs_in.x[i] = 0x0101010101010101ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
	regs_in.x[S_NZCV] = 0x90000000; /* N and V */
	regs_in.x[S_ARG0] = 0x5555aaaa5555aaaaull;
	regs_in.x[S_ARG1] = 0x1234567812345678ull;
	for (i = 0; i < 8; i++) {
		regs_in.v[i][0] = 0x1111111111111111ull * (uint64_t)(i + 1);
		regs_in.v[i][1] = ~regs_in.v[i][0];
	}
	memset(&seen_target, 0, sizeof(seen_target));
	memset(&seen_handler, 0, sizeof(seen_handler));
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert(ukt_breakpoint_at((void *)a_jr_target));
	a_jr_call(stack);
	unregister_jprobe(&jp);

	/* the probed function, after the handler: as the caller set it */
	for (i = 0; i < 30; i++) {
		if (i == 29)
			continue; /* the caller's frame pointer */
		cr_expect_eq(seen_target.x[i], regs_in.x[i], "target x%d: %#lx", i,
			     (unsigned long)seen_target.x[i]);
	}
	cr_expect_eq(seen_target.x[S_NZCV], regs_in.x[S_NZCV], "target nzcv %#lx",
		     (unsigned long)seen_target.x[S_NZCV]);
	cr_expect_eq(seen_target.x[S_ARG0], regs_in.x[S_ARG0], "its stack arguments untouched");
	cr_expect_eq(seen_target.x[S_ARG1], regs_in.x[S_ARG1]);
	for (i = 0; i < 8; i++) {
		cr_expect_eq(seen_target.v[i][0], regs_in.v[i][0], "target v%d low", i);
		cr_expect_eq(seen_target.v[i][1], regs_in.v[i][1], "target v%d high", i);
	}
	hit_sp = seen_target.x[S_SP];
	cr_expect_eq(hit_sp & 15, 0);

	/* the handler: the hit's argument and callee-saved registers */
	for (i = 0; i < 30; i++) {
		if (i == 16 || i == 17 || i == 29)
			continue; /* scratch at a call (x16: the handler); the frame pointer */
		cr_expect_eq(seen_handler.x[i], regs_in.x[i], "handler x%d: %#lx", i,
			     (unsigned long)seen_handler.x[i]);
	}
	cr_expect_eq(seen_handler.x[16], (uintptr_t)a_jr_handler, "reached by br x16");
	cr_expect_eq(seen_handler.x[29], seen_target.x[29], "x29 as at the hit");
	cr_expect_eq(seen_handler.x[S_X30], (uintptr_t)ukp_jprobe_handler_ret);
	cr_expect_eq(seen_handler.x[S_SP], hit_sp - copy_bytes,
		     "handler sp %#lx, hit sp %#lx", (unsigned long)seen_handler.x[S_SP],
		     (unsigned long)hit_sp);
	cr_expect_eq(seen_handler.x[S_ARG0], regs_in.x[S_ARG0], "a copy of the stack arguments");
	cr_expect_eq(seen_handler.x[S_ARG1], regs_in.x[S_ARG1]);
	for (i = 0; i < 8; i++) {
		cr_expect_eq(seen_handler.v[i][0], regs_in.v[i][0], "handler v%d low", i);
		cr_expect_eq(seen_handler.v[i][1], regs_in.v[i][1], "handler v%d high", i);
	}
	cr_expect_eq(seen_handler.x[S_NZCV] & 0xf0000000, 0x90000000, "the flags of the hit");
	cr_expect_eq(jp.kp.nmissed, 0);
	cr_expect_null(kprobe_running());
}

Test(a64_jprobe, every_register_at_the_handler_and_after)
{
	check_registers(NULL, ARCH_JPROBE_STACK_BYTES);
}

/* A stack whose mapping ends 16 bytes above the hit's sp (a thread's or
 * makecontext's stack, near its top): the copy stops at the end of
 * readable memory, and holds the two stack arguments. */
Test(a64_jprobe, stack_top_near_the_end_of_its_mapping)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(mprotect(m + 3 * ps, ps, PROT_NONE), 0);
	check_registers(m + 3 * ps, 16);
	munmap(m, 4 * ps);
}

/* Writes through a volatile pointer: the compiler must store into the
 * argument's home (its stack slot for a stack argument). */
#define SCRIBBLE(var, val) (*(volatile __typeof__(var) *)&(var) = (val))

/* ==================================== twelve integer arguments */

UKP_TARGET long jp12(long a, long b, long c, long d, long e, long f, long g, long h, int i,
		     long j, short k, long l)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j +
	       11 * k + 12 * l;
}

static long seen12[12];
static int calls12;
static void *ret12;
static uintptr_t frame12;

static long j12(long a, long b, long c, long d, long e, long f, long g, long h, int i, long j,
		short k, long l)
{
	seen12[0] = a, seen12[1] = b, seen12[2] = c, seen12[3] = d;
	seen12[4] = e, seen12[5] = f, seen12[6] = g, seen12[7] = h;
	seen12[8] = i, seen12[9] = j, seen12[10] = k, seen12[11] = l;
	calls12++;
	ret12 = __builtin_return_address(0);
	frame12 = (uintptr_t)__builtin_frame_address(0);
	/* the callee owns its stack arguments: the handler writes over its copy */
	SCRIBBLE(i, 0);
	SCRIBBLE(j, 0);
	SCRIBBLE(k, 0);
	SCRIBBLE(l, 0);
	SCRIBBLE(a, 0);
	SCRIBBLE(h, 0);
	jprobe_return();
	return 0;
}

static long expect12(void)
{
	long s = 0;

	for (long n = 1; n <= 12; n++)
		s += n * n * (100 * n + 1); /* n times argument n */
	return s;
}

#define ARGS12 101, 402, 903, 1604, 2505, 3606, 4907, 6408, 8109, 10010, 12111, 14412

Test(a64_jprobe, twelve_integer_arguments)
{
	struct jprobe jp = { .kp.symbol_name = "jp12", .entry = JPROBE_ENTRY(j12) };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect(jp.kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	for (int round = 0; round < 2; round++) {
		memset(seen12, 0, sizeof(seen12));
		cr_expect_eq(jp12(ARGS12), expect12(), "the function's own arguments");
		for (long n = 1; n <= 12; n++)
			cr_expect_eq(seen12[n - 1], n * (100 * n + 1), "argument %ld: %ld", n,
				     seen12[n - 1]);
	}
	cr_expect_eq(calls12, 2);
	cr_expect_eq(ret12, (void *)ukp_jprobe_handler_ret, "x30: the library's stub");
	cr_expect_eq(frame12 & 15, 0);
	cr_expect_eq(jp.kp.nmissed, 0);
	unregister_jprobe(&jp);
	cr_expect_eq(jp12(ARGS12), expect12());
	cr_expect_eq(calls12, 2, "no handler after unregister");
}

/* ==================== float and double arguments: v0-v7 and the stack */

UKP_TARGET double jp_fp(double a, double b, double c, double d, int n, double e, double f,
			double g, double h, float i, double j)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j +
	       1000 * n;
}

static double seen_fp[10];
static int seen_n;

/* A handler that uses the vector registers itself. */
static double j_fp(double a, double b, double c, double d, int n, double e, double f, double g,
		   double h, float i, double j)
{
	seen_fp[0] = a, seen_fp[1] = b, seen_fp[2] = c, seen_fp[3] = d, seen_fp[4] = e;
	seen_fp[5] = f, seen_fp[6] = g, seen_fp[7] = h, seen_fp[8] = i, seen_fp[9] = j;
	seen_n = n;
	SCRIBBLE(i, -1.0f);
	SCRIBBLE(j, -1.0);
	__asm__ volatile("movi v0.2d, #0\n\tmovi v1.2d, #0\n\tmovi v2.2d, #0\n\t"
			 "movi v3.2d, #0\n\tmovi v4.2d, #0\n\tmovi v5.2d, #0\n\t"
			 "movi v6.2d, #0\n\tmovi v7.2d, #0"
			 ::: "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7");
	jprobe_return();
	return 0;
}

Test(a64_jprobe, float_and_double_arguments)
{
	struct jprobe jp = { .kp.symbol_name = "jp_fp", .entry = JPROBE_ENTRY(j_fp) };
	double want = 0.5 + 3.0 + 7.5 + 14.0 + 22.5 + 33.0 + 45.5 + 60.0 + 9 * 8.5 + 10 * 9.5 +
		      1000 * 7;
	double r;

	cr_assert_eq(register_jprobe(&jp), 0);
	r = jp_fp(0.5, 1.5, 2.5, 3.5, 7, 4.5, 5.5, 6.5, 7.5, 8.5f, 9.5);
	cr_expect_eq(r, want, "%f", r);
	for (int k = 0; k < 10; k++)
		cr_expect_eq(seen_fp[k], 0.5 + k, "argument %d: %f", k, seen_fp[k]);
	cr_expect_eq(seen_n, 7);
	unregister_jprobe(&jp);
}

/* ============================================ 128-bit vector arguments */

typedef uint32_t v4u __attribute__((vector_size(16)));

UKP_TARGET uint32_t jp_vec(v4u a, v4u b, v4u c, v4u d, v4u e, v4u f, v4u g, v4u h)
{
	v4u s = a + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8;

	return s[0] ^ (s[1] << 8) ^ (s[2] << 16) ^ (s[3] << 24);
}

static v4u seen_vec[8];

static uint32_t j_vec(v4u a, v4u b, v4u c, v4u d, v4u e, v4u f, v4u g, v4u h)
{
	seen_vec[0] = a, seen_vec[1] = b, seen_vec[2] = c, seen_vec[3] = d;
	seen_vec[4] = e, seen_vec[5] = f, seen_vec[6] = g, seen_vec[7] = h;
	__asm__ volatile("movi v0.16b, #0xff\n\tmovi v1.16b, #0xff\n\tmovi v2.16b, #0xff\n\t"
			 "movi v3.16b, #0xff\n\tmovi v4.16b, #0xff\n\tmovi v5.16b, #0xff\n\t"
			 "movi v6.16b, #0xff\n\tmovi v7.16b, #0xff"
			 ::: "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7");
	jprobe_return();
	return 0;
}

Test(a64_jprobe, vector_arguments_both_halves)
{
	struct jprobe jp = { .kp.symbol_name = "jp_vec", .entry = JPROBE_ENTRY(j_vec) };
	v4u in[8];
	uint32_t want;

	for (unsigned int k = 0; k < 8; k++)
		in[k] = (v4u){ k + 1, 10 * k + 2, 100 * k + 3, 1000 * k + 4 };
	want = jp_vec(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]);
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp_vec(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]), want);
	for (int k = 0; k < 8; k++)
		for (int l = 0; l < 4; l++)
			cr_expect_eq(seen_vec[k][l], in[k][l], "v%d lane %d: %u", k, l,
				     seen_vec[k][l]);
	unregister_jprobe(&jp);
}

/* ============= a first instruction simulated after the handler: b */

__asm__(".text\n.p2align 2\n"
	FN(jp12_thunk) "	b jp12\n" END(jp12_thunk));
long jp12_thunk(long a, long b, long c, long d, long e, long f, long g, long h, int i, long j,
		short k, long l);

Test(a64_jprobe, simulated_first_instruction)
{
	struct jprobe jp = { .kp.symbol_name = "jp12_thunk", .entry = JPROBE_ENTRY(j12) };

	cr_assert_eq(register_jprobe(&jp), 0);
	memset(seen12, 0, sizeof(seen12));
	cr_expect_eq(jp12_thunk(ARGS12), expect12());
	cr_expect_eq(jp12_thunk(ARGS12), expect12());
	cr_expect_eq(seen12[0], 101);
	cr_expect_eq(seen12[11], 14412);
	unregister_jprobe(&jp);
}

/* ===================================== a handler without jprobe_return() */

static int forgot;

static long j12_forgets(long a, long b, long c, long d, long e, long f, long g, long h, int i,
			long j, short k, long l)
{
	forgot++;
	SCRIBBLE(l, 0);
	SCRIBBLE(a, 0);
	return -12345;
}

Test(a64_jprobe, handler_returning_without_jprobe_return)
{
	struct jprobe jp = { .kp.symbol_name = "jp12", .entry = JPROBE_ENTRY(j12_forgets) };
	unsigned long before = jprobes_missing_returns();

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp12(ARGS12), expect12());
	cr_expect_eq(jp12(ARGS12), expect12());
	cr_expect_eq(forgot, 2);
	cr_expect_eq(jprobes_missing_returns() - before, 2);
	cr_expect_eq(jp.kp.nmissed, 0);
	cr_expect_null(kprobe_running());
	unregister_jprobe(&jp);
}

Test(a64_jprobe, jprobe_return_outside_a_handler_returns)
{
	jprobe_return();
	jprobe_return();
	cr_expect_null(kprobe_running());
}

/* ===================================== with a kprobe at the same address */

static char order[8];
static atomic_int norder;
static atomic_ulong kp_pc, post_pc;

static void note(char c)
{
	int i = atomic_fetch_add(&norder, 1);

	if (i < (int)sizeof(order) - 1)
		order[i] = c;
}

static int co_pre(struct kprobe *p, struct pt_regs *regs)
{
	note('p');
	atomic_store(&kp_pc, instruction_pointer(regs));
	return 0;
}

static void co_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	note('P');
	atomic_store(&post_pc, instruction_pointer(regs));
}

static long j12_note(long a, long b, long c, long d, long e, long f, long g, long h, int i,
		     long j, short k, long l)
{
	note('j');
	seen12[11] = l;
	jprobe_return();
	return 0;
}

Test(a64_jprobe, with_a_kprobe_at_the_same_address)
{
	struct kprobe kp = { .symbol_name = "jp12", .pre_handler = co_pre,
			     .post_handler = co_post };
	struct jprobe jp = { .kp.symbol_name = "jp12", .entry = JPROBE_ENTRY(j12_note) };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp.kp.addr, kp.addr);
	seen12[11] = 0;
	cr_expect_eq(jp12(ARGS12), expect12());
	cr_expect_str_eq(order, "pjP", "the jprobe last, the post_handler after the handler");
	cr_expect_eq(seen12[11], 14412);
	cr_expect_eq(atomic_load(&kp_pc), (unsigned long)kp.addr);
	/* the probed instruction ran after the handler: pc past it (a
	 * stepped stp, or what the compiler put first) */
	cr_expect_neq(atomic_load(&post_pc), (unsigned long)kp.addr);
	unregister_jprobe(&jp);
	memset(order, 0, sizeof(order));
	atomic_store(&norder, 0);
	cr_expect_eq(jp12(ARGS12), expect12());
	cr_expect_str_eq(order, "pP", "the kprobe stays");
	unregister_kprobe(&kp);
}

/* ============================================= a handler that faults */

static int fault_calls, fault_trapnr = -1;

static int on_fault(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	fault_calls++;
	fault_trapnr = trapnr;
	return 0;
}

static long j12_faults(long a, long b, long c, long d, long e, long f, long g, long h, int i,
		       long j, short k, long l)
{
	SCRIBBLE(a, 0);
	SCRIBBLE(l, 0);
	(void)ukt_load_int((void *)16);
	jprobe_return();
	return 0;
}

Test(a64_jprobe, handler_fault)
{
	struct jprobe jp = { .kp.symbol_name = "jp12", .entry = JPROBE_ENTRY(j12_faults),
			     .kp.fault_handler = on_fault };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp12(ARGS12), expect12(), "the function runs after the fault");
	cr_expect_eq(fault_calls, 1);
	/* the syndrome's class, a data abort from EL0, from the frame's ESR
	 * record; qemu-user writes none, and then the trap number is 0 */
	cr_expect(fault_trapnr == 0x24 || fault_trapnr == 0, "trapnr %#x", fault_trapnr);
	cr_expect_eq(jp.kp.nmissed, 1);
	cr_expect_null(kprobe_running());
	cr_expect_eq(jp12(ARGS12), expect12());
	cr_expect_eq(fault_calls, 2);
	unregister_jprobe(&jp);
}

/* ================================== a backtrace taken in the handler */

struct walk {
	uintptr_t ip[16];
	int n;
};
static struct walk walk;
static int walk_rc;

static _Unwind_Reason_Code walk_one(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;

	if (w->n == 16)
		return _URC_NORMAL_STOP;
	w->ip[w->n++] = _Unwind_GetIP(ctx);
	return _URC_NO_REASON;
}

static long j12_backtrace(long a, long b, long c, long d, long e, long f, long g, long h, int i,
			  long j, short k, long l)
{
	walk.n = 0;
	walk_rc = _Unwind_Backtrace(walk_one, &walk);
	jprobe_return();
	return 0;
}

Test(a64_jprobe, backtrace_in_the_handler_ends_at_the_stub)
{
	struct jprobe jp = { .kp.symbol_name = "jp12", .entry = JPROBE_ENTRY(j12_backtrace) };
	struct walk warm = { .n = 0 };
	int last;

	_Unwind_Backtrace(walk_one, &warm); /* loads the unwinder now, not in the handler */
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jp12(ARGS12), expect12());
	unregister_jprobe(&jp);
	/* this frame, the handler's, then the stub as its caller, where the
	 * walk ends: the stub's FDE marks the return address undefined */
	last = walk.n - 1;
	if (last > 0 && walk.ip[last] == 0)
		last--; /* libgcc reports the outermost frame's "caller" as 0 */
	cr_assert_geq(last, 1);
	cr_expect_eq(walk.ip[last], (uintptr_t)ukp_jprobe_handler_ret, "last %#lx of %d",
		     (unsigned long)walk.ip[last], walk.n);
	cr_expect_eq(walk_rc, _URC_END_OF_STACK, "the walk ended by itself: %d (%d frames)",
		     walk_rc, walk.n);
}
