/* SPDX-License-Identifier: MIT */
/*
 * maps_objects.c - the loaded objects without asking the dynamic loader
 * (maps_objects.h): what dl_iterate_phdr() reports, found in
 * /proc/self/maps and in the objects' own headers in memory. A static
 * program has no loader to ask, and the freestanding agent
 * (doc/static_agent.md) never calls the program's; this reads only the
 * kernel's view and memory the objects map themselves.
 *
 * The main program comes from the auxiliary vector (AT_PHDR, AT_PHNUM),
 * the vDSO from AT_SYSINFO_EHDR; every other object from a mapping of a
 * file at offset 0 that starts with an ELF header whose program headers
 * are in that mapping, and whose segments are all mapped as a loader maps
 * them: each PT_LOAD's first page at its address, from the same file at
 * its file offset, executable when the segment is. A file the program
 * (or the library's ELF reader) maps to read is not an object: its pages
 * lie at their file offsets, not at their segments' addresses.
 *
 * Order: the main program, the vDSO, then the rest from the highest
 * address down (a loader maps each next object below the last, so this is
 * the load order where the kernel's top-down layout holds), the dynamic
 * loader (AT_BASE) last, as in its own list. Names: "" for
 * the main program (as the loader's), "linux-vdso.so.1", else the path
 * /proc/self/maps shows, with the library's soname for its file name
 * when that is a link to the same file (lib_name: the loader's name). dlpi_adds is a digest of the set (it changes
 * when an object comes or goes), dlpi_subs 0: the loader's counters do
 * not exist here.
 *
 * The headers are read without faulting (ukp_sys_read_self): another
 * thread may unmap an object between the read of the maps and theirs;
 * the callback gets the program headers where they are, as
 * dl_iterate_phdr() gives them, but no loader lock keeps the object
 * mapped meanwhile (iterate_objects.c hands out copies).
 *
 * Context: [reg] (malloc, a read of /proc/self/maps).
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "base/base.h"
#include "base/sys.h"
#include "symbols/maps_objects.h"
#include "sort.h"

struct mapping {
	uintptr_t start, end;
	uint64_t offset, inode;
	bool read, exec;
	char *path;
};

struct mapping_list {
	struct mapping *v;
	size_t n, cap;
};

static void mappings_free(struct mapping_list *ml)
{
	size_t i;

	for (i = 0; i < ml->n; i++)
		free(ml->v[i].path);
	free(ml->v);
}

/* Every file-backed mapping (and the vDSO's), in address order. */
static int mappings_read(struct mapping_list *ml)
{
	struct ukp_maps m;
	struct ukp_map_ent e;
	int ret;

	memset(ml, 0, sizeof(*ml));
	ret = ukp_maps_open(&m);
	if (ret)
		return ret;
	while ((ret = ukp_maps_next(&m, &e)) == 1) {
		struct mapping *mp;

		if (!e.inode)
			continue;
		if (ml->n == ml->cap) {
			size_t cap = ml->cap ? ml->cap * 2 : 64;
			struct mapping *v = realloc(ml->v, cap * sizeof(*v));

			if (!v) {
				ret = -ENOMEM;
				break;
			}
			ml->v = v;
			ml->cap = cap;
		}
		mp = &ml->v[ml->n];
		mp->start = e.start;
		mp->end = e.end;
		mp->offset = e.offset;
		mp->inode = e.inode;
		mp->read = e.perms[0] == 'r';
		mp->exec = e.perms[2] == 'x';
		mp->path = strdup(e.path);
		if (!mp->path) {
			ret = -ENOMEM;
			break;
		}
		ml->n++;
	}
	ukp_maps_close(&m);
	if (ret < 0) {
		mappings_free(ml);
		return ret;
	}
	return 0;
}

static const struct mapping *mapping_at(const struct mapping_list *ml, uintptr_t a)
{
	size_t i;

	for (i = 0; i < ml->n; i++)
		if (a >= ml->v[i].start && a < ml->v[i].end)
			return &ml->v[i];
	return NULL;
}

/* Are o's segments mapped as a loader maps them, from o's file? */
static bool mapped_as_loaded(const struct mapping_list *ml, const struct mapping *o,
			     const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, size_t page)
{
	size_t i, nload = 0;

	for (i = 0; i < phnum; i++) {
		const struct mapping *mp;
		uintptr_t at;

		if (ph[i].p_type != PT_LOAD)
			continue;
		nload++;
		at = (bias + ph[i].p_vaddr) & ~(page - 1);
		mp = mapping_at(ml, at);
		if (!mp || mp->inode != o->inode || strcmp(mp->path, o->path) ||
		    mp->offset + (at - mp->start) != (ph[i].p_offset & ~(uint64_t)(page - 1)) ||
		    ((ph[i].p_flags & PF_X) && !mp->exec))
			return false;
	}
	return nload > 0;
}

struct found {
	struct dl_phdr_info info;
	char *name;
};

struct found_list {
	struct found *v;
	size_t n, cap;
};

