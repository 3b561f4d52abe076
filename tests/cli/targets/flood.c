/* SPDX-License-Identifier: MIT */
/* tgt_flood N: calls tick(i) for i = 0..N-1 as fast as it can. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void tick(unsigned int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 100000, i;

	for (i = 0; i < n; i++)
		tick(i);
	printf("ticks %u\n", n);
	return 0;
}
