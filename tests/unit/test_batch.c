// SPDX-License-Identifier: MIT
/*
 * test_batch.c - register_kprobes() as one batch: thousands of probes on
 * every instruction boundary of libz.so.1's functions, registered and
 * unregistered in one call each while other threads run zlib's crc32
 * and adler32 all the time (short buffers: with every instruction a
 * breakpoint, each call traps a few hundred times).
 *
 *  - the threads' results never change (a thread that runs into a site
 *    while the batch writes it still computes the right thing);
 *  - once registered, the entry probes of crc32 and adler32 count
 *    exactly the calls the threads make;
 *  - after unregister_kprobes() the text is back byte for byte;
 *  - all or nothing: a batch whose last probe is refused leaves the
 *    text as it was and nothing counts.
 *
 * register_kretprobes() as one batch too: a return probe on every entry
 * of libz.so.1 and libsqlite3.so.0 while threads run crc32, adler32 and
 * SQL queries:
 *  - no probe of the batch is hit before every one of them is registered
 *    (their breakpoints go in together), the threads' results never
 *    change, entries and returns match, and crc32's and adler32's
 *    returns count exactly the calls made after it returned;
 *  - one bad probe in the middle: nothing was ever hit, none is left
 *    registered (no holder left), the text is back byte for byte;
 *  - a batch of return probes on the entries plain kprobes hold already:
 *    both count every call, and each goes without the other; refused
 *    there (its probes live at once on armed sites), it leaves no return
 *    probe and no holder behind.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <zlib.h>
#include <Zydis/Zydis.h>

#include "ukprobes.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "core/kretprobes.h"
#include "symbols/symbols.h"

#define NTHREADS 2

struct fn {
	uintptr_t start;
	size_t size;
};

static struct fn fns[4096];
static size_t nfns;
static uintptr_t crc_at, adler_at;

static void collect(const struct ukp_symres *sym, void *arg)
{
	(void)arg;
	if (!sym->size || !sym->func || nfns == sizeof(fns) / sizeof(fns[0]))
		return;
	for (size_t i = 0; i < nfns; i++)
		if (fns[i].start == sym->start)
			return;
	fns[nfns++] = (struct fn){ sym->start, sym->size };
	if (sym->name && !strcmp(sym->name, "crc32"))
		crc_at = sym->start;
	if (sym->name && !strcmp(sym->name, "adler32"))
		adler_at = sym->start;
}

static struct kprobe *kps;
static struct kprobe **kpp;
static size_t nkps;
static _Atomic unsigned long *hits;

static int on_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)regs;
	atomic_fetch_add_explicit(&hits[p - kps], 1, memory_order_relaxed);
	return 0;
}

/* Every instruction boundary of every function of libz (entries too). */
static void make_probes(void)
{
	ZydisDecoder dec;
	size_t cap = 0;

	cr_assert(zlibVersion()[0]);
	cr_assert_eq(ukp_lock_for_show(), 0);
	ukp_for_each_symbol("libz.so.1", collect, NULL);
	ukp_unlock_for_show();
	cr_assert(nfns > 50 && crc_at && adler_at, "libz functions: %zu", nfns);
	cr_assert(ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
						ZYDIS_STACK_WIDTH_64)));
	for (size_t f = 0; f < nfns; f++)
		cap += fns[f].size;
	kps = calloc(cap, sizeof(*kps));
	hits = calloc(cap, sizeof(*hits));
	kpp = calloc(cap, sizeof(*kpp));
	cr_assert(kps && hits && kpp);
	for (size_t f = 0; f < nfns; f++) {
		const uint8_t *code = (const uint8_t *)fns[f].start;
		ZydisDecodedInstruction insn;

		for (size_t off = 0; off < fns[f].size; off += insn.length) {
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code + off,
									fns[f].size - off, &insn)))
				break;
			kps[nkps].addr = (kprobe_opcode_t *)(fns[f].start + off);
			kps[nkps].pre_handler = on_pre;
			nkps++;
		}
	}
}

