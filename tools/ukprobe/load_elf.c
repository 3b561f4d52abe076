/* SPDX-License-Identifier: MIT */
/*
 * load_elf.c - the objects ukprobe's ptrace loader maps (load.h): a
 * freestanding PIE and the shared libraries it needs, read into the one
 * image they will have in the process, and relocated there for its load
 * address. The loader is their dynamic linker, with eager binding and a
 * closed world: the libraries' references to the C library (memcpy,
 * memset, __stack_chk_fail, ...) bind to the object's own definitions,
 * exported for them; the C library and the dynamic loader are never
 * loaded (a second C library cannot run beside the program's). No
 * constructors run (a library needing them is not for this loader), no
 * TLS, no IFUNC, no copy relocations: each is refused by name.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load.h"
#include "ptrace_arch.h"

#ifndef DT_RELR
#define DT_RELRSZ 35
#define DT_RELR 36
#define DT_RELRENT 37
#endif

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s: ", path);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static int read_file(const char *path, unsigned char **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		return -EINVAL;
	}
	*data = malloc((size_t)st.st_size);
	if (!*data) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *data + got, (size_t)st.st_size - got);

		if (n <= 0) {
			free(*data);
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return 0;
}

/* The offset of the vaddr range [v, v + n) in o's part, or -1 past its end. */
static long in_obj(const struct ukp_image_obj *o, uint64_t v, uint64_t n)
{
	return v <= o->len && n <= o->len - v ? (long)v : -1;
}

static unsigned char *obj_at(const struct ukp_image *im, const struct ukp_image_obj *o,
			     uintptr_t off)
{
	return im->buf + o->off + off;
}

/* The number of dynamic symbols, from DT_GNU_HASH: past the highest
 * bucket's chain end. -1 when the table is malformed. */
static long gnu_hash_nsyms(const struct ukp_image *im, const struct ukp_image_obj *o,
			   uint64_t gh)
{
	const uint32_t *h;
	uint32_t nbuckets, symoff, bloom, i, max = 0;
	const uint32_t *buckets, *chain;

	if (in_obj(o, gh, 16) < 0)
		return -1;
	h = (const uint32_t *)obj_at(im, o, gh);
	nbuckets = h[0];
	symoff = h[1];
	bloom = h[2];
	if (in_obj(o, gh + 16 + (uint64_t)bloom * 8, (uint64_t)nbuckets * 4) < 0)
		return -1;
	buckets = (const uint32_t *)(obj_at(im, o, gh) + 16 + (size_t)bloom * 8);
	chain = buckets + nbuckets;
	for (i = 0; i < nbuckets; i++)
		if (buckets[i] > max)
			max = buckets[i];
	if (max < symoff)
		return symoff;
	for (;; max++) {
		if ((const unsigned char *)(chain + (max - symoff) + 1) >
		    im->buf + o->off + o->len)
			return -1;
		if (chain[max - symoff] & 1)
			return (long)max + 1;
	}
}

static const Elf64_Sym *obj_sym(const struct ukp_image *im, const struct ukp_image_obj *o,
				size_t i)
{
	return (const Elf64_Sym *)obj_at(im, o, o->symtab) + i;
}

static const char *obj_str(const struct ukp_image *im, const struct ukp_image_obj *o,
			   uint32_t name)
{
	return name < o->strsz ? (const char *)obj_at(im, o, o->strtab) + name : NULL;
}

/* Where the image defines name: the first object of the set (the
 * loaded one, then its libraries in load order) with a definition.
 * *found false: none (0). -1 with err: a definition of a kind this
 * loader cannot bind. */
