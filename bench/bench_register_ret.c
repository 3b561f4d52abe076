// SPDX-License-Identifier: MIT
/*
 * bench_register_ret.c - what registering return probes costs: one on
 * every function entry of libsqlite3.so.0 and libz.so.1 (sized
 * functions, one per address), registered and unregistered one by one
 * (register_kretprobe, unregister_kretprobe) and in one batch
 * (register_kretprobes, unregister_kretprobes). The entries register_kretprobe
 * refuses (the first pass, one by one) are left out of the timed ones.
 * Neither library is called while the probes are registered: the figures
 * time registration, not hits.
 *
 * Usage: bench_register_ret [--quick] [--reps N] [--no-optimize] [--json FILE]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <zlib.h>

#include "ukprobes.h"
#include "bench.h"

static const char *const libs[] = { "libsqlite3.so.0", "libz.so.1" };

static struct kretprobe *rps;
static struct kretprobe **rpp;
static size_t nrps, cap;

static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	(void)regs;
	return 0;
}

static int collect(void *arg, const struct ksym_info *sym)
{
	(void)arg;
	if (!(sym->flags & KSYM_FUNC) || (sym->flags & (KSYM_IFUNC | KSYM_DATA)))
		return 0;
	if (nrps && rps[nrps - 1].kp.addr == (kprobe_opcode_t *)sym->addr)
		return 0; /* an alias of the one before */
	if (nrps == cap) {
		cap = cap ? 2 * cap : 1024;
		rps = realloc(rps, cap * sizeof(*rps));
		if (!rps)
			abort();
	}
	memset(&rps[nrps], 0, sizeof(rps[nrps]));
	rps[nrps].kp.addr = (kprobe_opcode_t *)sym->addr;
	rps[nrps++].handler = ret_handler;
	return 0;
}

/* Ready for registering again (the kernel's reuse idiom). */
static void reset(size_t n)
{
	for (size_t i = 0; i < n; i++)
		rpp[i]->kp.flags = 0;
}

int main(int argc, char **argv)
{
	int reps = 5, quick = 0;
	const char *json = NULL;
	double *one, *one_un, *batch, *batch_un;
	struct bench_stat s1, s1u, sb, sbu;
	size_t n = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
			reps = 1;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--no-optimize")) {
			kprobes_set_optimization(false);
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--no-optimize] "
					"[--json FILE]\n", argv[0]);
			return 2;
		}
	}
	if (reps < 1)
		reps = 1;
	/* both libraries loaded */
	if (!zlibVersion()[0] || !sqlite3_libversion()[0])
		return 1;
	for (size_t l = 0; l < sizeof(libs) / sizeof(libs[0]); l++)
		module_kallsyms_on_each_symbol_info(libs[l], collect, NULL);
	rpp = calloc(nrps ? nrps : 1, sizeof(*rpp));
	if (!rpp)
		return 1;
	/* the entries that take a return probe */
	for (size_t i = 0; i < nrps; i++) {
		if (register_kretprobe(&rps[i]))
			continue;
		unregister_kretprobe(&rps[i]);
		rpp[n++] = &rps[i];
	}
	if (quick && n > 200)
		n = 200;
	one = calloc((size_t)reps, sizeof(*one));
	one_un = calloc((size_t)reps, sizeof(*one_un));
	batch = calloc((size_t)reps, sizeof(*batch));
	batch_un = calloc((size_t)reps, sizeof(*batch_un));
	if (!one || !one_un || !batch || !batch_un)
		return 1;
	for (int r = 0; r < reps; r++) {
		uint64_t t0, t1, t2;

		reset(n);
		t0 = bench_now_ns();
		for (size_t i = 0; i < n; i++)
			if (register_kretprobe(rpp[i])) {
				fprintf(stderr, "bench_register_ret: register_kretprobe refused "
						"%p\n", (void *)rpp[i]->kp.addr);
				return 1;
			}
		t1 = bench_now_ns();
		for (size_t i = 0; i < n; i++)
			unregister_kretprobe(rpp[i]);
		t2 = bench_now_ns();
		one[r] = (double)(t1 - t0) / 1e6;
		one_un[r] = (double)(t2 - t1) / 1e6;

		reset(n);
		t0 = bench_now_ns();
		if (register_kretprobes(rpp, (int)n)) {
			fprintf(stderr, "bench_register_ret: register_kretprobes failed\n");
			return 1;
		}
		t1 = bench_now_ns();
		unregister_kretprobes(rpp, (int)n);
		t2 = bench_now_ns();
		batch[r] = (double)(t1 - t0) / 1e6;
		batch_un[r] = (double)(t2 - t1) / 1e6;
	}
	s1 = bench_stats(one, reps);
	s1u = bench_stats(one_un, reps);
	sb = bench_stats(batch, reps);
	sbu = bench_stats(batch_un, reps);
	printf("return probes: %zu of %zu entries (libsqlite3.so.0, libz.so.1), %d reps, "
	       "ms (median, min-max)\n", n, nrps, reps);
	printf("  register_kretprobe one by one   %8.2f (%.2f-%.2f)\n", s1.med, s1.min, s1.max);
	printf("  unregister_kretprobe one by one %8.2f (%.2f-%.2f)\n", s1u.med, s1u.min, s1u.max);
	printf("  register_kretprobes             %8.2f (%.2f-%.2f)\n", sb.med, sb.min, sb.max);
	printf("  unregister_kretprobes           %8.2f (%.2f-%.2f)\n", sbu.med, sbu.min, sbu.max);
	if (json) {
		FILE *f = fopen(json, "w");

		if (!f)
			return 1;
		fprintf(f, "{\"probes\": %zu, \"entries\": %zu,\n", n, nrps);
		fprintf(f, " \"register_one_ms\": {");
		json_stat_fields(f, s1);
		fprintf(f, "},\n \"unregister_one_ms\": {");
		json_stat_fields(f, s1u);
		fprintf(f, "},\n \"register_batch_ms\": {");
		json_stat_fields(f, sb);
		fprintf(f, "},\n \"unregister_batch_ms\": {");
		json_stat_fields(f, sbu);
		fprintf(f, "}}\n");
		fclose(f);
	}
	return 0;
}
