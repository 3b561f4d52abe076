/* SPDX-License-Identifier: MIT */
/*
 * search_path.h - the directories the dynamic loader searches for a
 * library name on behalf of an object, read from the object's dynamic
 * section in memory (search_path.c): what dlinfo(RTLD_DI_SERINFO) lists
 * before the system directories, without asking the loader. Built into
 * libukprobes (module_file.c: the program's search path) and so into the
 * agent (interpose.c: a dlopen() caller's).
 */
#ifndef UKP_COMMON_SEARCH_PATH_H
#define UKP_COMMON_SEARCH_PATH_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The object loaded at bias with program headers ph[phnum] (in memory):
 * fn(dir, len, arg) for each directory of its DT_RPATH (when it has no
 * DT_RUNPATH), of llp (LD_LIBRARY_PATH as the loader read it at the
 * start; NULL in secure mode) and of its DT_RUNPATH, in the loader's
 * order, until fn returns non-zero, which is returned; 0 after the last.
 * $ORIGIN (and ${ORIGIN}) becomes origin (the object's directory; a
 * directory naming it is skipped when origin is NULL), $LIB lib_dir; a
 * directory with another token ($PLATFORM) is skipped. An empty entry is
 * the current directory, as for the loader. The system directories are
 * not listed. No allocation, no system call: any context that may read
 * the object's memory.
 */
int ukp_search_dirs(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, const char *origin,
		    const char *lib_dir, const char *llp,
		    int (*fn)(const char *dir, size_t len, void *arg), void *arg);

#endif
