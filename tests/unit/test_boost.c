// SPDX-License-Identifier: MIT
/*
 * test_boost.c - the kprobe-booster: one trap per hit when no post_handler
 * is there, a post_handler added later stops it at once, rip-relative
 * boosted copies, faults in a boosted copy, and the life of a boosted
 * slot (quarantine and thread scans; the scan itself: test_scan.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* These tests are about the breakpoint paths: jump optimization (which
 * would take over their probes a few milliseconds after registration)
 * is off in every test process (the knob's start-up variable). */
__attribute__((constructor)) static void breakpoints_only(void)
{
	setenv("UKPROBES_OPTIMIZATION", "0", 1);
}

/* Targets in assembly: their first instructions are known and boostable. */
__asm__(
	".text\n"
	".globl bt_add\n .type bt_add,@function\n"
	"bt_add:\n"
	"	movl %edi, %eax\n"		/* 89 f8: boosted */
	"	addl $7, %eax\n"
	"	ret\n"
	".size bt_add, .-bt_add\n"
	".globl bt_rip\n .type bt_rip,@function\n"
	"bt_rip:\n"
	"	movl bt_data(%rip), %eax\n"	/* rip-relative, re-based for slot+16 */
	"	addl %edi, %eax\n"
	"	ret\n"
	".size bt_rip, .-bt_rip\n"
	".globl bt_load\n .type bt_load,@function\n"
	"bt_load:\n"
	"	movl (%rdi), %eax\n"		/* faults on a bad pointer */
	"	ret\n"
	".size bt_load, .-bt_load\n"
	".globl bt_div\n .type bt_div,@function\n"
	"bt_div:\n"
	"	movl %edi, %eax\n"
	"	cltd\n"
	".globl bt_div_insn\n"
	"bt_div_insn:\n"
	"	idivl %esi\n"			/* f7 fe: boosted, #DE on 0 */
	"	ret\n"
	".size bt_div, .-bt_div\n"
	".globl bt_o1\n .type bt_o1,@function\n"
	"bt_o1: movl %edi, %eax\n addl $1, %eax\n ret\n .size bt_o1, .-bt_o1\n"
	".globl bt_o2\n .type bt_o2,@function\n"
	"bt_o2: movl %edi, %eax\n addl $2, %eax\n ret\n .size bt_o2, .-bt_o2\n"
	".globl bt_o3\n .type bt_o3,@function\n"
	"bt_o3: movl %edi, %eax\n addl $3, %eax\n ret\n .size bt_o3, .-bt_o3\n"
	".globl bt_o4\n .type bt_o4,@function\n"
	"bt_o4: movl %edi, %eax\n addl $4, %eax\n ret\n .size bt_o4, .-bt_o4\n"
	".data\n"
	".globl bt_data\n"
	"bt_data: .long 1000\n"
	".text\n");

int bt_add(int x);
int bt_rip(int x);
int bt_load(const int *p);
int bt_div(int a, int b);
int bt_o1(int), bt_o2(int), bt_o3(int), bt_o4(int);
extern char bt_div_insn[];
extern volatile int bt_data;

static volatile int pre_hits, post_hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	pre_hits++;
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	(void)p;
	(void)regs;
	(void)flags;
	post_hits++;
}

static struct ukp_site *site_of(void *addr)
{
	return ukp_site_lookup((uintptr_t)addr);
}

Test(boost, pre_only_runs_boosted_one_trap_per_hit)
{
	struct kprobe kp = { .symbol_name = "bt_add", .pre_handler = count_pre };
	unsigned long b0, r0;
	int i;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert(site_of(kp.addr)->ainsn.boostable);
	b0 = ukp_tls_boosted_hits;
	r0 = ukp_tls_ool_resumes;
	pre_hits = 0;
	for (i = 0; i < 1000; i++)
		cr_assert_eq(bt_add(i), i + 7);
	cr_expect_eq(pre_hits, 1000);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 1000);
	cr_expect_eq(ukp_tls_ool_resumes - r0, 0, "boosted hits trapped back");
	unregister_kprobe(&kp);
	cr_expect_eq(bt_add(1), 8);
}

