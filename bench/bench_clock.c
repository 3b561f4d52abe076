// SPDX-License-Identifier: MIT
/*
 * bench_clock [N]: what reading the event clock costs, the floor under
 * every trace record (agent/ring.c stamps each with the time-stamp
 * counter and the CPU: agent/arch/x86_64/hit_clock.h). Prints the thread's
 * CPU time per read, N reads in a loop, of rdtsc, rdpid, the two
 * together (the agent's pair), rdtscp, and the vDSO's clock_gettime
 * (CLOCK_MONOTONIC), one line each: "NAME ns X". x86-64 only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 10000000, i;
	volatile uint64_t sink = 0;
	uint32_t lo, hi, aux;
	uint64_t pid;
	struct timespec ts;
	double t0;

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		sink += lo;
	}
	printf("rdtsc ns %.2f\n", (now_ns() - t0) / (double)n);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		__asm__ volatile("rdpid %0" : "=r"(pid));
		sink += pid;
	}
	printf("rdpid ns %.2f\n", (now_ns() - t0) / (double)n);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		__asm__ volatile("rdpid %0" : "=r"(pid));
		sink += lo + pid;
	}
	printf("rdtsc+rdpid ns %.2f\n", (now_ns() - t0) / (double)n);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		sink += lo + aux;
	}
	printf("rdtscp ns %.2f\n", (now_ns() - t0) / (double)n);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
	printf("clock_gettime ns %.2f\n", (now_ns() - t0) / (double)n);
	return 0;
}
