/* SPDX-License-Identifier: MIT */
/*
 * objects.c - what the agent needs to know about ELF objects beyond
 * libukprobes' symbols (kallsyms): loaded objects by name with their load
 * base (OBJ:0xADDR), and objects that are not loaded yet (a SPEC on a
 * library the program will dlopen(): its file is found and checked
 * before the program runs). Variables are the library's (datasyms.c).
 *
 * Files not loaded yet are read with libelf and kept in a small cache
 * (functions and segments). A file without .symtab also gets the symbols
 * of its debug file or MiniDebugInfo (common/debuginfo.h, which the
 * library uses too), read the first time a name is not found in its
 * .dynsym.
 * Context: [init] and [reader], never [hit]; the cache has its own lock.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "debuginfo.h"

/* ------------------------------------------------------- ELF files */

struct esym {
	const char *name;         /* into the file's string copy */
	size_t keylen;            /* up to a version suffix ("@@GLIBC_2.2.5") */
	uint64_t value;
	unsigned char type, bind;
	bool code;                /* in an executable section */
};

struct seg {
	uint64_t vaddr, memsz;
	bool exec;
};

struct efile {
	char *path;
	dev_t dev;
	ino_t ino;
	struct esym *syms;        /* by address */
	size_t nsyms;
	char *strings;
	char *dstrings;           /* the debug file's names */
	bool has_symtab;
	bool debug_read;          /* the debug file was looked for */
	struct seg segs[16];
	size_t nsegs;
	struct efile *next;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct efile *cache;

static int esym_addr_cmp(const void *pa, const void *pb)
{
	const struct esym *a = pa, *b = pb;

	return (a->value > b->value) - (a->value < b->value);
}

static bool wanted(const GElf_Sym *s)
{
	unsigned char t = GELF_ST_TYPE(s->st_info);

	/* functions only: variables are the library's (datasyms.c) */
	return s->st_name && s->st_shndx != SHN_UNDEF && s->st_shndx < SHN_LORESERVE &&
	       (t == STT_FUNC || t == STT_GNU_IFUNC || t == STT_NOTYPE);
}

/* Append the wanted symbols of the symbol table symscn of elf to f's;
 * *strings receives their names. */
static int efile_add_syms(struct efile *f, Elf *elf, Elf_Scn *symscn, char **strings)
{
	Elf_Data *data, *strdata;
	struct esym *syms;
	size_t i, n, k, strsize;
	GElf_Shdr symsh;

	if (!gelf_getshdr(symscn, &symsh))
		return 0;
	data = elf_getdata(symscn, NULL);
	strdata = elf_getdata(elf_getscn(elf, symsh.sh_link), NULL);
	if (!data || !strdata || !symsh.sh_entsize)
		return 0;
	n = symsh.sh_size / symsh.sh_entsize;
	*strings = malloc(strdata->d_size + 1);
	syms = realloc(f->syms, (f->nsyms + n + 1) * sizeof(*f->syms));
	if (syms)
		f->syms = syms;
	if (!*strings || !syms)
		return -ENOMEM;
	memcpy(*strings, strdata->d_buf, strdata->d_size);
	strsize = strdata->d_size;
	(*strings)[strsize] = '\0';
	for (i = 0, k = f->nsyms; i < n; i++) {
		GElf_Sym s;
		GElf_Shdr ssh;
		struct esym *e;
		const char *at;

		if (!gelf_getsym(data, (int)i, &s) || !wanted(&s) || s.st_name >= strsize)
			continue;
		e = &f->syms[k++];
		e->name = *strings + s.st_name;
		at = strchr(e->name, '@');
		e->keylen = at ? (size_t)(at - e->name) : strlen(e->name);
		e->value = s.st_value;
		e->type = GELF_ST_TYPE(s.st_info);
		e->bind = GELF_ST_BIND(s.st_info);
		/* a debug file's code sections are NOBITS, still SHF_EXECINSTR */
		e->code = s.st_shndx < SHN_LORESERVE &&
			  gelf_getshdr(elf_getscn(elf, s.st_shndx), &ssh) &&
			  (ssh.sh_flags & SHF_EXECINSTR);
	}
	f->nsyms = k;
	qsort(f->syms, f->nsyms, sizeof(*f->syms), esym_addr_cmp);
	return 0;
}

/* Read the symbols (.symtab, else .dynsym) and PT_LOAD segments. */
static int efile_read(struct efile *f, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL, *symscn = NULL;
	GElf_Shdr sh;
	size_t phnum, i;
	int ret = -ENOENT;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto out;
	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (i = 0; i < phnum && f->nsegs < 16; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				f->segs[f->nsegs++] = (struct seg){ ph.p_vaddr, ph.p_memsz,
								    !!(ph.p_flags & PF_X) };
		}
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !symscn)) {
			symscn = scn;
			f->has_symtab = sh.sh_type == SHT_SYMTAB;
		}
	}
	ret = symscn ? efile_add_syms(f, elf, symscn, &f->strings) : 0;
