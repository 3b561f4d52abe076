// SPDX-License-Identifier: MIT
/*
 * bench_overhead.c - what one probe hit costs, next to its bounds and to
 * the kernel's own user-space probes, all in one run on one function.
 *
 * Every repetition takes one sample of every measure in turn (so that a
 * noisy machine moves them together); each figure is the median of the
 * repetitions, with min and max; ratios are taken per repetition.
 *
 * The target is bench_target (targets.S): lea; add; ret. Measures:
 *
 *   call         the target, uninstrumented
 *   1rt, 2rt     one / two bare int3 -> SIGTRAP round trips (a handler that
 *                does nothing, installed in the kernel's table directly)
 *   detour       the bare save-registers/call/restore detour: a jmp over
 *                the target's first 5 bytes into a stub that saves every
 *                general register and the flags, calls an empty C
 *                function, restores, runs the displaced bytes, jumps back
 *                (the bound of a jump-optimized probe)
 *   k            kprobe with a pre and a post handler on the target
 *   r            kretprobe on the target (no kprobe)
 *   kr           both on the target
 *   k_nop5       the kprobe (pre+post) on bench_target_nop5, whose entry is a
 *                5-byte NOP: an [FTRACE] probe (a jump, no trap)
 *   b            kprobe with only a pre_handler on the target (its first
 *                instruction, lea, is boostable: one trap per hit)
 *   rb           kretprobe on the target, whose entry instruction is
 *                boostable (r is the same path since the booster exists:
 *                a kretprobe's entry probe has no post_handler)
 *   o            kprobe with only a pre_handler, jump-optimized ([OPTIMIZED]
 *                checked before timing); the handler is integer code, so
 *                the hit leaves the vector state in the registers
 *   ov           the same with a handler that uses an xmm register: the
 *                hit saves the vector state around it
 *   ro           kretprobe whose entry probe is jump-optimized
 *   call_sdt     bench_target_sdt (sdt_target.c: bench_target with an SDT
 *                probe, a nop, before its ret), uninstrumented
 *   sdt          the optimized kprobe of o on that SDT probe, registered by
 *                its name "%ukpbench:hit" (skipped without <sys/sdt.h>)
 *   The rows b, r and rb are the breakpoint paths: they run with the
 *   optimization knob off, o and ro with it on.
 *   w            a data watchpoint hit by page protection: bench_store
 *                (a function like the target that also stores its first
 *                argument to a long) with a 16-byte RW watchpoint (beyond
 *                the debug registers) on that long; the handler counts
 *   w_nb         the same store to a neighbour long on the watched page:
 *                no handler, the access still runs through the fault path
 *   w_hw         the 8-byte watchpoint on a debug register (skipped where
 *                the machine's debug registers do not fire)
 *   (their overhead is over call, which does no store)
 *   uprobe, uretprobe, uprobe_nop5, uretprobe_nop5
 *                the kernel's uprobes (tracefs uprobe_events, enabled in a
 *                private trace instance) on the same functions of this
 *                process; skipped with the reason when not root or without
 *                tracefs
 *
 * Only one instrumentation is armed on a function at a time: each sample
 * registers (or enables, or patches) before its loop and undoes it after.
 * Every sample checks its hit count.
 *
 * uftrace is measured by bench_uftrace, run under uftrace by run.sh.
 *
 * Usage: bench_overhead [--quick] [--reps N] [--iters N] [--json FILE]
 *                       [--no-peers] [--tracefs-group NAME] [--only ID,...]
 * --only measures those rows alone (the others are skipped), so that a
 * ratio of two rows gets many alternated repetitions quickly
 * (bench/results/issue30-sdt.md: --only call,o,call_sdt,sdt).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ukprobes.h"
#include "bench.h"

enum {
	M_CALL,
	M_RT1,
	M_RT2,
	M_DETOUR,
	M_K,
	M_R,
	M_KR,
	M_KNOP5,
	M_B,
	M_RB,
	M_O,
	M_OV,
	M_RO,
	M_CALLSDT,
	M_SDT,
	M_J,
	M_JR,
	M_W,
	M_WNB,
	M_WHW,
	M_UP,
	M_URP,
	M_UPNOP5,
	M_URPNOP5,
	NM
};

enum kind { K_BOUND, K_UKPROBES, K_PEER };

struct measure {
	const char *id;
	const char *label;
	enum kind kind;
	bool cheap;            /* a few ns: timed over call_iters */
	bool skipped;
	char why[300];
	double *v;             /* ns per call, one per repetition */
	int tfs_ev;            /* tracefs event index (peers) */
};

