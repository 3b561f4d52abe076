// SPDX-License-Identifier: MIT
/*
 * test_a64_probes.c - AArch64 only: probes on every class of instruction
 * through the real breakpoint path (under qemu-user in CI): the
 * simulated ones (b, bl, b.cond, cbz, tbz, br, blr, ret, adr, adrp,
 * ldr/ldrsw literal), the ones stepped out of line (arithmetic, loads
 * and stores through sp, svc), the boosted second hit, a handler that
 * changes pc and x0, post handlers seeing the next pc, a fault of a
 * stepped instruction reaching the program at the probed address, and
 * the refusals (exclusives, brk).
 *
 * Each target is hand-written: a label marks the probed instruction, and
 * the function's result says whether the instruction did what it does
 * without a probe.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "ukprobes.h"
#include "ukp_test.h"

#define FN(name) ".globl " #name "\n.type " #name ",%function\n" #name ":\n"
#define AT(label) ".globl " #label "\n" #label ":\n"

__asm__(".text\n.p2align 4\n"
	/* long a_bcond(long x): x == 5 ? 100 : 200, through b.eq */
	FN(a_bcond)
	"	cmp x0, #5\n"
	AT(a_bcond_at) "	b.eq 1f\n"
	"	mov x0, #200\n	ret\n"
	"1:	mov x0, #100\n	ret\n"
	/* long a_cbz(long x): x == 0 ? 1 : 2 */
	FN(a_cbz)
	AT(a_cbz_at) "	cbz x0, 1f\n"
	"	mov x0, #2\n	ret\n"
	"1:	mov x0, #1\n	ret\n"
	/* long a_tbnz(long x): bit 40 of x set ? 1 : 2 */
	FN(a_tbnz)
	AT(a_tbnz_at) "	tbnz x0, #40, 1f\n"
	"	mov x0, #2\n	ret\n"
	"1:	mov x0, #1\n	ret\n"
	/* long a_b(void): 7, past a b */
	FN(a_b)
	AT(a_b_at) "	b 1f\n"
	"	mov x0, #0\n	ret\n"
	"1:	mov x0, #7\n	ret\n"
	/* long a_bl(long x): x + 3 through a bl (x30 saved around it) */
	FN(a_bl)
	"	stp x29, x30, [sp, #-16]!\n"
	AT(a_bl_at) "	bl a_add3\n"
	"	ldp x29, x30, [sp], #16\n	ret\n"
	FN(a_add3)
	"	add x0, x0, #3\n	ret\n"
	/* long a_blr(long x): x + 3 through blr x9 */
	FN(a_blr)
	"	stp x29, x30, [sp, #-16]!\n"
	"	adrp x9, a_add3\n	add x9, x9, :lo12:a_add3\n"
	AT(a_blr_at) "	blr x9\n"
	"	ldp x29, x30, [sp], #16\n	ret\n"
	/* long a_br(void): 9 through br x9 */
	FN(a_br)
	"	adr x9, 1f\n"
	AT(a_br_at) "	br x9\n"
	"	mov x0, #0\n	ret\n"
	"1:	mov x0, #9\n	ret\n"
	/* long a_ret(long x): x, the ret itself probed */
	FN(a_ret)
	AT(a_ret_at) "	ret\n"
	/* uintptr_t a_adr(void): the address of a_adr_lit, by adr */
	FN(a_adr)
	AT(a_adr_at) "	adr x0, a_adr_lit\n"
	"	ret\n"
	FN(a_adrp)
	AT(a_adrp_at) "	adrp x0, a_data\n"
	"	add x0, x0, :lo12:a_data\n	ret\n"
	/* long a_ldr_lit(void): the 64-bit literal */
	FN(a_ldr_lit)
	AT(a_ldr_lit_at) "	ldr x0, a_adr_lit\n"
	"	ret\n"
	/* long a_ldrsw_lit(void): the sign-extended 32-bit literal */
	FN(a_ldrsw_lit)
	AT(a_ldrsw_lit_at) "	ldrsw x0, a_w_lit\n"
	"	ret\n"
	".p2align 3\n"
	AT(a_adr_lit) ".quad 0x1122334455667788\n"
	AT(a_w_lit) ".word 0xfffffff6\n"
	".p2align 2\n"
	/* long a_ool(long x): stepped out of line: add, a store and load
	 * through sp */
	FN(a_ool)
	AT(a_ool_at) "	add x0, x0, #11\n"
	"	sub sp, sp, #16\n"
	AT(a_str_at) "	str x0, [sp, #8]\n"
	AT(a_ldr_at) "	ldr x1, [sp, #8]\n"
	"	add sp, sp, #16\n"
	"	add x0, x0, x1\n	ret\n"
	/* long a_svc(void): getpid through svc, stepped out of line */
	FN(a_svc)
	"	mov x8, #172\n"
	AT(a_svc_at) "	svc #0\n"
	"	ret\n"
	/* int a_load(const int *p): the probed load faults for NULL */
	FN(a_load)
	AT(a_load_at) "	ldr w0, [x0]\n"
	"	ret\n"
	/* long a_excl(long *p): an exclusive sequence, atomic increment */
	FN(a_excl)
	"1:	ldxr x1, [x0]\n"	/* no labels: the scan starts at a_excl */
	"	add x1, x1, #1\n"
	"	stxr w2, x1, [x0]\n"
	"	cbnz w2, 1b\n"
	"	mov x0, x1\n	ret\n"
	FN(a_brk)
	AT(a_brk_at) "	brk #0x55\n"
	"	ret\n"
	".data\n.p2align 12\n" AT(a_data) ".quad 42\n"
	".text\n");

