/* SPDX-License-Identifier: MIT */
/*
 * tgt_strings N: calls strlen() N times and nothing else of libc's string
 * functions (no output), so that a probe on libc's strlen, an IFUNC,
 * counts exactly N hits when it sits on the implementation the dynamic
 * linker chose. The call goes through a volatile pointer: the compiler
 * can neither inline it nor fold it.
 */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t (*volatile fn)(const char *) = strlen;
	long i, n = argc > 1 ? atol(argv[1]) : 0;
	size_t total = 0;

	for (i = 0; i < n; i++)
		total += fn(argv[0]);
	return n > 0 && total == 0;
}
