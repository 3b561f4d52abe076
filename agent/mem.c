/* SPDX-License-Identifier: MIT */
/*
 * mem.c - the agent's own memory. Everything linked into
 * libukprobe-agent.so (libukprobes, the agent, libiberty's demangler)
 * allocates here, never with the program's allocator: the link wraps
 * malloc, calloc, realloc, free, posix_memalign, strdup, strndup,
 * asprintf and realpath (agent/meson.build; realpath is the kernel's
 * resolution here, not libc's). The program's malloc may be
 * one of its own (jemalloc starts background threads for new callers),
 * may be locked by another thread when ukprobe attaches, and is what
 * the program measures; the agent stays out of it.
 *
 * Memory comes from mappings of the agent's own: blocks of powers of two
 * (32 B .. 512 KiB, a 16-byte header first) carved from 4 MiB arenas and
 * kept on free lists per size, and larger blocks each in a mapping of its
 * own, unmapped when freed. A sorted table of the mappings tells the
 * agent's blocks from others: a pointer the program's allocator made
 * (libelf's, libc's own, ...) and the agent frees or grows goes
 * back to the program's free/realloc, as before.
 *
 * Contexts: [init] and [reader] (never the hit path, which allocates
 * nothing). One lock of the agent's own, the innermost of its locks
 * (nothing is called with it held), taken around fork by the last
 * prepare handler of the agent's (registered before the others: they
 * run in the reverse order) so that the child finds it free and the
 * lists whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"

#define HDR 16
#define MIN_SHIFT 5
#define MAX_SHIFT 19
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)
#define ARENA_BYTES (4UL << 20)
#define MAX_RANGES 16384
#define PAGE 4096UL

enum { SMALL = 0x75a10000, BIG = 0x75b10000, ALIGNED = 0x75c10000 };

/* before every block */
struct hdr {
	uint32_t kind;            /* SMALL | shift, BIG, ALIGNED */
	uint32_t pad;
	uint64_t n;               /* BIG: the mapping's bytes; ALIGNED: back to the block */
};

struct range {
	uintptr_t start, end;
};

static struct range ranges[MAX_RANGES]; /* the agent's mappings, by start */
static size_t nranges;
static void *free_lists[NCLASS];
static char *bump, *bump_end;
static atomic_flag mem_lock = ATOMIC_FLAG_INIT;

void __real_free(void *p);
void *__real_realloc(void *p, size_t n);

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&mem_lock, memory_order_acquire))
		sched_yield();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&mem_lock, memory_order_release);
}

/* before any constructor of libukprobes or the agent, which may
 * register atfork handlers of their own */
__attribute__((constructor(101))) static void mem_init(void)
{
	pthread_atfork(lock, unlock, unlock);
}

/* locked: the first range that ends after p */
static size_t range_at(uintptr_t p)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid].end <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool owned(const void *p)
{
	size_t i = range_at((uintptr_t)p);

	return i < nranges && ranges[i].start <= (uintptr_t)p;
}

static bool range_add(uintptr_t start, uintptr_t end)
{
	size_t i = range_at(start);

	if (nranges == MAX_RANGES)
		return false;
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(ranges[0]));
	ranges[i] = (struct range){ start, end };
	nranges++;
	return true;
}

static void range_del(uintptr_t start)
{
	size_t i = range_at(start);

	if (i < nranges && ranges[i].start == start) {
		memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(ranges[0]));
		nranges--;
	}
}