/* The probes the library accepts (one by one), in kpp[0..n). */
static size_t accepted(void)
{
	size_t n = 0;

	for (size_t i = 0; i < nkps; i++) {
		uintptr_t a = (uintptr_t)kps[i].addr;

		if (register_kprobe(&kps[i]) == 0) {
			unregister_kprobe(&kps[i]);
			kps[i].addr = (kprobe_opcode_t *)a;
			kps[i].flags = 0;
			kpp[n++] = &kps[i];
		}
	}
	return n;
}

/* ----------------------------------------------------------- workers */

static _Atomic bool stop;
static _Atomic unsigned long crc_calls, adler_calls, bad;
static unsigned char data[64];
static uLong crc_want, adler_want;

static void *worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (crc32(0, data, sizeof(data)) != crc_want)
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&crc_calls, 1);
		if (adler32(1, data, sizeof(data)) != adler_want)
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&adler_calls, 1);
	}
	return NULL;
}

static void start_workers(pthread_t *t)
{
	atomic_store(&stop, false);
	for (int i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, worker, NULL), 0);
}

static void stop_workers(pthread_t *t)
{
	atomic_store(&stop, true);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
}

static struct kprobe *probe_at(uintptr_t a)
{
	for (size_t i = 0; i < nkps; i++)
		if ((uintptr_t)kps[i].addr == a)
			return &kps[i];
	return NULL;
}

/* A copy of libz's functions' bytes. */
static uint8_t *text_copy(void)
{
	size_t total = 0, at = 0;
	uint8_t *c;

	for (size_t f = 0; f < nfns; f++)
		total += fns[f].size;
	c = malloc(total);
	cr_assert(c);
	for (size_t f = 0; f < nfns; f++) {
		memcpy(c + at, (const void *)fns[f].start, fns[f].size);
		at += fns[f].size;
	}
	return c;
}

static bool text_same(const uint8_t *c)
{
	size_t at = 0;

	for (size_t f = 0; f < nfns; f++) {
		if (memcmp(c + at, (const void *)fns[f].start, fns[f].size))
			return false;
		at += fns[f].size;
	}
	return true;
}

static void setup(void)
{
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + i / 13);
	crc_want = crc32(0, data, sizeof(data));
	adler_want = adler32(1, data, sizeof(data));
	/* breakpoints only: the counts then go through the trap path
	 * (the optimizer's jumps are test_optprobe_libs' business) */
	kprobes_set_optimization(false);
	make_probes();
}

Test(batch, zlib_everywhere_with_threads, .init = setup, .timeout = 300)
{
	pthread_t t[NTHREADS];
	struct kprobe *crc_kp, *adler_kp;
	size_t n = accepted(), ic, ia;
	uint8_t *before = text_copy();
	unsigned long c0, a0;

	cr_assert_gt(n, 2000, "probes accepted: %zu of %zu", n, nkps);
	crc_kp = probe_at(crc_at);
	adler_kp = probe_at(adler_at);
	cr_assert(crc_kp && adler_kp);
	ic = (size_t)(crc_kp - kps);
	ia = (size_t)(adler_kp - kps);

	/* registered and unregistered while the threads run */
	start_workers(t);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < n; i++) {
			kpp[i]->flags = 0;
			atomic_store(&hits[kpp[i] - kps], 0);
		}
		cr_assert_eq(register_kprobes(kpp, (int)n), 0);
		for (size_t i = 0; i < n; i++)
			cr_assert(!kprobe_disabled(kpp[i]) && !kprobe_gone(kpp[i]));
		/* armed once register_kprobes returns: counts follow calls */
		c0 = atomic_load(&crc_calls);
		while (atomic_load(&crc_calls) < c0 + 20)
			sched_yield();
		cr_assert_gt(atomic_load(&hits[ic]), 0);
		unregister_kprobes(kpp, (int)n);
		cr_assert(text_same(before), "text differs after unregister_kprobes");
	}
	stop_workers(t);
	cr_assert_eq(atomic_load(&bad), 0, "wrong results under registration: %lu",
		     atomic_load(&bad));

	/* exact counts: registered, then the threads' calls */
	for (size_t i = 0; i < n; i++) {
		kpp[i]->flags = 0;
		atomic_store(&hits[kpp[i] - kps], 0);
	}
	cr_assert_eq(register_kprobes(kpp, (int)n), 0);
	c0 = atomic_load(&crc_calls);
	a0 = atomic_load(&adler_calls);
	start_workers(t);
	while (atomic_load(&crc_calls) < c0 + 200)
		sched_yield();
	stop_workers(t);
	cr_expect_eq(atomic_load(&hits[ic]), atomic_load(&crc_calls) - c0);
	cr_expect_eq(atomic_load(&hits[ia]), atomic_load(&adler_calls) - a0);
	cr_expect_eq(atomic_load(&bad), 0);
	unregister_kprobes(kpp, (int)n);
	cr_assert(text_same(before));
	free(before);
}

