/* SPDX-License-Identifier: MIT */
/*
 * The kallsyms look-ups (src/kallsyms.c) on libc and zlib as this
 * process has them loaded: names to addresses (what dlsym says), an
 * IFUNC to the implementation the process uses, the walk over every
 * function, and addresses back to text; per object, and with each
 * symbol's size, kind and object (struct ksym_info), where variables
 * (KSYM_DATA) come too: by name, by address and in the walk.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "ukprobes.h"

Test(kallsyms, lookup_name)
{
	cr_assert_eq(kallsyms_lookup_name("libz.so.1:deflate"), (unsigned long)(uintptr_t)&deflate);
	cr_assert_eq(kallsyms_lookup_name("deflate"), (unsigned long)(uintptr_t)&deflate);
	/* libc's own malloc (the sanitizers put theirs first in the global
	 * scope) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	cr_assert(libc);
	cr_assert_eq(kallsyms_lookup_name("libc.so.6:malloc"),
		     (unsigned long)(uintptr_t)dlsym(libc, "malloc"));
	dlclose(libc);
	cr_assert_eq(kallsyms_lookup_name("libc.so.6:no_such_function_x"), 0);
	cr_assert_eq(kallsyms_lookup_name("no_such_object.so:malloc"), 0);
	cr_assert_eq(kallsyms_lookup_name(NULL), 0);
}

Test(kallsyms, ifunc)
{
	/* strlen is an IFUNC: its address is the implementation the
	 * process calls, not the resolver */
	unsigned long a = kallsyms_lookup_name("libc.so.6:strlen");
	char buf[KSYM_SYMBOL_LEN];
	size_t (*f)(const char *) = (size_t (*)(const char *))a;

	cr_assert_neq(a, 0);
	cr_assert_eq(f("twelve chars"), 12);
	sprint_symbol_no_offset(buf, a);
	cr_assert(strstr(buf, "strlen") && strstr(buf, "[libc.so.6]"), "%s", buf);
}

struct count {
	unsigned long deflate, n;
};

static int counter(void *data, const char *name, unsigned long addr)
{
	struct count *c = data;

	c->n++;
	if (!strcmp(name, "deflate"))
		c->deflate = addr;
	return 0;
}

static int stop_at_third(void *data, const char *name, unsigned long addr)
{
	(void)name;
	(void)addr;
	return ++*(int *)data == 3 ? 42 : 0;
}

Test(kallsyms, on_each_symbol)
{
	struct count c = { 0, 0 };
	int seen = 0;

	cr_assert_eq(kallsyms_on_each_symbol(counter, &c), 0);
	cr_assert_gt(c.n, 2000, "%lu functions", c.n); /* libc alone has more */
	cr_assert_eq(c.deflate, (unsigned long)(uintptr_t)&deflate);
	cr_assert_eq(kallsyms_on_each_symbol(stop_at_third, &seen), 42);
	cr_assert_eq(seen, 3);
	cr_assert_eq(kallsyms_on_each_symbol(NULL, NULL), -EINVAL);
}

Test(kallsyms, sprint)
{
	char buf[KSYM_SYMBOL_LEN];
	int n;

	n = sprint_symbol(buf, (unsigned long)(uintptr_t)&deflate + 4);
	cr_assert(!strncmp(buf, "deflate+0x4/0x", 14) && strstr(buf, " [libz.so.1]"), "%s", buf);
	cr_assert_eq(n, (int)strlen(buf));
	sprint_symbol_no_offset(buf, (unsigned long)(uintptr_t)&deflate + 4);
	cr_assert_str_eq(buf, "deflate [libz.so.1]");
	sprint_symbol(buf, 16);
	cr_assert_str_eq(buf, "0x10");
}

/* ------------------------------------------------ per object, with info */

