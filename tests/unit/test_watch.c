/* SPDX-License-Identifier: MIT */
/*
 * Data watchpoints (the hw_breakpoint API) on real code: globals, heap
 * and stack data, 1..4096-byte ranges, reads and writes, two threads,
 * rep movs / libc's memcpy and memset (vector stores) / SSE and AVX
 * stores / atomics, neighbours on the same page, unregistration, the
 * program's own mprotect() and SIGSEGV handler, and read() into a
 * watched buffer. Every test but the debugreg ones forces page
 * protection (UKPROBES_WATCH=page, read once per process: each test runs
 * in its own); the debugreg ones use the debug registers when the machine
 * delivers their traps. The x86 instruction classes are in #if blocks;
 * test_a64_watch.c has AArch64's.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "ukprobes.h"
#include "ukp_test.h"
#include "watch/watch.h"

#define MAXREC 64

/* What the handler saw, per call. */
struct rec {
	unsigned long addr, len, ip, regs_ip;
	unsigned int type;
	long value; /* the watched long, read in the handler */
	struct perf_event *bp;
};
static struct rec recs[MAXREC];
static _Atomic int nrec;
static volatile long *value_at;

static void handler(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs)
{
	int i = atomic_fetch_add(&nrec, 1);

	if (i >= MAXREC)
		return;
	recs[i].addr = d->addr;
	recs[i].len = d->len;
	recs[i].type = d->type;
	recs[i].ip = d->ip;
	recs[i].regs_ip = instruction_pointer(regs);
	recs[i].bp = bp;
	recs[i].value = value_at ? *value_at : 0; /* counted missed: handler context */
}

static struct perf_event *watch(void *addr, unsigned long len, unsigned int type)
{
	struct perf_event_attr attr;
	struct perf_event *bp;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)addr;
	attr.bp_len = len;
	attr.bp_type = type;
	bp = register_user_hw_breakpoint(&attr, handler, NULL, 0);
	cr_assert(!IS_ERR(bp), "register: %ld", PTR_ERR(bp));
	return bp;
}

static struct perf_event **watch_wide(void *addr, unsigned long len, unsigned int type)
{
	struct perf_event_attr attr;
	struct perf_event **bp;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)addr;
	attr.bp_len = len;
	attr.bp_type = type;
	bp = register_wide_hw_breakpoint(&attr, handler, NULL);
	cr_assert(!IS_ERR(bp), "register wide: %ld", PTR_ERR(bp));
	return bp;
}

/* The protection of the page at addr, from /proc/self/maps. */
static int page_prot(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int prot = -1;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3 && (uintptr_t)addr >= lo &&
		    (uintptr_t)addr < hi) {
			prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0);
			break;
		}
	}
	if (f)
		fclose(f);
	return prot;
}

/* Page-aligned globals: the watched one, its neighbour on the same page. */
static struct {
	long counter;
	long pad[7];
	long neighbour;
	char buf[4096 - 9 * sizeof(long)];
} __attribute__((aligned(4096))) g;

static UKP_TARGET void store_counter(long v)
{
	g.counter = v;
}

static UKP_TARGET long load_counter(void)
{
	return g.counter;
}

/* Do this machine's debug registers fire? Counted by perf itself. */
static bool machine_has_debugregs(void)
{
	static volatile int var;
	struct perf_event_attr a;
	long long count = 0;
	int fd, i;

	hw_breakpoint_init(&a);
	a.bp_addr = (uintptr_t)&var;
	a.bp_len = HW_BREAKPOINT_LEN_4;
	a.bp_type = HW_BREAKPOINT_W;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return false;
	for (i = 0; i < 3; i++)
		var = i;
	if (read(fd, &count, sizeof(count)) != sizeof(count))
		count = 0;
	close(fd);
	return count == 3;
}

static void use_page(void)
{
	setenv("UKPROBES_WATCH", "page", 1);
}

TestSuite(watch, .init = use_page);

Test(watch_mech, detection_matches_the_machine)
{
	int m = ukprobes_watch_mechanism();

	cr_assert_eq(m, machine_has_debugregs() ? UKP_HW_BREAKPOINT_DEBUGREG
						: UKP_HW_BREAKPOINT_PAGE,
		     "mechanism %d", m);
}

Test(watch, forced_page)
{
	cr_assert_eq(ukprobes_watch_mechanism(), UKP_HW_BREAKPOINT_PAGE);
}

Test(watch, global_write_fires_after_the_access)
{
	struct perf_event *bp = watch(&g.counter, sizeof(g.counter), HW_BREAKPOINT_W);

	value_at = NULL;
	store_counter(42);
	cr_assert_eq(g.counter, 42);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].addr, (uintptr_t)&g.counter);
	cr_assert_eq(recs[0].len, 8);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
	cr_assert_eq(recs[0].bp, bp);
	/* ip of the store, regs->ip the next instruction, inside store_counter */
	cr_assert(recs[0].ip >= (uintptr_t)store_counter && recs[0].ip < (uintptr_t)store_counter + 64);
	cr_assert_gt(recs[0].regs_ip, recs[0].ip);
	cr_assert_lt(recs[0].regs_ip, recs[0].ip + 16);
	/* a read does not fire a write watchpoint, and works */
	cr_assert_eq(load_counter(), 42);
	cr_assert_eq(nrec, 1);
	unregister_hw_breakpoint(bp);
}

Test(watch, handler_sees_the_new_value)
{
	struct perf_event *bp = watch(&g.counter, sizeof(g.counter), HW_BREAKPOINT_W);

	/* the handler reads the watched long: that read is inside a handler
	 * (not reported, counted missed) and gives the new value */
	value_at = &g.counter;
	store_counter(7);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].value, 7);
	unregister_hw_breakpoint(bp);
}