/* Is a inside the function that starts at start? */
static bool in_fn(uintptr_t a, uintptr_t start)
{
	for (size_t f = 0; f < nfns; f++)
		if (fns[f].start == start)
			return a >= start && a < start + fns[f].size;
	return false;
}

/*
 * One by one while the threads run into the probes registered so far
 * (crc32's and adler32's first): the hit hash grows under them several
 * times (site_hash.c), and no hit may miss its site (the int3 would go
 * to the program: SIGTRAP ends the test).
 */
Test(batch, one_by_one_while_hit, .init = setup, .timeout = 300)
{
	pthread_t t[NTHREADS];
	size_t n = accepted(), k = 0;
	uint8_t *before = text_copy();
	struct kprobe **order = calloc(n, sizeof(*order));
	unsigned long c0;

	cr_assert(order);
	cr_assert_gt(n, 2000, "probes accepted: %zu of %zu", n, nkps);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			uintptr_t a = (uintptr_t)kpp[i]->addr;
			bool hot = in_fn(a, crc_at) || in_fn(a, adler_at);

			if (hot == (pass == 0))
				order[k++] = kpp[i];
		}
	cr_assert_eq(k, n);
	start_workers(t);
	for (size_t i = 0; i < n; i++) {
		order[i]->flags = 0;
		cr_assert_eq(register_kprobe(order[i]), 0, "probe %zu", i);
	}
	c0 = atomic_load(&crc_calls);
	while (atomic_load(&crc_calls) < c0 + 20)
		sched_yield();
	stop_workers(t);
	cr_expect_eq(atomic_load(&bad), 0, "wrong results: %lu", atomic_load(&bad));
	cr_expect_gt(atomic_load(&hits[probe_at(crc_at) - kps]), 0);
	unregister_kprobes(order, (int)n);
	cr_assert(text_same(before), "text differs after unregister_kprobes");
	free(order);
	free(before);
}

Test(batch, all_or_nothing, .init = setup, .timeout = 300)
{
	size_t n = accepted();
	uint8_t *before = text_copy();
	/* the library itself: blacklisted */
	struct kprobe bad_kp = { .addr = (kprobe_opcode_t *)(uintptr_t)register_kprobes };
	pthread_t t[NTHREADS];

	cr_assert_gt(n, 2000);
	kpp[n] = &bad_kp;
	for (size_t i = 0; i < n; i++)
		kpp[i]->flags = 0;
	start_workers(t);
	cr_assert_lt(register_kprobes(kpp, (int)n + 1), 0);
	stop_workers(t);
	cr_assert(text_same(before), "a refused batch changed the text");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(atomic_load(&hits[kpp[i] - kps]), 0);
	cr_assert_eq(atomic_load(&bad), 0);
	/* none of them is registered: each can be registered again */
	for (size_t i = 0; i < n; i++)
		kpp[i]->flags = 0;
	cr_assert_eq(register_kprobes(kpp, (int)n), 0);
	unregister_kprobes(kpp, (int)n);
	cr_assert(text_same(before));
	free(before);
}

/* ================================================== return probes */

struct rfn {
	struct kretprobe rp;
	struct kprobe kp;         /* the coexisting plain probe */
	uintptr_t start;
	_Atomic unsigned long entries, returns, hits;
};

static struct rfn *rfns;
static struct kretprobe **rpp;
static struct kprobe **rkpp;
static size_t nrfns, rfns_cap;
static struct rfn *r_last;        /* the batch's last probe */
static _Atomic unsigned long early; /* hits before r_last was registered */
static _Atomic unsigned long sql_runs;

