/* SPDX-License-Identifier: MIT */
/*
 * The library's strings, memory, numbers, character classes and fnmatch
 * (src/base/libc_*.c, base/libc.h) against glibc's on many random
 * inputs and the edge cases: memcpy/memmove/memset at every offset and
 * length with guard bytes, overlapping moves both ways, strtol/strtoul
 * in every base with overflow (reported in err, errno untouched), the
 * "C" locale's class table entry by entry, fnmatch on random patterns.
 * Compiled in without the standard names: glibc's are the reference.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/libc.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

static void random_str(char *s, size_t max, const char *alpha)
{
	size_t n = rnd() % max, k = strlen(alpha);

	for (size_t i = 0; i < n; i++)
		s[i] = alpha[rnd() % k];
	s[n] = '\0';
}

Test(libc_str, copies_fills_moves)
{
	unsigned char src[300], a[300], b[300];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)rnd();
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len < 200; len++) {
			memset(a, 0xee, sizeof(a));
			memset(b, 0xee, sizeof(b));
			memcpy(a + off, src + (len % 7), len);
			cr_assert_eq(ukp_memcpy(b + off, src + (len % 7), len), b + off);
			cr_assert(!memcmp(a, b, sizeof(a)), "memcpy off %zu len %zu", off, len);
			memset(a + off, (int)len - 3, len);
			cr_assert_eq(ukp_memset(b + off, (int)len - 3, len), b + off);
			cr_assert(!memcmp(a, b, sizeof(a)), "memset off %zu len %zu", off, len);
			/* overlapping both ways */
			for (int dir = -1; dir <= 1; dir += 2) {
				size_t from = 40 + off, to = (size_t)((long)from + dir * (long)(len % 23));

				memcpy(a, src, sizeof(a));
				memcpy(b, src, sizeof(b));
				memmove(a + to, a + from, len);
				cr_assert_eq(ukp_memmove(b + to, b + from, len), b + to);
				cr_assert(!memcmp(a, b, sizeof(a)), "memmove %zu->%zu len %zu", from, to, len);
			}
			ukp_explicit_bzero(b + off, len);
			for (size_t i = 0; i < len; i++)
				cr_assert_eq(b[off + i], 0);
		}
}

/* the sizes the arch copies and fills its own way (x86-64: rep movsb
 * from 512 bytes), and memchr's words */
Test(libc_str, large_copies_fills_searches)
{
	static unsigned char src[9000], a[9000], b[9000];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)rnd();
	for (int i = 0; i < 400; i++) {
		size_t off = rnd() % 64, len = 400 + rnd() % 8000;
		int c = (int)(rnd() % 256);

		memset(a, 0xee, sizeof(a));
		memset(b, 0xee, sizeof(b));
		memcpy(a + off, src + i % 13, len);
		cr_assert_eq(ukp_memcpy(b + off, src + i % 13, len), b + off);
		cr_assert(!memcmp(a, b, sizeof(a)), "memcpy off %zu len %zu", off, len);
		cr_assert_eq(ukp_memcmp(a, b, sizeof(a)), 0);
		b[off + len - 1] ^= 1;
		cr_assert_eq(sign(ukp_memcmp(a, b, sizeof(a))), sign(memcmp(a, b, sizeof(a))));
		memset(a + off, c, len);
		cr_assert_eq(ukp_memset(b + off, c, len), b + off);
		cr_assert(!memcmp(a, b, sizeof(a)), "memset off %zu len %zu", off, len);
		for (size_t k = 0; k < 8; k++) {
			size_t at = off + rnd() % len;

			memcpy(a, src, sizeof(a));
			a[at] = (unsigned char)c;
			cr_assert_eq(ukp_memchr(a + off, c, len), memchr(a + off, c, len));
			cr_assert_eq(ukp_memchr(a + off, c, at - off), memchr(a + off, c, at - off));
		}
	}
}