long a_bcond(long), a_cbz(long), a_tbnz(long), a_b(void), a_bl(long), a_blr(long);
long a_add3(long);
long a_br(void), a_ret(long), a_ldr_lit(void), a_ldrsw_lit(void), a_ool(long), a_svc(void);
uintptr_t a_adr(void), a_adrp(void);
int a_load(const int *);
long a_excl(long *);
extern char a_bcond_at[], a_cbz_at[], a_tbnz_at[], a_b_at[], a_bl_at[], a_blr_at[], a_br_at[],
	a_ret_at[], a_adr_at[], a_adrp_at[], a_ldr_lit_at[], a_ldrsw_lit_at[], a_ool_at[],
	a_str_at[], a_ldr_at[], a_svc_at[], a_load_at[],
	a_brk_at[], a_adr_lit[], a_data[];

static atomic_int pre_hits, post_hits;
static atomic_ulong pre_pc, post_pc;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&pre_hits, 1);
	atomic_store(&pre_pc, instruction_pointer(regs));
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&post_hits, 1);
	atomic_store(&post_pc, instruction_pointer(regs));
}

/* Probe addr with kp (the caller's: the library keeps using it), with a
 * post handler when post; the hit counters start again. */
static void probe_at(struct kprobe *kp, void *addr, bool post)
{
	int r;

	*kp = (struct kprobe){ .addr = addr, .pre_handler = count_pre,
			       .post_handler = post ? count_post : NULL };
	atomic_store(&pre_hits, 0);
	atomic_store(&post_hits, 0);
	r = register_kprobe(kp);
	cr_assert_eq(r, 0, "register at %p: %d", addr, r);
	cr_assert(ukt_breakpoint_at(addr));
}

Test(a64_simulated, conditional_branches)
{
	struct kprobe kp;

	probe_at(&kp, a_bcond_at, true);

	cr_expect_eq(a_bcond(5), 100);
	cr_expect_eq(a_bcond(6), 200);
	cr_expect_eq(atomic_load(&pre_hits), 2);
	cr_expect_eq(atomic_load(&pre_pc), (unsigned long)a_bcond_at, "pc at the brk, as the kernel");
	cr_expect_eq(atomic_load(&post_hits), 2);
	cr_expect_eq(atomic_load(&post_pc), (unsigned long)a_bcond_at + 4, "not taken: the next");
	unregister_kprobe(&kp);

	probe_at(&kp, a_cbz_at, false);
	cr_expect_eq(a_cbz(0), 1);
	cr_expect_eq(a_cbz(3), 2);
	unregister_kprobe(&kp);
	probe_at(&kp, a_tbnz_at, false);
	cr_expect_eq(a_tbnz(1L << 40), 1);
	cr_expect_eq(a_tbnz(1L << 39), 2);
	cr_expect_eq(atomic_load(&pre_hits), 2);
	unregister_kprobe(&kp);
}

