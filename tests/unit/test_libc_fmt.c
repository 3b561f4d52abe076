/* SPDX-License-Identifier: MIT */
/*
 * The library's printf formatter (src/base/libc_fmt.c, base/libc.h)
 * against glibc's snprintf: every supported conversion with random
 * flags, widths and precisions (digits and '*', negative '*' too), every
 * length modifier, the edge values (INT_MIN, LLONG_MIN, ...), NULL
 * strings and pointers, output cut at every buffer size with the return
 * value of the whole; the agent's own formats; dprintf; errno untouched.
 * The sources are compiled into this test without the standard names
 * (ukp_* only), so glibc's are the reference.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/libc.h"

/* xorshift: the same inputs at every run */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const long long edges[] = {
	0, 1, -1, 7, 8, 9, 10, 15, 16, 255, 256, -128, 127, 128, 32767, -32768, 65535, 65536,
	INT_MAX, INT_MIN, UINT_MAX, (long long)UINT_MAX + 1, LLONG_MAX, LLONG_MIN,
	LLONG_MIN + 1, 0x123456789abcdefll, -0x123456789abcdefll, 1000000, 999999999,
};

static long long value(void)
{
	switch (rnd() % 4) {
	case 0:
		return edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
	case 1:
		return (long long)(rnd() % 2000) - 1000;
	case 2:
		return (long long)(int)rnd();
	default:
		return (long long)rnd();
	}
}

static const char *const strs[] = { "", "a", "hello", "a longer string of words", "%d%s",
				    "tab\there", "0123456789abcdefghij0123456789", NULL };

/* Both formatters on the same arguments into buffers of size n: the
 * return values and the bytes written must be the same. */
#define SAME(n, fmt, ...)                                                          \
	do {                                                                           \
		char g[300], u[300];                                                       \
		size_t n_ = (n);                                                           \
		memset(g, 'G', sizeof(g));                                                 \
		memset(u, 'G', sizeof(u));                                                 \
		int rg = snprintf(n_ ? g : NULL, n_, fmt, __VA_ARGS__);                     \
		int ru = ukp_snprintf(n_ ? u : NULL, n_, fmt, __VA_ARGS__);                 \
		cr_assert_eq(rg, ru, "\"%s\" size %zu: glibc returns %d, ours %d", fmt, n_, \
			     rg, ru);                                                          \
		cr_assert(!memcmp(g, u, sizeof(g)),                                        \
			  "\"%s\" size %zu: glibc \"%.*s\", ours \"%.*s\"", fmt, n_,           \
			  n_ ? (int)strnlen(g, n_) : 0, g, n_ ? (int)strnlen(u, n_) : 0, u); \
	} while (0)

static size_t size_for(void)
{
	switch (rnd() % 4) {
	case 0:
		return rnd() % 3; /* 0, 1, 2 */
	case 1:
		return rnd() % 40;
	default:
		return 300;
	}
}

/* One directive (with literal text around it) of random flags, width
 * and precision for conversion conv with length len ("" for none). */
static void one(const char *len, char conv)
{
	char fmt[64], *f = fmt;
	int wstar = 0, pstar = 0, w = (int)(rnd() % 41) - 20, p = (int)(rnd() % 26) - 5;
	size_t n = size_for();

	*f++ = rnd() % 2 ? '<' : ' ';
	*f++ = '%';
	for (const char *fl = "-+ #0"; *fl; fl++)
		if (rnd() % 4 == 0)
			*f++ = *fl;
	switch (rnd() % 3) {
	case 0:
		break;
	case 1:
		f += sprintf(f, "%d", (int)(rnd() % 25));
		break;
	default:
		*f++ = '*';
		wstar = 1;
	}
	switch (rnd() % 4) {
	case 0:
	case 1:
		break;
	case 2:
		f += sprintf(f, ".%.0d", (int)(rnd() % 22));
		break;
	default:
		f += sprintf(f, ".*");
		pstar = 1;
	}
	f += sprintf(f, "%s%c>", len, conv);
	*f = '\0';

	long long v = value();
	bool wide = !strcmp(len, "l") || !strcmp(len, "ll") || !strcmp(len, "z") ||
		    !strcmp(len, "j") || !strcmp(len, "t") || !strcmp(len, "q");
#define ARGS(x)                                                    \
	do {                                                           \
		if (wstar && pstar)                                        \
			SAME(n, fmt, w, p, x);                                 \
		else if (wstar)                                            \
			SAME(n, fmt, w, x);                                    \
		else if (pstar)                                            \
			SAME(n, fmt, p, x);                                    \
		else                                                       \
			SAME(n, fmt, x);                                       \
	} while (0)
	if (conv == 's') {
		const char *s = strs[rnd() % (sizeof(strs) / sizeof(strs[0]))];
		ARGS(s);
	} else if (conv == 'p') {
		void *ptr = rnd() % 4 ? (void *)(uintptr_t)v : NULL;
		ARGS(ptr);
	} else if (wide) {
		ARGS(v);
	} else {
		int i = (int)v;
		ARGS(i);
	}
}

