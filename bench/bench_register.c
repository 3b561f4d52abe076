// SPDX-License-Identifier: MIT
/*
 * bench_register.c - what registering and unregistering many probes
 * costs, and the memory a probe takes, on real libraries: libc.so.6,
 * libsqlite3.so.0 and libz.so.1.
 *
 * Probe points: every function entry of the three libraries (one per
 * address, the libraries taken in turn), then, while that is not enough,
 * the second instruction of every function of libsqlite3 and libz, then
 * the third, and so on (instruction boundaries found with Zydis from the
 * symbol's start and confirmed with the library's own
 * arch_check_boundary). Not inside libc functions: the library itself
 * calls libc while it registers.
 *
 *  1. The first registration: register_kprobe() on the candidates, one
 *     by one, until --count of them are accepted (refusals counted per
 *     errno), timed. Resident anonymous memory (RssAnon) before and
 *     after, over the count, plus the caller's struct kprobe, is the
 *     memory a probe takes (bytes_per_probe): its bookkeeping, its
 *     out-of-line slot, its share of the text pages that became private
 *     copies and of the library's tables, and the struct kprobe. The
 *     library's own share (library_bytes_per_probe: without the text
 *     copies and the struct kprobe), the copies and the malloc heap are
 *     also given apart; the plain RSS hardly moves, as a copy replaces a
 *     page-cache page that was resident already. The
 *     probes hit meanwhile are the library's own calls into libc
 *     (pthread_mutex_lock, getpid, malloc, ...): reported, with the
 *     hottest ones.
 *  2. Those self-hit probes are replaced by the next candidates, until
 *     no probe of the set is hit while the set registers: the figures
 *     below time registration, not hits.
 *  3. Timed, --reps times: register_kprobe() one by one,
 *     unregister_kprobe() one by one; register_kprobes() in one batch,
 *     unregister_kprobes() in one batch.
 *
 * Usage: bench_register [--quick] [--count N] [--reps N] [--json FILE]
 *        (BENCH_REGISTER_TRACE=1 in the environment names every probe of
 *        the first pass on stderr before registering it)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <zlib.h>
#include <Zydis/Zydis.h>

#include "ukprobes.h"
#include "arch/arch.h"
#include "symbols/symbols.h"
#include "bench.h"

/* The registry lock, for walking the symbol cache (kprobes.c). */
int ukp_lock_for_show(void);
void ukp_unlock_for_show(void);

#define NLIBS 3
static const char *const libs[NLIBS] = { "libc.so.6", "libsqlite3.so.0", "libz.so.1" };
/* Where probes inside functions are taken: not in libc, whose malloc,
 * memcpy, ... the library itself calls while it registers (those probes
 * would be hit thousands of times and time the hits, not the
 * registration). */
static const bool inner_ok[NLIBS] = { false, true, true };

struct fn {
	uintptr_t start;
	size_t size;
	size_t next;       /* offset of the next instruction not yet taken */
	int lib;
	bool done;
	bool excluded;     /* see not_probed[] */
};

static struct fn *fns;
static size_t nfns, capfns;

/*
 * Functions left out of the probe set, reported in the JSON (NULL-ended).
 * Empty since the hit path stopped calling libc's __errno_location() and
 * pthread_self() (it reads them through the thread pointer): a probe on
 * them no longer recurses (tests/unit/test_errors.c).
 */
static const char *const not_probed[] = { NULL };
static unsigned long nexcluded;

