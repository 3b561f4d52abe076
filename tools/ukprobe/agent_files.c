/* SPDX-License-Identifier: MIT */
/*
 * agent_files.c - the files a process in another root (a container, a
 * chroot) needs to load the agent, which are not there: the agent and
 * the libraries it needs, found as the loader finds them for ukprobe
 * (RUNPATH, LD_LIBRARY_PATH, the system directories), without the C
 * library's own (the process has its C library: the agent uses it). In
 * the order to load them (inject.c): each after those it needs, so that
 * the loader finds each needed one already loaded, by its soname.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "target.h"

#define FILES_MAX UKP_AGENT_FILES_MAX
#define DEPTH_MAX 8

struct files {
	char *paths[FILES_MAX], *names[FILES_MAX];
	int n;
};

/* Part of the GNU C library: every process that has a loader has them. */
static bool c_library(const char *name)
{
	static const char *const libc[] = { "libc.so.", "ld-linux", "libpthread.so.", "libdl.so.",
					    "librt.so.", "libm.so.", "libresolv.so.", "libutil.so." };
	size_t i;

	for (i = 0; i < sizeof(libc) / sizeof(libc[0]); i++)
		if (!strncmp(name, libc[i], strlen(libc[i])))
			return true;
	return false;
}

static bool regular(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* name in the colon-separated dirs ($ORIGIN: origin), into out. */
static bool in_dirs(const char *dirs, const char *origin, const char *name, char *out, size_t len)
{
	while (dirs && *dirs) {
		size_t n = strcspn(dirs, ":");
		char dir[PATH_MAX / 2];

		if (n && n < sizeof(dir)) {
			memcpy(dir, dirs, n);
			dir[n] = '\0';
			if (!strncmp(dir, "$ORIGIN", 7))
				snprintf(out, len, "%s%s/%s", origin, dir + 7, name);
			else
				snprintf(out, len, "%s/%s", dir, name);
			if (regular(out))
				return true;
		}
		dirs += n + (dirs[n] == ':');
	}
	return false;
}

/* name where the loader would find it for ukprobe, after runpath. */
static bool find_lib(const char *name, const char *runpath, const char *origin, char *out,
		     size_t len)
{
	Dl_serinfo size, *info;
	void *self;
	bool found = false;
	unsigned int i;

	if (in_dirs(runpath, origin, name, out, len) ||
	    in_dirs(getenv("LD_LIBRARY_PATH"), origin, name, out, len))
		return true;
	self = dlopen(NULL, RTLD_LAZY);
	if (!self)
		return false;
	if (!dlinfo(self, RTLD_DI_SERINFOSIZE, &size) && (info = malloc(size.dls_size))) {
		info->dls_size = size.dls_size;
		info->dls_cnt = size.dls_cnt;
		if (!dlinfo(self, RTLD_DI_SERINFO, info))
			for (i = 0; i < info->dls_cnt && !found; i++) {
				snprintf(out, len, "%s/%s", info->dls_serpath[i].dls_name, name);
				found = regular(out);
			}
		free(info);
	}
	dlclose(self);
	return found;
}

static bool listed(const struct files *f, const char *name)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->names[i], name))
			return true;
	return false;
}

static bool add(struct files *f, const char *path, const char *name)
{
	if (f->n == FILES_MAX) {
		ukp_err("the agent needs more than %d libraries", FILES_MAX);
		return false;
	}
	f->paths[f->n] = strdup(path);
	f->names[f->n] = strdup(name);
	if (!f->paths[f->n] || !f->names[f->n]) {
		free(f->paths[f->n]);
		free(f->names[f->n]);
		ukp_err("out of memory");
		return false;
	}
	f->n++;
	return true;
}

/* The libraries path needs (DT_NEEDED, not the C library's), each after
 * its own, then path itself under name. */
static bool walk(struct files *f, const char *path, const char *name, int depth)
{
	char *needed[64], runpath[PATH_MAX] = "", origin[PATH_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC), nneeded = 0, i;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	bool ok = true;

	if (fd < 0 || depth > DEPTH_MAX) {
		ukp_err("cannot read %s, which the agent needs", path);
		if (fd >= 0)
			close(fd);
		return false;
	}
	snprintf(origin, sizeof(origin), "%s", path);
	*(strrchr(origin, '/') ? strrchr(origin, '/') : origin) = '\0';
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
			continue;
		for (k = 0; k < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 1); k++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, (int)k, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag != DT_NEEDED)
				snprintf(runpath, sizeof(runpath), "%s", s);
			else if (nneeded < 64 && !c_library(s))
				needed[nneeded++] = strdup(s);
		}
	}
	for (i = 0; i < nneeded; i++) {
		char found[PATH_MAX];

		if (!ok || !needed[i] || listed(f, needed[i]))
			continue;
		if (!find_lib(needed[i], runpath, origin, found, sizeof(found))) {
			ukp_err("cannot find %s, which %s needs", needed[i], path);
			ok = false;
			continue;
		}
		ok = walk(f, found, needed[i], depth + 1);
	}
	for (i = 0; i < nneeded; i++)
		free(needed[i]);
	if (elf)
		elf_end(elf);
	close(fd);
	return ok && add(f, path, name);
}

int ukp_agent_files(const char *agent, char ***paths, char ***names)
{
	struct files f = { .n = 0 };

	elf_version(EV_CURRENT);
	if (!walk(&f, agent, UKP_AGENT_MEMFD, 0)) {
		ukp_agent_files_free(f.paths, f.names, f.n);
		return -1;
	}
	*paths = calloc((size_t)f.n, sizeof(char *));
	*names = calloc((size_t)f.n, sizeof(char *));
	if (!*paths || !*names) {
		free(*paths);
		free(*names);
		ukp_agent_files_free(f.paths, f.names, f.n);
		ukp_err("out of memory");
		return -1;
	}
	memcpy(*paths, f.paths, (size_t)f.n * sizeof(char *));
	memcpy(*names, f.names, (size_t)f.n * sizeof(char *));
	return f.n;
}

/* Frees the n strings of each array, not the arrays. */
void ukp_agent_files_free(char **paths, char **names, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(paths[i]);
		free(names[i]);
	}
}