Test(libc_fmt, random_directives)
{
	static const char *const lens[] = { "hh", "h", "", "l", "ll", "z", "j", "t", "q" };

	for (int i = 0; i < 200000; i++) {
		const char *conv = "diuoxXcsp%";
		char c = conv[rnd() % 10];

		if (c == 'c' || c == 's' || c == 'p' || c == '%')
			one("", c == '%' ? 'd' : c);
		else
			one(lens[rnd() % (sizeof(lens) / sizeof(lens[0]))], c);
	}
}

Test(libc_fmt, edges)
{
	for (size_t n = 0; n < 40; n++) {
		SAME(n, "%d|%i", INT_MIN, INT_MAX);
		SAME(n, "%lld %llx %llo", LLONG_MIN, LLONG_MIN, LLONG_MIN);
		SAME(n, "%ld %lu", LONG_MIN, ULONG_MAX);
		SAME(n, "%hhd %hhu %hd %hu", 300, -1, 70000, -1);
		SAME(n, "%zu %zd %td %jd", SIZE_MAX, (ssize_t)-5, (ptrdiff_t)-7, (intmax_t)INT64_MIN);
		SAME(n, "%#x %#o %#.0x %#.0o %.0d|%.0u", 0, 0, 0, 0, 0, 0);
		SAME(n, "%#X %#5o %#-8x| %+.3d % 05d %-+6d|", 255, 8, 17, 5, 5, -5);
		SAME(n, "%s %.3s %10.2s %-10s|", "abcdef", "abcdef", "abcdef", "ab");
		SAME(n, "%s %.5s %.6s %8s", (char *)NULL, (char *)NULL, (char *)NULL, (char *)NULL);
		SAME(n, "%p %10p %-12p| %+p % p %010p", NULL, NULL, (void *)0x1234, (void *)1,
		     (void *)2, (void *)0xabc);
		SAME(n, "%c%5c%-5c|%%|%5%|%-5%", 'a', 'b', 'c');
		SAME(n, "%*d|%-*d|%*d|%.*d|%.*d", 6, 42, 6, 42, -6, 42, 4, 7, -4, 7);
		SAME(n, "%*.*s|", -9, 3, "abcdef");
		SAME(n, "%s", "");
		SAME(n, "no directive at all %s", "");
	}
}

/* The formats the agent and the library print (agent/probes.c,
 * src/core/knobs.c, blacklist.c, kprobes.c, debuginfo.c, libiberty's). */
Test(libc_fmt, the_agents_formats)
{
	for (size_t n = 0; n < 120; n += 7) {
		SAME(n, "0x%016lx-0x%016lx\t%s\n", 0x7f0012345678ul, 0xffffffffff600000ul, "[vdso]");
		SAME(n, "%016lx  %s  %s+0x%lx  %s %s%s%s%s\n", 0x401000ul, "k", "main", 0x10ul, "[OPT]",
		     "", "x", "y", "z");
		SAME(n, "%s:%%%s:%s", "/usr/lib/libc.so.6", "libc", "memcpy__entry");
		SAME(n, "%.*s__entry", 5, "setjmp_return");
		SAME(n, "$duration: SDT probe %.60s:%.60s is no NAME__return probe", "prov",
		     "a_very_long_name_that_goes_on_and_on_and_on_and_on_and_on_and_on_and_on");
		SAME(n, "%02x%02x%02x", 0xab, 0x1, 0xff);
		SAME(n, "%#lx %#zx %#x %p", 0xdeadbeeful, (size_t)4096, 0x10u, (void *)0x55aa);
		SAME(n, " len=%llu %s", 123456789012ull, "bytes");
		SAME(n, "%d", -2147483647 - 1);
		SAME(n, "<%s>", "anon");
		SAME(n, "%lu %lx", 18446744073709551615ul, 0ul);
	}
}

/* What the formatter does not know is written out as it stands, and
 * consumes no argument. */
Test(libc_fmt, unknown_directives)
{
	char b[64];

	cr_assert_eq(ukp_snprintf(b, sizeof(b), "%y|%d", 5), 4);
	cr_assert_str_eq(b, "%y|5");
	cr_assert_eq(ukp_snprintf(b, sizeof(b), "a%", 5), 2);
	cr_assert_str_eq(b, "a%");
	ukp_snprintf(b, sizeof(b), "%f %s", "x");
	cr_assert_str_eq(b, "%f x");
}

Test(libc_fmt, dprintf_one_write_errno_kept)
{
	int fds[2];
	char got[600], want[600];
	ssize_t n;

	cr_assert(!pipe(fds));
	errno = 4321;
	cr_assert_eq(ukp_dprintf(fds[1], "%s=%d %#lx\n", "x", -3, 255ul), 10);
	cr_assert_eq(errno, 4321);
	n = read(fds[0], got, sizeof(got));
	cr_assert_eq(n, 10);
	cr_assert(!memcmp(got, "x=-3 0xff\n", 10));
	/* longer than its buffer: cut to 511 bytes, one write */
	memset(want, 'q', sizeof(want));
	cr_assert_eq(ukp_dprintf(fds[1], "%.*s", 600, want), 511);
	cr_assert_eq(read(fds[0], got, sizeof(got)), 511);
	/* a write error comes back as -errno, errno untouched */
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(ukp_dprintf(fds[1], "x"), -EBADF);
	cr_assert_eq(errno, 4321);
}