static void collect(const struct ukp_symres *sym, void *arg)
{
	int lib = *(const int *)arg;
	bool excluded = false;

	if (!sym->size)
		return;
	for (size_t i = 0; not_probed[i]; i++)
		excluded |= sym->name && !strcmp(sym->name, not_probed[i]);
	if (nfns == capfns) {
		capfns = capfns ? 2 * capfns : 4096;
		fns = realloc(fns, capfns * sizeof(*fns));
		if (!fns)
			abort();
	}
	fns[nfns++] = (struct fn){ .start = sym->start, .size = sym->size, .lib = lib,
				   .excluded = excluded };
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	if (x->lib != y->lib)
		return x->lib - y->lib;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct cand {
	uintptr_t addr;
	int lib;
	bool inner;
};

static struct cand *cands;
static size_t ncands, capcands;

static void add_cand(uintptr_t addr, int lib, bool inner)
{
	if (ncands == capcands) {
		capcands = capcands ? 2 * capcands : 4096;
		cands = realloc(cands, capcands * sizeof(*cands));
		if (!cands)
			abort();
	}
	cands[ncands++] = (struct cand){ addr, lib, inner };
}

static ZydisDecoder dec;
static unsigned long boundary_disagreements;

/* The next candidate of function f: its entry, then each following
 * instruction boundary. False when the function is exhausted. */
static bool next_of(struct fn *f, uintptr_t *addr)
{
	ZydisDecodedInstruction insn;
	const uint8_t *code = (const uint8_t *)f->start;

	while (!f->done) {
		size_t off = f->next;

		if (off >= f->size) {
			f->done = true;
			break;
		}
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code + off, f->size - off,
								&insn))) {
			f->done = true;
			break;
		}
		f->next = off + insn.length;
		/* a probe on an entry endbr64 goes to +4: that one is taken */
		if (off == 4 && !memcmp(code, "\xf3\x0f\x1e\xfa", 4))
			continue;
		if (off && arch_check_boundary(code, off, f->size)) {
			boundary_disagreements++;
			continue;
		}
		*addr = f->start + off;
		return true;
	}
	return false;
}

/* Candidates in rounds: every function's entry (libraries in turn), then
 * every function's next instruction, ... until want of them. */
static void make_candidates(size_t want)
{
	size_t per_lib[NLIBS] = { 0 }, idx[NLIBS] = { 0 }, first[NLIBS] = { 0 };
	bool any = true;

	for (size_t i = 0; i < nfns; i++)
		per_lib[fns[i].lib]++;
	for (int l = 1; l < NLIBS; l++)
		first[l] = first[l - 1] + per_lib[l - 1];
	for (int round = 0; any && ncands < want; round++) {
		any = false;
		for (int l = 0; l < NLIBS; l++)
			idx[l] = 0;
		/* interleave the libraries within a round */
		for (bool more = true; more && ncands < want;) {
			more = false;
			for (int l = 0; l < NLIBS && ncands < want; l++) {
				uintptr_t a;

				if (idx[l] >= per_lib[l] || (round > 0 && !inner_ok[l]))
					continue;
				more = true;
				if (next_of(&fns[first[l] + idx[l]++], &a)) {
					add_cand(a, l, round > 0);
					any = true;
				}
			}
		}
	}
}

/* ------------------------------------------------------------ probes */

static struct kprobe *kps;      /* the accepted probes */
static struct kprobe **kpp;     /* kpp[i] == &kps[i] */
static size_t *cand_of;         /* the candidate of each */
static size_t nkps;
static _Atomic unsigned long hits, *hits_of; /* all; per probe (index in kps) */

static int on_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hits_of[p - kps], 1, memory_order_relaxed);
	return 0;
}

/* "object:symbol+0xoff" of a probe. */
static void probe_name(const struct kprobe *p, char *buf, size_t len)
{
	struct ukp_symres res;

	if (ukp_lock_for_show() == 0) {
		if (ukp_sym_lookup_addr((uintptr_t)p->addr, &res) == 0 && res.name) {
			snprintf(buf, len, "%s:%s+%#lx", res.obj ? res.obj->name : "?", res.name,
				 (unsigned long)((uintptr_t)p->addr - res.start));
			ukp_unlock_for_show();
			return;
		}
		ukp_unlock_for_show();
	}
	snprintf(buf, len, "%p", (void *)p->addr);
}

