// SPDX-License-Identifier: MIT
/*
 * test_kthread.c - ukprobes_kthread_create(): the thread starts with
 * every signal blocked in the kernel's mask but the library's (SIGTRAP,
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGRTMAX), so a signal of the program
 * sent to the process is never handled there; it takes a breakpoint in
 * what it calls; the creator's mask is left as it was; attr is honoured.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <ukprobes.h>

/* the kernel's mask of the calling thread (the interposers show the
 * program's view) */
static uint64_t kernel_mask(void)
{
	uint64_t m = 0;

	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof(m));
	return m;
}

#define BIT(s) (1ULL << ((s) - 1))
#define UKP_TEST_SCAN_SIG 64 /* the library's thread-scan signal (SIGRTMAX) */

static uint64_t thread_mask;
static _Atomic pid_t usr1_on;
static int hits;

__attribute__((noinline)) int ukt_kthread_called(int v)
{
	__asm__ volatile("" ::: "memory");
	return v + 1;
}

static void *thread_main(void *arg)
{
	thread_mask = kernel_mask();
	*(int *)arg = ukt_kthread_called(*(int *)arg);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&usr1_on, (pid_t)syscall(SYS_gettid));
}

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	hits++;
	return 0;
}

Test(kthread, mask_and_breakpoints)
{
	struct kprobe kp = { .symbol_name = "ukt_kthread_called", .pre_handler = pre };
	uint64_t before = kernel_mask();
	pthread_t t;
	int v = 41;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(ukprobes_kthread_create(&t, NULL, thread_main, &v), 0);
	cr_assert_eq(kernel_mask(), before, "the creator's mask is put back");
	pthread_join(t, NULL);
	unregister_kprobe(&kp);

	cr_assert_eq(v, 42);
	cr_assert_eq(hits, 1, "the thread took the breakpoint");
	cr_assert(thread_mask & BIT(SIGUSR1));
	cr_assert(thread_mask & BIT(SIGINT));
	cr_assert(thread_mask & BIT(SIGCHLD));
	cr_assert_not(thread_mask & BIT(SIGTRAP));
	cr_assert_not(thread_mask & BIT(SIGSEGV));
	cr_assert_not(thread_mask & BIT(SIGBUS));
	cr_assert_not(thread_mask & BIT(SIGFPE));
	cr_assert_not(thread_mask & BIT(SIGILL));
	cr_assert_not(thread_mask & BIT(SIGRTMAX));
}

static _Atomic int stop;

static void *spin_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		usleep(1000);
	return NULL;
}

/* The program's SIGUSR1, sent to the process while every thread of the
 * program blocks it but one, which unblocks it later: never handled on
 * the kthread, although it had it deliverable all along otherwise. */
