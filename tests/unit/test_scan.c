// SPDX-License-Identifier: MIT
/*
 * test_scan.c - the thread scan (threads.c) leaves threads that are
 * blocked in the kernel alone, and still finds every thread that may
 * resume in a range:
 *  - threads sleeping in nanosleep, epoll_wait, select, poll, pause and
 *    read (pipe) while probes are registered, optimized and unregistered
 *    over and over (optimizer and quarantine scans), and while the scan
 *    is called directly: none wakes up early or sees EINTR;
 *  - a thread spinning inside a range is found (it is asked by signal);
 *  - a thread blocked in a system call inside a signal handler whose
 *    interrupted pc is inside a range is found without a signal (its
 *    saved contexts are read from the registry), and not any more once
 *    the handler returned; the same for a handler installed by a raw
 *    rt_sigaction before the library started;
 *  - a thread blocked in a raw system call: its pc and its restart point
 *    (the system call instruction) both count;
 *  - without /proc, every thread is asked by signal (none taken for gone);
 *  - a thread that keeps entering and leaving a handler while inside a
 *    range is reported inside by every scan (with /proc, and with
 *    signals alone).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
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

/* ------------------------------------------------------------ targets */

volatile int sc_stop;

__asm__(
	".text\n"
	/* spins until sc_stop is set */
	".p2align 4\n"
	".globl sc_spin\n .type sc_spin,@function\n"
	"sc_spin:\n"
	"	movl sc_stop(%rip), %eax\n"
	"	testl %eax, %eax\n"
	"	je sc_spin\n"
	"	ret\n"
	".globl sc_spin_end\n"
	"sc_spin_end:\n"
	".size sc_spin, .-sc_spin\n"

	/* void sc_spin_on(void *top): sc_spin with the stack pointer at top */
	".p2align 4\n"
	".globl sc_spin_on\n .type sc_spin_on,@function\n"
	"sc_spin_on:\n"
	"	pushq %rbx\n"
	"	movq %rsp, %rbx\n"
	"	movq %rdi, %rsp\n"
	"	call sc_spin\n"
	"	movq %rbx, %rsp\n"
	"	popq %rbx\n"
	"	ret\n"
	".size sc_spin_on, .-sc_spin_on\n"

	/* long sc_sys_read(int fd, void *buf, size_t n): a raw read */
	".p2align 4\n"
	".globl sc_sys_read\n .type sc_sys_read,@function\n"
	"sc_sys_read:\n"
	"	xorl %eax, %eax\n"
	"	syscall\n"
	".globl sc_sys_read_ret\n"
	"sc_sys_read_ret:\n"
	"	ret\n"
	".globl sc_sys_read_end\n"
	"sc_sys_read_end:\n"
	".size sc_sys_read, .-sc_sys_read\n"

	/* the restorer of a handler installed by a raw rt_sigaction */
	".p2align 4\n"
	".globl sc_restorer\n .type sc_restorer,@function\n"
	"sc_restorer:\n"
	"	movq $15, %rax\n"
	"	syscall\n"
	"	hlt\n"
	".size sc_restorer, .-sc_restorer\n"

	/* probe targets: a 5-byte region of two instructions each */
	".p2align 4\n"
	".globl sc_f0\n .type sc_f0,@function\n"
	"sc_f0:\n	movl %edi, %eax\n	addl $1, %eax\n	ret\n"
	".size sc_f0, .-sc_f0\n"
	".p2align 4\n"
	".globl sc_f1\n .type sc_f1,@function\n"
	"sc_f1:\n	movl %edi, %eax\n	addl $2, %eax\n	ret\n"
	".size sc_f1, .-sc_f1\n"
	".p2align 4\n"
	".globl sc_f2\n .type sc_f2,@function\n"
	"sc_f2:\n	movl %edi, %eax\n	addl $3, %eax\n	ret\n"
	".size sc_f2, .-sc_f2\n"
	".p2align 4\n"
	".globl sc_f3\n .type sc_f3,@function\n"
	"sc_f3:\n	movl %edi, %eax\n	addl $4, %eax\n	ret\n"
	".size sc_f3, .-sc_f3\n");

