/* SPDX-License-Identifier: MIT */
/*
 * module_file.c - the file an object name would load: what dlopen() of
 * the main program would find for a library that is not loaded yet
 * (find_module_file() and the module_file_* look-ups of kallsyms_info.c).
 *
 * The program's search path is read from its own dynamic section and
 * environment, not asked of the loader (no dlopen(), no dlinfo(): the
 * agent calls nothing of the program's loader here).
 *
 * Context: [reg], never [trap] (files read, memory allocated).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "symbols/symbols.h"
#include "symbols/maps_objects.h"
#include "base/sys.h"
#include "search_path.h"

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

/* The value of name in the environment the program started with
 * (/proc/self/environ: the loader read LD_LIBRARY_PATH there, before any
 * setenv() of the program's), into out; false when it is not set or does
 * not fit. */
static bool initial_env(const char *name, char *out, size_t size)
{
	char buf[4096];
	size_t nlen = strlen(name), have = 0, at = 0;
	bool in_value = false, start = true, found = false;
	int fd = ukp_sys_open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
	long r;

	if (fd < 0)
		return false;
	/* a byte at a time through a buffer: entries may span reads */
	while (!found && (r = ukp_sys_read(fd, buf, sizeof(buf))) > 0) {
		long i;

		for (i = 0; i < r && !found; i++) {
			char c = buf[i];

			if (in_value) {
				if (!c) {
					out[at] = '\0';
					found = true;
				} else if (at + 1 < size) {
					out[at++] = c;
				} else {
					in_value = false; /* too long: not used */
					have = nlen + 2;
				}
				continue;
			}
			if (start && have < nlen && c == name[have]) {
				have++;
				continue;
			}
			if (start && have == nlen && c == '=') {
				in_value = true;
				continue;
			}
			start = !c;
			have = 0;
		}
	}
	ukp_sys_close(fd);
	if (in_value && !found) { /* the last entry, cut short of its NUL */
		out[at] = '\0';
		found = true;
	}
	return found;
}

struct serpath {
	const char *name;
	char *found;
};

static int serpath_try(const char *dir, size_t len, void *arg)
{
	struct serpath *sp = arg;

	sp->found = try_dir(dir, len, sp->name);
	return sp->found != NULL;
}

/* The directories dlopen() from the main program searches before the
 * system ones: its RPATH, the LD_LIBRARY_PATH it started with (unless
 * it runs set-user-ID or the like: the loader's secure mode), its
 * RUNPATH. Read from its dynamic section in memory (common/search_path.c):
 * dlinfo() would take the loader's lock, which a thread stopped in the
 * loader may hold while it waits for one of its caller's (the agent's
 * loader stop, agent/loader.c). */
static char *search_serpath(const char *name)
{
	struct serpath sp = { name, NULL };
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)ukp_getauxval(AT_PHDR);
	size_t phnum = ukp_getauxval(AT_PHNUM), i;
	char origin[PATH_MAX], *llp = NULL, *slash;
	uintptr_t bias = 0;
	bool have_bias = false;
	long n;

	if (!ph || !phnum)
		return NULL;
	for (i = 0; i < phnum && !have_bias; i++)
		if (ph[i].p_type == PT_PHDR) {
			bias = (uintptr_t)ph - ph[i].p_vaddr;
			have_bias = true;
		}
	if (!have_bias)
		return NULL; /* no PT_PHDR: a static program, no dynamic section to read */
	/* $ORIGIN: the program's directory, as the loader takes it */
	n = ukp_sys_readlink("/proc/self/exe", origin, sizeof(origin) - 1);
	if (n > 0) {
		origin[n] = '\0';
		slash = strrchr(origin, '/');
		if (slash)
			*(slash == origin ? slash + 1 : slash) = '\0';
	}
	if (!ukp_getauxval(AT_SECURE)) {
		llp = malloc(PATH_MAX * 4);
		if (llp && !initial_env("LD_LIBRARY_PATH", llp, PATH_MAX * 4)) {
			free(llp);
			llp = NULL;
		}
	}
	ukp_search_dirs(ph, phnum, bias, n > 0 ? origin : NULL, "lib/" UKP_ARCH_MULTIARCH, llp,
			serpath_try, &sp);
	free(llp);
	return sp.found;
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
		ukp_iterate_objects(next_to_cb, &n);
	for (i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]) && !n.found; i++)
		n.found = try_dir(system_dirs[i], strlen(system_dirs[i]), name);
	return n.found;
}
