// SPDX-License-Identifier: MIT
/*
 * usdt_targets.c - SDT probes whose argument specs take every form GCC
 * writes on x86-64 (test_usdt.c): registers of every width (-4@%edi,
 * -1@%dl, 4@%r8d), rip-relative symbols (-4@ukt_usdt_global(%rip)),
 * constants (-4@$5, -4@$-3), memory at a register + offset (-8@-8(%rbp),
 * -4@8(%rdi), -8@(%rdi)), signed and unsigned sizes. Built at -O2, one
 * function at -O0 (its locals in the frame).
 */
#include <sys/sdt.h>

#include "usdt_targets.h"

int ukt_usdt_global = 0x1234567;

__attribute__((noinline)) int ukt_usdt_args(int a, long b, signed char c, short d, unsigned u,
					    const char *s)
{
	STAP_PROBE8(ukt, args, a, b, c, d, u, s, ukt_usdt_global, 5);
	return a + 1;
}

__attribute__((noinline, optimize("O0"))) long ukt_usdt_mem(long x, int y, const char *s)
{
	long lx = x * 2;
	int ly = y - 1;

	STAP_PROBE4(ukt, mem, lx, ly, s, -3);
	return lx + ly;
}

__attribute__((noinline)) int ukt_usdt_ptr(const struct ukt_pair *p)
{
	STAP_PROBE2(ukt, ptr, p->a, p->b);
	return 0;
}