static struct measure ms[NM] = {
	[M_CALL] = { "call", "uninstrumented call", K_BOUND, true },
	[M_RT1] = { "1rt", "one int3->SIGTRAP round trip", K_BOUND, false },
	[M_RT2] = { "2rt", "two int3->SIGTRAP round trips", K_BOUND, false },
	[M_DETOUR] = { "detour", "bare save-regs/call/restore detour", K_BOUND, true },
	[M_K] = { "k", "kprobe, pre+post handler", K_UKPROBES, false },
	[M_R] = { "r", "kretprobe", K_UKPROBES, false },
	[M_KR] = { "kr", "kprobe + kretprobe", K_UKPROBES, false },
	[M_KNOP5] = { "k_nop5", "kprobe (pre+post) on a 5-byte NOP entry [FTRACE]", K_UKPROBES,
		      true },
	[M_B] = { "b", "boosted kprobe (pre_handler only)", K_UKPROBES, false },
	[M_RB] = { "rb", "boosted kretprobe", K_UKPROBES, false },
	[M_O] = { "o", "optimized kprobe", K_UKPROBES, true },
	[M_OV] = { "ov", "optimized kprobe, handler using xmm", K_UKPROBES, true },
	[M_RO] = { "ro", "optimized kretprobe", K_UKPROBES, true },
	[M_CALLSDT] = { "call_sdt", "uninstrumented call, SDT nop inside", K_BOUND, true },
	[M_SDT] = { "sdt", "optimized kprobe on an SDT probe (its nop)", K_UKPROBES, true },
	[M_J] = { "j", "jprobe", K_UKPROBES, false },
	[M_JR] = { "jr", "jprobe + kretprobe", K_UKPROBES, false },
	[M_W] = { "w", "watchpoint hit (page protection)", K_UKPROBES, false },
	[M_WNB] = { "w_nb", "store next to a watchpoint, same page (no handler)", K_UKPROBES, false },
	[M_WHW] = { "w_hw", "watchpoint hit (debug register)", K_UKPROBES, false },
	[M_UP] = { "uprobe", "kernel uprobe", K_PEER, false },
	[M_URP] = { "uretprobe", "kernel uretprobe", K_PEER, false },
	[M_UPNOP5] = { "uprobe_nop5", "kernel uprobe on a 5-byte NOP", K_PEER, false },
	[M_URPNOP5] = { "uretprobe_nop5", "kernel uretprobe on a 5-byte NOP", K_PEER, false },
};

/* Ratios taken per repetition: a / b. */
static const struct {
	const char *id;
	int a, b;
} ratios[] = {
	{ "k/1rt", M_K, M_RT1 },
	{ "k/2rt", M_K, M_RT2 },
	{ "b/1rt", M_B, M_RT1 },
	{ "b/k", M_B, M_K },
	{ "r/1rt", M_R, M_RT1 },
	{ "rb/1rt", M_RB, M_RT1 },
	{ "kr/1rt", M_KR, M_RT1 },
	{ "r/k", M_R, M_K },
	{ "kr/k", M_KR, M_K },
	{ "k_nop5/k", M_KNOP5, M_K },
	{ "detour/call", M_DETOUR, M_CALL },
	{ "o/detour", M_O, M_DETOUR },
	{ "o/call", M_O, M_CALL },
	{ "o/b", M_O, M_B },
	{ "ov/o", M_OV, M_O },
	{ "ro/r", M_RO, M_R },
	{ "ro/o", M_RO, M_O },
	{ "b/o", M_B, M_O },
	{ "k_nop5/o", M_KNOP5, M_O },
	{ "sdt/o", M_SDT, M_O },
	{ "uprobe/k", M_UP, M_K },
	{ "uretprobe/r", M_URP, M_R },
	{ "uprobe/1rt", M_UP, M_RT1 },
	{ "uprobe_nop5/k", M_UPNOP5, M_K },
	{ "uprobe_nop5/uprobe", M_UPNOP5, M_UP },
	{ "uretprobe_nop5/r", M_URPNOP5, M_R },
	{ "j/k", M_J, M_K },
	{ "j/2rt", M_J, M_RT2 },
	{ "jr/j", M_JR, M_J },
	{ "w/1rt", M_W, M_RT1 },
	{ "w_nb/w", M_WNB, M_W },
	{ "w_hw/1rt", M_WHW, M_RT1 },
	{ "k/uprobe", M_K, M_UP },
	{ "r/uretprobe", M_R, M_URP },
};

