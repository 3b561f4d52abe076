/* SPDX-License-Identifier: MIT */
/*
 * The program's own signal handling next to the library's.
 *
 *  prog_sigtrap: the program's SIGTRAP handler gets the program's traps
 *                (int3, int $3, raise, sigqueue, single-step) with the
 *                right siginfo, while probes keep working.
 *  masks:        SIGTRAP blocked by the program (sigprocmask,
 *                pthread_sigmask, sa_mask) does not stop probes.
 *  actions:      sigaction()/signal() read back what the kernel would
 *                read back; one-shot handlers; the mask a chained
 *                handler runs with.
 *  in_handlers:  probes inside the program's signal handlers, and probes
 *                hit inside probe handlers (reentrancy, nmissed).
 *  async:        asynchronous signals while a thread hits probes.
 *
 * Handlers only record into globals; the assertions come afterwards.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ukprobes.h"
#include "ukp_test.h"

/*
 *  ukt_int3():      int3, then ukt_int3_after.
 *  ukt_int_imm3():  int $3 (cd 03), then ukt_int_imm3_after.
 *  ukt_tf_step():   sets TF with popf; the single-step trap comes after
 *                   the nop at ukt_tf_a, at ukt_tf_b.
 *  ukt_emu(x):      x * 3 + 1 behind an emulated jmp (ukt_emu_jmp).
 *  ukt_sys_read(fd, buf, n): the read system call, at ukt_syscall_insn;
 *                   returns the raw result (-errno on failure).
 */
__asm__(
	".text\n"
	".globl ukt_int3\n"
	".type ukt_int3,@function\n"
	"ukt_int3:\n"
	"	int3\n"
	".globl ukt_int3_after\n"
	"ukt_int3_after:\n"
	"	ret\n"
	".size ukt_int3, .-ukt_int3\n"

	".globl ukt_int_imm3\n"
	".type ukt_int_imm3,@function\n"
	"ukt_int_imm3:\n"
	"	int $3\n"
	".globl ukt_int_imm3_after\n"
	"ukt_int_imm3_after:\n"
	"	ret\n"
	".size ukt_int_imm3, .-ukt_int_imm3\n"

	".globl ukt_tf_step\n"
	".type ukt_tf_step,@function\n"
	"ukt_tf_step:\n"
	"	pushf\n"
	"	orq $0x100,(%rsp)\n"
	"	popf\n"
	".globl ukt_tf_a\n"
	"ukt_tf_a:\n"
	"	nop\n"
	".globl ukt_tf_b\n"
	"ukt_tf_b:\n"
	"	nop\n"
	"	ret\n"
	".size ukt_tf_step, .-ukt_tf_step\n"

	".globl ukt_emu\n"
	".type ukt_emu,@function\n"
	"ukt_emu:\n"
	"	nop\n"
	".globl ukt_emu_jmp\n"
	"ukt_emu_jmp:\n"
	"	jmp 1f\n"
	"	ud2\n"
	"1:	lea 1(%rdi,%rdi,2),%eax\n"
	"	ret\n"
	".size ukt_emu, .-ukt_emu\n"

	".globl ukt_sys_read\n"
	".type ukt_sys_read,@function\n"
	"ukt_sys_read:\n"
	"	xor %eax,%eax\n"
	".globl ukt_syscall_insn\n"
	"ukt_syscall_insn:\n"
	"	syscall\n"
	"	ret\n"
	".size ukt_sys_read, .-ukt_sys_read\n");

void ukt_int3(void);
void ukt_int_imm3(void);
void ukt_tf_step(void);
int ukt_emu(int x);
long ukt_sys_read(int fd, void *buf, unsigned long n);
extern char ukt_int3_after[], ukt_int_imm3_after[], ukt_tf_b[], ukt_emu_jmp[],
	ukt_syscall_insn[];

UKP_TARGET int ukt_target(int x)
{
	return x * 3 + 1;
}

UKP_TARGET int ukt_target2(int x)
{
	return x * 5 + 2;
}

static volatile int sink;

/* A probe on ukt_target's entry (out of line) that counts. */
static _Atomic unsigned long pre_hits, post_hits;

static int pre_count(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&pre_hits, 1);
	return 0;
}

static void post_count(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&post_hits, 1);
}

static struct kprobe target_kp = {
	.symbol_name = "ukt_target",
	.pre_handler = pre_count,
	.post_handler = post_count,
};

/* A second probe, on an emulated jmp. */
static _Atomic unsigned long emu_pre, emu_post;

static int emu_pre_count(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&emu_pre, 1);
	return 0;
}

static void emu_post_count(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&emu_post, 1);
}

static struct kprobe emu_kp = {
	.addr = (kprobe_opcode_t *)ukt_emu_jmp,
	.pre_handler = emu_pre_count,
	.post_handler = emu_post_count,
};

static void reset_counts(void)
{
	pre_hits = post_hits = emu_pre = emu_post = 0;
}