Test(watch, reads_fire_read_watchpoints)
{
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_R);

	g.neighbour = 5;
	cr_assert_eq(nrec, 0);
	store_counter(3); /* a write: not reported on an R watchpoint */
	cr_assert_eq(nrec, 0);
	cr_assert_eq(load_counter(), 3);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_R);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(g.counter, 3);
}

/* Are the compiler's atomics one instruction (x86's locked ones,
 * AArch64's LSE), or a load-exclusive/store-exclusive loop? GCC's
 * outline atomics pick LSE when the CPU has it. */
static bool atomics_are_one_access(void)
{
#if defined(__aarch64__) && !defined(__ARM_FEATURE_ATOMICS)
	return getauxval(AT_HWCAP) & HWCAP_ATOMICS;
#else
	return true;
#endif
}

Test(watch, rw_and_atomics)
{
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_RW);
	long old;
	int i;

	g.counter = 10;                                      /* W */
	__atomic_fetch_add(&g.counter, 5, __ATOMIC_SEQ_CST); /* lock xadd: R+W */
	old = 15;
	cr_assert(__atomic_compare_exchange_n(&g.counter, &old, 20, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST)); /* lock cmpxchg */
	old = __atomic_exchange_n(&g.counter, 30, __ATOMIC_SEQ_CST); /* xchg */
	cr_assert_eq(old, 20);
	cr_assert_eq(g.counter, 30); /* R */
	if (atomics_are_one_access()) {
		cr_assert_eq(nrec, 5);
		cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
		cr_assert_eq(recs[1].type, HW_BREAKPOINT_RW);
		cr_assert_eq(recs[2].type, HW_BREAKPOINT_RW);
		cr_assert_eq(recs[3].type, HW_BREAKPOINT_RW);
		cr_assert_eq(recs[4].type, HW_BREAKPOINT_R);
	} else {
		/* each atomic a load-exclusive (R) and a store-exclusive (W)
		 * that succeeds at once: the load reserved the granule */
		cr_assert_eq(nrec, 8);
		cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
		for (i = 1; i < 7; i += 2) {
			cr_assert_eq(recs[i].type, HW_BREAKPOINT_R, "record %d", i);
			cr_assert_eq(recs[i + 1].type, HW_BREAKPOINT_W, "record %d", i + 1);
		}
		cr_assert_eq(recs[7].type, HW_BREAKPOINT_R);
	}
	unregister_hw_breakpoint(bp);
}

Test(watch, neighbour_on_the_page_works_without_firing)
{
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_RW);
	unsigned long before = ukp_watch_emulated;
	int i;

	volatile long *nb = &g.neighbour;

	for (i = 0; i < 100; i++)
		*nb += i; /* a read and a write each time */
	cr_assert_eq(g.neighbour, 4950);
	snprintf(g.buf, sizeof(g.buf), "neighbour %d", 123);
	cr_assert_str_eq(g.buf, "neighbour 123");
	cr_assert_eq(nrec, 0);
	/* every access went through the fault path: the page is protected */
	cr_assert_geq(ukp_watch_emulated - before, 200);
	cr_assert_eq(ukp_watch_inplace_steps, 0);
	unregister_hw_breakpoint(bp);
}

Test(watch, unregister_leaves_no_protection)
{
	int before = page_prot(&g);
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_RW);

	cr_assert_eq(before, PROT_READ | PROT_WRITE);
	cr_assert_eq(page_prot(&g), PROT_NONE);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(page_prot(&g), PROT_READ | PROT_WRITE);
	bp = watch(&g.counter, 8, HW_BREAKPOINT_W);
	cr_assert_eq(page_prot(&g), PROT_READ);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(page_prot(&g), PROT_READ | PROT_WRITE);
	/* and nothing fires any more */
	store_counter(1);
	cr_assert_eq(nrec, 0);
}

Test(watch, counted_missed_inside_a_handler)
{
	struct perf_event *bp = watch(&g.counter, sizeof(g.counter), HW_BREAKPOINT_RW);

	value_at = &g.counter; /* the handler reads it: missed, not reported */
	store_counter(9);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].value, 9);
	cr_assert_eq(bp->nmissed, 1);
	unregister_hw_breakpoint(bp);
}

static int kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	return (int)(*(volatile long *)&g.counter & 0); /* a read of watched data */
}

Test(watch, kprobe_handler_access_is_missed)
{
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_R);
	struct kprobe kp = { .addr = (kprobe_opcode_t *)load_counter, .pre_handler = kp_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(load_counter(), 0);
	/* the program's read fired; the handler's was missed */
	cr_assert_eq(nrec, 1);
	cr_assert_eq(bp->nmissed, 1);
	unregister_kprobe(&kp);
	unregister_hw_breakpoint(bp);
}

Test(watch, heap_data)
{
	long *p = malloc(64 * sizeof(long));
	long *q = malloc(16);
	struct perf_event *bp;
	int i;

	cr_assert(p && q);
	bp = watch(&p[10], sizeof(long), HW_BREAKPOINT_W);
	for (i = 0; i < 64; i++)
		((volatile long *)p)[i] = i; /* one hit: p[10] */
	free(q);                             /* malloc's own accesses nearby */
	q = malloc(32);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].addr, (uintptr_t)&p[10]);
	for (i = 0; i < 64; i++)
		cr_assert_eq(p[i], i);
	unregister_hw_breakpoint(bp);
	free(q);
	free(p);
}

static UKP_TARGET void fill_through(long *dst, int n)
{
	int i;

	for (i = 0; i < n; i++)
		((volatile long *)dst)[i] = i * 3;
}

