// SPDX-License-Identifier: MIT
/*
 * dwarf_go.c - $goid, the current goroutine's id: a word of the Go
 * runtime's g (the goroutine), which Go code keeps in a register. Where
 * in g the id is (goid) is the runtime's business and changes with Go
 * versions: it is taken from the program's DWARF (the runtime.g
 * structure's goid member), else from the Go version the program was
 * built with (its .go.buildinfo) for the versions whose layout is known;
 * else $goid is refused. The agent reads the word (agent/fetch.c) in Go
 * code only (agent/probes.c).
 *
 * Context: the CLI's, as the SPECs are parsed.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dwarf_cli.h"

/* goid's offset in runtime.g on 64-bit targets, by Go's minor version:
 * from 1.17 (the register ABI, which $goid needs) to 1.22 the fields
 * before it did not change (stack, two guards, _panic, _defer, m, a
 * seven-word gobuf, four words, two uint32s) */
#define GO_GOID_OFF_117 152
#define GO_KNOWN_FIRST 17
#define GO_KNOWN_LAST 22

/* The data member location of runtime.g's goid in dbg, or -1. */
static long dwarf_goid(Dwarf *dbg)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die, m;
		const char *name;

		if (!dwarf_offdie(dbg, off + hsize, &cu) || !(name = dwarf_diename(&cu)) ||
		    strcmp(name, "runtime") || dwarf_child(&cu, &die) != 0) {
			off = next;
			continue;
		}
		do {
			Dwarf_Attribute a;
			Dwarf_Word loc;

			if (dwarf_tag(&die) != DW_TAG_structure_type || !(name = dwarf_diename(&die)) ||
			    strcmp(name, "runtime.g") || dwarf_child(&die, &m) != 0)
				continue;
			do {
				if (dwarf_tag(&m) == DW_TAG_member && (name = dwarf_diename(&m)) &&
				    !strcmp(name, "goid") &&
				    dwarf_attr(&m, DW_AT_data_member_location, &a) &&
				    dwarf_formudata(&a, &loc) == 0)
					return (long)loc;
			} while (dwarf_siblingof(&m, &m) == 0);
		} while (dwarf_siblingof(&die, &die) == 0);
		off = next;
	}
	return -1;
}

/* The Go version (go1.N...) in path's .go.buildinfo (the form of Go 1.18
 * and later: the version string inline after the 32-byte header), into
 * buf; false when there is none. */
static bool go_version(const char *path, char *buf, size_t len)
{
	static const char magic[] = "\xff Go buildinf:";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstr;
	bool found = false;

	if (elf && elf_getshdrstrndx(elf, &shstr) == 0) {
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			const unsigned char *p;
			const char *name;
			size_t n, vlen, i, shift;

			if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstr, sh.sh_name)) ||
			    strcmp(name, ".go.buildinfo") || !(d = elf_getdata(scn, NULL)) ||
			    d->d_size < 33)
				continue;
			p = d->d_buf;
			n = d->d_size;
			if (memcmp(p, magic, 14) || !(p[15] & 2))
				break; /* (older: the version behind pointers) */
			for (i = 32, vlen = 0, shift = 0; i < n && shift < 28; i++, shift += 7) {
				vlen |= (size_t)(p[i] & 0x7f) << shift;
				if (!(p[i] & 0x80))
					break;
			}
			i++;
			if (i >= n || vlen > n - i || vlen >= len)
				break;
			memcpy(buf, p + i, vlen);
			buf[vlen] = '\0';
			found = !strncmp(buf, "go1.", 4);
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return found;
}

/* goid's offset in the runtime.g of the Go program obj, or -1 with *e. */
static long goid_offset(const char *obj, const struct ukp_dw_where *w, int col,
			struct ukp_dw_err *e)
{
	struct ukp_dw_err dwe;
	struct ukp_dw *dw = ukp_dw_open(obj, w, col, &dwe);
	char *path, ver[64];
	long off = dw ? dwarf_goid(dw->dbg) : -1;
	unsigned long minor;

	if (off >= 0)
		return off;
	path = ukp_dw_object_file(obj, w);
	if (!path) {
		ukp_dw_fail(e, col, "object %s not found (give its path)", obj);
		return -1;
	}
	if (!go_version(path, ver, sizeof(ver))) {
		ukp_dw_fail(e, col, "$goid: %s says no Go version (.go.buildinfo) and has no "
			    "DWARF naming runtime.g: not a Go program of Go 1.18 or later", path);
		free(path);
		return -1;
	}
	minor = strtoul(ver + 4, NULL, 10);
	if (minor < GO_KNOWN_FIRST || minor > GO_KNOWN_LAST) {
		ukp_dw_fail(e, col, "$goid: where %s keeps a goroutine's id is not known without "
			    "its DWARF (%s was built without it: -ldflags=-w)", ver, path);
		free(path);
		return -1;
	}
	free(path);
	return GO_GOID_OFF_117;
}

int ukp_dw_go_goid(struct ukp_spec *specs, int n, const struct ukp_dw_where *w)
{
	for (int i = 0; i < n; i++) {
		struct ukp_spec *s = &specs[i];
		const char *obj = s->object;
		struct ukp_dw_err e = { 0, "" };
		long off = -2;

		for (int k = 0; k < s->nargs; k++) {
			struct ukp_fetcharg *fa = &s->args[k];

			if (fa->base != UKP_FA_GOID)
				continue;
			if (off == -2) {
				if (!obj && w->cmd && w->cmd[0]) {
					obj = strrchr(w->cmd[0], '/');
					obj = obj ? obj + 1 : w->cmd[0];
				}
				if (!obj)
					off = ukp_dw_fail(&e, fa->col, "$goid: name the Go program "
							  "(OBJ:SYMBOL)");
				else
					off = goid_offset(obj, w, fa->col, &e);
			}
			if (off < 0) {
				if (w->err)
					w->err(i, e.col, e.msg, w->err_arg);
				else
					ukp_spec_err(s->text, e.col, "%s", e.msg);
				return -1;
			}
			fa->param = (unsigned long)off;
		}
	}
	return 0;
}
