/* SPDX-License-Identifier: MIT */
/*
 * Faults and probes.
 *
 *  handler_fault:  a pre_handler, post_handler or fault_handler that
 *                  faults (SIGSEGV, SIGFPE, SIGILL, SIGBUS) is abandoned,
 *                  reported to the probe's fault_handler with the x86 trap
 *                  number, counted, and the program carries on.
 *  insn_fault:     the probed instruction itself faults while it runs out
 *                  of line: the program sees the fault exactly as without
 *                  the probe (its own handler, or death).
 *  emulated_fault: an emulated instruction (call, ret) faults on the
 *                  stack: the same, at the original instruction.
 *
 * Handlers only record into globals; the assertions come afterwards.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "ukprobes.h"
#include "ukp_test.h"

/* x86 trap numbers, as the kernel stores them in REG_TRAPNO. */
#define X86_TRAP_DE 0   /* divide error */
#define X86_TRAP_UD 6   /* invalid opcode */
#define X86_TRAP_PF 14  /* page fault (SIGSEGV and SIGBUS alike) */

/*
 * Instructions with known addresses:
 *  ukt_load(p):            returns *p; the load is ukt_load_insn.
 *  ukt_ud2():              ud2 at ukt_ud2_insn.
 *  ukt_call_on_stack(sp):  switches to sp (ukt_movsp_insn, run out of
 *                          line when probed), then ukt_call_insn is a call
 *                          (emulated: it pushes). Returns 0 if it ever
 *                          comes back.
 *  ukt_ret_on_stack(sp):   switches to sp and returns through it: the
 *                          emulated ret reads [sp].
 */
__asm__(
	".text\n"
	".globl ukt_load\n"
	".type ukt_load,@function\n"
	"ukt_load:\n"
	"	nop\n"
	".globl ukt_load_insn\n"
	"ukt_load_insn:\n"
	"	mov (%rdi),%rax\n"
	"	ret\n"
	".size ukt_load, .-ukt_load\n"

	".globl ukt_ud2\n"
	".type ukt_ud2,@function\n"
	"ukt_ud2:\n"
	".globl ukt_ud2_insn\n"
	"ukt_ud2_insn:\n"
	"	ud2\n"
	"	ret\n"
	".size ukt_ud2, .-ukt_ud2\n"

	".globl ukt_leaf\n"
	".type ukt_leaf,@function\n"
	"ukt_leaf:\n"
	"	ret\n"
	".size ukt_leaf, .-ukt_leaf\n"

	".globl ukt_call_on_stack\n"
	".type ukt_call_on_stack,@function\n"
	"ukt_call_on_stack:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	".globl ukt_movsp_insn\n"
	"ukt_movsp_insn:\n"
	"	mov %rdi,%rsp\n"
	".globl ukt_call_insn\n"
	"ukt_call_insn:\n"
	"	call ukt_leaf\n"
	"	mov %rbp,%rsp\n"
	"	pop %rbp\n"
	"	xor %eax,%eax\n"
	"	ret\n"
	".size ukt_call_on_stack, .-ukt_call_on_stack\n"

	".globl ukt_ret_on_stack\n"
	".type ukt_ret_on_stack,@function\n"
	"ukt_ret_on_stack:\n"
	"	push %rbp\n"
	"	mov %rsp,%rbp\n"
	"	mov %rdi,%rsp\n"
	".globl ukt_ret_insn\n"
	"ukt_ret_insn:\n"
	"	ret\n"
	".size ukt_ret_on_stack, .-ukt_ret_on_stack\n");

long ukt_load(const long *p);
void ukt_ud2(void);
long ukt_call_on_stack(void *sp);
long ukt_ret_on_stack(void *sp);
extern char ukt_load_insn[], ukt_ud2_insn[], ukt_call_insn[], ukt_ret_insn[], ukt_movsp_insn[];

UKP_TARGET int ukt_target(int x)
{
	return x * 3 + 1;
}

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------ faults in handlers */

enum fault_kind { F_NONE, F_SEGV, F_FPE, F_ILL, F_BUS };

static volatile int fault_kind;
static int *volatile null_ptr;
static volatile int zero;
static volatile int sink;
static volatile char *bus_addr;

static void do_fault(void)
{
	switch (fault_kind) {
	case F_SEGV:
		sink = ukt_load_int(null_ptr);
		break;
	case F_FPE: {
		volatile int a = 7;

		sink = ukt_idiv(a, zero);
		break;
	}
	case F_ILL:
		ukt_ud2();
		break;
	case F_BUS:
		sink = *bus_addr;
		break;
	default:
		break;
	}
}

