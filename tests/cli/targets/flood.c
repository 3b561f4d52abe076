/* SPDX-License-Identifier: MIT */
/*
 * tgt_flood N: calls tick(i) for i = 0..N-1 as fast as it can.
 * tgt_flood -: for each line N read from standard input, the next N
 * calls (i goes on counting), then prints "done TOTAL"; at the end of
 * the input, "ticks TOTAL" (a process to attach to: ukprobe -p).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) void tick(unsigned int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	unsigned int n, i = 0;
	char line[64];

	if (argc > 1 && !strcmp(argv[1], "-")) {
		while (fgets(line, sizeof(line), stdin)) {
			unsigned int end = i + (unsigned int)strtoul(line, NULL, 0);

			for (; i < end; i++)
				tick(i);
			printf("done %u\n", i);
			fflush(stdout);
		}
		printf("ticks %u\n", i);
		return 0;
	}
	n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 100000;
	for (i = 0; i < n; i++)
		tick(i);
	printf("ticks %u\n", n);
	return 0;
}
