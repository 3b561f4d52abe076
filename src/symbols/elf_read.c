/* SPDX-License-Identifier: MIT */
/*
 * elf_read.c - the library's own ELF reader (elf_read.h): a read-only
 * mapping of the file through the system layer (sys.h), every offset
 * checked against the file's size, nothing allocated. [reg] context.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "base/sys.h"
#include "symbols/elf_read.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_DATA ELFDATA2LSB
#else
#define NATIVE_DATA ELFDATA2MSB
#endif

/* [off, off + n) inside the file, without overflow */
static bool inside(const struct ukp_elf *e, uint64_t off, uint64_t n)
{
	return off <= e->size && n <= e->size - off;
}

static int parse(struct ukp_elf *e)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)e->base;
	uint64_t shnum, phnum;

	e->shdr = NULL;
	e->phdr = NULL;
	e->shnum = e->phnum = e->shstrndx = 0;
	if (e->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != NATIVE_DATA)
		return -ENOEXEC;
	e->ehdr = eh;
	if (eh->e_shoff) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(e->base + eh->e_shoff);

		if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff % 8 ||
		    !inside(e, eh->e_shoff, sizeof(Elf64_Shdr)))
			return -ENOEXEC;
		/* more than SHN_LORESERVE sections: the count in the first */
		shnum = eh->e_shnum ? eh->e_shnum : sh[0].sh_size;
		if (shnum > e->size / sizeof(Elf64_Shdr) ||
		    !inside(e, eh->e_shoff, shnum * sizeof(Elf64_Shdr)))
			return -ENOEXEC;
		e->shdr = sh;
		e->shnum = (size_t)shnum;
		e->shstrndx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh->e_shstrndx;
	}
	if (eh->e_phoff && eh->e_phnum) {
		phnum = eh->e_phnum == PN_XNUM && e->shdr ? e->shdr[0].sh_info : eh->e_phnum;
		if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff % 8 ||
		    phnum > e->size / sizeof(Elf64_Phdr) ||
		    !inside(e, eh->e_phoff, phnum * sizeof(Elf64_Phdr)))
			return -ENOEXEC;
		e->phdr = (const Elf64_Phdr *)(const void *)(e->base + eh->e_phoff);
		e->phnum = (size_t)phnum;
	}
	return 0;
}

int ukp_elf_open_fd(struct ukp_elf *e, int fd)
{
	struct stat st;
	void *p;
	int r;

	memset(e, 0, sizeof(*e));
	if ((r = ukp_sys_fstat(fd, &st)))
		return r;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
		return -ENOEXEC;
	if ((r = ukp_sys_mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0, &p)))
		return r;
	e->base = p;
	e->size = e->map_size = (size_t)st.st_size;
	if ((r = parse(e)))
		ukp_elf_close(e);
	return r;
}

int ukp_elf_open_mem(struct ukp_elf *e, const void *image, size_t size)
{
	int r;

	memset(e, 0, sizeof(*e));
	if ((uintptr_t)image % 8)
		return -ENOEXEC;
	e->base = image;
	e->size = size;
	if ((r = parse(e)))
		memset(e, 0, sizeof(*e));
	return r;
}

void ukp_elf_close(struct ukp_elf *e)
{
	if (e->map_size)
		ukp_sys_munmap((void *)(uintptr_t)e->base, e->map_size);
	memset(e, 0, sizeof(*e));
}

const Elf64_Shdr *ukp_elf_shdr(const struct ukp_elf *e, size_t idx)
{
	return idx < e->shnum ? &e->shdr[idx] : NULL;
}

size_t ukp_elf_shndx(const struct ukp_elf *e, const Elf64_Shdr *sh)
{
	return (size_t)(sh - e->shdr);
}

const void *ukp_elf_chunk(const struct ukp_elf *e, uint64_t off, uint64_t size)
{
	return inside(e, off, size) ? e->base + off : NULL;
}

const void *ukp_elf_data(const struct ukp_elf *e, const Elf64_Shdr *sh, size_t *size)
{
	if (!sh || sh->sh_type == SHT_NOBITS || !inside(e, sh->sh_offset, sh->sh_size))
		return NULL;
	*size = (size_t)sh->sh_size;
	return e->base + sh->sh_offset;
}

const char *ukp_elf_strptr(const struct ukp_elf *e, size_t strndx, size_t off)
{
	const Elf64_Shdr *sh = ukp_elf_shdr(e, strndx);
	const char *s;
	size_t size;

	if (!sh || sh->sh_type != SHT_STRTAB || !(s = ukp_elf_data(e, sh, &size)) || off >= size ||
	    !memchr(s + off, 0, size - off))
		return NULL;
	return s + off;
}

const char *ukp_elf_shname(const struct ukp_elf *e, const Elf64_Shdr *sh)
{
	return ukp_elf_strptr(e, e->shstrndx, sh->sh_name);
}

