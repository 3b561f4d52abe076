/* SPDX-License-Identifier: MIT */
/*
 * Return probes and the ways out of a function other than its ret:
 * longjmp and siglongjmp (out of probed frames, into a probed frame),
 * signal handlers that enter probed functions while others are pending,
 * pthread_exit and cancellation in probed frames, exit() in a probed
 * frame, and stack walks (backtrace, _Unwind_Backtrace, interposed or
 * not: glibc's __backtrace, libgcc's own walker) while returns are
 * pending.
 *
 * Each time: the program does what it does without probes; the frames
 * that were left never see their return handler; their instances come
 * back (a small maxactive and many rounds would run out otherwise:
 * nmissed stays 0); the frames that do return see theirs, exactly once.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unwind.h>

#include "ukprobes.h"
#include "core/kretprobes.h"
#include "ukp_test.h"

static int handler_errors;
#define EXPECT_IN_HANDLER(cond)                                                \
	do {                                                                   \
		if (!(cond))                                                   \
			__atomic_fetch_add(&handler_errors, 1, __ATOMIC_RELAXED); \
	} while (0)

/* One counter pair per probed function. */
struct counted {
	struct kretprobe rp;
	_Atomic unsigned long entries, returns;
};

static int c_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct counted *c = (struct counted *)get_kretprobe(ri);

	atomic_fetch_add(&c->entries, 1);
	return 0;
}

static int c_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct counted *c = (struct counted *)get_kretprobe(ri);

	atomic_fetch_add(&c->returns, 1);
	return 0;
}

#define COUNTED(sym, max) \
	{ .rp = { .handler = c_ret, .entry_handler = c_entry, .maxactive = (max), \
		  .kp.symbol_name = (sym) } }

static void reg(struct counted *c)
{
	cr_assert_eq(register_kretprobe(&c->rp), 0, "%s", c->rp.kp.symbol_name);
}

/* ========================================================= longjmp */

static jmp_buf jb;
static sigjmp_buf sjb;
static long (*volatile f_outer)(long);
static long (*volatile f_inner)(long);
static long (*volatile f_leaf)(long);

UKP_TARGET long krp_leaf(long x)
{
	if (x < 0)
		longjmp(jb, 1);
	return x + 1;
}

UKP_TARGET long krp_inner(long x)
{
	return f_leaf(x) * 2;
}

UKP_TARGET long krp_outer(long x)
{
	return f_inner(x) + 3;
}

static void init_targets(void)
{
	f_outer = krp_outer;
	f_inner = krp_inner;
	f_leaf = krp_leaf;
	handler_errors = 0;
}

TestSuite(nonlocal, .init = init_targets);

Test(nonlocal, longjmp_out_of_probed_frames)
{
	struct counted o = COUNTED("krp_outer", 2), i = COUNTED("krp_inner", 2),
		       l = COUNTED("krp_leaf", 2);
	volatile int jumps = 0;
	int round;

	reg(&o);
	reg(&i);
	reg(&l);
	for (round = 0; round < 200; round++) {
		if (setjmp(jb) == 0)
			f_outer(-1);
		else
			jumps++;
		/* a normal call in between, at the same depth */
		if (round % 10 == 0)
			cr_assert_eq(f_outer(4), 13);
	}
	cr_expect_eq(jumps, 200);
	cr_expect_eq(o.entries, 220);
	cr_expect_eq(o.returns, 20, "handlers ran for frames left by longjmp");
	cr_expect_eq(i.returns, 20);
	cr_expect_eq(l.returns, 20);
	cr_expect_eq(o.rp.nmissed + i.rp.nmissed + l.rp.nmissed, 0,
		     "instances of frames left by longjmp were not reclaimed");
	unregister_kretprobe(&o.rp);
	unregister_kretprobe(&i.rp);
	unregister_kretprobe(&l.rp);
	ukp_krp_reap();
}

/* setjmp inside a probed frame; longjmp back into it from deeper probed
 * frames; that frame then returns normally. */
static jmp_buf mid_jb;

UKP_TARGET long krp_deep(long x)
{
	if (x > 3)
		longjmp(mid_jb, (int)x);
	return x;
}

static long (*volatile f_deep)(long) = krp_deep;

