/* SPDX-License-Identifier: MIT */
/*
 * The object table without the loader (src/symbols/maps_objects.c;
 * doc/static_agent.md) against the C library's dl_iterate_phdr(): in
 * this process (many libraries, one dlopen()ed and dlclose()d, a file
 * mapped to be read that is not an object), and in a dynamic, a static
 * and a static-PIE program (tests/progs/maps_objects_prog.c), which print
 * both lists.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/maps_objects.h"

#define MAXO 256

struct obj {
	unsigned long bias, phdr;
	unsigned phnum;
	char name[PATH_MAX];
	unsigned long long adds;
};

struct list {
	struct obj v[MAXO];
	size_t n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct list *l = arg;
	struct obj *o;

	(void)size;
	cr_assert_lt(l->n, MAXO);
	o = &l->v[l->n++];
	o->bias = info->dlpi_addr;
	o->phdr = (unsigned long)info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	o->adds = info->dlpi_adds;
	snprintf(o->name, sizeof(o->name), "%s", info->dlpi_name ? info->dlpi_name : "");
	return 0;
}

/* The same file, however named (the loader's names go through
 * symlinks: /lib64/ld-linux-x86-64.so.2, /lib/...). */
static bool same_name(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (!strcmp(a, b))
		return true;
	if (!*a || !*b)
		return false;
	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

/* Every object of the loader's list, and no other, in ours: the same
 * program headers, bias, count and file; the main program first, the
 * vDSO (when the loader lists it) second. */
static void compare(const struct list *ours, const struct list *loader, const char *where)
{
	size_t i, j;

	cr_assert_eq(ours->n, loader->n, "%s: %zu objects found, the loader has %zu", where,
		     ours->n, loader->n);
	cr_assert_eq(ours->v[0].phdr, loader->v[0].phdr, "%s: the main program first", where);
	cr_assert_str_eq(ours->v[0].name, "", "%s: the main program is named \"\"", where);
	for (i = 0; i < loader->n; i++) {
		const struct obj *d = &loader->v[i];

		for (j = 0; j < ours->n; j++)
			if (ours->v[j].phdr == d->phdr)
				break;
		cr_assert_lt(j, ours->n, "%s: %s (program headers at %#lx) not found", where,
			     d->name, d->phdr);
		cr_assert_eq(ours->v[j].bias, d->bias, "%s: %s: bias %#lx, the loader's %#lx", where,
			     d->name, ours->v[j].bias, d->bias);
		cr_assert_eq(ours->v[j].phnum, d->phnum, "%s: %s", where, d->name);
		cr_assert(same_name(ours->v[j].name, d->name), "%s: named %s, the loader's %s", where,
			  ours->v[j].name, d->name);
		if (!strcmp(d->name, "linux-vdso.so.1"))
			cr_assert_eq(j, 1, "%s: the vDSO second", where);
	}
}

static void both(struct list *ours, struct list *loader)
{
	ours->n = loader->n = 0;
	cr_assert_eq(ukp_maps_iterate_phdr(collect, ours), 0);
	dl_iterate_phdr(collect, loader);
}

Test(maps_objects, this_process)
{
	static struct list ours, loader;
	unsigned long long before;
	void *h;

	both(&ours, &loader);
	compare(&ours, &loader, "this process");
	cr_assert_gt(ours.n, 5, "this test links libukprobes' dependencies");
	before = ours.v[0].adds;
	{
		char lib[PATH_MAX];

		cr_assert(getenv("UKP_TEST_PROGS"), "UKP_TEST_PROGS is not set (run under meson test)");
		snprintf(lib, sizeof(lib), "%s/libukptarget.so", getenv("UKP_TEST_PROGS"));
		h = dlopen(lib, RTLD_NOW);
	}
	cr_assert(h, "%s", dlerror());
	both(&ours, &loader);
	compare(&ours, &loader, "after a dlopen()");
	cr_assert_neq(ours.v[0].adds, before, "the digest changes when an object comes");
	dlclose(h);
	both(&ours, &loader);
	compare(&ours, &loader, "after its dlclose()");
	cr_assert_eq(ours.v[0].adds, before, "and is the same again when it has gone");
}

/* A library's file mapped whole, to be read (as an ELF reader does): its
 * ELF header is at offset 0 of a mapping, but its segments are not where
 * a loader puts them. Not an object. */
Test(maps_objects, a_file_mapped_to_read_is_not_an_object)
{
	static const char *const cands[] = { "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
					     "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
					     "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
					     "/usr/lib/aarch64-linux-gnu/libstdc++.so.6" };
	static struct list ours, loader;
	struct stat st;
	const char *path = NULL;
	size_t i, j;
	void *m;
	int fd = -1;

	both(&ours, &loader);
	for (i = 0; i < sizeof(cands) / sizeof(cands[0]) && !path; i++) {
		bool loaded = false;

		if (access(cands[i], R_OK))
			continue;
		for (j = 0; j < loader.n; j++)
			if (same_name(loader.v[j].name, cands[i]))
				loaded = true;
		if (!loaded)
			path = cands[i];
	}
	if (!path)
		cr_skip_test("no library at hand that this test has not loaded");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && !fstat(fd, &st));
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	cr_assert(m != MAP_FAILED);
	both(&ours, &loader);
	compare(&ours, &loader, path);
	for (j = 0; j < ours.n; j++)
		cr_assert(!same_name(ours.v[j].name, path), "%s, mapped to be read, was listed", path);
	munmap(m, (size_t)st.st_size);
	close(fd);
}

/* A program's two lists ("M" ours, "D" the loader's) from its output. */
static void run_prog(const char *name)
{
	static struct list ours, loader;
	char path[PATH_MAX], line[PATH_MAX + 128];
	const char *dir = getenv("UKP_TEST_PROGS");
	FILE *f;
	int st;

	cr_assert(dir, "UKP_TEST_PROGS is not set (run under meson test)");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (access(path, X_OK))
		cr_skip_test("%s was not built (no static C library)", name);
	ours.n = loader.n = 0;
	f = popen(path, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		struct list *l = line[0] == 'M' ? &ours : &loader;
		struct obj *o;
		int n = 0;

		cr_assert_lt(l->n, MAXO);
		o = &l->v[l->n++];
		o->name[0] = '\0';
		cr_assert(sscanf(line + 2, "%lx %lx %u %n", &o->bias, &o->phdr, &o->phnum, &n) >= 3,
			  "%s: %s", name, line);
		snprintf(o->name, sizeof(o->name), "%s", line + 2 + n);
		o->name[strcspn(o->name, "\n")] = '\0';
	}
	st = pclose(f);
	cr_assert_eq(st, 0, "%s ended with %#x", name, st);
	compare(&ours, &loader, name);
}

Test(maps_objects, dynamic_program)
{
	run_prog("maps_objects_dynamic");
}

Test(maps_objects, static_program)
{
	run_prog("maps_objects_static");
}

Test(maps_objects, static_pie_program)
{
	run_prog("maps_objects_static_pie");
}