static int found_add(struct found_list *fl, uintptr_t bias, const char *name,
		     const ElfW(Phdr) *ph, size_t phnum)
{
	struct found *f;

	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 32;
		struct found *v = realloc(fl->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fl->v = v;
		fl->cap = cap;
	}
	f = &fl->v[fl->n];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		return -ENOMEM;
	f->info.dlpi_addr = bias;
	f->info.dlpi_name = f->name;
	f->info.dlpi_phdr = ph;
	f->info.dlpi_phnum = (ElfW(Half))phnum;
	fl->n++;
	return 0;
}

/* The main program: its program headers from the auxiliary vector, its
 * load bias from PT_PHDR, or else from the mapping that holds them. */
static int add_main(struct found_list *fl, const struct mapping_list *ml, size_t page)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)ukp_getauxval(AT_PHDR);
	size_t phnum = ukp_getauxval(AT_PHNUM), i;
	const struct mapping *mp;

	if (!ph || !phnum)
		return -ENOENT;
	for (i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			return found_add(fl, (uintptr_t)ph - ph[i].p_vaddr, "", ph, phnum);
	/* no PT_PHDR: the PT_LOAD whose file bytes hold them */
	mp = mapping_at(ml, (uintptr_t)ph);
	if (!mp)
		return -ENOENT;
	for (i = 0; i < phnum; i++) {
		uint64_t off = mp->offset + ((uintptr_t)ph - mp->start);

		if (ph[i].p_type == PT_LOAD && off >= ph[i].p_offset &&
		    off < ph[i].p_offset + ph[i].p_filesz)
			return found_add(fl, (uintptr_t)ph - (ph[i].p_vaddr + (off - ph[i].p_offset)),
					 "", ph, phnum);
	}
	(void)page;
	return -ENOENT;
}

/* An ELF header in memory at ehdr (readable up to end): its program
 * headers (their address, and a copy in ph[max]) and bias, when they are
 * an object's. Read with ukp_sys_read_self: another thread may unmap
 * the object after the maps were read. */
#define MAX_PHDRS 64
static bool headers_at(uintptr_t ehdr, uintptr_t end, const ElfW(Phdr) **php, ElfW(Phdr) *ph,
		       size_t *phnum, uintptr_t *bias)
{
	ElfW(Ehdr) eh;
	size_t i;

	if (end - ehdr < sizeof(eh) || ukp_sys_read_self(&eh, (const void *)ehdr, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    eh.e_type != ET_DYN || eh.e_phentsize != sizeof(*ph) || !eh.e_phnum ||
	    eh.e_phnum > MAX_PHDRS || eh.e_phoff > end - ehdr ||
	    (size_t)eh.e_phnum * sizeof(*ph) > end - ehdr - eh.e_phoff ||
	    ukp_sys_read_self(ph, (const void *)(ehdr + eh.e_phoff), eh.e_phnum * sizeof(*ph)))
		return false;
	for (i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
			*php = (const ElfW(Phdr) *)(ehdr + eh.e_phoff);
			*phnum = eh.e_phnum;
			*bias = ehdr - ph[i].p_vaddr;
			return true;
		}
	}
	return false;
}

/* The object's DT_SONAME into buf, read from its dynamic section in
 * memory (ukp_sys_read_self: it may be unmapped meanwhile). */
static bool soname_of(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, char *buf, size_t size)
{
	ElfW(Dyn) d[64];
	uintptr_t strtab = 0, lo = UINTPTR_MAX, hi = 0, dyn = 0;
	uint64_t soname = UINT64_MAX, strsz = 0;
	size_t i, n = 0, dynsz = 0;

	for (i = 0; i < phnum; i++) {
		if (ph[i].p_type == PT_DYNAMIC) {
			dyn = bias + ph[i].p_vaddr;
			dynsz = ph[i].p_memsz;
		} else if (ph[i].p_type == PT_LOAD) {
			lo = bias + ph[i].p_vaddr < lo ? bias + ph[i].p_vaddr : lo;
			hi = bias + ph[i].p_vaddr + ph[i].p_memsz > hi ?
				     bias + ph[i].p_vaddr + ph[i].p_memsz : hi;
		}
	}
	if (!dyn)
		return false;
	n = dynsz / sizeof(d[0]) < 64 ? dynsz / sizeof(d[0]) : 64;
	if (!n || ukp_sys_read_self(d, (const void *)dyn, n * sizeof(d[0])))
		return false;
	for (i = 0; i < n && d[i].d_tag != DT_NULL; i++) {
		if (d[i].d_tag == DT_STRTAB)
			strtab = d[i].d_un.d_ptr;
		else if (d[i].d_tag == DT_STRSZ)
			strsz = d[i].d_un.d_val;
		else if (d[i].d_tag == DT_SONAME)
			soname = d[i].d_un.d_val;
	}
	if (!strtab || soname >= strsz)
		return false;
	/* (relocated in place by glibc's loader, as linked by others) */
	if (!(strtab >= lo && strtab < hi))
		strtab += bias;
	if (strtab < lo || strtab + soname >= hi)
		return false;
	n = hi - (strtab + soname) < size ? hi - (strtab + soname) : size;
	if (ukp_sys_read_self(buf, (const void *)(strtab + soname), n) || !memchr(buf, 0, n))
		return false;
	return true;
}

