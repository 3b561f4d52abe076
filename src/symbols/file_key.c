// SPDX-License-Identifier: MIT
/*
 * file_key.c - an ELF file's part of a cache entry's key (file_key.h).
 *
 * [reg] everything here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <string.h>

#include "symbols/file_key.h"
#include "base/sys.h"
#include "symbols/symbols.h"

/* [reg] The build-id of the object holding this code (the library, or
 * the program it is linked into): false when it has none. */
static bool self_id(uint8_t *out, uint32_t *len)
{
	static uint8_t id[UKP_FILE_KEY_ID_MAX];
	static size_t idlen;
	static int known; /* 0 not yet, 1 found, -1 none */
	const struct ukp_object *self;

	if (!known) {
		struct ukp_elf elf;
		const uint8_t *p;
		int fd = -1;

		known = -1;
		self = ukp_object_of((uintptr_t)self_id);
		if (self && self->path && self->path[0])
			fd = ukp_sys_open(self->path, O_RDONLY);
		if (fd >= 0 && !ukp_elf_open_fd(&elf, fd)) {
			p = ukp_elf_build_id(&elf, &idlen);
			if (p && idlen && idlen <= UKP_FILE_KEY_ID_MAX) {
				memcpy(id, p, idlen);
				known = 1;
			}
			ukp_elf_close(&elf);
		}
		if (fd >= 0)
			ukp_sys_close(fd);
	}
	if (known < 0)
		return false;
	memcpy(out, id, idlen);
	*len = (uint32_t)idlen;
	return true;
}

/* [reg] */
bool ukp_file_key_of(const struct ukp_elf *elf, const struct stat *st, struct ukp_file_key *k)
{
	const uint8_t *id;
	size_t idlen = 0;

	memset(k, 0, sizeof(*k));
	if (!self_id(k->self_id, &k->self_id_len))
		return false;
	ukp_disk_cache_file_of(st, &k->file);
	k->machine = elf->ehdr->e_machine;
	id = ukp_elf_build_id(elf, &idlen);
	if (id && idlen <= UKP_FILE_KEY_ID_MAX) {
		memcpy(k->build_id, id, idlen);
		k->build_id_len = (uint32_t)idlen;
	}
	return true;
}