static int lookup(const struct ukp_image *im, const char *name, uintptr_t *at, bool *found,
		  const char *who, char *err, size_t errlen)
{
	int k;

	*found = false;
	for (k = 0; k < im->nobj; k++) {
		const struct ukp_image_obj *o = &im->obj[k];
		size_t i;

		for (i = 1; i < o->nsyms; i++) {
			const Elf64_Sym *sy = obj_sym(im, o, i);
			const char *n = obj_str(im, o, sy->st_name);
			int bind = ELF64_ST_BIND(sy->st_info), type = ELF64_ST_TYPE(sy->st_info);

			if (sy->st_shndx == SHN_UNDEF || !n || strcmp(n, name) ||
			    (bind != STB_GLOBAL && bind != STB_WEAK))
				continue;
			if (type == STT_GNU_IFUNC || type == STT_TLS)
				return fail(err, errlen, who, "needs %s, which %s defines as %s: "
					    "this loader binds neither", name, o->name,
					    type == STT_TLS ? "thread-local" : "an IFUNC");
			if (sy->st_shndx != SHN_ABS && in_obj(o, sy->st_value, 0) < 0)
				return fail(err, errlen, who, "%s's %s is outside its segments",
					    o->name, name);
			*at = o->off + sy->st_value;
			*found = true;
			return 0;
		}
	}
	return 0;
}

/* Check one object's relocations (tab: n RELA entries at off), and bind
 * none yet: every kind known, every place inside it, every symbol
 * defined in the set (or weak). */
static int check_relocs(const struct ukp_image *im, const struct ukp_image_obj *o, uintptr_t off,
			size_t n, char *err, size_t errlen)
{
	const Elf64_Rela *r = (const Elf64_Rela *)obj_at(im, o, off);
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t type = ELF64_R_TYPE(r[i].r_info), si = ELF64_R_SYM(r[i].r_info);
		const Elf64_Sym *sy;
		const char *name;
		uintptr_t at;
		bool found;

		if (type == 0)
			continue;
		if (in_obj(o, r[i].r_offset, 8) < 0)
			return fail(err, errlen, o->name, "relocation %zu is outside its segments", i);
		if (type == UKP_ARCH_R_RELATIVE)
			continue;
		if (type != UKP_ARCH_R_ABS64 && type != UKP_ARCH_R_GLOB_DAT &&
		    type != UKP_ARCH_R_JUMP_SLOT)
			return fail(err, errlen, o->name, "relocation %zu is of type %u: only relative "
				    "and symbol-address relocations can be applied", i, type);
		if (!si || si >= o->nsyms)
			return fail(err, errlen, o->name, "relocation %zu names symbol %u, which "
				    "its symbol table does not have", i, si);
		sy = obj_sym(im, o, si);
		name = obj_str(im, o, sy->st_name);
		if (!name)
			return fail(err, errlen, o->name, "symbol %u's name is outside its strings",
				    si);
		if (lookup(im, name, &at, &found, o->name, err, errlen))
			return -1;
		if (!found && ELF64_ST_BIND(sy->st_info) != STB_WEAK)
			return fail(err, errlen, o->name, "needs %s, which no object of the set "
				    "defines (the C library is not loaded: the loaded object must "
				    "define and export it)", name);
	}
	return 0;
}

static int read_obj(const char *path, struct ukp_image *im, bool first, char *err, size_t errlen);

/* Is name the C library's or the dynamic loader's (never loaded)? */
static bool libc_name(const char *name)
{
	static const char *const libc[] = { "libc.so", "ld-linux", "ld64.so", "libdl.so",
					    "libpthread.so", "librt.so" };
	size_t i;

	for (i = 0; i < sizeof(libc) / sizeof(libc[0]); i++)
		if (!strncmp(name, libc[i], strlen(libc[i])))
			return true;
	return false;
}

/* A library o needs, from the system's library directories. */
static int read_needed(const char *name, struct ukp_image *im, const char *who, char *err,
		       size_t errlen)
{
	static const char *const dirs[] = { UKP_ARCH_LIBDIRS };
	char path[512];
	size_t i;
	int k;

	if (libc_name(name))
		return 0;
	for (k = 0; k < im->nobj; k++)
		if (!strcmp(im->obj[k].name, name))
			return 0;
	if (strchr(name, '/'))
		return fail(err, errlen, who, "needs %s by a path: only library names are looked up",
			    name);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (!access(path, R_OK))
			return read_obj(path, im, false, err, errlen);
	}
	return fail(err, errlen, who, "needs %s, which is in none of the system's library "
		    "directories", name);
}

