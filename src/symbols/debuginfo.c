// SPDX-License-Identifier: MIT
/*
 * debuginfo.c - where the symbols of an object stripped of .symtab are
 * (see debuginfo.h): the separate debug file by build-id, by
 * .gnu_debuglink, or the MiniDebugInfo of .gnu_debugdata (liblzma).
 *
 * Context: [reg] only; nothing here prints. Only -ENOMEM is an error:
 * a missing, unreadable or mismatched file just means no extra symbols.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/debuginfo.h"

#define UKP_DEBUG_ROOT "/usr/lib/debug"
/* A MiniDebugInfo larger than this is not one (Fedora's are tens of KiB). */
#define UKP_MINIDEBUG_MAX (256u << 20)

static const char *debug_root = UKP_DEBUG_ROOT;

void ukp_debuginfo_set_root(const char *dir)
{
	debug_root = dir ? dir : UKP_DEBUG_ROOT;
}

/* The section of elf named name, or NULL. */
static Elf_Scn *section_named(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static bool has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size)
			return true;
	}
	return false;
}

/* The NT_GNU_BUILD_ID of elf: *len bytes at the returned pointer (into
 * elf's data), or NULL. */
static const unsigned char *build_id(Elf *elf, size_t *len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz) {
				*len = nh.n_descsz;
				return (const unsigned char *)data->d_buf + desc_off;
			}
		}
	}
	return NULL;
}

/* The IEEE CRC-32 that .gnu_debuglink records (zlib's crc32). */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	static uint32_t table[256];
	size_t i;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;
			int k;

			for (k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	crc = ~crc;
	for (i = 0; i < n; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static bool file_crc_is(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uint32_t crc = 0;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) != 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32_update(crc, buf, (size_t)n);
	return n == 0 && crc == want;
}

/*
 * Open path as the debug file of the object whose build-id is id (NULL
 * when it has none: then the file's CRC must be crc). True when it is
 * one, with src->elf and src->fd set.
 */
static bool try_debug_file(const char *path, const unsigned char *id, size_t idlen,
			   bool check_crc, uint32_t crc, struct ukp_debugsrc *src)
{
	const unsigned char *did;
	size_t dlen = 0;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || !has_symtab(elf))
		goto no;
	if (id) {
		did = build_id(elf, &dlen);
		if (!did || dlen != idlen || memcmp(did, id, idlen))
			goto no;
	} else if (!check_crc || !file_crc_is(fd, crc)) {
		goto no;
	}
	src->elf = elf;
	src->fd = fd;
	return true;
no:
	if (elf)
		elf_end(elf);
	close(fd);
	return false;
}

/* root/.build-id/NN/REST.debug */
static bool try_build_id(const unsigned char *id, size_t len, struct ukp_debugsrc *src)
{
	char path[PATH_MAX];
	size_t pos, i;
	int n;

	if (len < 2)
		return false;
	n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", debug_root, id[0]);
	if (n < 0 || (size_t)n + 2 * len + 8 >= sizeof(path))
		return false;
	pos = (size_t)n;
	for (i = 1; i < len; i++)
		pos += (size_t)sprintf(path + pos, "%02x", id[i]);
	strcpy(path + pos, ".debug");
	return try_debug_file(path, id, len, false, 0, src);
}

/* The file .gnu_debuglink names, where gdb looks for it: next to the
 * object, in .debug/ next to it, and under the debug root. */
static bool try_debuglink(Elf *elf, const char *objpath, const unsigned char *id, size_t idlen,
			  struct ukp_debugsrc *src)
{
	Elf_Scn *scn = section_named(elf, ".gnu_debuglink");
	char dir[PATH_MAX], path[PATH_MAX];
	const char *name, *slash;
	Elf_Data *data;
	size_t nlen, crc_off;
	uint32_t crc;
	int k;