static UKP_TARGET long sum_of(const long *a, int n)
{
	long s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += ((const volatile long *)a)[i];
	return s;
}

Test(watch, stack_data)
{
	/* The stack page of this frame gets protected: calls, pushes and
	 * returns on it are run by the library too. The SIGSEGV frames must
	 * then go to an alternate stack: the library gives this thread one. */
	long local[16];
	struct perf_event *bp;
	/* not on the stack: sigaltstack() writes it from the kernel, and a
	 * system call cannot write a watched page (see doc/watchpoints.md) */
	static stack_t ss;

	memset(local, 0, sizeof(local));
	/* (ASan gives every thread an alternate stack of its own) */
	cr_assert_eq(sigaltstack(NULL, &ss), 0);
	bp = watch(&local[4], 2 * sizeof(long), HW_BREAKPOINT_RW);
	cr_assert_eq(sigaltstack(NULL, &ss), 0);
	cr_assert_eq(ss.ss_flags & SS_DISABLE, 0, "no alternate signal stack");
	fill_through(local, 16);
	cr_assert_eq(sum_of(local, 16), 3 * 120);
	/* calls, pushes, pops, returns (and leave, in frame-pointer code)
	 * on the page were run for the program, never stepped in place */
	cr_assert_eq(ukp_watch_inplace_steps, 0);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(local[5], 15);
	/* two writes (local[4], local[5]) and two reads */
	cr_assert_eq(nrec, 4);
	cr_assert_eq(recs[0].addr, (uintptr_t)&local[4]);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
	cr_assert_eq(recs[1].addr, (uintptr_t)&local[5]);
	cr_assert_eq(recs[2].type, HW_BREAKPOINT_R);
}

/* A two-page anonymous mapping for range tests. */
static char *two_pages(void)
{
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(m, MAP_FAILED);
	return m;
}

Test(watch, ranges_from_1_to_4096_bytes)
{
	static const unsigned long lens[] = { 1, 2, 3, 7, 8, 100, 4095, 4096 };
	char *m = two_pages();
	unsigned int i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		/* start mid-page so that the long ones span both pages */
		volatile char *a = m + 1000;
		struct perf_event *bp = watch((void *)a, lens[i], HW_BREAKPOINT_W);

		nrec = 0;
		a[-1] = 1;           /* just before: nothing */
		a[lens[i]] = 2;      /* just after: nothing */
		cr_assert_eq(nrec, 0, "len %lu", lens[i]);
		a[0] = 3;            /* first byte */
		a[lens[i] - 1] = 4;  /* last byte */
		cr_assert_eq(nrec, lens[i] == 1 ? 2 : 2, "len %lu", lens[i]);
		cr_assert_eq(recs[0].addr, (uintptr_t)a);
		cr_assert_eq(recs[1].addr, (uintptr_t)&a[lens[i] - 1]);
		/* an 8-byte access that straddles the end fires too */
		nrec = 0;
		*(volatile long *)(a + lens[i] - 1) = 5;
		cr_assert_eq(nrec, 1, "len %lu", lens[i]);
		unregister_hw_breakpoint(bp);
		cr_assert_eq(a[lens[i] - 1], 5);
	}
	munmap(m, 8192);
}

static _Atomic long hits;

static void count_handler(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
}

#define NTHREAD_HITS 2000

static void *bump(void *arg)
{
	int i;

	for (i = 0; i < NTHREAD_HITS; i++)
		__atomic_fetch_add(&g.counter, 1, __ATOMIC_SEQ_CST);
	return arg;
}

Test(watch, two_threads_wide)
{
	struct perf_event_attr attr;
	struct perf_event **bp;
	pthread_t t1, t2;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)&g.counter;
	attr.bp_len = 8;
	attr.bp_type = HW_BREAKPOINT_W;
	bp = register_wide_hw_breakpoint(&attr, count_handler, NULL);
	cr_assert(!IS_ERR(bp));
	cr_assert_eq(bp[0]->tid, 0);
	/* threads created after registration are watched too */
	pthread_create(&t1, NULL, bump, NULL);
	pthread_create(&t2, NULL, bump, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	/* the locked increments stayed atomic, and every one fired */
	cr_assert_eq(g.counter, 2 * NTHREAD_HITS);
	cr_assert_eq(hits, 2 * NTHREAD_HITS);
	unregister_wide_hw_breakpoint(bp);
}

static void *bump_neighbour(void *arg)
{
	int i;

	for (i = 0; i < NTHREAD_HITS; i++)
		__atomic_fetch_add(&g.neighbour, 1, __ATOMIC_SEQ_CST);
	return arg;
}

Test(watch, one_thread_only)
{
	struct perf_event_attr attr;
	struct perf_event *bp;
	pthread_t t;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)&g.counter;
	attr.bp_len = 8;
	attr.bp_type = HW_BREAKPOINT_W;
	bp = register_user_hw_breakpoint(&attr, count_handler, NULL, 0);
	cr_assert(!IS_ERR(bp));
	cr_assert_eq(bp->tid, (int)gettid());
	/* another thread's writes work and do not fire; a neighbour thread
	 * hammers the same page meanwhile */
	pthread_create(&t, NULL, bump, NULL);
	bump_neighbour(NULL);
	pthread_join(t, NULL);
	cr_assert_eq(hits, 0);
	cr_assert_eq(g.counter, NTHREAD_HITS);
	cr_assert_eq(g.neighbour, NTHREAD_HITS);
	store_counter(1);
	cr_assert_eq(hits, 1);
	unregister_hw_breakpoint(bp);
}

