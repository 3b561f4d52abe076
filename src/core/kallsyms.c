/* SPDX-License-Identifier: MIT */
/*
 * kallsyms.c - symbol look-ups with the kernel's kallsyms names
 * (kallsyms_lookup_name, kallsyms_on_each_symbol, sprint_symbol) over the
 * library's symbol tables (symbols.c): what a tool needs to name probes
 * and addresses without a symbol reader of its own.
 *
 * [reg] each takes the registry mutex; not from a probe handler (0, or
 * -EBUSY for kallsyms_on_each_symbol).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "symbols/symbols.h"

UKPROBES_API unsigned long kallsyms_lookup_name(const char *name)
{
	uintptr_t addr = 0;
	bool ifunc;

	if (!name || ukp_in_probe_context() || ukp_lock_for_show())
		return 0;
	if (ukp_sym_lookup_name_ifunc(name, &addr, &ifunc))
		addr = 0;
	ukp_unlock_for_show();
	return addr;
}

struct walk {
	int (*fn)(void *data, const char *name, unsigned long addr);
	void *data;
	int ret;
};

static void walk_one(const struct ukp_symres *sym, void *arg)
{
	struct walk *w = arg;
	uintptr_t addr = sym->start;

	if (w->ret)
		return;
	/* an IFUNC stands for the implementation the process uses */
	if (sym->ifunc && ukp_sym_ifunc_impl(sym, &addr))
		return;
	w->ret = w->fn(w->data, sym->name, addr);
}

UKPROBES_API int module_kallsyms_on_each_symbol(const char *modname,
						int (*fn)(void *data, const char *name,
							  unsigned long addr),
						void *data)
{
	struct walk w = { fn, data, 0 };

	if (!fn)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	if (ukp_lock_for_show())
		return -EBUSY;
	ukp_for_each_symbol(modname, walk_one, &w);
	ukp_unlock_for_show();
	return w.ret;
}

UKPROBES_API int kallsyms_on_each_symbol(int (*fn)(void *data, const char *name,
						   unsigned long addr),
					 void *data)
{
	return module_kallsyms_on_each_symbol(NULL, fn, data);
}

static int sprint(char *buffer, unsigned long address, bool offset)
{
	struct ukp_symres sym;
	int n;

	if (!buffer)
		return 0;
	if (ukp_in_probe_context() || ukp_lock_for_show())
		return snprintf(buffer, KSYM_SYMBOL_LEN, "0x%lx", address);
	if (ukp_sym_lookup_addr(address, &sym)) {
		n = snprintf(buffer, KSYM_SYMBOL_LEN, "0x%lx", address);
	} else {
		char off[48] = "";
		const char *obj = sym.obj && !sym.obj->is_main ? sym.obj->name : NULL;

		if (offset)
			snprintf(off, sizeof(off), "+0x%lx/0x%lx", (unsigned long)(address - sym.start),
				 (unsigned long)sym.size);
		n = snprintf(buffer, KSYM_SYMBOL_LEN, obj ? "%s%s [%s]" : "%s%s", sym.name, off,
			     obj ? obj : "");
	}
	ukp_unlock_for_show();
	return n < KSYM_SYMBOL_LEN ? n : KSYM_SYMBOL_LEN - 1;
}

UKPROBES_API int sprint_symbol(char *buffer, unsigned long address)
{
	return sprint(buffer, address, true);
}

UKPROBES_API int sprint_symbol_no_offset(char *buffer, unsigned long address)
{
	return sprint(buffer, address, false);
}
