// SPDX-License-Identifier: MIT
/*
 * sdt_target.c - bench_target with an SDT probe (<sys/sdt.h>) at its
 * end, for bench_overhead's "sdt" row: the probe "%ukpbench:hit" is a
 * one-byte nop inside the function, which the optimizer replaces by a
 * jump as it does a function's entry ("o"). Built at -O2, where the probe's arguments stay
 * in their registers.
 */
#include <sys/sdt.h>

#include "bench.h"

/* the probe after the sum (the asm keeps it there), not on the entry:
 * as in CPython, where the nop is followed by the function's epilogue */
__attribute__((noinline)) int bench_target_sdt(int x, int y)
{
	int r = x + 1 + y;

	__asm__("" : "+r"(r));
	STAP_PROBE2(ukpbench, hit, x, r);
	return r;
}