void sc_spin(void);
void sc_spin_on(void *top);
extern char sc_spin_end[];
long sc_sys_read(int fd, void *buf, size_t n);
extern char sc_sys_read_ret[], sc_sys_read_end[];
void sc_restorer(void);
int sc_f0(int), sc_f1(int), sc_f2(int), sc_f3(int);

static int (*const targets[])(int) = { sc_f0, sc_f1, sc_f2, sc_f3 };
static const char *const target_names[] = { "sc_f0", "sc_f1", "sc_f2", "sc_f3" };
#define NTARGETS 4

/* ------------------------------------------------------------ helpers */

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

/* Is thread tid blocked in the kernel (not "running")? */
static bool blocked(int tid)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && strncmp(buf, "running", 7) != 0;
}

/* Wait until thread *tid (published by the thread) sleeps in the kernel. */
static void wait_blocked(atomic_int *tid)
{
	long end = now_ns() + 5000000000L;

	while (!atomic_load(tid) && now_ns() < end)
		usleep(1000);
	while (!blocked(atomic_load(tid)) && now_ns() < end)
		usleep(1000);
	cr_assert(blocked(atomic_load(tid)), "thread %d never blocked", atomic_load(tid));
	usleep(5000);
}

static atomic_long pre_hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	atomic_fetch_add(&pre_hits, 1);
	return 0;
}

/* ------------------------------------------ blocked threads stay asleep */

#define SLEEP_MS 2500
#define CHURN_MS 1500

enum { S_NANOSLEEP, S_EPOLL, S_SELECT, S_POLL, S_PAUSE, S_READ, NSLEEPERS };
static const char *const sleeper_names[NSLEEPERS] = { "nanosleep", "epoll_wait", "select",
						      "poll", "pause", "read" };

struct sleeper {
	int kind;
	atomic_int tid;
	long ret;
	int err;
	long elapsed_ns;
	bool woken_by_us; /* the wake-up (pause, read) came before it returned */
	pthread_t t;
};

static struct sleeper sleepers[NSLEEPERS];
static atomic_bool wake_sent;
static int wake_pipe[2];

static void usr1_handler(int sig)
{
	(void)sig;
}

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	long t0;

	atomic_store(&s->tid, gettid_());
	t0 = now_ns();
	errno = 0;
	switch (s->kind) {
	case S_NANOSLEEP: {
		struct timespec req = { SLEEP_MS / 1000, (SLEEP_MS % 1000) * 1000000L };
		struct timespec rem = { -1, -1 };

		s->ret = nanosleep(&req, &rem);
		if (s->ret == 0 && (rem.tv_sec != -1 || rem.tv_nsec != -1))
			s->ret = -2; /* remaining time written: it was cut short */
		break;
	}
	case S_EPOLL: {
		int ep = epoll_create1(0);
		struct epoll_event ev;

		s->ret = epoll_wait(ep, &ev, 1, SLEEP_MS);
		s->err = errno;
		close(ep);
		break;
	}
	case S_SELECT: {
		struct timeval tv = { SLEEP_MS / 1000, (SLEEP_MS % 1000) * 1000 };

		s->ret = select(0, NULL, NULL, NULL, &tv);
		break;
	}
	case S_POLL:
		s->ret = poll(NULL, 0, SLEEP_MS);
		break;
	case S_PAUSE:
		s->ret = pause();
		s->woken_by_us = atomic_load(&wake_sent);
		break;
	case S_READ: {
		char c;

		s->ret = read(wake_pipe[0], &c, 1);
		s->woken_by_us = atomic_load(&wake_sent);
		break;
	}
	}
	if (!s->err)
		s->err = errno;
	s->elapsed_ns = now_ns() - t0;
	return NULL;
}

/* The ranges of every target's optimizable region, for direct scans. */
static unsigned int target_ranges(struct ukp_range *r)
{
	for (int i = 0; i < NTARGETS; i++) {
		r[i].start = (uintptr_t)targets[i] + 1;
		r[i].end = (uintptr_t)targets[i] + 5;
	}
	return NTARGETS;
}