/* ---------------------------------------------------------- handlers */

static volatile unsigned long pre_hits, post_hits, ret_hits;

static int on_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	return 0;
}

/* The o handler plus one vector instruction: not vector-free. */
static int on_pre_vec(struct kprobe *p, struct pt_regs *regs)
{
#if defined(__x86_64__)
	__asm__ volatile("pxor %%xmm7, %%xmm7" ::: "xmm7");
#elif defined(__aarch64__)
	__asm__ volatile("movi v7.16b, #0" ::: "v7");
#endif
	pre_hits++;
	return 0;
}

static void on_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_hits++;
}

static int on_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	ret_hits++;
	return 0;
}

/* The jprobe handler: bench_target's prototype. */
static volatile unsigned long j_hits;

static int on_j(int x, int y)
{
	j_hits++;
	jprobe_return();
	return 0;
}

static struct kprobe kp;
static struct kretprobe rp;
static struct jprobe jp;


/* The watched data (its own page) and the store the w rows time. */
static struct {
	long watched[2];
	long neighbour;
} __attribute__((aligned(4096))) wdata;
static long *volatile store_at;
static volatile unsigned long watch_hits;

static __attribute__((noipa)) int bench_store(int x, int y)
{
	*(volatile long *)store_at = x;
	return x + y + 1;
}

static void on_watch(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs)
{
	watch_hits++;
}

static void fatal(const char *what, int err)
{
	fprintf(stderr, "bench_overhead: %s: %s (%d)\n", what, strerror(err < 0 ? -err : err), err);
	exit(1);
}

/* Optimization on or off for the next registration; with it on, wait
 * until the probe got its jump (want: it must have). */
static void set_opt(bool on)
{
	int ret = kprobes_set_optimization(on);

	if (ret)
		fatal("kprobes_set_optimization", ret);
}

static void settle(struct kprobe *p, int want_flag)
{
	ukprobes_wait_optimizer();
	if (want_flag && !(p->flags & want_flag)) {
		fprintf(stderr, "bench_overhead: the probe was not optimized\n");
		exit(1);
	}
	if (!want_flag && (p->flags & (KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_FTRACE))) {
		fprintf(stderr, "bench_overhead: the probe was optimized\n");
		exit(1);
	}
}

static void kp_register(bench_fn fn, bool post, bool vec)
{
	int ret;

	memset(&kp, 0, sizeof(kp));
	kp.addr = (kprobe_opcode_t *)(uintptr_t)fn;
	kp.pre_handler = vec ? on_pre_vec : on_pre;
	kp.post_handler = post ? on_post : NULL;
	ret = register_kprobe(&kp);
	if (ret)
		fatal("register_kprobe", ret);
}

static void rp_register(bench_fn fn)
{
	int ret;

	memset(&rp, 0, sizeof(rp));
	rp.kp.addr = (kprobe_opcode_t *)(uintptr_t)fn;
	rp.handler = on_ret;
	ret = register_kretprobe(&rp);
	if (ret)
		fatal("register_kretprobe", ret);
}