/* The most hit probes, into buf as JSON: [["object:sym+off", hits], ...]. */
static void print_hot(char *buf, size_t len, int max)
{
	bool *shown = calloc(nkps + 1, 1);
	FILE *f = fmemopen(buf, len, "w");

	if (!f || !shown) {
		snprintf(buf, len, "[]");
		free(shown);
		if (f)
			fclose(f);
		return;
	}
	fprintf(f, "[");
	for (int k = 0; k < max; k++) {
		size_t best = nkps;
		char name[300];

		for (size_t i = 0; i < nkps; i++)
			if (!shown[i] && atomic_load(&hits_of[i]) &&
			    (best == nkps || atomic_load(&hits_of[i]) > atomic_load(&hits_of[best])))
				best = i;
		if (best == nkps)
			break;
		shown[best] = true;
		probe_name(&kps[best], name, sizeof(name));
		fprintf(f, "%s[", k ? ", " : "");
		json_str(f, name);
		fprintf(f, ", %lu]", atomic_load(&hits_of[best]));
	}
	fprintf(f, "]");
	fclose(f);
	free(shown);
}

/* Before registering a set again (the kernel's reuse idiom). */
static void reset_probes(void)
{
	for (size_t i = 0; i < nkps; i++) {
		kps[i].addr = (kprobe_opcode_t *)cands[cand_of[i]].addr;
		kps[i].flags = 0;
	}
}

struct refusals {
	int err[16];
	unsigned long count[16];
	int n;
};

static void refused(struct refusals *r, int err)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (r->err[i] == err)
			break;
	if (i == r->n) {
		if (r->n == 16)
			return;
		r->err[r->n++] = err;
	}
	r->count[i]++;
}

/* Register candidates from index i, one by one, until nkps == want.
 * Returns the index of the next candidate. */
static size_t accept_single(size_t i, size_t want, struct refusals *ref, size_t *tried,
			    bool trace)
{
	for (; i < ncands && nkps < want; i++) {
		struct kprobe *p = &kps[nkps];
		int ret;

		memset(p, 0, sizeof(*p));
		p->addr = (kprobe_opcode_t *)cands[i].addr;
		p->pre_handler = on_pre;
		atomic_store(&hits_of[nkps], 0);
		(*tried)++;
		if (trace) {
			char name[300];

			probe_name(p, name, sizeof(name));
			fprintf(stderr, "%zu %s\n", nkps, name);
		}
		ret = register_kprobe(p);
		if (ret) {
			refused(ref, ret);
			continue;
		}
		cand_of[nkps++] = i;
	}
	return i;
}

/*
 * The same in batches of up to BATCH candidates (register_kprobes); a
 * batch that is refused as a whole (one of its probes is) is taken again
 * one by one, which counts the refusals.
 */
