/* SPDX-License-Identifier: MIT */
/*
 * objects.c - what the agent needs to know about ELF objects beyond
 * libukprobes' symbols (kallsyms): loaded objects by name with their load
 * base (OBJ:0xADDR), and objects that are not loaded yet (a SPEC on a
 * library the program will dlopen(): its file is found and checked
 * before the program runs). Variables are the library's (datasyms.c).
 *
 * Files not loaded yet are the library's too (find_module_file and the
 * module_file_* look-ups: the reader, its cache and the debug files are
 * the ones of loaded objects); the agent reads no ELF file itself.
 * Context: [init] and [reader], never [hit].
 */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "agent.h"

/* ----------------------------------------------------- loaded objects */

/* One PT_LOAD segment of a loaded object, at its ELF address. */
struct seg {
	uint64_t vaddr, memsz;
	bool exec;
};

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
	size_t i;

	/* (by where its ELF header is loaded: a walk may give a copy of
	 * the program headers, src/symbols/iterate_objects.c) */
	for (i = 0; ehdr && i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && !info->dlpi_phdr[i].p_offset)
			return info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == ehdr;
	return false;
}

/* [init][reader] /proc/self/exe's target into buf[len]: its length, or
 * <= 0. Read once: resolving a thousand SPECs walks the objects a
 * thousand times, and the link's read is a path walk in the kernel. The
 * first target is kept (the file the program was started from; a later
 * read of a deleted file's link gets " (deleted)" appended). Threads
 * racing at the first read each read it themselves. */
static ssize_t exe_path(char *buf, size_t len)
{
	static char exe[PATH_MAX];
	static ssize_t exe_len;
	static _Atomic int state; /* 0 unread, 1 being kept, 2 kept */
	int expect = 0;
	ssize_t n;

	if (atomic_load_explicit(&state, memory_order_acquire) == 2) {
		n = exe_len < (ssize_t)len ? exe_len : (ssize_t)len;
		memcpy(buf, exe, (size_t)n);
		return n;
	}
	n = readlink("/proc/self/exe", buf, len);
	if (n > 0 && (size_t)n < sizeof(exe) &&
	    atomic_compare_exchange_strong(&state, &expect, 1)) {
		memcpy(exe, buf, (size_t)n);
		exe_len = n;
		atomic_store_explicit(&state, 2, memory_order_release);
	}
	return n;
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
		ssize_t len = exe_path(l->obj.path, sizeof(l->obj.path) - 1);

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

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ukpa_loader_counters *c = arg;

	(void)size;
	c->adds = info->dlpi_adds;
	c->subs = info->dlpi_subs;
	return 1;
}

void ukpa_loader_counters(struct ukpa_loader_counters *c)
{
	*c = (struct ukpa_loader_counters){ 0, 0 };
	dl_iterate_phdr(counters_cb, c);
}

/* The last answer of ukpa_obj_find, while the loader's counters (the
 * freestanding agent's: a digest of the set of objects) say that no
 * object came or went: a thousand SPECs on one object ask the same
 * question a thousand times. */
static struct {
	pthread_mutex_t lock;
	bool valid, found;
	struct ukpa_loader_counters counters;
	char name[PATH_MAX];
	struct ukpa_obj obj;
} find_memo = { .lock = PTHREAD_MUTEX_INITIALIZER };

int ukpa_obj_find(const char *name, struct ukpa_obj *out)
{
	struct ukpa_loader_counters c;
	struct walk w;
	struct loaded *l;
	bool found;

	ukpa_loader_counters(&c);
	pthread_mutex_lock(&find_memo.lock);
	if (find_memo.valid && find_memo.counters.adds == c.adds &&
	    find_memo.counters.subs == c.subs &&
	    !strcmp(find_memo.name, name)) {
		found = find_memo.found;
		if (found)
			*out = find_memo.obj;
		pthread_mutex_unlock(&find_memo.lock);
		return found ? 0 : -ENOENT;
	}
	pthread_mutex_unlock(&find_memo.lock);

	walk_objects(&w);
	l = find_loaded(&w, name);
	if (l)
		*out = l->obj;
	found = l != NULL;
	free(w.list);
	if (strlen(name) < sizeof(find_memo.name)) {
		pthread_mutex_lock(&find_memo.lock);
		find_memo.valid = true;
		find_memo.found = found;
		find_memo.counters = c;
		strcpy(find_memo.name, name);
		if (found)
			find_memo.obj = *out;
		pthread_mutex_unlock(&find_memo.lock);
	}
	return found ? 0 : -ENOENT;
}

