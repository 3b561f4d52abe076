/* SPDX-License-Identifier: MIT */
/*
 * datasyms.c - variables by name and by address (@SYM fetch arguments,
 * w events, data addresses in the output), from libukprobes' symbol
 * tables (kallsyms_lookup_name_info and kallsyms_lookup_info give data
 * symbols, KSYM_DATA, where no function answers).
 * Context: [init] and [reader], never [hit]: the look-ups take the
 * library's registry lock.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

int ukpa_datasym_lookup(const char *object, const char *name, uintptr_t *addr)
{
	uint64_t size;

	return ukpa_datasym_lookup_size(object, name, addr, &size);
}

int ukpa_datasym_lookup_size(const char *object, const char *name, uintptr_t *addr,
			     uint64_t *size)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN], spec[PATH_MAX + KSYM_NAME_LEN];
	int ret = -ENOENT;

	/* the SPEC's object first, then every object (a variable of
	 * another library) */
	if (object && snprintf(spec, sizeof(spec), "%s:%s", object, name) < (int)sizeof(spec))
		ret = kallsyms_lookup_name_info(spec, &info, buf, sizeof(buf));
	if (ret)
		ret = kallsyms_lookup_name_info(name, &info, buf, sizeof(buf));
	if (ret)
		return -ENOENT;
	*addr = info.addr;
	*size = info.symsize;
	return 0;
}

bool ukpa_datasym_format(const struct ksym_info *info, uintptr_t addr, char *buf, size_t len)
{
	/* the name without its version ("stdout@@GLIBC_2.2.5") */
	int n = (int)strcspn(info->name, "@");

	if (!info->symsize || addr - info->addr >= info->symsize)
		return false;
	if (info->flags & KSYM_MAIN)
		snprintf(buf, len, "%.*s+0x%lx/0x%lx", n, info->name, addr - info->addr,
			 info->symsize);
	else
		snprintf(buf, len, "%.*s+0x%lx/0x%lx [%s]", n, info->name, addr - info->addr,
			 info->symsize, info->modname);
	return true;
}

bool ukpa_datasym_symbolize(uintptr_t addr, char *buf, size_t len)
{
	struct ksym_info info = { .size = sizeof(info) };
	char names[PATH_MAX + KSYM_NAME_LEN];

	return kallsyms_lookup_info(addr, &info, names, sizeof(names)) == 0 &&
	       ukpa_datasym_format(&info, addr, buf, len);
}
