/* SPDX-License-Identifier: MIT */
/*
 * usdt.c - SDT probes (usdt.h, <ukprobes.h>'s usdt_*): the notes of an
 * object's .note.stapsdt section, their argument specs decoded, and the
 * semaphores of the probes registered on them.
 *
 * A note (owner "stapsdt", type 3) holds three addresses (the probe's
 * nop, the link-time address of the .stapsdt.base section, the
 * semaphore) and three strings (provider, name, argument specs). When
 * the object's .stapsdt.base section is not where the note says (the
 * object was prelinked: moved after the notes were written), the probe
 * and the semaphore moved with it by the same difference.
 *
 * Context: [reg] under the registry mutex (the public functions take
 * it), ordinary context only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbols/symbols.h"
#include "base/base.h"
#include "base/sys.h"
#include "symbols/usdt.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */

#define NT_STAPSDT 3

void ukp_usdt_notes_free(struct ukp_usdt_notes *notes)
{
	if (!notes)
		return;
	free(notes->v);
	free(notes->strs);
	free(notes);
}

static int note_cmp(const void *a, const void *b)
{
	const struct ukp_usdt_note *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}


/* [reg] The notes of the file behind obj into *out (empty when it has
 * none or cannot be read). 0 or -ENOMEM. */
static int notes_read(const struct ukp_object *obj, struct ukp_usdt_notes *out)
{
	const Elf64_Shdr *bsh, *sh;
	const void *data = NULL, *desc;
	const char *nname;
	size_t off = 0, dsize = 0, cap = 0, slen = 0, scap = 0;
	Elf64_Nhdr nh;
	uint64_t base_addr = 0;
	bool have_base;
	struct ukp_elf elf;
	int err = 0;

	if (ukp_object_elf(obj, &elf))
		return 0;
	bsh = ukp_elf_section_named(&elf, ".stapsdt.base");
	have_base = bsh != NULL;
	if (have_base)
		base_addr = bsh->sh_addr;
	sh = ukp_elf_section_named(&elf, ".note.stapsdt");
	if (sh && sh->sh_type == SHT_NOTE)
		data = ukp_elf_data(&elf, sh, &dsize);
	while (data && ukp_elf_next_note(data, dsize, sh->sh_addralign, &off, &nh, &nname, &desc)) {
		const char *d = desc, *prov, *name, *args, *end;
		uint64_t a[3];
		struct ukp_usdt_note *n;
		size_t need;

		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 || memcmp(nname, "stapsdt", 8) ||
		    nh.n_descsz < 27)
			continue;
		memcpy(a, d, sizeof(a));
		end = d + nh.n_descsz;
		prov = d + sizeof(a);
		name = memchr(prov, '\0', (size_t)(end - prov));
		args = name ? memchr(name + 1, '\0', (size_t)(end - name - 1)) : NULL;
		if (!args || !memchr(args + 1, '\0', (size_t)(end - args - 1)))
			continue;
		name++;
		args++;
		if (have_base && a[1]) { /* prelinked: moved as a whole */
			a[0] += base_addr - a[1];
			if (a[2])
				a[2] += base_addr - a[1];
		}
		if (out->n == cap) {
			void *v = realloc(out->v, (cap = cap ? 2 * cap : 16) * sizeof(*out->v));

			if (!v)
				goto nomem;
			out->v = v;
		}
		/* strings as offsets into strs until it stops moving */
		need = (size_t)(end - prov);
		if (slen + need > scap) {
			char *s = realloc(out->strs, scap = 2 * (slen + need) + 256);

			if (!s)
				goto nomem;
			out->strs = s;
		}
		memcpy(out->strs + slen, prov, need);
		n = &out->v[out->n++];
		n->addr = (uintptr_t)a[0] + obj->base;
		n->sem = a[2] ? (uintptr_t)a[2] + obj->base : 0;
		n->provider = (const char *)slen;
		n->name = (const char *)(slen + (size_t)(name - prov));
		n->args = (const char *)(slen + (size_t)(args - prov));
		slen += need;
	}
	for (size_t i = 0; i < out->n; i++) {
		out->v[i].provider = out->strs + (size_t)out->v[i].provider;
		out->v[i].name = out->strs + (size_t)out->v[i].name;
		out->v[i].args = out->strs + (size_t)out->v[i].args;
	}
	if (out->n)
		ukp_sort(out->v, out->n, sizeof(*out->v), note_cmp);
	goto out;