static void collect_entry(const struct ukp_symres *sym, void *arg)
{
	(void)arg;
	if (!sym->size || !sym->func || nrfns == rfns_cap)
		return;
	for (size_t i = 0; i < nrfns; i++)
		if (rfns[i].start == sym->start)
			return;
	rfns[nrfns++].start = sym->start;
}

static int r_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rfn *f = (struct rfn *)get_kretprobe(ri);

	(void)regs;
	/* __register_kprobe sets the flag while it prepares r_last, before
	 * the batch arms anything */
	if (!(r_last->rp.kp.flags & KPROBE_FLAG_ON_FUNC_ENTRY))
		atomic_fetch_add(&early, 1);
	atomic_fetch_add_explicit(&f->entries, 1, memory_order_relaxed);
	return 0;
}

static int r_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rfn *f = (struct rfn *)get_kretprobe(ri);

	(void)regs;
	atomic_fetch_add_explicit(&f->returns, 1, memory_order_relaxed);
	return 0;
}

static int r_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct rfn *f = (struct rfn *)((char *)p - offsetof(struct rfn, kp));

	(void)regs;
	atomic_fetch_add_explicit(&f->hits, 1, memory_order_relaxed);
	return 0;
}

/* A query whose answer is known: tables, an index, a join, a sum. */
static bool sql_once(void)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	bool ok;

	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return false;
	ok = sqlite3_exec(db,
			  "create table t(a integer primary key, b text);"
			  "create index tb on t(b);"
			  "with recursive c(x) as (select 1 union all select x + 1 from c "
			  "where x < 200) insert into t select x, 'v' || x from c;",
			  NULL, NULL, NULL) == SQLITE_OK &&
	     sqlite3_prepare_v2(db, "select sum(t.a), count(*) from t join t u on u.a = t.a "
				    "where t.b like 'v%'", -1, &st, NULL) == SQLITE_OK;
	if (ok) {
		ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 20100 &&
		     sqlite3_column_int(st, 1) == 200;
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return ok;
}

static void *sql_worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (!sql_once())
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&sql_runs, 1);
	}
	return NULL;
}

/* The zlib workers, and one running SQL. */
static void start_all_workers(pthread_t *t)
{
	start_workers(t);
	cr_assert_eq(pthread_create(&t[NTHREADS], NULL, sql_worker, NULL), 0);
}

static void stop_all_workers(pthread_t *t)
{
	stop_workers(t);
	pthread_join(t[NTHREADS], NULL);
}

static struct rfn *rfn_at(uintptr_t a)
{
	for (size_t i = 0; i < nrfns; i++)
		if (rfns[i].start == a)
			return &rfns[i];
	return NULL;
}

/* A copy of the text of every probed function (first bytes: the
 * breakpoints and jumps go there). */
static uint8_t *entries_copy(void)
{
	uint8_t *c = malloc(nrfns * 16);

	cr_assert(c);
	for (size_t i = 0; i < nrfns; i++)
		memcpy(c + 16 * i, (const void *)rfns[i].start, 16);
	return c;
}

static bool entries_same(const uint8_t *c)
{
	for (size_t i = 0; i < nrfns; i++)
		if (memcmp(c + 16 * i, (const void *)rfns[i].start, 16))
			return false;
	return true;
}

static void rfns_reset(void)
{
	atomic_store(&early, 0);
	for (size_t i = 0; i < nrfns; i++) {
		struct rfn *f = &rfns[i];

		f->rp.kp.addr = (kprobe_opcode_t *)f->start;
		f->rp.kp.symbol_name = NULL;
		f->rp.kp.offset = 0;
		f->rp.kp.flags = 0;
		f->kp.addr = (kprobe_opcode_t *)f->start;
		f->kp.flags = 0;
		atomic_store(&f->entries, 0);
		atomic_store(&f->returns, 0);
		atomic_store(&f->hits, 0);
	}
}

/*
 * Every entry of libz and libsqlite3 that takes a return probe (tried
 * one by one), crc32 and adler32 first and a sqlite function last, in
 * rpp (return probes) and rkpp (plain ones) in the same order.
 */