static int read_dynamic(struct ukp_image *im, int k, uint64_t dyn, uint64_t dynsz, char *err,
			size_t errlen)
{
	uint64_t rela = 0, relasz = 0, relr = 0, relrsz = 0, jmprel = 0, pltsz = 0, gh = 0;
	uint64_t hash = 0, relent = sizeof(Elf64_Rela), pltrel = DT_RELA;
	uint64_t needed[8];
	struct ukp_image_obj *o = &im->obj[k];
	const Elf64_Dyn *d;
	size_t i, nneeded = 0;

	if (in_obj(o, dyn, dynsz) < 0)
		return fail(err, errlen, o->name, "its dynamic section is outside its segments");
	d = (const Elf64_Dyn *)obj_at(im, o, dyn);
	for (i = 0; i < dynsz / sizeof(*d) && d[i].d_tag != DT_NULL; i++) {
		switch (d[i].d_tag) {
		case DT_NEEDED:
			if (nneeded == sizeof(needed) / sizeof(needed[0]))
				return fail(err, errlen, o->name, "needs more than %zu libraries",
					    nneeded);
			needed[nneeded++] = d[i].d_un.d_val;
			break;
		case DT_REL:
		case DT_RELSZ:
			if (d[i].d_un.d_val)
				return fail(err, errlen, o->name,
					    "has REL relocations (this architecture uses RELA)");
			break;
		case DT_RELA: rela = d[i].d_un.d_ptr; break;
		case DT_RELASZ: relasz = d[i].d_un.d_val; break;
		case DT_RELAENT: relent = d[i].d_un.d_val; break;
		case DT_JMPREL: jmprel = d[i].d_un.d_ptr; break;
		case DT_PLTRELSZ: pltsz = d[i].d_un.d_val; break;
		case DT_PLTREL: pltrel = d[i].d_un.d_val; break;
		case DT_RELR: relr = d[i].d_un.d_ptr; break;
		case DT_RELRSZ: relrsz = d[i].d_un.d_val; break;
		case DT_SYMTAB: o->symtab = d[i].d_un.d_ptr; break;
		case DT_STRTAB: o->strtab = d[i].d_un.d_ptr; break;
		case DT_STRSZ: o->strsz = d[i].d_un.d_val; break;
		case DT_GNU_HASH: gh = d[i].d_un.d_ptr; break;
		case DT_HASH: hash = d[i].d_un.d_ptr; break;
		default: break;
		}
	}
	if (o->strtab && in_obj(o, o->strtab, o->strsz) < 0)
		return fail(err, errlen, o->name, "its dynamic strings are outside its segments");
	if (o->symtab) {
		long n = -1;

		/* the section headers' count when the file has them (read_obj):
		 * a hash table covers only the defined symbols */
		if (o->nsyms)
			n = (long)o->nsyms;
		else if (gh)
			n = gnu_hash_nsyms(im, o, gh);
		else if (hash && in_obj(o, hash, 8) >= 0)
			n = ((const uint32_t *)obj_at(im, o, hash))[1];
		if (n < 0 || in_obj(o, o->symtab, (uint64_t)n * sizeof(Elf64_Sym)) < 0 || !o->strtab)
			return fail(err, errlen, o->name, "its dynamic symbol table is malformed");
		o->nsyms = (size_t)n;
	}
	if ((relasz || pltsz) && relent != sizeof(Elf64_Rela))
		return fail(err, errlen, o->name, "its RELA relocations are malformed");
	if (pltsz && pltrel != DT_RELA)
		return fail(err, errlen, o->name, "has REL relocations (this architecture uses RELA)");
	if ((relasz && in_obj(o, rela, relasz) < 0) || (pltsz && in_obj(o, jmprel, pltsz) < 0))
		return fail(err, errlen, o->name, "its RELA relocations are malformed");
	o->rela_off = relasz ? rela : 0;
	o->rela_n = relasz / sizeof(Elf64_Rela);
	o->jmprel_off = pltsz ? jmprel : 0;
	o->jmprel_n = pltsz / sizeof(Elf64_Rela);
	if (relrsz) {
		if (in_obj(o, relr, relrsz) < 0 || relrsz % 8)
			return fail(err, errlen, o->name, "its RELR relocations are malformed");
		o->relr_off = relr;
		o->relr_n = relrsz / 8;
	}
	for (i = 0; i < nneeded; i++) {
		char name[64];
		const char *n = o->strtab ? obj_str(im, o, (uint32_t)needed[i]) : NULL;

		if (!n)
			return fail(err, errlen, o->name, "a library it needs has no name");
		snprintf(name, sizeof(name), "%s", n);
		/* (the image may move: o is not used past this) */
		if (read_needed(name, im, im->obj[k].name, err, errlen))
			return -1;
	}
	return 0;
}