nomem:
	free(out->v);
	free(out->strs);
	memset(out, 0, sizeof(*out));
	err = -ENOMEM;
out:
	ukp_elf_close(&elf);
	return err;
}

const struct ukp_usdt_notes *ukp_usdt_notes(const struct ukp_object *obj)
{
	struct ukp_usdt_notes **slot = ukp_object_usdt(obj), *n;

	if (*slot)
		return *slot;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	if (notes_read(obj, n)) {
		free(n);
		return NULL;
	}
	*slot = n;
	return n;
}

const struct ukp_usdt_note *ukp_usdt_note_at(uintptr_t addr, const struct ukp_object **objp)
{
	const struct ukp_object *obj = ukp_object_of(addr);
	const struct ukp_usdt_notes *ns = obj ? ukp_usdt_notes(obj) : NULL;
	size_t lo = 0, hi = ns ? ns->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ns->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!ns || lo == ns->n || ns->v[lo].addr != addr)
		return NULL;
	if (objp)
		*objp = obj;
	return &ns->v[lo];
}

/* ---------------------------------------------------------- names */

/* "[OBJ:]%PROVIDER:NAME": *obj (malloc'ed, NULL without one), *prov
 * and *name (into spec; prov's length *provlen). false when not so. */
static bool name_split(const char *spec, char **obj, const char **prov, size_t *provlen,
		       const char **name)
{
	const char *pct = spec[0] == '%' ? spec : strstr(spec, ":%"), *colon;

	*obj = NULL;
	if (!pct)
		return false;
	if (pct != spec)
		pct++;
	colon = strchr(pct + 1, ':');
	if (!colon || colon == pct + 1 || !colon[1] || strchr(colon + 1, ':'))
		return false;
	*prov = pct + 1;
	*provlen = (size_t)(colon - pct - 1);
	*name = colon + 1;
	if (pct != spec) {
		*obj = strndup(spec, (size_t)(pct - spec - 1));
		if (!*obj)
			return false;
	}
	return true;
}

bool ukp_usdt_is_name(const char *spec)
{
	char *obj;
	const char *prov, *name;
	size_t plen;
	bool ok = spec && name_split(spec, &obj, &prov, &plen, &name);

	if (ok)
		free(obj);
	return ok;
}

static bool note_named(const struct ukp_usdt_note *n, const char *prov, size_t plen,
		       const char *name)
{
	return strlen(n->provider) == plen && !memcmp(n->provider, prov, plen) &&
	       !strcmp(n->name, name);
}

int ukp_usdt_lookup(const char *spec, uintptr_t *addr)
{
	const struct ukp_object *obj;
	const char *prov, *name;
	char *objname;
	size_t plen, i, k;
	int err = -ENOENT;

	if (!name_split(spec, &objname, &prov, &plen, &name))
		return -ENOENT;
	for (i = 0; err == -ENOENT && (obj = ukp_object_nth(i)); i++) {
		const struct ukp_usdt_notes *ns;

		if (objname && !ukp_object_matches(obj, objname))
			continue;
		ns = ukp_usdt_notes(obj);
		if (!ns) {
			err = -ENOMEM;
			break;
		}
		for (k = 0; k < ns->n; k++) {
			if (note_named(&ns->v[k], prov, plen, name)) {
				*addr = ns->v[k].addr;
				err = 0;
				break;
			}
		}
	}
	free(objname);
	return err;
}

/* ----------------------------------------------------- semaphores */

/* The probes that raised a semaphore: few (SDT probes only), so a
 * plain array. */
struct sem_ref {
	const struct kprobe *kp;
	const struct ukp_object *obj;
	uintptr_t sem;
};
static struct sem_ref *refs;
static size_t nrefs, caprefs;

/* Is addr's page writable now? (A RELRO page is not, though its
 * segment is PF_W.) */
