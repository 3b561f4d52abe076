/* SPDX-License-Identifier: MIT */
/*
 * bench_tool_hit [--lib] N: the per-hit micro measure of the tool
 * benchmark (bench_tool.py). Calls bench_tool_target (tool_target.S, bench_target's code) N times and
 * prints the time per call, measured around the loop only (the start-up
 * of ukprobe and its agent is not in it), in the thread's CPU time (the
 * machine is shared: wall time counts other processes' turns):
 * "ns_per_call X wall_ns_per_call Y hits N".
 *
 * Run alone, under `ukprobe stat` and under `ukprobe trace -o` with a
 * probe on bench_target. `bench_tool_hit --serve` waits for ukprobe -p
 * instead (ab_agent_hit.py): it prints "ready", then runs the loop for
 * each N read from its standard input and prints its line, until EOF. The variant built with -DBENCH_TOOL_LIB
 * (bench_tool_lib) puts the library's own jump-optimized kprobe there
 * first (a pre_handler that counts: the `o` row of bench_overhead), so
 * that the tool's hit is compared with the library's in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bench_tool_target(int x, int y);

#ifdef BENCH_TOOL_LIB
#include <ukprobes.h>

static unsigned long lib_hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	lib_hits++;
	return 0;
}

static struct kprobe kp = { .pre_handler = count_pre };
#endif

static double now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* N calls of the probed function, and the line that says what each took. */
static void measure(unsigned long n)
{
	volatile int sink = 0;
	double t0, t1, w0, w1;
	unsigned long i;

	w0 = now_ns(CLOCK_MONOTONIC);
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; i < n; i++)
		sink = bench_tool_target(sink, (int)i);
	t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w1 = now_ns(CLOCK_MONOTONIC);
	printf("ns_per_call %.3f wall_ns_per_call %.3f hits %lu\n", (t1 - t0) / (double)n,
	       (w1 - w0) / (double)n, n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[argc - 1], NULL, 0) : 1000000;
	char line[64];

#ifdef BENCH_TOOL_LIB
	kp.addr = (kprobe_opcode_t *)bench_tool_target;
	if (register_kprobe(&kp) < 0) {
		fprintf(stderr, "bench_tool_lib: register_kprobe failed\n");
		return 1;
	}
	ukprobes_wait_optimizer();
	if (!(kp.flags & KPROBE_FLAG_OPTIMIZED)) {
		fprintf(stderr, "bench_tool_lib: the probe is not optimized\n");
		return 1;
	}
#endif
	if (argc > 1 && !strcmp(argv[1], "--serve")) {
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin))
			measure(strtoul(line, NULL, 0));
		return 0;
	}
	measure(n);
#ifdef BENCH_TOOL_LIB
	unregister_kprobe(&kp);
	if (lib_hits != n) {
		fprintf(stderr, "bench_tool_lib: %lu hits, %lu calls\n", lib_hits, n);
		return 1;
	}
#endif
	return 0;
}
