/* SPDX-License-Identifier: MIT */
/*
 * dl.c - the dynamic loader's functions, in a process the freestanding
 * agent serves: it calls no loader's (a static program has none; a
 * dynamic one's is the program's, with its locks and its malloc), so
 * there is nothing to dlopen() and no symbol to interpose on; the loaded
 * objects are the kernel's view (ukp_maps_iterate_phdr():
 * src/symbols/maps_objects.c), and a dynamic program's loader's r_debug
 * is found in its DT_DEBUG (agent/loader.c), not here. What needs a
 * loader says so: dlerror() gives the reason.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>

#include "symbols/maps_objects.h"

struct r_debug _r_debug;

static const char no_loader[] = "the freestanding agent loads nothing through a dynamic loader";
static const char *last;

int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	return ukp_maps_iterate_phdr(cb, arg);
}

void *dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	last = no_loader;
	return NULL;
}

void *dlsym(void *h, const char *name)
{
	(void)h;
	(void)name;
	last = no_loader;
	return NULL;
}

void *dlvsym(void *h, const char *name, const char *version)
{
	(void)version;
	return dlsym(h, name);
}

int dlinfo(void *h, int req, void *arg)
{
	(void)h;
	(void)req;
	(void)arg;
	last = no_loader;
	return -1;
}

/* (no object's symbols through the loader: the library reads them) */
int dladdr(const void *addr, Dl_info *info)
{
	(void)addr;
	(void)info;
	return 0;
}

char *dlerror(void)
{
	const char *e = last;

	last = NULL;
	return (char *)e;
}
