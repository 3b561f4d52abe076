/* SPDX-License-Identifier: MIT */
/*
 * tgt_endbr: functions that start with endbr64 (built with
 * -fcf-protection=branch): a probe on their entry goes past it, and a
 * glob's probes are announced where they go.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int ebr_add(int a, int b)
{
	return a + b;
}

__attribute__((noinline)) int ebr_twice(int a)
{
	return ebr_add(a, a);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, i, s = 0;

	for (i = 0; i < n; i++)
		s += ebr_twice(i);
	printf("%d\n", s);
	return 0;
}
