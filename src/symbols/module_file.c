/* SPDX-License-Identifier: MIT */
/*
 * module_file.c - the file an object name would load: what dlopen() of
 * the main program would find for a library that is not loaded yet
 * (find_module_file() and the module_file_* look-ups of kallsyms_info.c).
 *
 * Context: ordinary context, never [trap]; no lock of the library's is
 * held (the dlopen() and dlclose() below may enter the library's
 * dlclose() interposer, which takes the registry mutex).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "symbols/symbols.h"
#include "base/sys.h"

/* The real path of dir/name when it is a readable regular file, else
 * NULL. */
static char *try_dir(const char *dir, size_t dlen, const char *name)
{
	char buf[PATH_MAX];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)dlen, dir, name) >= (int)sizeof(buf))
		return NULL;
	if (ukp_sys_stat(buf, &st) || !S_ISREG(st.st_mode) || ukp_sys_access(buf, R_OK))
		return NULL;
	return ukp_realpath_dup(buf);
}

/* The directories dlopen() from the main program searches: its
 * LD_LIBRARY_PATH, RUNPATH or RPATH, the loader's system directories. */
static char *search_serpath(const char *name)
{
	Dl_serinfo size, *info;
	char *found = NULL;
	/* the main program's link map: the handle dlopen(NULL) gives (a
	 * glibc handle is its link map), without taking the loader's lock,
	 * which a thread stopped in the loader may hold while it waits for
	 * one of its caller's (the agent's loader stop, agent/loader.c) */
	void *self = _r_debug.r_map;
	size_t i;

	if (!self)
		return NULL;
	if (dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0 && (info = malloc(size.dls_size))) {
		info->dls_size = size.dls_size;
		info->dls_cnt = size.dls_cnt;
		if (dlinfo(self, RTLD_DI_SERINFO, info) == 0)
			for (i = 0; i < info->dls_cnt && !found; i++)
				found = try_dir(info->dls_serpath[i].dls_name,
						strlen(info->dls_serpath[i].dls_name), name);
		free(info);
	}
	return found;
}

struct next_to {
	const char *name;
	char *found;
};

static int next_to_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct next_to *n = arg;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	if (slash)
		n->found = try_dir(info->dlpi_name, (size_t)(slash - info->dlpi_name), n->name);
	return n->found != NULL;
}

char *ukp_module_file_find(const char *name)
{
	/* what ld.so.cache lists on a Debian system besides the search
	 * path: the multiarch directories, then the classic ones */
	static const char *const system_dirs[] = {
		"/lib/" UKP_ARCH_MULTIARCH, "/usr/lib/" UKP_ARCH_MULTIARCH, "/lib64", "/usr/lib64",
		"/lib", "/usr/lib", "/usr/local/lib",
	};
	struct next_to n = { name, NULL };
	size_t i;

	if (!name || !*name)
		return NULL;
	if (strchr(name, '/')) {
		struct stat st;

		return !ukp_sys_stat(name, &st) && S_ISREG(st.st_mode) ? ukp_realpath_dup(name) : NULL;
	}
	n.found = search_serpath(name);
	/* next to the objects already loaded, then the usual places */
	if (!n.found)
		dl_iterate_phdr(next_to_cb, &n);
	for (i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]) && !n.found; i++)
		n.found = try_dir(system_dirs[i], strlen(system_dirs[i]), name);
	return n.found;
}