Test(scan, blocked_threads_are_not_interrupted, .timeout = 60)
{
	struct kprobe kps[NTARGETS], *kpp[NTARGETS];
	struct sigaction sa;
	struct ukp_range r[NTARGETS];
	unsigned long scans0, blocked0, timeouts0;
	unsigned int nr = target_ranges(r);
	long t0, calls = 0;
	int rounds = 0, optimized = 0, direct = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_handler; /* no SA_RESTART */
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(pipe(wake_pipe), 0);
	cr_assert_eq(ukp_init(), 0);
	ukp_quarantine_limit = 1; /* reclaim (scan) at almost every unregistration */
	scans0 = atomic_load(&ukp_scan_count);
	blocked0 = atomic_load(&ukp_scan_blocked);
	timeouts0 = atomic_load(&ukp_scan_timeouts);

	t0 = now_ns();
	for (int i = 0; i < NSLEEPERS; i++) {
		sleepers[i].kind = i;
		cr_assert_eq(pthread_create(&sleepers[i].t, NULL, sleeper_main, &sleepers[i]), 0);
	}
	for (int i = 0; i < NSLEEPERS; i++)
		wait_blocked(&sleepers[i].tid);

	while (now_ns() - t0 < CHURN_MS * 1000000L) {
		for (int i = 0; i < NTARGETS; i++) {
			memset(&kps[i], 0, sizeof(kps[i]));
			kps[i].symbol_name = target_names[i];
			kps[i].pre_handler = count_pre;
			kpp[i] = &kps[i];
		}
		cr_assert_eq(register_kprobes(kpp, NTARGETS), 0);
		cr_assert_eq(ukprobes_wait_optimizer(), 0);
		for (int i = 0; i < NTARGETS; i++) {
			optimized += kprobe_optimized(&kps[i]);
			cr_assert_eq(targets[i](10), 11 + i);
			calls++;
		}
		/* scans straight away too, as the quarantine does */
		cr_expect_eq(ukp_threads_scan(r, nr), 0);
		direct++;
		if (rounds % 2)
			unregister_kprobes(kpp, NTARGETS);
		else
			for (int i = 0; i < NTARGETS; i++)
				unregister_kprobe(&kps[i]);
		ukp_quarantine_reclaim();
		rounds++;
	}
	cr_expect_eq(atomic_load(&pre_hits), calls);

	/* wake the ones that wait for us */
	atomic_store(&wake_sent, true);
	pthread_kill(sleepers[S_PAUSE].t, SIGUSR1);
	cr_assert_eq(write(wake_pipe[1], "x", 1), 1);
	for (int i = 0; i < NSLEEPERS; i++)
		pthread_join(sleepers[i].t, NULL);

	for (int i = 0; i < NSLEEPERS; i++) {
		struct sleeper *s = &sleepers[i];

		switch (i) {
		case S_PAUSE:
			cr_expect(s->woken_by_us, "pause returned before we woke it (errno %d)",
				  s->err);
			break;
		case S_READ:
			cr_expect(s->woken_by_us && s->ret == 1,
				  "read returned %ld (errno %d) before we wrote", s->ret, s->err);
			break;
		default:
			cr_expect_eq(s->ret, 0, "%s returned %ld, errno %d, after %ld ms",
				     sleeper_names[i], s->ret, s->err, s->elapsed_ns / 1000000);
			cr_expect_geq(s->elapsed_ns, SLEEP_MS * 1000000L - 1000000L,
				      "%s woke up after %ld ms", sleeper_names[i],
				      s->elapsed_ns / 1000000);
		}
	}
	cr_expect_gt(optimized, 0, "nothing was optimized in %d rounds", rounds);
	cr_expect_geq(atomic_load(&ukp_scan_count) - scans0, (unsigned long)rounds + direct);
	cr_expect_geq(atomic_load(&ukp_scan_blocked) - blocked0,
		      (unsigned long)(rounds + direct) * NSLEEPERS,
		      "the sleepers were not seen blocked at every scan");
	cr_expect_eq(atomic_load(&ukp_scan_timeouts), timeouts0);
	cr_log_info("%d rounds, %d optimized, %lu scans\n", rounds, optimized,
		    atomic_load(&ukp_scan_count) - scans0);
}

/* --------------------------------------------- the scan still finds them */

static atomic_int spin_tid;

static void *spinner(void *arg)
{
	(void)arg;
	atomic_store(&spin_tid, gettid_());
	sc_spin();
	return NULL;
}

