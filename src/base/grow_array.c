// SPDX-License-Identifier: MIT
/*
 * grow_array.c - turning a bag of addresses into a sorted set (see
 * grow_array.h). The bags of the flow analysis hold up to millions of
 * code addresses (every branch target or literal of a large executable),
 * all in one object's span: a least-significant-digit radix sort on the
 * offsets from the smallest one needs a pass per 11 bits of that span
 * where a comparison sort needs a call per comparison.
 *
 * [reg] everything here.
 */
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */

#define RADIX_BITS 11u
#define RADIX (1u << RADIX_BITS)
/* Below this many, insertion sort. */
#define SMALL 32u

static void insertion_sort(uintptr_t *a, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		uintptr_t v = a[i];

		for (j = i; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/* [reg] Sort a (n > SMALL, not sorted yet). */
static void radix_sort(uintptr_t *a, size_t n)
{
	uintptr_t min = a[0], max = a[0], *src = a, *dst, *swap, *t;
	size_t *count, i, sum;
	unsigned int shift, bits = 0;

	for (i = 1; i < n; i++) {
		min = a[i] < min ? a[i] : min;
		max = a[i] > max ? a[i] : max;
	}
	while (bits < 64 && (max - min) >> bits)
		bits++;
	t = malloc(n * sizeof(*t) + RADIX * sizeof(*count));
	if (!t) {
		ukp_sort(a, n, sizeof(*a), ukp_addr_cmp);
		return;
	}
	dst = t;
	count = (size_t *)(t + n);
	for (shift = 0; shift < bits; shift += RADIX_BITS) {
		memset(count, 0, RADIX * sizeof(*count));
		for (i = 0; i < n; i++)
			count[((src[i] - min) >> shift) & (RADIX - 1)]++;
		if (count[((src[0] - min) >> shift) & (RADIX - 1)] == n)
			continue;	/* one digit throughout: already in order */
		for (i = 0, sum = 0; i < RADIX; i++) {
			size_t c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[count[((src[i] - min) >> shift) & (RADIX - 1)]++] = src[i];
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(t);
}

/* [reg] */
size_t ukp_addrs_sort_unique(uintptr_t *a, size_t n)
{
	size_t i, k = 0;

	if (!n)
		return 0;
	for (i = 1; i < n && a[i - 1] <= a[i]; i++)
		;
	if (i < n) {
		if (n <= SMALL)
			insertion_sort(a, n);
		else
			radix_sort(a, n);
	}
	for (i = 0; i < n; i++)
		if (!k || a[k - 1] != a[i])
			a[k++] = a[i];
	return k;
}