Test(watch, rep_movs_memcpy_memset_and_vector_stores)
{
	char *m = two_pages();
	char src[4096];
	struct perf_event *bp;
	size_t n = 256;
	int i;

	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (char)(i * 7);
	bp = watch(m + 2048 + 100, 8, HW_BREAKPOINT_RW);
#if defined(__x86_64__)
	{
		void *d = m + 2048, *s = src;

		/* rep movsb */
		__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
		cr_assert_eq(nrec, 1);
		cr_assert_eq(recs[0].addr, (uintptr_t)m + 2048);
		cr_assert_eq(recs[0].len, 256);
		cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
		cr_assert_eq(memcmp(m + 2048, src, 256), 0);
	}
#endif
	/* libc's memcpy and memset (vector or rep stores, whichever it picks):
	 * writes only, then the checks' reads */
	nrec = 0;
	memcpy(m + 1024, src, 3000);
	n = (size_t)nrec;
	cr_assert_geq(n, 1);
	for (i = 0; i < (int)n; i++)
		cr_assert_eq(recs[i].type, HW_BREAKPOINT_W);
	cr_assert_eq(memcmp(m + 1024, src, 3000), 0);
	nrec = 0;
	memset(m, 0x5a, 8192);
	n = (size_t)nrec;
	cr_assert_geq(n, 1);
	for (i = 0; i < (int)n; i++)
		cr_assert_eq(recs[i].type, HW_BREAKPOINT_W);
	for (i = 0; i < 8192; i++)
		cr_assert_eq((unsigned char)m[i], 0x5a);
#if defined(__x86_64__)
	/* a 16-byte SSE store and a 32-byte AVX store over the range */
	nrec = 0;
	{
		__m128i x = _mm_set1_epi8(0x11);

		__asm__ volatile("movdqu %1, (%0)" : : "r"(m + 2048 + 96), "x"(x) : "memory");
		cr_assert_eq(nrec, 1);
		cr_assert_eq(recs[0].len, 16);
		cr_assert_eq(m[2048 + 100], 0x11);
		nrec = 0;
		if (__builtin_cpu_supports("avx")) {
			__asm__ volatile("vpcmpeqb %%ymm1, %%ymm1, %%ymm1\n\t"
					 "vmovdqu %%ymm1, (%0)\n\t"
					 "vzeroupper" : : "r"(m + 2048 + 90) : "xmm1", "memory");
			cr_assert_eq(nrec, 1);
			cr_assert_eq(recs[0].len, 32);
			cr_assert_eq((unsigned char)m[2048 + 121], 0xff);
			cr_assert_eq((unsigned char)m[2048 + 122], 0x5a);
		}
		/* a vector load into a live register of the program */
		{
			__m128i y;

			nrec = 0;
			__asm__ volatile("movdqu (%1), %0" : "=x"(y) : "r"(m + 2048 + 112) : "memory");
			cr_assert_eq(nrec, 0); /* 112..127: outside the range */
			__asm__ volatile("movdqu (%1), %0" : "=x"(y) : "r"(m + 2048 + 96) : "memory");
			cr_assert_eq(nrec, 1);
			cr_assert_eq(recs[0].type, HW_BREAKPOINT_R);
			/* the AVX store (if any) wrote 0xff over 90..121 */
			cr_assert_eq(_mm_extract_epi16(y, 7),
				     __builtin_cpu_supports("avx") ? 0xffff : 0x1111);
		}
	}
#endif
	unregister_hw_breakpoint(bp);
	cr_assert_eq(ukp_watch_inplace_steps, 0);
	munmap(m, 8192);
}

static sigjmp_buf jb;
static volatile int segv_seen;
static volatile uintptr_t segv_addr;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	segv_seen++;
	segv_addr = (uintptr_t)si->si_addr;
	siglongjmp(jb, 1);
}

Test(watch, programs_mprotect_and_sigsegv_handler)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	char *m = two_pages();
	struct perf_event *bp;

	sigaction(SIGSEGV, &sa, NULL);
	bp = watch(m + 64, 8, HW_BREAKPOINT_RW);
	/* the program makes the page read-only: its reads work (and fire),
	 * its writes reach its own handler */
	cr_assert_eq(mprotect(m, 4096, PROT_READ), 0);
	cr_assert_eq(page_prot(m), PROT_NONE);
	cr_assert_eq(((volatile char *)m)[64], 0);
	cr_assert_eq(nrec, 1);
	if (!sigsetjmp(jb, 1))
		((volatile char *)m)[64] = 1;
	cr_assert_eq(segv_seen, 1);
	cr_assert_eq(segv_addr, (uintptr_t)m + 64);
	if (!sigsetjmp(jb, 1))
		((volatile char *)m)[200] = 1; /* a neighbour too */
	cr_assert_eq(segv_seen, 2);
	cr_assert_eq(nrec, 1);
	/* and an unmapped address still reaches it */
	if (!sigsetjmp(jb, 1))
		ukt_load_int((void *)16);
	cr_assert_eq(segv_seen, 3);
	/* writable again */
	cr_assert_eq(mprotect(m, 8192, PROT_READ | PROT_WRITE), 0);
	((volatile char *)m)[64] = 2;
	cr_assert_eq(nrec, 2);
	/* after unregistration the page has what the program asked for last */
	cr_assert_eq(mprotect(m, 4096, PROT_READ), 0);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(page_prot(m), PROT_READ);
	cr_assert_eq(page_prot(m + 4096), PROT_READ | PROT_WRITE);
	munmap(m, 8192);
}