Test(scan, finds_a_running_thread_by_its_ip_and_not_elsewhere)
{
	struct ukp_range r[2] = {
		{ (uintptr_t)sc_spin, (uintptr_t)sc_spin_end },
		{ (uintptr_t)sc_f0, (uintptr_t)sc_f0 + 5 },
	};
	unsigned long sig0;
	pthread_t t;
	uint64_t hit;

	cr_assert_eq(ukp_init(), 0);
	sc_stop = 0;
	cr_assert_eq(pthread_create(&t, NULL, spinner, NULL), 0);
	while (!atomic_load(&spin_tid))
		usleep(1000);
	sig0 = atomic_load(&ukp_scan_signalled);
	hit = ukp_threads_scan(r, 2);
	cr_expect_eq(hit, 1, "scan says %#lx", (unsigned long)hit);
	cr_expect_gt(atomic_load(&ukp_scan_signalled), sig0, "the spinning thread was not asked");
	sc_stop = 1;
	pthread_join(t, NULL);
	hit = ukp_threads_scan(r, 2);
	cr_expect_eq(hit, 0, "scan says %#lx after the thread left", (unsigned long)hit);
}

/* The scan's signal runs on the thread's alternate stack: a thread that
 * runs on a stack too small for a signal frame (a Go goroutine's, a
 * coroutine's) and has an alternate stack (Go gives every thread one) is
 * asked without a byte written below its stack pointer. Here 1 KB lies
 * above a guard page: a frame written there (with the vector state,
 * kilobytes) faulted, and the process died. */
static char *small_top;
static atomic_int small_tid;

static void *small_stack_spinner(void *arg)
{
	stack_t ss = { .ss_sp = arg, .ss_size = 256 * 1024 };

	if (sigaltstack(&ss, NULL))
		return NULL;
	atomic_store(&small_tid, gettid_());
	sc_spin_on(small_top);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	return NULL;
}

Test(scan, asks_a_thread_on_its_alternate_stack, .timeout = 30)
{
	struct ukp_range r[1] = { { (uintptr_t)sc_spin, (uintptr_t)sc_spin_end } };
	char *small = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *alt = mmap(NULL, 256 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	unsigned long sig0;
	pthread_t t;
	int i;

	cr_assert_neq(small, MAP_FAILED);
	cr_assert_neq(alt, MAP_FAILED);
	cr_assert_eq(mprotect(small + 4096, 4096, PROT_READ | PROT_WRITE), 0);
	small_top = small + 4096 + 1024;
	cr_assert_eq(ukp_init(), 0);
	sc_stop = 0;
	cr_assert_eq(pthread_create(&t, NULL, small_stack_spinner, alt), 0);
	while (!atomic_load(&small_tid))
		usleep(1000);
	sig0 = atomic_load(&ukp_scan_signalled);
	for (i = 0; i < 20; i++)
		cr_expect_eq(ukp_threads_scan(r, 1), 1, "scan %d: the spinning thread not found", i);
	cr_expect_geq(atomic_load(&ukp_scan_signalled), sig0 + 20, "the thread was not asked");
	sc_stop = 1;
	pthread_join(t, NULL);
	munmap(small, 8192);
	munmap(alt, 256 * 1024);
}

/* A thread spins in sc_spin; a signal makes it block in read() inside
 * the handler. Its pc is in the C library; its saved context in sc_spin. */
static int handler_pipe[2];
static atomic_int in_handler;

static void blocking_handler(int sig)
{
	char c;

	(void)sig;
	atomic_store(&in_handler, 1);
	if (read(handler_pipe[0], &c, 1) != 1)
		abort();
	atomic_store(&in_handler, 2);
}

static void blocking_siginfo_handler(int sig, siginfo_t *info, void *uc)
{
	(void)info;
	(void)uc;
	blocking_handler(sig);
}

static void expect_found_in_handler(int sig, bool by_proc)
{
	struct ukp_range r[2] = {
		{ (uintptr_t)sc_spin, (uintptr_t)sc_spin_end },
		{ (uintptr_t)sc_f0, (uintptr_t)sc_f0 + 5 },
	};
	unsigned long sig0, blk0;
	atomic_int tid;
	pthread_t t;
	uint64_t hit;

	cr_assert_eq(pipe(handler_pipe), 0);
	sc_stop = 0;
	atomic_store(&in_handler, 0);
	cr_assert_eq(pthread_create(&t, NULL, spinner, NULL), 0);
	while (!atomic_load(&spin_tid))
		usleep(1000);
	usleep(10000);
	cr_assert_eq(pthread_kill(t, sig), 0);
	while (!atomic_load(&in_handler))
		usleep(1000);
	atomic_store(&tid, atomic_load(&spin_tid));
	wait_blocked(&tid);

	sig0 = atomic_load(&ukp_scan_signalled);
	blk0 = atomic_load(&ukp_scan_blocked);
	hit = ukp_threads_scan(r, 2);
	cr_expect_eq(hit, 1, "scan says %#lx", (unsigned long)hit);
	if (by_proc) {
		cr_expect_eq(atomic_load(&ukp_scan_signalled), sig0,
			     "the blocked thread was signalled");
		cr_expect_gt(atomic_load(&ukp_scan_blocked), blk0);
	}
	cr_expect_eq(atomic_load(&in_handler), 1, "the handler's read was interrupted");

	/* the handler returns: the thread spins in sc_spin again */
	cr_assert_eq(write(handler_pipe[1], "x", 1), 1);
	while (atomic_load(&in_handler) != 2)
		usleep(1000);
	hit = ukp_threads_scan(r, 2);
	cr_expect_eq(hit, 1, "back in sc_spin: scan says %#lx", (unsigned long)hit);
	sc_stop = 1;
	pthread_join(t, NULL);
	hit = ukp_threads_scan(r, 2);
	cr_expect_eq(hit, 0, "scan says %#lx after the thread left", (unsigned long)hit);
}

Test(scan, finds_a_handler_blocked_over_a_range_without_signal)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = blocking_handler;
	sa.sa_flags = SA_RESTART;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(ukp_init(), 0);
	expect_found_in_handler(SIGUSR1, true);
}

