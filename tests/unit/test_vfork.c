/* SPDX-License-Identifier: MIT */
/*
 * vfork() children: they share the parent's memory until they exec or
 * _exit, so what the library records for the program (its signal
 * handlers) must not change when a child calls sigaction(), as the child
 * of Python's subprocess does for every signal before it execs.
 * (Found by the torture tier: test_signal's test_interprocess_signal
 * waited for ever for a SIGHUP its handler never saw.)
 *
 *  unowned: a handler of a signal the library does not own (SIGHUP) is
 *           still called in the parent after the child reset it.
 *  owned:   the parent's recorded SIGSEGV handler (a signal the library
 *           owns) is still the one a fault reaches (in the child, the
 *           library's signals keep their actions until exec).
 *  child:   in the child, the reset takes effect (the default action).
 */
#include <criterion/criterion.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ukprobes.h"
#include "ukp_test.h"

static volatile sig_atomic_t hups;
static sigjmp_buf segv_jmp;
static volatile uintptr_t bad_addr = 16; /* unmapped: a fault */

static void on_hup(int sig)
{
	(void)sig;
	hups++;
}

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_jmp, 1);
}

__attribute__((noinline)) int vfork_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	return 0;
}

/* A probe, so that the library has installed its handlers. */
static struct kprobe kp = { .symbol_name = "vfork_target", .pre_handler = pre };

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

/* A vfork child that resets every handler, as Python's _posixsubprocess
 * does before exec; its exit status says whether its own reset of sig
 * took (it does not for the library's own signals: their handlers stay
 * the library's until exec). */
static int vfork_reset_child(int sig)
{
	struct sigaction dfl, cur;
	int status = 0;
	pid_t pid;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	pid = vfork();
	if (pid == 0) {
		for (int s = 1; s < 32; s++)
			if (s != SIGKILL && s != SIGSTOP)
				sigaction(s, &dfl, NULL);
		sigaction(sig, NULL, &cur);
		_exit(cur.sa_handler == SIG_DFL ? 0 : 3);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

Test(vfork, unowned)
{
	struct sigaction cur;

	cr_assert_eq(register_kprobe(&kp), 0);
	install(SIGHUP, on_hup);
	cr_assert_eq(vfork_reset_child(SIGHUP), 0, "the child's reset did not take");
	cr_assert_eq(sigaction(SIGHUP, NULL, &cur), 0);
	cr_assert_eq((void *)cur.sa_handler, (void *)on_hup,
		     "the parent reads back the child's SIG_DFL");
	cr_assert_eq(vfork_target(1), 2);
	kill(getpid(), SIGHUP);
	cr_assert_eq(hups, 1, "the parent's SIGHUP handler was not called");
	unregister_kprobe(&kp);
}

Test(vfork, owned)
{
	struct sigaction cur;
	volatile int *bad = (volatile int *)bad_addr;

	cr_assert_eq(register_kprobe(&kp), 0);
	install(SIGSEGV, on_segv);
	vfork_reset_child(SIGSEGV);
	cr_assert_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	cr_assert_eq((void *)cur.sa_handler, (void *)on_segv,
		     "the parent reads back the child's SIG_DFL");
	if (sigsetjmp(segv_jmp, 1) == 0) {
		(void)*bad;
		cr_assert_fail("no fault");
	}
	cr_assert_eq(vfork_target(1), 2);
	unregister_kprobe(&kp);
}

/* The child's own reset is real: a SIGHUP it sends itself ends it. */
Test(vfork, child)
{
	struct sigaction dfl;
	int status = 0;
	pid_t pid;

	cr_assert_eq(register_kprobe(&kp), 0);
	install(SIGHUP, on_hup);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	pid = vfork();
	if (pid == 0) {
		sigaction(SIGHUP, &dfl, NULL);
		kill(getpid(), SIGHUP);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP,
		  "the child's SIGHUP did not take the default action (status %#x)", status);
	cr_assert_eq(hups, 0);
	unregister_kprobe(&kp);
}