Test(watch, read_syscall_into_a_watched_buffer)
{
	char *m = two_pages();
	struct perf_event *bp;
	int fds[2];

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
	/* clang links ASan's own read/write interceptors into the program,
	 * in front of the library's: they call libc directly */
	cr_skip_test("ASan's read() interceptor shadows the library's");
#endif
#endif
	cr_assert_eq(pipe(fds), 0);
	bp = watch(m + 100, 4, HW_BREAKPOINT_RW);
	cr_assert_eq(write(fds[1], "hello, watch", 12), 12);
	/* read() into the watched page: works (no EFAULT) and fires */
	ssize_t got = read(fds[0], m + 98, 12);

	cr_assert_eq(got, 12, "read: %zd %s", got, strerror(errno));
	cr_assert_eq(memcmp(m + 98, "hello, watch", 12), 0);
	cr_assert_eq(nrec, 2); /* the memcmp read fired too */
	cr_assert_eq(recs[0].addr, (uintptr_t)m + 98);
	cr_assert_eq(recs[0].len, 12);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
	/* write() from it: a read of it */
	nrec = 0;
	cr_assert_eq(write(fds[1], m + 98, 12), 12);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_R);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(read(fds[0], m + 200, 12), 12);
	cr_assert_eq(memcmp(m + 200, "hello, watch", 12), 0);
	munmap(m, 8192);
}

Test(watch, zlib_output_buffer)
{
	/* zlib's deflate writes its output through its own code and libc's
	 * memcpy; the watched bytes of the output fire, the result is
	 * byte-for-byte what it is without the watchpoint */
	static unsigned char in[65536], out1[70000], out2[70000];
	uLongf n1 = sizeof(out1), n2 = sizeof(out2);
	unsigned char *w;
	struct perf_event *bp;
	size_t i;

#if defined(__aarch64__)
	/* libc's memcpy is SVE code on an SVE CPU, and qemu-user 7.2 aborts
	 * after a fault in an SVE access (tests/unit/test_a64_watch.c) */
	if ((getauxval(AT_HWCAP) & HWCAP_SVE) && getenv("UKP_QEMU_USER"))
		cr_skip_test("qemu-user aborts after a fault in an SVE access");
#endif
	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)((i * 2654435761u) >> 24) & 0x3f;
	cr_assert_eq(compress2(out1, &n1, in, sizeof(in), 6), Z_OK);
	w = out2 + 1000;
	bp = register_user_hw_breakpoint(&(struct perf_event_attr){ .type = PERF_TYPE_BREAKPOINT,
		.size = sizeof(struct perf_event_attr), .bp_addr = (uintptr_t)w, .bp_len = 64,
		.bp_type = HW_BREAKPOINT_W }, count_handler, NULL, 0);
	cr_assert(!IS_ERR(bp));
	cr_assert_eq(compress2(out2, &n2, in, sizeof(in), 6), Z_OK);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(out1, out2, n1), 0);
	cr_assert_geq(hits, 1);
}

Test(watch, listed_and_modified)
{
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_W);
	struct perf_event_attr a = bp->attr;
	char *text = NULL, want[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	kprobes_show_list(f);
	fclose(f);
	snprintf(want, sizeof(want), "%016lx  w  8  w  [PAGE] [TID %d]\n", (unsigned long)&g.counter,
		 (int)gettid());
	cr_assert(strstr(text, want), "list: %s", text);
	free(text);
	/* move it to the neighbour, as reads and writes */
	a.bp_addr = (uintptr_t)&g.neighbour;
	a.bp_type = HW_BREAKPOINT_RW;
	cr_assert_eq(modify_user_hw_breakpoint(bp, &a), 0);
	store_counter(1);
	cr_assert_eq(nrec, 0);
	g.neighbour = 2;
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].addr, (uintptr_t)&g.neighbour);
	/* disabled: nothing, and no protection */
	a.disabled = 1;
	cr_assert_eq(modify_user_hw_breakpoint(bp, &a), 0);
	cr_assert_eq(page_prot(&g), PROT_READ | PROT_WRITE);
	g.neighbour = 3;
	cr_assert_eq(nrec, 1);
	unregister_hw_breakpoint(bp);
}

Test(watch, errors)
{
	struct perf_event_attr a;
	char *m = two_pages();

	hw_breakpoint_init(&a);
	a.bp_addr = (uintptr_t)&g.counter;
	a.bp_len = 8;
	a.bp_type = HW_BREAKPOINT_X;
	cr_assert_eq(PTR_ERR(register_user_hw_breakpoint(&a, handler, NULL, 0)), -EINVAL);
	a.bp_type = HW_BREAKPOINT_W;
	a.bp_len = 0;
	cr_assert_eq(PTR_ERR(register_user_hw_breakpoint(&a, handler, NULL, 0)), -EINVAL);
	a.bp_len = 8;
	a.type = PERF_TYPE_HARDWARE;
	cr_assert_eq(PTR_ERR(register_user_hw_breakpoint(&a, handler, NULL, 0)), -EINVAL);
	a.type = PERF_TYPE_BREAKPOINT;
	cr_assert_eq(PTR_ERR(register_user_hw_breakpoint(&a, handler, NULL, 999999999)), -ESRCH);
	/* code */
	a.bp_addr = (uintptr_t)store_counter;
	cr_assert_eq(PTR_ERR(register_user_hw_breakpoint(&a, handler, NULL, 0)), -EINVAL);
	/* unmapped */
	munmap(m + 4096, 4096);
	a.bp_addr = (uintptr_t)m + 4090;
	a.bp_len = 16;
	cr_assert_eq(PTR_ERR(register_user_hw_breakpoint(&a, handler, NULL, 0)), -EFAULT);
	/* nothing was left protected */
	cr_assert_eq(page_prot(m), PROT_READ | PROT_WRITE);
	munmap(m, 4096);
}

