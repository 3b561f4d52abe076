// SPDX-License-Identifier: MIT
/*
 * test_threads.c - probes under concurrency: several threads hit probes
 * while the main thread registers, unregisters, enables and disables
 * probes on the same function, on the same addresses (aggregates) and on
 * neighbouring instructions.
 *
 * The target is written in assembly so that every one of its instructions
 * runs exactly once per call (no branch), whatever the compiler does: a
 * probe on any instruction of it must count exactly one hit per call.
 * It mixes instructions run out of line (push, mov, lea, a rip-relative
 * add, xor, pop) with emulated ones (call, ret).
 *
 * Handlers record into atomics and thread-local arrays only; everything
 * is asserted afterwards, from the main thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ukprobes.h"
#include "arch/arch.h"
#include "ukp_test.h"

/* ------------------------------------------------------------ targets */

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl thr_asm_target\n"
	"	.type thr_asm_target, @function\n"
	"thr_asm_target:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi,%rdi), %eax\n"
	"	add thr_asm_bias(%rip), %eax\n"
	"	call thr_asm_leaf\n"
	"	xor $0x55, %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".Ltgt_end:\n"
	"	.size thr_asm_target, .-thr_asm_target\n"
	"	.p2align 4\n"
	"	.globl thr_asm_leaf\n"
	"	.type thr_asm_leaf, @function\n"
	"thr_asm_leaf:\n"
	"	add $5, %eax\n"
	"	ret\n"
	".Lleaf_end:\n"
	"	.size thr_asm_leaf, .-thr_asm_leaf\n"
	"	.section .rodata\n"
	"	.p2align 2\n"
	"	.globl thr_asm_sizes\n"
	"thr_asm_sizes:\n"
	"	.long .Ltgt_end - thr_asm_target, .Lleaf_end - thr_asm_leaf\n"
	"thr_asm_bias:\n"
	"	.long 1000\n"
	"	.text\n");

int thr_asm_target(int x);
void thr_asm_leaf(void);
extern const int thr_asm_sizes[2];

static int asm_expect(int x)
{
	return (2 * x + 1 + 1000 + 5) ^ 0x55;
}

/* Called through a volatile pointer so that no call is optimised away. */
static int (*volatile asm_target_fp)(int) __attribute__((unused)) = thr_asm_target;

UKP_TARGET int thr_c_target(int x)
{
	int r = x * 7;

	__asm__ volatile("" : "+r"(r));
	return r - 3;
}

static int (*volatile c_target_fp)(int) __attribute__((unused)) = thr_c_target;

/* --------------------------------------------------------------- helpers */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/*
 * Instruction boundaries of a function, found with the arch decoder:
 * fills addrs[] and returns how many instructions there are.
 */
static int insn_boundaries(const void *fn, size_t size, uintptr_t *addrs, int max)
{
	const uint8_t *code = fn;
	size_t off = 0;
	int n = 0;

	while (off < size && n < max) {
		struct ukp_arch_insn ai;
		int ret;

		cr_assert_eq(arch_check_boundary(code, off, size), 0, "offset %zu", off);
		ret = arch_prepare_insn(&ai, NULL, code + off, size - off, (uintptr_t)code + off,
					(uintptr_t)code + off);
		cr_assert_eq(ret, 0, "offset %zu: %d", off, ret);
		addrs[n++] = (uintptr_t)code + off;
		off += ai.len;
	}
	cr_assert_eq(off, size);
	return n;
}

/* ------------------------------------------------------ probe records */

#define MAXP 32

struct tprobe {
	struct kprobe kp;
	int idx;
	_Atomic unsigned long pre;
	_Atomic unsigned long post;
};

static struct tprobe probes[MAXP];
static uintptr_t probe_addr[MAXP];
static int nprobes;

/* The current call of this thread (0: not a worker) and, per probe, the
 * call in which this thread last ran the probe's handlers: a second run
 * in the same call is a double count. */
static __thread unsigned long tls_call;
static __thread unsigned long tls_seen_pre[MAXP];
static __thread unsigned long tls_seen_post[MAXP];