Test(a64_simulated, branches_calls_and_returns)
{
	struct kprobe kp;

	probe_at(&kp, a_b_at, false);

	cr_expect_eq(a_b(), 7);
	unregister_kprobe(&kp);
	probe_at(&kp, a_bl_at, false);
	cr_expect_eq(a_bl(10), 13, "bl: x30 set to the instruction after it, not the slot");
	unregister_kprobe(&kp);
	probe_at(&kp, a_blr_at, false);
	cr_expect_eq(a_blr(20), 23);
	unregister_kprobe(&kp);
	probe_at(&kp, a_br_at, false);
	cr_expect_eq(a_br(), 9);
	unregister_kprobe(&kp);
	probe_at(&kp, a_ret_at, true);
	cr_expect_eq(a_ret(77), 77);
	cr_expect_eq(atomic_load(&post_hits), 1);
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&pre_hits), 1);
}

Test(a64_simulated, pc_relative_values)
{
	struct kprobe kp;

	probe_at(&kp, a_adr_at, false);

	cr_expect_eq(a_adr(), (uintptr_t)a_adr_lit);
	unregister_kprobe(&kp);
	probe_at(&kp, a_adrp_at, false);
	cr_expect_eq(a_adrp(), (uintptr_t)a_data);
	cr_expect_eq(*(long *)a_adrp(), 42);
	unregister_kprobe(&kp);
	probe_at(&kp, a_ldr_lit_at, false);
	cr_expect_eq((unsigned long)a_ldr_lit(), 0x1122334455667788ul);
	unregister_kprobe(&kp);
	probe_at(&kp, a_ldrsw_lit_at, false);
	cr_expect_eq(a_ldrsw_lit(), -10);
	cr_expect_eq(atomic_load(&pre_hits), 1);
	unregister_kprobe(&kp);
}

Test(a64_out_of_line, arithmetic_loads_stores_and_boost)
{
	struct kprobe a;

	probe_at(&a, a_ool_at, false);
	struct kprobe s = { .addr = (void *)a_str_at, .pre_handler = count_pre,
			    .post_handler = count_post };
	struct kprobe l = { .addr = (void *)a_ldr_at, .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&s), 0);
	cr_assert_eq(register_kprobe(&l), 0);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(a_ool(i), 2 * (i + 11));
	cr_expect_eq(atomic_load(&pre_hits), 9);
	cr_expect_eq(atomic_load(&post_hits), 3);
	cr_expect_eq(atomic_load(&post_pc), (unsigned long)a_str_at + 4);
	unregister_kprobe(&a);
	unregister_kprobe(&s);
	unregister_kprobe(&l);
	cr_expect_eq(a_ool(1), 24);
	cr_expect(!ukt_breakpoint_at(a_ool_at), "unregistered: the original instruction back");
}

Test(a64_out_of_line, system_call)
{
	struct kprobe kp;

	probe_at(&kp, a_svc_at, true);

	cr_expect_eq(a_svc(), (long)getpid());
	cr_expect_eq(a_svc(), (long)getpid());
	cr_expect_eq(atomic_load(&pre_hits), 2);
	cr_expect_eq(atomic_load(&post_hits), 2);
	unregister_kprobe(&kp);
}

/* A pre handler that skips the instruction: x0 = 555, pc past the
 * probed ret's caller... here: return from a_ret with x0 changed. */
static int redirect_pre(struct kprobe *p, struct pt_regs *regs)
{
	regs->regs[0] = 555;
	instruction_pointer_set(regs, regs->regs[30]); /* return now */
	return 1;
}

