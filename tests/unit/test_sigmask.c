/* SPDX-License-Identifier: MIT */
/*
 * The program's view of its signal mask: what the library does to keep
 * its own signals (SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGRTMAX)
 * deliverable is invisible. The program blocks SIGTRAP and every libc
 * function that reads or takes a mask shows it blocked, while a
 * breakpoint probe and an optimized probe keep firing:
 *
 *  view:     sigprocmask/pthread_sigmask old masks, sa_mask read back,
 *            new threads, fork, exec, posix_spawn, sigsetjmp/siglongjmp;
 *  pending:  a SIGTRAP the program sends itself while it blocks it stays
 *            pending (sigpending), reaches its handler only when it
 *            unblocks it, and can be taken by sigwaitinfo;
 *  handlers: the uc_sigmask a handler sees, and what it changes there,
 *            take effect as the program meant;
 *  waits:    sigsuspend, ppoll, pselect, epoll_pwait with a mask that
 *            unblocks a held SIGTRAP return EINTR after its handler ran.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "ukprobes.h"
#include "ukp_test.h"

/* sm_opt: an optimizable 5-byte region; sm_bp: a breakpoint probe (it
 * gets a post_handler). */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl sm_opt\n .type sm_opt,@function\n"
	"sm_opt:\n"
	"	movl %edi, %eax\n"
	"	addl $7, %eax\n"
	"	ret\n"
	".size sm_opt, .-sm_opt\n"
	".globl sm_bp\n .type sm_bp,@function\n"
	"sm_bp:\n"
	"	movl %edi, %eax\n"
	"	addl $9, %eax\n"
	"	ret\n"
	".size sm_bp, .-sm_bp\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl sm_opt\n .type sm_opt,%function\n"
	"sm_opt:\n"
	"	add w0, w0, #7\n"
	"	ret\n"
	".size sm_opt, .-sm_opt\n"
	".globl sm_bp\n .type sm_bp,%function\n"
	"sm_bp:\n"
	"	add w0, w0, #9\n"
	"	ret\n"
	".size sm_bp, .-sm_bp\n");
#endif
int sm_opt(int x);
int sm_bp(int x);

extern char **environ;

static atomic_int bp_hits, opt_hits;

static int bp_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&bp_hits, 1);
	return 0;
}

static void bp_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

static int opt_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&opt_hits, 1);
	return 0;
}

static struct kprobe bp_kp = { .symbol_name = "sm_bp", .pre_handler = bp_pre,
			       .post_handler = bp_post };
static struct kprobe opt_kp = { .symbol_name = "sm_opt", .pre_handler = opt_pre };

static void register_probes(void)
{
	cr_assert_eq(register_kprobe(&bp_kp), 0);
	cr_assert_eq(register_kprobe(&opt_kp), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&opt_kp));
	cr_assert(!kprobe_optimized(&bp_kp));
}

/* [any thread] Both probes fire: 1, or 0. */
static int probes_fire(void)
{
	int b = atomic_load(&bp_hits), o = atomic_load(&opt_hits);

	if (sm_bp(1) != 10 || sm_opt(1) != 8)
		return 0;
	return atomic_load(&bp_hits) == b + 1 && atomic_load(&opt_hits) == o + 1;
}

static uint64_t word(const sigset_t *s)
{
	return *(const uint64_t *)s;
}

#define BIT(sig) (1ULL << ((sig) - 1))

static sigset_t set_of(int a, int b)
{
	sigset_t s;

	sigemptyset(&s);
	if (a)
		sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	return s;
}

/* The mask as the program reads it back. */
static uint64_t view(void)
{
	sigset_t cur;

	cr_assert_eq(sigprocmask(SIG_SETMASK, NULL, &cur), 0);
	return word(&cur);
}

static void block_trap(void)
{
	sigset_t s = set_of(SIGTRAP, 0);

	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
}

/* --------------------------------------------------------------- view */

