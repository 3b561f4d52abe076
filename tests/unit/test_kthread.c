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
#include <signal.h>
#include <stdatomic.h>
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