/* The probes fire and the program computes the right values. */
static void expect_probes_work(void)
{
	unsigned long p0 = pre_hits, q0 = post_hits, e0 = emu_pre, f0 = emu_post;

	cr_expect_eq(ukt_target(4), 13);
	cr_expect_eq(ukt_emu(5), 16);
	cr_expect_eq(pre_hits - p0, 1);
	cr_expect_eq(post_hits - q0, 1);
	cr_expect_eq(emu_pre - e0, 1);
	cr_expect_eq(emu_post - f0, 1);
}

static void register_both(void)
{
	cr_assert_eq(register_kprobe(&target_kp), 0);
	cr_assert_eq(register_kprobe(&emu_kp), 0);
}

static void unregister_both(void)
{
	unregister_kprobe(&emu_kp);
	unregister_kprobe(&target_kp);
}

static int sigset_word_has(const sigset_t *s, int sig)
{
	return (int)((*(const uint64_t *)s >> (sig - 1)) & 1);
}

/* Run fn in a child without core dumps and return its wait status. */
static int run_child(void (*fn)(void))
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };

		setrlimit(RLIMIT_CORE, &rl);
		fn();
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void expect_death(int status, int sig)
{
	cr_expect(WIFSIGNALED(status), "the child did not die of a signal (status %#x, exit %d)",
		  status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (WIFSIGNALED(status))
		cr_expect_eq(WTERMSIG(status), sig, "died of signal %d", WTERMSIG(status));
}

/* ------------------------------------------------- prog_sigtrap */

static volatile int trap_calls, trap_signo, trap_code, trap_pid, trap_value;
static volatile uintptr_t trap_ip;
static volatile int trap_probe_result;
static volatile bool trap_clear_tf, trap_call_probed;

static void prog_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	trap_calls++;
	trap_signo = si->si_signo;
	trap_code = si->si_code;
	trap_pid = si->si_pid;
	trap_value = si->si_value.sival_int;
	trap_ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (trap_clear_tf)
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
	if (trap_call_probed)
		trap_probe_result = ukt_target(10);
}

static void install_prog_trap(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
}

static void reset_trap(void)
{
	trap_calls = trap_signo = trap_code = trap_pid = trap_value = 0;
	trap_ip = 0;
	trap_probe_result = 0;
}

static void expect_program_int3(void)
{
	reset_trap();
	ukt_int3();
	cr_expect_eq(trap_calls, 1);
	cr_expect_eq(trap_signo, SIGTRAP);
	cr_expect_eq(trap_code, SI_KERNEL, "si_code %d", trap_code);
	cr_expect_eq(trap_ip, (uintptr_t)ukt_int3_after, "ip %#lx, expected %p",
		     (unsigned long)trap_ip, (void *)ukt_int3_after);
}

Test(prog_sigtrap, int3_handler_installed_before_library)
{
	install_prog_trap();
	register_both();
	reset_counts();
	expect_program_int3();
	expect_probes_work();
	expect_program_int3();
	expect_probes_work();
	unregister_both();
}

Test(prog_sigtrap, int3_handler_installed_after_library)
{
	register_both();
	install_prog_trap();
	reset_counts();
	expect_probes_work();
	expect_program_int3();
	expect_probes_work();
	unregister_both();
}

Test(prog_sigtrap, int_imm3)
{
	register_both();
	install_prog_trap();
	reset_trap();
	ukt_int_imm3();
	cr_expect_eq(trap_calls, 1);
	cr_expect_eq(trap_code, SI_KERNEL);
	cr_expect_eq(trap_ip, (uintptr_t)ukt_int_imm3_after);
	expect_probes_work();
	unregister_both();
}

/* A SIGTRAP sent with raise() is the program's: its handler gets it (with
 * SI_TKILL and the sender's pid) and the program goes on after raise(). */
Test(prog_sigtrap, raise_sigtrap)
{
	volatile int after = 0;

	register_both();
	install_prog_trap();
	reset_trap();
	cr_expect_eq(raise(SIGTRAP), 0);
	after = 1;
	cr_expect_eq(after, 1);
	cr_expect_eq(trap_calls, 1);
	cr_expect_eq(trap_signo, SIGTRAP);
	cr_expect_eq(trap_code, SI_TKILL, "si_code %d", trap_code);
	cr_expect_eq(trap_pid, getpid());
	expect_probes_work();
	unregister_both();
}

Test(prog_sigtrap, sigqueue_sigtrap)
{
	union sigval v = { .sival_int = 4242 };

	register_both();
	install_prog_trap();
	reset_trap();
	cr_expect_eq(sigqueue(getpid(), SIGTRAP, v), 0);
	cr_expect_eq(trap_calls, 1);
	cr_expect_eq(trap_code, SI_QUEUE, "si_code %d", trap_code);
	cr_expect_eq(trap_value, 4242);
	expect_probes_work();
	unregister_both();
}

