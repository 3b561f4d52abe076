/* SPDX-License-Identifier: MIT */
/*
 * lower_bound.h - the first element of a sorted array whose key is not
 * below a value (a binary search), for the arrays of records the
 * library keeps sorted by one field.
 */
#ifndef UKP_LOWER_BOUND_H
#define UKP_LOWER_BOUND_H

#include <stddef.h>

/* [any] The first i in [0, n) with arr[i].field >= key, or n; arr is
 * sorted by field. */
#define UKP_LOWER_BOUND(arr, n, field, key)                   \
	({                                                    \
		size_t lb_lo_ = 0, lb_hi_ = (n);              \
		while (lb_lo_ < lb_hi_) {                     \
			size_t lb_mid_ = lb_lo_ + (lb_hi_ - lb_lo_) / 2; \
			if ((arr)[lb_mid_].field < (key))     \
				lb_lo_ = lb_mid_ + 1;         \
			else                                  \
				lb_hi_ = lb_mid_;             \
		}                                             \
		lb_lo_;                                       \
	})

#endif
