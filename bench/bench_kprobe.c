// SPDX-License-Identifier: MIT
/*
 * bench_kprobe.c - what a kprobe hit costs, next to what the hardware and
 * the kernel make it cost at least. All measured in the same run, each
 * repetition taking one sample of each, in turn:
 *
 *   k       a kprobe with a pre and a post handler on the entry of a
 *           small function (lea: run out of line, so two traps: the
 *           breakpoint and the slot's trailing int3), called in a loop:
 *           ns per call = ns per hit
 *   1rt     one bare int3 -> SIGTRAP round trip: a SIGTRAP handler that
 *           does nothing (installed with libc's sigaction, SA_SIGINFO),
 *           an inline-asm int3 in a loop
 *   2rt     two such round trips per iteration
 *   call    the same function, unprobed
 *
 * Prints the median, min and max of every measure, the ratio k / 1rt
 * (the library's overhead over the two traps it cannot avoid shows as
 * the excess over 2), and one CSV line.
 *
 * Usage: bench_kprobe [--quick] [--reps N] [--iters N]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ukprobes.h"

/* The probed function, in assembly so that the measured case does not
 * depend on the compiler: its first instruction (lea) runs out of line. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl bench_target\n"
	"	.type bench_target, @function\n"
	"bench_target:\n"
	"	lea 1(%rdi), %eax\n"
	"	ret\n"
	"	.size bench_target, .-bench_target\n");

int bench_target(int x);

static int (*volatile target_fp)(int) = bench_target;

static volatile unsigned long pre_hits, post_hits, bare_traps;

static int bench_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	return 0;
}

static void bench_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_hits++;
}

static void bare_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------ the bare handler */

/* The kernel's struct sigaction for rt_sigaction (x86-64). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn libc_sigaction;

/*
 * The library interposes sigaction() and, once it owns SIGTRAP, only
 * records what the program asks for. The bare measurement needs the
 * kernel to call our handler directly: use libc's own sigaction.
 */
static void find_libc_sigaction(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	if (libc)
		libc_sigaction = (sigaction_fn)dlsym(libc, "sigaction");
	if (!libc_sigaction) {
		fprintf(stderr, "cannot find libc's sigaction\n");
		exit(2);
	}
}

/* Put our do-nothing handler in the kernel's table; *saved gets exactly
 * what was there (the library's handler, once installed). */
static void bare_install(struct ksigaction *saved)
{
	struct sigaction sa;

	if (syscall(SYS_rt_sigaction, SIGTRAP, NULL, saved, 8)) {
		perror("rt_sigaction");
		exit(2);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bare_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (libc_sigaction(SIGTRAP, &sa, NULL)) {
		perror("sigaction");
		exit(2);
	}
}

static void bare_restore(const struct ksigaction *saved)
{
	if (syscall(SYS_rt_sigaction, SIGTRAP, saved, NULL, 8)) {
		perror("rt_sigaction restore");
		exit(2);
	}
}

/* --------------------------------------------------------- measures */

static double measure_calls(unsigned long iters)
{
	uint64_t t0 = now_ns();
	int acc = 0;

	for (unsigned long i = 0; i < iters; i++)
		acc += target_fp((int)i);
	if (acc == 42)
		fputc(' ', stderr);
	return (double)(now_ns() - t0) / (double)iters;
}

static double measure_int3(unsigned long iters, int per_iter)
{
	struct ksigaction saved;
	uint64_t t0, t1;

	bare_install(&saved);
	t0 = now_ns();
	if (per_iter == 1) {
		for (unsigned long i = 0; i < iters; i++)
			__asm__ volatile("int3" ::: "memory");
	} else {
		for (unsigned long i = 0; i < iters; i++)
			__asm__ volatile("int3\n\tint3" ::: "memory");
	}
	t1 = now_ns();
	bare_restore(&saved);
	return (double)(t1 - t0) / (double)iters;
}

static struct kprobe kp = {
	.pre_handler = bench_pre,
	.post_handler = bench_post,
};

static double measure_kprobe(unsigned long iters)
{
	unsigned long before = pre_hits, post_before = post_hits;
	double ns = measure_calls(iters);

	if (pre_hits - before != iters || post_hits - post_before != iters) {
		fprintf(stderr, "kprobe counted %lu pre and %lu post hits for %lu calls\n",
			pre_hits - before, post_hits - post_before, iters);
		exit(1);
	}
	return ns;
}

/* ------------------------------------------------------- statistics */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stat3 {
	double med, min, max;
};

static struct stat3 stats(double *v, int n)
{
	struct stat3 s;

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

enum { M_K, M_RT1, M_RT2, M_CALL, NM };

static const char *const mname[NM] = {
	"k (pre+post kprobe hit)",
	"1rt (bare int3 round trip)",
	"2rt (two round trips)",
	"call (unprobed call)",
};

int main(int argc, char **argv)
{
	unsigned long iters = 100000, call_iters;
	int reps = 7, r, m;
	double *v[NM];
	struct stat3 s[NM];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			iters = 10000;
			reps = 5;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = strtoul(argv[++i], NULL, 0);
		} else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--iters N]\n", argv[0]);
			return 2;
		}
	}
	if (reps < 1 || iters < 1)
		return 2;
	call_iters = iters * 100;
	find_libc_sigaction();
	for (m = 0; m < NM; m++)
		v[m] = calloc((size_t)reps, sizeof(double));

	kp.addr = (kprobe_opcode_t *)bench_target;
	r = register_kprobe(&kp);
	if (r) {
		fprintf(stderr, "register_kprobe: %d\n", r);
		return 1;
	}
	/* warm up every path once */
	measure_kprobe(iters / 10 + 1);
	measure_int3(iters / 10 + 1, 1);
	for (r = 0; r < reps; r++) {
		v[M_K][r] = measure_kprobe(iters);
		v[M_RT1][r] = measure_int3(iters, 1);
		v[M_RT2][r] = measure_int3(iters, 2);
		/* the unprobed call: the probe is disabled around it */
		disable_kprobe(&kp);
		v[M_CALL][r] = measure_calls(call_iters);
		enable_kprobe(&kp);
	}
	unregister_kprobe(&kp);

	for (m = 0; m < NM; m++)
		s[m] = stats(v[m], reps);
	printf("ukprobes bench: %d repetitions, %lu iterations each (%lu for calls)\n", reps, iters,
	       call_iters);
	printf("%-30s %12s %12s %12s %14s\n", "measure", "median ns", "min ns", "max ns",
	       "per second");
	for (m = 0; m < NM; m++)
		printf("%-30s %12.1f %12.1f %12.1f %14.0f\n", mname[m], s[m].med, s[m].min, s[m].max,
		       1e9 / s[m].med);
	printf("ratio k / 1rt = %.3f (goal <= 2.1); k / 2rt = %.3f\n", s[M_K].med / s[M_RT1].med,
	       s[M_K].med / s[M_RT2].med);
	printf("csv,reps,iters,k_ns,k_min,k_max,rt1_ns,rt1_min,rt1_max,rt2_ns,rt2_min,rt2_max,"
	       "call_ns,call_min,call_max,ratio_k_rt1\n");
	printf("csv,%d,%lu", reps, iters);
	for (m = 0; m < NM; m++)
		printf(",%.1f,%.1f,%.1f", s[m].med, s[m].min, s[m].max);
	printf(",%.3f\n", s[M_K].med / s[M_RT1].med);
	for (m = 0; m < NM; m++)
		free(v[m]);
	return 0;
}