/* A single-step trap (TF) is the program's: TRAP_TRACE, ip after the
 * stepped instruction. */
Test(prog_sigtrap, single_step_trap, .timeout = 10)
{
	register_both();
	install_prog_trap();
	reset_trap();
	trap_clear_tf = true;
	ukt_tf_step();
	trap_clear_tf = false;
	cr_expect_eq(trap_calls, 1);
	cr_expect_eq(trap_code, TRAP_TRACE, "si_code %d", trap_code);
	cr_expect_eq(trap_ip, (uintptr_t)ukt_tf_b, "ip %#lx, expected %p",
		     (unsigned long)trap_ip, (void *)ukt_tf_b);
	expect_probes_work();
	unregister_both();
}

/* A probe inside the program's SIGTRAP handler fires. */
Test(prog_sigtrap, probe_inside_program_sigtrap_handler)
{
	register_both();
	install_prog_trap();
	reset_counts();
	reset_trap();
	trap_call_probed = true;
	ukt_int3();
	cr_expect_eq(trap_calls, 1);
	cr_expect_eq(trap_probe_result, 31);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(target_kp.nmissed, 0);
	reset_trap();
	raise(SIGTRAP);
	cr_expect_eq(trap_probe_result, 31);
	cr_expect_eq(pre_hits, 2);
	cr_expect_eq(post_hits, 2);
	trap_call_probed = false;
	unregister_both();
}

static void child_int3_default(void)
{
	if (register_kprobe(&target_kp))
		_exit(10);
	ukt_int3();
	_exit(11);
}

static void child_raise_default(void)
{
	if (register_kprobe(&target_kp))
		_exit(10);
	raise(SIGTRAP);
	_exit(11);
}

static void child_int3_ignored(void)
{
	if (register_kprobe(&target_kp))
		_exit(10);
	signal(SIGTRAP, SIG_IGN);
	ukt_int3();
	_exit(11);
}

static void child_raise_ignored(void)
{
	if (register_kprobe(&target_kp))
		_exit(10);
	signal(SIGTRAP, SIG_IGN);
	raise(SIGTRAP);
	_exit(ukt_target(1) == 4 ? 0 : 12);
}

/* The default actions, as without the library: int3 and raise(SIGTRAP)
 * kill; an ignored raise(SIGTRAP) is ignored; an ignored int3 kills. */
Test(prog_sigtrap, default_actions)
{
	int st;

	expect_death(run_child(child_int3_default), SIGTRAP);
	expect_death(run_child(child_raise_default), SIGTRAP);
	expect_death(run_child(child_int3_ignored), SIGTRAP);
	st = run_child(child_raise_ignored);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* --------------------------------------------------------- masks */

static sigset_t set_of(int sig)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, sig);
	return s;
}

Test(masks, sigprocmask_blocks_sigtrap)
{
	sigset_t s = set_of(SIGTRAP);

	register_both();
	reset_counts();
	cr_assert_eq(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	expect_probes_work();
	cr_assert_eq(sigprocmask(SIG_SETMASK, &s, NULL), 0);
	expect_probes_work();
	unregister_both();
}

Test(masks, pthread_sigmask_blocks_everything)
{
	sigset_t all;

	register_both();
	sigfillset(&all);
	cr_assert_eq(pthread_sigmask(SIG_SETMASK, &all, NULL), 0);
	reset_counts();
	expect_probes_work();
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &all, NULL), 0);
	expect_probes_work();
	unregister_both();
}

/* Blocked before the library started, and inherited by a new thread. */
static void *thread_hits(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(ukt_target(4) == 13 && ukt_emu(5) == 16);
}

Test(masks, blocked_before_start_and_in_new_thread)
{
	sigset_t all;
	pthread_t t;
	void *ok;

	sigfillset(&all);
	cr_assert_eq(sigprocmask(SIG_SETMASK, &all, NULL), 0);
	register_both();
	reset_counts();
	expect_probes_work();
	cr_assert_eq(pthread_create(&t, NULL, thread_hits, NULL), 0);
	cr_assert_eq(pthread_join(t, &ok), 0);
	cr_expect_eq(ok, (void *)1);
	cr_expect_eq(pre_hits, 2);
	cr_expect_eq(emu_pre, 2);
	unregister_both();
}

/* The program's handler blocks every signal while it runs (sa_mask from
 * sigfillset) and calls probed code. */
static volatile int usr1_calls, usr1_result;

static void usr1_calls_probed(int sig)
{
	usr1_calls++;
	usr1_result = ukt_target(7) + ukt_emu(7);
}

