/* SPDX-License-Identifier: MIT */
/*
 * A program with an allocator of its own (malloc, calloc, realloc and
 * free around glibc's __libc_* functions) that notes where each call
 * came from. It calls work() and dlopen()s libz (the agent registers a
 * pending probe then), and at the end says how many of the calls came
 * from the code of libukprobe-agent.so: the agent must make none.
 *
 * It interposes libc's functions that allocate with the program's
 * malloc or take libc's locks behind their caller's back too (stdio's
 * fopen/fdopen: the list of open streams' lock; opendir, realpath,
 * qsort: memory from malloc) and says how many calls of them came from
 * the agent's code (the library's system layer replaces them: none),
 * and how many allocator calls came from libelf's code (the library's
 * reader of symbol tables, on the agent's behalf).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t a, size_t b);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

#define MAXCALLS (1 << 20)
static uintptr_t callers[MAXCALLS];
static _Atomic size_t ncalls;

static void note(uintptr_t ra)
{
	size_t i = atomic_fetch_add(&ncalls, 1);

	if (i < MAXCALLS)
		callers[i] = ra;
}

void *malloc(size_t n)
{
	note((uintptr_t)__builtin_return_address(0));
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	note((uintptr_t)__builtin_return_address(0));
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	note((uintptr_t)__builtin_return_address(0));
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		note((uintptr_t)__builtin_return_address(0));
	__libc_free(p);
}

/* libc's calls that lock or allocate, with who called them */
static uintptr_t libc_callers[4096];
static _Atomic size_t nlibc;

static void note_libc(uintptr_t ra)
{
	size_t i = atomic_fetch_add(&nlibc, 1);

	if (i < sizeof(libc_callers) / sizeof(libc_callers[0]))
		libc_callers[i] = ra;
}

/* the next definition (libc's), looked up at the first call */
#define NEXT_AS(fn, sym) \
	static __typeof__(&fn) real; \
	if (!real) \
		real = (__typeof__(&fn))dlsym(RTLD_NEXT, sym)
#define NEXT(fn) NEXT_AS(fn, #fn)

/* both names (this file's fopen is fopen64: _FILE_OFFSET_BITS) */
FILE *ukt_fopen(const char *path, const char *mode) __asm__("fopen");
FILE *ukt_fopen64(const char *path, const char *mode) __asm__("fopen64");

FILE *ukt_fopen(const char *path, const char *mode)
{
	NEXT_AS(fopen, "fopen");
	note_libc((uintptr_t)__builtin_return_address(0));
	return real(path, mode);
}

FILE *ukt_fopen64(const char *path, const char *mode)
{
	NEXT_AS(fopen, "fopen64");
	note_libc((uintptr_t)__builtin_return_address(0));
	return real(path, mode);
}

FILE *fdopen(int fd, const char *mode)
{
	NEXT(fdopen);
	note_libc((uintptr_t)__builtin_return_address(0));
	return real(fd, mode);
}

DIR *opendir(const char *path)
{
	NEXT(opendir);
	note_libc((uintptr_t)__builtin_return_address(0));
	return real(path);
}

DIR *fdopendir(int fd)
{
	NEXT(fdopendir);
	note_libc((uintptr_t)__builtin_return_address(0));
	return real(fd);
}

char *realpath(const char *path, char *out)
{
	NEXT(realpath);
	note_libc((uintptr_t)__builtin_return_address(0));
	return real(path, out);
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	NEXT(qsort);
	note_libc((uintptr_t)__builtin_return_address(0));
	real(base, n, size, cmp);
}

void qsort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
	     void *arg)
{
	NEXT(qsort_r);
	note_libc((uintptr_t)__builtin_return_address(0));
	real(base, n, size, cmp, arg);
}

/* how many of v's n callers are in the mappings of an object named name */
static size_t from(const char *maps, const char *name, const uintptr_t *v, size_t n)
{
	size_t count = 0;

	for (const char *line = maps; *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long lo, hi;
		char buf[512];
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = 0;
		if (strstr(buf, name) && sscanf(buf, "%lx-%lx", &lo, &hi) == 2)
			for (size_t i = 0; i < n; i++)
				count += v[i] >= lo && v[i] < hi;
		line = nl ? nl + 1 : line + len;
	}
	return count;
}

__attribute__((noinline)) int work(int i)
{
	return i * 3;
}

int main(void)
{
	static char maps[1 << 20];
	uintptr_t lo[64], hi[64];
	size_t len = 0, n, i, agent = 0;
	int fd, k, nr = 0, sum = 0;
	char *line, *save;
	void *z;

	for (k = 0; k < 1000; k++)
		sum += work(k);
	free(malloc(100));
	z = dlopen("libz.so.1", RTLD_NOW);
	if (!z)
		return 2;
	/* the agent's code: where it is mapped now */
	fd = open("/proc/self/maps", O_RDONLY);
	while (fd >= 0 && len < sizeof(maps) - 1) {
		ssize_t r = read(fd, maps + len, sizeof(maps) - 1 - len);

		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	maps[len] = '\0';
	{
		size_t nl = atomic_load(&nlibc), nm = atomic_load(&ncalls);

		if (nl > sizeof(libc_callers) / sizeof(libc_callers[0]))
			nl = sizeof(libc_callers) / sizeof(libc_callers[0]);
		if (nm > MAXCALLS)
			nm = MAXCALLS;
		printf("libc calls from the agent %zu allocator calls from libelf %zu%s\n",
		       from(maps, "libukprobe-agent", libc_callers, nl),
		       from(maps, "/libelf", callers, nm),
		       strstr(maps, "/libelf") ? " (libelf loaded)" : "");
	}
	for (line = strtok_r(maps, "\n", &save); line && nr < 64; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "libukprobe-agent") &&
		    sscanf(line, "%lx-%lx", (unsigned long *)&lo[nr], (unsigned long *)&hi[nr]) == 2)
			nr++;
	n = atomic_load(&ncalls);
	if (n > MAXCALLS)
		n = MAXCALLS;
	for (i = 0; i < n; i++)
		for (k = 0; k < nr; k++)
			if (callers[i] >= lo[k] && callers[i] < hi[k])
				agent++;
	printf("sum %d agent mapped %d calls %zu from the agent %zu\n", sum, nr > 0, n, agent);
	return 0;
}