out:
	if (elf)
		elf_end(elf);
	return ret;
}

/* [cache_lock held] Once, for a file without .symtab: the symbols of its
 * debug file or MiniDebugInfo join its own. Values are the file's. */
static void efile_read_debug(struct efile *f)
{
	struct ukp_debugsrc src;
	char real[PATH_MAX];
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	if (f->debug_read || f->has_symtab)
		return;
	f->debug_read = true;
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF &&
	    ukp_debuginfo_open(elf, realpath(f->path, real) ? real : f->path, &src) == 0) {
		while ((scn = elf_nextscn(src.elf, scn)) != NULL) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
				efile_add_syms(f, src.elf, scn, &f->dstrings);
				break;
			}
		}
		ukp_debuginfo_close(&src);
	}
	if (elf)
		elf_end(elf);
	close(fd);
}

/* [cache_lock held] The cached file at path (re-read when it changed). */
static struct efile *efile_get(const char *path)
{
	struct efile *f, **pp;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	for (pp = &cache; (f = *pp) != NULL; pp = &f->next) {
		if (!strcmp(f->path, path)) {
			if (f->dev == st.st_dev && f->ino == st.st_ino) {
				close(fd);
				return f;
			}
			*pp = f->next; /* replaced: read it again */
			free(f->path);
			free(f->syms);
			free(f->strings);
			free(f->dstrings);
			free(f);
			break;
		}
	}
	elf_version(EV_CURRENT);
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(path)) || efile_read(f, fd)) {
		if (f) {
			free(f->path);
			free(f->syms);
			free(f->strings);
			free(f->dstrings);
		}
		free(f);
		close(fd);
		return NULL;
	}
	close(fd);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->next = cache;
	cache = f;
	return f;
}

static bool is_function(const struct esym *e)
{
	return e->code && (e->type == STT_FUNC || e->type == STT_GNU_IFUNC || e->type == STT_NOTYPE);
}

static bool name_is(const struct esym *e, const char *name)
{
	return strlen(name) == e->keylen && !memcmp(e->name, name, e->keylen);
}

/* A function named name (pass 0: global or weak; 1: local), in f's own
 * symbols only. */
static const struct esym *efile_find_own(const struct efile *f, const char *name, int pass)
{
	size_t i;

	for (i = 0; i < f->nsyms; i++) {
		const struct esym *e = &f->syms[i];

		if ((e->bind == STB_LOCAL) != (pass == 1) || !name_is(e, name))
			continue;
		if (!is_function(e))
			continue;
		return e;
	}
	return NULL;
}

/* [cache_lock held] The same, and on a miss in the debug file's. */
static const struct esym *efile_find(struct efile *f, const char *name, int pass)
{
	const struct esym *e = efile_find_own(f, name, pass);

	if (!e && !f->debug_read && !f->has_symtab) {
		efile_read_debug(f);
		e = efile_find_own(f, name, pass);
	}
	return e;
}

/* ----------------------------------------------------- loaded objects */

struct loaded {
	struct ukpa_obj obj;
	struct seg segs[16];
	size_t nsegs;
};

struct walk {
	struct loaded *list;
	size_t n, cap;
};

static bool is_vdso(const struct dl_phdr_info *info)
{
	uintptr_t ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);

	return ehdr && (uintptr_t)info->dlpi_phdr == ehdr + ((const ElfW(Ehdr) *)ehdr)->e_phoff;
}