Test(watch_mech, debug_registers)
{
	struct perf_event *bp;

	if (!machine_has_debugregs())
		cr_skip_test("this machine's debug registers do not fire");
	bp = watch(&g.counter, 8, HW_BREAKPOINT_W);
	cr_assert_eq(bp->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
	store_counter(5);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].bp, bp);
	cr_assert(recs[0].regs_ip > (uintptr_t)store_counter &&
		  recs[0].regs_ip < (uintptr_t)store_counter + 64);
	cr_assert_eq(load_counter(), 5);
	cr_assert_eq(nrec, 1);
	unregister_hw_breakpoint(bp);
	store_counter(6);
	cr_assert_eq(nrec, 1);
}

Test(watch_mech, debug_registers_wide_two_threads)
{
	struct perf_event_attr attr;
	struct perf_event **bp;
	pthread_t t1, t2;

	if (!machine_has_debugregs())
		cr_skip_test("this machine's debug registers do not fire");
	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)&g.counter;
	attr.bp_len = 8;
	attr.bp_type = HW_BREAKPOINT_W;
	bp = register_wide_hw_breakpoint(&attr, count_handler, NULL);
	cr_assert(!IS_ERR(bp));
	cr_assert_eq(bp[0]->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
	pthread_create(&t1, NULL, bump, NULL);
	pthread_create(&t2, NULL, bump, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	cr_assert_eq(g.counter, 2 * NTHREAD_HITS);
	cr_assert_eq(hits, 2 * NTHREAD_HITS);
	unregister_wide_hw_breakpoint(bp);
}

Test(watch_mech, beyond_the_hardware_falls_back_to_pages)
{
	struct perf_event *bp;

	if (!machine_has_debugregs())
		cr_skip_test("this machine's debug registers do not fire");
	/* 100 bytes, or reads only: no debug register can do it */
	bp = watch(g.buf, 100, HW_BREAKPOINT_W);
	cr_assert_eq(bp->mechanism, UKP_HW_BREAKPOINT_PAGE);
	g.buf[99] = 1;
	cr_assert_eq(nrec, 1);
	unregister_hw_breakpoint(bp);
	bp = watch(&g.counter, 8, HW_BREAKPOINT_R);
	cr_assert_eq(bp->mechanism, UKP_HW_BREAKPOINT_PAGE);
	unregister_hw_breakpoint(bp);
}

#if defined(__x86_64__)
Test(watch, stepped_in_place_when_it_cannot_be_run_on_a_copy)
{
	/* An instruction that names rsp, and repe cmpsb: run in place with
	 * the page opened for that one instruction (trap flag) */
	char *m = two_pages();
	struct perf_event *bp = watch(m + 512, 64, HW_BREAKPOINT_RW);
	unsigned long steps = ukp_watch_inplace_steps;
	uintptr_t sp;
	char other[64];
	void *a = m + 512, *b = other;
	size_t n = 64;
	unsigned char eq;

	__asm__ volatile("movq %%rsp, (%1)\n\tmovq %%rsp, %0" : "=r"(sp) : "r"(m + 520) : "memory");
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
	cr_assert_eq(recs[0].addr, (uintptr_t)m + 520);
	cr_assert_eq(*(uintptr_t *)(m + 520), sp);
	cr_assert_gt(ukp_watch_inplace_steps, steps);
	/* leave with its frame on the page: run for the program (a read of
	 * the saved rbp), not stepped */
	{
		unsigned long before = ukp_watch_inplace_steps, got_bp, got_sp;

		*(unsigned long *)(m + 560) = 0x1234;
		nrec = 0;
		__asm__ volatile("movq %%rsp, %%r12\n\t"
				 "movq %%rbp, %%r13\n\t"
				 "movq %2, %%rbp\n\t"
				 "leave\n\t"
				 "movq %%rbp, %0\n\t"
				 "movq %%rsp, %1\n\t"
				 "movq %%r12, %%rsp\n\t"
				 "movq %%r13, %%rbp"
				 : "=r"(got_bp), "=r"(got_sp) : "r"(m + 560) : "r12", "r13", "memory");
		cr_assert_eq(got_bp, 0x1234);
		cr_assert_eq(got_sp, (uintptr_t)m + 568);
		cr_assert_eq(nrec, 1);
		cr_assert_eq(recs[0].type, HW_BREAKPOINT_R);
		cr_assert_eq(recs[0].addr, (uintptr_t)m + 560);
		cr_assert_eq(ukp_watch_inplace_steps, before);
	}
	memset(m + 512, 7, 64);
	memset(other, 7, 64);
	other[40] = 8;
	nrec = 0;
	__asm__ volatile("repe cmpsb\n\tsete %0" : "=r"(eq), "+S"(a), "+D"(b), "+c"(n) : : "memory", "cc");
	cr_assert_eq(eq, 0);
	cr_assert_eq((char *)a, m + 512 + 41);
	cr_assert_eq(n, 64 - 41);
	cr_assert_geq(nrec, 1);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_R);
	unregister_hw_breakpoint(bp);
	cr_assert_eq(page_prot(m), PROT_READ | PROT_WRITE);
	munmap(m, 8192);
}
#endif

static long nofault_seen;

static void nofault_handler(struct perf_event *bp, struct perf_sample_data *d,
			    struct pt_regs *regs)
{
	long v = -1;

	if (copy_from_user_nofault(&v, (void *)d->addr, sizeof(v)) == 0)
		nofault_seen = v;
}

Test(watch, copy_from_user_nofault_reads_watched_data)
{
	struct perf_event_attr a;
	struct perf_event *bp;

	hw_breakpoint_init(&a);
	a.bp_addr = (uintptr_t)&g.counter;
	a.bp_len = 8;
	a.bp_type = HW_BREAKPOINT_RW;
	bp = register_user_hw_breakpoint(&a, nofault_handler, NULL, 0);
	cr_assert(!IS_ERR(bp));
	store_counter(77);
	cr_assert_eq(nofault_seen, 77);
	/* the handler's read was missed, not reported */
	cr_assert_eq(bp->nmissed, 1);
	unregister_hw_breakpoint(bp);
}