UKP_TARGET long krp_middle(long x)
{
	return f_deep(x) + 10;
}

static long (*volatile f_middle)(long) = krp_middle;

UKP_TARGET long krp_catcher(long x)
{
	volatile long r;
	int v = setjmp(mid_jb);

	if (v)
		return 1000 + v;
	r = f_middle(x);
	return r;
}

static long (*volatile f_catcher)(long) = krp_catcher;
static _Atomic long catcher_ret_sum;

static int catcher_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct counted *c = (struct counted *)get_kretprobe(ri);

	atomic_fetch_add(&catcher_ret_sum, (long)regs_return_value(regs));
	atomic_fetch_add(&c->returns, 1);
	return 0;
}

Test(nonlocal, longjmp_into_a_probed_frame)
{
	struct counted c = COUNTED("krp_catcher", 1), m = COUNTED("krp_middle", 1),
		       d = COUNTED("krp_deep", 1);
	long expect_sum = 0;
	int round;

	c.rp.handler = catcher_ret;
	reg(&c);
	reg(&m);
	reg(&d);
	for (round = 0; round < 100; round++) {
		long x = round % 2 ? 7 : 2, r = f_catcher(x);

		cr_assert_eq(r, x > 3 ? 1000 + x : x + 10);
		expect_sum += r;
	}
	cr_expect_eq(c.returns, 100, "the frame longjmp went back to must return through its probe");
	cr_expect_eq(catcher_ret_sum, expect_sum);
	cr_expect_eq(m.returns, 50);
	cr_expect_eq(d.returns, 50);
	cr_expect_eq(m.entries, 100);
	cr_expect_eq(c.rp.nmissed + m.rp.nmissed + d.rp.nmissed, 0);
	unregister_kretprobe(&c.rp);
	unregister_kretprobe(&m.rp);
	unregister_kretprobe(&d.rp);
}

/* Deep recursion left by one longjmp from the bottom. */
static long (*volatile f_rec)(long);

UKP_TARGET long krp_rec_jump(long n)
{
	if (n == 0)
		longjmp(jb, 2);
	return f_rec(n - 1) + 1;
}

Test(nonlocal, longjmp_out_of_deep_recursion)
{
	struct counted r = COUNTED("krp_rec_jump", 60);
	int round;

	f_rec = krp_rec_jump;
	reg(&r);
	for (round = 0; round < 20; round++) {
		if (setjmp(jb) == 0)
			f_rec(50);
	}
	cr_expect_eq(r.entries, 20 * 51);
	cr_expect_eq(r.returns, 0);
	cr_expect_eq(r.rp.nmissed, 0);
	unregister_kretprobe(&r.rp);
}

/* ==================================================== signals */

static void jump_out(int sig)
{
	siglongjmp(sjb, sig);
}

UKP_TARGET long krp_raises(long x)
{
	raise(SIGUSR1);
	return x; /* not reached */
}

static long (*volatile f_raises)(long) = krp_raises;

Test(nonlocal, siglongjmp_out_of_a_signal_handler)
{
	struct counted r = COUNTED("krp_raises", 2), o = COUNTED("krp_outer", 2);
	struct sigaction sa = { .sa_handler = jump_out };
	sigset_t now;
	volatile int round, jumped = 0;

	sigaction(SIGUSR1, &sa, NULL);
	reg(&r);
	reg(&o);
	for (round = 0; round < 100; round++) {
		if (sigsetjmp(sjb, 1) == 0)
			f_raises(round);
		else
			jumped++;
		cr_assert_eq(f_outer(1), 7);
	}
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	cr_expect(!sigismember(&now, SIGUSR1), "siglongjmp restores the mask");
	cr_expect_eq(jumped, 100);
	cr_expect_eq(r.entries, 100);
	cr_expect_eq(r.returns, 0);
	cr_expect_eq(o.returns, 100);
	cr_expect_eq(r.rp.nmissed + o.rp.nmissed, 0);
	unregister_kretprobe(&r.rp);
	unregister_kretprobe(&o.rp);
}

static _Atomic long in_handler_results;

static void calls_probed(int sig)
{
	atomic_fetch_add(&in_handler_results, f_outer(2)); /* 2 + 1 = 3; * 2 = 6; + 3 = 9 */
}

