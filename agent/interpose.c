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
 *           as the caller's (read from its dynamic section: the caller's
 *           list is RPATH, LD_LIBRARY_PATH, RUNPATH, then the system
 *           directories, which the loader searches after ld.so.cache).
 *  _exit    the image's events are flushed and its final report sent
 *           (destructors do not run: shells and forked children end so).
 *  close_range, closefrom
 *           with -f, launched: the agent's descriptors that the programs
 *           the process execs inherit (its connection, the SPECs, the
 *           records file) are left open, so that a program that closes
 *           every descriptor but the standard ones before its exec
 *           (python3's subprocess, in its vfork() child) still has its
 *           exec'd program traced. A program that closes them one by one
 *           with close() does not have it traced (ukprobe says nothing).
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
#include <sys/auxv.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"
#include "objects_changed.h"
#include "search_path.h"


extern char **environ;

/* ------------------------------------------------------------ dlopen */

void *ukpa_real_dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	void *h;

	if (!real)
		real = (void *(*)(const char *, int))dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	if (!real)
		return NULL;
	h = real(file, mode);
	/* (the library's object table reads the objects again: every load
	 * of the agent's and the program's comes here) */
	if (h && !(mode & RTLD_NOLOAD))
		ukp_objects_changed();
	return h;
}

struct try_dir {
	const char *file;
	int mode;
	void *h;
};

/* [init] One directory of the caller's search path: the file there, when
 * it is there and loads. */
static int try_dir(const char *dir, size_t len, void *arg)
{
	struct try_dir *t = arg;
	char path[PATH_MAX];

	(void)len;
	if (snprintf(path, sizeof(path), "%s/%s", dir, t->file) >= (int)sizeof(path) ||
	    access(path, F_OK))
		return 0;
	t->h = ukpa_real_dlopen(path, t->mode);
	return t->h != NULL;
}

/*
 * dlopen(name) as the code at caller would get it: an object already
 * loaded under that name; else the first file of that name in the
 * caller's RPATH, LD_LIBRARY_PATH or RUNPATH directories, read from the
 * caller's dynamic section (common/search_path.c: no dladdr1() or
 * dlinfo(), which would take the loader's lock); else what the loader
 * finds by itself (ld.so.cache, system directories), which does not
 * depend on the caller. The caller's RPATH only: the loader also
 * searches the RPATHs of the objects that loaded it, and its $PLATFORM
 * and $LIB directories.
 */
static void *dlopen_as(const char *file, int mode, const void *caller)
{
	struct try_dir t = { file, mode, NULL };
	struct ukpa_obj_at at;
	char origin[PATH_MAX], *slash;
	void *h;

	if (!file || strchr(file, '/'))
		return ukpa_real_dlopen(file, mode);
	h = ukpa_real_dlopen(file, mode | RTLD_NOLOAD);
	if (h || ukpa_obj_at(caller, &at))
		return h ? h : ukpa_real_dlopen(file, mode);
	snprintf(origin, sizeof(origin), "%s", at.obj.path);
	slash = strrchr(origin, '/');
	if (slash)
		*(slash == origin ? slash + 1 : slash) = '\0';
	ukp_search_dirs(at.phdr, at.phnum, at.obj.base, slash ? origin : NULL, NULL,
			getauxval(AT_SECURE) ? NULL : getenv("LD_LIBRARY_PATH"), try_dir, &t);
	return t.h ? t.h : ukpa_real_dlopen(file, mode);
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
		ukpa_sys(SYS_exit_group, status, 0, 0);
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

/* ------------------------------------------------ close_range, closefrom */

static int (*real_close_range)(unsigned int, unsigned int, int);
static void (*real_closefrom)(int);

__attribute__((constructor)) static void find_close(void)
{
	real_close_range = (int (*)(unsigned int, unsigned int, int))dlvsym(RTLD_NEXT, "close_range",
									     "GLIBC_2.34");
	real_closefrom = (void (*)(int))dlvsym(RTLD_NEXT, "closefrom", "GLIBC_2.34");
}

static int close_range_raw(unsigned int first, unsigned int last, int flags)
{
	if (real_close_range)
		return real_close_range(first, last, flags);
	return (int)syscall(SYS_close_range, first, last, flags);
}

/* [init] (may run in a vfork() child) [first, last] without the kept
 * descriptors (ukpa_fd_kept): each part closed as asked. */
static int close_range_keep(unsigned int first, unsigned int last, int flags)
{
	unsigned int from = first;
	int ret = 0;

	for (unsigned int fd = first; fd <= last && fd < first + 65536u; fd++) {
		if (!ukpa_fd_kept(fd))
			continue;
		if (fd > from && close_range_raw(from, fd - 1, flags))
			ret = -1;
		from = fd + 1;
		if (fd == last)
			return ret;
	}
	if (from <= last && close_range_raw(from, last, flags))
		ret = -1;
	return ret;
}

__asm__(".symver ukpa_close_range, close_range@@GLIBC_2.34");
__attribute__((visibility("default"))) int ukpa_close_range(unsigned int first, unsigned int last,
							      int flags)
{
	if (first > last)
		return close_range_raw(first, last, flags);
	return close_range_keep(first, last, flags);
}

__asm__(".symver ukpa_closefrom, closefrom@@GLIBC_2.34");
__attribute__((visibility("default"))) void ukpa_closefrom(int lowfd)
{
	int saved_errno = errno;

	if (lowfd >= 0 && close_range_keep((unsigned int)lowfd, ~0u, 0) == 0) {
		errno = saved_errno;
		return;
	}
	errno = saved_errno;
	if (real_closefrom && !ukpa_fd_kept((unsigned int)lowfd))
		real_closefrom(lowfd); /* (no close_range: glibc's own way) */
}