/* The name the loader gives a library it found by its DT_NEEDED (or
 * dlopen()) name, which is the library's soname, a link to its file
 * (libz.so.1 -> libz.so.1.2.13): the soname in the mapped file's
 * directory when it is that same file, else the mapped file's path (the
 * kernel's: the real path). Only the directory can differ from the
 * loader's (/lib for /usr/lib on a merged /usr). */
static const char *lib_name(const struct mapping *mp, const ElfW(Phdr) *ph, size_t phnum,
			    uintptr_t bias, char *buf, size_t size)
{
	const char *slash = strrchr(mp->path, '/');
	char soname[256];
	struct stat st;
	int n;

	if (!soname_of(ph, phnum, bias, soname, sizeof(soname)) || !soname[0] ||
	    strchr(soname, '/') || !slash || !strcmp(slash + 1, soname))
		return mp->path;
	n = snprintf(buf, size, "%.*s/%s", (int)(slash - mp->path), mp->path, soname);
	if (n < 0 || (size_t)n >= size || ukp_sys_stat(buf, &st) || st.st_ino != mp->inode)
		return mp->path;
	return buf;
}

static int by_address_down(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	uintptr_t p = (uintptr_t)x->info.dlpi_phdr, q = (uintptr_t)y->info.dlpi_phdr;

	return p < q ? 1 : p > q ? -1 : 0;
}

int ukp_maps_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	struct mapping_list ml;
	struct found_list fl = { 0 };
	size_t page = (size_t)ukp_getauxval(AT_PAGESZ), i, first_lib;
	uintptr_t vdso = ukp_getauxval(AT_SYSINFO_EHDR), interp = ukp_getauxval(AT_BASE);
	const struct mapping *main_map;
	unsigned long long digest = 1469598103934665603ULL;
	int ret;

	if (!page)
		page = 4096;
	ret = mappings_read(&ml);
	if (ret)
		return ret;
	ret = add_main(&fl, &ml, page);
	if (ret)
		goto out;
	if (vdso) {
		const ElfW(Phdr) *ph;
		ElfW(Phdr) copy[MAX_PHDRS];
		size_t phnum;
		uintptr_t bias;

		if (headers_at(vdso, vdso + page, &ph, copy, &phnum, &bias)) {
			ret = found_add(&fl, bias, "linux-vdso.so.1", ph, phnum);
			if (ret)
				goto out;
		}
	}
	first_lib = fl.n;
	/* (the main program's file, mapped at offset 0, is not a library) */
	main_map = mapping_at(&ml, ukp_getauxval(AT_PHDR));
	for (i = 0; i < ml.n; i++) {
		const struct mapping *mp = &ml.v[i];
		char name[PATH_MAX];
		const ElfW(Phdr) *ph;
		ElfW(Phdr) copy[MAX_PHDRS];
		size_t phnum;
		uintptr_t bias;

		if (mp->offset || !mp->read || mp->path[0] != '/' ||
		    (main_map && mp->inode == main_map->inode && !strcmp(mp->path, main_map->path)))
			continue;
		if (!headers_at(mp->start, mp->end, &ph, copy, &phnum, &bias) ||
		    !mapped_as_loaded(&ml, mp, copy, phnum, bias, page))
			continue;
		ret = found_add(&fl, bias, lib_name(mp, copy, phnum, bias, name, sizeof(name)), ph,
				phnum);
		if (ret)
			goto out;
	}
	ukp_sort(fl.v + first_lib, fl.n - first_lib, sizeof(*fl.v), by_address_down);
	/* the dynamic loader last, as in its own list (the kernel mapped it
	 * before the loader mapped anything) */
	for (i = first_lib; interp && i + 1 < fl.n; i++) {
		if (fl.v[i].info.dlpi_addr == interp) {
			struct found t = fl.v[i];

			memmove(&fl.v[i], &fl.v[i + 1], (fl.n - i - 1) * sizeof(*fl.v));
			fl.v[fl.n - 1] = t;
			break;
		}
	}
	for (i = 0; i < fl.n; i++) {
		digest ^= fl.v[i].info.dlpi_addr;
		digest *= 1099511628211ULL;
		digest ^= (uintptr_t)fl.v[i].info.dlpi_phdr;
		digest *= 1099511628211ULL;
	}
	ret = 0;
	for (i = 0; i < fl.n && !ret; i++) {
		fl.v[i].info.dlpi_adds = digest;
		fl.v[i].info.dlpi_subs = 0;
		ret = cb(&fl.v[i].info, sizeof(fl.v[i].info), arg);
	}
out:
	for (i = 0; i < fl.n; i++)
		free(fl.v[i].name);
	free(fl.v);
	mappings_free(&ml);
	return ret;
}