Test(a64_handlers, change_registers_and_pc)
{
	struct kprobe kp = { .addr = (void *)a_bcond_at, .pre_handler = redirect_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(a_bcond(5), 555);
	unregister_kprobe(&kp);
	cr_expect_eq(a_bcond(5), 100);
}

static sigjmp_buf fault_jb;
static volatile uintptr_t fault_pc;

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	fault_pc = uc->uc_mcontext.pc;
	siglongjmp(fault_jb, 1);
}

Test(a64_out_of_line, fault_reaches_the_program_at_the_probed_address)
{
	struct kprobe kp;

	probe_at(&kp, a_load_at, false);
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	int v = 31;

	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	cr_expect_eq(a_load(&v), 31);
	if (!sigsetjmp(fault_jb, 1)) {
		a_load(NULL);
		cr_assert_fail("no fault");
	}
	cr_expect_eq(fault_pc, (uintptr_t)a_load_at, "the fault's pc is the probed load's");
	cr_expect_eq(atomic_load(&pre_hits), 2);
	unregister_kprobe(&kp);
}

Test(a64_refused, exclusives_and_breakpoints)
{
	char *a_excl_ld = (char *)a_excl, *a_excl_add = a_excl_ld + 4, *a_excl_st = a_excl_ld + 8;
	struct kprobe kp = { .addr = (void *)a_excl_ld };
	long v = 41;

	cr_expect_eq(register_kprobe(&kp), -EINVAL, "ldxr");
	kp = (struct kprobe){ .addr = (void *)a_excl_add };
	cr_expect_eq(register_kprobe(&kp), -EINVAL, "between ldxr and stxr");
	kp = (struct kprobe){ .addr = (void *)a_excl_st };
	cr_expect_eq(register_kprobe(&kp), -EINVAL, "stxr");
	cr_expect_eq(a_excl(&v), 42, "the sequence untouched");
	kp = (struct kprobe){ .addr = (void *)a_brk_at };
	cr_expect_eq(register_kprobe(&kp), -EILSEQ, "brk");
}

/* ---------------------------------------------------- return probes */

static atomic_long ret_seen[8];
static atomic_int nret;

static int ret_record(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	int i = atomic_fetch_add(&nret, 1);

	if (i < 8)
		atomic_store(&ret_seen[i], (long)regs_return_value(regs));
	return 0;
}

static int ret_double(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	regs->regs[0] *= 2;
	return 0;
}

struct entry_data { long arg; };

static int entry_keep(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	((struct entry_data *)ri->data)->arg = (long)regs_get_kernel_argument(regs, 0);
	return 0;
}

static int ret_check_data(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	/* a_add3: returns its argument + 3 */
	if ((long)regs_return_value(regs) == ((struct entry_data *)ri->data)->arg + 3)
		atomic_fetch_add(&nret, 1);
	return 0;
}

static void ret_reset(void)
{
	atomic_store(&nret, 0);
	for (int i = 0; i < 8; i++)
		atomic_store(&ret_seen[i], 0);
}

Test(a64_kretprobe, leaf_and_nested_returns)
{
	struct kretprobe leaf = { .kp.addr = (void *)a_add3, .handler = ret_record,
				  .maxactive = 4 };
	struct kretprobe outer = { .kp.addr = (void *)a_bl, .handler = ret_record,
				   .maxactive = 4 };

	ret_reset();
	cr_assert_eq(register_kretprobe(&leaf), 0);
	cr_expect_eq(a_add3(4), 7);
	cr_expect_eq(atomic_load(&nret), 1);
	cr_expect_eq(atomic_load(&ret_seen[0]), 7);
	cr_assert_eq(register_kretprobe(&outer), 0);
	/* a_bl calls a_add3 with bl: the inner return first, then the outer */
	cr_expect_eq(a_bl(10), 13);
	cr_expect_eq(atomic_load(&nret), 3);
	cr_expect_eq(atomic_load(&ret_seen[1]), 13);
	cr_expect_eq(atomic_load(&ret_seen[2]), 13);
	unregister_kretprobe(&outer);
	unregister_kretprobe(&leaf);
	cr_expect_eq(leaf.nmissed + outer.nmissed, 0);
	cr_expect_eq(a_bl(1), 4);
	cr_expect_eq(atomic_load(&nret), 3, "unregistered: no more returns");
}

