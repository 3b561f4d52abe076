// SPDX-License-Identifier: MIT
/*
 * codeflow_index_preload.c - LD_PRELOADed into a program by
 * test_codeflow_nopie (CPython, a stripped non-PIE executable with 5 MB of
 * code): for the object of each function that UKT_INDEX_SYMS names
 * (comma-separated, looked up with dlsym after dlopen()ing UKT_INDEX_LOAD
 * when set), the flow check's index built in one pass and in two must be
 * the same (codeflow_index_check.h), checked when the program exits. One
 * line per object on stderr; exit status 3 at the first difference or
 * failure. With UKT_INDEX_CACHE (a directory), each object's index is
 * also built through the cache (flow_cache.h) in a subdirectory named for
 * the function, stored, read back and rebuilt after its entry is damaged:
 * the same each time (a "cache: ... the same" line), and not used while a
 * byte of the function's code is changed in memory; then all of them in
 * one directory that keeps two entries (a "bounded: ..." line).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codeflow_index_check.h"
#include "ukprobes.h"

static void check_objects(void)
{
	const char *load = getenv("UKT_INDEX_LOAD"), *syms = getenv("UKT_INDEX_SYMS");
	const char *cache = getenv("UKT_INDEX_CACHE");
	char *list, *name, *save = NULL;

	if (!syms)
		return;
	int ret = ukp_init();

	if (ret) {
		fprintf(stderr, "index: ukp_init: %d\n", ret);
		_exit(3);
	}
	if (load && !dlopen(load, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "index: cannot load %s\n", load);
		_exit(3);
	}
	const struct ukp_object *objs[16];
	size_t nobjs = 0;

	list = strdup(syms);
	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		void *fn = dlsym(RTLD_DEFAULT, name);
		const struct ukp_object *obj = fn ? ukp_object_of((uintptr_t)fn) : NULL;
		struct ukp_codeflow_index one;
		char msg[256];

		if (!obj) {
			fprintf(stderr, "index: %s: no object\n", name);
			_exit(3);
		}
		if (ukt_index_same(obj, &one, msg, sizeof(msg))) {
			fprintf(stderr, "index: %s (%s): %s\n", obj->path, name, msg);
			_exit(3);
		}
		fprintf(stderr, "index: %s (%s): %s\n", obj->path, name, msg);
		if (nobjs < sizeof(objs) / sizeof(objs[0]))
			objs[nobjs++] = obj;
		if (cache) {
			char dir[512];

			snprintf(dir, sizeof(dir), "%s/%s", cache, name);
			if (mkdir(dir, 0700) || ukt_index_cache_same(obj, fn, dir, msg, sizeof(msg))) {
				fprintf(stderr, "cache: %s (%s): %s\n", obj->path, name, msg);
				_exit(3);
			}
			fprintf(stderr, "cache: %s (%s): %s\n", obj->path, name, msg);
		}
	}
	free(list);
	if (cache && nobjs >= 3) {
		char dir[512], msg[256] = "cannot make the directory";

		snprintf(dir, sizeof(dir), "%s/bounded", cache);
		if (mkdir(dir, 0700) || ukt_cache_bounded(objs, nobjs, dir, msg, sizeof(msg))) {
			fprintf(stderr, "bounded: %s\n", msg);
			_exit(3);
		}
		fprintf(stderr, "bounded: %s\n", msg);
	}
}

/* At exit: after every constructor, the library's own included. */
__attribute__((constructor)) static void at_load(void)
{
	atexit(check_objects);
}
