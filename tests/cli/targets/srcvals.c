// SPDX-License-Identifier: MIT
/*
 * srcvals.c - values the debug information gives as expressions (case
 * dwarf_values), built -O2 -g with srcvals_other.c: below is never kept
 * in a register of its own, GCC describes it as n's register plus a
 * constant (DW_OP_bregN -1000; DW_OP_stack_value); other_total is a
 * global defined in the other file, calls one defined here that the
 * other file does not declare. weigh reads a float and a double through
 * a pointer and a global double; its double parameter is in a vector
 * register, which a probe cannot read. The program prints what a probe
 * must show, one line per call.
 */
#include <stdio.h>
#include <stdlib.h>

extern long other_total; /* srcvals_other.c */
void other_add(long v);
long calls;
double scale = 0.1;

struct sample {
	float ratio;
	double weight;
};

__attribute__((noinline)) void sink(long v)
{
	__asm__ volatile("" ::"r"(v));
}

__attribute__((noinline)) long shifted(long n)
{
	long below = n - 1000;

	sink(n);
	sink(n * 2);
	calls++;
	printf("shifted n=%ld below=%ld total=%ld calls=%ld\n", n, below, other_total, calls);
	other_add(n); /* MARK:add */
	return n * 3;
}

__attribute__((noinline)) double weigh(const struct sample *s, double by)
{
	printf("weigh ratio=%.9g weight=%.17g by=%.17g scale=%.17g\n", (double)s->ratio, s->weight,
	       by, scale);
	return s->ratio * s->weight * by * scale;
}

int main(int argc, char **argv)
{
	long i, n = argc > 1 ? atol(argv[1]) : 3;
	volatile double sum = 0;

	for (i = 0; i < n; i++) {
		struct sample s = { (float)i * 0.25f - 2, (double)i / 10 - 1 };

		shifted(i * 7 - 10);
		sum += weigh(&s, (double)i * 1.5);
	}
	printf("total=%ld\n", other_total);
	return 0;
}
