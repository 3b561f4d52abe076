/* SPDX-License-Identifier: MIT */
/*
 * bench_dwarf_hit N: the per-hit cost of source-level fetches
 * (bench_tool.py's "source-level" rows, issue 29). Built -O2 -g: calls
 * dwarf_target, a function of four parameters one of which leads through
 * two pointers to a field, N times, and prints the thread's CPU time per
 * call around the loop only, as bench_tool_hit does:
 * "ns_per_call X wall_ns_per_call Y hits N".
 *
 * Run under ukprobe stat (a bare hit), and under ukprobe trace -o with
 * $params, with the same four registers by name (%di...), with
 * p->next->value and with the same +OFF(+OFF(%di)) chain: a name costs
 * what the fetch it becomes costs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct leaf {
	long pad;
	long value;
};

struct link {
	int tag;
	struct leaf *next;
};

/* noinline, noipa: a real call each time, its parameters in registers */
__attribute__((noinline, noipa)) long dwarf_target(struct link *p, long x, int y, unsigned int z)
{
	return p->next->value + x + y + (long)z;
}

static double now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[argc - 1], NULL, 0) : 1000000, i;
	struct leaf leaf = { 0, 7 };
	struct link link = { 1, &leaf };
	volatile long sink = 0;
	double t0, t1, w0, w1;

	w0 = now_ns(CLOCK_MONOTONIC);
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; i < n; i++)
		sink = dwarf_target(&link, (long)i, -(int)i, (unsigned int)i);
	t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w1 = now_ns(CLOCK_MONOTONIC);
	printf("ns_per_call %.3f wall_ns_per_call %.3f hits %lu\n", (t1 - t0) / (double)n,
	       (w1 - w0) / (double)n, n);
	(void)sink;
	return 0;
}