/* Without /proc's syscall file every thread is asked by signal, and
 * none is taken for gone: the blocked handler is found all the same. */
Test(scan, without_proc_every_thread_is_asked)
{
	struct ukp_range r[1] = { { (uintptr_t)sc_spin, (uintptr_t)sc_spin_end } };
	struct sigaction sa;
	unsigned long sig0;
	uint64_t hit;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = blocking_handler;
	sa.sa_flags = SA_RESTART;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(ukp_init(), 0);
	ukp_scan_without_proc = true;
	sig0 = atomic_load(&ukp_scan_signalled);
	/* the spinning thread, then the same thread blocked in a handler */
	expect_found_in_handler(SIGUSR1, false);
	cr_expect_gt(atomic_load(&ukp_scan_signalled), sig0);
	hit = ukp_threads_scan(r, 1);
	cr_expect_eq(hit, 0, "scan says %#lx", (unsigned long)hit);
}

/* The kernel's struct sigaction for rt_sigaction on x86-64. */
struct raw_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

Test(scan, finds_a_handler_installed_before_the_library)
{
	struct raw_sigaction k = { (void *)blocking_siginfo_handler,
				   SA_SIGINFO | SA_RESTART | 0x04000000 /* SA_RESTORER */,
				   (void *)sc_restorer, 0 };
	struct sigaction old;

	/* behind the library's back */
	cr_assert_eq(syscall(SYS_rt_sigaction, SIGUSR2, &k, NULL, 8), 0);
	cr_assert_eq(ukp_init(), 0);
	cr_assert_eq(sigaction(SIGUSR2, NULL, &old), 0);
	cr_expect_eq((void *)old.sa_sigaction, (void *)blocking_siginfo_handler,
		     "the program's handler is read back");
	cr_expect(!sigismember(&old.sa_mask, UKP_SCAN_SIG));
	expect_found_in_handler(SIGUSR2, true);
}

/* A thread blocked in the raw read of sc_sys_read: the kernel reports
 * the pc after the syscall instruction; a restart resumes on it. */
static int raw_pipe[2];
static atomic_int raw_tid;

static void *raw_reader(void *arg)
{
	char c;

	(void)arg;
	atomic_store(&raw_tid, gettid_());
	if (sc_sys_read(raw_pipe[0], &c, 1) != 1)
		abort();
	return NULL;
}