static void jp_register(bench_fn fn)
{
	int ret;

	memset(&jp, 0, sizeof(jp));
	jp.kp.addr = (kprobe_opcode_t *)(uintptr_t)fn;
	jp.entry = JPROBE_ENTRY(on_j);
	ret = register_jprobe(&jp);
	if (ret)
		fatal("register_jprobe", ret);
}

/* ----------------------------------------------------------- samples */

static struct tfs tfs;
static unsigned long iters, call_iters;
static bool quick;

static void check(const char *what, unsigned long got, unsigned long want)
{
	if (got != want) {
		fprintf(stderr, "bench_overhead: %s counted %lu hits for %lu calls\n", what, got, want);
		exit(1);
	}
}

#define WARMUP 64

/* One sample of a peer: enable, warm up (a uprobe on a NOP is optimized
 * at its first hit), time, disable; the hit count must match. */
static double peer_sample(struct measure *m, bench_fn fn)
{
	long h0, h1;
	double ns;
	int err;

	err = tfs_enable(&tfs, m->tfs_ev, true);
	if (err) {
		snprintf(m->why, sizeof(m->why), "enabling the event failed: %s", strerror(-err));
		m->skipped = true;
		return 0;
	}
	bench_call_loop(fn, WARMUP);
	h0 = tfs_hits(&tfs, m->tfs_ev);
	ns = bench_call_loop(fn, iters);
	h1 = tfs_hits(&tfs, m->tfs_ev);
	tfs_enable(&tfs, m->tfs_ev, false);
	if (h0 < 0 || h1 < 0 || (unsigned long)(h1 - h0) != iters) {
		snprintf(m->why, sizeof(m->why), "uprobe_profile counted %ld hits for %lu calls",
			 h1 - h0, iters);
		m->skipped = true;
	}
	return ns;
}

/* The bytes of the targets as built: no sample may leave them changed. */
static unsigned char pristine[2][32];

static void check_pristine(const char *after)
{
	if (memcmp(pristine[0], (const void *)(uintptr_t)bench_target, BENCH_TARGET_LEN) ||
	    memcmp(pristine[1], (const void *)(uintptr_t)bench_target_nop5, BENCH_TARGET_NOP5_LEN)) {
		fprintf(stderr, "bench_overhead: a target's code changed after %s\n", after);
		exit(1);
	}
}