static _Atomic unsigned long dup_pre, dup_post, bad_kp, bad_results;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct tprobe *t = (struct tprobe *)p;

	if (t < probes || t >= probes + MAXP || kprobe_running() != p) {
		atomic_fetch_add(&bad_kp, 1);
		return 0;
	}
	if (tls_call) {
		if (tls_seen_pre[t->idx] == tls_call)
			atomic_fetch_add(&dup_pre, 1);
		tls_seen_pre[t->idx] = tls_call;
	}
	atomic_fetch_add_explicit(&t->pre, 1, memory_order_relaxed);
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	struct tprobe *t = (struct tprobe *)p;

	if (t < probes || t >= probes + MAXP || kprobe_running() != p) {
		atomic_fetch_add(&bad_kp, 1);
		return;
	}
	if (tls_call) {
		if (tls_seen_post[t->idx] == tls_call)
			atomic_fetch_add(&dup_post, 1);
		tls_seen_post[t->idx] = tls_call;
	}
	atomic_fetch_add_explicit(&t->post, 1, memory_order_relaxed);
}

/* Two probes per instruction of the asm target and of its leaf (so that
 * sites become aggregates and lose children again). */
static void setup_asm_probes(void)
{
	uintptr_t a[16], b[4];
	int na, nb, i;

	na = insn_boundaries((const void *)thr_asm_target, (size_t)thr_asm_sizes[0], a, 16);
	cr_assert_eq(na, 8, "thr_asm_target has %d instructions", na);
	nb = insn_boundaries((const void *)thr_asm_leaf, (size_t)thr_asm_sizes[1], b, 4);
	cr_assert_eq(nb, 2);
	nprobes = 0;
	for (i = 0; i < na + nb; i++) {
		uintptr_t addr = i < na ? a[i] : b[i - na];

		for (int k = 0; k < 2; k++) {
			struct tprobe *t = &probes[nprobes];

			memset(t, 0, sizeof(*t));
			t->idx = nprobes;
			t->kp.pre_handler = count_pre;
			t->kp.post_handler = count_post;
			probe_addr[nprobes] = addr;
			nprobes++;
		}
	}
}

static void reset_counts(void)
{
	for (int i = 0; i < nprobes; i++) {
		atomic_store(&probes[i].pre, 0);
		atomic_store(&probes[i].post, 0);
	}
}

/* ----------------------------------------------------- worker threads */

#define NTHREADS 4

enum { PH_EXACT, PH_FREE, PH_QUIT };

static pthread_barrier_t bar_start, bar_end;
static _Atomic int phase_kind;
static _Atomic bool phase_stop;
static unsigned long calls_per_thread;
static _Atomic unsigned long phase_calls;
static int (*volatile worker_fn)(int);
static int (*worker_expect)(int);

static void one_call(void)
{
	int x, r;

	tls_call++;
	x = (int)(tls_call & 0xffff);
	r = worker_fn(x);
	if (r != worker_expect(x))
		atomic_fetch_add(&bad_results, 1);
}

static void *phase_worker(void *arg)
{
	(void)arg;
	for (;;) {
		unsigned long n = 0;
		int kind;

		pthread_barrier_wait(&bar_start);
		kind = atomic_load(&phase_kind);
		if (kind == PH_QUIT)
			return NULL;
		if (kind == PH_EXACT) {
			for (; n < calls_per_thread; n++)
				one_call();
		} else {
			while (!atomic_load_explicit(&phase_stop, memory_order_relaxed)) {
				one_call();
				n++;
			}
		}
		atomic_fetch_add(&phase_calls, n);
		pthread_barrier_wait(&bar_end);
	}
}

/* ------------------------------------------------ probe state machine */

enum pstate { P_UNREG, P_ENABLED, P_DISABLED };

static enum pstate pstate[MAXP];
static unsigned long op_errors;
static char op_error_text[256];

static void op_error(const char *what, int i, int ret)
{
	if (!op_errors++)
		snprintf(op_error_text, sizeof(op_error_text), "%s probe %d (%#lx): %d", what, i,
			 (unsigned long)probe_addr[i], ret);
}

