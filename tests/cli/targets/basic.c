/* SPDX-License-Identifier: MIT */
/*
 * The target of ukprobe's golden-output tests: a few functions with
 * integer, pointer, structure, string and stack arguments, called a fixed
 * number of times. Built at -O0 with frame pointers, so that every call
 * happens and every argument is where the ABI puts it.
 *
 *   tgt_basic [--marker FILE] [--abort] [NAME]
 *
 * --marker creates FILE first thing in main (tests check it does not
 * exist when a probe could not be registered: the program must not run).
 * --abort ends the program with abort() (no final report from the agent).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct point {
	long x, y;
	const char *name;
};

__attribute__((noinline)) int add(int a, int b)
{
	return a + b;
}

__attribute__((noinline)) long norm(const struct point *p)
{
	return p->x * p->x + p->y * p->y;
}

__attribute__((noinline)) size_t greet(const char *who)
{
	printf("hello %s\n", who);
	return strlen(who);
}

__attribute__((noinline)) long many_args(int a1, int a2, int a3, int a4, int a5, int a6,
					 int a7, short a8)
{
	return (long)a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8;
}

__attribute__((noinline)) int negate(int v)
{
	return -v;
}

int main(int argc, char **argv)
{
	struct point p = { 3, -4, "origin" };
	const char *name = "world";
	int i, s = 0, n;
	long m;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--marker") && i + 1 < argc) {
			int fd = open(argv[++i], O_CREAT | O_WRONLY, 0644);

			if (fd >= 0)
				close(fd);
		} else if (!strcmp(argv[i], "--abort")) {
			printf("aborting\n");
			fflush(stdout);
			abort();
		} else {
			name = argv[i];
		}
	}
	for (i = 0; i < 3; i++)
		s += add(i, 10 * i);
	printf("sum %d norm %ld\n", s, norm(&p));
	greet(name);
	/* one call per statement: the order of the events is the golden one */
	m = many_args(1, 2, 3, 4, 5, 6, 70000, -8);
	n = negate(42);
	printf("many %ld negate %d\n", m, n);
	return 3;
}