UKP_TARGET long krp_raises_and_returns(long x)
{
	raise(SIGUSR2);
	return x + 5;
}

static long (*volatile f_raises_ret)(long) = krp_raises_and_returns;

Test(nonlocal, signal_handler_enters_probed_functions)
{
	struct counted r = COUNTED("krp_raises_and_returns", 4), o = COUNTED("krp_outer", 4),
		       l = COUNTED("krp_leaf", 4);
	struct sigaction sa = { .sa_handler = calls_probed };
	int round;

	sigaction(SIGUSR2, &sa, NULL);
	reg(&r);
	reg(&o);
	reg(&l);
	for (round = 0; round < 50; round++)
		cr_assert_eq(f_raises_ret(round), round + 5);
	cr_expect_eq(in_handler_results, 50 * 9);
	cr_expect_eq(r.returns, 50);
	cr_expect_eq(o.returns, 50);
	cr_expect_eq(l.returns, 50);
	cr_expect_eq(r.rp.nmissed + o.rp.nmissed + l.rp.nmissed, 0);
	unregister_kretprobe(&r.rp);
	unregister_kretprobe(&o.rp);
	unregister_kretprobe(&l.rp);
}

/* A timer signal lands anywhere (in probed functions, in the trampoline,
 * in handlers); its handler enters probed functions and walks the stack. */
static _Atomic long tick_results, ticks;

static void on_tick(int sig)
{
	void *buf[64];
	int n = backtrace(buf, 64), i;

	for (i = 0; i < n; i++)
		if (is_kretprobe_trampoline((unsigned long)buf[i]))
			__atomic_fetch_add(&handler_errors, 1, __ATOMIC_RELAXED);
	atomic_fetch_add(&tick_results, f_outer(1) - 7);
	atomic_fetch_add(&ticks, 1);
}

Test(nonlocal, timer_signals_everywhere, .timeout = 120)
{
	struct counted o = COUNTED("krp_outer", 8), i = COUNTED("krp_inner", 8),
		       l = COUNTED("krp_leaf", 8);
	struct sigaction sa = { .sa_handler = on_tick, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	long k, bad = 0;

	sigaction(SIGALRM, &sa, NULL);
	reg(&o);
	reg(&i);
	reg(&l);
	setitimer(ITIMER_REAL, &it, NULL);
	for (k = 0; k < 20000 && (ticks < 200 || k < 2000); k++)
		bad += f_outer(k) != (k + 1) * 2 + 3;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	cr_expect_eq(bad, 0);
	cr_expect_eq(tick_results, 0);
	cr_expect_gt(ticks, 0);
	cr_expect_eq(o.entries, o.returns);
	cr_expect_eq(i.entries, i.returns);
	cr_expect_eq(l.entries, l.returns);
	/* a tick that lands while a handler runs finds its probe hits
	 * reentrant: missed, and counted in the entry probe's nmissed */
	cr_expect_eq(o.entries + o.rp.kp.nmissed, (unsigned long)k + ticks);
	cr_expect_eq(o.rp.nmissed + i.rp.nmissed + l.rp.nmissed, 0);
	cr_expect_eq(handler_errors, 0);
	unregister_kretprobe(&o.rp);
	unregister_kretprobe(&i.rp);
	unregister_kretprobe(&l.rp);
}

/* ================================================= thread exits */

static _Atomic int cleanups;

static void cleanup(void *arg)
{
	atomic_fetch_add(&cleanups, 1);
}

UKP_TARGET long krp_exits(long x)
{
	if (x == 1)
		pthread_exit((void *)(intptr_t)1234);
	for (;;) {
		usleep(1000); /* a cancellation point */
		pthread_testcancel();
	}
	return 0;
}

static long (*volatile f_exits)(long) = krp_exits;

UKP_TARGET long krp_exits_outer(long x)
{
	long r;

	pthread_cleanup_push(cleanup, NULL);
	r = f_exits(x) + 1;
	pthread_cleanup_pop(0);
	return r;
}

static long (*volatile f_exits_outer)(long) = krp_exits_outer;

static void *exiting_thread(void *arg)
{
	f_exits_outer((long)(intptr_t)arg);
	return (void *)(intptr_t)-1;
}

/* Ten threads leave krp_exits through pthread_exit (how 1) or
 * cancellation (how 2): the cleanup handler above the probed frames
 * runs, no return handler does, and the instances come back. */
static void thread_exit_case(long how)
{
	struct counted e = COUNTED("krp_exits", 2), o = COUNTED("krp_exits_outer", 2);
	int round;

	reg(&e);
	reg(&o);
	for (round = 0; round < 10; round++) {
		pthread_t th;
		void *res;

		pthread_create(&th, NULL, exiting_thread, (void *)(intptr_t)how);
		if (how == 2) {
			while (e.entries < (unsigned long)round + 1)
				usleep(100);
			pthread_cancel(th);
		}
		pthread_join(th, &res);
		cr_assert_eq(res, how == 1 ? (void *)(intptr_t)1234 : PTHREAD_CANCELED);
	}
	cr_expect_eq(cleanups, 10, "cleanup handlers above the probed frame must run");
	cr_expect_eq(e.entries, 10);
	cr_expect_eq(e.returns + o.returns, 0);
	cr_expect_eq(e.rp.nmissed + o.rp.nmissed, 0,
		     "instances of exited threads were not reclaimed");
	unregister_kretprobe(&e.rp);
	unregister_kretprobe(&o.rp);
	ukp_krp_reap();
}

Test(nonlocal, pthread_exit_in_probed_frames, .timeout = 60)
{
	thread_exit_case(1);
}

Test(nonlocal, cancellation_in_probed_frames, .timeout = 60)
{
	thread_exit_case(2);
}

/* ======================================================== exit() */

static int exit_pipe[2];

static void at_exit_probes(void)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "%ld", f_outer(10)); /* 11*2+3 = 25 */

	if (write(exit_pipe[1], msg, (size_t)n) != n)
		_exit(99);
}