/* Read one object into the image, after those read before; its
 * libraries after it. */
static int read_obj(const char *path, struct ukp_image *im, bool first, char *err, size_t errlen)
{
	unsigned char *data = NULL, *buf;
	size_t len = 0, i, page = (size_t)sysconf(_SC_PAGESIZE), olen;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	uint64_t hi = 0, dyn = 0, dynsz = 0;
	struct ukp_image_obj *o;
	const char *base = strrchr(path, '/');
	int ret, k;

	base = base ? base + 1 : path;
	if (im->nobj == UKP_IMAGE_OBJS)
		return fail(err, errlen, path, "needs more than %d objects", UKP_IMAGE_OBJS - 1);
	ret = read_file(path, &data, &len);
	if (ret)
		return fail(err, errlen, path, "cannot be read: %s", strerror(-ret));
	eh = (const Elf64_Ehdr *)data;
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		ret = fail(err, errlen, path, "not an ELF file");
		goto out;
	}
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != UKP_ARCH_EM) {
		ret = fail(err, errlen, path, "not an object of this architecture");
		goto out;
	}
	if (eh->e_type != ET_DYN) {
		ret = fail(err, errlen, path, "not position-independent (ET_DYN): link it -static-pie");
		goto out;
	}
	if (eh->e_phentsize != sizeof(*ph) || eh->e_phoff > len ||
	    (size_t)eh->e_phnum * sizeof(*ph) > len - eh->e_phoff) {
		ret = fail(err, errlen, path, "its program headers are malformed");
		goto out;
	}
	ph = (const Elf64_Phdr *)(data + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if ((ph[i].p_type == PT_INTERP && first) || ph[i].p_type == PT_TLS) {
			ret = fail(err, errlen, path, "has %s: not a freestanding static PIE",
				   ph[i].p_type == PT_INTERP ? "an interpreter" : "thread-local storage");
			goto out;
		}
		if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_filesz > ph[i].p_memsz || ph[i].p_offset > len ||
			    ph[i].p_filesz > len - ph[i].p_offset ||
			    ph[i].p_vaddr + ph[i].p_memsz < ph[i].p_vaddr ||
			    ph[i].p_vaddr + ph[i].p_memsz > (1UL << 32)) {
				ret = fail(err, errlen, path, "segment %zu is malformed", i);
				goto out;
			}
			if (ph[i].p_vaddr + ph[i].p_memsz > hi)
				hi = ph[i].p_vaddr + ph[i].p_memsz;
		}
	}
	olen = (hi + page - 1) & ~(page - 1);
	if (!olen) {
		ret = fail(err, errlen, path, "has no loadable segment");
		goto out;
	}
	buf = realloc(im->buf, im->len + olen);
	if (!buf) {
		ret = fail(err, errlen, path, "out of memory");
		goto out;
	}
	memset(buf + im->len, 0, olen);
	im->buf = buf;
	k = im->nobj++;
	o = &im->obj[k];
	memset(o, 0, sizeof(*o));
	snprintf(o->name, sizeof(o->name), "%s", base);
	o->off = im->len;
	o->len = olen;
	im->len += olen;
	for (i = 0; i < eh->e_phnum; i++) {
		uintptr_t lo;

		if (ph[i].p_type == PT_DYNAMIC) {
			dyn = ph[i].p_vaddr;
			dynsz = ph[i].p_memsz;
		} else if (ph[i].p_type == PT_GNU_RELRO) {
			o->relro_off = ph[i].p_vaddr & ~(page - 1);
			o->relro_len = ((ph[i].p_vaddr + ph[i].p_memsz) & ~(page - 1)) - o->relro_off;
		}
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (im->nseg == UKP_IMAGE_SEGS) {
			ret = fail(err, errlen, path, "the objects have more than %d segments",
				   UKP_IMAGE_SEGS);
			goto out;
		}
		memcpy(im->buf + o->off + ph[i].p_vaddr, data + ph[i].p_offset, ph[i].p_filesz);
		lo = ph[i].p_vaddr & ~(page - 1);
		im->seg[im->nseg].off = o->off + lo;
		im->seg[im->nseg].len =
			((ph[i].p_vaddr + ph[i].p_memsz + page - 1) & ~(page - 1)) - lo;
		im->seg[im->nseg].prot = (ph[i].p_flags & PF_R ? PROT_READ : 0) |
					 (ph[i].p_flags & PF_W ? PROT_WRITE : 0) |
					 (ph[i].p_flags & PF_X ? PROT_EXEC : 0);
		im->nseg++;
	}
	if (first) {
		if (eh->e_entry >= olen) {
			ret = fail(err, errlen, path, "its entry point is outside its segments");
			goto out;
		}
		im->entry = eh->e_entry;
	}
	if (eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shoff < len &&
	    (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len - eh->e_shoff) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(data + eh->e_shoff);

		for (i = 0; i < eh->e_shnum; i++)
			if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_entsize == sizeof(Elf64_Sym))
				o->nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
	}
	free(data);
	data = NULL;
	ret = dyn ? read_dynamic(im, k, dyn, dynsz, err, errlen) : 0;
