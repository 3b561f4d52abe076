/* SPDX-License-Identifier: MIT */
/*
 * grow_array.h - the two array chores of the registration-time analyses
 * (codeflow.c, eh_frame.c, arch branches.c): growing an array by
 * doubling, and turning a bag of addresses into a sorted set (the
 * latter in grow_array.c).
 *
 * Context: [reg] (they allocate; never on the trap path).
 */
#ifndef UKP_GROW_ARRAY_H
#define UKP_GROW_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * [reg] Room for element n of an array of *cap elements of elem bytes:
 * returns arr itself while n < *cap, else arr moved to twice the capacity
 * (at least 16 elements; *cap updated), or NULL with arr left as it was.
 */
static inline void *ukp_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(arr, ncap * elem);
	if (p)
		*cap = ncap;
	return p;
}

static inline int ukp_addr_cmp(const void *pa, const void *pb)
{
	uintptr_t a = *(const uintptr_t *)pa, b = *(const uintptr_t *)pb;

	return (a > b) - (a < b);
}

/* [reg] Sort n addresses and drop repeats; returns how many remain
 * (grow_array.c). */
size_t ukp_addrs_sort_unique(uintptr_t *a, size_t n);

#endif /* UKP_GROW_ARRAY_H */