static void install_usr1(void (*h)(int), bool fill, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	if (fill)
		sigfillset(&sa.sa_mask);
	else
		sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

Test(masks, handler_sa_mask_fillset)
{
	register_both();
	install_usr1(usr1_calls_probed, true, 0);
	reset_counts();
	usr1_calls = 0;
	cr_assert_eq(raise(SIGUSR1), 0);
	cr_expect_eq(usr1_calls, 1);
	cr_expect_eq(usr1_result, 22 + 22);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(emu_pre, 1);
	cr_expect_eq(post_hits, 1);
	unregister_both();
}

Test(masks, handler_sa_mask_fillset_installed_before_start)
{
	install_usr1(usr1_calls_probed, true, 0);
	register_both();
	reset_counts();
	usr1_calls = 0;
	cr_assert_eq(raise(SIGUSR1), 0);
	cr_expect_eq(usr1_calls, 1);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(emu_pre, 1);
	unregister_both();
}

/* A program SIGSEGV handler with a full sa_mask (chained by the library)
 * calls probed code. */
static sigjmp_buf recover;
static int *volatile null_ptr;
static volatile int segv_calls, segv_result;

static void segv_calls_probed(int sig)
{
	segv_calls++;
	segv_result = ukt_target(2);
	siglongjmp(recover, 1);
}

Test(masks, chained_segv_handler_with_full_mask)
{
	struct sigaction sa;

	register_both();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = segv_calls_probed;
	sigfillset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	reset_counts();
	segv_calls = 0;
	if (sigsetjmp(recover, 1) == 0)
		sink = ukt_load_int(null_ptr);
	cr_expect_eq(segv_calls, 1);
	cr_expect_eq(segv_result, 7);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	expect_probes_work();
	unregister_both();
}

/* ------------------------------------------------------- actions */

static void h_a(int sig) { (void)sig; }
static void h_b(int sig) { (void)sig; }
static void h_info(int sig, siginfo_t *si, void *uc) { (void)sig; (void)si; (void)uc; }

/*
 * What sigaction() reads back for an owned signal is what it reads back
 * for SIGUSR1 (which the library never touches) given the same action:
 * handler, flags, restorer and the mask (the kernel keeps the first 64
 * signals; the signal's own bit is compared with SIGUSR1's, except for
 * SIGTRAP, which is dropped from every mask).
 */
static void expect_same_readback(int owned, const char *what)
{
	struct sigaction a, b;
	uint64_t ma, mb, own = 1ULL << (owned - 1), usr1 = 1ULL << (SIGUSR1 - 1);

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	cr_assert_eq(sigaction(owned, NULL, &a), 0);
	cr_assert_eq(sigaction(SIGUSR1, NULL, &b), 0);
	cr_expect_eq((void *)a.sa_handler, (void *)b.sa_handler, "%s: sig %d handler", what, owned);
	cr_expect_eq(a.sa_flags, b.sa_flags, "%s: sig %d flags %#x, kernel says %#x", what, owned,
		     a.sa_flags, b.sa_flags);
	cr_expect_eq((void *)a.sa_restorer, (void *)b.sa_restorer, "%s: sig %d restorer", what,
		     owned);
	ma = *(uint64_t *)&a.sa_mask;
	mb = *(uint64_t *)&b.sa_mask;
	cr_expect_eq(ma & ~(own | usr1), mb & ~(own | usr1),
		     "%s: sig %d mask %#lx, kernel says %#lx", what, owned, (unsigned long)ma,
		     (unsigned long)mb);
	if (owned != SIGTRAP)
		cr_expect_eq(!!(ma & own), !!(mb & usr1), "%s: sig %d own bit in mask", what, owned);
}

static void set_both(int owned, const struct sigaction *sa)
{
	cr_assert_eq(sigaction(owned, sa, NULL), 0);
	cr_assert_eq(sigaction(SIGUSR1, sa, NULL), 0);
}

static const int owned_sigs[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL };

static void readback_cases(void)
{
	struct sigaction sa;
	size_t i;

	for (i = 0; i < sizeof(owned_sigs) / sizeof(owned_sigs[0]); i++) {
		int sig = owned_sigs[i];

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = h_a;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, SIGINT);
		sigaddset(&sa.sa_mask, SIGUSR2);
		set_both(sig, &sa);
		expect_same_readback(sig, "plain");

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = h_info;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
		sigfillset(&sa.sa_mask);
		set_both(sig, &sa);
		expect_same_readback(sig, "siginfo, full mask");

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_IGN;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, SIGTRAP);
		set_both(sig, &sa);
		expect_same_readback(sig, "ignored");

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = h_b;
		sa.sa_flags = SA_RESETHAND | 0x400 /* SA_UNSUPPORTED */;
		sigemptyset(&sa.sa_mask);
		set_both(sig, &sa);
		expect_same_readback(sig, "one-shot, unknown flag");

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		set_both(sig, &sa);
		expect_same_readback(sig, "default");
	}
}

Test(actions, sigaction_readback_after_start)
{
	cr_assert_eq(register_kprobe(&target_kp), 0);
	readback_cases();
	unregister_kprobe(&target_kp);
}

Test(actions, sigaction_readback_before_start)
{
	readback_cases();
}