static void do_register(int i, bool disabled)
{
	struct tprobe *t = &probes[i];
	int ret;

	t->kp.addr = (kprobe_opcode_t *)probe_addr[i];
	t->kp.symbol_name = NULL;
	t->kp.offset = 0;
	t->kp.flags = disabled ? KPROBE_FLAG_DISABLED : 0;
	ret = register_kprobe(&t->kp);
	if (ret)
		op_error("register", i, ret);
	else
		pstate[i] = disabled ? P_DISABLED : P_ENABLED;
}

static void set_state(int i, enum pstate want)
{
	int ret;

	if (pstate[i] == want)
		return;
	switch (want) {
	case P_UNREG:
		unregister_kprobe(&probes[i].kp);
		if (probes[i].kp.addr != (kprobe_opcode_t *)probe_addr[i])
			op_error("unregister cleared addr of", i, 0);
		pstate[i] = P_UNREG;
		break;
	case P_ENABLED:
		if (pstate[i] == P_UNREG) {
			do_register(i, false);
		} else {
			ret = enable_kprobe(&probes[i].kp);
			if (ret)
				op_error("enable", i, ret);
			else
				pstate[i] = P_ENABLED;
		}
		break;
	case P_DISABLED:
		if (pstate[i] == P_UNREG) {
			do_register(i, true);
		} else {
			ret = disable_kprobe(&probes[i].kp);
			if (ret)
				op_error("disable", i, ret);
			else
				pstate[i] = P_DISABLED;
		}
		break;
	}
}

/* Several probes at once through the batch calls. */
static void batch_op(int exclude)
{
	struct kprobe *kps[MAXP];
	int idx[MAXP], n = 0, i, ret;
	bool reg = rnd() & 1;

	for (i = 0; i < nprobes; i++) {
		if (i == exclude || (rnd() & 3))
			continue;
		if (reg && pstate[i] == P_UNREG) {
			probes[i].kp.addr = (kprobe_opcode_t *)probe_addr[i];
			probes[i].kp.flags = 0;
			kps[n] = &probes[i].kp;
			idx[n++] = i;
		} else if (!reg && pstate[i] != P_UNREG) {
			kps[n] = &probes[i].kp;
			idx[n++] = i;
		}
	}
	if (!n)
		return;
	if (reg) {
		ret = register_kprobes(kps, n);
		if (ret) {
			op_error("register_kprobes", idx[0], ret);
			return;
		}
		for (i = 0; i < n; i++)
			pstate[idx[i]] = P_ENABLED;
	} else {
		unregister_kprobes(kps, n);
		for (i = 0; i < n; i++)
			pstate[idx[i]] = P_UNREG;
	}
}

static void random_op(int exclude)
{
	int i;

	if ((rnd() % 8) == 0) {
		batch_op(exclude);
		return;
	}
	do
		i = (int)(rnd() % (uint64_t)nprobes);
	while (i == exclude);
	set_state(i, (enum pstate)(rnd() % 3));
}

static void start_workers(pthread_t *th, int (*fn)(int), int (*expect)(int))
{
	worker_fn = fn;
	worker_expect = expect;
	pthread_barrier_init(&bar_start, NULL, NTHREADS + 1);
	pthread_barrier_init(&bar_end, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, phase_worker, NULL), 0);
}

static void stop_workers(pthread_t *th)
{
	atomic_store(&phase_kind, PH_QUIT);
	pthread_barrier_wait(&bar_start);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar_start);
	pthread_barrier_destroy(&bar_end);
}

static unsigned long run_exact_phase(unsigned long per_thread)
{
	calls_per_thread = per_thread;
	atomic_store(&phase_calls, 0);
	atomic_store(&phase_kind, PH_EXACT);
	pthread_barrier_wait(&bar_start);
	pthread_barrier_wait(&bar_end);
	return atomic_load(&phase_calls);
}

/* ------------------------------------------------------------- tests */

/*
 * ~1 s of churn on every instruction of the target (and two probes per
 * instruction) while four threads call it. Two kinds of phase alternate:
 *  - exact: the main thread sets a random configuration while the
 *    workers wait, then they make a known number of calls: every enabled
 *    probe counts exactly that many pre and post hits, every disabled or
 *    unregistered one none;
 *  - free: the workers call in a loop while the main thread changes
 *    everything at random, except one anchor probe that stays registered
 *    and enabled for the whole phase and must count every call exactly
 *    (its site gains and loses siblings, its neighbours come and go).
 * In both, no handler may run twice for one call, results stay right and
 * nothing crashes.
 */
