/* SPDX-License-Identifier: MIT */
/*
 * libc_fmt.c - the library's printf formatter (base/libc.h says what it
 * supports): [any] context, no allocation, no locale, no errno; output
 * goes into the caller's buffer, cut at its size and always terminated.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/libc.h"
#include "base/sys.h"

/* The output: the buffer (size bytes, the last kept for the '\0') and
 * how long the whole output is, written or not. */
struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_n(struct out *o, const char *s, size_t n)
{
	while (n--)
		put(o, *s++);
}

static void pad(struct out *o, char c, size_t n)
{
	while (n--)
		put(o, c);
}

enum { F_LEFT = 1, F_PLUS = 2, F_SPACE = 4, F_ALT = 8, F_ZERO = 16 };

struct spec {
	unsigned flags;
	int width, prec; /* prec -1: none */
};

/* A field of body n bytes behind a prefix of pn bytes: spaces to the
 * width before (or after, '-'), or zeros between prefix and body. */
static void field(struct out *o, const struct spec *sp, const char *prefix, size_t pn,
		  size_t zeros, const char *body, size_t n)
{
	size_t len = pn + zeros + n, w = sp->width > 0 ? (size_t)sp->width : 0;
	size_t fill = w > len ? w - len : 0;

	if (!(sp->flags & F_LEFT) && !(sp->flags & F_ZERO))
		pad(o, ' ', fill);
	put_n(o, prefix, pn);
	if (!(sp->flags & F_LEFT) && (sp->flags & F_ZERO))
		pad(o, '0', fill);
	pad(o, '0', zeros);
	put_n(o, body, n);
	if (sp->flags & F_LEFT)
		pad(o, ' ', fill);
}

/* An integer conversion: v is the magnitude, neg its sign (signed
 * conversions only); conv one of d i u o x X p. */
static void integer(struct out *o, struct spec sp, char conv, uint64_t v, int neg)
{
	const char *digits = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	unsigned base = conv == 'o' ? 8 : conv == 'x' || conv == 'X' || conv == 'p' ? 16 : 10;
	char body[24], prefix[3];
	size_t n = 0, pn = 0, zeros = 0;

	for (uint64_t x = v; x; x /= base)
		body[sizeof(body) - ++n] = digits[x % base];
	if (sp.prec >= 0)
		sp.flags &= ~(unsigned)F_ZERO;
	else
		sp.prec = 1;
	if ((size_t)sp.prec > n)
		zeros = (size_t)sp.prec - n;
	if (conv == 'd' || conv == 'i' || conv == 'p') { /* glibc: "%+p" is "+0x..." */
		if (neg)
			prefix[pn++] = '-';
		else if (sp.flags & F_PLUS)
			prefix[pn++] = '+';
		else if (sp.flags & F_SPACE)
			prefix[pn++] = ' ';
	}
	if (conv == 'o' && (sp.flags & F_ALT) && !zeros) { /* a leading 0 */
		zeros = 1;
	} else if ((conv == 'x' || conv == 'X') && (sp.flags & F_ALT) && v) {
		prefix[pn++] = '0';
		prefix[pn++] = (char)conv;
	} else if (conv == 'p') {
		prefix[pn++] = '0';
		prefix[pn++] = 'x';
	}
	field(o, &sp, prefix, pn, zeros, body + sizeof(body) - n, n);
}

/* The length modifier at *f: hh h l ll z j t (q and L as ll); the size
 * in bytes, -1 for hh, -2 for h. */
static int length(const char **f)
{
	const char *p = *f;
	int len = (int)sizeof(int);

	if (*p == 'h')
		len = p[1] == 'h' ? (p++, -1) : -2;
	else if (*p == 'l')
		len = p[1] == 'l' ? (p++, 8) : (int)sizeof(long);
	else if (*p == 'q' || *p == 'L' || *p == 'j')
		len = 8;
	else if (*p == 'z' || *p == 't')
		len = (int)sizeof(size_t);
	else
		return len;
	*f = p + 1;
	return len;
}

