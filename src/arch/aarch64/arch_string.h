/* SPDX-License-Identifier: MIT */
/*
 * arch_string.h - large copies and fills for base/libc_mem.c: AArch64
 * has no string instruction without FEAT_MOPS, so the word loop does
 * them (false: not done here).
 */
#ifndef UKP_ARCH_STRING_H
#define UKP_ARCH_STRING_H

#include <stdbool.h>
#include <stddef.h>

#define ARCH_STRING_LARGE ((size_t)-1)

static inline bool arch_copy_large(void *d, const void *s, size_t n)
{
	(void)d, (void)s, (void)n;
	return false;
}

static inline bool arch_fill_large(void *d, unsigned char c, size_t n)
{
	(void)d, (void)c, (void)n;
	return false;
}

#endif
