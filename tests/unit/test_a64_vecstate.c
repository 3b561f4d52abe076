// SPDX-License-Identifier: MIT
/*
 * test_a64_vecstate.c - AArch64 only: the vector-use proof
 * (src/arch/aarch64/vecuse.c) and the lazy FP/SIMD state of optimized
 * hits. The library's own hit path is proven vector-free; a handler's
 * proof says no for each way A64 code touches the FP/SIMD state (fmov,
 * a NEON add, a q-register store, FPCR through mrs/msr), for code it
 * cannot follow (a call through a pointer) and for libc's strlen and
 * memcpy through the PLT (glibc's arm64 versions use SIMD registers),
 * and yes for plain integer code, through direct calls too and through
 * a bound PLT slot to libc's getpid; a handler
 * proven vector-free is called with the probed code's v0-v31 live and
 * leaves them alone; one swapped in after registration is called with
 * the state saved.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "ukprobes.h"
#include "ukp_test.h"

extern uint32_t ukp_vec_lazy;
extern const char *ukp_vec_lazy_why;
extern uintptr_t ukp_vec_lazy_where;

#define FN(name) ".globl " #name "\n.type " #name ",%function\n" #name ":\n"

/*
 * a64_vec(in, out): v0-v31 loaded from in (512 bytes), a probe point
 * (a64_vec_probe: an add, optimizable) with all of them live, then
 * stored to out. x9 is scratch.
 */
__asm__(".text\n.p2align 4\n"
	FN(a64_vec)
	"	ld1 {v0.16b-v3.16b}, [x0], #64\n	ld1 {v4.16b-v7.16b}, [x0], #64\n"
	"	ld1 {v8.16b-v11.16b}, [x0], #64\n	ld1 {v12.16b-v15.16b}, [x0], #64\n"
	"	ld1 {v16.16b-v19.16b}, [x0], #64\n	ld1 {v20.16b-v23.16b}, [x0], #64\n"
	"	ld1 {v24.16b-v27.16b}, [x0], #64\n	ld1 {v28.16b-v31.16b}, [x0], #64\n"
	".globl a64_vec_probe\n"
	"a64_vec_probe:\n"
	"	add x9, x1, #1\n"
	"	add x9, x9, #1\n"
	"	st1 {v0.16b-v3.16b}, [x1], #64\n	st1 {v4.16b-v7.16b}, [x1], #64\n"
	"	st1 {v8.16b-v11.16b}, [x1], #64\n	st1 {v12.16b-v15.16b}, [x1], #64\n"
	"	st1 {v16.16b-v19.16b}, [x1], #64\n	st1 {v20.16b-v23.16b}, [x1], #64\n"
	"	st1 {v24.16b-v27.16b}, [x1], #64\n	st1 {v28.16b-v31.16b}, [x1], #64\n"
	"	ret\n"
	".size a64_vec, .-a64_vec\n"
	/* handlers in assembly: one instruction each of what the proof
	 * must refuse, then a plain return */
	FN(a64_h_fmov)
	"	fmov d0, x1\n	mov w0, #0\n	ret\n"
	FN(a64_h_neon)
	"	add v1.4s, v2.4s, v3.4s\n	mov w0, #0\n	ret\n"
	FN(a64_h_qstore)
	"	str q5, [sp, #-16]\n	mov w0, #0\n	ret\n"
	FN(a64_h_fpcr)
	"	mrs x2, fpcr\n	mov w0, #0\n	ret\n"
	FN(a64_h_fpsr_w)
	"	msr fpsr, xzr\n	mov w0, #0\n	ret\n"
	/* integer code with a vector instruction behind a branch the walk
	 * must follow */
	FN(a64_h_branchy)
	"	cbz x1, 1f\n	mov w0, #0\n	ret\n"
	"1:	b.ne 2f\n	mov w0, #0\n	ret\n"
	"2:	tbnz x1, #3, 3f\n	mov w0, #0\n	ret\n"
	"3:	movi v0.2d, #0\n	mov w0, #0\n	ret\n"
	/* the same shape, all integer */
	FN(a64_h_branchy_int)
	"	cbz x1, 1f\n	mov w0, #0\n	ret\n"
	"1:	b.ne 2f\n	mov w0, #0\n	ret\n"
	"2:	tbnz x1, #3, 3f\n	mov w0, #0\n	ret\n"
	"3:	ldr x2, [x1]\n	add x2, x2, #1\n	str x2, [x1]\n	mov w0, #0\n	ret\n"
	/* a jump table (br through a computed register) */
	FN(a64_h_br)
	"	adr x2, 1f\n	add x2, x2, x1, lsl #2\n	br x2\n"
	"1:	mov w0, #0\n	ret\n");

int a64_vec(const void *in, void *out);
extern char a64_vec_probe[];
int a64_h_fmov(struct kprobe *, struct pt_regs *);
int a64_h_neon(struct kprobe *, struct pt_regs *);
int a64_h_qstore(struct kprobe *, struct pt_regs *);
int a64_h_fpcr(struct kprobe *, struct pt_regs *);
int a64_h_fpsr_w(struct kprobe *, struct pt_regs *);
int a64_h_branchy(struct kprobe *, struct pt_regs *);
int a64_h_branchy_int(struct kprobe *, struct pt_regs *);
int a64_h_br(struct kprobe *, struct pt_regs *);

static atomic_long hits;