static void r_setup(void)
{
	size_t n = 0;
	struct rfn *crc, *adler;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + i / 13);
	crc_want = crc32(0, data, sizeof(data));
	adler_want = adler32(1, data, sizeof(data));
	cr_assert(sql_once());
	rfns_cap = 8192;
	rfns = calloc(rfns_cap, sizeof(*rfns));
	cr_assert(rfns);
	cr_assert_eq(ukp_lock_for_show(), 0);
	ukp_for_each_symbol("libz.so.1", collect_entry, NULL);
	ukp_for_each_symbol("libsqlite3.so.0", collect_entry, NULL);
	ukp_unlock_for_show();
	crc = rfn_at((uintptr_t)crc32);
	adler = rfn_at((uintptr_t)adler32);
	cr_assert(crc && adler, "crc32 and adler32 among %zu entries", nrfns);
	/* crc32 and adler32 first: the threads run them all the time */
	{
		struct rfn t = *crc;

		*crc = rfns[0];
		rfns[0] = t;
		adler = rfn_at((uintptr_t)adler32);
		t = *adler;
		*adler = rfns[1];
		rfns[1] = t;
	}
	for (size_t i = 0; i < nrfns; i++) {
		struct rfn *f = &rfns[i];

		f->rp.kp.addr = (kprobe_opcode_t *)f->start;
		f->rp.handler = r_ret;
		f->rp.entry_handler = r_entry;
		f->rp.maxactive = 64;
		f->kp.pre_handler = r_pre;
	}
	r_last = &rfns[nrfns - 1]; /* never hit while accepted() tries */
	rpp = calloc(nrfns, sizeof(*rpp));
	rkpp = calloc(nrfns, sizeof(*rkpp));
	cr_assert(rpp && rkpp);
	for (size_t i = 0; i < nrfns; i++) {
		struct rfn *f = &rfns[i];

		if (register_kretprobe(&f->rp))
			continue;
		unregister_kretprobe(&f->rp);
		rpp[n] = &f->rp;
		rkpp[n++] = &f->kp;
	}
	cr_assert_gt(n, 1000, "return probes accepted: %zu of %zu", n, nrfns);
	cr_assert_eq(rpp[0], &rfns[0].rp);
	cr_assert_eq(rpp[1], &rfns[1].rp);
	r_last = (struct rfn *)rpp[n - 1];
	nrfns = n; /* rpp[0..n): the accepted ones (rfns keeps its order) */
	ukp_krp_reap();
}

static void r_check_counts(size_t n)
{
	unsigned long calls = 0;
	size_t hit = 0;

	for (size_t i = 0; i < n; i++) {
		struct rfn *f = (struct rfn *)rpp[i];

		cr_expect_eq(atomic_load(&f->entries), atomic_load(&f->returns),
			     "%#lx: %lu entries, %lu returns", (unsigned long)f->start,
			     atomic_load(&f->entries), atomic_load(&f->returns));
		cr_expect_eq(f->rp.nmissed, 0, "%#lx: %d missed", (unsigned long)f->start,
			     f->rp.nmissed);
		calls += atomic_load(&f->returns);
		hit += atomic_load(&f->returns) != 0;
	}
	cr_expect_gt(hit, 100, "functions returned through their probes: %zu", hit);
	cr_expect_gt(calls, 1000);
}