Test(kthread, program_signal_not_handled_there)
{
	pthread_attr_t attr;
	sigset_t usr1;
	pthread_t t;
	int state = -1;

	signal(SIGUSR1, on_usr1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE);
	cr_assert_eq(ukprobes_kthread_create(&t, &attr, spin_main, NULL), 0);
	pthread_attr_getdetachstate(&attr, &state);
	cr_assert_eq(state, PTHREAD_CREATE_JOINABLE);
	pthread_attr_destroy(&attr);
	kill(getpid(), SIGUSR1);
	usleep(20000);
	cr_assert_eq(atomic_load(&usr1_on), 0, "not handled while only the kthread could");
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	cr_assert_eq(atomic_load(&usr1_on), (pid_t)syscall(SYS_gettid), "handled here once unblocked");
	atomic_store(&stop, 1);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

/* ---------------------------------------------------- ukprobes_kthread_run */

struct raw_seen {
	uint64_t mask;
	int tid, err_before, err_after, trylock, locked, called;
	uintptr_t self;
	char comm[32];
};

static pthread_mutex_t held_rec, free_rec;

static void *raw_main(void *arg)
{
	struct raw_seen *s = arg;
	char path[64];
	ssize_t n;
	int fd;

	s->mask = kernel_mask();
	s->tid = (int)syscall(SYS_gettid);
	s->self = (uintptr_t)pthread_self();
	/* errno: zeroed at the start, then what the C library says here */
	s->err_before = errno;
	close(-1);
	s->err_after = errno;
	/* a recursive mutex its creator holds: busy for this thread */
	s->trylock = pthread_mutex_trylock(&held_rec);
	/* and one nobody holds: really taken (with an id of 0, the id of
	 * "no owner", the C library would take it for the thread's already
	 * and not lock it) */
	s->locked = pthread_mutex_lock(&free_rec);
	s->called = ukt_kthread_called(1);
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", s->tid);
	/* (no stdio: it would allocate with the program's malloc) */
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, s->comm, sizeof(s->comm) - 1) : -1;
	s->comm[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return (void *)(uintptr_t)0x5eed;
}

static bool mapped(uintptr_t a)
{
	char line[256];
	bool in = false;
	FILE *f = fopen("/proc/self/maps", "r");

	while (!in && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
			in = true;
	}
	fclose(f);
	return in;
}

static bool task_exists(int tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	return access(path, F_OK) == 0;
}

Test(kthread, run_raw_own_state)
{
	struct kprobe kp = { .symbol_name = "ukt_kthread_called", .pre_handler = pre };
	pthread_mutexattr_t ma;
	struct ukprobes_kthread t;
	struct raw_seen s = { 0 };
	uint64_t before = kernel_mask();
	void *ret;
	int tries;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&held_rec, &ma);
	pthread_mutex_init(&free_rec, &ma);
	cr_assert_eq(pthread_mutex_lock(&held_rec), 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	hits = 0;
	errno = ENOENT;
	cr_assert_eq(ukprobes_kthread_run(&t, raw_main, &s, "ukt-raw", 0), 0);
	cr_assert_eq(kernel_mask(), before, "the creator's mask is put back");
	cr_assert_gt(ukprobes_kthread_tid(&t), 0, "a raw thread (glibc's descriptor learned)");
	ret = ukprobes_kthread_join(&t);
	unregister_kprobe(&kp);
	pthread_mutex_unlock(&held_rec);

	cr_assert_eq(ret, (void *)(uintptr_t)0x5eed, "join gives fn's value");
	cr_assert_eq(errno, ENOENT, "the creator's errno is its own");
	cr_assert_eq(s.err_before, 0, "the thread's errno starts zeroed");
	cr_assert_eq(s.err_after, EBADF, "the thread's errno is the C library's answer");
	cr_assert_eq(s.trylock, EBUSY, "the C library tells the thread from its creator");
	cr_assert_eq(s.locked, 0);
	cr_assert_eq(pthread_mutex_trylock(&free_rec), EBUSY,
		     "the thread's lock of a free recursive mutex was real");
	cr_assert_eq(s.tid, ukprobes_kthread_tid(&t));
	cr_assert_neq(s.self, (uintptr_t)pthread_self(), "a thread pointer of its own");
	cr_assert_str_eq(s.comm, "ukt-raw\n");
	cr_assert_eq(s.called, 2);
	cr_assert_eq(hits, 1, "the thread took the breakpoint");
	cr_assert(s.mask & BIT(SIGUSR1));
	cr_assert_not(s.mask & BIT(SIGTRAP));
	cr_assert_not(s.mask & BIT(UKP_TEST_SCAN_SIG));
	cr_assert_not(mapped(s.self), "its mapping is gone after the join");
	for (tries = 0; task_exists(s.tid) && tries < 2000; tries++)
		usleep(1000);
	cr_assert_not(task_exists(s.tid), "its task is gone");
}

static _Atomic int detached_tid;
static _Atomic uintptr_t detached_self;

static void *detached_main(void *arg)
{
	(void)arg;
	atomic_store(&detached_self, (uintptr_t)pthread_self());
	atomic_store(&detached_tid, (int)syscall(SYS_gettid));
	return NULL;
}

Test(kthread, run_detached_leaves_nothing)
{
	struct ukprobes_kthread t;
	int tries;

	cr_assert_eq(ukprobes_kthread_run(&t, detached_main, NULL, NULL, UKPROBES_KTHREAD_DETACHED), 0);
	for (tries = 0; !atomic_load(&detached_tid) && tries < 5000; tries++)
		usleep(1000);
	cr_assert_neq(atomic_load(&detached_tid), 0, "it ran");
	for (tries = 0; (task_exists(detached_tid) || mapped(detached_self)) && tries < 5000; tries++)
		usleep(1000);
	cr_assert_not(task_exists(detached_tid), "its task is gone");
	cr_assert_not(mapped(detached_self), "it unmapped its own mapping");
}
