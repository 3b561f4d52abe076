// SPDX-License-Identifier: MIT
/*
 * lib_entries.c - the exported function entries of a loaded library, from
 * its .dynsym (lib_entries.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_entries.h"

/* Exported and defined: what another object may bind to. */
static bool exported(const GElf_Sym *s)
{
	unsigned char bind = GELF_ST_BIND(s->st_info), vis = GELF_ST_VISIBILITY(s->st_other);

	if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS || s->st_name == 0)
		return false;
	if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
		return false;
	return vis == STV_DEFAULT || vis == STV_PROTECTED;
}

/* A public name before a reserved one (leading underscore), then the
 * shorter, then the first in byte order. */
static bool better_name(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if ((a[0] == '_') != (b[0] == '_'))
		return b[0] == '_';
	if (la != lb)
		return la < lb;
	return strcmp(a, b) < 0;
}

static int cmp_entry(const void *pa, const void *pb)
{
	const struct lib_entry *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	/* ordinary symbols first: they name the merged entry's kind */
	return (int)a->ifunc - (int)b->ifunc;
}

/* Merge the entries at one address; keeps the order. */
static size_t merge_aliases(struct lib_entry *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && v[k - 1].addr == v[i].addr) {
			struct lib_entry *e = &v[k - 1];

			e->names += v[i].names;
			/* an ordinary symbol names it before an IFUNC's */
			if ((v[i].ifunc == e->ifunc && better_name(v[i].name, e->name)) ||
			    (e->ifunc && !v[i].ifunc))
				e->name = v[i].name;
			e->ifunc &= v[i].ifunc;
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

/* Every exported FUNC and IFUNC of one .dynsym into le->v (unsorted). */
static int read_dynsym(Elf *elf, struct lib_entries *le, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL, *strscn;
	Elf_Data *data, *strdata;
	GElf_Shdr sh;
	size_t count;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			break;
	}
	if (!scn || !sh.sh_entsize) {
		snprintf(err, errlen, "%s: no .dynsym", le->path);
		return -ENOENT;
	}
	strscn = elf_getscn(elf, sh.sh_link);
	data = elf_getdata(scn, NULL);
	strdata = strscn ? elf_getdata(strscn, NULL) : NULL;
	if (!data || !strdata || !strdata->d_size) {
		snprintf(err, errlen, "%s: unreadable .dynsym: %s", le->path, elf_errmsg(-1));
		return -EIO;
	}
	le->strtab = malloc(strdata->d_size + 1);
	count = sh.sh_size / sh.sh_entsize;
	le->v = calloc(count ? count : 1, sizeof(*le->v));
	if (!le->strtab || !le->v)
		return -ENOMEM;
	memcpy(le->strtab, strdata->d_buf, strdata->d_size);
	le->strtab[strdata->d_size] = 0;

	for (size_t i = 1; i < count; i++) {
		GElf_Sym s;
		unsigned char type;

		if (!gelf_getsym(data, (int)i, &s) || !exported(&s) || s.st_name >= strdata->d_size)
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		le->v[le->n++] = (struct lib_entry){ .addr = le->base + s.st_value,
						     .size = type == STT_FUNC ? s.st_size : 0,
						     .name = le->strtab + s.st_name,
						     .names = 1,
						     .ifunc = type == STT_GNU_IFUNC };
		if (type == STT_FUNC)
			le->func_syms++;
		else
			le->ifunc_syms++;
	}
	return 0;
}

/*
 * Replace every IFUNC entry's resolver by the implementation it returns
 * (le->v sorted by address: the names of one resolver are adjacent). The
 * resolver is called as ld.so calls it on x86-64, with no arguments, once.
 */
static void resolve_ifuncs(struct lib_entries *le)
{
	uintptr_t resolver = 0, impl = 0;

	for (size_t i = 0; i < le->n; i++) {
		struct lib_entry *e = &le->v[i];

		if (!e->ifunc)
			continue;
		if (e->addr != resolver) {
			resolver = e->addr;
			impl = ((uintptr_t (*)(void))resolver)();
		}
		e->addr = impl;
	}
}

/* IFUNC statistics over le->v sorted by address, before merging. */
static void count_impls(struct lib_entries *le)
{
	for (size_t i = 0; i < le->n;) {
		size_t j = i;
		bool ifunc = false, func = false;

		for (; j < le->n && le->v[j].addr == le->v[i].addr; j++) {
			ifunc |= le->v[j].ifunc;
			func |= !le->v[j].ifunc;
		}
		le->ifunc_impls += ifunc;
		le->ifunc_shared += ifunc && func;
		i = j;
	}
}

int lib_entries_load(void *handle, struct lib_entries *le, char *err, size_t errlen)
{
	struct link_map *lm = NULL;
	Elf *elf = NULL;
	int fd = -1, ret;

	memset(le, 0, sizeof(*le));
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm) {
		snprintf(err, errlen, "dlinfo: %s", dlerror());
		return -ENOENT;
	}
	if (lm->l_name[0]) {
		snprintf(le->path, sizeof(le->path), "%s", lm->l_name);
	} else {	/* the main program */
		ssize_t n = readlink("/proc/self/exe", le->path, sizeof(le->path) - 1);

		if (n <= 0) {
			snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
			return -ENOENT;
		}
		le->path[n] = 0;
	}
	le->base = lm->l_addr;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	fd = open(le->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", le->path, strerror(errno));
		return ret;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		snprintf(err, errlen, "%s: %s", le->path, elf_errmsg(-1));
		ret = -EIO;
		goto out;
	}
	ret = read_dynsym(elf, le, err, errlen);
	if (ret)
		goto out;
	qsort(le->v, le->n, sizeof(*le->v), cmp_entry);
	resolve_ifuncs(le);
	qsort(le->v, le->n, sizeof(*le->v), cmp_entry);
	count_impls(le);
	le->n = merge_aliases(le->v, le->n);
out:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (elf)
		elf_end(elf);
	close(fd);
	if (ret)
		lib_entries_free(le);
	return ret;
}

void lib_entries_free(struct lib_entries *le)
{
	free(le->v);
	free(le->strtab);
	le->v = NULL;
	le->strtab = NULL;
	le->n = 0;
}