/* Set before the library starts, read back after. */
Test(actions, sigaction_set_before_read_after_start)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h_info;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGHUP);
	set_both(SIGFPE, &sa);
	cr_assert_eq(register_kprobe(&target_kp), 0);
	expect_same_readback(SIGFPE, "set before start");
	unregister_kprobe(&target_kp);
}

static void signal_chain_checks(void)
{
	size_t i;

	for (i = 0; i < sizeof(owned_sigs) / sizeof(owned_sigs[0]); i++) {
		int sig = owned_sigs[i];
		struct sigaction cur;

		cr_expect_eq((void *)signal(sig, h_a), (void *)SIG_DFL, "sig %d", sig);
		cr_expect_eq((void *)signal(sig, h_b), (void *)h_a, "sig %d", sig);
		cr_expect_eq((void *)signal(sig, SIG_IGN), (void *)h_b, "sig %d", sig);
		cr_expect_eq((void *)signal(sig, SIG_DFL), (void *)SIG_IGN, "sig %d", sig);
		cr_expect_eq((void *)signal(sig, h_a), (void *)SIG_DFL, "sig %d", sig);
		cr_assert_eq(sigaction(sig, NULL, &cur), 0);
		cr_expect_eq((void *)cur.sa_handler, (void *)h_a, "sig %d", sig);
		cr_expect(cur.sa_flags & SA_RESTART, "signal() has BSD semantics");
		cr_expect(!(cur.sa_flags & SA_RESETHAND));
		signal(SIGUSR1, h_a);
		expect_same_readback(sig, "signal()");
	}
}

Test(actions, signal_returns_previous_after_start)
{
	cr_assert_eq(register_kprobe(&target_kp), 0);
	signal_chain_checks();
	unregister_kprobe(&target_kp);
}

Test(actions, signal_returns_previous_before_start)
{
	signal_chain_checks();
}

/* The mask the program's handler runs with, and its one-shot reset,
 * match the kernel's: the same action on SIGUSR1 and on an owned signal,
 * both raised. */
static volatile uint64_t seen_mask;
static volatile int seen_own_blocked, oneshot_calls;

static void record_mask(int sig)
{
	sigset_t cur;

	oneshot_calls++;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	seen_own_blocked = sigismember(&cur, sig);
	sigdelset(&cur, sig);
	seen_mask = *(uint64_t *)&cur;
}

