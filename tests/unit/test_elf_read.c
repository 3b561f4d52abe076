/* SPDX-License-Identifier: MIT */
/*
 * The library's own ELF reader (src/symbols/elf_read.c; doc/static_agent.md,
 * slice 2) against libelf and libdw's dwelf on real objects: libc and
 * its debug file (found by build-id under /usr/lib/debug), libpython3.11,
 * python3.11 (a non-PIE executable), libsqlite3, the test objects
 * stripped with a debug file found by build-id or by .gnu_debuglink.
 * Every header, section (name, header, bytes), segment, symbol of
 * .symtab and .dynsym (name, fields, section index), the build-id and
 * the debuglink must be the same; damaged files are refused, not read
 * past their end.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/elf_read.h"

struct counts {
	size_t sections, symbols, segments;
	bool build_id, debuglink;
};

static void compare_elf(Elf *elf, const struct ukp_elf *e, const char *what, struct counts *c)
{
	size_t shnum, shstrndx, phnum;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	const void *id_ref, *id;
	const char *link_ref, *link;
	GElf_Word crc_ref;
	uint32_t crc = 0;
	ssize_t idlen_ref;
	size_t idlen = 0;

	cr_assert(gelf_getehdr(elf, &eh), "%s", what);
	cr_assert_eq(memcmp(&eh, e->ehdr, sizeof(eh)), 0, "%s: ELF header", what);
	cr_assert_eq(elf_getshdrnum(elf, &shnum), 0);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	cr_assert_eq(elf_getphdrnum(elf, &phnum), 0);
	cr_assert_eq(e->shnum, shnum, "%s: %zu sections, libelf %zu", what, e->shnum, shnum);
	cr_assert_eq(e->shstrndx, shstrndx, "%s", what);
	cr_assert_eq(e->phnum, phnum, "%s", what);
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		cr_assert(gelf_getphdr(elf, (int)i, &ph));
		cr_assert_eq(memcmp(&ph, ukp_elf_phdr(e, i), sizeof(ph)), 0, "%s: segment %zu", what, i);
		c->segments++;
	}
	cr_assert_null(ukp_elf_phdr(e, phnum));
	cr_assert_null(ukp_elf_shdr(e, shnum));

	while ((scn = elf_nextscn(elf, scn))) {
		size_t idx = elf_ndxscn(scn), size = 0;
		const Elf64_Shdr *sh = ukp_elf_shdr(e, idx);
		const char *name = NULL, *name_ref;
		const void *data;
		Elf_Data *d;
		GElf_Shdr gs;

		cr_assert(gelf_getshdr(scn, &gs));
		cr_assert_not_null(sh);
		cr_assert_eq(memcmp(&gs, sh, sizeof(gs)), 0, "%s: section %zu", what, idx);
		name_ref = elf_strptr(elf, shstrndx, gs.sh_name);
		name = ukp_elf_shname(e, sh);
		cr_assert_str_eq(name ? name : "(null)", name_ref ? name_ref : "(null)");
		if (name_ref && *name_ref) {
			const Elf64_Shdr *first = ukp_elf_section_named(e, name_ref);

			cr_assert(first && first <= sh, "%s: %s by name", what, name_ref);
		}
		d = elf_rawdata(scn, NULL);
		data = ukp_elf_data(e, sh, &size);
		if (gs.sh_type == SHT_NOBITS || !d || !d->d_buf) {
			cr_assert(gs.sh_type == SHT_NOBITS || !gs.sh_size ? true : !data,
				  "%s: %s has no bytes for libelf", what, name_ref);
		} else {
			cr_assert_not_null(data, "%s: %s", what, name_ref);
			cr_assert_eq(size, d->d_size);
			cr_assert_eq(memcmp(data, d->d_buf, size), 0, "%s: %s's bytes", what, name_ref);
		}
		c->sections++;
		if (gs.sh_type != SHT_SYMTAB && gs.sh_type != SHT_DYNSYM)
			continue;
		/* the symbols, through their SHN_XINDEX table when there is one */
		{
			Elf_Scn *x = NULL, *xs = NULL;
			Elf_Data *sd = elf_getdata(scn, NULL), *xd = NULL;
			const Elf64_Shdr *xsh = NULL;
			size_t n = gs.sh_size / sizeof(Elf64_Sym);

			while ((x = elf_nextscn(elf, x))) {
				GElf_Shdr xg;

				if (gelf_getshdr(x, &xg) && xg.sh_type == SHT_SYMTAB_SHNDX &&
				    xg.sh_link == idx)
					xs = x;
			}
			if (xs) {
				xd = elf_getdata(xs, NULL);
				xsh = ukp_elf_shdr(e, elf_ndxscn(xs));
			}
			cr_assert_eq(ukp_elf_nsyms(e, sh), n, "%s: %s", what, name_ref);
			for (size_t k = 0; k < n; k++) {
				GElf_Sym s_ref;
				Elf64_Sym s;
				Elf32_Word x_ref = 0;
				uint32_t xndx;
				const char *sn, *sn_ref;

				cr_assert(gelf_getsymshndx(sd, xd, (int)k, &s_ref, &x_ref));
				cr_assert(ukp_elf_sym(e, sh, xsh, k, &s, &xndx));
				cr_assert_eq(memcmp(&s, &s_ref, sizeof(s)), 0, "%s: symbol %zu", what, k);
				cr_assert_eq(xndx, s_ref.st_shndx == SHN_XINDEX ? x_ref : s_ref.st_shndx);
				sn_ref = elf_strptr(elf, gs.sh_link, s_ref.st_name);
				sn = ukp_elf_strptr(e, gs.sh_link, s.st_name);
				cr_assert_str_eq(sn ? sn : "(null)", sn_ref ? sn_ref : "(null)");
				c->symbols++;
			}
			cr_assert(!ukp_elf_sym(e, sh, xsh, n, &(Elf64_Sym){ 0 }, &(uint32_t){ 0 }));
		}
	}

	idlen_ref = dwelf_elf_gnu_build_id(elf, &id_ref);
	id = ukp_elf_build_id(e, &idlen);
	if (idlen_ref > 0) {
		cr_assert_not_null(id, "%s: build-id", what);
		cr_assert_eq(idlen, (size_t)idlen_ref);
		cr_assert_eq(memcmp(id, id_ref, idlen), 0);
		c->build_id = true;
	} else {
		cr_assert_null(id, "%s: a build-id libdw does not see", what);
	}
	link_ref = dwelf_elf_gnu_debuglink(elf, &crc_ref);
	link = ukp_elf_debuglink(e, &crc);
	cr_assert_str_eq(link ? link : "(null)", link_ref ? link_ref : "(null)", "%s", what);
	if (link_ref) {
		cr_assert_eq(crc, crc_ref);
		c->debuglink = true;
	}
}