static int walk_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct loaded *l;
	size_t i;

	(void)size;
	if (is_vdso(info))
		return 0;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct loaded *nl = realloc(w->list, cap * sizeof(*nl));

		if (!nl)
			return 1;
		w->list = nl;
		w->cap = cap;
	}
	l = &w->list[w->n];
	memset(l, 0, sizeof(*l));
	l->obj.is_main = w->n == 0;
	l->obj.base = info->dlpi_addr;
	if (l->obj.is_main && (!info->dlpi_name || !info->dlpi_name[0])) {
		ssize_t len = readlink("/proc/self/exe", l->obj.path, sizeof(l->obj.path) - 1);

		if (len <= 0)
			return 0;
		l->obj.path[len] = '\0';
	} else if (info->dlpi_name && info->dlpi_name[0]) {
		snprintf(l->obj.path, sizeof(l->obj.path), "%s", info->dlpi_name);
	} else {
		return 0;
	}
	for (i = 0; i < info->dlpi_phnum && l->nsegs < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD)
			l->segs[l->nsegs++] = (struct seg){ ph->p_vaddr, ph->p_memsz,
							   !!(ph->p_flags & PF_X) };
	}
	w->n++;
	return 0;
}

/* Every loaded object with a file, in load order (main program first).
 * Free w->list. */
static void walk_objects(struct walk *w)
{
	memset(w, 0, sizeof(*w));
	dl_iterate_phdr(walk_cb, w);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* [init] Does name name the main program by one of the names it was
 * started by (argv[0], the path exec was given)? The library knows them
 * (find_module_info). */
static bool main_answers_to(const struct ukpa_obj *o, const char *name)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];

	return find_module_info(name, &info, buf, sizeof(buf)) == 0 && (info.flags & KSYM_MAIN) &&
	       info.modbase == o->base;
}

/* As the library matches the object of "object:sym": the file's names,
 * another path to the same file, and for the main program the names it
 * was started by. */
static bool obj_matches(const struct ukpa_obj *o, const char *name)
{
	char real[PATH_MAX], named[PATH_MAX];

	if (!strcmp(base_name(o->path), name) || !strcmp(o->path, name))
		return true;
	if (o->is_main && main_answers_to(o, name))
		return true;
	if (!realpath(o->path, real))
		return false;
	return !strcmp(real, name) || !strcmp(base_name(real), name) ||
	       (strchr(name, '/') && realpath(name, named) && !strcmp(real, named));
}

static struct loaded *find_loaded(struct walk *w, const char *name)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (obj_matches(&w->list[i].obj, name))
			return &w->list[i];
	return NULL;
}

int ukpa_obj_find(const char *name, struct ukpa_obj *out)
{
	struct walk w;
	struct loaded *l;

	walk_objects(&w);
	l = find_loaded(&w, name);
	if (l)
		*out = l->obj;
	free(w.list);
	return l ? 0 : -ENOENT;
}

bool ukpa_obj_is_code(const struct ukpa_obj *obj, uint64_t vaddr)
{
	struct walk w;
	bool ok = false;
	size_t i, j;

	walk_objects(&w);
	for (i = 0; i < w.n && !ok; i++) {
		const struct loaded *l = &w.list[i];

		if (l->obj.base != obj->base || strcmp(l->obj.path, obj->path))
			continue;
		for (j = 0; j < l->nsegs; j++)
			if (l->segs[j].exec && vaddr >= l->segs[j].vaddr &&
			    vaddr - l->segs[j].vaddr < l->segs[j].memsz)
				ok = true;
	}
	free(w.list);
	return ok;
}

bool ukpa_addr_is_code(uintptr_t addr)
{
	struct walk w;
	bool ok = false;
	size_t i, j;

	walk_objects(&w);
	for (i = 0; i < w.n && !ok; i++)
		for (j = 0; j < w.list[i].nsegs; j++)
			if (w.list[i].segs[j].exec &&
			    addr - w.list[i].obj.base - w.list[i].segs[j].vaddr <
				    w.list[i].segs[j].memsz)
				ok = true;
	free(w.list);
	return ok;
}

/* ------------------------------------------------ objects not loaded */