Test(threads, churn_with_exact_accounting, .timeout = 30)
{
	pthread_t th[NTHREADS];
	uint64_t t_end, seed;
	uint8_t orig[64], orig_leaf[16];
	unsigned long exact_phases = 0, free_phases = 0, ops = 0;
	unsigned long exact_bad = 0, anchor_bad = 0, bound_bad = 0;
	char first_bad[256] = "";
	int i;

	seed = now_ns() ^ ((uint64_t)getpid() << 32);
	rng_state = seed | 1;
	fprintf(stderr, "threads churn: seed %#llx\n", (unsigned long long)seed);
	memcpy(orig, (const void *)thr_asm_target, (size_t)thr_asm_sizes[0]);
	memcpy(orig_leaf, (const void *)thr_asm_leaf, (size_t)thr_asm_sizes[1]);
	setup_asm_probes();
	for (i = 0; i < nprobes; i++)
		pstate[i] = P_UNREG;
	start_workers(th, thr_asm_target, asm_expect);

	t_end = now_ns() + 1000000000ull;
	while (now_ns() < t_end) {
		unsigned long calls;

		/* exact phase */
		for (i = 0; i < nprobes; i++)
			set_state(i, (enum pstate)(rnd() % 3));
		reset_counts();
		calls = run_exact_phase(100 + rnd() % 200);
		exact_phases++;
		for (i = 0; i < nprobes; i++) {
			unsigned long want = pstate[i] == P_ENABLED ? calls : 0;
			unsigned long pre = atomic_load(&probes[i].pre);
			unsigned long post = atomic_load(&probes[i].post);

			if (pre != want || post != want) {
				if (!exact_bad++)
					snprintf(first_bad, sizeof(first_bad),
						 "exact phase: probe %d (%#lx, state %d): pre %lu post %lu, want %lu",
						 i, (unsigned long)probe_addr[i], pstate[i], pre, post, want);
			}
		}

		/* free-running phase with an anchor */
		int anchor = (int)(rnd() % (uint64_t)nprobes);
		uint64_t t_phase;

		set_state(anchor, P_ENABLED);
		reset_counts();
		atomic_store(&phase_calls, 0);
		atomic_store(&phase_stop, false);
		atomic_store(&phase_kind, PH_FREE);
		pthread_barrier_wait(&bar_start);
		t_phase = now_ns() + 40000000ull;
		while (now_ns() < t_phase) {
			random_op(anchor);
			ops++;
		}
		atomic_store(&phase_stop, true);
		pthread_barrier_wait(&bar_end);
		free_phases++;
		calls = atomic_load(&phase_calls);
		if (atomic_load(&probes[anchor].pre) != calls ||
		    atomic_load(&probes[anchor].post) != calls) {
			if (!anchor_bad++ && !first_bad[0])
				snprintf(first_bad, sizeof(first_bad),
					 "free phase: anchor %d (%#lx): pre %lu post %lu, calls %lu", anchor,
					 (unsigned long)probe_addr[anchor],
					 atomic_load(&probes[anchor].pre),
					 atomic_load(&probes[anchor].post), calls);
		}
		for (i = 0; i < nprobes; i++)
			if (atomic_load(&probes[i].pre) > calls || atomic_load(&probes[i].post) > calls)
				bound_bad++;
	}

	/* Everything away: no more hits, and the original code is back. */
	for (i = 0; i < nprobes; i++)
		set_state(i, P_UNREG);
	reset_counts();
	run_exact_phase(100);
	stop_workers(th);

	fprintf(stderr, "threads churn: %lu exact phases, %lu free phases, %lu random ops\n",
		exact_phases, free_phases, ops);
	cr_expect_eq(op_errors, 0, "%lu failed operations, first: %s", op_errors, op_error_text);
	cr_expect_eq(atomic_load(&bad_results), 0, "wrong results from the probed function");
	cr_expect_eq(atomic_load(&bad_kp), 0, "handler called with a wrong probe");
	cr_expect_eq(atomic_load(&dup_pre), 0, "pre_handler ran twice in one call");
	cr_expect_eq(atomic_load(&dup_post), 0, "post_handler ran twice in one call");
	cr_expect_eq(exact_bad, 0, "%lu wrong counts in exact phases; first: %s", exact_bad,
		     first_bad);
	cr_expect_eq(anchor_bad, 0, "%lu anchors miscounted; first: %s", anchor_bad, first_bad);
	cr_expect_eq(bound_bad, 0, "a probe counted more hits than calls");
	cr_expect(exact_phases >= 3 && free_phases >= 3);
	for (i = 0; i < nprobes; i++)
		cr_expect_eq(atomic_load(&probes[i].pre) + atomic_load(&probes[i].post), 0,
			     "probe %d hit after unregistration", i);
	cr_expect_eq(memcmp(orig, (const void *)thr_asm_target, (size_t)thr_asm_sizes[0]), 0,
		     "the target's code was not restored");
	cr_expect_eq(memcmp(orig_leaf, (const void *)thr_asm_leaf, (size_t)thr_asm_sizes[1]), 0);
}

