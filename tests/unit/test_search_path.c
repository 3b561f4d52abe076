/* SPDX-License-Identifier: MIT */
/*
 * test_search_path: an object's library search path read from its
 * dynamic section (common/search_path.c), in the loader's order, on
 * dynamic sections built here (string table pointers as linked and as
 * glibc's loader relocates them) and on this program's own.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "search_path.h"

struct got {
	char all[4096];
	int n, stop_at;
};

static int collect(const char *dir, size_t len, void *arg)
{
	struct got *g = arg;

	cr_assert_eq(strlen(dir), len);
	snprintf(g->all + strlen(g->all), sizeof(g->all) - strlen(g->all), "%s%s",
		 g->n ? "|" : "", dir);
	return ++g->n == g->stop_at ? 7 : 0;
}

/* An image: a PT_LOAD over all of it, a dynamic section, strings. */
struct image {
	ElfW(Phdr) ph[2];
	ElfW(Dyn) dyn[8];
	char str[256];
};

static void make(struct image *im, const char *rpath, const char *runpath, const char *soname,
		 bool relocated)
{
	size_t at = 1, nd = 0;

	memset(im, 0, sizeof(*im));
	im->ph[0] = (ElfW(Phdr)){ .p_type = PT_LOAD, .p_vaddr = 0, .p_memsz = sizeof(*im) };
	im->ph[1] = (ElfW(Phdr)){ .p_type = PT_DYNAMIC, .p_vaddr = offsetof(struct image, dyn) };
	im->dyn[nd++] = (ElfW(Dyn)){ .d_tag = DT_STRTAB,
				     .d_un.d_ptr = offsetof(struct image, str) +
						   (relocated ? (uintptr_t)im : 0) };
	im->dyn[nd++] = (ElfW(Dyn)){ .d_tag = DT_STRSZ, .d_un.d_val = sizeof(im->str) };
#define ADD(tag, s)                                                                    \
	if (s) {                                                                       \
		im->dyn[nd++] = (ElfW(Dyn)){ .d_tag = tag, .d_un.d_val = at };          \
		strcpy(im->str + at, s);                                               \
		at += strlen(s) + 1;                                                   \
	}
	ADD(DT_RPATH, rpath);
	ADD(DT_RUNPATH, runpath);
	ADD(DT_SONAME, soname);
	im->dyn[nd] = (ElfW(Dyn)){ .d_tag = DT_NULL };
}

static const char *dirs(struct image *im, const char *origin, const char *llp, int stop_at,
			int *ret)
{
	static struct got g;

	memset(&g, 0, sizeof(g));
	g.stop_at = stop_at;
	*ret = ukp_search_dirs(im->ph, 2, (uintptr_t)im, origin, "lib/x86_64-linux-gnu", llp,
			       collect, &g);
	return g.all;
}

Test(search_path, order_and_tokens)
{
	static struct image im;
	int ret, rel;

	for (rel = 0; rel < 2; rel++) {
		/* RPATH, then LD_LIBRARY_PATH; $ORIGIN and ${ORIGIN}, $LIB */
		make(&im, "/r1:$ORIGIN/r2:${ORIGIN}", NULL, NULL, rel);
		cr_assert_str_eq(dirs(&im, "/o", "/l1::/l2/$LIB", 0, &ret),
				 "/r1|/o/r2|/o|/l1|.|/l2/lib/x86_64-linux-gnu");
		cr_assert_eq(ret, 0);
		/* a RUNPATH: the RPATH is not searched, the RUNPATH after
		 * LD_LIBRARY_PATH; a token not known ($PLATFORM), a name that
		 * only starts like one ($ORIGINAL), no origin: skipped */
		make(&im, "/r1", "/u1:/u2/$PLATFORM:$ORIGINAL:/u3", NULL, rel);
		cr_assert_str_eq(dirs(&im, "/o", "/l1", 0, &ret), "/l1|/u1|/u3");
		make(&im, NULL, "$ORIGIN/a:/b", NULL, rel);
		cr_assert_str_eq(dirs(&im, NULL, NULL, 0, &ret), "/b");
		/* the callback's answer stops the walk and is returned */
		make(&im, "/r1:/r2", NULL, NULL, rel);
		cr_assert_str_eq(dirs(&im, "/o", "/l1", 2, &ret), "/r1|/r2");
		cr_assert_eq(ret, 7);
	}
	/* no dynamic section: LD_LIBRARY_PATH alone */
	im.ph[1].p_type = PT_NULL;
	cr_assert_str_eq(dirs(&im, "/o", "/l1", 0, &ret), "/l1");
}

/* This program's own, as the loader relocated its dynamic section: meson
 * gives it a RUNPATH (an RPATH in the AArch64 cross build) of
 * $ORIGIN-relative directories (tests/meson.build). */
Test(search_path, this_program)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t phnum = getauxval(AT_PHNUM), i;
	uintptr_t bias = 0;
	struct got g = { 0 };
	const char *want = "/ORIGIN/extra1|/ORIGIN/extra2";
	size_t n;

	for (i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;

	cr_assert_eq(ukp_search_dirs(ph, phnum, bias, "/ORIGIN", NULL, NULL, collect, &g), 0);
	/* (last: a cross build's linker may put directories of its own
	 * first, as an RPATH) */
	n = strlen(g.all);
	cr_assert(n >= strlen(want) && !strcmp(g.all + n - strlen(want), want) &&
		  (n == strlen(want) || g.all[n - strlen(want) - 1] == '|'),
		  "%s does not end in %s", g.all, want);
}
