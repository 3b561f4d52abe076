/* SPDX-License-Identifier: MIT */
/*
 * A Go executable's own function table (src/symbols/gopclntab.c) against
 * its ELF symbol table, on the Go programs tests/cli builds (Debian's
 * golang-go; skipped without it): the functions the table names have
 * symbols of their names at their addresses, of their sizes; a copy with no section
 * headers at all gives the same table, found by its magic; damaged
 * tables and objects Go did not build are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/elf_read.h"
#include "symbols/gopclntab.h"

/* The file's bytes (malloc'ed), or NULL when it is not there. */
static unsigned char *slurp(const char *name, size_t *size)
{
	char path[4096];
	const char *dir = getenv("UKP_GO_PROGS");
	unsigned char *buf;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	cr_assert(fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size);
	cr_assert(buf && read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static unsigned char *go_prog(const char *name, size_t *size)
{
	unsigned char *b = slurp(name, size);

	if (!b)
		cr_skip_test("no %s (golang-go)", name);
	return b;
}

Test(gopclntab, same_as_symtab)
{
	size_t size, nsym, i, checked = 0, named = 0;
	unsigned char *b = go_prog("tgt_go", &size);
	struct ukp_elf elf;
	struct ukp_gopcln p;
	const Elf64_Shdr *symtab;

	cr_assert(ukp_elf_open_mem(&elf, b, size) == 0);
	cr_assert(ukp_gopclntab_find(&elf, &p) == 0);
	symtab = ukp_elf_next_of_type(&elf, NULL, SHT_SYMTAB);
	cr_assert(symtab);
	nsym = ukp_elf_nsyms(&elf, symtab);
	for (i = 0; i < nsym; i++) {
		Elf64_Sym s;
		uint32_t shndx;
		const char *name;

		if (!ukp_elf_sym(&elf, symtab, NULL, i, &s, &shndx) ||
		    ELF64_ST_TYPE(s.st_info) != STT_FUNC)
			continue;
		name = ukp_elf_strptr(&elf, symtab->sh_link, s.st_name);
		if (name && !strcmp(name, "runtime.text"))
			cr_expect_eq(s.st_value, p.text);
		if (name && !strcmp(name, "runtime.etext"))
			cr_expect_eq(s.st_value, p.etext);
	}
	for (i = 0; i < p.nfunc; i++) {
		uint64_t entry, fsize;
		const char *name;
		size_t k;

		cr_assert(ukp_gopclntab_func(&p, i, &entry, &fsize, &name), "function %zu", i);
		cr_assert(entry >= p.text && entry + fsize <= p.etext);
		named++;
		for (k = 0; k < nsym; k++) {
			Elf64_Sym s;
			uint32_t shndx;
			const char *sn;
			size_t len = strlen(name);

			if (!ukp_elf_sym(&elf, symtab, NULL, k, &s, &shndx) ||
			    ELF64_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size)
				continue;
			sn = ukp_elf_strptr(&elf, symtab->sh_link, s.st_name);
			/* (the symbol of an assembly function, or of the ABI
			 * wrapper of a Go function, carries its ABI: the table
			 * has two functions of one name then) */
			if (s.st_value != entry || !sn || strncmp(sn, name, len) ||
			    (sn[len] && strcmp(sn + len, ".abi0")))
				continue;
			cr_expect_eq(s.st_size, fsize, "%s: size 0x%lx, symbol 0x%lx", name,
				     (unsigned long)fsize, (unsigned long)s.st_size);
			checked++;
			break;
		}
	}
	/* (nearly every Go function has its sized symbol) */
	cr_expect(named > 1000 && checked > named * 9 / 10, "%zu of %zu checked", checked, named);
	free(b);
}

/* The same table found by its magic in a copy with no sections. */
Test(gopclntab, no_sections)
{
	size_t size, i;
	unsigned char *b = go_prog("tgt_go_s", &size), *c = malloc(size);
	struct ukp_elf elf, bare;
	struct ukp_gopcln p, q;
	Elf64_Ehdr eh;

	cr_assert(c);
	memcpy(c, b, size);
	memcpy(&eh, c, sizeof(eh));
	eh.e_shoff = 0;
	eh.e_shnum = 0;
	eh.e_shstrndx = 0;
	memcpy(c, &eh, sizeof(eh));
	cr_assert(ukp_elf_open_mem(&elf, b, size) == 0);
	cr_assert(ukp_elf_open_mem(&bare, c, size) == 0);
	cr_assert(bare.shnum == 0);
	cr_assert(ukp_gopclntab_find(&elf, &p) == 0);
	cr_assert(ukp_gopclntab_find(&bare, &q) == 0);
	cr_expect(p.nfunc == q.nfunc && p.text == q.text && p.etext == q.etext);
	cr_expect(q.hdr - c == p.hdr - b, "the same header");
	for (i = 0; i < p.nfunc; i += 97) {
		uint64_t e1, s1, e2, s2;
		const char *n1, *n2;

		cr_assert(ukp_gopclntab_func(&p, i, &e1, &s1, &n1));
		cr_assert(ukp_gopclntab_func(&q, i, &e2, &s2, &n2));
		cr_expect(e1 == e2 && s1 == s2 && !strcmp(n1, n2));
	}
	free(b);
	free(c);
}

/* A header word of the table changed: refused. */
static void refused_with(size_t off, uint64_t v, size_t len)
{
	size_t size;
	unsigned char *b = go_prog("tgt_go_s", &size);
	struct ukp_elf elf;
	struct ukp_gopcln p;
	size_t at;

	cr_assert(ukp_elf_open_mem(&elf, b, size) == 0);
	cr_assert(ukp_gopclntab_find(&elf, &p) == 0);
	at = (size_t)(p.hdr - b);
	memcpy(b + at + off, &v, len);
	cr_expect(ukp_gopclntab_find(&elf, &p) == -ENOENT, "offset %zu", off);
	free(b);
}

Test(gopclntab, damaged)
{
	refused_with(0, 0xfffffffa, 4);          /* Go 1.16's magic */
	refused_with(7, 4, 1);                   /* pointer size */
	refused_with(8, 1u << 30, 8);            /* nfunc */
	refused_with(24, 0, 8);                  /* textStart */
	refused_with(64, ~0ull >> 4, 8);         /* the function table's offset */
}

Test(gopclntab, unordered)
{
	size_t size;
	unsigned char *b = go_prog("tgt_go_s", &size);
	struct ukp_elf elf;
	struct ukp_gopcln p;
	uint32_t big = 0x7fffffff;

	cr_assert(ukp_elf_open_mem(&elf, b, size) == 0);
	cr_assert(ukp_gopclntab_find(&elf, &p) == 0);
	/* function 1 starts after function 2 */
	memcpy((unsigned char *)p.hdr + p.pcln + 8, &big, 4);
	cr_expect(ukp_gopclntab_find(&elf, &p) == -ENOENT);
	free(b);
}

Test(gopclntab, not_go)
{
	size_t size;
	unsigned char *b = slurp("tgt_rust", &size);
	struct ukp_elf elf;
	struct ukp_gopcln p;
	int fd = open("/proc/self/exe", O_RDONLY);

	cr_assert(fd >= 0 && ukp_elf_open_fd(&elf, fd) == 0);
	cr_expect(ukp_gopclntab_find(&elf, &p) == -ENOENT, "a C program");
	ukp_elf_close(&elf);
	close(fd);
	if (b) {
		cr_assert(ukp_elf_open_mem(&elf, b, size) == 0);
		cr_expect(ukp_gopclntab_find(&elf, &p) == -ENOENT, "a Rust program");
		free(b);
	}
}