Test(a64_kretprobe, handler_changes_return_value_and_entry_data)
{
	struct kretprobe dbl = { .kp.addr = (void *)a_add3, .handler = ret_double,
				 .maxactive = 2 };
	struct kretprobe data = { .kp.addr = (void *)a_ool, .handler = ret_check_data,
				  .entry_handler = entry_keep,
				  .data_size = sizeof(struct entry_data), .maxactive = 2 };

	cr_assert_eq(register_kretprobe(&dbl), 0);
	cr_expect_eq(a_add3(1), 8);
	cr_expect_eq(a_blr(1), 8, "through blr: the same");
	unregister_kretprobe(&dbl);
	cr_expect_eq(a_add3(1), 4);
	(void)data;
	data.kp.addr = (void *)a_add3;
	ret_reset();
	cr_assert_eq(register_kretprobe(&data), 0);
	for (long i = 0; i < 5; i++)
		cr_expect_eq(a_add3(i * 100), i * 100 + 3);
	cr_expect_eq(atomic_load(&nret), 5, "the entry's data at each return");
	unregister_kretprobe(&data);
}

static long a_fact(long n);
/* through a pointer the compiler cannot see: real recursion, no loop */
static long (*volatile a_fact_p)(long) = a_fact;

__attribute__((noinline)) static long a_fact(long n)
{
	return n <= 1 ? 1 : n * a_fact_p(n - 1);
}

static sigjmp_buf leave_jb;

__attribute__((noinline)) static long a_leave(long n)
{
	__asm__ volatile("" ::: "memory");
	if (n < 0)
		siglongjmp(leave_jb, 1);
	return n + 1;
}

Test(a64_kretprobe, recursion_and_longjmp)
{
	struct kretprobe rp = { .kp.addr = (void *)a_fact, .handler = ret_record,
				.maxactive = 16 };
	struct kretprobe lp = { .kp.addr = (void *)a_leave, .handler = ret_record,
				.maxactive = 4 };

	ret_reset();
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(a_fact(5), 120);
	cr_expect_eq(atomic_load(&nret), 5);
	cr_expect_eq(atomic_load(&ret_seen[0]), 1, "the deepest returns first");
	cr_expect_eq(atomic_load(&ret_seen[4]), 120);
	unregister_kretprobe(&rp);

	ret_reset();
	cr_assert_eq(register_kretprobe(&lp), 0);
	if (!sigsetjmp(leave_jb, 0))
		a_leave(-1);
	/* the frame left by longjmp: dropped, without a handler, when the
	 * next call uses its stack */
	cr_expect_eq(a_leave(1), 2);
	cr_expect_eq(a_leave(2), 3);
	cr_expect_eq(atomic_load(&nret), 2);
	cr_expect_eq(atomic_load(&ret_seen[0]), 2);
	unregister_kretprobe(&lp);
	cr_expect_eq(lp.nmissed, 0);
}

/* ---------------------------------------------------- jump optimization */

static int x0_plus_100(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&pre_hits, 1);
	regs->regs[0] += 100;
	return 0;
}

