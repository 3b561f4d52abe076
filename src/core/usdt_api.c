/* SPDX-License-Identifier: MIT */
/*
 * usdt_api.c - <ukprobes.h>'s usdt_* look-ups: the SDT probes of loaded
 * objects and of files (symbols/usdt.c reads the notes), under the
 * registry mutex.
 *
 * Context: [reg] ordinary context only (refused in a handler).
 */
#include <errno.h>
#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/symbols.h"
#include "base/base.h"
#include "symbols/usdt.h"

#include "core/core.h"


/* [init] The address of the symbol sym[0..len) of obj (a function or a
 * datum): 0, or -1 when it has none. */
static int sym_address(const struct ukp_object *obj, const char *sym, size_t len,
		       uintptr_t *addr)
{
	char name[KSYM_NAME_LEN];
	struct ukp_symres r;

	if (len >= sizeof(name))
		return -1;
	memcpy(name, sym, len);
	name[len] = '\0';
	if (ukp_file_sym_named(obj, name, true, &r) && ukp_file_sym_named(obj, name, false, &r))
		return -1;
	*addr = r.start;
	return 0;
}

/* [reg] probe filled from note n of obj (its args decoded): strings are
 * the note's. */
static void probe_fill(struct usdt_probe *probe, const struct ukp_object *obj,
		       const struct ukp_usdt_note *n)
{
	const char *s = n->args;

	memset(probe, 0, sizeof(*probe));
	probe->size = sizeof(*probe);
	probe->provider = n->provider;
	probe->name = n->name;
	probe->args = n->args;
	probe->addr = n->addr;
	probe->semaphore = n->sem;
	probe->modpath = obj->path;
	probe->modname = obj->name;
	probe->modbase = obj->base;
	while (*s && probe->nargs < USDT_ARG_MAX) {
		struct usdt_arg *a = &probe->arg[probe->nargs++];
		const char *end, *at, *op;
		struct ukp_usdt_op uop;
		long size = 8;

		while (*s == ' ')
			s++;
		/* (AArch64's "8@[sp, 16]" has a blank inside its brackets) */
		for (end = s; *end && (*end != ' ' || (memchr(s, '[', (size_t)(end - s)) &&
							!memchr(s, ']', (size_t)(end - s))));
		     end++)
			;
		if (end == s) {
			probe->nargs--;
			break;
		}
		a->text = s;
		a->textlen = (size_t)(end - s);
		at = memchr(s, '@', a->textlen);
		op = s;
		if (at) {
			char *e;

			size = strtol(s, &e, 10);
			op = at + 1;
			if (e != at || (labs(size) != 1 && labs(size) != 2 && labs(size) != 4 &&
					labs(size) != 8)) {
				s = end;
				continue; /* kind 0 */
			}
		}
		a->is_signed = size < 0;
		a->size = (int)labs(size);
		if (arch_usdt_operand(op, (size_t)(end - op), &uop) == 0) {
			a->kind = uop.kind;
			a->reg = uop.reg;
			a->off = uop.off;
			if (uop.kind == USDT_ARG_INDEX) {
				a->index = (unsigned char)uop.index;
				a->scale = (unsigned char)uop.scale;
			}
			if ((uop.kind == USDT_ARG_INDEX || uop.kind == USDT_ARG_ADDR) && uop.sym) {
				/* a symbol as displacement: its address (an
				 * array's, non-PIC code; absolute for a loaded
				 * object), an ADDR's offset added to it */
				uintptr_t at;

				a->kind = 0;
				if (!sym_address(obj, uop.sym, uop.symlen, &at)) {
					a->kind = uop.kind;
					a->addr = at + (uop.kind == USDT_ARG_ADDR ? (unsigned long)uop.off : 0);
				}
				if (uop.kind == USDT_ARG_ADDR)
					a->off = 0; /* (an INDEX keeps its displacement) */
			} else if (uop.kind == USDT_ARG_ADDR) {
				a->addr = (unsigned long)uop.off + obj->base;
				a->off = 0;
			}
		}
		s = end;
	}
}

struct find {
	const char *prov, *name;
	size_t plen;
	const struct ukp_object *obj;
	const struct ukp_usdt_note *note;
};

/* [reg] fn for every note of obj; its first non-zero return. */
static int walk_object(const struct ukp_object *obj,
		       int (*fn)(void *data, const struct usdt_probe *probe), void *data)
{
	const struct ukp_usdt_notes *ns = ukp_usdt_notes(obj);
	struct usdt_probe *probe;
	size_t k;
	int ret = 0;

	if (!ns)
		return -ENOMEM;
	probe = malloc(sizeof(*probe));
	if (!probe)
		return -ENOMEM;
	for (k = 0; k < ns->n && !ret; k++) {
		probe_fill(probe, obj, &ns->v[k]);
		ret = fn(data, probe);
	}
	free(probe);
	return ret;
}

UKPROBES_API int usdt_on_each_probe(const char *modname,
				    int (*fn)(void *data, const struct usdt_probe *probe),
				    void *data)
{
	const struct ukp_object *obj;
	size_t i;
	int ret = 0;

	if (!fn)
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	for (i = 0; !ret && (obj = ukp_object_nth(i)); i++)
		if (!modname || ukp_object_matches(obj, modname))
			ret = walk_object(obj, fn, data);
	ukp_unlock_for_show();
	return ret;
}

UKPROBES_API int module_file_usdt_on_each_probe(const char *modfile,
						int (*fn)(void *data,
							  const struct usdt_probe *probe),
						void *data)
{
	const struct ukp_object *obj = NULL;
	char *path;
	int ret;

	if (!modfile || !fn)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	/* searched before the lock: the search may dlclose() */
	path = ukp_module_file_find(modfile);
	if (ukp_lock_for_show()) {
		free(path);
		return -EBUSY;
	}
	ret = -ENOENT;
	if (path)
		obj = ukp_file_object(path, &ret);
	if (obj)
		ret = walk_object(obj, fn, data);
	ukp_unlock_for_show();
	free(path);
	return ret;
}

static int put(const char **dst, char *buf, size_t len, size_t *used)
{
	size_t n = strlen(*dst) + 1;

	if (n > len - *used)
		return -ERANGE;
	memcpy(buf + *used, *dst, n);
	*dst = buf + *used;
	*used += n;
	return 0;
}

UKPROBES_API int usdt_find(const char *name, struct usdt_probe *probe, char *buf, size_t len)
{
	uintptr_t addr;
	const struct ukp_object *obj;
	const struct ukp_usdt_note *n;
	size_t used = 0;
	const char *args;
	int ret, i;

	if (!name || !probe || probe->size != sizeof(*probe) || !buf || !len)
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	ret = ukp_usdt_lookup(name, &addr);
	n = ret ? NULL : ukp_usdt_note_at(addr, &obj);
	if (!ret && !n)
		ret = -ENOENT;
	if (!ret) {
		probe_fill(probe, obj, n);
		args = probe->args;
		ret = put(&probe->provider, buf, len, &used) ?: put(&probe->name, buf, len, &used) ?:
		      put(&probe->args, buf, len, &used) ?: put(&probe->modpath, buf, len, &used);
		if (!ret) {
			probe->modname = probe->modpath + (obj->name - obj->path);
			for (i = 0; i < probe->nargs; i++)
				probe->arg[i].text = probe->args + (probe->arg[i].text - args);
		}
	}
	ukp_unlock_for_show();
	return ret;
}
