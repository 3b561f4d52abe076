/* SPDX-License-Identifier: MIT */
/*
 * A program with an allocator of its own (malloc, calloc, realloc and
 * free around glibc's __libc_* functions) that notes where each call
 * came from. It calls work() and dlopen()s libz (the agent registers a
 * pending probe then), and at the end says how many of the calls came
 * from the code of libukprobe-agent.so: the agent must make none.
 */
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
