/* SPDX-License-Identifier: MIT */
/*
 * A program for ukprobe -p on the allocator: THREADS threads (4 if not
 * given) call malloc, calloc, realloc and free in a loop, with short
 * sleeps, and check what they get.
 *
 *   tgt_allocs [THREADS]
 *
 * It prints "ready" when every thread runs, then reads commands from
 * standard input:
 *   count  prints "ops N": the loops done so far by every thread
 *   quit   the threads are joined; it prints "bad N" (allocations that did
 *          not hold what was written) and exits with status 3
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile int quitting;
static unsigned long ops, bad;
static int started;

static void *alloc_main(void *arg)
{
	struct timespec d = { 0, 200000 };
	unsigned long i = (unsigned long)(size_t)arg * 1000003;

	__atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
	while (!quitting) {
		size_t n = 16 + i % 200;
		unsigned char *a = malloc(n), *b = calloc(1, n), *c;

		if (!a || !b)
			abort();
		memset(a, (int)(i & 0xff), n);
		if (b[n - 1])
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		c = realloc(a, 2 * n);
		if (!c)
			abort();
		if (c[n - 1] != (unsigned char)(i & 0xff))
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		free(c);
		free(b);
		i++;
		__atomic_add_fetch(&ops, 1, __ATOMIC_RELAXED);
		if (i % 16 == 0)
			nanosleep(&d, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4, i;
	pthread_t *t;
	char line[64];

	if (n < 1)
		n = 1;
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, alloc_main, (void *)(size_t)i))
			return 1;
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < n) {
		struct timespec d = { 0, 1000000 };

		nanosleep(&d, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "count\n")) {
			printf("ops %lu\n", __atomic_load_n(&ops, __ATOMIC_RELAXED));
			fflush(stdout);
		} else if (!strcmp(line, "quit\n")) {
			break;
		}
	}
	quitting = 1;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("bad %lu\n", bad);
	free(t);
	return 3;
}
