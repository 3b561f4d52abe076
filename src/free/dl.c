/* SPDX-License-Identifier: MIT */
/*
 * dl.c - the dynamic loader's functions, in a process the freestanding
 * agent serves: a static program has no loader, so there is nothing to
 * dlopen(), no symbol to interpose on and no r_debug to read (its
 * objects never change); the loaded objects are the kernel's view
 * (ukp_maps_iterate_phdr(): src/symbols/maps_objects.c). What needs a
 * loader says so: dlerror() gives the reason.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>

#include "symbols/maps_objects.h"

struct r_debug _r_debug;

static const char no_loader[] = "the process has no dynamic loader (a static program)";
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