static double sample(int m)
{
	unsigned long p0 = pre_hits, q0 = post_hits, r0 = ret_hits, d0;
	double ns;
	int err;

	switch (m) {
	case M_CALL:
		return bench_call_loop(bench_target, call_iters);
	case M_RT1:
	case M_RT2:
		bench_bare_begin();
		ns = bench_int3_loop(iters, m == M_RT1 ? 1 : 2);
		bench_bare_end();
		return ns;
	case M_DETOUR:
		err = bench_detour_set(true);
		if (err)
			fatal("patching the detour", err);
		bench_call_loop(bench_target, WARMUP);
		d0 = bench_detour_hits;
		ns = bench_call_loop(bench_target, call_iters);
		check("detour", bench_detour_hits - d0, call_iters);
		err = bench_detour_set(false);
		if (err)
			fatal("restoring the detour", err);
		break;
	case M_K:
	case M_KNOP5:
		kp_register(m == M_K ? bench_target : bench_target_nop5, true, false);
		settle(&kp, m == M_KNOP5 ? KPROBE_FLAG_FTRACE : 0);
		bench_call_loop(m == M_K ? bench_target : bench_target_nop5, WARMUP);
		p0 = pre_hits;
		q0 = post_hits;
		ns = bench_call_loop(m == M_K ? bench_target : bench_target_nop5,
				     m == M_K ? iters : call_iters);
		check("k pre", pre_hits - p0, m == M_K ? iters : call_iters);
		check("k post", post_hits - q0, m == M_K ? iters : call_iters);
		unregister_kprobe(&kp);
		break;
	case M_B:
	case M_O:
	case M_OV:
		set_opt(m != M_B);
		kp_register(bench_target, false, m == M_OV);
		settle(&kp, m != M_B ? KPROBE_FLAG_OPTIMIZED : 0);
		bench_call_loop(bench_target, WARMUP);
		p0 = pre_hits;
		ns = bench_call_loop(bench_target, m != M_B ? call_iters : iters);
		check(ms[m].id, pre_hits - p0, m != M_B ? call_iters : iters);
		unregister_kprobe(&kp);
		set_opt(true);
		break;
	case M_CALLSDT:
	case M_SDT: {
#ifdef BENCH_HAVE_SDT
		const bench_fn fn = bench_target_sdt;

		if (m == M_CALLSDT) {
			bench_call_loop(fn, WARMUP);
			ns = bench_call_loop(fn, call_iters);
			break;
		}
		memset(&kp, 0, sizeof(kp));
		kp.symbol_name = "%ukpbench:hit";
		kp.pre_handler = on_pre;
		err = register_kprobe(&kp);
		if (err)
			fatal("register_kprobe %ukpbench:hit", err);
		settle(&kp, KPROBE_FLAG_OPTIMIZED);
		bench_call_loop(fn, WARMUP);
		p0 = pre_hits;
		ns = bench_call_loop(fn, call_iters);
		check(ms[m].id, pre_hits - p0, call_iters);
		unregister_kprobe(&kp);
#else
		snprintf(ms[m].why, sizeof(ms[m].why), "built without <sys/sdt.h> (systemtap-sdt-dev)");
		ms[m].skipped = true;
		return 0;
#endif
		break;
	}
	case M_R:
	case M_RB:
	case M_RO:
		set_opt(m == M_RO);
		rp_register(bench_target);
		settle(&rp.kp, m == M_RO ? KPROBE_FLAG_OPTIMIZED : 0);
		bench_call_loop(bench_target, WARMUP);
		r0 = ret_hits;
		ns = bench_call_loop(bench_target, m == M_RO ? call_iters : iters);
		check(ms[m].id, ret_hits - r0, m == M_RO ? call_iters : iters);
		unregister_kretprobe(&rp);
		set_opt(true);
		break;
	case M_KR:
		rp_register(bench_target);
		kp_register(bench_target, true, false);
		bench_call_loop(bench_target, WARMUP);
		p0 = pre_hits;
		q0 = post_hits;
		r0 = ret_hits;
		ns = bench_call_loop(bench_target, iters);
		check("kr pre", pre_hits - p0, iters);
		check("kr post", post_hits - q0, iters);
		check("kr return", ret_hits - r0, iters);
		unregister_kprobe(&kp);
		unregister_kretprobe(&rp);
		break;
	case M_J:
	case M_JR:
		/* a jprobe keeps its site a breakpoint, knob or not */
		if (m == M_JR)
			rp_register(bench_target);
		jp_register(bench_target);
		settle(&jp.kp, 0);
		bench_call_loop(bench_target, WARMUP);
		d0 = j_hits;
		r0 = ret_hits;
		ns = bench_call_loop(bench_target, iters);
		check(ms[m].id, j_hits - d0, iters);
		if (m == M_JR) {
			check("jr return", ret_hits - r0, iters);
			unregister_kretprobe(&rp);
		}
		unregister_jprobe(&jp);
		break;
	case M_W:
	case M_WNB:
	case M_WHW: {
		struct perf_event_attr a;
		struct perf_event *bp;
		unsigned long w0;

		hw_breakpoint_init(&a);
		a.bp_addr = (uintptr_t)wdata.watched;
		a.bp_len = m == M_WHW ? 8 : 16;
		a.bp_type = HW_BREAKPOINT_RW;
		bp = register_user_hw_breakpoint(&a, on_watch, NULL, 0);
		if (IS_ERR(bp) && PTR_ERR(bp) == -EOPNOTSUPP) {
			/* not on this architecture yet (doc/arch.md) */
			snprintf(ms[m].why, sizeof(ms[m].why),
				 "watchpoints are not supported on this architecture");
			ms[m].skipped = true;
			return 0;
		}
		if (IS_ERR(bp))
			fatal("register_user_hw_breakpoint", (int)PTR_ERR(bp));
		if (m == M_WHW && bp->mechanism != UKP_HW_BREAKPOINT_DEBUGREG) {
			snprintf(ms[m].why, sizeof(ms[m].why),
				 "this machine's debug registers do not fire");
			ms[m].skipped = true;
			unregister_hw_breakpoint(bp);
			return 0;
		}
		store_at = m == M_WNB ? &wdata.neighbour : &wdata.watched[0];
		bench_call_loop(bench_store, WARMUP);
		w0 = watch_hits;
		ns = bench_call_loop(bench_store, iters);
		check(ms[m].id, watch_hits - w0, m == M_WNB ? 0 : iters);
		unregister_hw_breakpoint(bp);
		break;
	}
	case M_UP:
	case M_URP:
		ns = peer_sample(&ms[m], bench_target);
		break;
	case M_UPNOP5:
	case M_URPNOP5:
		ns = peer_sample(&ms[m], bench_target_nop5);
		break;
	default:
		abort();
	}
	check_pristine(ms[m].id);
	return ns;
}

