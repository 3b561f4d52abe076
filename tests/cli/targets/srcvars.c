/* SPDX-License-Identifier: MIT */
/*
 * srcvars.c - the target of the source-level probes' tests (case
 * dwarf_vars): built at -O0 -g and -O2 -g. Structs with nested pointers
 * and arrays, negative values, an enum, strings, a static function
 * inlined in two places; each function prints the values a probe on it
 * must show, so that the test compares them with what ukprobe fetched.
 * Lines the test probes carry a "MARK:name" comment (it finds their
 * numbers in this file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum color { RED = 1, GREEN = 5, BLUE = -3 };

struct inner {
	int id;
	long vals[4];
	unsigned int small : 3, big : 9;
};

struct node {
	int key;
	short neg;
	unsigned char flags;
	struct inner *in;
	struct node *next;
	char name[16];
	const char *label;
};

/* always inlined, at -O0 too: two copies of each of its lines */
static volatile int sink;

static inline __attribute__((always_inline)) int clamp(int v, int lo, int hi)
{
	sink = v; /* MARK:clamp */
	return v < lo ? lo : v > hi ? hi : v;
}

__attribute__((noinline)) int visit(struct node *n, int depth, long scale, enum color c)
{
	int sum = n->key * depth; /* MARK:visit_sum */

	sum += (int)(n->in->vals[2] * scale);
	printf("visit key=%d neg=%d flags=%u depth=%d scale=%ld c=%d id=%d v2=%ld nkey=%d "
	       "nid=%d name=%s label=%s small=%u big=%u sum=%d\n",
	       n->key, n->neg, n->flags, depth, scale, (int)c, n->in->id, n->in->vals[2],
	       n->next ? n->next->key : 0, n->next ? n->next->in->id : 0, n->name, n->label,
	       n->in->small, n->in->big, sum);
	sink = sum; /* MARK:visit_end */
	return sum;
}

__attribute__((noinline)) long total(long a, long b, int c, unsigned long d)
{
	long t = a + b + c + (long)d;

	printf("total a=%ld b=%ld c=%d d=%lu t=%ld\n", a, b, c, d, t);
	return t;
}

static struct inner in1 = { 11, { 100, -200, 300, -400 }, 5, 300 };
static struct inner in2 = { -22, { 1, 2, -3, 4 }, 2, 17 };

__attribute__((noinline)) static void one_round(int i)
{
	struct node b = { -7, -12345, 200, &in2, NULL, "second", "beta" };
	struct node a = { 42 + i, -1, 7, &in1, &b, "first", "alpha" };
	int x, y;

	/* (a call between the copies keeps the compiler from merging them) */
	x = clamp(i * 5 - 4, -3, 6);
	printf("clamp x=%d\n", x);
	y = clamp(-i * 9, -10, 0);
	printf("clamp y=%d\n", y);
	visit(&a, -i - 1, 3 - i, i % 2 ? BLUE : GREEN);
	visit(&b, i, -2, RED);
	total(-1000000000000L * (i + 1), i, -i, 18446744073709551615UL - (unsigned long)i);
	fflush(stdout);
}

/* srcvars [ROUNDS]: that many rounds; srcvars -: a round per line read
 * (ukprobe -p attaches in between), "ready" first */
int main(int argc, char **argv)
{
	char line[64];
	int i;

	if (argc > 1 && !strcmp(argv[1], "-")) {
		printf("ready\n");
		fflush(stdout);
		for (i = 0; fgets(line, sizeof(line), stdin); i++)
			one_round(i);
		return 0;
	}
	for (i = 0; i < (argc > 1 ? atoi(argv[1]) : 3); i++)
		one_round(i);
	return 0;
}
