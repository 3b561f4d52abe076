/* SPDX-License-Identifier: MIT */
/*
 * file_key.h - the part of a cache entry's key (base/disk_cache.h) that
 * names an ELF file and the code that decided what the entry holds: the
 * file as stat() saw it, its machine and build-id, and the build-id of
 * the library (or the program it is linked into) that made the entry.
 * A new build of the library makes new entries: what it reads out of a
 * file may differ.
 *
 * Context: [reg].
 */
#ifndef UKP_FILE_KEY_H
#define UKP_FILE_KEY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/disk_cache.h"
#include "symbols/elf_read.h"

#define UKP_FILE_KEY_ID_MAX 64

struct ukp_file_key {
	struct ukp_disk_cache_file file;
	uint32_t machine, build_id_len, self_id_len, pad;
	uint8_t build_id[UKP_FILE_KEY_ID_MAX];
	uint8_t self_id[UKP_FILE_KEY_ID_MAX];
};

/* [reg] The key of the file elf was opened from, which st describes
 * (zeroed first): false when the library's own build-id is not known
 * (no key is then safe). */
bool ukp_file_key_of(const struct ukp_elf *elf, const struct stat *st, struct ukp_file_key *k);

#endif /* UKP_FILE_KEY_H */