Test(batch, kretprobes_zlib_sqlite_with_threads, .init = r_setup, .timeout = 300)
{
	pthread_t t[NTHREADS + 1];
	size_t n = nrfns;
	uint8_t *before = entries_copy();
	unsigned long c0, a0, s0;
	struct rfn *crc = (struct rfn *)rpp[0], *adler = (struct rfn *)rpp[1];

	start_all_workers(t);
	for (int round = 0; round < 2; round++) {
		rfns_reset();
		cr_assert_eq(register_kretprobes(rpp, (int)n), 0);
		c0 = atomic_load(&sql_runs);
		while (atomic_load(&sql_runs) < c0 + 2)
			sched_yield();
		cr_assert_gt(atomic_load(&crc->returns), 0);
		unregister_kretprobes(rpp, (int)n);
		cr_assert_eq(atomic_load(&early), 0,
			     "%lu hits before the batch's last probe was registered",
			     atomic_load(&early));
		cr_assert(entries_same(before), "text differs after unregister_kretprobes");
	}
	stop_all_workers(t);
	cr_assert_eq(atomic_load(&bad), 0, "wrong results under registration: %lu",
		     atomic_load(&bad));

	/* exact counts: registered, then the threads' calls */
	rfns_reset();
	cr_assert_eq(register_kretprobes(rpp, (int)n), 0);
	c0 = atomic_load(&crc_calls);
	a0 = atomic_load(&adler_calls);
	s0 = atomic_load(&sql_runs);
	start_all_workers(t);
	while (atomic_load(&sql_runs) < s0 + 2 || atomic_load(&crc_calls) < c0 + 200)
		sched_yield();
	stop_all_workers(t);
	cr_expect_eq(atomic_load(&crc->returns), atomic_load(&crc_calls) - c0);
	cr_expect_eq(atomic_load(&adler->returns), atomic_load(&adler_calls) - a0);
	cr_expect_eq(atomic_load(&bad), 0);
	r_check_counts(n);
	unregister_kretprobes(rpp, (int)n);
	cr_assert(entries_same(before));
	free(before);
}

/* rpp's n return probes with bad in the middle (n + 1 of them). */
static struct kretprobe **with_bad_in_middle(struct kretprobe *bad, size_t n)
{
	struct kretprobe **v = calloc(n + 1, sizeof(*v));

	cr_assert(v);
	memcpy(v, rpp, n / 2 * sizeof(*v));
	v[n / 2] = bad;
	memcpy(v + n / 2 + 1, rpp + n / 2, (n - n / 2) * sizeof(*v));
	return v;
}

Test(batch, kretprobes_all_or_nothing, .init = r_setup, .timeout = 300)
{
	pthread_t t[NTHREADS + 1];
	size_t n = nrfns;
	uint8_t *before = entries_copy();
	unsigned long holders = ukp_krp_holders_allocated();
	/* not a function's entry: refused */
	struct kretprobe bad_rp = { .kp.addr = (kprobe_opcode_t *)((uintptr_t)crc32 + 1),
				    .handler = r_ret };
	struct kretprobe **v = with_bad_in_middle(&bad_rp, n);

	rfns_reset();
	start_all_workers(t);
	cr_assert_lt(register_kretprobes(v, (int)n + 1), 0);
	/* the threads run on a while: a probe left armed would count */
	{
		unsigned long c0 = atomic_load(&sql_runs);

		while (atomic_load(&sql_runs) < c0 + 2)
			sched_yield();
	}
	stop_all_workers(t);
	cr_assert(entries_same(before), "a refused batch changed the text");
	for (size_t i = 0; i < n; i++) {
		struct rfn *f = (struct rfn *)rpp[i];

		cr_assert_eq(atomic_load(&f->entries) + atomic_load(&f->returns), 0,
			     "probe %zu of the refused batch was hit", i);
	}
	cr_assert_eq(atomic_load(&bad), 0);
	ukp_krp_reap();
	cr_expect_eq(ukp_krp_holders_allocated(), holders, "holders left by the refused batch");
	/* none of them is registered: each can be registered again */
	rfns_reset();
	cr_assert_eq(register_kretprobes(rpp, (int)n), 0);
	unregister_kretprobes(rpp, (int)n);
	cr_assert(entries_same(before));
	free(v);
	free(before);
}

