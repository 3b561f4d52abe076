/* SPDX-License-Identifier: MIT */
/*
 * dwarf_obj.c - an OBJ name's file and its DWARF (dwarf_cli.h). The file: a
 * path as it is; the command ukprobe runs when OBJ names it; the file a
 * traced process (-p) has mapped by that name; else what the command's
 * RUNPATH, or the loader's directories hold (LD_LIBRARY_PATH, the system
 * directories).
 * Its DWARF: the file's own, or its separate debug file as libdwfl finds
 * it (/usr/lib/debug/.build-id/xx/yyyy.debug, .gnu_debuglink), compressed
 * sections too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dwarf_cli.h"

static struct ukp_dw *opened;

int ukp_dw_fail(struct ukp_dw_err *e, int col, const char *fmt, ...)
{
	va_list ap;

	e->col = col;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static char *regular_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, R_OK))
		return NULL;
	return realpath(path, NULL);
}

/* The file pid has mapped whose name (or real name) is obj. */
static char *mapped_file(pid_t pid, const char *obj)
{
	char maps[64], line[PATH_MAX + 128], *found = NULL;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		char *real;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (!strcmp(base_name(path), obj))
			found = regular_file(path);
		else if ((real = realpath(path, NULL))) {
			if (!strcmp(base_name(real), obj))
				found = real;
			else
				free(real);
		}
	}
	fclose(f);
	return found;
}

/* obj in the directories the loader searches for ukprobe itself: its
 * LD_LIBRARY_PATH and the system directories. */
static char *library_file(const char *obj)
{
	Dl_serinfo size, *info;
	char *found = NULL, buf[PATH_MAX];
	void *self = dlopen(NULL, RTLD_LAZY);
	size_t i;

	if (!self)
		return NULL;
	if (!dlinfo(self, RTLD_DI_SERINFOSIZE, &size) && (info = malloc(size.dls_size))) {
		info->dls_size = size.dls_size;
		info->dls_cnt = size.dls_cnt;
		if (!dlinfo(self, RTLD_DI_SERINFO, info))
			for (i = 0; i < info->dls_cnt && !found; i++) {
				snprintf(buf, sizeof(buf), "%s/%s", info->dls_serpath[i].dls_name, obj);
				found = regular_file(buf);
			}
		free(info);
	}
	dlclose(self);
	return found;
}

/* obj in the RUNPATH (or RPATH) of the program at path, $ORIGIN
 * replaced: where the program's dlopen() finds its plugins. */
static char *runpath_file(const char *path, const char *obj)
{
	char *found = NULL, origin[PATH_MAX], buf[PATH_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	snprintf(origin, sizeof(origin), "%s", path);
	*strrchr(origin, '/') = '\0';
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(data = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; !found && i < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 1); i++) {
			GElf_Dyn dyn;
			const char *rp, *c;

			if (!gelf_getdyn(data, (int)i, &dyn) ||
			    (dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH) ||
			    !(rp = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)))
				continue;
			for (c = rp; *c && !found; c += strcspn(c, ":"), c += *c == ':') {
				size_t n = strcspn(c, ":");

				int len = n >= 7 && !strncmp(c, "$ORIGIN", 7)
						  ? snprintf(buf, sizeof(buf), "%s%.*s/%s", origin,
							     (int)(n - 7), c + 7, obj)
						  : snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, c, obj);

				if (len > 0 && (size_t)len < sizeof(buf))
					found = regular_file(buf);
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

char *ukp_dw_object_file(const char *obj, const struct ukp_dw_where *w)
{
	char *path = NULL;
	int i;

	if (strchr(obj, '/'))
		return regular_file(obj);
	for (i = 0; w && i < w->npids && !path; i++)
		path = mapped_file(w->pids[i], obj);
	/* the command, by the name it was given (its real name is the
	 * agent's business: a symlink's) */
	if (!path && w && w->cmd && w->cmd[0] && !strcmp(base_name(w->cmd[0]), obj))
		path = strchr(w->cmd[0], '/') ? realpath(w->cmd[0], NULL) : ukp_find_command(w->cmd[0]);
	if (!path && w && w->cmd && w->cmd[0] && strchr(w->cmd[0], '/')) {
		char *prog = realpath(w->cmd[0], NULL);

		if (prog)
			path = runpath_file(prog, obj);
		free(prog);
	}
	if (!path)
		path = library_file(obj);
	return path;
}

static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct ukp_dw *ukp_dw_open(const char *obj, const struct ukp_dw_where *w, int col,
			   struct ukp_dw_err *e)
{
	struct ukp_dw *dw;
	char *path;

	for (dw = opened; dw; dw = dw->next)
		if (!strcmp(dw->name, obj))
			return dw;
	path = ukp_dw_object_file(obj, w);
	if (!path) {
		ukp_dw_fail(e, col, "object %s not found (give its path)", obj);
		return NULL;
	}
	dw = calloc(1, sizeof(*dw));
	if (!dw || !(dw->name = strdup(obj))) {
		free(dw);
		free(path);
		ukp_dw_fail(e, col, "out of memory");
		return NULL;
	}
	dw->path = path;
	dw->dwfl = dwfl_begin(&offline_callbacks);
	if (dw->dwfl) {
		dwfl_report_begin(dw->dwfl);
		dw->mod = dwfl_report_offline(dw->dwfl, base_name(path), path, -1);
		dwfl_report_end(dw->dwfl, NULL, NULL);
	}
	if (dw->mod)
		dw->dbg = dwfl_module_getdwarf(dw->mod, &dw->bias);
	if (!dw->dbg) {
		ukp_dw_fail(e, col, "%s has no debug information (DWARF), nor a debug file "
			    "found by build-id or .gnu_debuglink (install its -dbg or -dbgsym package)",
			    path);
		if (dw->dwfl)
			dwfl_end(dw->dwfl);
		free(dw->rows);
		free(dw->name);
		free(dw->path);
		free(dw);
		return NULL;
	}
	dw->cfi = dwfl_module_eh_cfi(dw->mod, &dw->cfi_bias);
	if (!dw->cfi)
		dw->cfi = dwfl_module_dwarf_cfi(dw->mod, &dw->cfi_bias);
	dw->next = opened;
	opened = dw;
	return dw;
}

void ukp_dw_close_all(void)
{
	while (opened) {
		struct ukp_dw *dw = opened;

		opened = dw->next;
		dwfl_end(dw->dwfl);
		free(dw->rows);
		free(dw->name);
		free(dw->path);
		free(dw);
	}
}