#define BATCH 1024
static size_t accept(size_t i, size_t want, struct refusals *ref, size_t *tried, bool trace)
{
	while (i < ncands && nkps < want) {
		size_t n = want - nkps, first = nkps;

		if (n > BATCH)
			n = BATCH;
		if (n > ncands - i)
			n = ncands - i;
		if (trace || n < 16)
			return accept_single(i, want, ref, tried, trace);
		for (size_t k = 0; k < n; k++) {
			memset(&kps[first + k], 0, sizeof(kps[0]));
			kps[first + k].addr = (kprobe_opcode_t *)cands[i + k].addr;
			kps[first + k].pre_handler = on_pre;
			atomic_store(&hits_of[first + k], 0);
		}
		if (register_kprobes(kpp + first, (int)n) == 0) {
			for (size_t k = 0; k < n; k++)
				cand_of[first + k] = i + k;
			nkps += n;
			*tried += n;
			i += n;
			continue;
		}
		i = accept_single(i, first + n, ref, tried, false);
	}
	return i;
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct text pages the accepted probes are on. */
static size_t count_pages(void)
{
	uintptr_t *pg = calloc(nkps + 1, sizeof(*pg));
	size_t n = 0;

	if (!pg)
		return 0;
	for (size_t i = 0; i < nkps; i++)
		pg[i] = (uintptr_t)kpp[i]->addr / (uintptr_t)sysconf(_SC_PAGESIZE);
	qsort(pg, nkps, sizeof(*pg), cmp_uptr);
	for (size_t i = 0; i < nkps; i++)
		n += !i || pg[i] != pg[i - 1];
	free(pg);
	return n;
}

/* Make n bytes at p resident (calloc'ed pages are not until written). */
static void touch(void *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		((volatile char *)p)[i] = 0;
}

static double secs_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	size_t count = 1000, tried = 0, entries = 0, per_lib[NLIBS] = { 0 };
	size_t rss0, rss1, pages = 0, next, nhot_first, nself = 0;
	double first_secs, first_unreg_secs;
	char hot_json[2048];
	unsigned long *first_hits;
	struct mallinfo2 mi;
	size_t heap0, heap1, anon0, anon1;
	int reps = 5;
	struct refusals ref = { 0 };
	double *t[4];
	unsigned long hits_first, hits_timed;
	uint64_t t0, start;
	bool trace = getenv("BENCH_REGISTER_TRACE") != NULL, singles = true;
	size_t anon2, nopt = 0;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			reps = 1;
		} else if (!strcmp(argv[i], "--batch-only")) {
			singles = false;
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			count = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--quick] [--batch-only] [--count N] [--reps N] "
					"[--json FILE]\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || count < 1)
		return 2;
	start = bench_now_ns();
	/* both libraries are loaded and used */
	if (!zlibVersion()[0] || !sqlite3_libversion()[0])
		return 1;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return 1;

	if (ukp_lock_for_show())
		return 1;
	for (int l = 0; l < NLIBS; l++)
		ukp_for_each_symbol(libs[l], collect, &l);
	ukp_unlock_for_show();
	/* one function per address (libc has many aliases) */
	qsort(fns, nfns, sizeof(*fns), cmp_fn);
	{
		size_t k = 0;

		for (size_t i = 0; i < nfns; i++) {
			if (k && fns[i].start == fns[k - 1].start)
				fns[k - 1].excluded |= fns[i].excluded;
			else
				fns[k++] = fns[i];
		}
		nfns = k;
		/* and the functions the hit path calls */
		k = 0;
		for (size_t i = 0; i < nfns; i++) {
			if (fns[i].excluded)
				nexcluded++;
			else
				fns[k++] = fns[i];
		}
		nfns = k;
	}
	/* room for the refusals and the probes the library hits itself */
	make_candidates(count + count / 2 + 200);

	kps = calloc(count, sizeof(*kps));
	kpp = calloc(count, sizeof(*kpp));
	cand_of = calloc(count, sizeof(*cand_of));
	hits_of = calloc(count, sizeof(*hits_of));
	first_hits = calloc(count, sizeof(*first_hits));
	t[0] = calloc((size_t)reps * 4, sizeof(double));
	if (!kps || !kpp || !cand_of || !hits_of || !first_hits || !t[0])
		return 1;
	for (int k = 1; k < 4; k++)
		t[k] = t[0] + k * reps;
	for (size_t i = 0; i < count; i++)
		kpp[i] = &kps[i];
	/* Registration alone: the optimizer's thread (its analysis calls
	 * libc's memset and malloc, probed here, thousands of times) works
	 * after it, measured apart (4.). */
	kprobes_set_optimization(false);
	/* The first pass takes libc's probes last: until then the library's
	 * own calls into libc hit nothing (the batches of register_kprobes
	 * arm their probes only at their end). */
	{
		size_t k = 0, pre = count < ncands ? count : ncands;
		struct cand *c = malloc(pre * sizeof(*c));

		if (!c)
			return 1;
		/* (the same set: the first count candidates, reordered) */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < pre; i++)
				if ((cands[i].lib == 0) == (pass == 1))
					c[k++] = cands[i];
		memcpy(cands, c, pre * sizeof(*c));
		free(c);
	}

	/* 1. the first registration: count probes, one by one; memory.
	 * The benchmark's own arrays are made resident first: the growth
	 * is then the library's and the text copies; the caller's struct
	 * kprobe (which the kernel's callers hold as well) is added back
	 * apart, by its size. */
	touch(kps, count * sizeof(*kps));
	touch(cand_of, count * sizeof(*cand_of));
	touch((void *)hits_of, count * sizeof(*hits_of));
	mi = mallinfo2();
	heap0 = mi.uordblks + mi.hblkhd;
	rss0 = bench_rss();
	anon0 = bench_rss_anon();
	t0 = bench_now_ns();
	next = accept(0, count, &ref, &tried, trace);
	first_secs = secs_since(t0);
	hits_first = atomic_load(&hits);
	/* what the library hit while registering (not what follows) */
	for (size_t i = 0; i < nkps; i++)
		first_hits[i] = atomic_load(&hits_of[i]);
	rss1 = bench_rss();
	anon1 = bench_rss_anon();
	mi = mallinfo2();
	heap1 = mi.uordblks + mi.hblkhd;
	pages = count_pages();
	fprintf(stderr, "bench_register: %zu probes accepted of %zu tried in %.2f s, %lu hits\n",
		nkps, tried, first_secs, hits_first);
	if (nkps < count) {
		fprintf(stderr, "bench_register: only %zu candidates accepted, %zu wanted\n", nkps,
			count);
		return 1;
	}
	t0 = bench_now_ns();
	unregister_kprobes(kpp, (int)nkps);
	first_unreg_secs = secs_since(t0);
	for (size_t i = 0; i < nkps; i++)
		atomic_store(&hits_of[i], first_hits[i]);
	print_hot(hot_json, sizeof(hot_json), 12);
	nhot_first = 0;
	for (size_t i = 0; i < nkps; i++)
		nhot_first += atomic_load(&hits_of[i]) != 0;

	/*
	 * 2. Probes the library hit while registering (its own calls into
	 * libc: pthread_mutex_lock, getpid, malloc, ...) time those hits,
	 * not the registration: replace them by the next candidates, until
	 * no probe of the set is hit while the set is registered.
	 */
	for (int round = 0; round < 8; round++) {
		size_t k = 0, from;

		for (size_t i = 0; i < nkps; i++) {
			if (atomic_load(&hits_of[i])) {
				nself++;
				continue;
			}
			kps[k] = kps[i];
			cand_of[k] = cand_of[i];
			k++;
		}
		if (k == nkps)
			break;
		nkps = k;
		for (size_t i = 0; i < count; i++)
			atomic_store(&hits_of[i], 0);
		from = nkps;
		next = accept(next, count, &ref, &tried, false);
		if (nkps < count) {
			fprintf(stderr, "bench_register: out of candidates\n");
			return 1;
		}
		unregister_kprobes(kpp + from, (int)(nkps - from));
		/* a new probe hit while registering the others */
		reset_probes();
		if (register_kprobes(kpp, (int)nkps)) {
			fprintf(stderr, "bench_register: register_kprobes of the set failed\n");
			return 1;
		}
		unregister_kprobes(kpp, (int)nkps);
	}
	for (size_t i = 0; i < nkps; i++) {
		entries += !cands[cand_of[i]].inner;
		per_lib[cands[cand_of[i]].lib]++;
	}

	/* 3. timed */
	atomic_store(&hits, 0);
	for (size_t i = 0; i < count; i++)
		atomic_store(&hits_of[i], 0);
	for (int r = 0; r < reps; r++) {
		int ret;

		if (!singles)
			goto batch;
		reset_probes();
		t0 = bench_now_ns();
		for (size_t i = 0; i < nkps; i++) {
			ret = register_kprobe(kpp[i]);
			if (ret) {
				fprintf(stderr, "bench_register: an accepted probe was refused: %d\n",
					ret);
				return 1;
			}
		}
		t[0][r] = secs_since(t0);
		t0 = bench_now_ns();
		for (size_t i = 0; i < nkps; i++)
			unregister_kprobe(kpp[i]);
		t[1][r] = secs_since(t0);
batch:
		reset_probes();
		t0 = bench_now_ns();
		ret = register_kprobes(kpp, (int)nkps);
		t[2][r] = secs_since(t0);
		if (ret) {
			fprintf(stderr, "bench_register: register_kprobes: %d\n", ret);
			return 1;
		}
		t0 = bench_now_ns();
		unregister_kprobes(kpp, (int)nkps);
		t[3][r] = secs_since(t0);
		fprintf(stderr, "bench_register: rep %d: %.3f %.3f %.3f %.3f s\n", r, t[0][r], t[1][r],
			t[2][r], t[3][r]);
	}
	hits_timed = atomic_load(&hits);

	/* 4. The memory the jumps add: the set once more, with the
	 * optimizer, until it has given them their detours. */
	kprobes_set_optimization(true);
	reset_probes();
	/* (from before the batch: it builds the detours before it arms) */
	anon2 = bench_rss_anon();
	if (register_kprobes(kpp, (int)nkps)) {
		fprintf(stderr, "bench_register: register_kprobes: failed\n");
		return 1;
	}
	ukprobes_wait_optimizer();
	anon2 = bench_rss_anon() - anon2;
	for (size_t i = 0; i < nkps; i++)
		nopt += (kps[i].flags & KPROBE_FLAG_OPTIMIZED) != 0;
	unregister_kprobes(kpp, (int)nkps);

	f = json ? fopen(json, "w") : stdout;
	if (!f) {
		perror(json);
		return 1;
	}
	fprintf(f, "{\n  \"count\": %zu, \"reps\": %d, \"seconds\": %.1f,\n", nkps, reps,
		secs_since(start));
	fprintf(f, "  \"functions\": %zu, \"entries\": %zu, \"inner\": %zu, \"tried\": %zu,\n", nfns,
		entries, nkps - entries, tried);
	fprintf(f, "  \"per_lib\": {");
	for (int l = 0; l < NLIBS; l++)
		fprintf(f, "%s\"%s\": %zu", l ? ", " : "", libs[l], per_lib[l]);
	fprintf(f, "},\n  \"refused\": {");
	for (int i = 0; i < ref.n; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, strerror(-ref.err[i]));
		fprintf(f, ": %lu", ref.count[i]);
	}
	fprintf(f, "},\n  \"boundary_disagreements\": %lu,\n", boundary_disagreements);
	fprintf(f, "  \"not_probed\": [");
	for (size_t i = 0; not_probed[i]; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", not_probed[i]);
	fprintf(f, "], \"not_probed_functions\": %lu,\n", nexcluded);
	{
		double grow = (double)(ssize_t)(anon1 - anon0) / (double)nkps;
		double text = (double)pages * (double)sysconf(_SC_PAGESIZE) / (double)nkps;

		fprintf(f, "  \"anon_delta_bytes\": %zd, \"bytes_per_probe\": %.0f, "
			   "\"kprobe_bytes_per_probe\": %zu, \"library_bytes_per_probe\": %.0f,\n",
			(ssize_t)(anon1 - anon0), grow + (double)sizeof(struct kprobe),
			sizeof(struct kprobe), grow - text);
		fprintf(f, "  \"optimized\": %zu, \"optimized_bytes_per_probe\": %.0f,\n", nopt,
			grow + (double)sizeof(struct kprobe) + (double)(ssize_t)anon2 / (double)nkps);
	}
	fprintf(f, "  \"rss_delta_bytes\": %zd, \"rss_bytes_per_probe\": %.0f, \"text_pages\": %zu, "
		   "\"text_copy_bytes_per_probe\": %.0f, \"heap_delta_bytes\": %zd, "
		   "\"heap_bytes_per_probe\": %.0f,\n",
		(ssize_t)(rss1 - rss0), (double)(ssize_t)(rss1 - rss0) / (double)nkps, pages,
		(double)pages * (double)sysconf(_SC_PAGESIZE) / (double)nkps, (ssize_t)(heap1 - heap0),
		(double)(ssize_t)(heap1 - heap0) / (double)nkps);
	fprintf(f, "  \"first\": {\"register_seconds\": %.4g, \"unregister_seconds\": %.4g, "
		   "\"hits\": %lu, \"probes_hit\": %zu, \"hot\": %s},\n",
		first_secs, first_unreg_secs, hits_first, nhot_first, hot_json);
	fprintf(f, "  \"replaced_self_hit\": %zu, \"hits_timed\": %lu,\n", nself, hits_timed);
	{
		static const char *const names[4] = { "register_single", "unregister_single",
						      "register_batch", "unregister_batch" };

		for (int k = 0; k < 4; k++) {
			if (!singles && k < 2)
				continue;
			fprintf(f, "  \"%s\": {", names[k]);
			json_stat_fields(f, bench_stats(t[k], reps));
			fprintf(f, "}%s\n", k < 3 ? "," : "");
		}
	}
	fprintf(f, "}\n");
	if (json)
		fclose(f);
	return 0;
}