Test(batch, kretprobes_on_kprobes, .init = r_setup, .timeout = 300)
{
	pthread_t t[NTHREADS + 1];
	size_t n = nrfns;
	uint8_t *before = entries_copy();
	unsigned long c0;

	rfns_reset();
	cr_assert_eq(register_kprobes(rkpp, (int)n), 0);
	start_all_workers(t);
	/* the return probes join sites that are armed and being hit */
	cr_assert_eq(register_kretprobes(rpp, (int)n), 0);
	stop_all_workers(t);
	for (size_t i = 0; i < n; i++) {
		struct rfn *f = (struct rfn *)rpp[i];

		atomic_store(&f->entries, 0);
		atomic_store(&f->returns, 0);
		atomic_store(&f->hits, 0);
	}
	cr_assert(sql_once());
	cr_assert_eq(crc32(0, data, sizeof(data)), crc_want);
	for (size_t i = 0; i < n; i++) {
		struct rfn *f = (struct rfn *)rpp[i];

		cr_expect_eq(atomic_load(&f->hits), atomic_load(&f->entries),
			     "%#lx: %lu kprobe hits, %lu kretprobe entries", (unsigned long)f->start,
			     atomic_load(&f->hits), atomic_load(&f->entries));
	}
	r_check_counts(n);

	/* the return probes go, the kprobes stay */
	unregister_kretprobes(rpp, (int)n);
	c0 = atomic_load(&((struct rfn *)rpp[0])->hits);
	cr_assert(sql_once());
	cr_assert_eq(crc32(0, data, sizeof(data)), crc_want);
	cr_expect_eq(atomic_load(&((struct rfn *)rpp[0])->hits), c0 + 1);
	unregister_kprobes(rkpp, (int)n);
	cr_assert(entries_same(before));

	/* and the other way round: the kprobes go first */
	rfns_reset();
	cr_assert_eq(register_kretprobes(rpp, (int)n), 0);
	cr_assert_eq(register_kprobes(rkpp, (int)n), 0);
	unregister_kprobes(rkpp, (int)n);
	cr_assert(sql_once());
	cr_assert_eq(crc32(0, data, sizeof(data)), crc_want);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(atomic_load(&((struct rfn *)rpp[i])->hits), 0);
	r_check_counts(n);
	unregister_kretprobes(rpp, (int)n);
	cr_assert(entries_same(before));
	free(before);
}

/* A refused batch of return probes on entries armed kprobes hold: its
 * probes are live as soon as they join their sites, and the refusal
 * takes them all back while the threads call through them (pending
 * returns come back right, the holders are freed once they are home). */
Test(batch, kretprobes_refused_on_kprobes, .init = r_setup, .timeout = 300)
{
	pthread_t t[NTHREADS + 1];
	size_t n = nrfns;
	uint8_t *before = entries_copy();
	struct kretprobe bad_rp = { .kp.addr = (kprobe_opcode_t *)((uintptr_t)crc32 + 1),
				    .handler = r_ret };
	struct kretprobe **v = with_bad_in_middle(&bad_rp, n);
	unsigned long holders = ukp_krp_holders_allocated(), s0, entries = 0, after = 0;

	rfns_reset();
	cr_assert_eq(register_kprobes(rkpp, (int)n), 0);
	start_all_workers(t);
	cr_assert_lt(register_kretprobes(v, (int)n + 1), 0);
	s0 = atomic_load(&sql_runs);
	while (atomic_load(&sql_runs) < s0 + 2)
		sched_yield();
	stop_all_workers(t);
	cr_assert_eq(atomic_load(&bad), 0, "wrong results: %lu", atomic_load(&bad));
	/* no return probe left: the kprobes count on, the entries do not */
	for (size_t i = 0; i < n; i++)
		entries += atomic_load(&((struct rfn *)rpp[i])->entries);
	atomic_store(&((struct rfn *)rpp[0])->hits, 0);
	cr_assert(sql_once());
	cr_assert_eq(crc32(0, data, sizeof(data)), crc_want);
	for (size_t i = 0; i < n; i++)
		after += atomic_load(&((struct rfn *)rpp[i])->entries);
	cr_expect_eq(after, entries, "return probes of the refused batch still fire");
	cr_expect_eq(atomic_load(&((struct rfn *)rpp[0])->hits), 1);
	unregister_kprobes(rkpp, (int)n);
	cr_assert(entries_same(before), "text differs after the kprobes went");
	ukp_krp_reap();
	cr_expect_eq(ukp_krp_holders_allocated(), holders, "holders left by the refused batch");
	/* none of them is registered: each can be registered again */
	rfns_reset();
	cr_assert_eq(register_kretprobes(rpp, (int)n), 0);
	unregister_kretprobes(rpp, (int)n);
	cr_assert(entries_same(before));
	free(v);
	free(before);
}