/*
 * Every instruction of the target probed with pre and post handlers (two
 * probes each: an aggregate at every address), all threads calling at
 * once: every handler counts exactly one hit per call, nothing is missed.
 */
Test(threads, concurrent_hits_exact_counts, .timeout = 30)
{
	pthread_t th[NTHREADS];
	unsigned long calls;
	int i;

	setup_asm_probes();
	for (i = 0; i < nprobes; i++) {
		pstate[i] = P_UNREG;
		set_state(i, P_ENABLED);
	}
	cr_assert_eq(op_errors, 0, "%s", op_error_text);
	start_workers(th, thr_asm_target, asm_expect);
	calls = run_exact_phase(2500);
	cr_assert_eq(calls, NTHREADS * 2500ul);
	for (i = 0; i < nprobes; i++) {
		cr_expect_eq(atomic_load(&probes[i].pre), calls, "probe %d pre %lu", i,
			     atomic_load(&probes[i].pre));
		cr_expect_eq(atomic_load(&probes[i].post), calls, "probe %d post %lu", i,
			     atomic_load(&probes[i].post));
		cr_expect_eq(probes[i].kp.nmissed, 0);
	}
	stop_workers(th);
	for (i = 0; i < nprobes; i++)
		set_state(i, P_UNREG);
	cr_expect_eq(atomic_load(&bad_results), 0);
	cr_expect_eq(atomic_load(&bad_kp), 0);
	cr_expect_eq(atomic_load(&dup_pre) + atomic_load(&dup_post), 0);
}

static int c_expect(int x)
{
	return x * 7 - 3;
}

/* One probe on a compiled function's entry, many more hits. */
Test(threads, concurrent_hits_on_one_entry_probe, .timeout = 30)
{
	pthread_t th[NTHREADS];
	unsigned long calls;

	memset(&probes[0], 0, sizeof(probes[0]));
	nprobes = 1;
	probes[0].kp.symbol_name = "thr_c_target";
	probes[0].kp.pre_handler = count_pre;
	probes[0].kp.post_handler = count_post;
	cr_assert_eq(register_kprobe(&probes[0].kp), 0);
	cr_expect(probes[0].kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY);
	start_workers(th, thr_c_target, c_expect);
	calls = run_exact_phase(20000);
	calls += run_exact_phase(5000);
	stop_workers(th);
	unregister_kprobe(&probes[0].kp);
	cr_expect_eq(atomic_load(&probes[0].pre), calls);
	cr_expect_eq(atomic_load(&probes[0].post), calls);
	cr_expect_eq(probes[0].kp.nmissed, 0);
	cr_expect_eq(atomic_load(&bad_results), 0);
	cr_expect_eq(atomic_load(&dup_pre) + atomic_load(&dup_post), 0);
}

/* ------------------------------------------ unregister vs slow handlers */

#define SLOW_MAGIC 0x5107c0de5107c0deull
#define SLOW_NS 150000000ull

struct slowprobe {
	struct kprobe kp;
	uint64_t magic;
};