Test(view, blocked_sigtrap_reads_back_while_probes_fire)
{
	sigset_t s = set_of(SIGTRAP, 0), old, all;
	uint64_t expect;

	register_probes();
	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	cr_expect(probes_fire());
	cr_expect_eq(view(), BIT(SIGTRAP));
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &old), 0);
	cr_expect_eq(word(&old), BIT(SIGTRAP));
	/* every fault signal and SIGRTMAX too, exactly as set */
	s = set_of(SIGSEGV, SIGRTMAX);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGBUS);
	sigaddset(&s, SIGFPE);
	sigaddset(&s, SIGILL);
	cr_assert_eq(pthread_sigmask(SIG_SETMASK, &s, &old), 0);
	cr_expect_eq(word(&old), BIT(SIGTRAP), "the old mask of SIG_SETMASK");
	cr_expect(probes_fire());
	cr_expect_eq(view(), word(&s));
	/* everything: the kernel and glibc drop SIGKILL, SIGSTOP and glibc's
	 * two internal signals */
	sigfillset(&all);
	cr_assert_eq(sigprocmask(SIG_SETMASK, &all, NULL), 0);
	cr_expect(probes_fire());
	expect = ~0ULL & ~BIT(SIGKILL) & ~BIT(SIGSTOP) & ~BIT(32) & ~BIT(33);
	cr_expect_eq(view(), expect, "view %#lx", (unsigned long)view());
	s = set_of(SIGTRAP, SIGUSR2);
	cr_assert_eq(sigprocmask(SIG_UNBLOCK, &s, NULL), 0);
	cr_expect_eq(view(), expect & ~BIT(SIGTRAP) & ~BIT(SIGUSR2));
	cr_expect(probes_fire());
}

static void never_called(int sig)
{
	abort();
}

Test(view, sa_mask_reads_back_as_given)
{
	struct sigaction sa, back;
	const int sigs[] = { SIGUSR1, SIGSEGV, SIGTRAP, SIGRTMAX };
	size_t i;

	register_probes();
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = never_called;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, SIGTRAP);
		sigaddset(&sa.sa_mask, SIGSEGV);
		sigaddset(&sa.sa_mask, SIGRTMAX);
		sigaddset(&sa.sa_mask, SIGUSR2);
		cr_assert_eq(sigaction(sigs[i], &sa, NULL), 0);
		cr_assert_eq(sigaction(sigs[i], NULL, &back), 0);
		cr_expect_eq(word(&back.sa_mask), word(&sa.sa_mask), "sig %d: %#lx", sigs[i],
			     (unsigned long)word(&back.sa_mask));
		/* SIG_IGN with a mask: the same */
		sa.sa_handler = SIG_IGN;
		cr_assert_eq(sigaction(sigs[i], &sa, NULL), 0);
		cr_assert_eq(sigaction(sigs[i], NULL, &back), 0);
		cr_expect_eq(word(&back.sa_mask), word(&sa.sa_mask), "sig %d SIG_IGN", sigs[i]);
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		cr_assert_eq(sigaction(sigs[i], &sa, NULL), 0);
	}
	cr_expect(probes_fire());
}

static void *thread_view(void *arg)
{
	sigset_t cur;

	(void)arg;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (!probes_fire())
		return (void *)1;
	return (void *)(uintptr_t)word(&cur);
}

Test(view, a_new_thread_starts_with_its_creators_view)
{
	pthread_t t;
	void *r;
	sigset_t s = set_of(SIGTRAP, SIGUSR1);

	register_probes();
	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, thread_view, NULL), 0);
	cr_assert_eq(pthread_join(t, &r), 0);
	cr_expect_eq((uintptr_t)r, BIT(SIGTRAP) | BIT(SIGUSR1), "thread saw %#lx",
		     (unsigned long)(uintptr_t)r);
	/* the creator's view is its own: another thread's does not leak */
	cr_expect_eq(view(), BIT(SIGTRAP) | BIT(SIGUSR1));
}

/* sigsetjmp saves the view, siglongjmp restores it. */
Test(view, siglongjmp_restores_the_view)
{
	sigjmp_buf env;
	sigset_t s = set_of(SIGTRAP, SIGSEGV);
	volatile int jumped = 0;

	register_probes();
	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	if (sigsetjmp(env, 1) == 0) {
		cr_assert_eq(sigprocmask(SIG_UNBLOCK, &s, NULL), 0);
		cr_expect_eq(view(), 0);
		jumped = 1;
		siglongjmp(env, 1);
	}
	cr_expect_eq(jumped, 1);
	cr_expect_eq(view(), BIT(SIGTRAP) | BIT(SIGSEGV));
	cr_expect(probes_fire());
}

