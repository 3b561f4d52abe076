// SPDX-License-Identifier: MIT
/*
 * bench_coverage.c - how many function entries of real libraries become
 * jump-optimized, and why the others do not (issue 4: ">= 95% of the
 * function entries of libc, libz and libsqlite3 [OPTIMIZED]").
 *
 * For each library (dlopen()ed; libc.so.6, libz.so.1 and libsqlite3.so.0
 * unless --lib names others), library by library:
 *
 *  1. Entries: every exported defined FUNC symbol of its .dynsym, one per
 *     address (aliases and versions merged); the IFUNC symbols apart: the
 *     implementation their resolver returns (lib_entries.h).
 *  2. Prediction: ukprobes_optimizable() on every entry, before anything
 *     of the library is probed (UKPROBES_OPT_JUMP/FTRACE/NONE and why, or
 *     -errno: not probe-able).
 *  3. The real thing: a kprobe with a pre_handler only (it counts) on
 *     every entry, with register_kprobes() in batches; a batch that fails
 *     (it is rolled back) goes one by one, and each refusal is tallied by
 *     errno. Probes on the functions the library calls while it registers
 *     (malloc, pthread_mutex_lock, ...) are hit meanwhile: counted, and
 *     that is what makes libc slow to register.
 *  4. ukprobes_wait_optimizer(); then each probe is [OPTIMIZED], [FTRACE]
 *     or neither, and for neither the optimizer's reason (the site's
 *     why, read under the registry lock; the prediction's when it has
 *     none).
 *  5. Everything unregistered before the next library.
 *
 * A prediction that the result contradicts is counted and named: the
 * public ukprobes_optimizable() should tell what registration does.
 *
 * The three libraries take well under a second together, so --quick (CI)
 * measures them all the same; it is only recorded.
 *
 * Usage: bench_coverage [--quick] [--lib SONAME]... [--batch N] [--json FILE]
 *                       [--verbose]   (every entry that is not optimized,
 *                                      with its first bytes, on stderr)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ukprobes.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "base/grow_array.h"
#include "bench.h"
#include "lib_entries.h"
#include "opt_region.h"

#define MAX_LIBS 8
#define MAX_KEYS 48
#define MAX_EXAMPLES 4

/* Counts per reason (why strings, errno names) and, for a probe left
 * without a jump, the instruction in the way; a few examples each. */
struct tally {
	int n;
	struct {
		const char *key;
		const char *sub;         /* or NULL */
		unsigned long count;
		const char *ex[MAX_EXAMPLES];
	} k[MAX_KEYS];
	unsigned long dropped;   /* keys beyond MAX_KEYS (counted nowhere else) */
};

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void tally_add(struct tally *t, const char *key, const char *sub, const char *example)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (same(t->k[i].key, key) && same(t->k[i].sub, sub))
			break;
	if (i == t->n) {
		if (t->n == MAX_KEYS) {
			t->dropped++;
			return;
		}
		t->k[t->n].key = key;
		t->k[t->n++].sub = sub;
	}
	if (t->k[i].count < MAX_EXAMPLES)
		t->k[i].ex[t->k[i].count] = example;
	t->k[i].count++;
}

/* One class of entries of a library: its functions, or its IFUNC
 * implementations. */
struct cover {
	unsigned long entries, probeable, jump, ftrace;
	unsigned long pred_jump, pred_ftrace, pred_none, pred_err;
	struct tally why;        /* registered, not optimized (opt_region.h) */
	struct tally refused;    /* register_kprobe's errno */
	struct tally mismatch;   /* prediction vs result */
};

struct lib_result {
	const char *soname;      /* NULL: the main program (--self) */
	const char *exe;         /* --exe: measured in a child running it */
	char *fragment;          /* ... whose JSON object this is */
	bool ok;
	char err[256];
	struct lib_entries le;
	struct cover fn, ifn;
	unsigned long self_hits;             /* while registering and optimizing */
	double register_s, optimize_s, unregister_s;
	/* --insns: instruction boundaries inside the functions, sampled */
	struct lib_entries pts;
	struct cover ins;
	size_t boundaries;       /* all of them, entries excluded */
	double ins_register_s;
};

