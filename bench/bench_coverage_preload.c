// SPDX-License-Identifier: MIT
/*
 * bench_coverage_preload.c - bench_coverage inside an executable
 * (bench_coverage --exe PATH): an executable cannot be dlopen()ed into
 * the benchmark, so the benchmark is preloaded into it. glibc's
 * __libc_start_main is wrapped to call bench_coverage's main instead of
 * the program's, after every constructor has run (the program's state is
 * what it would be at its own main), with the arguments in
 * BENCH_COVERAGE_ARGS (--self --json FILE ...); the process then exits
 * without running the program.
 *
 * Context: ordinary code, the main thread, before the program's main.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bench_coverage_main(int argc, char **argv);

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
			void *);

#define MAX_ARGS 32

static int coverage_main(int argc, char **argv, char **envp)
{
	static char buf[1024];
	char *args[MAX_ARGS + 1], *env = getenv("BENCH_COVERAGE_ARGS"), *save = NULL, *tok;
	int n = 0;

	(void)argc;
	(void)envp;
	if (!env) {
		fprintf(stderr, "bench_coverage_preload: BENCH_COVERAGE_ARGS is not set\n");
		_exit(2);
	}
	snprintf(buf, sizeof(buf), "%s", env);
	args[n++] = argv[0];
	for (tok = strtok_r(buf, " ", &save); tok && n < MAX_ARGS; tok = strtok_r(NULL, " ", &save))
		args[n++] = tok;
	args[n] = NULL;
	fflush(NULL);
	_exit(bench_coverage_main(n, args));
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
		      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	start_fn real = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");

	(void)main;
	return real(coverage_main, argc, argv, init, fini, rtld_fini, stack_end);
}
