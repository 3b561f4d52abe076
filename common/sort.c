/* SPDX-License-Identifier: MIT */
/*
 * sort.c - the sort of libukprobes and the agent, in place of libc's
 * qsort and qsort_r: glibc's sorts large arrays in memory it takes from
 * the program's malloc behind the caller's back, and is one more libc
 * function a build without libc would lack. This one is the same kind of
 * sort (a merge sort, so equal elements keep their order, as with
 * glibc's) in memory the caller's malloc gives (in the agent: the
 * agent's own, agent/mem.c), and sorts in place by insertion when it
 * gets none.
 *
 * Contexts: [reg], [init] and [reader] (it may allocate).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

typedef int (*cmp_fn)(const void *, const void *);
typedef int (*cmp_r_fn)(const void *, const void *, void *);

#define CMP(x, y) cmp((x), (y), arg)

static void merge_sort(char *a, char *tmp, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	size_t half = n / 2, i = 0, j = half, k = 0;

	if (n < 2)
		return;
	merge_sort(a, tmp, half, size, cmp, arg);
	merge_sort(a + half * size, tmp, n - half, size, cmp, arg);
	if (CMP(a + (half - 1) * size, a + half * size) <= 0)
		return; /* in order already */
	while (i < half && j < n) {
		/* the left one first when equal: stable */
		if (CMP(a + j * size, a + i * size) < 0)
			memcpy(tmp + k++ * size, a + j++ * size, size);
		else
			memcpy(tmp + k++ * size, a + i++ * size, size);
	}
	memcpy(tmp + k * size, a + i * size, (half - i) * size);
	k += half - i;
	memcpy(a, tmp, k * size); /* the right part's rest is in place */
}

static void insertion_sort(char *a, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	char t[256];
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && CMP(a + j * size, a + (j - 1) * size) < 0; j--) {
			size_t done;

			/* swap in pieces of t (any element size) */
			for (done = 0; done < size; done += sizeof(t)) {
				size_t m = size - done < sizeof(t) ? size - done : sizeof(t);

				memcpy(t, a + j * size + done, m);
				memcpy(a + j * size + done, a + (j - 1) * size + done, m);
				memcpy(a + (j - 1) * size + done, t, m);
			}
		}
}

void ukp_sort_r(void *base, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	char *tmp;

	if (n < 2 || !size)
		return;
	if (n > SIZE_MAX / size || !(tmp = malloc(n * size))) {
		insertion_sort(base, n, size, cmp, arg);
		return;
	}
	merge_sort(base, tmp, n, size, cmp, arg);
	free(tmp);
}

static int plain(const void *a, const void *b, void *fn)
{
	return ((cmp_fn)fn)(a, b);
}

void ukp_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
	ukp_sort_r(base, n, size, plain, (void *)cmp);
}
