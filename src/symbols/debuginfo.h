/* SPDX-License-Identifier: MIT */
/*
 * debuginfo.h - the symbols of an ELF object stripped of .symtab: its
 * separate debug file, as gdb finds it (/usr/lib/debug/.build-id/NN/REST.debug
 * matched by the object's build-id, else the file its .gnu_debuglink
 * names), or the MiniDebugInfo ELF embedded xz-compressed in its
 * .gnu_debugdata section.
 *
 * A debug file has the object's layout: its code sections are NOBITS but
 * its symbol values are the object's. One whose build-id (or, for an
 * object without build-id, the debuglink's CRC) does not match is ignored.
 *
 * Context: [reg] (registration time; allocates, opens files).
 */
#ifndef UKP_DEBUGINFO_H
#define UKP_DEBUGINFO_H

#include <stdbool.h>
#include <sys/stat.h>

#include "symbols/elf_read.h"

/* An open source of extra symbols. */
struct ukp_debugsrc {
	struct ukp_elf elf;     /* the library's reader (elf_read.h) */
	int fd;                 /* the debug file, or -1 */
	void *image;            /* the decompressed MiniDebugInfo, or NULL */
	const char *kind;       /* "build-id", "debuglink" or "gnu_debugdata" */
};

/*
 * [reg] The extra symbols of elf, the object file at path (a real path:
 * the debuglink is searched next to it). Returns 0 with *src open,
 * -ENOENT when there is none (or none that matches), -ENOMEM.
 */
int ukp_debuginfo_open(const struct ukp_elf *elf, const char *path, struct ukp_debugsrc *src);
void ukp_debuginfo_close(struct ukp_debugsrc *src);

/* [reg] The file where ukp_debuginfo_open looks first (by build-id), as
 * stat() sees it, without opening it: true when there is one (a cache
 * keyed by it need not open it, sym_cache.h). */
bool ukp_debuginfo_by_build_id(const struct ukp_elf *elf, struct stat *st);

/* [reg] The directory of separate debug files, "/usr/lib/debug" unless a
 * test points it elsewhere (NULL: back to the default). */
void ukp_debuginfo_set_root(const char *dir);

#endif /* UKP_DEBUGINFO_H */