/* zlib's load bias, as the loader has it */
static unsigned long libz_base(void)
{
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
	struct link_map *lm = NULL;

	cr_assert(h);
	cr_assert_eq(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	dlclose(h);
	return (unsigned long)lm->l_addr;
}

struct names {
	unsigned long deflate, malloc, n;
};

static int names_cb(void *data, const char *name, unsigned long addr)
{
	struct names *c = data;

	c->n++;
	if (!strcmp(name, "deflate"))
		c->deflate = addr;
	if (!strcmp(name, "malloc"))
		c->malloc = addr;
	return 0;
}

Test(kallsyms, module_on_each_symbol)
{
	struct names z = { 0, 0, 0 }, all = { 0, 0, 0 };

	cr_assert_eq(module_kallsyms_on_each_symbol("libz.so.1", names_cb, &z), 0);
	cr_assert_eq(z.deflate, (unsigned long)(uintptr_t)&deflate);
	cr_assert_eq(z.malloc, 0); /* libc's, not zlib's */
	cr_assert_eq(module_kallsyms_on_each_symbol(NULL, names_cb, &all), 0);
	cr_assert_gt(all.n, z.n);
	cr_assert_neq(all.malloc, 0);
	cr_assert_eq(module_kallsyms_on_each_symbol("no_such_object.so", names_cb, &z), 0);
	cr_assert_eq(module_kallsyms_on_each_symbol("libz.so.1", NULL, NULL), -EINVAL);
}

struct infos {
	struct ksym_info deflate, strlen;
	char deflate_mod[64];
	unsigned long n, bad;
};

static int infos_cb(void *data, const struct ksym_info *sym)
{
	struct infos *c = data;

	c->n++;
	if (sym->size != sizeof(*sym) || !sym->modname || !sym->modpath ||
	    strcmp(sym->modname, strrchr(sym->modpath, '/') + 1))
		c->bad++;
	if (!strcmp(sym->name, "deflate")) {
		c->deflate = *sym;
		snprintf(c->deflate_mod, sizeof(c->deflate_mod), "%s", sym->modname);
	}
	if (!strcmp(sym->name, "strlen") && !strcmp(sym->modname, "libc.so.6"))
		c->strlen = *sym;
	return 0;
}

Test(kallsyms, module_on_each_symbol_info)
{
	struct infos c;
	size_t (*f)(const char *);
	unsigned long impl;

	memset(&c, 0, sizeof(c));
	cr_assert_eq(module_kallsyms_on_each_symbol_info(NULL, infos_cb, &c), 0);
	cr_assert_eq(c.bad, 0, "%lu of %lu symbols without their object", c.bad, c.n);
	cr_assert_eq(c.deflate.addr, (unsigned long)(uintptr_t)&deflate);
	cr_assert_str_eq(c.deflate_mod, "libz.so.1");
	cr_assert_eq(c.deflate.modbase, libz_base());
	cr_assert_gt(c.deflate.symsize, 0);
	cr_assert_eq(c.deflate.flags & (KSYM_FUNC | KSYM_GLOBAL | KSYM_IFUNC | KSYM_MAIN),
		     KSYM_FUNC | KSYM_GLOBAL);
	/* an IFUNC: flagged, at its resolver; kallsyms_lookup_ifunc gives
	 * the implementation the process calls */
	cr_assert(c.strlen.flags & KSYM_IFUNC);
	cr_assert_neq(c.strlen.addr, kallsyms_lookup_name("libc.so.6:strlen"));
	cr_assert_eq(kallsyms_lookup_ifunc(c.strlen.addr, "strlen", &impl), 0);
	f = (size_t (*)(const char *))impl;
	cr_assert_eq(f("twelve chars"), 12);
	cr_assert_eq(impl, kallsyms_lookup_name("libc.so.6:strlen"));
	/* not an IFUNC there, or not that name */
	cr_assert_eq(kallsyms_lookup_ifunc(c.deflate.addr, "deflate", &impl), -ENOENT);
	cr_assert_eq(kallsyms_lookup_ifunc(c.strlen.addr, "no_such_function_x", &impl), -ENOENT);
	cr_assert_eq(kallsyms_lookup_ifunc(c.strlen.addr, NULL, &impl), -EINVAL);
	cr_assert_eq(module_kallsyms_on_each_symbol_info("libz.so.1", NULL, NULL), -EINVAL);
}

/* a function of the program itself */
__attribute__((noinline)) int kallsyms_test_own_function(int x)
{
	return x * 3 + 1;
}

Test(kallsyms, lookup_info)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];
	static char heap_like[64];
	int x = 0;

	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&deflate + 4, &info, buf,
					  sizeof(buf)), 0);
	cr_assert_str_eq(info.name, "deflate");
	cr_assert_eq(info.addr, (unsigned long)(uintptr_t)&deflate);
	cr_assert_str_eq(info.modname, "libz.so.1");
	cr_assert(strstr(info.modpath, "libz.so.1"), "%s", info.modpath);
	cr_assert_eq(info.modbase, libz_base());
	cr_assert_eq(info.flags & KSYM_MAIN, 0);
	/* the program's own: KSYM_MAIN, the kernel's vmlinux */
	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&kallsyms_test_own_function,
					  &info, buf, sizeof(buf)), 0);
	cr_assert_str_eq(info.name, "kallsyms_test_own_function");
	cr_assert(info.flags & KSYM_MAIN);
	cr_assert_eq(kallsyms_test_own_function(x), 1);
	/* in the program's data: no function, but the variable (its local
	 * symbol "heap_like.N") */
	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&heap_like[10], &info, buf,
					  sizeof(buf)), 0);
	/* GCC names it heap_like.N, clang <function>.heap_like */
	cr_assert(strstr(info.name, "heap_like"), "%s", info.name);
	cr_assert_eq(info.addr, (unsigned long)(uintptr_t)heap_like);
	/* at least its size: AddressSanitizer pads globals with a redzone */
	cr_assert_geq(info.symsize, sizeof(heap_like));
	cr_assert_eq(info.flags & (KSYM_DATA | KSYM_FUNC | KSYM_GLOBAL | KSYM_MAIN),
		     KSYM_DATA | KSYM_MAIN);
	/* in the program's object but in no symbol: its ELF header */
	cr_assert_eq(kallsyms_lookup_info(info.modbase, &info, buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(info.name, "");
	cr_assert(info.modpath && (info.flags & KSYM_MAIN));
	/* on the stack: in no object */
	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&x, &info, buf, sizeof(buf)),
		     -ENOENT);
	cr_assert_null(info.modpath);
	/* the caller's struct and buffer */
	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&deflate, &info, buf, 4),
		     -ERANGE);
	info.size = sizeof(info) - 1;
	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&deflate, &info, buf,
					  sizeof(buf)), -EINVAL);
	cr_assert_eq(kallsyms_lookup_info((unsigned long)(uintptr_t)&deflate, NULL, buf,
					  sizeof(buf)), -EINVAL);
}

