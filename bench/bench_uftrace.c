// SPDX-License-Identifier: MIT
/*
 * bench_uftrace.c - the target under uftrace's dynamic patching. run.sh
 * runs it as
 *
 *   uftrace record --no-libcall -P '^bench_target$' bench_uftrace ...
 *   uftrace record --no-libcall -P '^bench_target_nop5$' bench_uftrace_nop5 ...
 *
 * Two programs because uftrace decides per program how to patch: one
 * that has a function starting with a 5-byte NOP is taken for a
 * -mfentry -mnop-mcount build, and then only such NOPs are patched
 * (bench_uftrace_nop5, built with -DBENCH_NOP5 and targets_nop5.S);
 * otherwise it relocates the first instructions of the function into a
 * trampoline (bench_uftrace, plain bench_target).
 *
 * Times, in turn, the unpatched copy bench_target2 and the patched target;
 * checks that uftrace did patch it (its first bytes changed). Writes JSON.
 *
 * Usage: bench_uftrace [--quick] [--reps N] [--iters N] [--json FILE]
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef BENCH_NOP5
#define TARGET bench_target_nop5
#define TARGET_NAME "bench_target_nop5"
static const unsigned char pristine[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
#else
#define TARGET bench_target
#define TARGET_NAME "bench_target"
static const unsigned char pristine[5] = { 0x8d, 0x47, 0x01, 0x01, 0xf0 };
#endif

int main(int argc, char **argv)
{
	const char *json = NULL;
	unsigned long iters = 100000, call_iters;
	int reps = 7;
	bool patched = memcmp((const void *)(uintptr_t)TARGET, pristine, 5) != 0;
	double *base, *v, *ov;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			iters = 2000;
			reps = 3;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--iters N] [--json FILE]\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || iters < 1)
		return 2;
	call_iters = iters * 100;
	base = calloc((size_t)reps, sizeof(double));
	v = calloc((size_t)reps, sizeof(double));
	ov = calloc((size_t)reps, sizeof(double));
	if (!base || !v || !ov)
		return 1;

	bench_call_loop(TARGET, iters / 10 + 1);
	for (int r = 0; r < reps; r++) {
		base[r] = bench_call_loop(bench_target2, call_iters);
		v[r] = bench_call_loop(TARGET, iters);
		ov[r] = v[r] - base[r];
	}

	f = json ? fopen(json, "w") : stdout;
	if (!f) {
		perror(json);
		return 1;
	}
	fprintf(f, "{\n  \"target\": \"%s\", \"reps\": %d, \"iters\": %lu, \"call_iters\": %lu,\n",
		TARGET_NAME, reps, iters, call_iters);
	fprintf(f, "  \"target_calls\": %lu,\n", (unsigned long)reps * iters + iters / 10 + 1);
	fprintf(f, "  \"call\": {");
	json_stat_fields(f, bench_stats(base, reps));
	fprintf(f, "},\n");
	if (!patched) {
		fprintf(f, "  \"status\": \"skipped\", \"reason\": \"uftrace did not patch %s\"\n",
			TARGET_NAME);
	} else {
		fprintf(f, "  \"status\": \"ok\", \"ns\": {");
		json_stat_fields(f, bench_stats(v, reps));
		fprintf(f, "}, \"overhead_ns\": {");
		json_stat_fields(f, bench_stats(ov, reps));
		fprintf(f, "}\n");
	}
	fprintf(f, "}\n");
	if (json)
		fclose(f);
	return 0;
}