/* A page of a file mapped beyond the end of the file: touching it raises
 * SIGBUS (BUS_ADRERR) from a page fault. */
static void setup_bus(void)
{
	long pg = page_size();
	int fd = memfd_create("ukt_bus", 0);
	char *m;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, pg), 0);
	m = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	close(fd);
	bus_addr = m + pg;
}

static volatile int pre_hits, post_hits, pre_after, post_after;
static volatile int fh_calls, fh_trapnr;
static struct kprobe *volatile fh_kp;
static volatile unsigned long fh_ip;

static int pre_faulting(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	do_fault();
	pre_after++;
	return 0;
}

static void post_faulting(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_hits++;
	do_fault();
	post_after++;
}

static int pre_count(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	return 0;
}

static void post_count(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_hits++;
}

static int fault_record(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	fh_calls++;
	fh_kp = p;
	fh_trapnr = trapnr;
	fh_ip = regs->ip;
	return 0;
}

static void reset_counts(void)
{
	pre_hits = post_hits = pre_after = post_after = 0;
	fh_calls = 0;
	fh_trapnr = -1;
	fh_kp = NULL;
	fh_ip = 0;
}

/*
 * A fault of the given kind in the pre (in_pre) or post handler of a probe
 * on ukt_target's entry, with or without a fault_handler.
 */
static void handler_fault_case(int kind, bool in_pre, bool with_fh, int trapnr)
{
	struct kprobe kp = {
		.symbol_name = "ukt_target",
		.pre_handler = in_pre ? pre_faulting : pre_count,
		.post_handler = in_pre ? post_count : post_faulting,
		.fault_handler = with_fh ? fault_record : NULL,
	};
	unsigned long faults0 = kprobes_handler_faults();

	if (kind == F_BUS)
		setup_bus();
	reset_counts();
	fault_kind = kind;
	cr_assert_eq(register_kprobe(&kp), 0);

	/* the program computes the right result */
	cr_expect_eq(ukt_target(14), 43);
	cr_expect_null(kprobe_running());
	/* both handlers started; the faulting one was abandoned */
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	if (in_pre) {
		cr_expect_eq(pre_after, 0, "the pre_handler went on after its fault");
		cr_expect_eq(post_after, 0);
	} else {
		cr_expect_eq(post_after, 0, "the post_handler went on after its fault");
	}
	if (with_fh) {
		cr_expect_eq(fh_calls, 1);
		cr_expect_eq(fh_kp, &kp);
		cr_expect_eq(fh_trapnr, trapnr, "trapnr %d, expected %d", fh_trapnr, trapnr);
		if (kind == F_ILL)
			cr_expect_eq(fh_ip, (unsigned long)ukt_ud2_insn,
				     "fault_handler's regs->ip %#lx is not the ud2", fh_ip);
	}
	cr_expect_eq(kp.nmissed, 1);
	cr_expect_eq(kprobes_handler_faults() - faults0, 1);
	/* (ASan) the abandoned handler's frames left no poison behind */
	cr_expect_null(ukt_stale_stack_poison(), "stale ASan poison at %p below the stack",
		       ukt_stale_stack_poison());

	/* The probe and the thread's state survive: a clean hit next. */
	fault_kind = F_NONE;
	reset_counts();
	cr_expect_eq(ukt_target(5), 16);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	if (in_pre)
		cr_expect_eq(pre_after, 1);
	else
		cr_expect_eq(post_after, 1);
	cr_expect_eq(fh_calls, 0);
	cr_expect_eq(kp.nmissed, 1);
	cr_expect_eq(kprobes_handler_faults() - faults0, 1);
	unregister_kprobe(&kp);
}

Test(handler_fault, pre_segv)  { handler_fault_case(F_SEGV, true, true, X86_TRAP_PF); }
Test(handler_fault, pre_fpe)   { handler_fault_case(F_FPE, true, true, X86_TRAP_DE); }
Test(handler_fault, pre_ill)   { handler_fault_case(F_ILL, true, true, X86_TRAP_UD); }
Test(handler_fault, pre_bus)   { handler_fault_case(F_BUS, true, true, X86_TRAP_PF); }
Test(handler_fault, post_segv) { handler_fault_case(F_SEGV, false, true, X86_TRAP_PF); }
Test(handler_fault, post_fpe)  { handler_fault_case(F_FPE, false, true, X86_TRAP_DE); }
Test(handler_fault, post_ill)  { handler_fault_case(F_ILL, false, true, X86_TRAP_UD); }
Test(handler_fault, post_bus)  { handler_fault_case(F_BUS, false, true, X86_TRAP_PF); }