Test(kallsyms, lookup_name_info)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];

	cr_assert_eq(kallsyms_lookup_name_info("libz.so.1:deflate", &info, buf, sizeof(buf)), 0);
	cr_assert_eq(info.addr, (unsigned long)(uintptr_t)&deflate);
	cr_assert_str_eq(info.modname, "libz.so.1");
	cr_assert_gt(info.symsize, 0);
	cr_assert_eq(info.flags & KSYM_IFUNC, 0);
	/* strlen names an IFUNC; the address is its implementation's */
	cr_assert_eq(kallsyms_lookup_name_info("libc.so.6:strlen", &info, buf, sizeof(buf)), 0);
	cr_assert(info.flags & KSYM_IFUNC);
	cr_assert_eq(info.addr, kallsyms_lookup_name("libc.so.6:strlen"));
	cr_assert_eq(kallsyms_lookup_name_info("libz.so.1:no_such_function_x", &info, buf,
					       sizeof(buf)), -ENOENT);
	cr_assert_eq(kallsyms_lookup_name_info(NULL, &info, buf, sizeof(buf)), -EINVAL);
}

Test(kallsyms, find_module_info)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];

	cr_assert_eq(find_module_info("libz.so.1", &info, buf, sizeof(buf)), 0);
	cr_assert_eq(info.modbase, libz_base());
	cr_assert_str_eq(info.modname, "libz.so.1");
	cr_assert_str_eq(info.name, "");
	cr_assert_eq(info.flags & KSYM_MAIN, 0);
	/* the program, by the name it was started by */
	cr_assert_eq(find_module_info(program_invocation_short_name, &info, buf, sizeof(buf)), 0);
	cr_assert(info.flags & KSYM_MAIN);
	cr_assert_eq(find_module_info("no_such_object.so", &info, buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(find_module_info(NULL, &info, buf, sizeof(buf)), -EINVAL);
}

/* ------------------------------------------------------ data symbols */

/* a variable of the program, global */
int kallsyms_test_own_variable[3] = { 1, 2, 3 };

Test(kallsyms, data_by_name)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	unsigned long libc_stdout;

	cr_assert(libc);
	libc_stdout = (unsigned long)(uintptr_t)dlsym(libc, "stdout");
	dlclose(libc);
	/* libc's own (the program may have a copy of it) */
	cr_assert_eq(kallsyms_lookup_name_info("libc.so.6:stdout", &info, buf, sizeof(buf)), 0);
	cr_assert_eq(info.addr, libc_stdout);
	cr_assert_eq(info.symsize, sizeof(stdout));
	cr_assert_eq(info.flags & (KSYM_DATA | KSYM_FUNC | KSYM_IFUNC | KSYM_GLOBAL),
		     KSYM_DATA | KSYM_GLOBAL);
	cr_assert_str_eq(info.modname, "libc.so.6");
	/* without object: the one the dynamic linker bound, as functions */
	cr_assert_eq(kallsyms_lookup_name_info("stdout", &info, buf, sizeof(buf)), 0);
	cr_assert_eq(info.addr, (unsigned long)(uintptr_t)&stdout);
	cr_assert_eq(kallsyms_lookup_name_info("kallsyms_test_own_variable", &info, buf,
					       sizeof(buf)), 0);
	cr_assert_eq(info.addr, (unsigned long)(uintptr_t)kallsyms_test_own_variable);
	cr_assert_geq(info.symsize, sizeof(kallsyms_test_own_variable)); /* ASan pads */
	cr_assert(info.flags & KSYM_MAIN);
	/* a function of the name wins, and stays a function */
	cr_assert_eq(kallsyms_lookup_name_info("libz.so.1:deflate", &info, buf, sizeof(buf)), 0);
	cr_assert_eq(info.flags & (KSYM_DATA | KSYM_FUNC), KSYM_FUNC);
	/* the name-only look-up is unchanged: functions only */
	cr_assert_eq(kallsyms_lookup_name("kallsyms_test_own_variable"), 0);
	cr_assert_eq(kallsyms_lookup_name_info("libz.so.1:stdout", &info, buf, sizeof(buf)),
		     -ENOENT);
	cr_assert_eq(kallsyms_lookup_name_info("libc.so.6:no_such_variable_x", &info, buf,
					       sizeof(buf)), -ENOENT);
}