static void handler_mask_case(int sig, int flags)
{
	struct sigaction sa;
	uint64_t usr1_mask;
	int usr1_own;
	sigset_t base = set_of(SIGHUP);

	cr_assert_eq(sigprocmask(SIG_SETMASK, &base, NULL), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = record_mask;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaddset(&sa.sa_mask, SIGTRAP);
	set_both(sig, &sa);

	oneshot_calls = 0;
	raise(SIGUSR1);
	cr_assert_eq(oneshot_calls, 1);
	usr1_mask = seen_mask;
	usr1_own = seen_own_blocked;
	raise(sig);
	cr_assert_eq(oneshot_calls, 2);
	/* The library's signals too (SIGTRAP, SIGSEGV) are blocked in the
	 * program's view as the kernel would block them, although they stay
	 * deliverable for the library (a probe there still fires). */
	cr_expect_eq(seen_own_blocked, usr1_own || sig == SIGTRAP /* in sa_mask */,
		     "sig %d flags %#x: own signal blocked %d vs %d", sig, flags,
		     seen_own_blocked, usr1_own);
	cr_expect_eq(seen_mask & ~(1ULL << (SIGUSR1 - 1)) & ~(1ULL << (sig - 1)),
		     usr1_mask & ~(1ULL << (SIGUSR1 - 1)) & ~(1ULL << (sig - 1)),
		     "sig %d flags %#x: handler mask %#lx vs %#lx", sig, flags,
		     (unsigned long)seen_mask, (unsigned long)usr1_mask);
	cr_expect(sigset_word_has((const sigset_t *)&seen_mask, SIGTRAP) || sig == SIGTRAP,
		  "sa_mask's SIGTRAP is blocked in the handler's view");
	expect_same_readback(sig, "after delivery");
}

Test(actions, handler_mask_and_oneshot_match_kernel)
{
	static const int flag_sets[] = { 0, SA_NODEFER, SA_RESETHAND, SA_RESETHAND | SA_NODEFER };
	size_t i, j;

	cr_assert_eq(register_kprobe(&target_kp), 0);
	for (i = 0; i < sizeof(owned_sigs) / sizeof(owned_sigs[0]); i++)
		for (j = 0; j < sizeof(flag_sets) / sizeof(flag_sets[0]); j++)
			handler_mask_case(owned_sigs[i], flag_sets[j]);
	unregister_kprobe(&target_kp);
}

/* SA_RESETHAND on a SIGSEGV handler: the first fault runs it, the second
 * kills. */
static volatile int *shared;

static void oneshot_segv(int sig)
{
	shared[0]++;
	siglongjmp(recover, 1);
}

static void child_oneshot(void)
{
	struct sigaction sa;

	if (register_kprobe(&target_kp))
		_exit(10);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = oneshot_segv;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	if (sigsetjmp(recover, 1) == 0)
		sink = ukt_load_int(null_ptr);
	memset(&sa, 0, sizeof(sa));
	sigaction(SIGSEGV, NULL, &sa);
	shared[1] = sa.sa_handler == SIG_DFL;
	if (ukt_target(1) != 4)
		_exit(13);
	if (sigsetjmp(recover, 1) == 0)
		sink = ukt_load_int(null_ptr);
	_exit(11); /* the second fault was handled */
}

Test(actions, sa_resethand_one_shot_segv)
{
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(shared, MAP_FAILED);
	expect_death(run_child(child_oneshot), SIGSEGV);
	cr_expect_eq(shared[0], 1, "the one-shot handler ran %d times", shared[0]);
	cr_expect_eq(shared[1], 1, "the handler was not reset to SIG_DFL");
}

/* --------------------------------------------------- in_handlers */

Test(in_handlers, probe_inside_sigusr1_handler)
{
	register_both();
	install_usr1(usr1_calls_probed, false, 0);
	reset_counts();
	usr1_calls = 0;
	cr_assert_eq(raise(SIGUSR1), 0);
	cr_expect_eq(usr1_calls, 1);
	cr_expect_eq(usr1_result, 44);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(emu_pre, 1);
	cr_expect_eq(emu_post, 1);
	cr_expect_eq(target_kp.nmissed, 0);
	cr_expect_eq(emu_kp.nmissed, 0);
	unregister_both();
}

/* A pre_handler (and a post_handler) that call probed functions: the
 * inner hits are counted as missed, run no handler, do not deadlock, and
 * the inner functions compute the right values. */
static volatile int outer_pre, outer_post, inner_values_ok;
static volatile int recurse_self;

static int outer_pre_calls(struct kprobe *p, struct pt_regs *regs)
{
	outer_pre++;
	if (ukt_target(3) == 10 && ukt_emu(3) == 10)
		inner_values_ok++;
	if (recurse_self && ukt_target2(1) == 7)
		inner_values_ok++;
	return 0;
}

static void outer_post_calls(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	outer_post++;
	if (ukt_target(3) == 10 && ukt_emu(3) == 10)
		inner_values_ok++;
}

Test(in_handlers, reentrant_hits_are_missed, .timeout = 20)
{
	struct kprobe outer = {
		.symbol_name = "ukt_target2",
		.pre_handler = outer_pre_calls,
		.post_handler = outer_post_calls,
	};

	register_both();
	cr_assert_eq(register_kprobe(&outer), 0);
	reset_counts();
	outer_pre = outer_post = inner_values_ok = 0;
	recurse_self = 1;
	cr_expect_eq(ukt_target2(2), 12);
	cr_expect_eq(outer_pre, 1);
	cr_expect_eq(outer_post, 1);
	cr_expect_eq(inner_values_ok, 3);
	/* no handler ran for the inner hits */
	cr_expect_eq(pre_hits, 0);
	cr_expect_eq(post_hits, 0);
	cr_expect_eq(emu_pre, 0);
	cr_expect_eq(emu_post, 0);
	/* one missed hit each from the pre and the post handler; the outer
	 * probe missed its own recursive hit */
	cr_expect_eq(target_kp.nmissed, 2);
	cr_expect_eq(emu_kp.nmissed, 2);
	cr_expect_eq(outer.nmissed, 1);
	cr_expect_null(kprobe_running());
	/* and outside handlers everything is normal again */
	expect_probes_work();
	cr_expect_eq(target_kp.nmissed, 2);
	unregister_kprobe(&outer);
	unregister_both();
}

/* ---------------------------------------------------------- async */

static _Atomic bool stop;
static _Atomic unsigned long async_calls, loop_iters, value_errors;
static _Atomic int worker_ready;

#define MAX_IPS 4096
static uintptr_t async_ips[MAX_IPS];
static _Atomic unsigned int n_ips;

static void async_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	unsigned int i = atomic_fetch_add(&n_ips, 1);

	if (i < MAX_IPS)
		async_ips[i] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (ukt_target(6) != 19)
		atomic_fetch_add(&value_errors, 1);
	atomic_fetch_add(&async_calls, 1);
}

