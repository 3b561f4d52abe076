/* SPDX-License-Identifier: MIT */
/*
 * iterate_objects.c - the one walk of the loaded objects every part of
 * the library goes through (maps_objects.h: ukp_iterate_objects), and the
 * object that holds an address (ukp_object_at, dladdr()'s question).
 *
 * libukprobes.so asks the dynamic loader (dl_iterate_phdr: its list and
 * counters, no system call). The agent's build (UKP_OWN_OBJECTS,
 * agent/meson.build) reads the kernel's view instead
 * (ukp_maps_iterate_phdr), so that nothing on its resolution paths calls
 * into the program's loader (a static program has none; a dynamic one's
 * dladdr() waits for a dlopen() in progress). There the agent's own
 * dl_iterate_phdr() calls come here too: its link wraps the name
 * (--wrap=dl_iterate_phdr).
 *
 * Context: [reg] (ukp_maps_iterate_phdr allocates and reads
 * /proc/self/maps).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <time.h>

#include "base/base.h"
#include "base/lock.h"
#include "base/sys.h"
#include "symbols/elf_read.h"
#include "symbols/maps_objects.h"

#ifdef UKP_OWN_OBJECTS
/*
 * A read of /proc/self/maps costs tens of microseconds, and registering
 * a thousand probes asks for the objects tens of thousands of times
 * (every look-up syncs the symbol cache): the walk is kept as a snapshot,
 * taken again when it is older than SNAP_FRESH_NS or when the set is
 * known to have changed (ukp_objects_changed: the loader's stops and the
 * dlopen()/dlclose() interposers). The freshness bound is that of the
 * loader's counters for what no one reports (a program's own mappings of
 * an object). A walk keeps its snapshot (a reference) until it ends, so
 * that a callback may walk again.
 */
#define SNAP_FRESH_NS 20000000LL

/* An object's entry: its program headers copied (hdrs: the ELF header,
 * when it lies right before them as linkers place it, else zeros, then
 * the program headers: func_entry.c reads the header there), so that a
 * walk never reads the headers of an object unmapped since the snapshot
 * was taken (no loader lock holds it mapped as dl_iterate_phdr()'s
 * does). */
struct snap_ent {
	struct dl_phdr_info info;
	char *name;
	void *hdrs;
};

struct snap {
	unsigned int refs;      /* walks under way, +1 while it is the current one */
	long long taken_ns;
	size_t n, cap;
	struct snap_ent *v;
};

static struct ukp_fmutex snap_lock = UKP_FMUTEX_INIT;
static struct snap *snap_cur;
static unsigned long snap_gen, snap_gen_taken;

/* The vDSO's clock_gettime: a walk checks its snapshot's age, and
 * registering a thousand probes walks tens of thousands of times, which
 * the system call (no vDSO in the library's raw calls) made slower by
 * more than the maps reads it saves. Found once in the vDSO's own
 * symbols (the kernel's code: no libc, no TLS); the system call when
 * there is none. */
typedef int (*vdso_clock_fn)(int, struct timespec *);
static vdso_clock_fn vdso_clock;
static _Atomic int vdso_looked;

static vdso_clock_fn find_vdso_clock(void)
{
	static const char *const names[] = { "__vdso_clock_gettime", "__kernel_clock_gettime" };
	uintptr_t at = ukp_getauxval(AT_SYSINFO_EHDR), bias = 0;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)at;
	const Elf64_Shdr *dynsym;
	struct ukp_elf e;
	vdso_clock_fn fn = NULL;
	size_t i, n;

	if (!at || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    ukp_elf_open_mem(&e, eh, eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize))
		return NULL;
	for (i = 0; i < e.phnum; i++)
		if (e.phdr[i].p_type == PT_LOAD && !e.phdr[i].p_offset)
			bias = at - e.phdr[i].p_vaddr;
	dynsym = ukp_elf_next_of_type(&e, NULL, SHT_DYNSYM);
	n = dynsym ? ukp_elf_nsyms(&e, dynsym) : 0;
	for (i = 0; i < n && !fn && bias; i++) {
		Elf64_Sym sym;
		uint32_t shndx;
		const char *name;
		size_t k;

		if (!ukp_elf_sym(&e, dynsym, NULL, i, &sym, &shndx) ||
		    ELF64_ST_TYPE(sym.st_info) != STT_FUNC || shndx == SHN_UNDEF)
			continue;
		name = ukp_elf_strptr(&e, dynsym->sh_link, sym.st_name);
		for (k = 0; name && k < sizeof(names) / sizeof(names[0]); k++)
			if (!strcmp(name, names[k]))
				fn = (vdso_clock_fn)(bias + sym.st_value);
	}
	ukp_elf_close(&e);
	return fn;
}