static _Atomic long slow_inside, slow_entered, slow_left, slow_bad;
static _Atomic uint64_t slow_last_exit_ns;
static _Atomic bool slow_run;

static void slow_body(struct kprobe *p)
{
	struct slowprobe *sp = (struct slowprobe *)p;
	uint64_t t0 = now_ns(), t;

	if (sp->magic != SLOW_MAGIC)
		atomic_fetch_add(&slow_bad, 1);
	atomic_fetch_add(&slow_entered, 1);
	atomic_fetch_add(&slow_inside, 1);
	while (now_ns() - t0 < SLOW_NS)
		__builtin_ia32_pause();
	/* the struct must still be intact when the handler ends */
	if (sp->magic != SLOW_MAGIC || kprobe_running() != p)
		atomic_fetch_add(&slow_bad, 1);
	t = now_ns();
	atomic_store(&slow_last_exit_ns, t);
	atomic_fetch_sub(&slow_inside, 1);
	atomic_fetch_add(&slow_left, 1);
}

static int slow_pre(struct kprobe *p, struct pt_regs *regs)
{
	slow_body(p);
	return 0;
}

static void slow_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	slow_body(p);
}

UKP_TARGET int thr_slow_target(int x)
{
	int r = x + 11;

	__asm__ volatile("" : "+r"(r));
	return r;
}

static _Atomic unsigned long slow_calls;

static void *slow_worker(void *arg)
{
	(void)arg;
	while (atomic_load(&slow_run)) {
		int (*volatile fn)(int) = thr_slow_target;

		if (fn(5) != 16)
			atomic_fetch_add(&bad_results, 1);
		atomic_fetch_add(&slow_calls, 1);
	}
	return NULL;
}

/*
 * Threads sit in a slow handler (pre or post) when the probe is
 * unregistered: unregister_kprobe() must not return before every one of
 * them has left the handler, and afterwards the struct kprobe is free to
 * go: it is poisoned, freed and its memory reused while the threads keep
 * calling the function.
 */
static void slow_handler_case(bool in_post)
{
	pthread_t th[NTHREADS];
	struct slowprobe *sp;
	uint64_t deadline, t_ret;
	long inside_at_call, entered, left;
	void *reuse[64];
	int i;

	sp = malloc(sizeof(*sp));
	cr_assert(sp);
	memset(sp, 0, sizeof(*sp));
	sp->magic = SLOW_MAGIC;
	sp->kp.symbol_name = "thr_slow_target";
	if (in_post)
		sp->kp.post_handler = slow_post;
	else
		sp->kp.pre_handler = slow_pre;
	cr_assert_eq(register_kprobe(&sp->kp), 0);

	atomic_store(&slow_run, true);
	for (i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, slow_worker, NULL), 0);

	/* Wait until at least two threads are inside the handler. */
	deadline = now_ns() + 5000000000ull;
	while (atomic_load(&slow_inside) < 2 && now_ns() < deadline)
		usleep(1000);
	inside_at_call = atomic_load(&slow_inside);
	unregister_kprobe(&sp->kp);
	t_ret = now_ns();
	entered = atomic_load(&slow_entered);
	left = atomic_load(&slow_left);
	cr_expect_geq(inside_at_call, 1, "no thread was inside the handler");
	cr_expect_eq(atomic_load(&slow_inside), 0,
		     "unregister_kprobe returned while %ld threads were in the handler",
		     atomic_load(&slow_inside));
	cr_expect_eq(entered, left);
	cr_expect_geq(t_ret, atomic_load(&slow_last_exit_ns));

	/* The memory goes back to malloc, poisoned, and is reused. */
	memset(sp, 0xa5, sizeof(*sp));
	free(sp);
	for (i = 0; i < 64; i++) {
		reuse[i] = malloc(sizeof(*sp));
		if (reuse[i])
			memset(reuse[i], 0x5a, sizeof(*sp));
	}
	usleep(100000);
	atomic_store(&slow_run, false);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 64; i++)
		free(reuse[i]);
	cr_expect_eq(atomic_load(&slow_entered), entered, "the handler ran after unregistration");
	cr_expect_eq(atomic_load(&slow_bad), 0, "the handler saw a damaged struct kprobe");
	cr_expect_eq(atomic_load(&bad_results), 0);
	cr_expect_gt(atomic_load(&slow_calls), 0);
	cr_expect_eq(*(volatile uint8_t *)thr_slow_target != 0xcc, 1, "breakpoint left behind");
}