UKP_TARGET long krp_calls_exit(long x)
{
	exit((int)x);
}

static long (*volatile f_calls_exit)(long) = krp_calls_exit;

Test(nonlocal, exit_inside_a_probed_frame)
{
	struct counted e = COUNTED("krp_calls_exit", 2), o = COUNTED("krp_outer", 2);
	char buf[64] = "";
	pid_t pid;
	int status;

	reg(&e);
	reg(&o);
	cr_assert_eq(pipe(exit_pipe), 0);
	pid = fork();
	if (pid == 0) {
		atexit(at_exit_probes);
		f_outer(0); /* a pending return on the way */
		f_calls_exit(7);
		_exit(98);
	}
	close(exit_pipe[1]);
	cr_assert_gt(read(exit_pipe[0], buf, sizeof(buf) - 1), 0);
	waitpid(pid, &status, 0);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 7, "status %#x", status);
	cr_expect_str_eq(buf, "25");
	unregister_kretprobe(&e.rp);
	unregister_kretprobe(&o.rp);
}

/* ========================================= stack walks, no handler */

static void *walk[64];
static int nwalk;
static unsigned long ra_inner, ra_outer __attribute__((unused));

/* glibc's backtrace() under its other exported name, which no interposer
 * of ours stands before: libgcc walks the hijacked frames on its own. */
extern int __backtrace(void **buffer, int size);
/* libgcc's own stack walker, reached as glibc reaches it (a handle on
 * libgcc_s), past the library's _Unwind_Backtrace. */
static _Unwind_Reason_Code (*gcc_unwind_backtrace)(_Unwind_Trace_Fn, void *);

static _Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg)
{
	if (nwalk < 64)
		walk[nwalk++] = (void *)_Unwind_GetIP(ctx);
	return _URC_NO_REASON;
}

/* how: 0 backtrace(), 1 _Unwind_Backtrace() (both interposed), 2 glibc's
 * __backtrace(), 3 libgcc's _Unwind_Backtrace (neither interposed), 4
 * backtrace() of 2 frames. */
UKP_TARGET long krp_walk_leaf(long how)
{
	if (how == 0)
		nwalk = backtrace(walk, 64);
	else if (how == 4)
		nwalk = backtrace(walk, 2); /* a full buffer */
	else if (how == 2)
		nwalk = __backtrace(walk, 64);
	else {
		nwalk = 0;
		(how == 1 ? _Unwind_Backtrace : gcc_unwind_backtrace)(collect, NULL);
	}
	return how;
}

