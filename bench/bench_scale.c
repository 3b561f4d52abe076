// SPDX-License-Identifier: MIT
/*
 * bench_scale.c - does the hit path scale? Hits per second with one
 * thread, with two threads on the same probe, and with two threads on
 * different probes (the 2006 paper's Figure 4), for:
 *
 *   k       a kprobe with a pre and a post handler (bench_target, and
 *           bench_target2 for the second probe)
 *   1rt     the bare int3 -> SIGTRAP round trip (what the kernel's signal
 *           delivery allows; "same" and "different" are one case)
 *   uprobe  the kernel's uprobe on the same functions (tracefs; skipped
 *           with the reason when not root or without tracefs)
 *
 * Each thread is pinned to its own CPU, counts its hits in thread-local
 * counters (so the handlers share no cache line), makes iters calls; the
 * rate is all hits over the time from the first thread's start to the
 * last one's end. Median, min and max over the repetitions; the scaling
 * factor (two threads / one thread) is taken per repetition.
 *
 * Usage: bench_scale [--quick] [--reps N] [--iters N] [--json FILE]
 *                    [--no-peers] [--tracefs-group NAME]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ukprobes.h"
#include "bench.h"

enum { S_K, S_RT1, S_UP, NS };
enum { C_T1, C_SAME, C_DIFF, NC };

static const char *const sid[NS] = { "k", "1rt", "uprobe" };
static const char *const slabel[NS] = {
	"kprobe, pre+post handler",
	"bare int3->SIGTRAP round trip",
	"kernel uprobe",
};
static const char *const cid[NC] = { "t1", "t2_same", "t2_diff" };

static __thread unsigned long my_pre, my_post;
static _Atomic unsigned long all_pre, all_post;

static int on_pre(struct kprobe *p, struct pt_regs *regs)
{
	my_pre++;
	return 0;
}

static void on_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	my_post++;
}

struct worker {
	pthread_t th;
	int idx;
	int what;          /* S_* */
	bench_fn fn;
	unsigned long iters;
	uint64_t t0, t1;
	int cpu;
};

static pthread_barrier_t start;

static void *work(void *arg)
{
	struct worker *w = arg;

	w->cpu = bench_pin(w->idx);
	my_pre = my_post = 0;
	pthread_barrier_wait(&start);
	w->t0 = bench_now_ns();
	if (w->what == S_RT1)
		bench_int3_loop(w->iters, 1);
	else
		bench_call_loop(w->fn, w->iters);
	w->t1 = bench_now_ns();
	atomic_fetch_add(&all_pre, my_pre);
	atomic_fetch_add(&all_post, my_post);
	return NULL;
}

static struct kprobe kps[2];
static struct tfs tfs;
static int up_ev[2] = { -1, -1 };
static char up_why[300];
static bool up_skipped;

static void fatal(const char *what, int err)
{
	fprintf(stderr, "bench_scale: %s: %d\n", what, err);
	exit(1);
}

/* Hits per second of one configuration, or 0 when a peer failed. */
static double run(int what, int conf, unsigned long iters)
{
	struct worker w[2];
	int nthreads = conf == C_T1 ? 1 : 2, ret;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	long h0 = 0, h1 = 0;
	bench_fn fns[2] = { bench_target, conf == C_DIFF ? bench_target2 : bench_target };

	atomic_store(&all_pre, 0);
	atomic_store(&all_post, 0);
	if (what == S_K) {
		for (int i = 0; i < 2; i++) {
			memset(&kps[i], 0, sizeof(kps[i]));
			kps[i].addr = (kprobe_opcode_t *)(uintptr_t)(i ? bench_target2 : bench_target);
			kps[i].pre_handler = on_pre;
			kps[i].post_handler = on_post;
			ret = register_kprobe(&kps[i]);
			if (ret)
				fatal("register_kprobe", ret);
		}
	} else if (what == S_RT1) {
		bench_bare_begin();
	} else {
		for (int i = 0; i < 2; i++) {
			ret = tfs_enable(&tfs, up_ev[i], true);
			if (ret) {
				snprintf(up_why, sizeof(up_why), "enabling the uprobe failed: %d", ret);
				up_skipped = true;
				return 0;
			}
			bench_call_loop(i ? bench_target2 : bench_target, 64);
			h0 += tfs_hits(&tfs, up_ev[i]);
		}
	}

	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .idx = i, .what = what, .fn = fns[i], .iters = iters };
		if (pthread_create(&w[i].th, NULL, work, &w[i]))
			fatal("pthread_create", 0);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		t0 = w[i].t0 < t0 ? w[i].t0 : t0;
		t1 = w[i].t1 > t1 ? w[i].t1 : t1;
	}
	pthread_barrier_destroy(&start);

	if (what == S_K) {
		unsigned long want = iters * (unsigned long)nthreads;

		if (atomic_load(&all_pre) != want || atomic_load(&all_post) != want) {
			fprintf(stderr, "bench_scale: k counted %lu pre, %lu post hits for %lu calls\n",
				atomic_load(&all_pre), atomic_load(&all_post), want);
			exit(1);
		}
		unregister_kprobe(&kps[0]);
		unregister_kprobe(&kps[1]);
	} else if (what == S_RT1) {
		bench_bare_end();
	} else {
		for (int i = 0; i < 2; i++) {
			h1 += tfs_hits(&tfs, up_ev[i]);
			tfs_enable(&tfs, up_ev[i], false);
		}
		if ((unsigned long)(h1 - h0) != iters * (unsigned long)nthreads) {
			snprintf(up_why, sizeof(up_why), "uprobe_profile counted %ld hits for %lu calls",
				 h1 - h0, iters * (unsigned long)nthreads);
			up_skipped = true;
			return 0;
		}
	}
	return (double)iters * nthreads * 1e9 / (double)(t1 - t0);
}