static struct counts compare_file(const char *path)
{
	struct counts c = { 0 };
	struct ukp_elf e, m;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cr_assert(elf && elf_kind(elf) == ELF_K_ELF, "%s", path);
	cr_assert_eq(ukp_elf_open_fd(&e, fd), 0, "%s", path);
	compare_elf(elf, &e, path, &c);
	/* the same file as an image in memory (a MiniDebugInfo's way) */
	cr_assert_eq(ukp_elf_open_mem(&m, e.base, e.size), 0);
	{
		struct counts c2 = { 0 };

		compare_elf(elf, &m, path, &c2);
		cr_assert_eq(c2.symbols, c.symbols);
	}
	ukp_elf_close(&m);
	ukp_elf_close(&e);
	elf_end(elf);
	close(fd);
	return c;
}

static const char *progs(const char *name)
{
	static char buf[PATH_MAX];
	const char *dir = getenv("UKP_TEST_PROGS");

	cr_assert_not_null(dir, "UKP_TEST_PROGS");
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

Test(elf_read, libc_and_its_debug_file)
{
	struct counts c = compare_file("/lib/x86_64-linux-gnu/libc.so.6"), d;
	struct ukp_elf e;
	const uint8_t *id;
	char path[PATH_MAX], *p;
	size_t len;
	int fd;

	cr_assert(c.symbols > 2000 && c.build_id && c.sections > 20, "%zu symbols", c.symbols);
	/* its debug file, by build-id (libc6-dbg: scripts/setup.sh) */
	fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	cr_assert_eq(ukp_elf_open_fd(&e, fd), 0);
	id = ukp_elf_build_id(&e, &len);
	cr_assert(id && len == 20);
	p = path + sprintf(path, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < len; i++)
		p += sprintf(p, "%02x", id[i]);
	strcpy(p, ".debug");
	ukp_elf_close(&e);
	close(fd);
	d = compare_file(path);
	cr_assert(d.symbols > c.symbols && d.build_id, "%s: %zu symbols", path, d.symbols);
}

Test(elf_read, python_nonpie_and_its_library)
{
	struct counts c = compare_file("/usr/bin/python3.11");
	struct ukp_elf e;
	int fd = open("/usr/bin/python3.11", O_RDONLY);

	cr_assert_eq(ukp_elf_open_fd(&e, fd), 0);
	cr_assert_eq(e.ehdr->e_type, ET_EXEC, "python3.11 is not PIE here");
	ukp_elf_close(&e);
	close(fd);
	cr_assert(c.symbols > 1000, "%zu", c.symbols);
	c = compare_file("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0");
	cr_assert(c.symbols > 1000 && c.build_id);
}

Test(elf_read, sqlite)
{
	struct counts c = compare_file("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0");

	cr_assert(c.symbols > 100 && c.build_id);
}

Test(elf_read, stripped_objects_and_their_debug_files)
{
	struct counts c;
	char dbg[PATH_MAX];
	struct ukp_elf e;
	const uint8_t *id;
	char *p;
	size_t len;
	int fd;

	/* by build-id: the debug file under the test's debug root */
	c = compare_file(progs("libukpds_buildid.so"));
	cr_assert(c.build_id);
	fd = open(progs("libukpds_buildid.so"), O_RDONLY);
	cr_assert_eq(ukp_elf_open_fd(&e, fd), 0);
	cr_assert_null(ukp_elf_next_of_type(&e, NULL, SHT_SYMTAB), "stripped");
	id = ukp_elf_build_id(&e, &len);
	cr_assert_not_null(id);
	p = dbg + snprintf(dbg, sizeof(dbg), "%s/.build-id/%02x/", progs("dbgroot_good"), id[0]);
	for (size_t i = 1; i < len; i++)
		p += sprintf(p, "%02x", id[i]);
	strcpy(p, ".debug");
	ukp_elf_close(&e);
	close(fd);
	c = compare_file(dbg);
	cr_assert(c.symbols > 0);
	/* by .gnu_debuglink (no build-id) */
	c = compare_file(progs("libukpds_link.so"));
	cr_assert(c.debuglink && !c.build_id);
	c = compare_file(progs("libukpds_link.debug"));
	cr_assert(c.symbols > 0);
	/* MiniDebugInfo's carrier */
	c = compare_file(progs("libukpds_mini.so"));
	fd = open(progs("libukpds_mini.so"), O_RDONLY);
	cr_assert_eq(ukp_elf_open_fd(&e, fd), 0);
	cr_assert_not_null(ukp_elf_section_named(&e, ".gnu_debugdata"));
	ukp_elf_close(&e);
	close(fd);
}

/* Damaged images: refused, or their parts outside the file not given. */
Test(elf_read, damaged)
{
	int fd = open("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", O_RDONLY);
	struct ukp_elf e, m;
	const Elf64_Shdr *dynsym;
	static uint64_t img[1 << 19];
	size_t size;

	cr_assert_eq(ukp_elf_open_fd(&e, fd), 0);
	cr_assert(e.size <= sizeof(img));
	memcpy(img, e.base, e.size);
	/* cut before the section headers (at the end of the file) */
	cr_assert_eq(ukp_elf_open_mem(&m, img, e.ehdr->e_shoff + 10), -ENOEXEC);
	cr_assert_eq(ukp_elf_open_mem(&m, img, 32), -ENOEXEC);
	/* .dynsym pointing past the end: no bytes, no symbols */
	cr_assert_eq(ukp_elf_open_mem(&m, img, e.size), 0);
	dynsym = ukp_elf_next_of_type(&m, NULL, SHT_DYNSYM);
	cr_assert_not_null(dynsym);
	((Elf64_Shdr *)(uintptr_t)dynsym)->sh_offset = e.size - 8;
	cr_assert_null(ukp_elf_data(&m, dynsym, &size));
	cr_assert_eq(ukp_elf_nsyms(&m, dynsym), 0);
	/* a name past its string table */
	cr_assert_null(ukp_elf_strptr(&m, m.shstrndx, 1u << 30));
	/* not ELF, or 32-bit */
	((unsigned char *)img)[EI_CLASS] = ELFCLASS32;
	cr_assert_eq(ukp_elf_open_mem(&m, img, e.size), -ENOEXEC);
	((unsigned char *)img)[0] = 0;
	cr_assert_eq(ukp_elf_open_mem(&m, img, e.size), -ENOEXEC);
	ukp_elf_close(&e);
	close(fd);
	fd = open("/proc/self/maps", O_RDONLY);
	cr_assert_eq(ukp_elf_open_fd(&e, fd), -ENOEXEC, "a file of size 0 to stat");
	close(fd);
}