	if (!scn || !objpath || !(data = elf_getdata(scn, NULL)) || !data->d_buf)
		return false;
	name = data->d_buf;
	nlen = strnlen(name, data->d_size);
	crc_off = (nlen + 4) & ~(size_t)3;
	if (!nlen || nlen == data->d_size || crc_off + 4 > data->d_size || strchr(name, '/'))
		return false;
	memcpy(&crc, (const char *)data->d_buf + crc_off, 4);
	if (elf_getident(elf, NULL)[EI_DATA] != ELFDATA2LSB)
		crc = __builtin_bswap32(crc);
	slash = strrchr(objpath, '/');
	if (!slash || (size_t)(slash - objpath) >= sizeof(dir))
		return false;
	memcpy(dir, objpath, (size_t)(slash - objpath));
	dir[slash - objpath] = '\0';
	for (k = 0; k < 3; k++) {
		int n = k == 0 ? snprintf(path, sizeof(path), "%s/%s", dir, name) :
			k == 1 ? snprintf(path, sizeof(path), "%s/.debug/%s", dir, name) :
				 snprintf(path, sizeof(path), "%s%s/%s", debug_root, dir, name);

		/* never the object itself (a debuglink naming its own file) */
		if (n > 0 && (size_t)n < sizeof(path) && strcmp(path, objpath) &&
		    try_debug_file(path, id, idlen, true, crc, src))
			return true;
	}
	return false;
}

/* Decompress .gnu_debugdata into src->image and open it. -ENOENT when
 * there is none or it is not an xz-compressed ELF. */
static int try_gnu_debugdata(Elf *elf, struct ukp_debugsrc *src)
{
	Elf_Scn *scn = section_named(elf, ".gnu_debugdata");
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = 0, len = 0;
	unsigned char *out = NULL;
	Elf_Data *data;
	lzma_ret r;
	GElf_Ehdr eh;
	int err = -ENOENT;

	if (!scn || !(data = elf_rawdata(scn, NULL)) || !data->d_buf || !data->d_size)
		return -ENOENT;
	if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = data->d_buf;
	strm.avail_in = data->d_size;
	do {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : data->d_size * 4 + 4096;
			unsigned char *n;

			if (ncap > UKP_MINIDEBUG_MAX)
				goto out;
			n = realloc(out, ncap);
			if (!n) {
				err = -ENOMEM;
				goto out;
			}
			out = n;
			cap = ncap;
		}
		strm.next_out = out + len;
		strm.avail_out = cap - len;
		r = lzma_code(&strm, LZMA_FINISH);
		len = cap - strm.avail_out;
	} while (r == LZMA_OK);
	if (r == LZMA_MEM_ERROR) {
		err = -ENOMEM;
		goto out;
	}
	if (r != LZMA_STREAM_END)
		goto out;
	src->elf = elf_memory((char *)out, len);
	if (!src->elf || elf_kind(src->elf) != ELF_K_ELF || !gelf_getehdr(src->elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || !has_symtab(src->elf)) {
		if (src->elf)
			elf_end(src->elf);
		src->elf = NULL;
		goto out;
	}
	src->image = out;
	out = NULL;
	err = 0;
out:
	lzma_end(&strm);
	free(out);
	return err;
}

int ukp_debuginfo_open(Elf *elf, const char *path, struct ukp_debugsrc *src)
{
	const unsigned char *id;
	size_t idlen = 0;
	int err;

	memset(src, 0, sizeof(*src));
	src->fd = -1;
	id = build_id(elf, &idlen);
	if (id && try_build_id(id, idlen, src)) {
		src->kind = "build-id";
		return 0;
	}
	if (try_debuglink(elf, path, id, idlen, src)) {
		src->kind = "debuglink";
		return 0;
	}
	err = try_gnu_debugdata(elf, src);
	if (!err)
		src->kind = "gnu_debugdata";
	return err;
}

void ukp_debuginfo_close(struct ukp_debugsrc *src)
{
	if (src->elf)
		elf_end(src->elf);
	if (src->fd >= 0)
		close(src->fd);
	free(src->image);
	memset(src, 0, sizeof(*src));
	src->fd = -1;
}