/* The BSD and System V functions (glibc implements them with its
 * internal sigprocmask). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
Test(view, bsd_and_system_v_functions)
{
	register_probes();
	cr_expect_eq(sigblock((int)BIT(SIGTRAP) | (int)BIT(SIGUSR1)), 0);
	cr_expect_eq(siggetmask(), (int)BIT(SIGTRAP) | (int)BIT(SIGUSR1));
	cr_expect(probes_fire());
	cr_expect_eq(sigsetmask((int)BIT(SIGSEGV)), (int)BIT(SIGTRAP) | (int)BIT(SIGUSR1));
	cr_expect_eq(view(), BIT(SIGSEGV));
	cr_expect_eq(sighold(SIGTRAP), 0);
	cr_expect_eq(view(), BIT(SIGSEGV) | BIT(SIGTRAP));
	cr_expect_eq(sigrelse(SIGSEGV), 0);
	cr_expect_eq(view(), BIT(SIGTRAP));
	cr_expect(probes_fire());
}
#pragma GCC diagnostic pop

/* ------------------------------------------------------------ pending */

static volatile int trap_calls, trap_code, trap_pid;
static volatile uint64_t trap_view;

static void trap_handler(int sig, siginfo_t *si, void *uc)
{
	trap_calls++;
	trap_code = si->si_code;
	trap_pid = si->si_pid;
	trap_view = view();
}

static void install_trap_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
}

static bool trap_pending(void)
{
	sigset_t p;

	cr_assert_eq(sigpending(&p), 0);
	return sigismember(&p, SIGTRAP) == 1;
}

Test(pending, a_sent_sigtrap_waits_until_unblocked)
{
	sigset_t s = set_of(SIGTRAP, 0);

	register_probes();
	install_trap_handler();
	block_trap();
	cr_expect(!trap_pending());
	raise(SIGTRAP);
	cr_expect_eq(trap_calls, 0, "the handler ran while SIGTRAP was blocked");
	cr_expect(trap_pending());
	/* probes fire with it pending */
	cr_expect(probes_fire());
	kill(getpid(), SIGTRAP); /* merged with the first, as the kernel does */
	cr_expect_eq(trap_calls, 0);
	cr_assert_eq(sigprocmask(SIG_UNBLOCK, &s, NULL), 0);
	cr_expect_eq(trap_calls, 1, "delivered once when unblocked");
	cr_expect_eq(trap_code, SI_TKILL, "the siginfo of the first (raise)");
	cr_expect_eq(trap_pid, getpid());
	cr_expect_eq(trap_view, BIT(SIGTRAP), "blocked while its handler runs");
	cr_expect(!trap_pending());
	cr_expect_eq(view(), 0);
	cr_expect(probes_fire());
}

Test(pending, sigwaitinfo_takes_a_held_sigtrap)
{
	sigset_t s = set_of(SIGTRAP, 0);
	siginfo_t si;

	register_probes();
	install_trap_handler();
	block_trap();
	kill(getpid(), SIGTRAP);
	cr_expect_eq(sigwaitinfo(&s, &si), SIGTRAP);
	cr_expect_eq(si.si_code, SI_USER);
	cr_expect_eq(si.si_pid, getpid());
	cr_expect(!trap_pending());
	raise(SIGTRAP);
	{
		int sig = 0;

		cr_expect_eq(sigwait(&s, &sig), 0);
		cr_expect_eq(sig, SIGTRAP);
	}
	cr_assert_eq(sigprocmask(SIG_UNBLOCK, &s, NULL), 0);
	cr_expect_eq(trap_calls, 0, "taken by the waits, never delivered");
	cr_expect(probes_fire());
}

/* A held signal is not inherited by a forked child (the kernel's fork
 * clears pending signals); the view is. */
Test(pending, fork_child_has_the_view_but_nothing_pending)
{
	int status;
	pid_t pid;

	register_probes();
	install_trap_handler();
	block_trap();
	raise(SIGTRAP);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int bad = 0;

		if (view() != BIT(SIGTRAP))
			bad |= 1;
		if (trap_pending())
			bad |= 2;
		if (!probes_fire())
			bad |= 4;
		_exit(bad);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status), "child died of %d", WTERMSIG(status));
	cr_expect_eq(WEXITSTATUS(status), 0);
	cr_expect(trap_pending(), "still pending in the parent");
}

