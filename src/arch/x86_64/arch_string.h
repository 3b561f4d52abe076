/* SPDX-License-Identifier: MIT */
/*
 * arch_string.h - large copies and fills for base/libc_mem.c: x86-64's
 * string instructions (rep movsb / rep stosb), which the processors with
 * ERMS run at cache-line speed without vector registers. Returns false
 * when the arch has nothing better than the word loop (never here).
 */
#ifndef UKP_ARCH_STRING_H
#define UKP_ARCH_STRING_H

#include <stdbool.h>
#include <stddef.h>

/* from this size on the string instructions beat the word loop */
#define ARCH_STRING_LARGE 512

static inline bool arch_copy_large(void *d, const void *s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
	return true;
}

static inline bool arch_fill_large(void *d, unsigned char c, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return true;
}

#endif