/* One pass: a set of probe points and the counts they go to. */
struct pass {
	struct lib_entries *le;
	struct cover *fn, *ifn;  /* ifn: the points that are IFUNC implementations */
};

/* ------------------------------------------------------------ probes */

struct probe {
	struct kprobe kp;
	_Atomic unsigned long hits;
	int pred;                /* ukprobes_optimizable() */
	const char *pred_why;
	bool registered;
	int err;                 /* register_kprobe()'s refusal */
	unsigned char code[32];  /* the entry's first bytes, before probing */
};

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)regs;
	atomic_fetch_add_explicit(&((struct probe *)p)->hits, 1, memory_order_relaxed);
	return 0;
}

static const char *errname(int err)
{
	const char *s = strerrorname_np(err < 0 ? -err : err);

	return s ? s : "unknown errno";
}

/* The optimizer's own reason for a registered probe that has no jump. */
static const char *site_why(const struct probe *p)
{
	const char *why = NULL;

	if (ukp_lock_for_show())
		return NULL;
	{
		struct ukp_site *s = ukp_site_lookup((uintptr_t)p->kp.addr);

		if (s)
			why = ukp_opt_why(s);
	}
	ukp_unlock_for_show();
	return why;
}

/* The first bytes at addr; zeros past the end of its mapping. */
static void snapshot(unsigned char *buf, size_t len, uintptr_t addr)
{
	memset(buf, 0, len);
	if (copy_from_user_nofault(buf, (const void *)addr, len) == 0)
		return;
	for (size_t i = 0; i < len; i++)
		if (copy_from_user_nofault(buf + i, (const void *)(addr + i), 1))
			break;
}

static void print_entry(const struct lib_entry *e, const struct probe *p, const char *what)
{
	fprintf(stderr, "  %-32s %#lx ", e->name, (unsigned long)e->addr);
	for (size_t i = 0; i < 12; i++)
		fprintf(stderr, "%02x", p->code[i]);
	fprintf(stderr, "  %s\n", what);
}

/* Register ps[0..n) in batches; refusals one by one. */
static void register_batched(struct probe *ps, size_t n, size_t batch, const struct pass *ps_)
{
	struct kprobe **v = calloc(batch, sizeof(*v));
	size_t *idx = calloc(batch, sizeof(*idx));

	if (!v || !idx)
		abort();
	for (size_t i = 0; i < n;) {
		size_t k = 0, first = i;

		/* predicted probe-able ones batch; the others go alone */
		for (; i < n && k < batch; i++) {
			if (ps[i].pred < 0)
				continue;
			idx[k] = i;
			v[k++] = &ps[i].kp;
		}
		if (k && register_kprobes(v, (int)k) == 0) {
			for (size_t j = 0; j < k; j++)
				ps[idx[j]].registered = true;
			k = 0;
		}
		for (size_t j = first; j < i; j++) {
			struct probe *p = &ps[j];
			const struct lib_entry *e = &ps_->le->v[j];
			struct cover *c = e->ifunc ? ps_->ifn : ps_->fn;
			int ret;

			if (p->registered)
				continue;
			/* the reuse idiom: a rolled-back probe may have its
			 * addr moved past an endbr64 */
			p->kp.addr = (kprobe_opcode_t *)e->addr;
			p->kp.flags = 0;
			ret = register_kprobe(&p->kp);
			if (ret) {
				p->err = ret;
				tally_add(&c->refused, errname(ret), NULL, e->name);
				if (p->pred >= 0)
					tally_add(&c->mismatch, "probe-able predicted, refused", NULL, e->name);
				continue;
			}
			p->registered = true;
			if (p->pred < 0)
				tally_add(&c->mismatch, "refusal predicted, registered", NULL, e->name);
		}
	}
	free(v);
	free(idx);
}

