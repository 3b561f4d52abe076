/* SPDX-License-Identifier: MIT */
/*
 * copy_from_user_nofault() (and the other public functions that may be
 * called at any time) in every state of the library: before anything
 * else was called, on threads that never hit a probe, after every probe
 * was unregistered, with kprobes disabled, in a forked child, in the
 * program's own signal handlers and in probe handlers (breakpoint and
 * optimized). Each state is tried twice: as it is, and with the fault
 * signals blocked by the program (the library must keep them
 * deliverable, or the kernel kills the process at the first bad read).
 *
 * Every test runs in its own process, forked from a runner that never
 * registers a probe: "before anything else" is the state each test
 * starts in.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ukprobes.h"
#include "ukp_test.h"

/* Targets: nf_opt's first two instructions make a 5-byte region
 * (optimizable); nf_bp gets a probe with a post_handler (breakpoint). */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl nf_opt\n .type nf_opt,@function\n"
	"nf_opt:\n"
	"	movl %edi, %eax\n"
	"	addl $7, %eax\n"
	"	ret\n"
	".size nf_opt, .-nf_opt\n"
	".globl nf_bp\n .type nf_bp,@function\n"
	"nf_bp:\n"
	"	movl %edi, %eax\n"
	"	addl $9, %eax\n"
	"	ret\n"
	".size nf_bp, .-nf_bp\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl nf_opt\n .type nf_opt,%function\n"
	"nf_opt:\n"
	"	add w0, w0, #7\n"
	"	ret\n"
	".size nf_opt, .-nf_opt\n"
	".globl nf_bp\n .type nf_bp,%function\n"
	"nf_bp:\n"
	"	add w0, w0, #9\n"
	"	ret\n"
	".size nf_bp, .-nf_bp\n");
#endif
int nf_opt(int x);
int nf_bp(int x);

/*
 * A page that cannot be read: reserved PROT_NONE and kept, so that no
 * later mapping of the library (slots, detours, rings) can land there, as
 * it could in a hole left by munmap. bad_reads() also reads page 1, below
 * mmap_min_addr, which nothing can ever map.
 */
static void *unmapped(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	return p;
}

/* [any, signal handler] The bad reads, as a bit mask of failures. */
static void *volatile bad_page;

static int bad_reads(void)
{
	char buf[32];
	int fails = 0;

	if (copy_from_user_nofault(buf, NULL, 8) != -EFAULT)
		fails |= 1;
	if (copy_from_user_nofault(buf, bad_page, sizeof(buf)) != -EFAULT)
		fails |= 2;
	if (copy_from_user_nofault(buf, (void *)0xffff800000000000UL, 8) != -EFAULT)
		fails |= 4;
	if (copy_from_user_nofault(buf, (void *)0x1000, 8) != -EFAULT)
		fails |= 8;
	/* the word and half-word moves (x86-64's own path), source and
	 * destination */
	if (copy_from_user_nofault(buf, bad_page, 4) != -EFAULT)
		fails |= 16;
	if (copy_from_user_nofault(bad_page, buf, 8) != -EFAULT)
		fails |= 32;
	if (copy_from_user_nofault(bad_page, buf, 4) != -EFAULT)
		fails |= 64;
	/* a dereference chain: its first load, a later one, its last of
	 * each size */
	{
		static const long off[3] = { 0, 8, 0 };
		uint64_t v = (uintptr_t)bad_page;
		uintptr_t p[2] = { 0, (uintptr_t)bad_page };

		if (ukprobes_fetch_nofault(&v, off, 3, 8) != -EFAULT || v != (uintptr_t)bad_page)
			fails |= 128;
		v = (uintptr_t)p;
		if (ukprobes_fetch_nofault(&v, off, 2, 8) != -EFAULT || v != (uintptr_t)p)
			fails |= 256;
		for (unsigned int size = 1; size <= 8; size *= 2) {
			v = (uintptr_t)p;
			if (ukprobes_fetch_nofault(&v, off + 1, 2, size) != -EFAULT)
				fails |= 512;
		}
	}
	return fails;
}

static void block_faults(int how)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	sigaddset(&s, SIGBUS);
	cr_assert_eq(sigprocmask(how, &s, NULL), 0);
}

/* The state as it is, then with the fault signals blocked. */
static void expect_nofault_works(const char *state)
{
	static const long good = 0x1234;
	long v = 0;

	bad_page = unmapped();
	cr_expect_eq(bad_reads(), 0, "%s: a bad read did not give -EFAULT", state);
	cr_expect_eq(copy_from_user_nofault(&v, &good, sizeof(v)), 0, "%s", state);
	cr_expect_eq(v, 0x1234);
	block_faults(SIG_BLOCK);
	cr_expect_eq(bad_reads(), 0, "%s, SIGSEGV blocked: no -EFAULT", state);
	block_faults(SIG_UNBLOCK);
}

