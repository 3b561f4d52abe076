/* SPDX-License-Identifier: MIT */
/*
 * The kallsyms look-ups (src/kallsyms.c) on libc and zlib as this
 * process has them loaded: names to addresses (what dlsym says), an
 * IFUNC to the implementation the process uses, the walk over every
 * function, and addresses back to text.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
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