static bool page_writable(uintptr_t addr)
{
	struct ukp_maps m;
	struct ukp_map_ent e;
	bool w = false;

	if (ukp_maps_open(&m))
		return false;
	while (ukp_maps_next(&m, &e) == 1) {
		if (addr >= e.start && addr < e.end) {
			w = e.perms[1] == 'w';
			break;
		}
	}
	ukp_maps_close(&m);
	return w;
}

/* Write the 2 bytes of v at sem, in a page the program cannot write:
 * through /proc/self/mem, as the kernel writes a uprobe's ref_ctr
 * (forced), else by making the page writable for the write. */
static int sem_poke(uintptr_t sem, unsigned short v)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t start = sem & ~(uintptr_t)(pg - 1);
	uintptr_t end = (sem + sizeof(v) + pg - 1) & ~(uintptr_t)(pg - 1);
	int fd = ukp_sys_open("/proc/self/mem", O_RDWR), err = 0;

	if (fd >= 0) {
		long n = ukp_sys_pwrite(fd, &v, sizeof(v), sem);

		err = n == (long)sizeof(v) ? 0 : n < 0 ? (int)n : -EIO;
		ukp_sys_close(fd);
		if (!err)
			return 0;
		if (err != -EIO && err != -EPERM && err != -EACCES)
			return err;
	}
	err = ukp_sys_mprotect((void *)start, end - start, PROT_READ | PROT_WRITE);
	if (err)
		return err;
	*(volatile unsigned short *)sem = v;
	ukp_sys_mprotect((void *)start, end - start, PROT_READ);
	return 0;
}

/* Add delta (+1 or -1, never below 0) to the semaphore at sem. Its
 * page is the program's data, which the program reads from any thread
 * without a lock: an atomic update where it is writable; where it is
 * not (RELRO, read-only data: the kernel writes a uprobe's ref_ctr
 * there too, by a forced write), only this library writes it, under
 * the registry mutex. */
static int sem_add(uintptr_t sem, int delta)
{
	unsigned short *c = (unsigned short *)sem, v;

	if (page_writable(sem)) {
		v = __atomic_load_n(c, __ATOMIC_RELAXED);
		while ((delta > 0 || v) &&
		       !__atomic_compare_exchange_n(c, &v, (unsigned short)(v + delta), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		return 0;
	}
	v = __atomic_load_n(c, __ATOMIC_RELAXED);
	if (delta < 0 && !v)
		return 0;
	return sem_poke(sem, (unsigned short)(v + delta));
}

void ukp_usdt_probe_added(const struct kprobe *p, uintptr_t addr)
{
	const struct ukp_object *obj;
	const struct ukp_usdt_note *n = ukp_usdt_note_at(addr, &obj);
	int err;

	if (!n || !n->sem)
		return;
	if (!ukp_object_data(obj, n->sem, sizeof(unsigned short))) {
		pr_warn("usdt: the semaphore of %s:%s at %#lx is not in the object's data\n",
			n->provider, n->name, (unsigned long)n->sem);
		return;
	}
	if (nrefs == caprefs) {
		size_t cap = caprefs ? 2 * caprefs : 16;
		struct sem_ref *v = realloc(refs, cap * sizeof(*v));

		if (!v) {
			pr_warn("usdt: no memory to count the semaphore of %s:%s\n", n->provider,
				n->name);
			return;
		}
		refs = v;
		caprefs = cap;
	}
	err = sem_add(n->sem, 1);
	if (err) {
		pr_warn("usdt: the semaphore of %s:%s at %#lx cannot be written: %s\n", n->provider,
			n->name, (unsigned long)n->sem, strerror(-err));
		return;
	}
	refs[nrefs++] = (struct sem_ref){ p, obj, n->sem };
}

void ukp_usdt_probe_removed(const struct kprobe *p)
{
	size_t i;

	for (i = 0; i < nrefs; i++) {
		if (refs[i].kp != p)
			continue;
		/* an unloaded object's counter is gone with it */
		if (ukp_object_alive(refs[i].obj))
			sem_add(refs[i].sem, -1);
		refs[i] = refs[--nrefs];
		return;
	}
}