Test(watch_mech, debug_register_and_page_on_one_page)
{
	/* the page breakpoint's page protection makes the library run the
	 * store: the debug register never sees it, so the library reports
	 * it for the debug-register breakpoint too, once */
	struct perf_event *hw, *pg;

	if (!machine_has_debugregs())
		cr_skip_test("this machine's debug registers do not fire");
	hw = watch(&g.counter, 8, HW_BREAKPOINT_W);
	pg = watch(&g.neighbour, 8, HW_BREAKPOINT_R);
	cr_assert_eq(hw->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
	cr_assert_eq(pg->mechanism, UKP_HW_BREAKPOINT_PAGE);
	store_counter(8);
	cr_assert_eq(nrec, 1);
	cr_assert_eq(recs[0].bp, hw);
	cr_assert_eq(load_counter(), 8);
	cr_assert_eq(nrec, 1);
	unregister_hw_breakpoint(pg);
	store_counter(9);
	cr_assert_eq(nrec, 2);
	cr_assert_eq(recs[1].bp, hw);
	unregister_hw_breakpoint(hw);
}

/* Descriptors of this process open on a /proc/PID/mem file. */
static int mem_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], link[256];
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		n += !strncmp(link, "/proc/", 6) && k > 4 && !strcmp(link + k - 4, "/mem");
	}
	closedir(d);
	return n;
}

Test(watch, fork_child_keeps_its_watchpoints)
{
	/* a wide breakpoint fires in a forked child too (as kprobes do); a
	 * user one stays with its thread, which the child is not (the
	 * kernel does not inherit it either) */
	struct perf_event **wide = watch_wide(&g.counter, 8, HW_BREAKPOINT_W);
	struct perf_event *user = watch(&g.neighbour, 8, HW_BREAKPOINT_W);
	int status;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* the child's own memory, through its own /proc/self/mem */
		store_counter(11);
		g.neighbour = 12;
		/* and the parent's descriptor it inherited is closed */
		_exit(nrec == 1 && recs[0].bp == wide[0] && g.counter == 11 && g.neighbour == 12 &&
				      mem_fds() == 1
			      ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	/* the parent's memory was not touched by the child */
	cr_assert_eq(g.counter, 0);
	cr_assert_eq(g.neighbour, 0);
	cr_assert_eq(nrec, 0);
	store_counter(13);
	g.neighbour = 14;
	cr_assert_eq(nrec, 2);
	unregister_wide_hw_breakpoint(wide);
	unregister_hw_breakpoint(user);
}

static void *blocked_bump(void *arg)
{
	sigset_t all;

	/* a thread that blocks every signal, as thread pools do */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	return bump(arg);
}

static void on_usr1(int sig)
{
	store_counter(99); /* watched data from a handler that blocks everything */
}

Test(watch, threads_and_handlers_that_block_every_signal)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct perf_event **bp = watch_wide(&g.counter, 8, HW_BREAKPOINT_W);
	pthread_t t;

	pthread_create(&t, NULL, blocked_bump, NULL);
	pthread_join(t, NULL);
	cr_assert_eq(g.counter, NTHREAD_HITS);
	cr_assert_eq(nrec, NTHREAD_HITS); /* counted past the records kept */
	sigfillset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	nrec = 0;
	raise(SIGUSR1);
	cr_assert_eq(g.counter, 99);
	cr_assert_eq(nrec, 1);
	unregister_wide_hw_breakpoint(bp);
}

/* ------------------------------------ several breakpoints on one global */

/* Each breakpoint counts its own hits (its context is its counter). */
static void count_own(struct perf_event *bp, struct perf_sample_data *d, struct pt_regs *regs)
{
	(void)d;
	(void)regs;
	atomic_fetch_add((_Atomic int *)bp->overflow_handler_context, 1);
}

static struct perf_event *watch_counted(void *addr, unsigned long len, unsigned int type,
					_Atomic int *count, bool wide)
{
	struct perf_event_attr attr;
	struct perf_event *bp;

	hw_breakpoint_init(&attr);
	attr.bp_addr = (uintptr_t)addr;
	attr.bp_len = len;
	attr.bp_type = type;
	if (wide) {
		struct perf_event **w = register_wide_hw_breakpoint(&attr, count_own, count);

		cr_assert(!IS_ERR(w), "register wide: %ld", PTR_ERR(w));
		bp = w[0];
	} else {
		bp = register_user_hw_breakpoint(&attr, count_own, count, 0);
		cr_assert(!IS_ERR(bp), "register: %ld", PTR_ERR(bp));
	}
	return bp;
}

/* a 4-byte store to the lower half of g.counter */
static UKP_TARGET void store_counter_low(int v)
{
#if defined(__x86_64__)
	__asm__ volatile("movl %1, (%0)" : : "r"(&g.counter), "r"(v) : "memory");
#else
	__asm__ volatile("str %w1, [%0]" : : "r"(&g.counter), "r"(v) : "memory");
#endif
}

/* Two, three and four breakpoints on g.counter: identical ranges (one
 * thread and every thread) and one on its upper half; every access fires
 * every breakpoint it touches, exactly once each, whatever mechanism
 * each got and in whatever order they go away. */
