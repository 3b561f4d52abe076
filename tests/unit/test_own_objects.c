/* SPDX-License-Identifier: MIT */
/*
 * test_own_objects: the agent's walk of the loaded objects
 * (src/symbols/iterate_objects.c built with UKP_OWN_OBJECTS, as the
 * agent builds it): the loader's objects, under the loader's names and
 * biases, as copies of their headers; a snapshot that a report of a
 * change (ukp_objects_changed) renews; an address's object.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbols/maps_objects.h"

struct obj {
	char name[PATH_MAX];
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	size_t phnum;
};

struct list {
	struct obj v[256];
	size_t n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct list *l = arg;
	struct obj *o = &l->v[l->n++];

	(void)size;
	cr_assert_lt(l->n, 256);
	snprintf(o->name, sizeof(o->name), "%s", info->dlpi_name ? info->dlpi_name : "");
	o->bias = info->dlpi_addr;
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	return 0;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static const struct obj *find(const struct list *l, uintptr_t bias)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].bias == bias)
			return &l->v[i];
	return NULL;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

Test(own_objects, the_loaders_objects_as_copies)
{
	static struct list ours, loader;
	size_t i;

	ukp_objects_changed();
	cr_assert_eq(ukp_iterate_objects(collect, &ours), 0);
	cr_assert_eq(dl_iterate_phdr(collect, &loader), 0);
	cr_assert_eq(ours.n, loader.n);
	for (i = 0; i < loader.n; i++) {
		const struct obj *d = &loader.v[i], *o = find(&ours, d->bias);
		ElfW(Ehdr) eh;

		cr_assert_not_null(o, "%s at %#lx not walked", d->name, (unsigned long)d->bias);
		/* the loader's file name (its soname: libz.so.1), the
		 * directory may be /usr/lib's for /lib */
		cr_assert_str_eq(base(o->name), base(d->name));
		cr_assert_eq(o->phnum, d->phnum);
		/* a copy of the headers, the ELF header in front */
		cr_assert_neq(o->phdr, d->phdr, "%s: not a copy", d->name);
		cr_assert_eq(memcmp(o->phdr, d->phdr, d->phnum * sizeof(*d->phdr)), 0);
		memcpy(&eh, (const char *)d->phdr - sizeof(eh), sizeof(eh));
		if (!memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_phoff == sizeof(eh))
			cr_assert_eq(memcmp((const char *)o->phdr - sizeof(eh), &eh, sizeof(eh)), 0,
				     "%s: ELF header", d->name);
	}
}

Test(own_objects, a_reported_change_is_seen)
{
	static struct list a, b, c;
	void *h;
	long long t0;
	size_t i;

	/* (libsqlite3 is not loaded: this test program links no sqlite) */
	cr_assert_null(dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_NOLOAD));
	t0 = now_ms();
	cr_assert_eq(ukp_iterate_objects(collect, &a), 0);
	h = dlopen("libsqlite3.so.0", RTLD_NOW);
	cr_assert_not_null(h);
	cr_assert_eq(ukp_iterate_objects(collect, &b), 0);
	/* within the snapshot's life, nobody said: the same snapshot */
	if (now_ms() - t0 < 15) {
		cr_assert_eq(b.n, a.n);
		for (i = 0; i < a.n; i++)
			cr_assert_eq(b.v[i].phdr, a.v[i].phdr);
	}
	ukp_objects_changed();
	cr_assert_eq(ukp_iterate_objects(collect, &c), 0);
	for (i = 0; i < c.n && strcmp(base(c.v[i].name), "libsqlite3.so.0"); i++)
		;
	cr_assert_lt(i, c.n, "libsqlite3.so.0 not walked after the change was reported");
	cr_assert_eq(dlclose(h), 0);
	ukp_objects_changed();
	memset(&c, 0, sizeof(c));
	cr_assert_eq(ukp_iterate_objects(collect, &c), 0);
	for (i = 0; i < c.n; i++)
		cr_assert_str_neq(base(c.v[i].name), "libsqlite3.so.0");
}

static int libc_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *at = arg;
	size_t i;

	(void)size;
	if (!info->dlpi_name || strcmp(base(info->dlpi_name), "libc.so.6"))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			at[0] = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + 16;
			at[1] = info->dlpi_addr;
			return 1;
		}
	return 0;
}

Test(own_objects, an_address_object)
{
	struct ukp_object_at at;
	char name[PATH_MAX], small[4];
	uintptr_t libc[2] = { 0, 0 };

	/* (an address in libc's code, as the loader lists it: a sanitizer
	 * build's printf is its interceptor, in the program) */
	cr_assert_eq(dl_iterate_phdr(libc_code, libc), 1);
	cr_assert_eq(ukp_object_at(libc[0], &at, name, sizeof(name)), 0);
	cr_assert_str_eq(base(name), "libc.so.6");
	cr_assert_eq(at.bias, libc[1]);
	cr_assert_eq(ukp_object_at(libc[0], &at, small, sizeof(small)), -ERANGE);
	cr_assert_eq(ukp_object_at(libc[0], &at, NULL, 0), 0);
	cr_assert_eq(ukp_object_at(8, &at, name, sizeof(name)), -ENOENT);
}