Test(boost, post_handler_added_later_stops_boosting_at_once)
{
	struct kprobe k1 = { .symbol_name = "bt_add", .pre_handler = count_pre };
	struct kprobe k2 = { .symbol_name = "bt_add", .post_handler = count_post };
	unsigned long b0, r0;

	cr_assert_eq(register_kprobe(&k1), 0);
	b0 = ukp_tls_boosted_hits;
	cr_assert_eq(bt_add(1), 8);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 1);

	cr_assert_eq(register_kprobe(&k2), 0); /* aggregate child with a post_handler */
	pre_hits = post_hits = 0;
	b0 = ukp_tls_boosted_hits;
	r0 = ukp_tls_ool_resumes;
	cr_assert_eq(bt_add(2), 9);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1, "the later post_handler did not run");
	cr_expect_eq(ukp_tls_boosted_hits - b0, 0);
	cr_expect_eq(ukp_tls_ool_resumes - r0, 1);

	/* a disabled child's post_handler does not stop boosting */
	cr_assert_eq(disable_kprobe(&k2), 0);
	b0 = ukp_tls_boosted_hits;
	cr_assert_eq(bt_add(3), 10);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 1);
	cr_assert_eq(enable_kprobe(&k2), 0);
	post_hits = 0;
	cr_assert_eq(bt_add(3), 10);
	cr_expect_eq(post_hits, 1);

	/* a post_handler written into a registered probe counts at once */
	unregister_kprobe(&k2);
	k1.post_handler = count_post;
	post_hits = 0;
	b0 = ukp_tls_boosted_hits;
	cr_assert_eq(bt_add(4), 11);
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 0);
	k1.post_handler = NULL;
	b0 = ukp_tls_boosted_hits;
	cr_assert_eq(bt_add(4), 11);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 1);
	unregister_kprobe(&k1);
}

Test(boost, rip_relative_boosted_copy_reads_the_original_data)
{
	struct kprobe kp = { .symbol_name = "bt_rip", .pre_handler = count_pre };
	unsigned long b0;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert(site_of(kp.addr)->ainsn.boostable);
	b0 = ukp_tls_boosted_hits;
	bt_data = 1000;
	cr_expect_eq(bt_rip(5), 1005);
	bt_data = -42;
	cr_expect_eq(bt_rip(2), -40);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 2);
	unregister_kprobe(&kp);
}

/* ------------------------------------------------ faults */

static sigjmp_buf recover;
static volatile uintptr_t fault_ip, fault_addr;
static volatile int fault_sig;

static void fault_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	fault_sig = sig;
	fault_ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	fault_addr = (uintptr_t)si->si_addr;
	siglongjmp(recover, 1);
}

static void install_fault_handler(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

Test(boost, segv_in_boosted_copy_reaches_the_program_at_the_original_ip)
{
	struct kprobe kp = { .symbol_name = "bt_load", .pre_handler = count_pre };
	int *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long b0, r0;
	int good = 5;

	cr_assert_neq(bad, MAP_FAILED);
	install_fault_handler(SIGSEGV);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert(site_of(kp.addr)->ainsn.boostable);
	b0 = ukp_tls_boosted_hits;
	r0 = ukp_tls_ool_resumes;
	fault_sig = 0;
	if (sigsetjmp(recover, 1) == 0) {
		(void)bt_load(bad);
		cr_assert_fail("no fault");
	}
	cr_expect_eq(fault_sig, SIGSEGV);
	cr_expect_eq(fault_ip, (uintptr_t)bt_load, "ip %#lx, want %p", (unsigned long)fault_ip,
		     (void *)bt_load);
	cr_expect_eq(fault_addr, (uintptr_t)bad);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 1);
	cr_expect_eq(ukp_tls_ool_resumes - r0, 0);
	cr_expect_eq(atomic_load(&site_of(kp.addr)->inflight), 0);
	cr_expect_eq(bt_load(&good), 5);
	unregister_kprobe(&kp);
}