static uint64_t arg_unsigned(va_list *ap, int len)
{
	if (len == 8)
		return va_arg(*ap, uint64_t);
	if (len == (int)sizeof(long))
		return va_arg(*ap, unsigned long);
	unsigned v = va_arg(*ap, unsigned);
	return len == -1 ? (unsigned char)v : len == -2 ? (unsigned short)v : v;
}

static int64_t arg_signed(va_list *ap, int len)
{
	if (len == 8)
		return va_arg(*ap, int64_t);
	if (len == (int)sizeof(long))
		return va_arg(*ap, long);
	int v = va_arg(*ap, int);
	return len == -1 ? (signed char)v : len == -2 ? (short)v : v;
}

/* One directive after its '%' at *f; false when it is not one this
 * formatter knows (nothing consumed then). */
static bool directive(struct out *o, const char **f, va_list *ap)
{
	const char *p = *f, *s;
	struct spec sp = { 0, 0, -1 };
	int len;

	for (;; p++) {
		unsigned fl = *p == '-' ? F_LEFT : *p == '+' ? F_PLUS : *p == ' ' ? F_SPACE :
			      *p == '#' ? F_ALT : *p == '0' ? F_ZERO : 0;
		if (!fl)
			break;
		sp.flags |= fl;
	}
	/* a '*' is read only once the directive is known to be one of ours */
	const char *wstar = NULL, *pstar = NULL;
	if (*p == '*')
		wstar = p++;
	else
		for (; *p >= '0' && *p <= '9'; p++)
			sp.width = sp.width > (INT_MAX - 9) / 10 ? INT_MAX : sp.width * 10 + (*p - '0');
	if (*p == '.') {
		sp.prec = 0;
		if (*++p == '*')
			pstar = p++;
		else
			for (; *p >= '0' && *p <= '9'; p++)
				sp.prec = sp.prec > (INT_MAX - 9) / 10 ? INT_MAX : sp.prec * 10 + (*p - '0');
	}
	len = length(&p);
	if (!*p || !ukp_strchr("diuoxXcsp%", *p))
		return false;
	if (wstar) {
		sp.width = va_arg(*ap, int);
		if (sp.width < 0) {
			sp.flags |= F_LEFT;
			sp.width = sp.width == INT_MIN ? INT_MAX : -sp.width;
		}
	}
	if (pstar) {
		sp.prec = va_arg(*ap, int);
		if (sp.prec < 0)
			sp.prec = -1;
	}
	if (sp.flags & F_LEFT)
		sp.flags &= ~(unsigned)F_ZERO;
	if (sp.flags & F_PLUS)
		sp.flags &= ~(unsigned)F_SPACE;
	*f = p + 1;
	switch (*p) {
	case 'd':
	case 'i': {
		int64_t v = arg_signed(ap, len);
		integer(o, sp, *p, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
		break;
	}
	case 'u':
	case 'o':
	case 'x':
	case 'X':
		integer(o, sp, *p, arg_unsigned(ap, len), 0);
		break;
	case 'p': {
		void *ptr = va_arg(*ap, void *);
		if (ptr) {
			integer(o, sp, 'p', (uintptr_t)ptr, 0);
			break;
		}
		sp.flags &= ~(unsigned)F_ZERO;
		field(o, &sp, "", 0, 0, "(nil)", 5);
		break;
	}
	case 'c': {
		char c = (char)va_arg(*ap, int);
		sp.flags &= ~(unsigned)F_ZERO;
		field(o, &sp, "", 0, 0, &c, 1);
		break;
	}
	case 's':
		s = va_arg(*ap, const char *);
		if (!s)
			s = sp.prec < 0 || sp.prec >= 6 ? "(null)" : "";
		sp.flags &= ~(unsigned)F_ZERO;
		field(o, &sp, "", 0, 0, s, sp.prec < 0 ? ukp_strlen(s) : ukp_strnlen(s, (size_t)sp.prec));
		break;
	default: /* '%' */
		put(o, '%');
		break;
	}
	return true;
}

int ukp_vsnprintf(char *restrict buf, size_t size, const char *restrict format, va_list ap)
{
	struct out o = { buf, size, 0 };
	const char *fmt = format;
	va_list aq;

	va_copy(aq, ap);
	while (*fmt) {
		const char *pct = ukp_strchrnul(fmt, '%');

		put_n(&o, fmt, (size_t)(pct - fmt));
		fmt = pct;
		if (!*fmt)
			break;
		fmt++;
		if (!directive(&o, &fmt, &aq))
			put(&o, '%'); /* not ours: written out as it stands */
	}
	va_end(aq);
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len > INT_MAX ? -1 : (int)o.len;
}

int ukp_snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = ukp_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int ukp_vdprintf(int fd, const char *restrict fmt, va_list ap)
{
	char buf[512];
	int n = ukp_vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	long w = ukp_sys_write(fd, buf, len);

	return (int)w;
}

int ukp_dprintf(int fd, const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = ukp_vdprintf(fd, fmt, ap);
	va_end(ap);
	return n;
}

/* sprintf has no size: the largest output a return value can count */
UKP_LIBC_STD int std_vsprintf(char *restrict buf, const char *restrict fmt, va_list ap)
{
	return ukp_vsnprintf(buf, (size_t)INT_MAX + 1, fmt, ap);
}

UKP_LIBC_STD int std_sprintf(char *restrict buf, const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = std_vsprintf(buf, fmt, ap);
	va_end(ap);
	return n;
}

/* The _FORTIFY_SOURCE forms: slen is the buffer's real size; a size
 * larger than that is the caller's bug (glibc aborts): trap. */
UKP_LIBC_STD int chk_vsnprintf(char *restrict buf, size_t size, int flag, size_t slen,
			 const char *restrict fmt, va_list ap)
{
	(void)flag;
	if (size > slen)
		__builtin_trap();
	return ukp_vsnprintf(buf, size, fmt, ap);
}

UKP_LIBC_STD int chk_snprintf(char *restrict buf, size_t size, int flag, size_t slen,
			const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = chk_vsnprintf(buf, size, flag, slen, fmt, ap);
	va_end(ap);
	return n;
}

UKP_LIBC_STD int chk_vsprintf(char *restrict buf, int flag, size_t slen, const char *restrict fmt,
			va_list ap)
{
	int n;

	(void)flag;
	if (!slen)
		__builtin_trap();
	n = ukp_vsnprintf(buf, slen, fmt, ap);
	if (n < 0 || (size_t)n >= slen)
		__builtin_trap();
	return n;
}

UKP_LIBC_STD int chk_sprintf(char *restrict buf, int flag, size_t slen, const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = chk_vsprintf(buf, flag, slen, fmt, ap);
	va_end(ap);
	return n;
}

UKP_LIBC_ALIAS(ukp_vsnprintf, vsnprintf)
UKP_LIBC_ALIAS(ukp_snprintf, snprintf)
UKP_LIBC_ALIAS(std_vsprintf, vsprintf)
UKP_LIBC_ALIAS(std_sprintf, sprintf)
UKP_LIBC_ALIAS(ukp_vdprintf, vdprintf)
UKP_LIBC_ALIAS(ukp_dprintf, dprintf)
UKP_LIBC_ALIAS(chk_vsnprintf, __vsnprintf_chk)
UKP_LIBC_ALIAS(chk_snprintf, __snprintf_chk)
UKP_LIBC_ALIAS(chk_vsprintf, __vsprintf_chk)
UKP_LIBC_ALIAS(chk_sprintf, __sprintf_chk)
