/* SPDX-License-Identifier: MIT */
/*
 * sort.h - qsort and qsort_r of the library's and the agent's own
 * (sort.c): stable, no memory of libc's. [reg], [init], [reader].
 */
#ifndef UKP_COMMON_SORT_H
#define UKP_COMMON_SORT_H

#include <stddef.h>

void ukp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void ukp_sort_r(void *base, size_t n, size_t size,
		int (*cmp)(const void *, const void *, void *), void *arg);

#endif
