/* SPDX-License-Identifier: MIT */
/*
 * The target of the type and address tests: characters, bitfields,
 * global data read through @SYM, and function pointers shown as
 * symbols. Each function is called once, in this order:
 *
 *   letter('u')           a char argument
 *   flags(&packed)        a structure of bitfields
 *   tally(3)              adds to the global counter (read with @counter)
 *   dispatch(handler)     a function pointer (the symbol type)
 *   fact(4)               recursion: fact(4) calls fact(3) ... fact(1)
 *
 * tgt_types --marker FILE creates FILE first (see tgt_basic).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct packed {
	unsigned int low : 3;    /* bits 0-2 */
	unsigned int mid : 5;    /* bits 3-7 */
	unsigned int high : 8;   /* bits 8-15 */
	unsigned int top : 16;   /* bits 16-31 */
};

long counter = 1000;
struct packed settings = { 5, 17, 200, 4242 };
const char motto[] = "probe everything";

__attribute__((noinline)) int letter(char c)
{
	return c + 1;
}

__attribute__((noinline)) unsigned int flags(const struct packed *p)
{
	return p->low + p->mid + p->high + p->top;
}

__attribute__((noinline)) long tally(long n)
{
	counter += n;
	return counter;
}

__attribute__((noinline)) int handler(int x)
{
	return x * 3;
}

__attribute__((noinline)) int dispatch(int (*fn)(int))
{
	return fn(7);
}

__attribute__((noinline)) long fact(long n)
{
	return n <= 1 ? 1 : n * fact(n - 1);
}

int main(int argc, char **argv)
{
	unsigned int f;
	int l, d;
	long t, x;

	if (argc > 2 && !strcmp(argv[1], "--marker")) {
		int fd = open(argv[2], O_CREAT | O_WRONLY, 0644);

		if (fd >= 0)
			close(fd);
	}
	l = letter('u');
	f = flags(&settings);
	t = tally(3);
	d = dispatch(handler);
	x = fact(4);
	printf("letter %d flags %u tally %ld dispatch %d fact %ld %s\n", l, f, t, d, x, motto);
	return 0;
}
