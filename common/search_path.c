/* SPDX-License-Identifier: MIT */
/*
 * search_path.c - an object's library search path from its dynamic
 * section (search_path.h). The loader searches a name for an object in
 * its DT_RPATH (ignored when the object has a DT_RUNPATH),
 * LD_LIBRARY_PATH, its DT_RUNPATH, then ld.so.cache and the system
 * directories; this gives the first three, so that a library can be
 * found before it is loaded without dlinfo(), which takes the loader's
 * lock (doc/static_agent.md).
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "search_path.h"

struct dyn_strings {
	const char *strtab;
	size_t strsz;
	const char *rpath, *runpath;
};

/* The object's loaded address range: an address in it is absolute. */
static void loaded_range(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, uintptr_t *lo,
			 uintptr_t *hi)
{
	size_t i;

	*lo = UINTPTR_MAX;
	*hi = 0;
	for (i = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (bias + ph[i].p_vaddr < *lo)
			*lo = bias + ph[i].p_vaddr;
		if (bias + ph[i].p_vaddr + ph[i].p_memsz > *hi)
			*hi = bias + ph[i].p_vaddr + ph[i].p_memsz;
	}
}

static int dyn_strings(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias,
		       struct dyn_strings *ds)
{
	const ElfW(Dyn) *d = NULL;
	uintptr_t lo, hi, strtab = 0;
	uint64_t rpath = UINT64_MAX, runpath = UINT64_MAX;
	size_t i;

	memset(ds, 0, sizeof(*ds));
	for (i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(bias + ph[i].p_vaddr);
	if (!d)
		return -1;
	for (; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = d->d_un.d_ptr;
		else if (d->d_tag == DT_STRSZ)
			ds->strsz = d->d_un.d_val;
		else if (d->d_tag == DT_RPATH)
			rpath = d->d_un.d_val;
		else if (d->d_tag == DT_RUNPATH)
			runpath = d->d_un.d_val;
	}
	if (!strtab || !ds->strsz)
		return -1;
	/* glibc's loader relocates the pointers of a writable dynamic
	 * section in place (musl's and a vDSO's are as linked): an address
	 * inside the object is already absolute */
	loaded_range(ph, phnum, bias, &lo, &hi);
	if (!(strtab >= lo && strtab < hi && strtab + ds->strsz <= hi))
		strtab += bias;
	if (strtab < lo || strtab >= hi || ds->strsz > hi - strtab)
		return -1;
	ds->strtab = (const char *)strtab;
	if (rpath < ds->strsz && memchr(ds->strtab + rpath, 0, ds->strsz - rpath))
		ds->rpath = ds->strtab + rpath;
	if (runpath < ds->strsz && memchr(ds->strtab + runpath, 0, ds->strsz - runpath))
		ds->runpath = ds->strtab + runpath;
	return 0;
}

static bool name_char(char c)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One directory of a list, its tokens expanded into out: its length, or
 * 0 when it cannot be (an unknown token, too long). */
static size_t expand(const char *dir, size_t len, const char *origin, const char *lib_dir,
		     char *out, size_t size)
{
	size_t n = 0, i = 0;

	if (!len) {
		out[0] = '.';
		return 1;
	}
	while (i < len) {
		const char *val = NULL;
		size_t skip = 0, vlen;

		if (dir[i] == '$') {
			static const struct { const char *name; bool lib; } tok[] = {
				{ "ORIGIN", false }, { "LIB", true },
			};
			size_t t;

			for (t = 0; t < sizeof(tok) / sizeof(tok[0]) && !skip; t++) {
				size_t tl = strlen(tok[t].name), rem = len - i - 1;

				if (rem >= tl && !memcmp(dir + i + 1, tok[t].name, tl) &&
				    (rem == tl || !name_char(dir[i + 1 + tl])))
					skip = 1 + tl;
				else if (rem >= tl + 2 && dir[i + 1] == '{' &&
					 !memcmp(dir + i + 2, tok[t].name, tl) && dir[i + 2 + tl] == '}')
					skip = 3 + tl;
				if (skip)
					val = tok[t].lib ? lib_dir : origin;
			}
			if (!val)
				return 0;
			vlen = strlen(val);
			if (n + vlen >= size)
				return 0;
			memcpy(out + n, val, vlen);
			n += vlen;
			i += skip;
			continue;
		}
		if (n + 1 >= size)
			return 0;
		out[n++] = dir[i++];
	}
	out[n] = '\0';
	return n;
}

static int each_dir(const char *list, const char *origin, const char *lib_dir,
		    int (*fn)(const char *dir, size_t len, void *arg), void *arg)
{
	char buf[PATH_MAX];
	const char *p = list, *e;
	int ret;

	if (!list || !*list)
		return 0;
	for (;;) {
		size_t n;

		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		n = expand(p, (size_t)(e - p), origin, lib_dir, buf, sizeof(buf));
		if (n) {
			buf[n] = '\0';
			ret = fn(buf, n, arg);
			if (ret)
				return ret;
		}
		if (!*e)
			return 0;
		p = e + 1;
	}
}

int ukp_search_dirs(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, const char *origin,
		    const char *lib_dir, const char *llp,
		    int (*fn)(const char *dir, size_t len, void *arg), void *arg)
{
	struct dyn_strings ds;
	bool have = ph && dyn_strings(ph, phnum, bias, &ds) == 0;
	int ret;

	if (have && !ds.runpath && ds.rpath) {
		ret = each_dir(ds.rpath, origin, lib_dir, fn, arg);
		if (ret)
			return ret;
	}
	if (llp && *llp) {
		ret = each_dir(llp, origin, lib_dir, fn, arg);
		if (ret)
			return ret;
	}
	if (have && ds.runpath)
		return each_dir(ds.runpath, origin, lib_dir, fn, arg);
	return 0;
}