Test(nofault, before_anything_else)
{
	char two[2];
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	struct pt_regs regs;

	/* the first call into the library */
	cr_expect_eq(copy_from_user_nofault(two, NULL, 1), -EFAULT);
	/* a range that runs into an unmapped page */
	cr_assert_neq(p, MAP_FAILED);
	cr_assert_eq(munmap(p + ps, (size_t)ps), 0);
	cr_expect_eq(copy_from_user_nofault(two, p + ps - 1, 2), -EFAULT);
	cr_expect_eq(copy_from_user_nofault(two, p + ps - 1, 1), 0);
	{
		uint64_t w = 0;
		uint32_t h = 0;

		/* a word or a half-word across the end of the mapping */
		cr_expect_eq(copy_from_user_nofault(&w, p + ps - 4, 8), -EFAULT);
		cr_expect_eq(copy_from_user_nofault(&h, p + ps - 2, 4), -EFAULT);
		memcpy(p + ps - 8, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
		cr_expect_eq(copy_from_user_nofault(&w, p + ps - 8, 8), 0);
		cr_expect_eq(w, 0x8877665544332211ULL);
		cr_expect_eq(copy_from_user_nofault(&h, p + ps - 4, 4), 0);
		cr_expect_eq(h, 0x88776655U);
	}
	memset(&regs, 0, sizeof(regs));
	cr_expect_eq(regs_get_kernel_stack_nth(&regs, 0), 0);
	expect_nofault_works("before anything else");
}

/* A dereference chain in one call: each size of its last load, offsets
 * negative and positive, a last load that ends at the end of the
 * mapping (no byte past it read), bad arguments. */
Test(nofault, fetch_chain)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *page = mmap(NULL, 2 * (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct leaf { long pad; int64_t value; } leaf = { 0, -7 };
	struct link { int tag; struct leaf *next; } link = { 1, &leaf };
	const long off2[2] = { 8, 8 }, back[1] = { -8 };
	uint64_t v;

	cr_assert_neq(page, MAP_FAILED);
	cr_assert_eq(munmap(page + ps, (size_t)ps), 0);
	/* p->next->value as +8(+8(%di)) */
	v = (uintptr_t)&link;
	cr_expect_eq(ukprobes_fetch_nofault(&v, off2, 2, 8), 0);
	cr_expect_eq((int64_t)v, -7);
	v = (uintptr_t)&link;
	cr_expect_eq(ukprobes_fetch_nofault(&v, off2, 2, 4), 0);
	cr_expect_eq(v, 0xfffffff9ULL, "4 bytes, zero-extended: %#llx", (unsigned long long)v);
	v = (uintptr_t)&link;
	cr_expect_eq(ukprobes_fetch_nofault(&v, off2, 2, 2), 0);
	cr_expect_eq(v, 0xfff9ULL);
	v = (uintptr_t)&link;
	cr_expect_eq(ukprobes_fetch_nofault(&v, off2, 2, 1), 0);
	cr_expect_eq(v, 0xf9ULL);
	/* a negative offset */
	v = (uintptr_t)&leaf.value;
	cr_expect_eq(ukprobes_fetch_nofault(&v, back, 1, 8), 0);
	cr_expect_eq(v, 0);
	/* the last bytes of the mapping, of each size */
	memcpy(page + ps - 8, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	for (unsigned int size = 1; size <= 8; size *= 2) {
		const long at[1] = { ps - (long)size };
		uint64_t want = 0;

		memcpy(&want, page + ps - size, size);
		v = (uintptr_t)page;
		cr_expect_eq(ukprobes_fetch_nofault(&v, at, 1, size), 0, "size %u", size);
		cr_expect_eq(v, want, "size %u", size);
		/* one byte further runs into the unmapped page */
		v = (uintptr_t)page + 1;
		cr_expect_eq(ukprobes_fetch_nofault(&v, at, 1, size), -EFAULT, "size %u", size);
		cr_expect_eq(v, (uintptr_t)page + 1, "unchanged on a fault");
	}
	v = (uintptr_t)&link;
	cr_expect_eq(ukprobes_fetch_nofault(&v, off2, 0, 8), -EINVAL);
	cr_expect_eq(ukprobes_fetch_nofault(&v, off2, 2, 3), -EINVAL);
	cr_expect_eq(v, (uintptr_t)&link);
	expect_nofault_works("after the chains");
}

/* The same chains with the value in and out by value
 * (ukprobes_fetch_nofault_value: the agent's --filter path). */
Test(nofault, fetch_chain_by_value)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *page = mmap(NULL, 2 * (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct leaf { long pad; int64_t value; } leaf = { 0, -7 };
	struct link { int tag; struct leaf *next; } link = { 1, &leaf };
	const long off2[2] = { 8, 8 }, off3[3] = { 8, 8, 0 };
	struct ukprobes_fetched r;

	cr_assert_neq(page, MAP_FAILED);
	cr_assert_eq(munmap(page + ps, (size_t)ps), 0);
	r = ukprobes_fetch_nofault_value((uintptr_t)&link, off2, 2, 8);
	cr_expect(r.err == 0 && (int64_t)r.val == -7, "%ld %#llx", r.err, (unsigned long long)r.val);
	r = ukprobes_fetch_nofault_value((uintptr_t)&link, off2, 2, 4);
	cr_expect(r.err == 0 && r.val == 0xfffffff9ULL, "%ld %#llx", r.err,
		  (unsigned long long)r.val);
	r = ukprobes_fetch_nofault_value((uintptr_t)&link, off2, 2, 2);
	cr_expect(r.err == 0 && r.val == 0xfff9ULL);
	r = ukprobes_fetch_nofault_value((uintptr_t)&link, off2, 2, 1);
	cr_expect(r.err == 0 && r.val == 0xf9ULL);
	/* -7 taken as a pointer: the third load faults */
	r = ukprobes_fetch_nofault_value((uintptr_t)&link, off3, 3, 8);
	cr_expect_eq(r.err, -EFAULT);
	/* the first load faults: NULL->next */
	r = ukprobes_fetch_nofault_value(0, off2, 2, 8);
	cr_expect_eq(r.err, -EFAULT);
	/* the last bytes of the mapping, of each size, then one further */
	memcpy(page + ps - 8, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	for (unsigned int size = 1; size <= 8; size *= 2) {
		const long at[1] = { ps - (long)size };
		uint64_t want = 0;

		memcpy(&want, page + ps - size, size);
		r = ukprobes_fetch_nofault_value((uintptr_t)page, at, 1, size);
		cr_expect(r.err == 0 && r.val == want, "size %u", size);
		r = ukprobes_fetch_nofault_value((uintptr_t)page + 1, at, 1, size);
		cr_expect_eq(r.err, -EFAULT, "size %u", size);
	}
	cr_expect_eq(ukprobes_fetch_nofault_value((uintptr_t)&link, off2, 0, 8).err, -EINVAL);
	cr_expect_eq(ukprobes_fetch_nofault_value((uintptr_t)&link, off2, 2, 3).err, -EINVAL);
	munmap(page, (size_t)ps);
	expect_nofault_works("after the chains by value");
}

/* The other functions that may be called at any time, first thing. */
Test(nofault, other_entry_points_before_anything_else)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct pt_regs regs;
	void *cur = NULL;
	long word = 0;

	memset(&regs, 0, sizeof(regs));
	regs.sp = (unsigned long)bad_page;
	cr_expect_eq(regs_get_kernel_stack_nth(&regs, 3), 0);
	cr_expect_null(kprobe_running());
	cr_expect(kprobes_enabled());
	cr_expect_eq(kprobes_handler_faults(), 0);
	cr_expect(!is_kretprobe_trampoline(0));
	cr_expect(!is_kretprobe_trampoline((unsigned long)nf_opt));
	cr_expect_eq(kretprobe_find_ret_addr(0, &word, &cur), 0);
	cr_expect_eq(kprobes_show_list(f), 0);
	fflush(f);
	cr_expect_eq(len, 0, "no probe listed: %s", buf);
	cr_expect_eq(kprobes_show_blacklist(f), 0);
	fclose(f);
	cr_expect_gt(len, 0, "the blacklist is listed");
	free(buf);
	cr_expect_geq(ukprobes_optimizable((void *)nf_opt, NULL), 0);
	cr_expect_eq(ukprobes_wait_optimizer(), 0);
	expect_nofault_works("after the other entry points");
}

/* A thread that exists before the first registration; it reads before,
 * and after the main thread registered, hit and unregistered a probe,
 * without ever hitting one. */
static atomic_int phase;
static atomic_int thread_fails;

static void *early_thread(void *arg)
{
	(void)arg;
	atomic_fetch_or(&thread_fails, bad_reads());
	atomic_store(&phase, 1);
	while (atomic_load(&phase) != 2)
		usleep(1000);
	atomic_fetch_or(&thread_fails, bad_reads() << 4);
	return NULL;
}

static atomic_int pre_hits;
static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&pre_hits, 1);
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

Test(nofault, thread_created_before_the_library_started_never_hit)
{
	struct kprobe kp = { .symbol_name = "nf_bp", .pre_handler = count_pre,
			     .post_handler = count_post };
	pthread_t t;

	bad_page = unmapped();
	cr_assert_eq(pthread_create(&t, NULL, early_thread, NULL), 0);
	while (atomic_load(&phase) != 1)
		usleep(1000);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(nf_bp(1), 10);
	cr_expect_eq(atomic_load(&pre_hits), 1);
	unregister_kprobe(&kp);
	atomic_store(&phase, 2);
	pthread_join(t, NULL);
	cr_expect_eq(atomic_load(&thread_fails), 0, "failures %#x", atomic_load(&thread_fails));
}

static void *blocked_thread(void *arg)
{
	sigset_t s;

	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	return (void *)(intptr_t)bad_reads();
}

Test(nofault, new_thread_with_sigsegv_blocked)
{
	pthread_t t;
	void *r;

	bad_page = unmapped();
	cr_assert_eq(pthread_create(&t, NULL, blocked_thread, NULL), 0);
	pthread_join(t, &r);
	cr_expect_eq(r, NULL);
}

Test(nofault, after_every_probe_was_unregistered)
{
	struct kprobe a = { .symbol_name = "nf_bp", .pre_handler = count_pre,
			    .post_handler = count_post };
	struct kprobe b = { .symbol_name = "nf_opt", .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_expect_eq(nf_bp(1) + nf_opt(1), 18);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
	expect_nofault_works("after unregistering");
}

Test(nofault, with_kprobes_disabled)
{
	struct kprobe a = { .symbol_name = "nf_bp", .pre_handler = count_pre,
			    .post_handler = count_post };

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(kprobes_set_enabled(false), 0);
	expect_nofault_works("kprobes disabled");
	cr_assert_eq(kprobes_set_enabled(true), 0);
	unregister_kprobe(&a);
}

Test(nofault, in_a_forked_child)
{
	int status;
	pid_t pid;

	bad_page = unmapped();
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		sigset_t s;
		int f = bad_reads();

		sigemptyset(&s);
		sigaddset(&s, SIGSEGV);
		sigprocmask(SIG_BLOCK, &s, NULL);
		_exit(f | bad_reads() << 4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status), "the child died of signal %d", WTERMSIG(status));
	cr_expect_eq(WEXITSTATUS(status), 0);
}

/* The program's handler of an asynchronous signal, blocking every signal
 * while it runs (sa_mask from sigfillset). */
static volatile int handler_fails = -1;

static void usr1_reads(int sig)
{
	handler_fails = bad_reads();
}

Test(nofault, in_the_programs_signal_handler)
{
	struct sigaction sa;

	bad_page = unmapped();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_reads;
	sigfillset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	raise(SIGUSR1);
	cr_expect_eq(handler_fails, 0);
}

/* The program's own SIGSEGV handler, for a fault of the program's own
 * (SIGSEGV is blocked while it runs). */
static sigjmp_buf out;

static void segv_reads(int sig)
{
	handler_fails = bad_reads();
	siglongjmp(out, 1);
}

Test(nofault, in_the_programs_sigsegv_handler)
{
	struct sigaction sa;

	bad_page = unmapped();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = segv_reads;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	handler_fails = -1;
	if (sigsetjmp(out, 1) == 0)
		ukt_load_int(NULL);
	cr_expect_eq(handler_fails, 0);
	/* and again: the handler's exit restored the mask */
	handler_fails = -1;
	if (sigsetjmp(out, 1) == 0)
		ukt_load_int(bad_page);
	cr_expect_eq(handler_fails, 0);
}

/* Probe handlers, breakpoint and optimized, with the fault signals
 * blocked by the program (the optimized one runs in the thread's own
 * context, with the program's mask). */
static atomic_int probe_fails = -1;

static int reading_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_store(&probe_fails, bad_reads());
	return 0;
}

Test(nofault, from_within_probe_handlers)
{
	struct kprobe bp = { .symbol_name = "nf_bp", .pre_handler = reading_pre,
			     .post_handler = count_post };
	struct kprobe opt = { .symbol_name = "nf_opt", .pre_handler = reading_pre };

	bad_page = unmapped();
	cr_assert_eq(register_kprobe(&bp), 0);
	cr_assert_eq(register_kprobe(&opt), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&opt), "nf_opt should be optimized");
	cr_expect(!kprobe_optimized(&bp));
	block_faults(SIG_BLOCK);
	cr_expect_eq(nf_bp(1), 10);
	cr_expect_eq(atomic_exchange(&probe_fails, -1), 0, "breakpoint handler");
	cr_expect_eq(nf_opt(1), 8);
	cr_expect_eq(atomic_exchange(&probe_fails, -1), 0, "optimized handler");
	block_faults(SIG_UNBLOCK);
	cr_expect_eq(bp.nmissed + opt.nmissed, 0, "no handler fault was counted");
	cr_expect_eq(kprobes_handler_faults(), 0);
	unregister_kprobe(&bp);
	unregister_kprobe(&opt);
}