static void *map(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static void *alloc_small(unsigned shift)
{
	size_t size = (size_t)1 << shift;
	struct hdr *h;

	lock();
	h = free_lists[shift - MIN_SHIFT];
	if (h) {
		free_lists[shift - MIN_SHIFT] = *(void **)(void *)h;
	} else {
		if (!bump || (size_t)(bump_end - bump) < size) {
			char *a = map(ARENA_BYTES);

			if (!a || !range_add((uintptr_t)a, (uintptr_t)a + ARENA_BYTES)) {
				unlock();
				if (a)
					munmap(a, ARENA_BYTES);
				errno = ENOMEM;
				return NULL;
			}
			bump = a;
			bump_end = a + ARENA_BYTES;
		}
		h = (struct hdr *)(void *)bump;
		bump += size;
	}
	unlock();
	h->kind = SMALL | shift;
	return (char *)h + HDR;
}

static void *alloc_big(size_t n)
{
	size_t len = (n + HDR + PAGE - 1) & ~(PAGE - 1);
	struct hdr *h;
	bool ok;

	if (len < n)
		goto nomem;
	h = map(len);
	if (!h)
		goto nomem;
	lock();
	ok = range_add((uintptr_t)h, (uintptr_t)h + len);
	unlock();
	if (!ok) {
		munmap(h, len);
		goto nomem;
	}
	h->kind = BIG;
	h->n = len;
	return (char *)h + HDR;
nomem:
	errno = ENOMEM;
	return NULL;
}

void *__wrap_malloc(size_t n)
{
	unsigned shift = MIN_SHIFT;

	if (n > ((size_t)1 << MAX_SHIFT) - HDR)
		return alloc_big(n);
	while (((size_t)1 << shift) - HDR < n)
		shift++;
	return alloc_small(shift);
}

/* The bytes a block of the agent's holds. */
static size_t usable(const void *p)
{
	const struct hdr *h = (const struct hdr *)(const void *)((const char *)p - HDR);

	if ((h->kind & 0xffff0000u) == SMALL)
		return ((size_t)1 << (h->kind & 0xffff)) - HDR;
	if (h->kind == BIG)
		return h->n - HDR;
	return usable((const char *)p - h->n) - h->n; /* ALIGNED */
}

void __wrap_free(void *p)
{
	struct hdr *h;
	bool ours;

	if (!p)
		return;
	lock();
	ours = owned(p);
	unlock();
	if (!ours) {
		__real_free(p); /* the program's allocator made it (libc's, libelf's) */
		return;
	}
	h = (struct hdr *)(void *)((char *)p - HDR);
	if ((h->kind & 0xffff0000u) == SMALL) {
		unsigned shift = h->kind & 0xffff;

		lock();
		*(void **)(void *)h = free_lists[shift - MIN_SHIFT];
		free_lists[shift - MIN_SHIFT] = h;
		unlock();
	} else if (h->kind == BIG) {
		size_t len = h->n;

		lock();
		range_del((uintptr_t)h);
		unlock();
		munmap(h, len);
	} else {
		__wrap_free((char *)p - h->n);
	}
}

void *__wrap_calloc(size_t a, size_t b)
{
	size_t n;
	void *p;

	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	/* a large block is a mapping of its own, fresh from the kernel and
	 * zero already: writing zeros would only fault its pages in */
	if (n > ((size_t)1 << MAX_SHIFT) - HDR)
		return alloc_big(n);
	p = __wrap_malloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *__wrap_realloc(void *p, size_t n)
{
	size_t have;
	bool ours;
	void *q;

	if (!p)
		return __wrap_malloc(n);
	lock();
	ours = owned(p);
	unlock();
	if (!ours)
		return __real_realloc(p, n);
	if (!n) {
		__wrap_free(p);
		return NULL;
	}
	have = usable(p);
	if (n <= have)
		return p;
	q = __wrap_malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, have);
	__wrap_free(p);
	return q;
}

int __wrap_posix_memalign(void **out, size_t align, size_t n)
{
	char *raw, *p;
	struct hdr *h;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	if (align <= HDR) {
		*out = __wrap_malloc(n);
		return *out ? 0 : ENOMEM;
	}
	if (n > SIZE_MAX - align - HDR)
		return ENOMEM;
	raw = __wrap_malloc(n + align + HDR);
	if (!raw)
		return ENOMEM;
	p = (char *)(((uintptr_t)raw + HDR + align - 1) & ~(uintptr_t)(align - 1));
	h = (struct hdr *)(void *)(p - HDR);
	h->kind = ALIGNED;
	h->n = (uint64_t)(p - raw);
	*out = p;
	return 0;
}

char *__wrap_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = __wrap_malloc(n);

	return d ? memcpy(d, s, n) : NULL;
}

char *__wrap_strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *d = __wrap_malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0 || !(*out = __wrap_malloc((size_t)n + 1))) {
		va_end(again);
		return -1;
	}
	vsnprintf(*out, (size_t)n + 1, fmt, again);
	va_end(again);
	return n;
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = __wrap_vasprintf(out, fmt, ap);
	va_end(ap);
	return n;
}

/* realpath() without libc's (which allocates with the program's malloc
 * and walks the path in user space): the kernel's own resolution of an
 * O_PATH descriptor, read back from its /proc/self/fd link. The system
 * calls' wrappers take no lock and allocate nothing; errno is set only on
 * failure, as realpath() sets it. */
char *__wrap_realpath(const char *path, char *resolved)
{
	char link[40], buf[PATH_MAX];
	int fd, saved = errno;
	ssize_t n;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return NULL;
	if ((size_t)n >= sizeof(buf) || buf[0] != '/') {
		errno = (size_t)n >= sizeof(buf) ? ENAMETOOLONG : ENOENT;
		return NULL;
	}
	buf[n] = 0;
	errno = saved;
	if (!resolved)
		return __wrap_strdup(buf);
	return memcpy(resolved, buf, (size_t)n + 1);
}