Test(boost, fpe_in_boosted_copy_maps_ip_and_si_addr)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)bt_div_insn, .pre_handler = count_pre };
	unsigned long b0;

	install_fault_handler(SIGFPE);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert(site_of(kp.addr)->ainsn.boostable);
	b0 = ukp_tls_boosted_hits;
	fault_sig = 0;
	if (sigsetjmp(recover, 1) == 0) {
		(void)bt_div(7, 0);
		cr_assert_fail("no fault");
	}
	cr_expect_eq(fault_sig, SIGFPE);
	cr_expect_eq(fault_ip, (uintptr_t)bt_div_insn);
	cr_expect_eq(fault_addr, (uintptr_t)bt_div_insn);
	cr_expect_eq(ukp_tls_boosted_hits - b0, 1);
	cr_expect_eq(bt_div(21, 3), 7);
	unregister_kprobe(&kp);
}

/*
 * The life of a boosted slot. A pre_handler makes SIGUSR1 pending on the
 * thread; it is delivered as soon as our SIGTRAP handler returns, i.e.
 * with the interrupted ip in the boosted copy. The program's handler
 * waits while the probe is unregistered and new probes are registered
 * (they would take the slot if it were freed). Then the thread must
 * finish the boosted copy exactly.
 */
static volatile int t_tid, usr1_in, usr1_release, t_result;
static volatile unsigned long t_boosted;

static int kick_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	if (t_tid && syscall(SYS_gettid) == t_tid)
		syscall(SYS_tgkill, getpid(), t_tid, SIGUSR1);
	return 0;
}

static void usr1_waits(int sig)
{
	struct timespec ts = { 0, 1000000 };

	(void)sig;
	usr1_in = 1;
	while (!usr1_release)
		nanosleep(&ts, NULL);
}

static void *slot_thread(void *arg)
{
	unsigned long b0 = ukp_tls_boosted_hits;

	(void)arg;
	t_tid = (int)syscall(SYS_gettid);
	t_result = bt_add(35);
	t_boosted = ukp_tls_boosted_hits - b0;
	return NULL;
}

Test(slot_lifetime, thread_under_a_signal_handler_keeps_its_boosted_slot)
{
	struct kprobe kp = { .symbol_name = "bt_add", .pre_handler = kick_pre };
	struct kprobe o1 = { .symbol_name = "bt_o1", .pre_handler = count_pre };
	struct kprobe o2 = { .symbol_name = "bt_o2", .pre_handler = count_pre };
	struct kprobe o3 = { .symbol_name = "bt_o3", .pre_handler = count_pre };
	struct kprobe o4 = { .symbol_name = "bt_o4", .pre_handler = count_pre };
	struct kprobe *others[] = { &o1, &o2, &o3, &o4 };
	struct sigaction sa;
	unsigned long inside0;
	uintptr_t old_slot;
	pthread_t t;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_waits;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	old_slot = site_of(kp.addr)->slot;
	cr_assert(site_of(kp.addr)->ainsn.boostable);

	cr_assert_eq(pthread_create(&t, NULL, slot_thread, NULL), 0);
	while (!usr1_in)
		sched_yield();

	/* The thread's signal frame returns into old_slot + 16. */
	unregister_kprobe(&kp);
	cr_expect_eq(ukp_quarantine_count(), 1);
	ukp_quarantine_limit = 0; /* scan at every allocation */
	inside0 = atomic_load(&ukp_scan_inside);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(register_kprobe(others[i]), 0);
		cr_expect_neq(site_of(others[i]->addr)->slot, old_slot,
			      "probe %zu took the slot a thread will return into", i);
	}
	cr_expect_gt(atomic_load(&ukp_scan_inside), inside0, "the scan did not see the thread");
	cr_expect_eq(ukp_quarantine_count(), 1);
	cr_expect_eq(bt_o1(1) + bt_o2(1) + bt_o3(1) + bt_o4(1), 14);

	usr1_release = 1;
	pthread_join(t, NULL);
	cr_expect_eq(t_result, 42, "the boosted copy computed %d", t_result);
	cr_expect_eq(t_boosted, 1);

	/* now nobody is in it: the next scan frees it */
	cr_assert_eq(ukp_lock_for_show(), 0);
	cr_expect_eq(ukp_quarantine_reclaim(), 1);
	ukp_unlock_for_show();
	cr_expect_eq(ukp_quarantine_count(), 0);
	unregister_kprobes(others, 4);
}
