// SPDX-License-Identifier: MIT
/*
 * debuginfo.c - where the symbols of an object stripped of .symtab are
 * (see debuginfo.h): the separate debug file by build-id, by
 * .gnu_debuglink, or the MiniDebugInfo of .gnu_debugdata (liblzma). The
 * files are read with the library's ELF reader (elf_read.h), not libelf.
 *
 * Context: [reg] only; nothing here prints. Only -ENOMEM is an error:
 * a missing, unreadable or mismatched file just means no extra symbols.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifndef UKP_FREE
#include <lzma.h>
#endif
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/debuginfo.h"
#include "base/sys.h"

#define UKP_DEBUG_ROOT "/usr/lib/debug"
/* A MiniDebugInfo larger than this is not one (Fedora's are tens of KiB). */
#define UKP_MINIDEBUG_MAX (256u << 20)

static const char *debug_root = UKP_DEBUG_ROOT;

void ukp_debuginfo_set_root(const char *dir)
{
	debug_root = dir ? dir : UKP_DEBUG_ROOT;
}


static bool has_symtab(const struct ukp_elf *elf)
{
	const Elf64_Shdr *sh = NULL;

	while ((sh = ukp_elf_next_of_type(elf, sh, SHT_SYMTAB)))
		if (sh->sh_size)
			return true;
	return false;
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
	long n;

	if (ukp_sys_lseek(fd, 0, SEEK_SET) != 0)
		return false;
	while ((n = ukp_sys_read(fd, buf, sizeof(buf))) > 0)
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
	struct ukp_elf elf;
	size_t dlen = 0;
	int fd;

	fd = ukp_sys_open(path, O_RDONLY);
	if (fd < 0)
		return false;
	if (ukp_elf_open_fd(&elf, fd)) {
		ukp_sys_close(fd);
		return false;
	}
	if (!has_symtab(&elf))
		goto no;
	if (id) {
		did = ukp_elf_build_id(&elf, &dlen);
		if (!did || dlen != idlen || memcmp(did, id, idlen))
			goto no;
	} else if (!check_crc || !file_crc_is(fd, crc)) {
		goto no;
	}
	src->elf = elf;
	src->fd = fd;
	return true;
no:
	ukp_elf_close(&elf);
	ukp_sys_close(fd);
	return false;
}

/* root/.build-id/NN/REST.debug, for the build-id id[len], into path */
static bool build_id_path(const unsigned char *id, size_t len, char *path, size_t size)
{
	size_t pos, i;
	int n;

	if (len < 2)
		return false;
	n = snprintf(path, size, "%s/.build-id/%02x/", debug_root, id[0]);
	if (n < 0 || (size_t)n + 2 * len + 8 >= size)
		return false;
	pos = (size_t)n;
	for (i = 1; i < len; i++)
		pos += (size_t)sprintf(path + pos, "%02x", id[i]);
	strcpy(path + pos, ".debug");
	return true;
}

static bool try_build_id(const unsigned char *id, size_t len, struct ukp_debugsrc *src)
{
	char path[PATH_MAX];

	return build_id_path(id, len, path, sizeof(path)) &&
	       try_debug_file(path, id, len, false, 0, src);
}

/* [reg] */
bool ukp_debuginfo_by_build_id(const struct ukp_elf *elf, struct stat *st)
{
	const unsigned char *id;
	char path[PATH_MAX];
	size_t idlen = 0;

	id = ukp_elf_build_id(elf, &idlen);
	return id && build_id_path(id, idlen, path, sizeof(path)) && !ukp_sys_stat(path, st) &&
	       S_ISREG(st->st_mode);
}

/* The file .gnu_debuglink names, where gdb looks for it: next to the
 * object, in .debug/ next to it, and under the debug root. */
static bool try_debuglink(const struct ukp_elf *elf, const char *objpath,
			  const unsigned char *id, size_t idlen, struct ukp_debugsrc *src)
{
	char dir[PATH_MAX], path[PATH_MAX];
	const char *name, *slash;
	uint32_t crc;
	int k;

	if (!objpath || !(name = ukp_elf_debuglink(elf, &crc)) || strchr(name, '/'))
		return false;
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
static int try_gnu_debugdata(const struct ukp_elf *elf, struct ukp_debugsrc *src)
{
#ifdef UKP_FREE
	/* (the freestanding agent links no xz decoder: the symbol tables
	 * of an object that has only MiniDebugInfo are not read there) */
	(void)elf;
	(void)src;
	return -ENOENT;
#else
	const Elf64_Shdr *sh = ukp_elf_section_named(elf, ".gnu_debugdata");
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = 0, len = 0, dsize = 0;
	unsigned char *out = NULL;
	const void *data;
	lzma_ret r;
	int err = -ENOENT;

	if (!sh || !(data = ukp_elf_data(elf, sh, &dsize)) || !dsize)
		return -ENOENT;
	if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = data;
	strm.avail_in = dsize;
	do {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : dsize * 4 + 4096;
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
	/* (malloc's memory: aligned as the reader wants it) */
	if (ukp_elf_open_mem(&src->elf, out, len))
		goto out;
	if (!has_symtab(&src->elf)) {
		ukp_elf_close(&src->elf);
		goto out;
	}
	src->image = out;
	out = NULL;
	err = 0;
out:
	lzma_end(&strm);
	free(out);
	return err;
#endif
}

int ukp_debuginfo_open(const struct ukp_elf *elf, const char *path, struct ukp_debugsrc *src)
{
	const unsigned char *id;
	size_t idlen = 0;
	int err;

	memset(src, 0, sizeof(*src));
	src->fd = -1;
	id = ukp_elf_build_id(elf, &idlen);
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
	ukp_elf_close(&src->elf);
	if (src->fd >= 0)
		ukp_sys_close(src->fd);
	free(src->image);
	memset(src, 0, sizeof(*src));
	src->fd = -1;
}
