/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - the libc functions the agent puts itself in front of:
 *
 *  dlopen   after the object is loaded, the SPECs waiting for it are
 *           registered (probes.c). Its initializers have run by then:
 *           probes in them are not hit for this load. The loader
 *           searches a bare name in the caller's RPATH/RUNPATH (and
 *           expands $ORIGIN from it): called from here, the caller would
 *           be the agent, so those directories are searched here first,
 *           as the caller's (dlinfo RTLD_DI_SERINFO; the caller's list
 *           is RPATH, LD_LIBRARY_PATH, RUNPATH, then the system
 *           directories, which the loader searches after ld.so.cache).
 *  _exit    the image's events are flushed and its final report sent
 *           (destructors do not run: shells and forked children end so).
 *  exec*    the library's interposers (src/exec.c) call the agent's
 *           exec notifier (register_exec_notifier): before the program
 *           is replaced, the image's events are flushed and its final
 *           report sent (else they are lost); with -f the new program's
 *           environment gets the agent back if the program dropped it;
 *           when the exec fails, tracing goes on in a new image.
 *
 * They carry glibc's version names (.symver, in nodes of the library's
 * version script; UKP_GLIBC_BASE: the architecture's first, src/meson.build)
 * so that programs' versioned references bind to them.
 * posix_spawn() and system() are not interposed: their children exec
 * with the parent's environment, which keeps the agent with -f.
 *
 * Context: [init], on program threads. An exec may run in a vfork()
 * child that shares the parent's memory: ukpa_active() is false there,
 * and nothing is flushed or allocated.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"


extern char **environ;

/* ------------------------------------------------------------ dlopen */

void *ukpa_real_dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);

	if (!real)
		real = (void *(*)(const char *, int))dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	return real ? real(file, mode) : NULL;
}

/* The directories dlinfo(RTLD_DI_SERINFO) lists for an object, in
 * order; free the result. */
static Dl_serinfo *search_list(void *handle)
{
	Dl_serinfo size, *info;

	if (dlinfo(handle, RTLD_DI_SERINFOSIZE, &size))
		return NULL;
	info = malloc(size.dls_size);
	if (!info)
		return NULL;
	info->dls_size = size.dls_size;
	info->dls_cnt = size.dls_cnt;
	if (dlinfo(handle, RTLD_DI_SERINFO, info)) {
		free(info);
		return NULL;
	}
	return info;
}

static bool in_list(const Dl_serinfo *l, const char *dir)
{
	unsigned int i;

	for (i = 0; l && i < l->dls_cnt; i++)
		if (!strcmp(l->dls_serpath[i].dls_name, dir))
			return true;
	return false;
}

/* One of the loader's system directories (not from LD_LIBRARY_PATH):
 * the agent has no RPATH or RUNPATH, so its list is LD_LIBRARY_PATH's
 * directories and the system ones. */
static bool system_dir(const Dl_serinfo *own, const char *dir)
{
	const char *llp = getenv("LD_LIBRARY_PATH"), *p, *e;
	size_t len = strlen(dir);

	if (!in_list(own, dir))
		return false;
	for (p = llp; p && *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if ((size_t)(e - p) == len && !memcmp(p, dir, len))
			return false;
	}
	return true;
}

/*
 * dlopen(name) as the code at caller would get it: an object already
 * loaded under that name; else the first file of that name in the
 * caller's RPATH, LD_LIBRARY_PATH or RUNPATH directories; else what the
 * loader finds by itself (ld.so.cache, system directories), which does
 * not depend on the caller.
 */
static void *dlopen_as(const char *file, int mode, const void *caller)
{
	Dl_serinfo *list, *own;
	struct link_map *lm = NULL;
	Dl_info di;
	void *h;
	unsigned int i;

	if (!file || strchr(file, '/'))
		return ukpa_real_dlopen(file, mode);
	h = ukpa_real_dlopen(file, mode | RTLD_NOLOAD);
	if (h || !dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return h ? h : ukpa_real_dlopen(file, mode);
	list = search_list(lm);
	own = dladdr1((void *)dlopen_as, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm ?
		      search_list(lm) : NULL;
	for (i = 0; list && own && i < list->dls_cnt && !h; i++) {
		const char *dir = list->dls_serpath[i].dls_name;
		char path[PATH_MAX];

		if (system_dir(own, dir) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path) ||
		    access(path, F_OK))
			continue;
		h = ukpa_real_dlopen(path, mode);
	}
	free(list);
	free(own);
	return h ? h : ukpa_real_dlopen(file, mode);
}

/* Load for the caller at ret, then register the probes that waited for
 * what was loaded. */
static void *dlopen_then_probe(const char *file, int mode, void *ret)
{
	void *h = dlopen_as(file, mode, ret);
	int saved_errno = errno;

	if (h && file && ukpa_active() && ukpa_probes_pending()) {
		ukpa_busy++;
		ukpa_probes_refresh();
		ukpa_busy--;
	}
	errno = saved_errno;
	return h;
}

__asm__(".symver ukpa_dlopen, dlopen@@GLIBC_2.34");
__attribute__((visibility("default"))) void *ukpa_dlopen(const char *file, int mode)
{
	return dlopen_then_probe(file, mode, __builtin_return_address(0));
}

/* programs linked before glibc 2.34 (libdl's dlopen) */
__asm__(".symver ukpa_dlopen_old, dlopen@" UKP_GLIBC_BASE);
__attribute__((visibility("default"))) void *ukpa_dlopen_old(const char *file, int mode)
{
	return dlopen_then_probe(file, mode, __builtin_return_address(0));
}

/* ------------------------------------------------------------- _exit */

static void (*real_exit)(int);

/* Found before it is needed: _exit may run in a vfork() child or a
 * signal handler, where the loader's lock may be taken. */
__attribute__((constructor)) static void find_exit(void)
{
	real_exit = (void (*)(int))dlvsym(RTLD_NEXT, "_exit", UKP_GLIBC_BASE);
}

static _Noreturn void do_exit(int status)
{
	ukpa_before_exit();
	if (real_exit)
		real_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

__asm__(".symver ukpa__exit, _exit@@" UKP_GLIBC_BASE);
__attribute__((visibility("default"))) _Noreturn void ukpa__exit(int status)
{
	do_exit(status);
}

__asm__(".symver ukpa__Exit, _Exit@@" UKP_GLIBC_BASE);
__attribute__((visibility("default"))) _Noreturn void ukpa__Exit(int status)
{
	do_exit(status);
}
