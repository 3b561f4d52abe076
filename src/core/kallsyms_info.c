/* SPDX-License-Identifier: MIT */
/*
 * kallsyms_info.c - the kallsyms look-ups with each symbol's size, kind
 * and object (struct ksym_info): what a tool needs to name what it probes
 * (ukprobe's agent) without the library's internals.
 *
 * Data symbols (KSYM_DATA) come where no function answers: by address
 * outside every function, by name when no function has it, and in the
 * walk after each object's functions.
 *
 * Files not loaded (a library the program will dlopen() later) get the
 * same look-ups, from the file itself (symbols.c's ukp_file_object): its
 * symbols at their ELF addresses, modbase 0.
 *
 * [reg] each takes the registry mutex; not from a probe handler (-EBUSY).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "symbols/symbols.h"

/* info's object fields from obj (or none), its strings copied into
 * buf[*used..len). 0 or -ERANGE. */
static int put_str(const char **dst, const char *src, char *buf, size_t len, size_t *used)
{
	size_t n = strlen(src) + 1;

	if (n > len - *used)
		return -ERANGE;
	memcpy(buf + *used, src, n);
	*dst = buf + *used;
	*used += n;
	return 0;
}

static int put_obj(struct ksym_info *info, const struct ukp_object *obj, char *buf, size_t len,
		   size_t *used)
{
	info->modname = info->modpath = NULL;
	info->modbase = 0;
	if (!obj)
		return 0;
	if (obj->is_main)
		info->flags |= KSYM_MAIN;
	info->modbase = obj->base;
	if (put_str(&info->modpath, obj->path, buf, len, used))
		return -ERANGE;
	/* the file name is the path's last part */
	info->modname = info->modpath + (obj->name - obj->path);
	return 0;
}

static unsigned int sym_flags(const struct ukp_symres *sym)
{
	return (sym->func ? KSYM_FUNC : 0) | (sym->ifunc ? KSYM_IFUNC : 0) |
	       (sym->global ? KSYM_GLOBAL : 0) | (sym->debug ? KSYM_DEBUG : 0) |
	       (sym->data ? KSYM_DATA : 0);
}

/* [reg, lock held] info from a look-up's result (sym NULL: addr in no
 * function, obj its object or NULL). */
static int fill(struct ksym_info *info, const struct ukp_symres *sym,
		const struct ukp_object *obj, char *buf, size_t len)
{
	size_t used = 0;

	info->name = "";
	info->addr = info->symsize = 0;
	info->flags = 0;
	if (sym) {
		info->addr = sym->start;
		info->symsize = sym->size;
		info->flags = sym_flags(sym);
		if (put_str(&info->name, sym->name, buf, len, &used))
			return -ERANGE;
		obj = sym->obj;
	}
	return put_obj(info, obj, buf, len, &used);
}

static bool bad_args(const struct ksym_info *info, const char *buf, size_t len)
{
	return !info || info->size < sizeof(*info) || !buf || !len;
}

UKPROBES_API int kallsyms_lookup_info(unsigned long addr, struct ksym_info *info, char *buf,
				      size_t len)
{
	struct ukp_symres sym;
	int ret;

	if (bad_args(info, buf, len))
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	/* a function first: data symbols name what no function holds */
	if (ukp_sym_lookup_addr(addr, &sym) == 0 || ukp_data_lookup_addr(addr, &sym) == 0) {
		ret = fill(info, &sym, NULL, buf, len);
	} else {
		ret = fill(info, NULL, ukp_object_of(addr), buf, len);
		ret = ret ? ret : -ENOENT;
	}
	ukp_unlock_for_show();
	return ret;
}

UKPROBES_API int kallsyms_lookup_name_info(const char *name, struct ksym_info *info, char *buf,
					   size_t len)
{
	struct ukp_symres sym;
	uintptr_t addr;
	bool ifunc = false;
	int ret = -ENOENT;

	if (!name || bad_args(info, buf, len))
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	/* the code the name stands for (an IFUNC's implementation), then the
	 * function there for its size and object */
	if (ukp_sym_lookup_name_ifunc(name, &addr, &ifunc) == 0 &&
	    ukp_sym_lookup_addr(addr, &sym) == 0) {
		ret = fill(info, &sym, NULL, buf, len);
		info->addr = addr;
		info->flags = (info->flags & ~KSYM_IFUNC) | (ifunc ? KSYM_IFUNC : 0);
	} else if (ukp_data_lookup_name(name, &sym) == 0) {
		/* no function of that name: a variable (@SYM, watchpoints) */
		ret = fill(info, &sym, NULL, buf, len);
	}
	ukp_unlock_for_show();
	return ret;
}

UKPROBES_API int find_module_info(const char *modname, struct ksym_info *info, char *buf,
				  size_t len)
{
	const struct ukp_object *obj;
	int ret = -ENOENT;

	if (!modname || bad_args(info, buf, len))
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	obj = ukp_object_named(modname);
	if (obj)
		ret = fill(info, NULL, obj, buf, len);
	ukp_unlock_for_show();
	return ret;
}