static char *try_dir(const char *dir, size_t dlen, const char *name)
{
	char buf[PATH_MAX];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)dlen, dir, name) >= (int)sizeof(buf))
		return NULL;
	if (stat(buf, &st) || !S_ISREG(st.st_mode) || access(buf, R_OK))
		return NULL;
	return realpath(buf, NULL);
}

char *ukpa_obj_file(const char *name)
{
	static const char *const system_dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
		"/lib", "/usr/lib", "/usr/local/lib",
	};
	Dl_serinfo size, *info = NULL;
	void *self;
	struct walk w;
	char *found = NULL;
	size_t i;

	if (strchr(name, '/')) {
		struct stat st;

		return !stat(name, &st) && S_ISREG(st.st_mode) ? realpath(name, NULL) : NULL;
	}
	/* What dlopen() of the main program would search: LD_LIBRARY_PATH,
	 * its RUNPATH/RPATH, the loader's system directories. */
	self = dlopen(NULL, RTLD_LAZY);
	if (self && dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0) {
		info = malloc(size.dls_size);
		if (info) {
			info->dls_size = size.dls_size;
			info->dls_cnt = size.dls_cnt;
			if (dlinfo(self, RTLD_DI_SERINFO, info) == 0)
				for (i = 0; i < info->dls_cnt && !found; i++)
					found = try_dir(info->dls_serpath[i].dls_name,
							strlen(info->dls_serpath[i].dls_name), name);
			free(info);
		}
	}
	if (self)
		dlclose(self);
	/* Next to the objects already loaded, then the usual places (what
	 * ld.so.cache lists). */
	if (!found) {
		walk_objects(&w);
		for (i = 0; i < w.n && !found; i++) {
			const char *slash = strrchr(w.list[i].obj.path, '/');

			if (slash)
				found = try_dir(w.list[i].obj.path,
						(size_t)(slash - w.list[i].obj.path), name);
		}
		free(w.list);
	}
	for (i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]) && !found; i++)
		found = try_dir(system_dirs[i], strlen(system_dirs[i]), name);
	return found;
}

bool ukpa_file_has_point(const char *path, const struct ukp_spec *spec, uint32_t *what,
			 uint64_t *addr)
{
	struct efile *f;
	bool ok = false;
	size_t i;

	*addr = 0;
	pthread_mutex_lock(&cache_lock);
	f = efile_get(path);
	if (!f) {
		*what = UKP_WHAT_OBJECT;
	} else if (spec->is_addr) {
		for (i = 0; i < f->nsegs; i++)
			if (f->segs[i].exec && spec->addr >= f->segs[i].vaddr &&
			    spec->addr - f->segs[i].vaddr < f->segs[i].memsz)
				ok = true;
		*what = UKP_WHAT_ADDR;
		*addr = spec->addr;
	} else if (spec->is_glob) {
		int round;

		/* its own symbols, then (no match) its debug file's too */
		for (round = 0; round < 2 && !ok; round++) {
			if (round && (f->debug_read || f->has_symtab))
				break;
			if (round)
				efile_read_debug(f);
			for (i = 0; i < f->nsyms && !ok; i++) {
				char name[512];

				if (!is_function(&f->syms[i]) ||
				    f->syms[i].keylen >= sizeof(name))
					continue;
				memcpy(name, f->syms[i].name, f->syms[i].keylen);
				name[f->syms[i].keylen] = '\0';
				ok = !fnmatch(spec->symbol, name, 0);
			}
		}
		*what = UKP_WHAT_NOMATCH;
	} else {
		const struct esym *e = efile_find(f, spec->symbol, 0);

		if (!e)
			e = efile_find(f, spec->symbol, 1);
		ok = e != NULL;
		if (e)
			*addr = e->value + spec->offset;
		*what = UKP_WHAT_SYMBOL;
	}
	pthread_mutex_unlock(&cache_lock);
	return ok;
}

/* ------------------------------------------------------------ fork */

void ukpa_objects_lock(void)
{
	pthread_mutex_lock(&cache_lock);
}

void ukpa_objects_unlock(void)
{
	pthread_mutex_unlock(&cache_lock);
}

void ukpa_objects_after_fork(void)
{
	/* only this thread exists: the lock may have been held by another */
	pthread_mutex_init(&cache_lock, NULL);
}