static long long now_ns(void)
{
	struct timespec ts;

	if (!atomic_load_explicit(&vdso_looked, memory_order_acquire)) {
		vdso_clock = find_vdso_clock();
		atomic_store_explicit(&vdso_looked, 1, memory_order_release);
	}
	if (vdso_clock ? vdso_clock(CLOCK_MONOTONIC, &ts) :
			 ukp_sys_clock_gettime(CLOCK_MONOTONIC, &ts))
		return 0;
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Drop a reference (snap_lock held): the snapshot to free, if that was
 * the last, which the caller frees after unlocking (snap_free): the lock
 * is held for a few instructions only (a fork() child of a holder would
 * wait for it forever). */
static struct snap *snap_put(struct snap *sn)
{
	return sn && !--sn->refs ? sn : NULL;
}

static void snap_free(struct snap *sn)
{
	size_t i;

	if (!sn)
		return;
	for (i = 0; i < sn->n; i++) {
		free(sn->v[i].name);
		free(sn->v[i].hdrs);
	}
	free(sn->v);
	free(sn);
}

static int snap_add(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct snap *sn = arg;
	struct snap_ent *e;
	ElfW(Ehdr) eh;
	size_t phsz;

	(void)size;
	if (sn->n == sn->cap) {
		size_t cap = sn->cap ? sn->cap * 2 : 32;
		struct snap_ent *v = realloc(sn->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		sn->v = v;
		sn->cap = cap;
	}
	e = &sn->v[sn->n];
	e->info = *info;
	phsz = (size_t)info->dlpi_phnum * sizeof(ElfW(Phdr));
	e->hdrs = calloc(1, sizeof(eh) + phsz);
	if (!e->hdrs)
		return -ENOMEM;
	if (ukp_sys_read_self((char *)e->hdrs + sizeof(eh), info->dlpi_phdr, phsz)) {
		free(e->hdrs); /* unmapped since the maps were read: gone */
		return 0;
	}
	if (!ukp_sys_read_self(&eh, (const char *)info->dlpi_phdr - sizeof(eh), sizeof(eh)) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_phoff == sizeof(eh))
		memcpy(e->hdrs, &eh, sizeof(eh));
	e->name = strdup(info->dlpi_name ? info->dlpi_name : "");
	if (!e->name) {
		free(e->hdrs);
		return -ENOMEM;
	}
	e->info.dlpi_name = e->name;
	e->info.dlpi_phdr = (const ElfW(Phdr) *)((char *)e->hdrs + sizeof(eh));
	sn->n++;
	return 0;
}

/* The current snapshot, with a reference for the caller; NULL and *err
 * when a new one could not be taken. */
static struct snap *snap_get(int *err)
{
	struct snap *sn, *old = NULL;
	long long now = now_ns();
	unsigned long gen;

	ukp_fmutex_lock(&snap_lock);
	sn = snap_cur;
	if (sn && snap_gen_taken == snap_gen && now - sn->taken_ns < SNAP_FRESH_NS &&
	    now >= sn->taken_ns) {
		sn->refs++;
		ukp_fmutex_unlock(&snap_lock);
		return sn;
	}
	gen = snap_gen;
	ukp_fmutex_unlock(&snap_lock);

	sn = calloc(1, sizeof(*sn));
	if (!sn) {
		*err = -ENOMEM;
		return NULL;
	}
	sn->refs = 2; /* the caller's and the current one's */
	sn->taken_ns = now;
	*err = ukp_maps_iterate_phdr(snap_add, sn);
	if (*err) {
		snap_free(sn);
		return NULL;
	}
	ukp_fmutex_lock(&snap_lock);
	/* (a change reported meanwhile: this one may miss it, the next
	 * walk reads again) */
	if (gen == snap_gen) {
		old = snap_cur;
		snap_cur = sn;
		snap_gen_taken = gen;
	} else {
		sn->refs--;
	}
	old = snap_put(old);
	ukp_fmutex_unlock(&snap_lock);
	snap_free(old);
	return sn;
}

void ukp_objects_changed(void)
{
	ukp_fmutex_lock(&snap_lock);
	snap_gen++;
	ukp_fmutex_unlock(&snap_lock);
}

int ukp_iterate_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	struct snap *sn;
	size_t i;
	int ret = 0;

	sn = snap_get(&ret);
	if (!sn)
		return ret;
	for (i = 0; i < sn->n && !ret; i++) {
		struct dl_phdr_info info = sn->v[i].info;

		ret = cb(&info, sizeof(info), arg);
	}
	ukp_fmutex_lock(&snap_lock);
	sn = snap_put(sn);
	ukp_fmutex_unlock(&snap_lock);
	snap_free(sn);
	return ret;
}

/* The agent's own code (agent/objects.c, ring.c) walks the objects with
 * dl_iterate_phdr(); its link binds those calls here. */
int __wrap_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);
int __wrap_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	return ukp_iterate_objects(cb, arg);
}
#else
int ukp_iterate_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	return dl_iterate_phdr(cb, arg);
}

/* (the loader's counters say it) */
void ukp_objects_changed(void)
{
}
#endif

struct object_at {
	uintptr_t addr;
	struct ukp_object_at *out;
	char *name;
	size_t len;
	int ret;
};

static int object_at_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_at *oa = arg;
	size_t i, n;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || oa->addr < lo || oa->addr - lo >= ph->p_memsz)
			continue;
		oa->out->bias = info->dlpi_addr;
		oa->out->phdr = info->dlpi_phdr;
		oa->out->phnum = info->dlpi_phnum;
		oa->ret = 0;
		if (!oa->name)
			return 1;
		n = info->dlpi_name ? strlen(info->dlpi_name) : 0;
		if (n >= oa->len) {
			oa->ret = -ERANGE;
			return 1;
		}
		memcpy(oa->name, info->dlpi_name ? info->dlpi_name : "", n + 1);
		return 1;
	}
	return 0;
}

int ukp_object_at(uintptr_t addr, struct ukp_object_at *out, char *name, size_t len)
{
	struct object_at oa = { addr, out, name, len, -ENOENT };
	int ret;

	if (name && !len)
		return -ERANGE;
	ret = ukp_iterate_objects(object_at_cb, &oa);
	return ret < 0 ? ret : oa.ret;
}