static long (*volatile f_walk_leaf)(long) = krp_walk_leaf;

UKP_TARGET long krp_walk_mid(long how)
{
	long r = f_walk_leaf(how);

	ra_inner = (unsigned long)__builtin_return_address(0); /* the trampoline */
	return r;
}

static long (*volatile f_walk_mid)(long) = krp_walk_mid;

UKP_TARGET long krp_walk_top(long how)
{
	return f_walk_mid(how) + 1;
}

static long (*volatile f_walk_top)(long) = krp_walk_top;

/* The name of the function that holds the return address a. */
static const char *name_of(void *a)
{
	static char buf[KSYM_NAME_LEN + 4096];
	struct ksym_info info = { .size = sizeof(info) };

	if (kallsyms_lookup_info((unsigned long)a - 1, &info, buf, sizeof(buf)) != 0)
		return "?";
	return info.name;
}

static bool in_named(void *a, const char *name)
{
	return strcmp(name_of(a), name) == 0;
}

static __attribute__((unused)) bool in_fn(void *a, void *fn)
{
	return (char *)a > (char *)fn && (char *)a < (char *)fn + 128;
}

Test(nonlocal, stack_walks_see_real_return_addresses)
{
	static const char *const names[] = { "backtrace", "_Unwind_Backtrace", "__backtrace",
					     "libgcc's _Unwind_Backtrace" };
	struct counted l = COUNTED("krp_walk_leaf", 4), m = COUNTED("krp_walk_mid", 4),
		       t = COUNTED("krp_walk_top", 4);
	void *gcc_s = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
	int how, i, j, found;

	(void)ra_outer;
	cr_assert(gcc_s, "libgcc_s is loaded (the library loads it)");
	gcc_unwind_backtrace = (_Unwind_Reason_Code(*)(_Unwind_Trace_Fn, void *))dlsym(
		gcc_s, "_Unwind_Backtrace");
	cr_assert(gcc_unwind_backtrace && (void *)gcc_unwind_backtrace != (void *)_Unwind_Backtrace);
	reg(&l);
	reg(&m);
	reg(&t);
	for (how = 0; how < 4; how++) {
		cr_assert_eq(f_walk_top(how), how + 1);
		cr_expect(is_kretprobe_trampoline(ra_inner), "mid's return was not hijacked");
		/* The interposed walkers never see the trampoline; the others
		 * see it as a frame of its own, followed by the real caller
		 * (its frame information, kretprobe_fde.c). */
		for (i = j = 0; i < nwalk; i++) {
			cr_expect(how >= 2 || !is_kretprobe_trampoline((unsigned long)walk[i]),
				  "%s: frame %d is the trampoline", names[how], i);
			if (!is_kretprobe_trampoline((unsigned long)walk[i]))
				walk[j++] = walk[i];
		}
		for (i = found = 0; i < j; i++)
			if (in_fn(walk[i], krp_walk_mid) && i + 2 < j && in_fn(walk[i + 1], krp_walk_top))
				found = 1;
		cr_expect(found, "%s: leaf's caller and mid's caller not found", names[how]);
		/* every walk starts at its caller, leaf: an interposer's own
		 * frame is not shown (it was frame 0, before leaf) */
		cr_expect(j > 0 && in_named(walk[0], "krp_walk_leaf"), "%s: frame 0 is in %s", names[how],
			  j > 0 ? name_of(walk[0]) : "(none)");
		/* the walk did not disarm the pending returns */
		cr_expect(l.returns == (unsigned long)how + 1 && m.returns == (unsigned long)how + 1 &&
				  t.returns == (unsigned long)how + 1,
			  "%s: returns %lu %lu %lu, want %d", names[how], (unsigned long)l.returns,
			  (unsigned long)m.returns, (unsigned long)t.returns, how + 1);
	}
	/* backtrace() into a buffer it fills: the frames the program gets
	 * without the library, leaf's and mid's (not one fewer) */
	cr_assert_eq(f_walk_top(4), 5);
	cr_expect(nwalk == 2 && in_named(walk[0], "krp_walk_leaf") &&
			  in_named(walk[1], "krp_walk_mid"),
		  "backtrace(buf, 2): %d frames, %s, %s", nwalk, nwalk > 0 ? name_of(walk[0]) : "-",
		  nwalk > 1 ? name_of(walk[1]) : "-");
	unregister_kretprobe(&l.rp);
	unregister_kretprobe(&m.rp);
	unregister_kretprobe(&t.rp);
	dlclose(gcc_s);
}