Test(libc_str, compares_searches)
{
	char s[40], t[40], set[8];

	for (int i = 0; i < 200000; i++) {
		size_t n = rnd() % 45;
		int c = "abc\0x"[rnd() % 5];

		random_str(s, sizeof(s), "abcab");
		random_str(t, sizeof(t), rnd() % 2 ? "abc" : "a");
		if (rnd() % 3 == 0)
			strcpy(t, s);
		random_str(set, sizeof(set), "abcx");
		cr_assert_eq(ukp_strlen(s), strlen(s));
		cr_assert_eq(ukp_strnlen(s, n), strnlen(s, n));
		cr_assert_eq(sign(ukp_strcmp(s, t)), sign(strcmp(s, t)), "strcmp %s %s", s, t);
		cr_assert_eq(sign(ukp_strncmp(s, t, n)), sign(strncmp(s, t, n)));
		cr_assert_eq(sign(ukp_memcmp(s, t, n < 40 ? n : 40)), sign(memcmp(s, t, n < 40 ? n : 40)));
		cr_assert_eq(ukp_strchr(s, c), strchr(s, c));
		cr_assert_eq(ukp_strchrnul(s, c), strchrnul(s, c));
		cr_assert_eq(ukp_strrchr(s, c), strrchr(s, c));
		cr_assert_eq(ukp_memchr(s, c, strlen(s)), memchr(s, c, strlen(s)));
		cr_assert_eq(ukp_strspn(s, set), strspn(s, set), "strspn %s %s", s, set);
		cr_assert_eq(ukp_strcspn(s, set), strcspn(s, set));
		t[rnd() % 4] = '\0';
		cr_assert_eq(ukp_strstr(s, t), strstr(s, t), "strstr %s %s", s, t);
	}
	/* bytes above 127 compare unsigned */
	cr_assert_gt(ukp_strcmp("\xff", "a"), 0);
	cr_assert_gt(ukp_memcmp("\x80", "\x7f", 1), 0);
	cr_assert_gt(ukp_strncmp("a\xff", "ab", 2), 0);
}

Test(libc_str, strtok_r_strcpy_strcat)
{
	char s[40], g[40], d[8], *sg, *su, *pg, *pu;

	for (int i = 0; i < 50000; i++) {
		random_str(s, sizeof(s), "ab,, :");
		random_str(d, sizeof(d), ", :");
		strcpy(g, s);
		cr_assert_eq(ukp_strcpy(s, g), s);
		cr_assert_str_eq(s, g);
		char cat[2 * sizeof(s)], ref[2 * sizeof(s)];
		strcpy(cat, d);
		strcpy(ref, d);
		cr_assert_eq(ukp_strcat(cat, s), cat);
		cr_assert_str_eq(cat, strcat(ref, s));
		cr_assert_eq(ukp_stpcpy(cat, s), stpcpy(ref, s) - ref + cat);
		cr_assert_str_eq(cat, ref);
		pg = strtok_r(g, d, &sg);
		pu = ukp_strtok_r(s, d, &su);
		for (;;) {
			cr_assert_eq(!pg, !pu);
			if (!pg)
				break;
			cr_assert_eq(pg - g, pu - s);
			cr_assert_str_eq(pg, pu);
			pg = strtok_r(NULL, d, &sg);
			pu = ukp_strtok_r(NULL, d, &su);
		}
	}
}

/* strtol and strtoul: value, end and the range error against glibc's
 * errno; errno itself never changes. */
static void number(const char *s, int base)
{
	char *eg, *eu;
	int err;

	errno = 0;
	long lg = strtol(s, &eg, base);
	int errg = errno;
	errno = 777;
	long lu = ukp_strtol(s, &eu, base, &err);
	cr_assert_eq(errno, 777);
	cr_assert_eq(lu, lg, "strtol(\"%s\", %d): %ld, glibc %ld", s, base, lu, lg);
	cr_assert_eq(eu, eg, "strtol(\"%s\", %d): end", s, base);
	cr_assert_eq(err, errg == ERANGE ? -ERANGE : 0, "strtol(\"%s\", %d): err %d", s, base, err);

	errno = 0;
	unsigned long ug = strtoul(s, &eg, base);
	errg = errno;
	errno = 777;
	unsigned long uu = ukp_strtoul(s, &eu, base, &err);
	cr_assert_eq(errno, 777);
	cr_assert_eq(uu, ug, "strtoul(\"%s\", %d): %lu, glibc %lu", s, base, uu, ug);
	cr_assert_eq(eu, eg, "strtoul(\"%s\", %d): end", s, base);
	cr_assert_eq(err, errg == ERANGE ? -ERANGE : 0, "strtoul(\"%s\", %d): err", s, base);
}