static void classify(struct probe *ps, const struct pass *ps_, bool verbose)
{
	for (size_t i = 0; i < ps_->le->n; i++) {
		const struct lib_entry *e = &ps_->le->v[i];
		struct cover *c = e->ifunc ? ps_->ifn : ps_->fn;
		struct probe *p = &ps[i];
		const char *why;
		size_t off;

		if (!p->registered) {
			if (verbose)
				print_entry(e, p, errname(p->err));
			continue;
		}
		c->probeable++;
		if (kprobe_ftrace(&p->kp)) {
			c->ftrace++;
			if (p->pred != UKPROBES_OPT_FTRACE)
				tally_add(&c->mismatch, "[FTRACE] not predicted", NULL, e->name);
			continue;
		}
		if (kprobe_optimized(&p->kp)) {
			c->jump++;
			if (p->pred != UKPROBES_OPT_JUMP)
				tally_add(&c->mismatch, "[OPTIMIZED] not predicted", NULL, e->name);
			continue;
		}
		why = site_why(p);
		if (!why)
			why = p->pred_why;
		if (!why)
			why = "not optimized, no reason given";
		/* the probe may sit past an endbr64 */
		off = (uintptr_t)p->kp.addr - e->addr;
		tally_add(&c->why, why,
			  off < sizeof(p->code) ? opt_region_blocker(p->code + off,
								    sizeof(p->code) - off,
								    (uintptr_t)p->kp.addr)
						: NULL,
			  e->name);
		if (p->pred == UKPROBES_OPT_JUMP || p->pred == UKPROBES_OPT_FTRACE)
			tally_add(&c->mismatch, "optimization predicted, not done", NULL, e->name);
		if (verbose)
			print_entry(e, p, why);
	}
}

static double secs_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1e9;
}

static unsigned long sum_hits(const struct probe *ps, size_t n)
{
	unsigned long s = 0;

	for (size_t i = 0; i < n; i++)
		s += atomic_load_explicit(&ps[i].hits, memory_order_relaxed);
	return s;
}

/* Steps 2 to 5 on one set of probe points. Returns the self-hits. */
static unsigned long cover_pass(const struct pass *pa, size_t batch, bool verbose, double *reg_s,
				double *opt_s, double *unreg_s)
{
	struct kprobe **all;
	struct probe *ps;
	size_t n = pa->le->n, nreg = 0;
	unsigned long hits;
	uint64_t t0;

	ps = calloc(n + 1, sizeof(*ps));
	all = calloc(n + 1, sizeof(*all));
	if (!ps || !all)
		abort();

	/* 2. prediction, before anything of the library is probed */
	for (size_t i = 0; i < n; i++) {
		const struct lib_entry *e = &pa->le->v[i];
		struct cover *c = e->ifunc ? pa->ifn : pa->fn;

		c->entries++;
		ps[i].kp.addr = (kprobe_opcode_t *)e->addr;
		ps[i].kp.pre_handler = count_pre;
		snapshot(ps[i].code, sizeof(ps[i].code), e->addr);
		ps[i].pred = ukprobes_optimizable((void *)e->addr, &ps[i].pred_why);
		if (ps[i].pred == UKPROBES_OPT_JUMP)
			c->pred_jump++;
		else if (ps[i].pred == UKPROBES_OPT_FTRACE)
			c->pred_ftrace++;
		else if (ps[i].pred == UKPROBES_OPT_NONE)
			c->pred_none++;
		else
			c->pred_err++;
	}

	/* 3. registration; 4. the optimizer */
	t0 = bench_now_ns();
	register_batched(ps, n, batch, pa);
	*reg_s = secs_since(t0);
	t0 = bench_now_ns();
	ukprobes_wait_optimizer();
	if (opt_s)
		*opt_s = secs_since(t0);
	hits = sum_hits(ps, n);
	classify(ps, pa, verbose);

	/* 5. */
	for (size_t i = 0; i < n; i++)
		if (ps[i].registered)
			all[nreg++] = &ps[i].kp;
	t0 = bench_now_ns();
	unregister_kprobes(all, (int)nreg);
	if (unreg_s)
		*unreg_s = secs_since(t0);
	free(all);
	free(ps);
	return hits;
}