out:
	free(data);
	return ret;
}

int ukp_image_read(const char *path, struct ukp_image *im, char *err, size_t errlen)
{
	int k, ret;

	memset(im, 0, sizeof(*im));
	ret = read_obj(path, im, true, err, errlen);
	/* every reference bound, before anything is mapped */
	for (k = 0; !ret && k < im->nobj; k++) {
		const struct ukp_image_obj *o = &im->obj[k];

		ret = check_relocs(im, o, o->rela_off, o->rela_n, err, errlen);
		if (!ret)
			ret = check_relocs(im, o, o->jmprel_off, o->jmprel_n, err, errlen);
	}
	if (ret)
		ukp_image_free(im);
	return ret;
}

/* [checked] One object's RELA entries, for the image at base. */
static void apply_relocs(struct ukp_image *im, const struct ukp_image_obj *o, uintptr_t off,
			 size_t n, uintptr_t base)
{
	const Elf64_Rela *r = (const Elf64_Rela *)obj_at(im, o, off);
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t type = ELF64_R_TYPE(r[i].r_info);
		uint64_t v;

		if (type == 0)
			continue;
		if (type == UKP_ARCH_R_RELATIVE) {
			v = base + o->off + (uint64_t)r[i].r_addend;
		} else {
			const Elf64_Sym *sy = obj_sym(im, o, ELF64_R_SYM(r[i].r_info));
			uintptr_t at = 0;
			bool found;

			lookup(im, obj_str(im, o, sy->st_name), &at, &found, o->name, NULL, 0);
			v = found ? base + at : 0;
			if (type == UKP_ARCH_R_ABS64 || found)
				v += (uint64_t)r[i].r_addend;
		}
		memcpy(obj_at(im, o, r[i].r_offset), &v, 8);
	}
}

void ukp_image_relocate(struct ukp_image *im, uintptr_t base)
{
	int k;

	for (k = 0; k < im->nobj; k++) {
		const struct ukp_image_obj *o = &im->obj[k];
		const uint64_t *relr = (const uint64_t *)obj_at(im, o, o->relr_off);
		uint64_t *where = NULL;
		size_t i;

		apply_relocs(im, o, o->rela_off, o->rela_n, base);
		apply_relocs(im, o, o->jmprel_off, o->jmprel_n, base);
		/* RELR: an address, then bitmaps of the 63 words after it */
		for (i = 0; i < o->relr_n; i++) {
			uint64_t e = relr[i];

			if (!(e & 1)) {
				if (e + 8 > o->len)
					break;
				where = (uint64_t *)obj_at(im, o, e);
				*where++ += base + o->off;
			} else if (where) {
				uint64_t *w = where;

				for (e >>= 1; e; e >>= 1, w++)
					if ((e & 1) && (unsigned char *)(w + 1) <=
							       im->buf + o->off + o->len)
						*w += base + o->off;
				where += 63;
			}
		}
	}
}

void ukp_image_free(struct ukp_image *im)
{
	free(im->buf);
	im->buf = NULL;
}