/* ------------------------------------------------------------ peers */

static void setup_peers(bool want, const char *group)
{
	static const struct {
		int m;
		const char *ev;
		bool ret;
		bench_fn fn;
	} evs[] = {
		{ M_UP, "up_target", false, bench_target },
		{ M_URP, "urp_target", true, bench_target },
		{ M_UPNOP5, "up_nop5", false, bench_target_nop5 },
		{ M_URPNOP5, "urp_nop5", true, bench_target_nop5 },
	};
	char why[300];

	if (!want) {
		for (int m = M_UP; m <= M_URPNOP5; m++) {
			ms[m].skipped = true;
			snprintf(ms[m].why, sizeof(ms[m].why), "peers not requested (--no-peers)");
		}
		return;
	}
	if (!tfs_open(&tfs, group, why, sizeof(why))) {
		for (int m = M_UP; m <= M_URPNOP5; m++) {
			ms[m].skipped = true;
			snprintf(ms[m].why, sizeof(ms[m].why), "%s", why);
		}
		return;
	}
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct measure *m = &ms[evs[i].m];

		m->tfs_ev = tfs_add(&tfs, evs[i].ev, evs[i].ret, (const void *)(uintptr_t)evs[i].fn,
				    why, sizeof(why));
		if (m->tfs_ev < 0) {
			m->skipped = true;
			snprintf(m->why, sizeof(m->why), "%s", why);
		}
	}
}

/* ------------------------------------------------------------ output */

static const char *const kind_name[] = { "bound", "ukprobes", "peer" };

static void write_json(FILE *f, int reps, double secs)
{
	struct bench_stat s, o;
	const unsigned char *b = (const unsigned char *)(uintptr_t)bench_target;
	bool first = true;

	fprintf(f, "{\n  \"reps\": %d, \"iters\": %lu, \"call_iters\": %lu, \"seconds\": %.1f,\n",
		reps, iters, call_iters, secs);
	fprintf(f, "  \"target\": {\"name\": \"bench_target\", \"code\": \"");
	for (int i = 0; i < 6; i++)
		fprintf(f, "%s%02x", i ? " " : "", b[i]);
	fprintf(f, "\", \"asm\": \"lea 0x1(%%rdi),%%eax; add %%esi,%%eax; ret\"},\n");
	fprintf(f, "  \"measures\": [\n");
	for (int m = 0; m < NM; m++) {
		fprintf(f, "%s    {\"id\": ", first ? "" : ",\n");
		first = false;
		json_str(f, ms[m].id);
		fprintf(f, ", \"label\": ");
		json_str(f, ms[m].label);
		fprintf(f, ", \"kind\": \"%s\", ", kind_name[ms[m].kind]);
		if (ms[m].skipped) {
			fprintf(f, "\"status\": \"skipped\", \"reason\": ");
			json_str(f, ms[m].why);
			fprintf(f, "}");
			continue;
		}
		s = bench_stats(ms[m].v, reps);
		{
			double ov[reps];

			for (int r = 0; r < reps; r++)
				ov[r] = ms[m].v[r] - ms[M_CALL].v[r];
			o = bench_stats(ov, reps);
		}
		fprintf(f, "\"status\": \"ok\", \"iters\": %lu, \"ns\": {",
			ms[m].cheap ? call_iters : iters);
		json_stat_fields(f, s);
		fprintf(f, "}, \"overhead_ns\": {");
		json_stat_fields(f, o);
		fprintf(f, "}}");
	}
	fprintf(f, "\n  ],\n  \"ratios\": [\n");
	first = true;
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		int a = ratios[i].a, bb = ratios[i].b;
		double rv[reps];

		if (ms[a].skipped || ms[bb].skipped)
			continue;
		for (int r = 0; r < reps; r++)
			rv[r] = ms[a].v[r] / ms[bb].v[r];
		s = bench_stats(rv, reps);
		fprintf(f, "%s    {\"id\": \"%s\", ", first ? "" : ",\n", ratios[i].id);
		first = false;
		json_stat_fields(f, s);
		fprintf(f, "}");
	}
	fprintf(f, "\n  ]\n}\n");
}

