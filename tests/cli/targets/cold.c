// SPDX-License-Identifier: MIT
/*
 * cold.c - an ordinary program built at -O2 -g (tests/cli/meson.build),
 * for return probes on every function of the program: GCC splits
 * checksum() into checksum and checksum.cold, and the ELF entry point
 * _start is in the glob too. The output depends on argc and the words
 * given, so a corrupted argc or a clobbered register shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int rare_seen;

__attribute__((cold, noinline)) void report_rare(int v)
{
	rare_seen += v;
	fprintf(stderr, "rare value %d\n", v);
}

__attribute__((noinline)) int checksum(const int *p, int n)
{
	int s = 0;

	for (int i = 0; i < n; i++) {
		if (__builtin_expect(p[i] < 0, 0))
			report_rare(p[i]);
		s = s * 31 + p[i];
	}
	return s;
}

static int by_length(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? -1 : la > lb ? 1 : strcmp(*(char *const *)a, *(char *const *)b);
}

__attribute__((noinline)) long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int v[40];

	for (int i = 0; i < 40; i++)
		v[i] = i % 13 == 5 ? -i : i * argc;
	printf("argc %d checksum %d fib %ld\n", argc, checksum(v, 40), fib(12 + argc));
	qsort(argv + 1, (size_t)(argc - 1), sizeof(*argv), by_length);
	for (int i = 1; i < argc; i++)
		printf("%s%c", argv[i], i + 1 < argc ? ' ' : '\n');
	return argc > 4 ? 4 : argc;
}