Test(threads, unregister_waits_for_slow_pre_handler, .timeout = 30)
{
	slow_handler_case(false);
}

Test(threads, unregister_waits_for_slow_post_handler, .timeout = 30)
{
	slow_handler_case(true);
}

/*
 * The same through unregister_kprobes() with two probes on one address
 * (an aggregate): one grace period covers both, and both structs can be
 * freed when it returns.
 */
Test(threads, unregister_kprobes_waits_for_aggregate_handlers, .timeout = 30)
{
	pthread_t th[NTHREADS];
	struct slowprobe *a, *b;
	struct kprobe *kps[2];
	uint64_t deadline;
	int i;

	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	cr_assert(a && b);
	a->magic = b->magic = SLOW_MAGIC;
	a->kp.symbol_name = b->kp.symbol_name = "thr_slow_target";
	a->kp.pre_handler = slow_pre;
	b->kp.post_handler = slow_post;
	kps[0] = &a->kp;
	kps[1] = &b->kp;
	cr_assert_eq(register_kprobes(kps, 2), 0);
	cr_assert_eq(a->kp.addr, b->kp.addr);

	atomic_store(&slow_run, true);
	for (i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, slow_worker, NULL), 0);
	deadline = now_ns() + 5000000000ull;
	while (atomic_load(&slow_inside) < 2 && now_ns() < deadline)
		usleep(1000);
	cr_expect_geq(atomic_load(&slow_inside), 1);
	unregister_kprobes(kps, 2);
	cr_expect_eq(atomic_load(&slow_inside), 0);
	cr_expect_eq(atomic_load(&slow_entered), atomic_load(&slow_left));
	memset(a, 0xa5, sizeof(*a));
	memset(b, 0xa5, sizeof(*b));
	free(a);
	free(b);
	usleep(100000);
	atomic_store(&slow_run, false);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	cr_expect_eq(atomic_load(&slow_bad), 0);
	cr_expect_eq(atomic_load(&bad_results), 0);
}

/* ------------------------------------ more threads than records */

static _Atomic unsigned long short_calls;

static void *short_lived(void *arg)
{
	int (*volatile fn)(int) = thr_c_target;

	if (fn(3) != 18)
		atomic_fetch_add(&bad_results, 1);
	atomic_fetch_add(&short_calls, 1);
	return NULL;
}

/*
 * Over the process's life more threads hit probes than the grace-period
 * code has per-thread records (4096): the records of threads that have
 * exited are taken over, every hit still counts exactly once, and
 * unregistration still waits for whoever is inside and then returns.
 */
Test(threads, more_threads_than_records, .timeout = 60)
{
	enum { TOTAL = 4400, WAVE = 8 };
	pthread_t th[WAVE];
	uint64_t t0;
	int done = 0;

	memset(&probes[0], 0, sizeof(probes[0]));
	nprobes = 1;
	probes[0].kp.symbol_name = "thr_c_target";
	probes[0].kp.pre_handler = count_pre;
	probes[0].kp.post_handler = count_post;
	cr_assert_eq(register_kprobe(&probes[0].kp), 0);
	while (done < TOTAL) {
		for (int i = 0; i < WAVE; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, short_lived, NULL), 0);
		for (int i = 0; i < WAVE; i++)
			pthread_join(th[i], NULL);
		done += WAVE;
	}
	t0 = now_ns();
	unregister_kprobe(&probes[0].kp);
	cr_expect_lt(now_ns() - t0, 1000000000ull, "unregistration took %.2f s",
		     (double)(now_ns() - t0) / 1e9);
	cr_expect_eq(atomic_load(&short_calls), TOTAL);
	cr_expect_eq(atomic_load(&probes[0].pre), TOTAL);
	cr_expect_eq(atomic_load(&probes[0].post), TOTAL);
	cr_expect_eq(atomic_load(&bad_results), 0);
	thr_c_target(1);
	cr_expect_eq(atomic_load(&probes[0].pre), TOTAL);
}