/* Without a fault_handler the process survives all the same. */
Test(handler_fault, pre_segv_no_fault_handler)  { handler_fault_case(F_SEGV, true, false, 0); }
Test(handler_fault, pre_fpe_no_fault_handler)   { handler_fault_case(F_FPE, true, false, 0); }
Test(handler_fault, post_ill_no_fault_handler)  { handler_fault_case(F_ILL, false, false, 0); }
Test(handler_fault, post_bus_no_fault_handler)  { handler_fault_case(F_BUS, false, false, 0); }

/* A fault_handler that faults in turn is not called again for its own
 * fault, and the program still carries on. */
static int fault_handler_faulting(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	fh_calls++;
	fh_trapnr = trapnr;
	sink = ukt_load_int(null_ptr);
	fh_calls += 100;
	return 0;
}

Test(handler_fault, fault_in_fault_handler)
{
	struct kprobe kp = {
		.symbol_name = "ukt_target",
		.pre_handler = pre_faulting,
		.post_handler = post_count,
		.fault_handler = fault_handler_faulting,
	};

	reset_counts();
	fault_kind = F_FPE;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukt_target(2), 7);
	cr_expect_eq(fh_calls, 1);
	cr_expect_eq(fh_trapnr, X86_TRAP_DE);
	cr_expect_eq(pre_after, 0);
	cr_expect_eq(post_hits, 1);
	cr_expect_geq(kp.nmissed, 1);
	unregister_kprobe(&kp);
}

/* In an aggregate the fault belongs to the child whose handler faulted:
 * its fault_handler, its nmissed; the other child runs normally. */
static volatile int other_pre_hits, other_fh_calls;

static int other_pre(struct kprobe *p, struct pt_regs *regs)
{
	other_pre_hits++;
	return 0;
}

static int other_fault(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	other_fh_calls++;
	return 0;
}

Test(handler_fault, aggregate_child_attribution)
{
	struct kprobe older = {
		.symbol_name = "ukt_target",
		.pre_handler = other_pre,
		.fault_handler = other_fault,
	};
	struct kprobe newer = {
		.symbol_name = "ukt_target",
		.pre_handler = pre_faulting,
		.fault_handler = fault_record,
	};

	reset_counts();
	other_pre_hits = other_fh_calls = 0;
	fault_kind = F_SEGV;
	cr_assert_eq(register_kprobe(&older), 0);
	cr_assert_eq(register_kprobe(&newer), 0);
	cr_expect_eq(ukt_target(1), 4);
	/* newest first: the faulting one ran, then the older one still did */
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(pre_after, 0);
	cr_expect_eq(other_pre_hits, 1);
	cr_expect_eq(fh_calls, 1);
	cr_expect_eq(fh_kp, &newer);
	cr_expect_eq(other_fh_calls, 0);
	cr_expect_eq(newer.nmissed, 1);
	cr_expect_eq(older.nmissed, 0);
	unregister_kprobe(&newer);
	unregister_kprobe(&older);
}

/*
 * A pre_handler calls a probed function whose probed instruction faults
 * while it is being stepped reentrantly: the handler is abandoned, and the
 * thread's step state is unwound (both probes work normally afterwards).
 */
static volatile long load_result;
static const long *volatile load_ptr;

static int pre_calls_load(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	load_result = ukt_load(load_ptr);
	pre_after++;
	return 0;
}

static volatile int inner_pre_hits, inner_post_hits;

static int inner_pre(struct kprobe *p, struct pt_regs *regs)
{
	inner_pre_hits++;
	return 0;
}

static void inner_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	inner_post_hits++;
}