UKPROBES_API int kallsyms_lookup_ifunc(unsigned long resolver, const char *name,
					unsigned long *impl)
{
	uintptr_t a;
	int ret;

	if (!name || !impl)
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	ret = ukp_sym_ifunc_impl_at(resolver, name, &a);
	ukp_unlock_for_show();
	if (!ret)
		*impl = a;
	return ret;
}

struct walk {
	int (*fn)(void *data, const struct ksym_info *sym);
	void *data;
	int ret;
};

/* [reg, lock held] One symbol of the walk: strings point into the
 * library's tables for the callback's duration. An IFUNC comes at its
 * resolver: finding every implementation would cost a walk more than
 * the few a caller wants (kallsyms_lookup_ifunc). */
static void walk_one(const struct ukp_symres *sym, void *arg)
{
	struct walk *w = arg;
	struct ksym_info info = { .size = sizeof(info) };

	if (w->ret)
		return;
	info.name = sym->name;
	info.addr = sym->start;
	info.symsize = sym->size;
	info.flags = sym_flags(sym) | (sym->obj->is_main ? KSYM_MAIN : 0);
	info.modname = sym->obj->name;
	info.modpath = sym->obj->path;
	info.modbase = sym->obj->base;
	w->ret = w->fn(w->data, &info);
}

UKPROBES_API int module_kallsyms_on_each_symbol_info(const char *modname,
						     int (*fn)(void *data,
							       const struct ksym_info *sym),
						     void *data)
{
	struct walk w = { fn, data, 0 };

	if (!fn)
		return -EINVAL;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return -EBUSY;
	ukp_for_each_symbol_kind(modname, true, walk_one, &w);
	ukp_unlock_for_show();
	return w.ret;
}

/* ------------------------------------------------ files not loaded */

/* [reg] The record of the file modfile names (found before the lock was
 * taken: path), *err 0; or NULL with *err. */
static const struct ukp_object *file_of(const char *path, int *err)
{
	*err = -ENOENT;
	if (!path)
		return NULL;
	*err = 0;
	return ukp_file_object(path, err);
}

/* [reg] The look-ups' lock taken and *obj the record of the file modfile
 * names (NULL with the error returned), *path its path: file_close()
 * after. -EBUSY: no lock taken, nothing to close. */
static int file_open(const char *modfile, char **path, const struct ukp_object **obj)
{
	int ret;

	*path = NULL;
	*obj = NULL;
	if (ukp_in_probe_context())
		return -EBUSY;
	/* searched before the lock: the search may dlclose() */
	*path = ukp_module_file_find(modfile);
	if (ukp_lock_for_show()) {
		free(*path);
		*path = NULL;
		return -EBUSY;
	}
	*obj = file_of(*path, &ret);
	return ret == -EBUSY ? -EAGAIN : ret;
}

static void file_close(char *path)
{
	ukp_unlock_for_show();
	free(path);
}

UKPROBES_API int find_module_file(const char *modname, char *buf, size_t len)
{
	char *path;
	size_t n;

	if (!modname || !buf || !len)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	path = ukp_module_file_find(modname);
	if (!path)
		return -ENOENT;
	n = strlen(path) + 1;
	if (n <= len)
		memcpy(buf, path, n);
	free(path);
	return n <= len ? 0 : -ERANGE;
}

UKPROBES_API int module_file_kallsyms_lookup_name_info(const char *modfile, const char *name,
						       struct ksym_info *info, char *buf,
						       size_t len)
{
	const struct ukp_object *obj;
	struct ukp_symres sym;
	char *path;
	int ret;

	if (!modfile || !name || bad_args(info, buf, len))
		return -EINVAL;
	ret = file_open(modfile, &path, &obj);
	if (ret == -EBUSY)
		return ret;
	if (obj) {
		/* a function first, as kallsyms_lookup_name_info() */
		ret = ukp_file_sym_named(obj, name, false, &sym);
		if (ret == -ENOENT)
			ret = ukp_file_sym_named(obj, name, true, &sym);
		if (!ret)
			ret = fill(info, &sym, NULL, buf, len);
	}
	file_close(path);
	return ret;
}

UKPROBES_API int module_file_kallsyms_on_each_symbol_info(const char *modfile,
							  int (*fn)(void *data,
								    const struct ksym_info *sym),
							  void *data)
{
	struct walk w = { fn, data, 0 };
	const struct ukp_object *obj;
	char *path;
	int ret;

	if (!modfile || !fn)
		return -EINVAL;
	ret = file_open(modfile, &path, &obj);
	if (ret == -EBUSY)
		return ret;
	if (obj) {
		ukp_file_for_each_symbol(obj, true, walk_one, &w);
		ret = w.ret;
	}
	file_close(path);
	return ret;
}

UKPROBES_API int module_file_on_each_text(const char *modfile,
					  int (*fn)(void *data, unsigned long addr,
						    unsigned long size),
					  void *data)
{
	const struct ukp_object *obj;
	uintptr_t start, end;
	char *path;
	bool exec;
	size_t i;
	int ret;

	if (!modfile || !fn)
		return -EINVAL;
	ret = file_open(modfile, &path, &obj);
	if (ret == -EBUSY)
		return ret;
	for (i = 0; obj && !ret && ukp_object_seg(obj, i, &start, &end, &exec); i++)
		if (exec)
			ret = fn(data, start, end - start);
	file_close(path);
	return ret;
}
