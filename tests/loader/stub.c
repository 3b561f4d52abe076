/* SPDX-License-Identifier: MIT */
/*
 * stub.c - the agent stub: a freestanding static PIE that ukprobe's ptrace
 * loader (tools/ukprobe/load.c) maps into a process and starts on a
 * thread of its own (test_loader.c). With its own system calls only, it
 * connects to the socket its parameters name and reports where it runs:
 * its process and thread ids, the process's /proc/self/exe, 8 bytes of
 * the target's memory at the address it was given, its blocked signals
 * (/proc/thread-self/status) and its block's check; then it waits for
 * "q" (or the end of the connection) and ends its thread (exit, not
 * exit_group). Its strings are reached through a table of pointers: they
 * are right only when the loader applied its relative relocations.
 *
 * Built with STUB_ZYDIS, it also needs Debian's libZydis (a shared
 * library, linked with a stack protector) and exports what libZydis
 * takes from the C library (memcpy, memset, strlen, __stack_chk_fail,
 * __assert_fail): the loader maps libZydis beside it and binds
 * the two to each other. It reports the lengths of STUB_INSNS
 * instructions decoded at the address it was given (" insns=4,3,...").
 */
#include <stddef.h>
#include <stdint.h>

#include "load_block.h"
#include "stub.h"
#include "stub_sys.h"

#define AT_FDCWD (-100)

#ifdef STUB_ZYDIS
#include <Zydis/Zydis.h>
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

/* what the compiler (and, with STUB_ZYDIS, libZydis) may call */
EXPORT void *memset(void *d, int c, size_t n);
EXPORT void *memcpy(void *d, const void *s, size_t n);

void *memset(void *d, int c, size_t n)
{
	unsigned char *p = d;

	while (n--)
		*p++ = (unsigned char)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *p = d;
	const unsigned char *q = s;

	while (n--)
		*p++ = *q++;
	return d;
}

#ifdef STUB_ZYDIS
EXPORT size_t strlen(const char *s);
EXPORT __attribute__((noreturn)) void __stack_chk_fail(void);
EXPORT __attribute__((noreturn)) void __assert_fail(const char *e, const char *f, unsigned l,
						  const char *fn);

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* libZydis' own checks failing: the thread ends, the report unsent */
__attribute__((noreturn)) void __stack_chk_fail(void)
{
	for (;;)
		sys3(__NR_exit, 127, 0, 0);
}

__attribute__((noreturn)) void __assert_fail(const char *e, const char *f, unsigned l,
					     const char *fn)
{
	(void)e;
	(void)f;
	(void)l;
	(void)fn;
	for (;;)
		sys3(__NR_exit, 126, 0, 0);
}
#endif

/* the report's keys (relocated pointers: see the top); not const and
 * not static, so that the compiler reads them from the table */
extern const char *keys[];
const char *keys[] = { "ran pid=", " tid=", " exe=", " peek=", " sigblk=", " block=", " insns=" };

struct out {
	char buf[1024];
	size_t n;
};

static void put(struct out *o, const char *s)
{
	while (*s && o->n < sizeof(o->buf) - 1)
		o->buf[o->n++] = *s++;
}

static void put_num(struct out *o, unsigned long v, unsigned base)
{
	char t[24];
	int i = 0;

	do
		t[i++] = "0123456789abcdef"[v % base];
	while ((v /= base) && i < (int)sizeof(t));
	while (i-- && o->n < sizeof(o->buf) - 1)
		o->buf[o->n++] = t[i];
}

/* The SigBlk field of /proc/thread-self/status, into o. */
static void put_sigblk(struct out *o)
{
	char st[4096], *p = st;
	long fd = sys6(__NR_openat, AT_FDCWD, (long)"/proc/thread-self/status", 0, 0, 0, 0), n;

	if (fd < 0) {
		put(o, "?");
		return;
	}
	n = sys3(__NR_read, fd, st, sizeof(st) - 1);
	sys3(__NR_close, fd, 0, 0);
	st[n > 0 ? n : 0] = '\0';
	for (; *p; p++) {
		if (p[0] == 'S' && p[1] == 'i' && p[2] == 'g' && p[3] == 'B' && p[4] == 'l' &&
		    p[5] == 'k' && p[6] == ':') {
			p += 7;
			while (*p == '\t' || *p == ' ')
				p++;
			while (*p && *p != '\n' && o->n < sizeof(o->buf) - 1)
				o->buf[o->n++] = *p++;
			return;
		}
	}
	put(o, "?");
}

__attribute__((noreturn)) void stub_entry(struct ukp_load_block *b);

__attribute__((noreturn)) void stub_entry(struct ukp_load_block *b)
{
	const struct stub_params *pp = (const struct stub_params *)b->params;
	struct { uint16_t family; char path[108]; } sa;
	struct out o;
	char exe[512], c;
	long fd, n;
	size_t i;

	o.n = 0;
	memset(&sa, 0, sizeof(sa));
	sa.family = 1; /* AF_UNIX, abstract: path[0] is 0 */
	for (i = 0; pp->sock[i] && i < sizeof(pp->sock) && i + 1 < sizeof(sa.path); i++)
		sa.path[i + 1] = pp->sock[i];
	fd = sys3(__NR_socket, 1, 1 | 02000000 /* SOCK_STREAM | SOCK_CLOEXEC */, 0);
	if (fd < 0 || sys3(__NR_connect, fd, &sa, offsetof(typeof(sa), path) + 1 + i) < 0)
		goto out;
	put(&o, keys[0]);
	put_num(&o, (unsigned long)sys3(__NR_getpid, 0, 0, 0), 10);
	put(&o, keys[1]);
	put_num(&o, (unsigned long)sys3(__NR_gettid, 0, 0, 0), 10);
	put(&o, keys[2]);
	n = sys6(__NR_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)exe, sizeof(exe) - 1, 0,
		 0);
	exe[n > 0 ? n : 0] = '\0';
	put(&o, exe);
	put(&o, keys[3]);
	put_num(&o, pp->peek ? *(const volatile uint64_t *)(uintptr_t)pp->peek : 0, 16);
	put(&o, keys[4]);
	put_sigblk(&o);
	put(&o, keys[5]);
	put(&o, b->magic == UKP_LOAD_MAGIC && b->ctid == (uint32_t)sys3(__NR_gettid, 0, 0, 0) &&
			(uintptr_t)b >= b->stack && (uintptr_t)b < b->stack + b->stack_len
		? "ok" : "bad");
#ifdef STUB_ZYDIS
	if (pp->code) {
		ZydisDecoder dec;
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		const unsigned char *at = (const unsigned char *)(uintptr_t)pp->code;

		put(&o, keys[6]);
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		for (i = 0; i < STUB_INSNS; i++) {
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, at, 15, &in, ops))) {
				put(&o, "bad");
				break;
			}
			if (i)
				put(&o, ",");
			put_num(&o, in.length, 10);
			at += in.length;
		}
	}
#endif
	put(&o, "\n");
	sys3(__NR_write, fd, o.buf, o.n);
	while ((n = sys3(__NR_read, fd, &c, 1)) > 0 && c != 'q')
		;
out:
	if (fd >= 0)
		sys3(__NR_close, fd, 0, 0);
	for (;;)
		sys3(__NR_exit, 0, 0, 0);
}
