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
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <zlib.h>
#include <Zydis/Zydis.h>

#include "ukprobes.h"
#include "internal.h"
#include "symbols.h"

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