Test(scan, a_blocked_pc_and_its_restart_point_count)
{
	struct ukp_range r[3] = {
		{ (uintptr_t)sc_sys_read, (uintptr_t)sc_sys_read_ret }, /* the syscall */
		{ (uintptr_t)sc_sys_read_ret, (uintptr_t)sc_sys_read_end }, /* the pc */
		{ (uintptr_t)sc_f0, (uintptr_t)sc_f0 + 5 },
	};
	unsigned long sig0;
	pthread_t t;
	uint64_t hit;

	cr_assert_eq(ukp_init(), 0);
	cr_assert_eq(pipe(raw_pipe), 0);
	cr_assert_eq(pthread_create(&t, NULL, raw_reader, NULL), 0);
	wait_blocked(&raw_tid);
	sig0 = atomic_load(&ukp_scan_signalled);
	hit = ukp_threads_scan(r, 3);
	cr_expect_eq(hit, 3, "scan says %#lx", (unsigned long)hit);
	cr_expect_eq(atomic_load(&ukp_scan_signalled), sig0, "the blocked thread was signalled");
	cr_assert_eq(write(raw_pipe[1], "x", 1), 1);
	pthread_join(t, NULL);
	hit = ukp_threads_scan(r, 3);
	cr_expect_eq(hit, 0, "scan says %#lx after the thread left", (unsigned long)hit);
}

/*
 * A thread that is always inside sc_spin: spinning there, or in a
 * handler (running, or now and then blocked in nanosleep) whose saved
 * context is there. Another thread keeps sending it signals while
 * scans run; every scan must see it, whichever way it looks (blocked:
 * /proc and the registry; running: the scan signal, which waits while
 * the wrapper has not pushed the context yet or has popped it).
 */
static atomic_long handled;
static atomic_bool kick_stop;

static void busy_handler(int sig)
{
	(void)sig;
	if (atomic_fetch_add(&handled, 1) % 16 == 0) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

static void *kicker(void *arg)
{
	pthread_t t = *(pthread_t *)arg;

	while (!atomic_load(&kick_stop)) {
		pthread_kill(t, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

static void always_found(void)
{
	struct ukp_range r[1] = { { (uintptr_t)sc_spin, (uintptr_t)sc_spin_end } };
	unsigned long sig0, blk0;
	struct sigaction sa;
	int scans = 0, missed = 0;
	pthread_t t, k;
	long t0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = busy_handler;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	sc_stop = 0;
	cr_assert_eq(pthread_create(&t, NULL, spinner, NULL), 0);
	while (!atomic_load(&spin_tid))
		usleep(1000);
	usleep(10000);
	cr_assert_eq(pthread_create(&k, NULL, kicker, &t), 0);
	sig0 = atomic_load(&ukp_scan_signalled);
	blk0 = atomic_load(&ukp_scan_blocked);
	t0 = now_ns();
	/* At least a second of scans, and on until the handler has run often
	 * enough to matter: a loaded machine gives the kicker less time. */
	while (now_ns() - t0 < 1000000000L ||
	       (atomic_load(&handled) <= 100 && now_ns() - t0 < 30000000000L)) {
		missed += (ukp_threads_scan(r, 1) & 1) != 1;
		scans++;
	}
	atomic_store(&kick_stop, true);
	pthread_join(k, NULL);
	sc_stop = 1;
	pthread_join(t, NULL);
	cr_expect_eq(missed, 0, "%d of %d scans did not see the thread", missed, scans);
	cr_log_info("%d scans, %ld handlers, %lu signalled, %lu seen blocked\n", scans,
		    atomic_load(&handled), atomic_load(&ukp_scan_signalled) - sig0,
		    atomic_load(&ukp_scan_blocked) - blk0);
	cr_expect_gt(atomic_load(&handled), 100);
}

Test(scan, a_thread_always_inside_is_always_found, .timeout = 60)
{
	cr_assert_eq(ukp_init(), 0);
	always_found();
}

Test(scan, a_thread_always_inside_is_always_found_by_signal, .timeout = 60)
{
	cr_assert_eq(ukp_init(), 0);
	ukp_scan_without_proc = true;
	always_found();
}
