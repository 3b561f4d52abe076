/* SPDX-License-Identifier: MIT */
/*
 * libc_str.c - the library's own string functions (base/libc.h): byte
 * loops, [any] context, no read past a string's terminator. Built as
 * libc_mem.c is (-fno-builtin: strlen's loop is not a call of strlen).
 */
#include "base/libc.h"

size_t ukp_strlen(const char *s)
{
	const char *p = s;

	while (*p)
		p++;
	return (size_t)(p - s);
}

size_t ukp_strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int ukp_strcmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; *x && *x == *y; x++, y++)
		;
	return *x - *y;
}

int ukp_strncmp(const char *a, const char *b, size_t n)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; n; n--, x++, y++)
		if (*x != *y || !*x)
			return *x - *y;
	return 0;
}

char *ukp_strcpy(char *restrict d, const char *restrict s)
{
	char *p = d;

	while ((*p++ = *s++))
		;
	return d;
}

/* (the compilers make strcat and stpcpy of strcpy/strlen pairs) */
char *ukp_stpcpy(char *restrict d, const char *restrict s)
{
	while ((*d = *s++))
		d++;
	return d;
}

char *ukp_strcat(char *restrict d, const char *restrict s)
{
	ukp_strcpy(d + ukp_strlen(d), s);
	return d;
}

char *ukp_strchrnul(const char *s, int c)
{
	for (; *s && *s != (char)c; s++)
		;
	return (char *)s;
}

char *ukp_strchr(const char *s, int c)
{
	s = ukp_strchrnul(s, c);
	return *s == (char)c ? (char *)s : NULL;
}

char *ukp_strrchr(const char *s, int c)
{
	const char *last = NULL;

	do
		if (*s == (char)c)
			last = s;
	while (*s++);
	return (char *)last;
}

/* A set of bytes as a 256-bit map. */
static void byteset(unsigned long set[4], const char *chars)
{
	set[0] = set[1] = set[2] = set[3] = 0;
	for (const unsigned char *p = (const unsigned char *)chars; *p; p++)
		set[*p / 64] |= 1ul << (*p % 64);
}

static int in_set(const unsigned long set[4], unsigned char c)
{
	return (set[c / 64] >> (c % 64)) & 1;
}

size_t ukp_strspn(const char *s, const char *accept)
{
	unsigned long set[4];
	size_t n = 0;

	byteset(set, accept);
	while (s[n] && in_set(set, (unsigned char)s[n]))
		n++;
	return n;
}

size_t ukp_strcspn(const char *s, const char *reject)
{
	unsigned long set[4];
	size_t n = 0;

	byteset(set, reject);
	while (s[n] && !in_set(set, (unsigned char)s[n]))
		n++;
	return n;
}

char *ukp_strstr(const char *hay, const char *needle)
{
	size_t n = ukp_strlen(needle);

	if (!n)
		return (char *)hay;
	for (; (hay = ukp_strchr(hay, needle[0])); hay++)
		if (!ukp_strncmp(hay, needle, n))
			return (char *)hay;
	return NULL;
}

char *ukp_strtok_r(char *restrict s, const char *restrict delim, char **restrict save)
{
	char *end;

	if (!s)
		s = *save;
	s += ukp_strspn(s, delim);
	if (!*s) {
		*save = s;
		return NULL;
	}
	end = s + ukp_strcspn(s, delim);
	if (*end)
		*end++ = '\0';
	*save = end;
	return s;
}

/* _FORTIFY_SOURCE's strcpy: a string longer than its destination traps
 * (glibc aborts). */
char *ukp_strcpy_chk(char *restrict d, const char *restrict s, size_t dlen)
{
	if (ukp_strlen(s) >= dlen)
		__builtin_trap();
	return ukp_strcpy(d, s);
}

UKP_LIBC_ALIAS(ukp_strlen, strlen)
UKP_LIBC_ALIAS(ukp_strnlen, strnlen)
UKP_LIBC_ALIAS(ukp_strcmp, strcmp)
UKP_LIBC_ALIAS(ukp_strncmp, strncmp)
UKP_LIBC_ALIAS(ukp_strcpy, strcpy)
UKP_LIBC_ALIAS(ukp_stpcpy, stpcpy)
UKP_LIBC_ALIAS(ukp_strcat, strcat)
UKP_LIBC_ALIAS(ukp_strchr, strchr)
UKP_LIBC_ALIAS(ukp_strchrnul, strchrnul)
UKP_LIBC_ALIAS(ukp_strrchr, strrchr)
UKP_LIBC_ALIAS(ukp_strspn, strspn)
UKP_LIBC_ALIAS(ukp_strcspn, strcspn)
UKP_LIBC_ALIAS(ukp_strstr, strstr)
UKP_LIBC_ALIAS(ukp_strtok_r, strtok_r)
UKP_LIBC_ALIAS(ukp_strcpy_chk, __strcpy_chk)