Test(kallsyms, data_by_address)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN], sp[KSYM_SYMBOL_LEN];
	unsigned long a = (unsigned long)(uintptr_t)&kallsyms_test_own_variable[2];

	cr_assert_eq(kallsyms_lookup_info(a, &info, buf, sizeof(buf)), 0);
	cr_assert_str_eq(info.name, "kallsyms_test_own_variable");
	cr_assert_eq(info.addr, (unsigned long)(uintptr_t)kallsyms_test_own_variable);
	cr_assert_eq(info.flags & (KSYM_DATA | KSYM_GLOBAL | KSYM_MAIN),
		     KSYM_DATA | KSYM_GLOBAL | KSYM_MAIN);
	/* sprint_symbol names functions only, as before */
	sprint_symbol(sp, a);
	cr_assert(!strncmp(sp, "0x", 2), "%s", sp);
	/* in a library's variable */
	cr_assert_eq(kallsyms_lookup_name_info("libc.so.6:stdout", &info, buf, sizeof(buf)), 0);
	a = info.addr;
	cr_assert_eq(kallsyms_lookup_info(a + 4, &info, buf, sizeof(buf)), 0);
	cr_assert_eq(info.addr, a);
	cr_assert(info.flags & KSYM_DATA);
	cr_assert_str_eq(info.modname, "libc.so.6");
}

struct kinds {
	unsigned long funcs, data, data_unflagged, data_before_func, stdout_seen;
	const char *last_mod;
	bool in_data;
};

static int kinds_cb(void *arg, const struct ksym_info *sym)
{
	struct kinds *k = arg;

	if (k->last_mod != sym->modpath) /* a new object: its functions come first */
		k->in_data = false;
	k->last_mod = sym->modpath;
	if (sym->flags & KSYM_DATA) {
		k->data++;
		k->in_data = true;
		if (sym->flags & (KSYM_FUNC | KSYM_IFUNC))
			k->data_unflagged++;
		if (!strcmp(sym->name, "stdout") || !strncmp(sym->name, "stdout@", 7))
			k->stdout_seen++;
	} else {
		k->funcs++;
		if (k->in_data)
			k->data_before_func++;
	}
	return 0;
}

static int plain_cb(void *data, const char *name, unsigned long addr)
{
	(void)addr;
	if (!strcmp(name, "stdout") || !strcmp(name, "kallsyms_test_own_variable"))
		++*(unsigned long *)data;
	return 0;
}

Test(kallsyms, data_in_info_walk_only)
{
	struct kinds k;
	unsigned long plain = 0;

	memset(&k, 0, sizeof(k));
	cr_assert_eq(module_kallsyms_on_each_symbol_info("libc.so.6", kinds_cb, &k), 0);
	cr_assert_gt(k.funcs, 1000);
	cr_assert_gt(k.data, 10);
	cr_assert_eq(k.stdout_seen, 1);
	cr_assert_eq(k.data_unflagged, 0);
	cr_assert_eq(k.data_before_func, 0, "a function after the object's data");
	/* the walk without info is the functions' alone */
	cr_assert_eq(kallsyms_on_each_symbol(plain_cb, &plain), 0);
	cr_assert_eq(plain, 0);
}
