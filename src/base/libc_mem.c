/* SPDX-License-Identifier: MIT */
/*
 * libc_mem.c - memory copies, fills, compares and searches of the
 * library's own (base/libc.h). [any] context: no lock, no vector
 * register (-mgeneral-regs-only), no call out; copies move 8-byte words
 * (unaligned loads and stores, which both architectures do in hardware),
 * large ones the arch's way (arch_string.h: x86-64's rep movsb).
 *
 * Built with -fno-tree-loop-distribute-patterns and -fno-builtin
 * (meson.build): else the compiler may turn these loops into calls of
 * memcpy/memset, which in the agent are these very functions.
 */
#include <stdint.h>

#include "base/libc.h"
#include "arch_string.h"

typedef uint64_t __attribute__((may_alias, aligned(1))) ukp_u64u;
typedef uint32_t __attribute__((may_alias, aligned(1))) ukp_u32u;

void *ukp_memcpy(void *restrict d, const void *restrict s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	if (n >= ARCH_STRING_LARGE && arch_copy_large(d, s, n))
		return d;
	if (n >= 8) {
		/* the last word may overlap the one before: no byte tail */
		uint64_t last = *(const ukp_u64u *)(sp + n - 8);
		unsigned char *dend = dp + n - 8;

		for (; n >= 32; n -= 32, dp += 32, sp += 32) {
			uint64_t a = ((const ukp_u64u *)sp)[0], b = ((const ukp_u64u *)sp)[1];
			uint64_t c = ((const ukp_u64u *)sp)[2], e = ((const ukp_u64u *)sp)[3];

			((ukp_u64u *)dp)[0] = a;
			((ukp_u64u *)dp)[1] = b;
			((ukp_u64u *)dp)[2] = c;
			((ukp_u64u *)dp)[3] = e;
		}
		for (; n >= 8; n -= 8, dp += 8, sp += 8)
			*(ukp_u64u *)dp = *(const ukp_u64u *)sp;
		*(ukp_u64u *)dend = last;
		return d;
	}
	if (n >= 4) {
		uint32_t a = *(const ukp_u32u *)sp, b = *(const ukp_u32u *)(sp + n - 4);

		*(ukp_u32u *)dp = a;
		*(ukp_u32u *)(dp + n - 4) = b;
		return d;
	}
	for (; n; n--)
		*dp++ = *sp++;
	return d;
}

/* Each word is read before the word written over it (forwards when the
 * destination is below the source, backwards else). */
void *ukp_memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	if (dp == sp || !n)
		return d;
	if ((uintptr_t)dp - (uintptr_t)sp >= n) { /* below, or not overlapping */
		for (; n >= 8; n -= 8, dp += 8, sp += 8)
			*(ukp_u64u *)dp = *(const ukp_u64u *)sp;
		for (; n; n--)
			*dp++ = *sp++;
		return d;
	}
	dp += n;
	sp += n;
	for (; n >= 8; n -= 8) {
		dp -= 8;
		sp -= 8;
		*(ukp_u64u *)dp = *(const ukp_u64u *)sp;
	}
	for (; n; n--)
		*--dp = *--sp;
	return d;
}

void *ukp_memset(void *d, int c, size_t n)
{
	unsigned char *dp = d;
	uint64_t w = (unsigned char)c * 0x0101010101010101ull;

	if (n >= ARCH_STRING_LARGE && arch_fill_large(d, (unsigned char)c, n))
		return d;
	if (n >= 8) {
		unsigned char *dend = dp + n - 8;

		for (; n >= 32; n -= 32, dp += 32) {
			((ukp_u64u *)dp)[0] = w;
			((ukp_u64u *)dp)[1] = w;
			((ukp_u64u *)dp)[2] = w;
			((ukp_u64u *)dp)[3] = w;
		}
		for (; n >= 8; n -= 8, dp += 8)
			*(ukp_u64u *)dp = w;
		*(ukp_u64u *)dend = w;
		return d;
	}
	for (; n; n--)
		*dp++ = (unsigned char)c;
	return d;
}

int ukp_memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n >= 8 && *(const ukp_u64u *)x == *(const ukp_u64u *)y; n -= 8, x += 8, y += 8)
		;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

void *ukp_memchr(const void *s, int c, size_t n)
{
	const unsigned char *p = s;
	uint64_t ones = 0x0101010101010101ull, w = (unsigned char)c * ones;

	/* whole words first: a word holds c when w ^ word has a zero byte */
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t x = *(const ukp_u64u *)p ^ w;

		if ((x - ones) & ~x & (ones << 7))
			break;
	}
	for (; n; n--, p++)
		if (*p == (unsigned char)c)
			return (void *)p;
	return NULL;
}

/* A fill the compiler may not drop as a dead store (a secret's buffer
 * about to be freed). */
void ukp_explicit_bzero(void *d, size_t n)
{
	ukp_memset(d, 0, n);
	__asm__ volatile("" : : "r"(d) : "memory");
}

/* The _FORTIFY_SOURCE forms: a copy larger than its destination is a
 * bug in the caller; stop there as glibc does (it aborts). */
void *ukp_memcpy_chk(void *restrict d, const void *restrict s, size_t n, size_t dlen)
{
	if (n > dlen)
		__builtin_trap();
	return ukp_memcpy(d, s, n);
}

void *ukp_memmove_chk(void *d, const void *s, size_t n, size_t dlen)
{
	if (n > dlen)
		__builtin_trap();
	return ukp_memmove(d, s, n);
}

void *ukp_memset_chk(void *d, int c, size_t n, size_t dlen)
{
	if (n > dlen)
		__builtin_trap();
	return ukp_memset(d, c, n);
}

UKP_LIBC_ALIAS(ukp_memcpy, memcpy)
UKP_LIBC_ALIAS(ukp_memmove, memmove)
UKP_LIBC_ALIAS(ukp_memset, memset)
UKP_LIBC_ALIAS(ukp_memcmp, memcmp)
UKP_LIBC_ALIAS(ukp_memcmp, bcmp)
UKP_LIBC_ALIAS(ukp_memchr, memchr)
UKP_LIBC_ALIAS(ukp_explicit_bzero, explicit_bzero)
UKP_LIBC_ALIAS(ukp_memcpy_chk, __memcpy_chk)
UKP_LIBC_ALIAS(ukp_memmove_chk, __memmove_chk)
UKP_LIBC_ALIAS(ukp_memset_chk, __memset_chk)