Test(a64_optimized, every_class_relocated_into_a_detour)
{
	static struct kprobe kps[14];
	void *at[] = { a_bcond_at, a_cbz_at, a_tbnz_at, a_b_at, a_bl_at, a_blr_at, a_br_at,
		       a_ret_at, a_adr_at, a_adrp_at, a_ldr_lit_at, a_ldrsw_lit_at, a_ool_at,
		       a_svc_at };
	unsigned int i, n = sizeof(at) / sizeof(at[0]);

	atomic_store(&pre_hits, 0);
	for (i = 0; i < n; i++) {
		kps[i] = (struct kprobe){ .addr = at[i], .pre_handler = count_pre };
		cr_assert_eq(register_kprobe(&kps[i]), 0, "%u", i);
	}
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	/* all but the svc: a system call is not relocated (as on x86-64: a
	 * thread blocked in it would be inside the detour) */
	for (i = 0; i < n; i++)
		cr_expect(kprobe_optimized(&kps[i]) == (at[i] != (void *)a_svc_at),
			  "probe %u at %p: optimized %d", i, at[i], kprobe_optimized(&kps[i]));
	for (int r = 0; r < 2; r++) {
		cr_expect_eq(a_bcond(5), 100);
		cr_expect_eq(a_bcond(6), 200);
		cr_expect_eq(a_cbz(0), 1);
		cr_expect_eq(a_cbz(3), 2);
		cr_expect_eq(a_tbnz(1L << 40), 1);
		cr_expect_eq(a_tbnz(1L << 39), 2);
		cr_expect_eq(a_b(), 7);
		cr_expect_eq(a_bl(10), 13);
		cr_expect_eq(a_blr(20), 23);
		cr_expect_eq(a_br(), 9);
		cr_expect_eq(a_ret(77), 77);
		cr_expect_eq(a_adr(), (uintptr_t)a_adr_lit);
		cr_expect_eq(a_adrp(), (uintptr_t)a_data);
		cr_expect_eq((unsigned long)a_ldr_lit(), 0x1122334455667788ul);
		cr_expect_eq(a_ldrsw_lit(), -10);
		cr_expect_eq(a_ool(1), 24);
		cr_expect_eq(a_svc(), (long)getpid());
	}
	/* a_bcond, a_cbz, a_tbnz twice a round; a_ret through a_bl's and
	 * a_blr's callee is not probed (a_add3 is) */
	cr_expect_eq(atomic_load(&pre_hits), 2 * 17);
	for (i = 0; i < n; i++)
		unregister_kprobe(&kps[i]);
	cr_expect_eq(a_bcond(5), 100);
	cr_expect_eq(atomic_load(&pre_hits), 2 * 17, "unregistered");
}

Test(a64_optimized, handlers_change_registers)
{
	struct kprobe kp = { .addr = (void *)a_add3, .pre_handler = x0_plus_100 };
	struct kretprobe rp = { .kp.addr = (void *)a_ool, .handler = ret_double, .maxactive = 4 };

	atomic_store(&pre_hits, 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_expect(kprobe_optimized(&kp));
	cr_expect(kprobe_optimized(&rp.kp), "a return probe's entry too");
	cr_expect_eq(a_add3(1), 104, "x0 as the handler left it");
	cr_expect_eq(a_bl(1), 104);
	cr_expect_eq(a_ool(1), 48, "the return probe of an optimized entry");
	cr_expect_eq(atomic_load(&pre_hits), 2);
	unregister_kretprobe(&rp);
	unregister_kprobe(&kp);
	cr_expect_eq(a_add3(1), 4);
}

/* -fpatchable-function-entry: the entry's nops are an [FTRACE] probe
 * point: the jump replaces a nop, nothing is relocated, and post
 * handlers run too (pc past the nop). */
__attribute__((patchable_function_entry(2), noipa)) long a_patchable(long x)
{
	return x * 3;
}

Test(a64_optimized, ftrace_on_patchable_entry_nops)
{
	struct kprobe kp = { .symbol_name = "a_patchable", .pre_handler = count_pre,
			     .post_handler = count_post };

	atomic_store(&pre_hits, 0);
	atomic_store(&post_hits, 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_expect(kp.flags & KPROBE_FLAG_FTRACE, "flags %#x", kp.flags);
	/* the nop is now a b to the detour (an [FTRACE] probe is not
	 * "optimized" in the kernel's sense, but uses the jump) */
	cr_expect_eq(ukt_opcode_at(kp.addr) & 0xfc000000u, 0x14000000u, "%#x",
		     ukt_opcode_at(kp.addr));
	cr_expect_eq(a_patchable(5), 15);
	cr_expect_eq(a_patchable(7), 21);
	cr_expect_eq(atomic_load(&pre_hits), 2);
	cr_expect_eq(atomic_load(&post_hits), 2);
	cr_expect_eq(atomic_load(&pre_pc), (unsigned long)kp.addr);
	cr_expect_eq(atomic_load(&post_pc), (unsigned long)kp.addr + 4);
	unregister_kprobe(&kp);
	cr_expect_eq(a_patchable(2), 6);
}