/* -------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	const char *json = NULL, *group = NULL;
	bool peers = true;
	const char *only = NULL;
	int reps = 7;
	uint64_t t0;
	FILE *f;

	iters = 100000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else if (!strcmp(argv[i], "--tracefs-group") && i + 1 < argc) {
			group = argv[++i];
		} else if (!strcmp(argv[i], "--no-peers")) {
			peers = false;
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr,
				"usage: %s [--quick] [--reps N] [--iters N] [--json FILE] "
				"[--no-peers] [--tracefs-group NAME] [--only ID,...]\n",
				argv[0]);
			return 2;
		}
	}
	if (quick) {
		/* proves that it works; times nothing */
		iters = iters < 2000 ? iters : 2000;
		reps = reps < 3 ? reps : 3;
	}
	if (reps < 1 || iters < 1)
		return 2;
	call_iters = iters * 100;

	memcpy(pristine[0], (const void *)(uintptr_t)bench_target, BENCH_TARGET_LEN);
	memcpy(pristine[1], (const void *)(uintptr_t)bench_target_nop5, BENCH_TARGET_NOP5_LEN);
	bench_bare_init();
	for (int m = 0; m < NM; m++) {
		ms[m].v = calloc((size_t)reps, sizeof(double));
		if (!ms[m].v)
			return 1;
	}
	setup_peers(peers && !only, group);
	for (int m = 0; only && m < NM; m++) {
		size_t n = strlen(ms[m].id);
		const char *p = only;

		while ((p = strstr(p, ms[m].id)) && ((p != only && p[-1] != ',') ||
						    (p[n] && p[n] != ',')))
			p++;
		if (!p && !ms[m].skipped) {
			ms[m].skipped = true;
			snprintf(ms[m].why, sizeof(ms[m].why), "not in --only");
		}
	}
	for (int m = M_UP; m <= M_URPNOP5; m++)
		if (ms[m].skipped)
			fprintf(stderr, "bench_overhead: skip %s: %s\n", ms[m].id, ms[m].why);

	t0 = bench_now_ns();
	/* warm every path up once, with a tenth of the iterations */
	{
		unsigned long it = iters, cit = call_iters;

		iters = it / 10 + 1;
		call_iters = cit / 10 + 1;
		for (int m = 0; m < NM; m++)
			if (!ms[m].skipped)
				sample(m);
		iters = it;
		call_iters = cit;
	}
	for (int r = 0; r < reps; r++)
		for (int m = 0; m < NM; m++) {
			if (ms[m].skipped)
				continue;
			ms[m].v[r] = sample(m);
			if (ms[m].skipped)
				fprintf(stderr, "bench_overhead: skip %s: %s\n", ms[m].id, ms[m].why);
		}
	tfs_close(&tfs);

	f = json ? fopen(json, "w") : stdout;
	if (!f) {
		perror(json);
		return 1;
	}
	write_json(f, reps, (double)(bench_now_ns() - t0) / 1e9);
	if (json)
		fclose(f);
	return 0;
}
