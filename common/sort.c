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

/* The comparison: qsort_r's form (cmp), else qsort's (plain), called
 * directly: an adapter would double the calls of a sort's inner loop. */
struct order {
	cmp_r_fn cmp;
	cmp_fn plain;
	void *arg;
};

static inline int order_cmp(const struct order *o, const void *x, const void *y)
{
	return o->cmp ? o->cmp(x, y, o->arg) : o->plain(x, y);
}

/* One element: pointers (tables of pointers sorted by what they point
 * to) without a call. */
static inline void elem_copy(char *to, const char *from, size_t size)
{
	if (size == sizeof(void *))
		memcpy(to, from, sizeof(void *));
	else
		memcpy(to, from, size);
}

#define CMP(x, y) order_cmp(o, (x), (y))

/* Runs this short are sorted by insertion: fewer calls than halving
 * them down to single elements. */
#define RUN 8

static void insertion_sort(char *a, size_t n, size_t size, const struct order *o)
{
	char t[256];
	size_t i, j;

	if (size <= sizeof(t)) {
		/* each element held aside, the larger ones before it moved up
		 * at once: three copies an element, not three a step */
		for (i = 1; i < n; i++) {
			if (CMP(a + i * size, a + (i - 1) * size) >= 0)
				continue;
			memcpy(t, a + i * size, size);
			for (j = i - 1; j > 0 && CMP(t, a + (j - 1) * size) < 0; j--)
				;
			memmove(a + (j + 1) * size, a + j * size, (i - j) * size);
			memcpy(a + j * size, t, size);
		}
		return;
	}
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

static void merge_sort(char *a, char *tmp, size_t n, size_t size, const struct order *o)
{
	size_t half = n / 2, i = 0, j = half, k = 0;

	if (n <= RUN) {
		insertion_sort(a, n, size, o);
		return;
	}
	merge_sort(a, tmp, half, size, o);
	merge_sort(a + half * size, tmp, n - half, size, o);
	if (CMP(a + (half - 1) * size, a + half * size) <= 0)
		return; /* in order already */
	while (i < half && j < n) {
		/* the left one first when equal: stable */
		if (CMP(a + j * size, a + i * size) < 0)
			elem_copy(tmp + k++ * size, a + j++ * size, size);
		else
			elem_copy(tmp + k++ * size, a + i++ * size, size);
	}
	memcpy(tmp + k * size, a + i * size, (half - i) * size);
	k += half - i;
	memcpy(a, tmp, k * size); /* the right part's rest is in place */
}

static void sort(void *base, size_t n, size_t size, const struct order *o)
{
	char *tmp;

	if (n < 2 || !size)
		return;
	if (n <= RUN || n > SIZE_MAX / size || !(tmp = malloc(n * size))) {
		insertion_sort(base, n, size, o);
		return;
	}
	merge_sort(base, tmp, n, size, o);
	free(tmp);
}

void ukp_sort_r(void *base, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
	const struct order o = { cmp, NULL, arg };

	sort(base, n, size, &o);
}

void ukp_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
	const struct order o = { NULL, cmp, NULL };

	sort(base, n, size, &o);
}