struct at_walk {
	uintptr_t addr;
	struct ukpa_obj_at *out;
	bool found;
};

static int at_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct at_walk *w = arg;
	size_t i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || w->addr < lo || w->addr - lo >= ph->p_memsz)
			continue;
		w->out->obj.base = info->dlpi_addr;
		w->out->obj.is_main = !info->dlpi_name || !info->dlpi_name[0];
		w->out->phdr = info->dlpi_phdr;
		w->out->phnum = info->dlpi_phnum;
		snprintf(w->out->obj.path, sizeof(w->out->obj.path), "%s",
			 info->dlpi_name ? info->dlpi_name : "");
		w->found = true;
		return 1;
	}
	return 0;
}

int ukpa_obj_at(const void *addr, struct ukpa_obj_at *out)
{
	struct at_walk w = { (uintptr_t)addr, out, false };

	memset(out, 0, sizeof(*out));
	/* (the agent's link binds dl_iterate_phdr to the library's object
	 * table: src/symbols/iterate_objects.c) */
	dl_iterate_phdr(at_cb, &w);
	if (!w.found)
		return -ENOENT;
	if (out->obj.is_main) {
		ssize_t n = exe_path(out->obj.path, sizeof(out->obj.path) - 1);

		out->obj.path[n > 0 ? n : 0] = '\0';
	}
	return 0;
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

char *ukpa_obj_file(const char *name)
{
	char path[PATH_MAX];

	return find_module_file(name, path, sizeof(path)) == 0 ? strdup(path) : NULL;
}

struct glob_any {
	const char *pattern;
	bool found;
};

/* [init] inside the library's walk of the file: does a function match? */
static int glob_any_cb(void *arg, const struct ksym_info *sym)
{
	struct glob_any *g = arg;

	if (!(sym->flags & KSYM_DATA) && ukpa_glob_matches(g->pattern, sym->name))
		g->found = true;
	return g->found; /* the first match ends the walk */
}

struct in_text {
	uint64_t vaddr;
	bool found;
};

/* [init] inside the library's walk of the file's executable segments */
static int in_text_cb(void *arg, unsigned long addr, unsigned long size)
{
	struct in_text *t = arg;

	t->found = t->vaddr >= addr && t->vaddr - addr < size;
	return t->found;
}

bool ukpa_file_has_point(const char *path, const struct ukp_spec *spec, uint32_t *what,
			 uint64_t *addr)
{
	*addr = 0;
	if (spec->is_sdt)
		return ukpa_usdt_file_has(path, spec, what);
	if (spec->is_addr) {
		struct in_text t = { spec->addr, false };
		int ret = module_file_on_each_text(path, in_text_cb, &t);

		*what = ret < 0 ? UKP_WHAT_OBJECT : UKP_WHAT_ADDR;
		*addr = spec->addr;
		return t.found;
	}
	if (spec->is_glob) {
		struct glob_any g = { spec->symbol, false };
		int ret = module_file_kallsyms_on_each_symbol_info(path, glob_any_cb, &g);

		*what = ret < 0 ? UKP_WHAT_OBJECT : UKP_WHAT_NOMATCH;
		return g.found;
	} else {
		struct ksym_info info = { .size = sizeof(info) };
		char buf[PATH_MAX + KSYM_NAME_LEN];
		int ret = module_file_kallsyms_lookup_name_info(path, spec->symbol, &info, buf,
								sizeof(buf));

		/* a function: a variable of that name is no probe point */
		if (ret == 0 && !(info.flags & KSYM_DATA)) {
			*addr = info.addr + spec->offset;
			return true;
		}
		*what = ret < 0 && ret != -ENOENT ? UKP_WHAT_OBJECT : UKP_WHAT_SYMBOL;
		return false;
	}
}