Test(handler_fault, fault_in_reentrant_step)
{
	static const long good = 77;
	struct kprobe outer = {
		.symbol_name = "ukt_target",
		.pre_handler = pre_calls_load,
		.fault_handler = fault_record,
	};
	struct kprobe inner = {
		.addr = (kprobe_opcode_t *)ukt_load_insn,
		.pre_handler = inner_pre,
		.post_handler = inner_post,
	};
	unsigned long faults0 = kprobes_handler_faults();

	reset_counts();
	inner_pre_hits = inner_post_hits = 0;
	cr_assert_eq(register_kprobe(&inner), 0);
	cr_assert_eq(register_kprobe(&outer), 0);

	load_ptr = (const long *)16; /* unmapped */
	cr_expect_eq(ukt_target(3), 10);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(pre_after, 0);
	cr_expect_eq(fh_calls, 1);
	cr_expect_eq(fh_trapnr, X86_TRAP_PF);
	cr_expect_eq(inner.nmissed, 1, "the reentrant hit is a missed one");
	cr_expect_eq(inner_pre_hits, 0);
	cr_expect_eq(kprobes_handler_faults() - faults0, 1);

	/* Everything is back to normal. */
	reset_counts();
	load_ptr = &good;
	cr_expect_eq(ukt_target(3), 10);
	cr_expect_eq(pre_after, 1);
	cr_expect_eq(load_result, 77);
	cr_expect_eq(inner.nmissed, 2);
	cr_expect_eq(ukt_load(&good), 77);
	cr_expect_eq(inner_pre_hits, 1);
	cr_expect_eq(inner_post_hits, 1);
	cr_expect_null(kprobe_running());
	unregister_kprobe(&outer);
	unregister_kprobe(&inner);
}

/* ------------------------------- faults of the probed instruction */

static sigjmp_buf recover;
static volatile int seg_calls, seg_signo, seg_code, seg_on_altstack;
static void *volatile seg_addr;
static volatile uintptr_t seg_ip, seg_sp, seg_di;
static char *altstack;
static size_t altstack_size;

static void prog_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	char here;

	seg_calls++;
	seg_signo = si->si_signo;
	seg_code = si->si_code;
	seg_addr = si->si_addr;
	seg_ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	seg_sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	seg_di = (uintptr_t)uc->uc_mcontext.gregs[REG_RDI];
	seg_on_altstack = altstack && &here >= altstack && &here < altstack + altstack_size;
	siglongjmp(recover, 1);
}

static void install_prog_segv(int extra_flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_segv;
	sa.sa_flags = SA_SIGINFO | extra_flags;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
}

static void install_altstack(void)
{
	stack_t ss;

	altstack_size = 256 * 1024;
	altstack = malloc(altstack_size);
	cr_assert_not_null(altstack);
	ss.ss_sp = altstack;
	ss.ss_size = altstack_size;
	ss.ss_flags = 0;
	cr_assert_eq(sigaltstack(&ss, NULL), 0);
}

static void reset_seg(void)
{
	seg_calls = seg_signo = seg_code = seg_on_altstack = 0;
	seg_addr = NULL;
	seg_ip = seg_sp = seg_di = 0;
}

static struct kprobe load_kp = {
	.addr = (kprobe_opcode_t *)ukt_load_insn,
	.pre_handler = pre_count,
	.post_handler = post_count,
};