/* Plain integer work: vector-free. */
static int h_count(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	atomic_fetch_add(&hits, 1);
	regs->regs[9] = regs->regs[1] + 1;
	return 0;
}

/* Integer work in a helper it calls directly: vector-free too. */
__attribute__((noinline)) static long helper_mix(long v)
{
	__asm__ volatile("" : "+r"(v));
	return v * 31 + 7;
}

static int h_calls_helper(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	regs->regs[10] = (unsigned long)helper_mix((long)regs->regs[1]);
	atomic_fetch_add(&hits, 1);
	return 0;
}

/* Scribbles over v0-v31 and FPSR, as compiled code using them would. */
static int h_vec(struct kprobe *p, struct pt_regs *regs)
{
	(void)p, (void)regs;
	__asm__ volatile("movi v0.2d, #0\n movi v7.16b, #0x55\n movi v16.2d, #0\n"
			 "movi v31.16b, #0xaa\n msr fpsr, xzr" ::: "v0", "v7", "v16", "v31");
	atomic_fetch_add(&hits, 1);
	return 0;
}

/* Calls libc through the PLT: glibc's arm64 strlen uses SIMD. */
static volatile size_t len_sink;
static int h_libc(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	len_sink = strlen((const char *)regs->regs[1]);
	return 0;
}

/* Calls libc through the PLT, to integer code: glibc's getpid is a
 * system call wrapper. Proven once its GOT slot is bound: the walk
 * follows the PLT stub (adrp, ldr, add, br x17) to libc. */
static volatile long pid_sink;
static int h_libc_int(struct kprobe *p, struct pt_regs *regs)
{
	(void)p, (void)regs;
	pid_sink = getpid();
	return 0;
}

/* Calls through a pointer it cannot follow. */
static long (*volatile some_fn)(long) = helper_mix;
static int h_pointer(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	regs->regs[10] = (unsigned long)some_fn((long)regs->regs[1]);
	return 0;
}

static void register_and_check_lazy(kprobe_pre_handler_t pre)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)a64_vec_probe, .pre_handler = pre };

	/* the proof of the hit path runs at the first registration */
	cr_assert_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
	cr_assert_eq(ukp_vec_lazy, 1, "the hit path was not proven vector-free: %s at %#lx",
		     ukp_vec_lazy_why ? ukp_vec_lazy_why : "?", (unsigned long)ukp_vec_lazy_where);
}

static void roundtrip(int n)
{
	uint8_t in[512], out[512];
	int i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < 512; j++)
			in[j] = (uint8_t)(j * 7 + i + 1);
		memset(out, 0, sizeof(out));
		a64_vec(in, out);
		cr_assert_arr_eq(in, out, sizeof(in), "v0-v31 changed across the probe (round %d)", i);
	}
}

Test(a64_vecstate, the_library_hit_path_is_proven_vector_free)
{
	register_and_check_lazy(h_count);
}

Test(a64_vecstate, handlers_are_judged_by_their_code)
{
	register_and_check_lazy(h_count);
	cr_expect(ukp_vec_free_locking((const void *)h_count), "integer code");
	cr_expect(ukp_vec_free_locking((const void *)h_calls_helper), "a direct call to integer code");
	cr_expect(ukp_vec_free_locking((const void *)a64_h_branchy_int), "integer code, branches");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_fmov), "fmov");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_neon), "a NEON add");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_qstore), "a q-register store");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_fpcr), "mrs fpcr");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_fpsr_w), "msr fpsr");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_branchy), "movi behind branches");
	cr_expect_not(ukp_vec_free_locking((const void *)a64_h_br), "a jump table");
	cr_expect_not(ukp_vec_free_locking((const void *)h_vec), "compiled NEON");
	cr_expect_not(ukp_vec_free_locking((const void *)h_libc), "strlen through the PLT");
	pid_sink = getpid(); /* binds its PLT slot */
	cr_expect(ukp_vec_free_locking((const void *)h_libc_int), "getpid through the PLT");
	cr_expect_not(ukp_vec_free_locking((const void *)h_pointer), "a call through a pointer");
	cr_expect_not(ukp_vec_free_locking((const void *)memcpy), "libc's memcpy");
}

Test(a64_vecstate, a_vector_free_handler_runs_with_the_vector_registers_live)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)a64_vec_probe,
			     .pre_handler = h_calls_helper };

	register_and_check_lazy(h_count);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp));
	roundtrip(50);
	cr_expect_eq(atomic_load(&hits), 50);
	unregister_kprobe(&kp);
}

Test(a64_vecstate, a_vector_handler_runs_with_the_state_saved)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)a64_vec_probe, .pre_handler = h_vec };

	register_and_check_lazy(h_count);
	cr_assert_not(ukp_vec_free_locking((const void *)h_vec));
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp));
	roundtrip(20);
	cr_expect_eq(atomic_load(&hits), 20);
	unregister_kprobe(&kp);
}

Test(a64_vecstate, a_handler_swapped_in_later_is_called_with_the_state_saved)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)a64_vec_probe, .pre_handler = h_count };

	register_and_check_lazy(h_count);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&kp));
	roundtrip(10);
	/* not proven: its pointer no longer matches the proven one */
	*(kprobe_pre_handler_t volatile *)&kp.pre_handler = h_vec;
	roundtrip(10);
	cr_expect_eq(atomic_load(&hits), 20);
	unregister_kprobe(&kp);
}