/* A return handler raises a signal whose handler siglongjmp()s away:
 * the signal waits until the handlers are done, then the jump leaves the
 * (already finished) return; nothing of the library's state is left
 * behind (unregistering afterwards would wait forever otherwise). */
static int raising_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct counted *c = (struct counted *)get_kretprobe(ri);

	atomic_fetch_add(&c->returns, 1);
	raise(SIGUSR1);
	return 0;
}

Test(nonlocal, siglongjmp_from_a_signal_raised_in_a_return_handler, .timeout = 30)
{
	struct counted o = COUNTED("krp_outer", 2), l = COUNTED("krp_leaf", 2);
	struct sigaction sa = { .sa_handler = jump_out };
	volatile int round, jumped = 0;

	sigaction(SIGUSR1, &sa, NULL);
	o.rp.handler = raising_ret;
	reg(&o);
	reg(&l);
	for (round = 0; round < 50; round++) {
		if (sigsetjmp(sjb, 1) == 0)
			f_outer(round);
		else
			jumped++;
	}
	cr_expect_eq(jumped, 50);
	cr_expect_eq(o.returns, 50);
	cr_expect_eq(l.returns, 50);
	cr_expect_eq(o.rp.nmissed + l.rp.nmissed, 0);
	cr_expect_eq(kprobe_running(), NULL);
	unregister_kretprobe(&o.rp);
	unregister_kretprobe(&l.rp);
	/* and the probes work as before */
	l.rp.kp.addr = NULL;
	l.rp.kp.flags = 0;
	reg(&l);
	cr_expect_eq(f_outer(1), 7);
	cr_expect_eq(l.returns, 51);
	unregister_kretprobe(&l.rp);
}

/* ============ signals that arrive while a return handler runs ========= */

/*
 * The program's handler of a signal that arrives during a return handler
 * runs after the return-probe dispatcher has finished (held back, as the
 * breakpoint path holds signals back), exactly once, before the caller
 * continues; and it may leave with siglongjmp.
 */
UKP_TARGET long defer_target(long x)
{
	return x * 3;
}

static volatile sig_atomic_t in_ret_handler, usr1_calls, usr1_inside, usr1_after_return;
static volatile sig_atomic_t returned;
static sigjmp_buf defer_jmp;
static volatile sig_atomic_t defer_jump;

static int defer_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	in_ret_handler = 1;
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
	/* with the signal held back, the program's handler has not run */
	in_ret_handler = 0;
	return 0;
}

static void defer_usr1(int sig)
{
	usr1_calls++;
	if (in_ret_handler)
		usr1_inside = 1;
	if (returned)
		usr1_after_return = 1;
	if (defer_jump)
		siglongjmp(defer_jmp, 1);
}

Test(nonlocal, signal_during_return_handler_is_held_back)
{
	struct kretprobe rp = { .handler = defer_ret, .kp.symbol_name = "defer_target" };
	struct sigaction sa;
	long v;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = defer_usr1;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	returned = 0;
	v = defer_target(5);
	returned = 1;
	cr_expect_eq(v, 15);
	cr_expect_eq(usr1_calls, 1);
	cr_expect_eq(usr1_inside, 0, "the program's handler ran inside the return handler");
	cr_expect_eq(usr1_after_return, 0, "delivered before the caller continued");

	/* a handler that leaves with siglongjmp leaves no library state behind */
	defer_jump = 1;
	if (sigsetjmp(defer_jmp, 1) == 0) {
		defer_target(6);
		cr_expect(0, "the handler should have jumped");
	}
	cr_expect_eq(usr1_calls, 2);
	defer_jump = 0;
	cr_expect_eq(defer_target(7), 21);
	cr_expect_eq(usr1_calls, 3);
	unregister_kretprobe(&rp); /* would hang if the read side were left held */
	cr_expect_eq(defer_target(8), 24);
	cr_expect_eq(usr1_calls, 3);
}