/* A fault the CPU raises while the program blocks its signal is not held
 * back: it kills, as without the library. */
static void fault_while_blocked(void)
{
	sigset_t s = set_of(SIGSEGV, 0);

	sigprocmask(SIG_BLOCK, &s, NULL);
	ukt_load_int(NULL);
	_exit(0);
}

Test(pending, a_blocked_fault_still_kills)
{
	int status;
	pid_t pid;

	register_probes();
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		fault_while_blocked();
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "status %#x", status);
}

/* ----------------------------------------------------------- handlers */

static volatile uint64_t usr1_uc, usr1_view;
static volatile int usr1_fired;
static volatile int usr1_edit; /* 1: unblock SIGTRAP in uc, 2: block it */

static void usr1_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	usr1_uc = word(&uc->uc_sigmask);
	usr1_view = view();
	usr1_fired = probes_fire();
	if (usr1_edit == 1)
		sigdelset(&uc->uc_sigmask, SIGTRAP);
	else if (usr1_edit == 2)
		sigaddset(&uc->uc_sigmask, SIGTRAP);
}

static void install_usr1(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = usr1_handler;
	sa.sa_flags = SA_SIGINFO;
	sa.sa_mask = set_of(SIGSEGV, SIGUSR2);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

Test(handlers, uc_sigmask_is_the_programs_view)
{
	register_probes();
	install_usr1();
	block_trap();
	raise(SIGUSR1);
	cr_expect_eq(usr1_uc, BIT(SIGTRAP), "uc_sigmask %#lx", (unsigned long)usr1_uc);
	cr_expect_eq(usr1_view, BIT(SIGTRAP) | BIT(SIGUSR1) | BIT(SIGSEGV) | BIT(SIGUSR2),
		     "the mask inside %#lx", (unsigned long)usr1_view);
	cr_expect(usr1_fired, "probes fire in the handler");
	cr_expect_eq(view(), BIT(SIGTRAP), "restored on return");
}

Test(handlers, unblocking_in_uc_sigmask_takes_effect_on_return)
{
	register_probes();
	install_usr1();
	install_trap_handler();
	block_trap();
	raise(SIGTRAP);
	cr_expect_eq(trap_calls, 0);
	usr1_edit = 1;
	raise(SIGUSR1);
	cr_expect_eq(trap_calls, 1, "the held SIGTRAP came when the handler returned");
	cr_expect_eq(view(), 0);
	cr_expect(probes_fire());
}

Test(handlers, blocking_in_uc_sigmask_takes_effect_on_return)
{
	register_probes();
	install_usr1();
	install_trap_handler();
	usr1_edit = 2;
	raise(SIGUSR1);
	cr_expect_eq(view(), BIT(SIGTRAP));
	cr_expect(probes_fire(), "SIGTRAP blocked in the view only");
	raise(SIGTRAP);
	cr_expect_eq(trap_calls, 0);
	cr_expect(trap_pending());
}

/* -------------------------------------------------------------- waits */

/* Each wait gets a temporary mask without SIGTRAP while a SIGTRAP is
 * held: it returns EINTR after the handler ran, with the temporary mask
 * in effect inside it, and the view comes back. */
static void held_trap_setup(void)
{
	sigset_t s = set_of(SIGTRAP, SIGUSR1);

	register_probes();
	install_trap_handler();
	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	raise(SIGTRAP);
	cr_assert_eq(trap_calls, 0);
}

static void held_trap_check(int ret, const char *what)
{
	cr_expect_eq(ret, -1, "%s returned %d", what, ret);
	cr_expect_eq(errno, EINTR, "%s: errno %d", what, errno);
	cr_expect_eq(trap_calls, 1, "%s: handler calls %d", what, trap_calls);
	cr_expect_eq(trap_view, BIT(SIGUSR1) | BIT(SIGTRAP), "%s: mask inside %#lx", what,
		     (unsigned long)trap_view);
	cr_expect_eq(view(), BIT(SIGTRAP) | BIT(SIGUSR1), "%s: view after", what);
	cr_expect(!trap_pending());
	cr_expect(probes_fire());
}

Test(waits, sigsuspend, .timeout = 10)
{
	sigset_t m = set_of(SIGUSR1, 0);

	held_trap_setup();
	held_trap_check(sigsuspend(&m), "sigsuspend");
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
Test(waits, sigpause, .timeout = 10)
{
	held_trap_setup();
	/* the X/Open one (<signal.h> maps sigpause to it): unblock one */
	held_trap_check(sigpause(SIGTRAP), "sigpause");
}
#pragma GCC diagnostic pop

Test(waits, ppoll, .timeout = 10)
{
	sigset_t m = set_of(SIGUSR1, 0);
	struct timespec ts = { 30, 0 };

	held_trap_setup();
	held_trap_check(ppoll(NULL, 0, &ts, &m), "ppoll");
}

Test(waits, pselect, .timeout = 10)
{
	sigset_t m = set_of(SIGUSR1, 0);
	struct timespec ts = { 30, 0 };

	held_trap_setup();
	held_trap_check(pselect(0, NULL, NULL, NULL, &ts, &m), "pselect");
}

Test(waits, epoll_pwait, .timeout = 10)
{
	sigset_t m = set_of(SIGUSR1, 0);
	struct epoll_event ev;
	int fd = epoll_create1(0);

	cr_assert_geq(fd, 0);
	held_trap_setup();
	held_trap_check(epoll_pwait(fd, &ev, 1, 30000, &m), "epoll_pwait");
	close(fd);
}

/* A wait whose mask keeps SIGTRAP blocked does not deliver it. */
Test(waits, a_mask_that_keeps_it_blocked, .timeout = 10)
{
	sigset_t m = set_of(SIGUSR1, SIGTRAP);
	struct timespec ts = { 0, 1000000 };

	held_trap_setup();
	cr_expect_eq(ppoll(NULL, 0, &ts, &m), 0);
	cr_expect_eq(trap_calls, 0);
	cr_expect(trap_pending());
}

/* --------------------------------------------------------------- exec */

/* The mask a new image starts with: SigBlk of a grep of its own status. */
static uint64_t child_sigblk(int how)
{
	char *const argv[] = { "grep", "SigBlk", "/proc/self/status", NULL };
	char buf[256] = "";
	uint64_t m = ~0ULL;
	int fd[2], status;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(fd), 0);
	fflush(NULL);
	if (how >= 3) {
		posix_spawn_file_actions_t fa;

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
		cr_assert_eq(how == 3 ? posix_spawn(&pid, "/bin/grep", &fa, NULL, argv, environ)
				      : posix_spawnp(&pid, "grep", &fa, NULL, argv, environ),
			     0);
		posix_spawn_file_actions_destroy(&fa);
	} else {
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			dup2(fd[1], 1);
			if (how == 0)
				execve("/bin/grep", argv, environ);
			else if (how == 1)
				execvp("grep", argv);
			else
				execlp("grep", "grep", "SigBlk", "/proc/self/status", (char *)NULL);
			_exit(127);
		}
	}
	close(fd[1]);
	n = read(fd[0], buf, sizeof(buf) - 1);
	close(fd[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "how %d: %s", how, buf);
	sscanf(buf, "SigBlk: %lx", &m);
	return m;
}

Test(exec, the_new_image_gets_the_programs_mask)
{
	sigset_t s = set_of(SIGTRAP, SIGUSR2);
	int how;

	register_probes();
	sigaddset(&s, SIGSEGV);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	for (how = 0; how < 5; how++)
		cr_expect_eq(child_sigblk(how), word(&s), "how %d: %#lx", how,
			     (unsigned long)child_sigblk(how));
	/* and the program's process is unchanged */
	cr_expect_eq(view(), word(&s));
	cr_expect(probes_fire());
}

/* A failed exec leaves the mask as it was. */
Test(exec, a_failed_exec_changes_nothing)
{
	char *const argv[] = { "nonexistent", NULL };

	register_probes();
	block_trap();
	cr_expect_eq(execve("/nonexistent/x", argv, environ), -1);
	cr_expect_eq(errno, ENOENT);
	cr_expect_eq(execvp("ukp-nonexistent-program", argv), -1);
	cr_expect_eq(errno, ENOENT);
	cr_expect_eq(view(), BIT(SIGTRAP));
	cr_expect(probes_fire(), "SIGTRAP is deliverable for real again");
}