static void install_async(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = async_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

static void *hit_loop(void *arg)
{
	unsigned long i;

	(void)arg;
	atomic_store(&worker_ready, 1);
	for (i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		int x = (int)(i & 0xffff);

		if (ukt_target(x) != x * 3 + 1 || ukt_emu(x) != x * 3 + 1)
			atomic_fetch_add(&value_errors, 1);
	}
	atomic_store(&loop_iters, i);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reset_async(void)
{
	stop = false;
	async_calls = loop_iters = value_errors = 0;
	worker_ready = 0;
	n_ips = 0;
	reset_counts();
}

/* Exact counts: every iteration hit both probes once, every handler run
 * hit ukt_target's once, nothing was missed. */
static void expect_async_counts(void)
{
	unsigned long iters = loop_iters, calls = async_calls;

	cr_expect_eq(value_errors, 0);
	cr_expect_gt(iters, 0);
	cr_expect_gt(calls, 0, "no signal arrived");
	cr_expect_eq(pre_hits, iters + calls, "pre %lu, iterations %lu + handler runs %lu",
		     (unsigned long)pre_hits, iters, calls);
	cr_expect_eq(post_hits, iters + calls);
	cr_expect_eq(emu_pre, iters);
	cr_expect_eq(emu_post, iters);
	cr_expect_eq(target_kp.nmissed, 0);
	cr_expect_eq(emu_kp.nmissed, 0);
}

/* Probes copied out of line run with asynchronous signals held back: no
 * program handler ever sees an ip in an out-of-line slot (anonymous
 * memory, outside every loaded object). */
static void expect_no_slot_ips(void)
{
	unsigned int i, n = n_ips < MAX_IPS ? n_ips : MAX_IPS;

	for (i = 0; i < n; i++) {
		Dl_info info;

		if (!dladdr((void *)async_ips[i], &info)) {
			cr_expect_fail("a handler interrupted ip %#lx, outside every object",
				       (unsigned long)async_ips[i]);
			break;
		}
	}
}

Test(async, pthread_kill_storm, .timeout = 30)
{
	pthread_t t;
	double end;
	unsigned long sent = 0;

	register_both();
	install_async(SIGUSR1);
	reset_async();
	cr_assert_eq(pthread_create(&t, NULL, hit_loop, NULL), 0);
	while (!atomic_load(&worker_ready))
		sched_yield();
	end = now() + 1.0;
	while (now() < end) {
		cr_assert_eq(pthread_kill(t, SIGUSR1), 0);
		sent++;
		if (!(sent & 63))
			sched_yield();
	}
	atomic_store(&stop, true);
	cr_assert_eq(pthread_join(t, NULL), 0);
	expect_async_counts();
	expect_no_slot_ips();
	unregister_both();
}

Test(async, timer_storm, .timeout = 30)
{
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	sigset_t alrm = set_of(SIGALRM);
	pthread_t t;

	register_both();
	install_async(SIGALRM);
	reset_async();
	cr_assert_eq(pthread_create(&t, NULL, hit_loop, NULL), 0);
	/* the timer's signal goes to the worker */
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &alrm, NULL), 0);
	while (!atomic_load(&worker_ready))
		sched_yield();
	cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	usleep(1000000);
	cr_assert_eq(setitimer(ITIMER_REAL, &off, NULL), 0);
	atomic_store(&stop, true);
	cr_assert_eq(pthread_join(t, NULL), 0);
	expect_async_counts();
	expect_no_slot_ips();
	unregister_both();
}

/*
 * A system call copied out of line stays interruptible. A signal that
 * interrupts it and whose handler hits a probe does not lose the
 * system call's own post_handler when the handler returns.
 */
static _Atomic unsigned long sys_pre, sys_post;
static _Atomic long read_ret;
static int pipefd[2];
static char read_buf[4];

static int sys_pre_count(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&sys_pre, 1);
	return 0;
}

static void sys_post_count(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&sys_post, 1);
}

static struct kprobe sys_kp = {
	.addr = (kprobe_opcode_t *)ukt_syscall_insn,
	.pre_handler = sys_pre_count,
	.post_handler = sys_post_count,
};

static volatile bool usr1_jumps;
static sigjmp_buf reader_jb;

static void usr1_in_syscall(int sig)
{
	atomic_fetch_add(&async_calls, 1);
	if (ukt_target(6) != 19)
		atomic_fetch_add(&value_errors, 1);
	if (usr1_jumps)
		siglongjmp(reader_jb, 1);
}

static void *reader(void *arg)
{
	(void)arg;
	if (sigsetjmp(reader_jb, 1)) {
		atomic_store(&read_ret, -1000); /* jumped out of the system call */
		return NULL;
	}
	atomic_store(&read_ret, ukt_sys_read(pipefd[0], read_buf, 1));
	return NULL;
}