/* A PROT_NONE page: loads from it fault with SEGV_ACCERR. */
static long *none_page(void)
{
	void *p = mmap(NULL, (size_t)page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	return p;
}

/* Call ukt_load(bad) and check that the program's handler saw the fault
 * of the load at its original address. */
static void expect_load_fault(const long *bad, int code)
{
	reset_seg();
	if (sigsetjmp(recover, 1) == 0) {
		load_result = ukt_load(bad);
		cr_assert_fail("ukt_load(%p) did not fault", (void *)bad);
	}
	cr_expect_eq(seg_calls, 1);
	cr_expect_eq(seg_signo, SIGSEGV);
	cr_expect_eq(seg_code, code, "si_code %d, expected %d", seg_code, code);
	cr_expect_eq(seg_addr, (void *)bad, "si_addr %p, expected %p", seg_addr, (void *)bad);
	cr_expect_eq(seg_ip, (uintptr_t)ukt_load_insn,
		     "the program saw the fault at %#lx, not at the probed instruction %p",
		     (unsigned long)seg_ip, (void *)ukt_load_insn);
	cr_expect_eq(seg_di, (uintptr_t)bad);
}

static void insn_fault_checks(void)
{
	static const long good = 1234;
	long *np = none_page();

	reset_counts();
	expect_load_fault((const long *)24, SEGV_MAPERR);
	cr_expect_eq(pre_hits, 1, "the probe fired before the fault");
	cr_expect_eq(post_hits, 0, "no post_handler for an instruction that faulted");
	expect_load_fault(np + 1, SEGV_ACCERR);
	cr_expect_eq(pre_hits, 2);
	cr_expect_eq(post_hits, 0);
	cr_expect_eq(load_kp.nmissed, 0);
	cr_expect_null(kprobe_running());

	/* the thread's probe state was released: a clean hit next */
	reset_counts();
	cr_expect_eq(ukt_load(&good), 1234);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(load_kp.nmissed, 0);
}

Test(insn_fault, program_handler_installed_before_library)
{
	install_prog_segv(0);
	cr_assert_eq(register_kprobe(&load_kp), 0);
	insn_fault_checks();
	unregister_kprobe(&load_kp);
}

Test(insn_fault, program_handler_installed_after_library)
{
	static struct kprobe other = { .symbol_name = "ukt_target", .pre_handler = pre_count };

	/* the library starts with the first registration */
	cr_assert_eq(register_kprobe(&other), 0);
	install_prog_segv(0);
	cr_assert_eq(register_kprobe(&load_kp), 0);
	insn_fault_checks();
	unregister_kprobe(&load_kp);
	unregister_kprobe(&other);
}

/* The program's handler fixes the fault and returns: the instruction is
 * restarted at the probed address, so the probe fires again (as the
 * kernel's kprobe_fault_handler does), and then completes normally. */
static long *volatile fix_page;

static void prog_segv_fixing(int sig, siginfo_t *si, void *ucv)
{
	seg_calls++;
	seg_addr = si->si_addr;
	seg_ip = (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
	mprotect(fix_page, (size_t)page_size(), PROT_READ | PROT_WRITE);
	fix_page[3] = 4321;
}

Test(insn_fault, program_handler_fixes_and_returns)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_segv_fixing;
	sa.sa_flags = SA_SIGINFO;
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	fix_page = none_page();
	cr_assert_eq(register_kprobe(&load_kp), 0);
	reset_counts();
	reset_seg();
	cr_expect_eq(ukt_load(fix_page + 3), 4321);
	cr_expect_eq(seg_calls, 1);
	cr_expect_eq(seg_addr, (void *)(fix_page + 3));
	cr_expect_eq(seg_ip, (uintptr_t)ukt_load_insn);
	cr_expect_eq(pre_hits, 2, "the restarted instruction hits the probe again");
	cr_expect_eq(post_hits, 1);
	unregister_kprobe(&load_kp);
}

/* Run fn in a child and return its wait status. The child has no core
 * dumps; *shared is a page shared with the child. */
static volatile int *shared;

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

static int shared_pre(struct kprobe *p, struct pt_regs *regs)
{
	shared[0]++;
	return 0;
}

static struct kprobe load_kp_shared = {
	.addr = (kprobe_opcode_t *)ukt_load_insn,
	.pre_handler = shared_pre,
	.post_handler = post_count,
};

static void child_load_bad(void)
{
	if (register_kprobe(&load_kp_shared))
		_exit(10);
	load_result = ukt_load((const long *)24);
	_exit(11); /* survived */
}

static void setup_shared(void)
{
	shared = mmap(NULL, (size_t)page_size(), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(shared, MAP_FAILED);
	shared[0] = shared[1] = 0;
}

static void expect_death(int status, int sig)
{
	cr_expect(WIFSIGNALED(status), "the child did not die of a signal (status %#x, exit %d)",
		  status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (WIFSIGNALED(status))
		cr_expect_eq(WTERMSIG(status), sig, "died of signal %d", WTERMSIG(status));
}

Test(insn_fault, no_program_handler_dies_of_sigsegv)
{
	setup_shared();
	expect_death(run_child(child_load_bad), SIGSEGV);
	cr_expect_eq(shared[0], 1, "the probe fired in the child");
}

static void child_load_bad_ignored(void)
{
	signal(SIGSEGV, SIG_IGN);
	child_load_bad();
}

/* A CPU fault with SIGSEGV ignored kills all the same. */
Test(insn_fault, ignored_sigsegv_still_kills)
{
	setup_shared();
	expect_death(run_child(child_load_bad_ignored), SIGSEGV);
}

static void child_load_bad_blocked(void)
{
	sigset_t set;

	install_prog_segv(0);
	sigemptyset(&set);
	sigaddset(&set, SIGSEGV);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (sigsetjmp(recover, 1))
		_exit(12); /* the handler ran although SIGSEGV was blocked */
	child_load_bad();
}

/* A CPU fault with SIGSEGV blocked kills, the handler does not run. */
Test(insn_fault, blocked_sigsegv_kills)
{
	setup_shared();
	expect_death(run_child(child_load_bad_blocked), SIGSEGV);
}

/* ------------------------------- faults of emulated instructions */

/*
 * A stack of n RW pages followed by one inaccessible page (PROT_NONE, or
 * unmapped when hole): a push at top+64 faults, but the signal frame of
 * the breakpoint still fits below the red zone.
 */
static char *stack_with_guard(size_t n, bool hole)
{
	long pg = page_size();
	char *m = mmap(NULL, (n + 1) * (size_t)pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(m, MAP_FAILED);
	if (hole)
		cr_assert_eq(munmap(m + n * (size_t)pg, (size_t)pg), 0);
	else
		cr_assert_eq(mprotect(m + n * (size_t)pg, (size_t)pg, PROT_NONE), 0);
	return m + n * (size_t)pg; /* the guard */
}

static struct kprobe call_kp = {
	.addr = (kprobe_opcode_t *)ukt_call_insn,
	.pre_handler = pre_count,
	.post_handler = post_count,
};

static struct kprobe ret_kp = {
	.addr = (kprobe_opcode_t *)ukt_ret_insn,
	.pre_handler = pre_count,
	.post_handler = post_count,
};

static void expect_stack_fault(long (*fn)(void *), void *sp, uintptr_t ip, void *addr, int code,
			       int hits)
{
	reset_seg();
	reset_counts();
	if (sigsetjmp(recover, 1) == 0) {
		fn(sp);
		cr_assert_fail("no fault");
	}
	cr_expect_eq(seg_calls, 1);
	cr_expect_eq(seg_signo, SIGSEGV);
	cr_expect_eq(seg_ip, ip, "the program saw the fault at %#lx, not at %#lx",
		     (unsigned long)seg_ip, (unsigned long)ip);
	cr_expect_eq(seg_sp, (uintptr_t)sp, "sp %#lx, expected %p", (unsigned long)seg_sp, sp);
	cr_expect_eq(seg_addr, addr, "si_addr %p, expected %p", seg_addr, addr);
	cr_expect_eq(seg_code, code, "si_code %d, expected %d", seg_code, code);
	cr_expect(seg_on_altstack, "the SA_ONSTACK handler did not run on the alternate stack");
	cr_expect_eq(pre_hits, hits);
	cr_expect_eq(post_hits, 0);
	cr_expect_null(kprobe_running());
}

static void emulated_fault_case(struct kprobe *kp, bool hole)
{
	char *guard = stack_with_guard(16, hole);
	int code = hole ? SEGV_MAPERR : SEGV_ACCERR;

	install_altstack();
	install_prog_segv(SA_ONSTACK);
	/* what the CPU does without the probe */
	expect_stack_fault(kp == &call_kp ? ukt_call_on_stack : ukt_ret_on_stack,
			   kp == &call_kp ? guard + 64 : guard, (uintptr_t)kp->addr,
			   kp == &call_kp ? guard + 56 : guard, code, 0);
	cr_assert_eq(register_kprobe(kp), 0);
	expect_stack_fault(kp == &call_kp ? ukt_call_on_stack : ukt_ret_on_stack,
			   kp == &call_kp ? guard + 64 : guard, (uintptr_t)kp->addr,
			   kp == &call_kp ? guard + 56 : guard, code, 1);
	unregister_kprobe(kp);
}

Test(emulated_fault, call_push_faults_accerr)  { emulated_fault_case(&call_kp, false); }
Test(emulated_fault, call_push_faults_maperr)  { emulated_fault_case(&call_kp, true); }
Test(emulated_fault, ret_pop_faults_accerr)    { emulated_fault_case(&ret_kp, false); }

/*
 * The stack pointer is deep inside inaccessible memory: even the signal
 * frame of the breakpoint cannot be written there (a real stack
 * overflow). The program's handler on its alternate stack still sees the
 * fault of the call, at the call.
 */
Test(emulated_fault, call_with_no_stack_at_all)
{
	long pg = page_size();
	char *none = mmap(NULL, 64 * (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *sp = none + 32 * pg;

	cr_assert_neq(none, MAP_FAILED);
	install_altstack();
	install_prog_segv(SA_ONSTACK);
	expect_stack_fault(ukt_call_on_stack, sp, (uintptr_t)ukt_call_insn, sp - 8, SEGV_ACCERR, 0);
	cr_assert_eq(register_kprobe(&call_kp), 0);
	expect_stack_fault(ukt_call_on_stack, sp, (uintptr_t)ukt_call_insn, sp - 8, SEGV_ACCERR, 1);
	/* and the probe still works on a good stack */
	reset_counts();
	{
		char *good = stack_with_guard(4, false);

		cr_expect_eq(ukt_call_on_stack(good - 256), 0);
		cr_expect_eq(pre_hits, 1);
		cr_expect_eq(post_hits, 1);
	}
	unregister_kprobe(&call_kp);
}

/*
 * An out-of-line step that moves the stack pointer into inaccessible
 * memory: the trap that ends the step cannot get a signal frame there.
 * The step still completes (post_handler), and the next instruction, a
 * call with no probe, faults for the program as usual.
 */
Test(emulated_fault, ool_step_moves_sp_to_no_stack)
{
	long pg = page_size();
	char *none = mmap(NULL, 64 * (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *sp = none + 32 * pg;
	struct kprobe kp = {
		.addr = (kprobe_opcode_t *)ukt_movsp_insn,
		.pre_handler = pre_count,
		.post_handler = post_count,
	};

	cr_assert_neq(none, MAP_FAILED);
	install_altstack();
	install_prog_segv(SA_ONSTACK);
	cr_assert_eq(register_kprobe(&kp), 0);
	reset_seg();
	reset_counts();
	if (sigsetjmp(recover, 1) == 0) {
		ukt_call_on_stack(sp);
		cr_assert_fail("no fault");
	}
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1, "the step was not completed");
	cr_expect_eq(seg_calls, 1);
	cr_expect_eq(seg_ip, (uintptr_t)ukt_call_insn, "fault at %#lx, expected the call %p",
		     (unsigned long)seg_ip, (void *)ukt_call_insn);
	cr_expect_eq(seg_addr, (void *)(sp - 8));
	cr_expect_eq(seg_code, SEGV_ACCERR);
	cr_expect_eq(kp.nmissed, 0);
	cr_expect_null(kprobe_running());
	unregister_kprobe(&kp);
}

/* The program's handler makes the stack accessible and returns: the call
 * is restarted, hits the probe again and completes. */
static char *volatile fix_stack_page;

static void prog_segv_fix_stack(int sig, siginfo_t *si, void *ucv)
{
	seg_calls++;
	seg_ip = (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
	mprotect(fix_stack_page, (size_t)page_size(), PROT_READ | PROT_WRITE);
}

Test(emulated_fault, program_handler_fixes_and_returns)
{
	struct sigaction sa;
	char *guard = stack_with_guard(16, false);

	fix_stack_page = guard;
	install_altstack();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_segv_fix_stack;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	cr_assert_eq(register_kprobe(&call_kp), 0);
	reset_counts();
	reset_seg();
	cr_expect_eq(ukt_call_on_stack(guard + 64), 0);
	cr_expect_eq(seg_calls, 1);
	cr_expect_eq(seg_ip, (uintptr_t)ukt_call_insn);
	cr_expect_eq(pre_hits, 2);
	cr_expect_eq(post_hits, 1);
	unregister_kprobe(&call_kp);
}

static char *volatile child_guard;

static void child_call_bad_stack(void)
{
	if (register_kprobe(&call_kp))
		_exit(10);
	ukt_call_on_stack(child_guard + 64);
	_exit(11);
}

Test(emulated_fault, no_program_handler_dies_of_sigsegv)
{
	child_guard = stack_with_guard(16, false);
	expect_death(run_child(child_call_bad_stack), SIGSEGV);
}

static void child_call_bad_stack_blocked(void)
{
	sigset_t set;

	install_altstack();
	install_prog_segv(SA_ONSTACK);
	sigemptyset(&set);
	sigaddset(&set, SIGSEGV);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (sigsetjmp(recover, 1))
		_exit(12); /* the handler ran although SIGSEGV was blocked */
	child_call_bad_stack();
}

/* As on the CPU: a fault with SIGSEGV blocked kills, no handler runs. */
Test(emulated_fault, blocked_sigsegv_kills)
{
	child_guard = stack_with_guard(16, false);
	expect_death(run_child(child_call_bad_stack_blocked), SIGSEGV);
}