Test(libc_str, strtol_strtoul)
{
	static const char *const fixed[] = {
		"", " ", "-", "+", "0", "-0", "0x", "0X", "0x1g", "0xg", "-0x", "08", "0777", "0b101",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "18446744073709551615", "18446744073709551616",
		"-18446744073709551615", "-18446744073709551616", "0xffffffffffffffff",
		"0x10000000000000000", "  \t\n\v\f\r42x", "+-1", "zz", "Zz", "123456789012345678901234",
	};
	char s[48];

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		for (int base = 0; base <= 36; base++)
			if (base != 1)
				number(fixed[i], base);
	for (int i = 0; i < 200000; i++) {
		char *p = s;
		int base = (int)(rnd() % 38);

		if (base == 1)
			base = 0;
		if (base == 37)
			base = 16;
		if (rnd() % 4 == 0)
			*p++ = " \t\n"[rnd() % 3];
		if (rnd() % 3 == 0)
			*p++ = "+-"[rnd() % 2];
		if (rnd() % 3 == 0) {
			*p++ = '0';
			if (rnd() % 2)
				*p++ = "xX"[rnd() % 2];
		}
		random_str(p, rnd() % 2 ? 8 : 30, rnd() % 2 ? "0123456789" : "0123456789abcdefxyzABZ");
		number(s, base);
	}
	/* an invalid base: 0, the end at the start, -EINVAL */
	char *end;
	int err;
	cr_assert_eq(ukp_strtol("12", &end, 1, &err), 0);
	cr_assert_eq(err, -EINVAL);
	cr_assert_str_eq(end, "12");
	cr_assert_eq(ukp_strtoul("12", &end, 37, &err), 0);
	cr_assert_eq(err, -EINVAL);
}

Test(libc_str, ctype_table_is_the_c_locales)
{
	const unsigned short *ours = *ukp_ctype_b_loc(), *glibc = *__ctype_b_loc();

	for (int c = -128; c < 256; c++)
		cr_assert_eq(ours[c], glibc[c], "class of %d: %#x, glibc %#x", c, ours[c], glibc[c]);
}

/* A random well-formed glob of literals, '?', '*', escapes and bracket
 * expressions (negation, ranges, a ']' first, classes). */
static void random_glob(char *p, size_t max)
{
	static const char *const parts[] = {
		"a", "b", ".", "/", "?", "*", "**", "\\*", "\\a", "[ab]", "[!a]", "[^b]", "[a-c]",
		"[]a]", "[!]]", "[a-]", "[[:digit:]]", "[[:alpha:].]", "[![:upper:]]", "[\\]]",
		"[", "]", "-", "1", "A",
	};
	size_t n = rnd() % 6;

	*p = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *part = parts[rnd() % (sizeof(parts) / sizeof(parts[0]))];

		if (strlen(p) + strlen(part) + 1 < max)
			strcat(p, part);
	}
}

Test(libc_str, fnmatch)
{
	char pat[64], s[16];

	for (int i = 0; i < 300000; i++) {
		random_glob(pat, sizeof(pat));
		random_str(s, sizeof(s), "ab./1A]-*[");
		cr_assert_eq(ukp_fnmatch(pat, s, 0) == 0, fnmatch(pat, s, 0) == 0,
			     "fnmatch(\"%s\", \"%s\"): ours %d, glibc %d", pat, s,
			     ukp_fnmatch(pat, s, 0), fnmatch(pat, s, 0));
	}
	cr_assert_eq(ukp_fnmatch("*.so*", "libc.so.6", 0), 0);
	cr_assert_eq(ukp_fnmatch("a*b*c", "aXbYbZ", 0), FNM_NOMATCH);
	cr_assert_eq(ukp_fnmatch("x", "x", FNM_PATHNAME), -1); /* flags: not supported */
}
