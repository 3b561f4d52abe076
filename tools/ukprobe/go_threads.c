/* SPDX-License-Identifier: MIT */
/*
 * go_threads.c - is the program a Go program whose threads are the Go
 * runtime's own? Built without cgo, Go starts its threads with a raw
 * clone() and its own thread pointer: the C library knows nothing of
 * them, and the agent (which runs on the C library, with thread-local
 * state of its own) cannot run in them. Such a program may still be
 * linked dynamically (-linkmode=external): it has a loader, so the
 * static-program check lets it through, and it crashed at its first
 * probe hit. With cgo, Go makes its threads with pthread_create(),
 * which it then imports: those programs are traced.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>

#include "target.h"

/* [init] fd: the program's file. */
bool ukp_go_without_cgo(int fd)
{
	bool go = false, cgo = false;
	Elf_Scn *scn = NULL, *dynsym = NULL;
	size_t shstrndx;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return false;
	if (elf_getshdrstrndx(e, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid") ||
			     !strcmp(name, ".gopclntab")))
			go = true;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	if (go && dynsym) {
		GElf_Shdr sh;
		Elf_Data *d = gelf_getshdr(dynsym, &sh) ? elf_getdata(dynsym, NULL) : NULL;
		size_t i, n = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;

		for (i = 0; i < n && !cgo; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx != SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			cgo = name && !strcmp(name, "pthread_create");
		}
	}
out:
	elf_end(e);
	return go && !cgo;
}