int main(int argc, char **argv)
{
	const char *json = NULL, *group = NULL;
	unsigned long iters = 50000;
	bool quick = false, peers = true;
	int reps = 7;
	double *v[NS][NC];
	uint64_t t0;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else if (!strcmp(argv[i], "--tracefs-group") && i + 1 < argc) {
			group = argv[++i];
		} else if (!strcmp(argv[i], "--no-peers")) {
			peers = false;
		} else {
			fprintf(stderr,
				"usage: %s [--quick] [--reps N] [--iters N] [--json FILE] "
				"[--no-peers] [--tracefs-group NAME]\n",
				argv[0]);
			return 2;
		}
	}
	if (quick) {
		iters = iters < 1000 ? iters : 1000;
		reps = reps < 3 ? reps : 3;
	}
	if (reps < 1 || iters < 1)
		return 2;
	bench_bare_init();
	for (int s = 0; s < NS; s++)
		for (int c = 0; c < NC; c++)
			v[s][c] = calloc((size_t)reps, sizeof(double));

	if (!peers) {
		up_skipped = true;
		snprintf(up_why, sizeof(up_why), "peers not requested (--no-peers)");
	} else if (!tfs_open(&tfs, group, up_why, sizeof(up_why))) {
		up_skipped = true;
	} else {
		up_ev[0] = tfs_add(&tfs, "sc_up_target", false, (const void *)(uintptr_t)bench_target,
				   up_why, sizeof(up_why));
		up_ev[1] = tfs_add(&tfs, "sc_up_target2", false,
				   (const void *)(uintptr_t)bench_target2, up_why, sizeof(up_why));
		up_skipped = up_ev[0] < 0 || up_ev[1] < 0;
	}
	if (up_skipped)
		fprintf(stderr, "bench_scale: skip uprobe: %s\n", up_why);

	t0 = bench_now_ns();
	/* warm-up */
	for (int s = 0; s < NS; s++)
		if (s != S_UP || !up_skipped)
			run(s, C_SAME, iters / 10 + 1);
	for (int r = 0; r < reps; r++)
		for (int s = 0; s < NS; s++)
			for (int c = 0; c < NC; c++) {
				if (s == S_UP && up_skipped)
					continue;
				if (s == S_RT1 && c == C_DIFF)
					continue;
				v[s][c][r] = run(s, c, iters);
			}
	tfs_close(&tfs);

	f = json ? fopen(json, "w") : stdout;
	if (!f) {
		perror(json);
		return 1;
	}
	fprintf(f, "{\n  \"cpus\": %d, \"reps\": %d, \"iters_per_thread\": %lu, \"seconds\": %.1f,\n",
		bench_ncpus(), reps, iters, (double)(bench_now_ns() - t0) / 1e9);
	fprintf(f, "  \"rows\": [\n");
	for (int s = 0; s < NS; s++) {
		fprintf(f, "    {\"id\": \"%s\", \"label\": \"%s\", ", sid[s], slabel[s]);
		if (s == S_UP && up_skipped) {
			fprintf(f, "\"status\": \"skipped\", \"reason\": ");
			json_str(f, up_why);
			fprintf(f, "}%s\n", s + 1 < NS ? "," : "");
			continue;
		}
		fprintf(f, "\"status\": \"ok\"");
		for (int c = 0; c < NC; c++) {
			double sc[reps];
			const char *which = c == C_DIFF ? "diff" : "same";

			if (s == S_RT1 && c == C_DIFF)
				continue;
			fprintf(f, ", \"%s\": {", cid[c]);
			json_stat_fields(f, bench_stats(v[s][c], reps));
			fprintf(f, "}");
			if (c == C_T1)
				continue;
			for (int r = 0; r < reps; r++)
				sc[r] = v[s][c][r] / v[s][C_T1][r];
			fprintf(f, ", \"scale_%s\": {", which);
			json_stat_fields(f, bench_stats(sc, reps));
			fprintf(f, "}");
		}
		fprintf(f, "}%s\n", s + 1 < NS ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (json)
		fclose(f);
	return 0;
}
