/* SPDX-License-Identifier: MIT */
/*
 * elf_read.h - the library's own ELF reader (doc/static_agent.md, slice
 * 2): what symbols.c and debuginfo.c take from libelf, read from a
 * read-only mapping of the file (or an image in memory) with no
 * allocation: the headers, sections by index, name or type, their
 * bytes, symbol tables (SHN_XINDEX included), strings, notes (the
 * build-id), .gnu_debuglink. 64-bit objects of this machine's byte order
 * only (the library's objects); everything is bounds-checked against the
 * file: a damaged file gives NULL or -ENOEXEC, never a read outside it.
 * Compressed sections (SHF_COMPRESSED) are given as they are stored
 * (libelf's elf_rawdata); none of the library's sections are.
 *
 * [reg] context; a reader is used by one thread at a time.
 */
#ifndef UKP_ELF_READ_H
#define UKP_ELF_READ_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ukp_elf {
	const uint8_t *base;     /* the file's bytes */
	size_t size;
	size_t map_size;         /* the mapping's length (0: the caller's memory) */
	const Elf64_Ehdr *ehdr;
	const Elf64_Shdr *shdr;  /* NULL when there are none */
	size_t shnum, shstrndx;
	const Elf64_Phdr *phdr;  /* NULL when there are none */
	size_t phnum;
};

/* 0, or -errno (-ENOEXEC: not a 64-bit ELF file of this byte order,
 * or headers outside the file) */
int ukp_elf_open_fd(struct ukp_elf *e, int fd);
int ukp_elf_open_mem(struct ukp_elf *e, const void *image, size_t size);
void ukp_elf_close(struct ukp_elf *e);

const Elf64_Shdr *ukp_elf_shdr(const struct ukp_elf *e, size_t idx); /* NULL if none */
size_t ukp_elf_shndx(const struct ukp_elf *e, const Elf64_Shdr *sh);
const char *ukp_elf_shname(const struct ukp_elf *e, const Elf64_Shdr *sh);
const Elf64_Shdr *ukp_elf_section_named(const struct ukp_elf *e, const char *name);
/* the first section of type after `after` (NULL: from the start) */
const Elf64_Shdr *ukp_elf_next_of_type(const struct ukp_elf *e, const Elf64_Shdr *after,
				       uint32_t type);
/* a section's bytes in the file: NULL for SHT_NOBITS or outside the file */
const void *ukp_elf_data(const struct ukp_elf *e, const Elf64_Shdr *sh, size_t *size);
/* the bytes at [off, off + size) of the file, or NULL */
const void *ukp_elf_chunk(const struct ukp_elf *e, uint64_t off, uint64_t size);
/* the NUL-terminated string at off of string section strndx, or NULL */
const char *ukp_elf_strptr(const struct ukp_elf *e, size_t strndx, size_t off);
const Elf64_Phdr *ukp_elf_phdr(const struct ukp_elf *e, size_t idx);

/* Symbol tables (.symtab, .dynsym): the number of entries, and entry i
 * with its section index (SHN_XINDEX resolved through xndx, the
 * SHT_SYMTAB_SHNDX section for it, when there is one). */
size_t ukp_elf_nsyms(const struct ukp_elf *e, const Elf64_Shdr *symtab);
bool ukp_elf_sym(const struct ukp_elf *e, const Elf64_Shdr *symtab, const Elf64_Shdr *xndx,
		 size_t i, Elf64_Sym *sym, uint32_t *shndx);

/* Notes of a SHT_NOTE section or PT_NOTE segment's bytes: the next note
 * at or after *off (4-byte aligned, 8 for 8-aligned notes), its name and
 * description; false at the end. */
bool ukp_elf_next_note(const void *data, size_t size, size_t align, size_t *off,
		       Elf64_Nhdr *nh, const char **name, const void **desc);
/* The NT_GNU_BUILD_ID: its bytes and *len, or NULL */
const uint8_t *ukp_elf_build_id(const struct ukp_elf *e, size_t *len);
/* .gnu_debuglink: the file name and its CRC, or NULL */
const char *ukp_elf_debuglink(const struct ukp_elf *e, uint32_t *crc);

#endif