/* xorshift64*: the sample is the same from run to run for one seed */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

/*
 * --insns: n instruction boundaries drawn (seeded, without repeats) from
 * all those inside the exported functions of the library, entries
 * excluded; the functions' code is decoded from their first byte with
 * the library's decoder.
 */
static int sample_points(struct lib_result *r, size_t n, uint64_t seed)
{
	uintptr_t *all = NULL;
	size_t nall = 0, cap = 0, namelen = 0;
	char *names;

	for (size_t i = 0; i < r->le.n; i++) {
		const struct lib_entry *e = &r->le.v[i];
		unsigned char code[16];
		size_t off = 0;

		if (e->ifunc || !e->size)
			continue;
		while (off < e->size) {
			size_t avail = e->size - off < sizeof(code) ? e->size - off : sizeof(code);
			size_t len;

			if (copy_from_user_nofault(code, (const void *)(e->addr + off), avail))
				break;
			len = arch_insn_length(code, avail);
			if (!len)
				break;
			if (off) {
				if (nall == cap) {
					cap = cap ? cap * 2 : 4096;
					all = realloc(all, cap * sizeof(*all));
					if (!all)
						abort();
				}
				all[nall++] = e->addr + off;
			}
			off += len;
		}
	}
	r->boundaries = nall;
	if (n > nall)
		n = nall;
	r->pts.v = calloc(n ? n : 1, sizeof(*r->pts.v));
	names = r->pts.strtab = calloc(n ? n : 1, 96);
	if (!r->pts.v || !names)
		abort();
	if (!seed)
		seed = 1;
	/* a partial shuffle; a point within 16 bytes of one already drawn
	 * is passed over: two probes in one 5-byte region would measure
	 * the refusal of probes in each other's way, not the code */
	for (size_t i = 0, got = 0; got < n && i < nall; i++) {
		size_t k = i + (size_t)(next_rand(&seed) % (nall - i));
		uintptr_t a = all[k];
		bool near = false;

		all[k] = all[i];
		all[i] = a;
		for (size_t j = 0; j < got && !near; j++)
			near = (a > all[j] ? a - all[j] : all[j] - a) < 16;
		if (!near)
			all[got++] = a;
		if (i + 1 == nall)
			n = got;
	}
	if (n)
		qsort(all, n, sizeof(*all), ukp_addr_cmp);
	for (size_t i = 0; i < n; i++) {
		/* the function containing it: the last entry at or before */
		size_t lo = 0, hi = r->le.n;
		const struct lib_entry *e = NULL;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (r->le.v[mid].addr <= all[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k-- > 0;) {
			if (!r->le.v[k].ifunc && r->le.v[k].size &&
			    all[i] - r->le.v[k].addr < r->le.v[k].size) {
				e = &r->le.v[k];
				break;
			}
		}
		snprintf(names + namelen, 96, "%.70s+%#lx", e ? e->name : "?",
			 e ? (unsigned long)(all[i] - e->addr) : 0ul);
		r->pts.v[i] = (struct lib_entry){ .addr = all[i], .name = names + namelen,
						  .names = 1 };
		namelen += 96;
	}
	r->pts.n = n;
	free(all);
	return 0;
}

static void cover_library(struct lib_result *r, size_t batch, size_t insns, uint64_t seed,
			  bool verbose)
{
	void *h = dlopen(r->soname, RTLD_NOW);
	struct pass entries = { &r->le, &r->fn, &r->ifn };

	if (!h) {
		snprintf(r->err, sizeof(r->err), "dlopen: %s", dlerror());
		return;
	}
	if (lib_entries_load(h, &r->le, r->err, sizeof(r->err)))
		return;
	r->self_hits = cover_pass(&entries, batch, verbose, &r->register_s, &r->optimize_s,
				  &r->unregister_s);
	if (insns) {
		struct pass inner = { &r->pts, &r->ins, &r->ins };
		double reg_s;

		if (verbose)
			fprintf(stderr, "bench_coverage: %s, instruction boundaries not optimized:\n",
				r->le.path);
		sample_points(r, insns, seed);
		r->self_hits += cover_pass(&inner, batch, verbose, &reg_s, NULL, NULL);
		r->ins_register_s = reg_s;
	}
	r->ok = true;
}

/* ------------------------------------------------------------ output */

static void json_tally(FILE *f, const char *name, const struct tally *t)
{
	fprintf(f, "\"%s\": [", name);
	for (int i = 0; i < t->n; i++) {
		fprintf(f, "%s{\"reason\": ", i ? ", " : "");
		json_str(f, t->k[i].key);
		if (t->k[i].sub) {
			fprintf(f, ", \"instruction\": ");
			json_str(f, t->k[i].sub);
		}
		fprintf(f, ", \"count\": %lu, \"examples\": [", t->k[i].count);
		for (unsigned long j = 0; j < t->k[i].count && j < MAX_EXAMPLES; j++) {
			fprintf(f, "%s", j ? ", " : "");
			json_str(f, t->k[i].ex[j]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]");
	if (t->dropped)
		fprintf(f, ", \"%s_untallied\": %lu", name, t->dropped);
}

static void json_cover(FILE *f, const char *name, const struct cover *c)
{
	fprintf(f, "\"%s\": {\"entries\": %lu, \"probeable\": %lu, \"optimized\": %lu, "
		   "\"jump\": %lu, \"ftrace\": %lu,\n      \"predicted\": {\"jump\": %lu, "
		   "\"ftrace\": %lu, \"none\": %lu, \"error\": %lu},\n      ",
		name, c->entries, c->probeable, c->jump + c->ftrace, c->jump, c->ftrace, c->pred_jump,
		c->pred_ftrace, c->pred_none, c->pred_err);
	json_tally(f, "not_optimized", &c->why);
	fprintf(f, ",\n      ");
	json_tally(f, "refused", &c->refused);
	fprintf(f, ",\n      ");
	json_tally(f, "mismatches", &c->mismatch);
	fprintf(f, "}");
}

/* One library's object of the "libraries" array. */
static void json_library(FILE *f, const struct lib_result *r, size_t insns, uint64_t seed)
{
	if (r->fragment) {	/* measured by the child (--exe) */
		fputs(r->fragment, f);
		return;
	}
	fprintf(f, "    {\"soname\": ");
	if (r->soname)
		json_str(f, r->soname);
	else if (r->exe)
		json_str(f, r->exe);
	else	/* the main program, by its file's name */
		json_str(f, strrchr(r->le.path, '/') ? strrchr(r->le.path, '/') + 1 : r->le.path);
	if (!r->ok) {
		fprintf(f, ", \"status\": \"failed\", \"reason\": ");
		json_str(f, r->err);
		fprintf(f, "}");
		return;
	}
	fprintf(f, ", \"status\": \"ok\", \"path\": ");
	json_str(f, r->le.path);
	fprintf(f, ", \"executable\": %s", r->soname ? "false" : "true");
	fprintf(f, ",\n      \"func_symbols\": %zu, \"ifunc_symbols\": %zu, "
		   "\"ifunc_implementations\": %zu, \"ifunc_shared_with_functions\": %zu,\n",
		r->le.func_syms, r->le.ifunc_syms, r->le.ifunc_impls, r->le.ifunc_shared);
	fprintf(f, "      \"register_seconds\": %.3f, \"optimize_seconds\": %.3f, "
		   "\"unregister_seconds\": %.3f, \"self_hits\": %lu,\n      ",
		r->register_s, r->optimize_s, r->unregister_s, r->self_hits);
	json_cover(f, "functions", &r->fn);
	fprintf(f, ",\n      ");
	json_cover(f, "ifunc", &r->ifn);
	if (insns) {
		fprintf(f, ",\n      \"instruction_boundaries\": %zu, \"sampled\": %zu, "
			   "\"seed\": %llu, \"instructions_register_seconds\": %.3f,\n      ",
			r->boundaries, r->pts.n, (unsigned long long)seed, r->ins_register_s);
		json_cover(f, "instructions", &r->ins);
	}
	fprintf(f, "}");
}

static void write_json(FILE *f, const struct lib_result *rs, int n, size_t batch, bool quick,
		       size_t insns, uint64_t seed, double secs)
{
	fprintf(f, "{\n  \"batch\": %zu, \"quick\": %s, \"optimization\": %s, \"seconds\": %.1f,\n",
		batch, quick ? "true" : "false", kprobes_optimization() ? "true" : "false", secs);
	fprintf(f, "  \"libraries\": [\n");
	for (int i = 0; i < n; i++) {
		json_library(f, &rs[i], insns, seed);
		fprintf(f, "%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}

/*
 * Start the library's optimizer thread before any libc function is
 * probed: glibc runs __ctype_init and _setjmp in a new thread before it
 * restores the thread's signal mask (all signals blocked), and a
 * breakpoint hit with SIGTRAP blocked kills the process. The thread
 * starts at the first registration, so a probe on our own code does it.
 */
__attribute__((noinline)) static int warm_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

static int start_optimizer(void)
{
	static struct probe warm = { .kp.pre_handler = count_pre };
	int ret;

	warm.kp.addr = (kprobe_opcode_t *)(uintptr_t)warm_target;
	ret = register_kprobe(&warm.kp);
	if (ret)
		return ret;
	ukprobes_wait_optimizer();
	unregister_kprobe(&warm.kp);
	return 0;
}

static double pct(unsigned long a, unsigned long b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void print_summary(const struct lib_result *r)
{
	const char *name = r->soname ? r->soname : r->le.path;

	fprintf(stderr,
		"bench_coverage: %s: %lu entries, %lu probe-able, %lu optimized (%.1f%% of "
		"probe-able); IFUNC implementations %lu, %lu optimized; register %.2f s "
		"(%lu self-hits), optimizer %.2f s\n",
		name, r->fn.entries, r->fn.probeable, r->fn.jump + r->fn.ftrace,
		pct(r->fn.jump + r->fn.ftrace, r->fn.probeable), r->ifn.entries,
		r->ifn.jump + r->ifn.ftrace, r->register_s, r->self_hits, r->optimize_s);
	if (r->pts.n)
		fprintf(stderr,
			"bench_coverage: %s: %lu of %zu instruction boundaries, %lu probe-able, "
			"%lu optimized (%.1f%% of probe-able)\n",
			name, r->ins.entries, r->boundaries, r->ins.probeable,
			r->ins.jump + r->ins.ftrace, pct(r->ins.jump + r->ins.ftrace, r->ins.probeable));
}

/*
 * --exe PATH: an executable cannot be dlopen()ed, so it measures itself:
 * PATH runs with bench_coverage_preload.so (next to this program)
 * preloaded, which calls our main with --self before PATH's own main
 * (bench_coverage_preload.c); the JSON object of its one library comes
 * back in a file.
 */
static int run_exe(struct lib_result *r, const char *self_args)
{
	char preload[4200], dir[4096], out[] = "/tmp/bench_coverage.XXXXXX", args[512];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	char *slash;
	FILE *f;
	long size;
	pid_t pid;
	int fd, st;

	if (n <= 0)
		return -errno;
	dir[n] = 0;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	snprintf(preload, sizeof(preload), "%s/bench_coverage_preload.so", dir);
	fd = mkstemp(out);
	if (fd < 0)
		return -errno;
	close(fd);
	snprintf(args, sizeof(args), "--self --json %s %s", out, self_args);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		setenv("LD_PRELOAD", preload, 1);
		setenv("BENCH_COVERAGE_ARGS", args, 1);
		execl(r->exe, r->exe, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(r->err, sizeof(r->err), "%.100s with %.100s: %s %d", r->exe, preload,
			 WIFEXITED(st) ? "exit status" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		unlink(out);
		return -EIO;
	}
	f = fopen(out, "r");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET)) {
		snprintf(r->err, sizeof(r->err), "%s: no result", r->exe);
		if (f)
			fclose(f);
		unlink(out);
		return -EIO;
	}
	r->fragment = calloc(1, (size_t)size + 1);
	if (!r->fragment || fread(r->fragment, 1, (size_t)size, f) != (size_t)size)
		abort();
	fclose(f);
	unlink(out);
	r->ok = true;
	return 0;
}

int bench_coverage_main(int argc, char **argv)
{
	static struct lib_result rs[MAX_LIBS];
	const char *json = NULL;
	char self_args[256] = "";
	size_t batch = 64, insns = 0;
	uint64_t seed = 1;
	bool quick = false, verbose = false, self = false;
	int nlibs = 0, status = 0;
	uint64_t start = bench_now_ns();
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--verbose")) {
			verbose = true;
		} else if (!strcmp(argv[i], "--self")) {
			self = true;
		} else if (!strcmp(argv[i], "--lib") && i + 1 < argc && nlibs < MAX_LIBS) {
			rs[nlibs++].soname = argv[++i];
		} else if (!strcmp(argv[i], "--exe") && i + 1 < argc && nlibs < MAX_LIBS) {
			rs[nlibs++].exe = argv[++i];
		} else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
			batch = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--insns") && i + 1 < argc) {
			insns = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else {
			fprintf(stderr,
				"usage: %s [--quick] [--lib SONAME]... [--exe PATH]... [--insns N] "
				"[--seed S] [--batch N] [--json FILE] [--verbose]\n",
				argv[0]);
			return 2;
		}
	}
	if (!batch)
		return 2;
	if (self) {
		/* in the child of --exe: the main program alone, its object */
		nlibs = 1;
		rs[0].soname = NULL;
	} else if (!nlibs) {
		static const char *const all[] = { "libc.so.6", "libz.so.1", "libsqlite3.so.0" };

		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			rs[nlibs++].soname = all[i];
	}
	snprintf(self_args, sizeof(self_args), "--batch %zu --insns %zu --seed %llu%s%s", batch,
		 insns, (unsigned long long)seed, quick ? " --quick" : "",
		 verbose ? " --verbose" : "");

	/* (in the child of --exe the library blacklists the preloaded
	 * object, ours; only the program is probed there, not libc) */
	if (!self && start_optimizer()) {
		fprintf(stderr, "bench_coverage: cannot probe its own code\n");
		return 1;
	}
	for (int i = 0; i < nlibs; i++) {
		struct lib_result *r = &rs[i];

		if (r->exe) {
			if (run_exe(r, self_args)) {
				fprintf(stderr, "bench_coverage: %s: %s\n", r->exe, r->err);
				status = 1;
			}
			continue;
		}
		if (verbose)
			fprintf(stderr, "bench_coverage: %s, entries not optimized:\n",
				r->soname ? r->soname : "the main program");
		cover_library(r, batch, insns, seed, verbose);
		if (!r->ok) {
			fprintf(stderr, "bench_coverage: %s: %s\n", r->soname, r->err);
			status = 1;
			continue;
		}
		print_summary(r);
	}

	f = json ? fopen(json, "w") : stdout;
	if (!f) {
		perror(json);
		return 1;
	}
	if (self)
		json_library(f, &rs[0], insns, seed);
	else
		write_json(f, rs, nlibs, batch, quick, insns, seed, secs_since(start));
	if (json)
		fclose(f);
	for (int i = 0; i < nlibs; i++) {
		lib_entries_free(&rs[i].le);
		lib_entries_free(&rs[i].pts);
		free(rs[i].fragment);
	}
	return status;
}

#ifndef BENCH_COVERAGE_PRELOAD
int main(int argc, char **argv)
{
	return bench_coverage_main(argc, argv);
}
#endif
