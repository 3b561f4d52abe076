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
 * delivers their traps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "ukprobes.h"
#include "ukp_test.h"
#include "watch.h"

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
	recs[i].regs_ip = regs->ip;
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

Test(watch, rw_and_atomics)
{
	struct perf_event *bp = watch(&g.counter, 8, HW_BREAKPOINT_RW);
	long old;

	g.counter = 10;                                      /* W */
	__atomic_fetch_add(&g.counter, 5, __ATOMIC_SEQ_CST); /* lock xadd: R+W */
	old = 15;
	cr_assert(__atomic_compare_exchange_n(&g.counter, &old, 20, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST)); /* lock cmpxchg */
	old = __atomic_exchange_n(&g.counter, 30, __ATOMIC_SEQ_CST); /* xchg */
	cr_assert_eq(old, 20);
	cr_assert_eq(g.counter, 30); /* R */
	cr_assert_eq(nrec, 5);
	cr_assert_eq(recs[0].type, HW_BREAKPOINT_W);
	cr_assert_eq(recs[1].type, HW_BREAKPOINT_RW);
	cr_assert_eq(recs[2].type, HW_BREAKPOINT_RW);
	cr_assert_eq(recs[3].type, HW_BREAKPOINT_RW);
	cr_assert_eq(recs[4].type, HW_BREAKPOINT_R);
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
