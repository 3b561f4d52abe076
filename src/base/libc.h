/* SPDX-License-Identifier: MIT */
/*
 * base/libc.h - the library's own pure C library functions
 * (doc/static_agent.md, "The agent's own C library"): strings and memory
 * (libc_mem.c, libc_str.c), numbers and the "C" locale's character
 * classes (libc_num.c), a printf formatter (libc_fmt.c) and fnmatch
 * (libc_fnmatch.c). None of them takes a lock, allocates, reads the
 * locale or touches errno: all are [any] context, the hit path included
 * (built with -mgeneral-regs-only, no vector register is used).
 *
 * Each is defined as ukp_NAME. The agent's build defines UKP_LIBC_NAMES:
 * the standard names are then hidden aliases of these, so that every call
 * the agent's objects make (the compiler's own memcpy/memset calls, the
 * _FORTIFY_SOURCE __*_chk forms, libiberty's) binds to them at link time
 * and none is an import of libukprobe-agent.so. libukprobes.so keeps
 * libc's names (the aliases are not built into it).
 *
 * The formatter: flags "-+ #0", a width and a precision (digits or '*'),
 * the lengths hh h l ll z j t (and q, L as ll), the conversions
 * d i u o x X c s p %, as glibc prints them ("(nil)", "(null)"). Floating
 * point, %n, %m and wide characters are not supported (the library's and
 * the agent's code is built without vector registers: no double reaches a
 * format); such a directive is written out as it stands and consumes no
 * argument. The return value is glibc's: the length the whole output
 * would have, or -1 when that exceeds INT_MAX.
 */
#ifndef UKP_BASE_LIBC_H
#define UKP_BASE_LIBC_H

#include <stdarg.h>
#include <stddef.h>

#ifdef UKP_LIBC_NAMES
/* the standard name NAME as a hidden alias of OWN (same translation unit);
 * the freestanding agent exports them (UKP_LIBC_VIS default: the
 * libraries the loader maps beside it bind to them) */
#ifndef UKP_LIBC_VIS
#define UKP_LIBC_VIS "hidden"
#endif
#define UKP_LIBC_ALIAS(own, name) \
	extern __typeof__(own) name __attribute__((alias(#own), visibility(UKP_LIBC_VIS)));
#else
#define UKP_LIBC_ALIAS(own, name)
#endif
/* a function only the standard names use (unused in libukprobes) */
#define UKP_LIBC_STD static __attribute__((unused))

/* libc_mem.c */
void *ukp_memcpy(void *restrict d, const void *restrict s, size_t n);
void *ukp_memmove(void *d, const void *s, size_t n);
void *ukp_memset(void *d, int c, size_t n);
int ukp_memcmp(const void *a, const void *b, size_t n);
void *ukp_memchr(const void *s, int c, size_t n);
void ukp_explicit_bzero(void *d, size_t n);
/* the _FORTIFY_SOURCE forms (__memcpy_chk...): a length above the
 * destination's size traps */
void *ukp_memcpy_chk(void *restrict d, const void *restrict s, size_t n, size_t dlen);
void *ukp_memmove_chk(void *d, const void *s, size_t n, size_t dlen);
void *ukp_memset_chk(void *d, int c, size_t n, size_t dlen);

/* libc_str.c */
size_t ukp_strlen(const char *s);
size_t ukp_strnlen(const char *s, size_t max);
int ukp_strcmp(const char *a, const char *b);
int ukp_strncmp(const char *a, const char *b, size_t n);
char *ukp_strcpy(char *restrict d, const char *restrict s);
char *ukp_stpcpy(char *restrict d, const char *restrict s);
char *ukp_strcat(char *restrict d, const char *restrict s);
char *ukp_strchr(const char *s, int c);
char *ukp_strchrnul(const char *s, int c);
char *ukp_strrchr(const char *s, int c);
size_t ukp_strspn(const char *s, const char *accept);
size_t ukp_strcspn(const char *s, const char *reject);
char *ukp_strstr(const char *hay, const char *needle);
char *ukp_strtok_r(char *restrict s, const char *restrict delim, char **restrict save);
char *ukp_strcpy_chk(char *restrict d, const char *restrict s, size_t dlen);

/* libc_num.c: as strtoul/strtol (base 0 or 2..36, leading space, a
 * sign, 0x/0 prefixes) in the "C" locale. Out of range: the value is
 * clamped as C says and *err (if given) is -ERANGE, else 0; an invalid
 * base: 0 and -EINVAL. errno is never written: the agent's strtol and
 * strtoul are these with err NULL. */
unsigned long ukp_strtoul(const char *restrict s, char **restrict end, int base, int *err);
long ukp_strtol(const char *restrict s, char **restrict end, int base, int *err);
/* the character classes of the "C" locale, glibc's bits
 * (<ctype.h>'s _ISdigit...), indexed -128..255 */
const unsigned short **ukp_ctype_b_loc(void);

/* libc_fmt.c */
int ukp_vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap);
int ukp_snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* a line formatted into a buffer of 512 bytes (longer: cut there) and
 * written to fd with one raw write (sys.h): [any] */
int ukp_dprintf(int fd, const char *restrict fmt, ...) __attribute__((format(printf, 2, 3)));
int ukp_vdprintf(int fd, const char *restrict fmt, va_list ap);

/* libc_fnmatch.c: fnmatch(3) with flags 0 ('*', '?', bracket
 * expressions with ranges, [!...] [^...] and [:CLASS:], backslash
 * escapes): 0 on a match, 1 (FNM_NOMATCH) else; any other flag: -1. */
int ukp_fnmatch(const char *pattern, const char *s, int flags);

#endif