const Elf64_Shdr *ukp_elf_section_named(const struct ukp_elf *e, const char *name)
{
	for (size_t i = 1; i < e->shnum; i++) {
		const char *n = ukp_elf_shname(e, &e->shdr[i]);

		if (n && !strcmp(n, name))
			return &e->shdr[i];
	}
	return NULL;
}

const Elf64_Shdr *ukp_elf_next_of_type(const struct ukp_elf *e, const Elf64_Shdr *after,
				       uint32_t type)
{
	for (size_t i = after ? ukp_elf_shndx(e, after) + 1 : 1; i < e->shnum; i++)
		if (e->shdr[i].sh_type == type)
			return &e->shdr[i];
	return NULL;
}

const Elf64_Phdr *ukp_elf_phdr(const struct ukp_elf *e, size_t idx)
{
	return idx < e->phnum ? &e->phdr[idx] : NULL;
}

size_t ukp_elf_nsyms(const struct ukp_elf *e, const Elf64_Shdr *symtab)
{
	size_t size;

	return ukp_elf_data(e, symtab, &size) ? size / sizeof(Elf64_Sym) : 0;
}

bool ukp_elf_sym(const struct ukp_elf *e, const Elf64_Shdr *symtab, const Elf64_Shdr *xndx,
		 size_t i, Elf64_Sym *sym, uint32_t *shndx)
{
	const uint8_t *d;
	size_t size;

	if (!(d = ukp_elf_data(e, symtab, &size)) || i >= size / sizeof(*sym))
		return false;
	memcpy(sym, d + i * sizeof(*sym), sizeof(*sym));
	*shndx = sym->st_shndx;
	if (sym->st_shndx == SHN_XINDEX && xndx && (d = ukp_elf_data(e, xndx, &size)) &&
	    i < size / 4)
		memcpy(shndx, d + i * 4, 4);
	return true;
}

bool ukp_elf_next_note(const void *data, size_t size, size_t align, size_t *off,
		       Elf64_Nhdr *nh, const char **name, const void **desc)
{
	const uint8_t *d = data;
	size_t o = *off, name_off, desc_off, end;

	if (align != 8)
		align = 4;
	if (o > size || size - o < sizeof(*nh))
		return false;
	memcpy(nh, d + o, sizeof(*nh));
	name_off = o + sizeof(*nh);
	if (nh->n_namesz > size - name_off)
		return false;
	desc_off = (name_off + nh->n_namesz + align - 1) & ~(align - 1);
	if (desc_off > size || nh->n_descsz > size - desc_off)
		return false;
	end = (desc_off + nh->n_descsz + align - 1) & ~(align - 1);
	*name = (const char *)d + name_off;
	*desc = d + desc_off;
	*off = end;
	return true;
}

static const uint8_t *build_id_in(const void *data, size_t size, size_t align, size_t *len)
{
	const char *name;
	const void *desc;
	Elf64_Nhdr nh;
	size_t off = 0;

	while (ukp_elf_next_note(data, size, align, &off, &nh, &name, &desc))
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(name, "GNU", 4) &&
		    nh.n_descsz) {
			*len = nh.n_descsz;
			return desc;
		}
	return NULL;
}

const uint8_t *ukp_elf_build_id(const struct ukp_elf *e, size_t *len)
{
	const Elf64_Shdr *sh = NULL;
	const uint8_t *id;
	const void *d;
	size_t size;

	while ((sh = ukp_elf_next_of_type(e, sh, SHT_NOTE)))
		if ((d = ukp_elf_data(e, sh, &size)) &&
		    (id = build_id_in(d, size, sh->sh_addralign, len)))
			return id;
	/* no section headers: the notes' segments */
	for (size_t i = 0; !e->shnum && i < e->phnum; i++)
		if (e->phdr[i].p_type == PT_NOTE &&
		    (d = ukp_elf_chunk(e, e->phdr[i].p_offset, e->phdr[i].p_filesz)) &&
		    (id = build_id_in(d, (size_t)e->phdr[i].p_filesz, e->phdr[i].p_align, len)))
			return id;
	return NULL;
}

const char *ukp_elf_debuglink(const struct ukp_elf *e, uint32_t *crc)
{
	const Elf64_Shdr *sh = ukp_elf_section_named(e, ".gnu_debuglink");
	const char *name;
	size_t size, nlen, crc_off;

	if (!sh || !(name = ukp_elf_data(e, sh, &size)))
		return NULL;
	nlen = strnlen(name, size);
	crc_off = (nlen + 4) & ~(size_t)3;
	if (!nlen || nlen == size || crc_off + 4 > size)
		return NULL;
	memcpy(crc, name + crc_off, 4); /* the object's byte order: this machine's */
	return name;
}
