/* SPDX-License-Identifier: MIT */
/*
 * The target of ukprobe's stacktrace tests.
 *
 * main -> sort_them -> qsort (libc, no frame pointers) -> ... -> cmp:
 * the first time cmp runs, it prints its own stack as glibc's backtrace()
 * (libgcc's .eh_frame unwinder) sees it, one "frame OBJECT FUNCTION" line
 * per return address (OBJECT: the basename of its object; FUNCTION: cmp,
 * sort_them or main when it is one of ours, else "-").
 *
 * With --libc-backtrace, cmp calls glibc's backtrace() as __backtrace,
 * which no interposer of libukprobes stands before (libgcc walks the
 * frames of pending return probes on its own).
 *
 * main -> chain_a -> chain_b -> chain_c: a static call chain, for the
 * build without unwind tables (tgt_stacks_nocfi, frame pointers only),
 * where backtrace() cannot see past our own frames.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;
static int printed;
extern int __backtrace(void **buffer, int size);
static int (*walk)(void **buffer, int size) = backtrace;

static const char *ours(void *addr);

__attribute__((noinline)) int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!printed) {
		void *frames[64];
		int n = walk(frames, 64), i;

		printed = 1;
		for (i = 0; i < n; i++) {
			Dl_info di;
			const char *obj = "?";

			if (dladdr((char *)frames[i] - 1, &di) && di.dli_fname) {
				obj = strrchr(di.dli_fname, '/');
				obj = obj ? obj + 1 : di.dli_fname;
			}
			printf("frame %s %s\n", obj, ours((char *)frames[i] - 1));
		}
	}
	return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_them(int *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
}

__attribute__((noinline)) void chain_c(int i)
{
	sink += i;
}

__attribute__((noinline)) void chain_b(int i)
{
	chain_c(i * 2);
	sink++;
}

__attribute__((noinline)) void chain_a(int i)
{
	chain_b(i + 1);
	sink++;
}

int main(int argc, char **argv)
{
	int v[40], i;

	if (argc > 1 && !strcmp(argv[1], "--chain")) {
		chain_a(1);
		printf("chain done\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--libc-backtrace"))
		walk = __backtrace;
	for (i = 0; i < 40; i++)
		v[i] = (i * 7919) % 101;
	sort_them(v, 40);
	printf("sorted %d..%d\n", v[0], v[39]);
	return 0;
}

/* Which of our functions contains addr: the nearest of their starts
 * below it (they are laid out in this file's order or another; the
 * closest start wins). */
static const char *ours(void *addr)
{
	static const struct {
		const char *name;
		void *start;
	} fns[] = {
		{ "cmp", (void *)cmp }, { "sort_them", (void *)sort_them }, { "main", (void *)main },
		{ "chain_a", (void *)chain_a }, { "chain_b", (void *)chain_b },
		{ "chain_c", (void *)chain_c }, { "ours", (void *)ours },
	};
	const char *best = "-";
	unsigned long bestd = 4096; /* our functions are small */
	size_t i;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		unsigned long d = (unsigned long)((char *)addr - (char *)fns[i].start);

		if ((char *)addr >= (char *)fns[i].start && d < bestd) {
			bestd = d;
			best = fns[i].name;
		}
	}
	return best;
}