static void interrupted_syscall_case(int flags, bool jumps)
{
	pthread_t t;
	double end;
	bool delivered;

	cr_assert_eq(pipe(pipefd), 0);
	register_both();
	cr_assert_eq(register_kprobe(&sys_kp), 0);
	install_usr1(usr1_in_syscall, false, flags);
	reset_async();
	sys_pre = sys_post = 0;
	read_ret = 1234;
	usr1_jumps = jumps;
	cr_assert_eq(pthread_create(&t, NULL, reader, NULL), 0);
	while (atomic_load(&sys_pre) == 0)
		sched_yield();
	usleep(100000); /* blocked in read() by now */
	cr_assert_eq(pthread_kill(t, SIGUSR1), 0);
	end = now() + 2.0;
	while (atomic_load(&async_calls) == 0 && now() < end)
		usleep(1000);
	delivered = atomic_load(&async_calls) != 0;
	usleep(50000);
	cr_assert_eq(write(pipefd[1], "x", 1), 1);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_expect(delivered, "SIGUSR1 was held back while the probed system call blocked");
	if (!delivered) {
		unregister_kprobe(&sys_kp);
		unregister_both();
		return;
	}
	cr_expect_eq(value_errors, 0);
	cr_expect_eq(pre_hits, 1, "the probe in the signal handler fired");
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(sys_pre, 1);
	if (jumps) {
		cr_expect_eq(read_ret, -1000);
		cr_expect_eq(sys_post, 0);
		/* the abandoned step does not disturb the next ones */
		cr_expect_eq(ukt_sys_read(pipefd[0], read_buf, 1), 1);
		cr_expect_eq(read_buf[0], 'x');
		cr_expect_eq(sys_pre, 2);
		cr_expect_eq(sys_post, 1);
		expect_probes_work();
	} else {
		if (flags & SA_RESTART) {
			cr_expect_eq(read_ret, 1, "read returned %ld", (long)read_ret);
			cr_expect_eq(read_buf[0], 'x');
		} else {
			cr_expect_eq(read_ret, -EINTR, "read returned %ld", (long)read_ret);
		}
		cr_expect_eq(sys_post, 1, "the system call's post_handler was lost");
	}
	cr_expect_eq(sys_kp.nmissed, 0);
	cr_expect_eq(target_kp.nmissed, 0);
	unregister_kprobe(&sys_kp);
	unregister_both();
}

Test(async, interrupted_syscall_restart, .timeout = 30)
{
	interrupted_syscall_case(SA_RESTART, false);
}

Test(async, interrupted_syscall_eintr, .timeout = 30)
{
	interrupted_syscall_case(0, false);
}

Test(async, interrupted_syscall_handler_jumps_out, .timeout = 30)
{
	interrupted_syscall_case(0, true);
}

static int sa_hits;
static int sa_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	sa_hits++;
	return 0;
}

static void sa_noop(int sig)
{
	(void)sig;
}

/* The sigaction interposer calls libc's sigaction under its lock: a
 * breakpoint there must stay deliverable (a blocked SIGTRAP is fatal). */
Test(signals, a_breakpoint_on_libc_sigaction_works)
{
	struct kprobe kp = { .symbol_name = "libc.so.6:sigaction", .pre_handler = sa_pre };
	struct sigaction sa = { .sa_handler = sa_noop };

	cr_assert_eq(kprobes_set_optimization(false), 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_expect_geq(sa_hits, 1);
	unregister_kprobe(&kp);
}

/* A breakpoint hit runs its handlers on the thread's alternate stack
 * when it has one (a Go goroutine's stack is too small for a signal
 * frame; Go gives every thread an alternate stack), and on the thread's
 * own stack when it has none. */
static uintptr_t handler_sp;

/* (frame addresses: an ASan build keeps locals on a stack of its own) */
static int pre_sp(struct kprobe *p, struct pt_regs *regs)
{
	handler_sp = (uintptr_t)__builtin_frame_address(0);
	return 0;
}

static void post_nop(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

Test(in_handlers, breakpoint_on_alternate_stack)
{
	static struct kprobe kp = {
		.symbol_name = "ukt_target2",
		.pre_handler = pre_sp,
		.post_handler = post_nop, /* a breakpoint: no jump optimization */
	};
	size_t size = 256 * 1024;
	char *alt = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t ss = { .ss_sp = alt, .ss_size = size }, old;
	uintptr_t mine = (uintptr_t)__builtin_frame_address(0);

	cr_assert_neq(alt, MAP_FAILED);
	cr_assert_eq(register_kprobe(&kp), 0);
	handler_sp = 0;
	cr_expect_eq(ukt_target2(1), 7);
	cr_assert_eq(sigaltstack(NULL, &old), 0);
	if (old.ss_flags & SS_DISABLE)
		cr_expect(handler_sp < mine && mine - handler_sp < 65536,
			  "no alternate stack: the handler runs just below the thread's stack pointer");
	else /* (an ASan build gives every thread one) */
		cr_expect(handler_sp >= (uintptr_t)old.ss_sp &&
			  handler_sp < (uintptr_t)old.ss_sp + old.ss_size,
			  "on the thread's alternate stack");
	cr_assert_eq(sigaltstack(&ss, &old), 0);
	handler_sp = 0;
	cr_expect_eq(ukt_target2(2), 12);
	cr_expect(handler_sp >= (uintptr_t)alt && handler_sp < (uintptr_t)alt + size,
		  "the handler ran at %#lx, not on the alternate stack %p", (unsigned long)handler_sp,
		  (void *)alt);
	sigaltstack(&old, NULL);
	unregister_kprobe(&kp);
	munmap(alt, size);
}