static void several_on_one_global(bool debugreg)
{
	static _Atomic int c[4];
	struct perf_event *bp[4];
	int i;

	for (i = 0; i < 4; i++)
		c[i] = 0;
	bp[0] = watch_counted(&g.counter, 8, HW_BREAKPOINT_W, &c[0], false);
	bp[1] = watch_counted(&g.counter, 8, HW_BREAKPOINT_W, &c[1], false);
	if (debugreg) {
		cr_assert_eq(bp[0]->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
		cr_assert_eq(bp[1]->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
	}
	for (i = 0; i < 3; i++)
		store_counter(100 + i);
	cr_assert_eq(g.counter, 102);
	cr_assert_eq(c[0], 3, "first: %d", c[0]);
	cr_assert_eq(c[1], 3, "second: %d", c[1]);
	cr_assert_eq(load_counter(), 102);
	cr_assert_eq(c[0] + c[1], 6);
	/* the first goes (its debug register stays with the second) and
	 * comes back */
	unregister_hw_breakpoint(bp[0]);
	store_counter(150);
	cr_assert_eq(c[0], 3);
	cr_assert_eq(c[1], 4, "second: %d", c[1]);
	bp[0] = watch_counted(&g.counter, 8, HW_BREAKPOINT_W, &c[0], false);
	if (debugreg)
		cr_assert_eq(bp[0]->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
	store_counter(160);
	cr_assert_eq(c[0], 4, "first: %d", c[0]);
	cr_assert_eq(c[1], 5, "second: %d", c[1]);

	bp[2] = watch_counted(&g.counter, 8, HW_BREAKPOINT_RW, &c[2], true);
	if (debugreg) /* not the same thread set and type: its own trap would clash */
		cr_assert_eq(bp[2]->mechanism, UKP_HW_BREAKPOINT_PAGE);
	for (i = 0; i < 2; i++)
		store_counter(200 + i);
	cr_assert_eq(load_counter(), 201);
	cr_assert_eq(c[0], 6, "first: %d", c[0]);
	cr_assert_eq(c[1], 7, "second: %d", c[1]);
	cr_assert_eq(c[2], 3, "third (rw, wide): %d", c[2]);

	/* the upper half only: a store to the lower half does not touch it */
	bp[3] = watch_counted((char *)&g.counter + 4, 4, HW_BREAKPOINT_W, &c[3], false);
	if (debugreg)
		cr_assert_eq(bp[3]->mechanism, UKP_HW_BREAKPOINT_PAGE);
	store_counter(300);
	store_counter_low(7);
	cr_assert_eq(c[0], 8, "first: %d", c[0]);
	cr_assert_eq(c[1], 9, "second: %d", c[1]);
	cr_assert_eq(c[2], 5, "third (rw, wide): %d", c[2]);
	cr_assert_eq(c[3], 1, "fourth (upper half): %d", c[3]);

	/* the first one goes: the others keep their hits */
	unregister_hw_breakpoint(bp[0]);
	store_counter(400);
	cr_assert_eq(c[0], 8);
	cr_assert_eq(c[1], 10, "second: %d", c[1]);
	cr_assert_eq(c[2], 6, "third (rw, wide): %d", c[2]);
	cr_assert_eq(c[3], 2, "fourth (upper half): %d", c[3]);
	unregister_hw_breakpoint(bp[2]);
	store_counter(500);
	cr_assert_eq(c[1], 11, "second: %d", c[1]);
	cr_assert_eq(c[2], 6);
	cr_assert_eq(c[3], 3, "fourth (upper half): %d", c[3]);
	unregister_hw_breakpoint(bp[1]);
	unregister_hw_breakpoint(bp[3]);
	store_counter(600);
	cr_assert_eq(c[0] + c[1] + c[2] + c[3], 8 + 11 + 6 + 3);
	cr_assert_eq(g.counter, 600);
}

Test(watch, several_breakpoints_on_one_global)
{
	several_on_one_global(false);
}

Test(watch_mech, several_breakpoints_on_one_global)
{
	if (!machine_has_debugregs())
		cr_skip_test("this machine's debug registers do not fire");
	several_on_one_global(true);
}

#if defined(__x86_64__)
Test(watch_mech, debug_register_and_page_on_the_same_bytes_stepped_in_place)
{
	/* a page breakpoint on reads of the same long: a store that cannot
	 * run on a copy is stepped in place, and the debug register sees
	 * it; a store run for the program is reported by the library;
	 * either way each breakpoint counts each access it covers once */
	static _Atomic int chw, cpg;
	struct perf_event *hw, *pg;
	unsigned long steps;
	int i;

	if (!machine_has_debugregs())
		cr_skip_test("this machine's debug registers do not fire");
	chw = cpg = 0;
	hw = watch_counted(&g.counter, 8, HW_BREAKPOINT_W, &chw, true);
	pg = watch_counted(&g.counter, 8, HW_BREAKPOINT_R, &cpg, false);
	cr_assert_eq(hw->mechanism, UKP_HW_BREAKPOINT_DEBUGREG);
	cr_assert_eq(pg->mechanism, UKP_HW_BREAKPOINT_PAGE);
	steps = ukp_watch_inplace_steps;
	for (i = 0; i < 3; i++)
		__asm__ volatile("movq %%rsp, (%0)" : : "r"(&g.counter) : "memory");
	cr_assert_eq(ukp_watch_inplace_steps, steps + 3);
	cr_assert_eq(chw, 3, "debug register: %d", chw);
	cr_assert_eq(cpg, 0, "page (reads): %d", cpg);
	store_counter(1);
	cr_assert_eq(load_counter(), 1);
	cr_assert_eq(chw, 4, "debug register: %d", chw);
	cr_assert_eq(cpg, 1, "page (reads): %d", cpg);
	unregister_hw_breakpoint(pg);
	unregister_hw_breakpoint(hw);
}
#endif
