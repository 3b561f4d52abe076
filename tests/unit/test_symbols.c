// SPDX-License-Identifier: MIT
/*
 * test_symbols.c - ELF object and symbol lookup (src/symbols.c).
 *
 * The executable is linked with -rdynamic and keeps its .symtab, so both
 * its exported and its static functions are visible. zlib and sqlite are
 * linked in (each test touches them so --as-needed keeps them), and
 * libukptarget.so is dlopen()ed from $UKP_TEST_PROGS for the NOKPROBE and
 * dlclose cases. Criterion runs every test in its own process, so each one
 * starts with an empty symbol cache.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "symbols/debuginfo.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "symbols/symbols.h"
#include "ukp_test.h"
#include "ukprobes.h"

/* ---- functions of our own to look up ---------------------------------- */

UKP_TARGET int ukpt_global_fn(int x)
{
	int i, acc = 0;

	for (i = 0; i < x; i++)
		acc += i * x + (acc >> 3);
	return acc;
}

UKP_TARGET static int ukpt_static_fn(int x)
{
	int i, acc = 1;

	for (i = 0; i < x; i++)
		acc = acc * 3 + i;
	return acc;
}

/* Blacklisted in this object: the section entry must be reported. */
UKP_TARGET int ukpt_nokprobe_fn(int x)
{
	return x * 5 + 1;
}
NOKPROBE_SYMBOL(ukpt_nokprobe_fn);

/*
 * Two versions of one symbol: the linker keeps "ukpt_vfn@UKPT_1" and
 * "ukpt_vfn@@UKPT_2" in .symtab; plain "ukpt_vfn" must find the default.
 */
UKP_TARGET int ukpt_vfn_old(int x)
{
	return x + 100;
}

UKP_TARGET int ukpt_vfn_new(int x)
{
	return x + 200;
}
__asm__(".symver ukpt_vfn_old, ukpt_vfn@UKPT_1");
__asm__(".symver ukpt_vfn_new, ukpt_vfn@@UKPT_2");

int ukpt_data_object = 42;

/*
 * Same name as a global of libukptarget.so: the library's global must win
 * over this static even though the executable is searched first.
 */
UKP_TARGET static int ukptarget_add(int a, int b)
{
	return a - b;
}

/*
 * Hand-made symbols: an unsized function (extends to the next symbol),
 * then one address carrying a local label, a global NOTYPE alias and a
 * sized global function (the function must name the address), then
 * padding that belongs to no symbol.
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl ukpt_asm_unsized\n"
	".type ukpt_asm_unsized, @function\n"
	"ukpt_asm_unsized:\n"
	"	nop\n nop\n nop\n ret\n"
	"ukpt_asm_alias_local:\n"
	".globl ukpt_asm_alias_notype\n"
	"ukpt_asm_alias_notype:\n"
	".globl ukpt_asm_sized\n"
	".type ukpt_asm_sized, @function\n"
	"ukpt_asm_sized:\n"
	"	nop\n nop\n nop\n nop\n nop\n nop\n nop\n ret\n"
	".size ukpt_asm_sized, . - ukpt_asm_sized\n"
	"	int3\n int3\n int3\n int3\n int3\n int3\n int3\n int3\n");
extern char ukpt_asm_unsized[], ukpt_asm_sized[];

/* ---- helpers ----------------------------------------------------------- */

/* Make sure zlib and sqlite are needed (and so loaded). */
static void touch_libs(void)
{
	cr_assert_not_null(zlibVersion());
	cr_assert_not_null(sqlite3_libversion());
}

static uintptr_t dlsym_addr(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);

	cr_assert_not_null(p, "dlsym(%s) failed", name);
	return (uintptr_t)p;
}

static uintptr_t lookup_ok(const char *spec)
{
	uintptr_t addr = 0;
	int ret = ukp_sym_lookup_name(spec, &addr);

	cr_assert_eq(ret, 0, "lookup of \"%s\" returned %d", spec, ret);
	cr_assert_neq(addr, 0, "lookup of \"%s\" gave address 0", spec);
	return addr;
}

static const char *exe_basename(void)
{
	static char buf[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	cr_assert_gt(len, 0);
	buf[len] = '\0';
	slash = strrchr(buf, '/');
	return slash ? slash + 1 : buf;
}

static char *target_path(void)
{
	const char *dir = getenv("UKP_TEST_PROGS");
	char *path;

	cr_assert_not_null(dir, "UKP_TEST_PROGS is not set");
	cr_assert_neq(asprintf(&path, "%s/libukptarget.so", dir), -1);
	return path;
}

static void *open_target(void)
{
	char *path = target_path();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	cr_assert_not_null(h, "dlopen(%s): %s", path, dlerror());
	free(path);
	return h;
}

/* ---- the executable's own functions ----------------------------------- */

Test(symbols, own_global_and_static_functions)
{
	char spec[PATH_MAX + 64];
	struct ukp_symres res;
	uintptr_t addr;

	cr_assert_eq(lookup_ok("ukpt_global_fn"), (uintptr_t)&ukpt_global_fn);
	cr_assert_eq(lookup_ok("ukpt_static_fn"), (uintptr_t)&ukpt_static_fn);

	/* The main program answers to its basename too. */
	snprintf(spec, sizeof(spec), "%s:ukpt_static_fn", exe_basename());
	cr_assert_eq(lookup_ok(spec), (uintptr_t)&ukpt_static_fn);

	/* An address in the middle of the static function. */
	addr = (uintptr_t)&ukpt_static_fn;
	cr_assert_eq(ukp_sym_lookup_addr(addr + 3, &res), 0);
	cr_assert_str_eq(res.name, "ukpt_static_fn");
	cr_assert_eq(res.start, addr);
	cr_assert_gt(res.size, 3);
	cr_assert_not_null(res.obj);
	cr_assert(res.obj->is_main);
	cr_assert_str_eq(res.obj->name, exe_basename());

	/* Its last byte is still inside, the byte after is not. */
	cr_assert_eq(ukp_sym_lookup_addr(res.start + res.size - 1, &res), 0);
	cr_assert_str_eq(res.name, "ukpt_static_fn");
	if (ukp_sym_lookup_addr(addr + res.size, &res) == 0)
		cr_assert_str_neq(res.name, "ukpt_static_fn");

	/* Called once so that they are real, reachable code. */
	cr_assert_eq(ukpt_static_fn(2), 10);
	cr_assert_eq(ukpt_global_fn(2), 2);
}

Test(symbols, versioned_names)
{
	struct ukp_symres res;
	uintptr_t addr;

	/* Plain name: the default (@@) version. */
	cr_assert_eq(lookup_ok("ukpt_vfn"), (uintptr_t)&ukpt_vfn_new);
	/* A version spelled out matches exactly that one. */
	cr_assert_eq(lookup_ok("ukpt_vfn@UKPT_1"), (uintptr_t)&ukpt_vfn_old);
	cr_assert_eq(lookup_ok("ukpt_vfn@@UKPT_2"), (uintptr_t)&ukpt_vfn_new);
	cr_assert_eq(ukp_sym_lookup_name("ukpt_vfn@UKPT_9", &addr), -ENOENT);

	/* At an aliased address we name one of its symbols, stably. */
	cr_assert_eq(ukp_sym_lookup_addr((uintptr_t)&ukpt_vfn_old + 1, &res), 0);
	cr_assert_eq(res.start, (uintptr_t)&ukpt_vfn_old);
	cr_assert(!strcmp(res.name, "ukpt_vfn_old") || !strcmp(res.name, "ukpt_vfn@UKPT_1"),
		  "unexpected name %s", res.name);
}

Test(symbols, unsized_and_aliases)
{
	uintptr_t unsized = (uintptr_t)ukpt_asm_unsized;
	uintptr_t sized = (uintptr_t)ukpt_asm_sized;
	struct ukp_symres res;

	cr_assert_eq(sized, unsized + 4);

	/* st_size 0: runs up to the next symbol. */
	cr_assert_eq(ukp_sym_lookup_addr(unsized + 3, &res), 0);
	cr_assert_str_eq(res.name, "ukpt_asm_unsized");
	cr_assert_eq(res.start, unsized);
	cr_assert_eq(res.size, 4);

	/* Three names at one address: the sized global function wins. */
	cr_assert_eq(ukp_sym_lookup_addr(sized, &res), 0);
	cr_assert_str_eq(res.name, "ukpt_asm_sized");
	cr_assert_eq(res.size, 8);
	cr_assert_eq(ukp_sym_lookup_addr(sized + 7, &res), 0);
	cr_assert_str_eq(res.name, "ukpt_asm_sized");

	/* The padding after it is not part of it. */
	if (ukp_sym_lookup_addr(sized + 8, &res) == 0)
		cr_assert_str_neq(res.name, "ukpt_asm_sized");

	/* Each of them still resolves by name. */
	cr_assert_eq(lookup_ok("ukpt_asm_unsized"), unsized);
	cr_assert_eq(lookup_ok("ukpt_asm_alias_notype"), sized);
	cr_assert_eq(lookup_ok("ukpt_asm_alias_local"), sized);
}

/* ---- shared libraries --------------------------------------------------- */

Test(symbols, zlib_deflate)
{
	char spec[PATH_MAX + 64], real[PATH_MAX];
	uintptr_t want, off;
	struct ukp_symres res;
	Dl_info info;
	const char *rbase;

	touch_libs();
	want = dlsym_addr("deflate");

	cr_assert_eq(lookup_ok("deflate"), want);
	cr_assert_eq(lookup_ok("libz.so.1:deflate"), want);

	/* The full path it was loaded by, and the real file's basename
	 * ("libz.so.1.2.13"). */
	cr_assert_neq(dladdr((void *)want, &info), 0);
	snprintf(spec, sizeof(spec), "%s:deflate", info.dli_fname);
	cr_assert_eq(lookup_ok(spec), want);
	cr_assert_not_null(realpath(info.dli_fname, real));
	rbase = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	snprintf(spec, sizeof(spec), "%s:deflate", rbase);
	cr_assert_eq(lookup_ok(spec), want);

	/* An address inside deflate: deflate+off. */
	off = 0x10;
	cr_assert_eq(ukp_sym_lookup_addr(want + off, &res), 0);
	cr_assert_str_eq(res.name, "deflate");
	cr_assert_eq(res.start, want);
	cr_assert_gt(res.size, off);
	cr_assert_str_eq(res.obj->name, "libz.so.1");
	cr_assert_not(res.obj->is_main);
	cr_assert_eq(ukp_object_of(want), res.obj);
}

Test(symbols, sqlite_open)
{
	touch_libs();
	cr_assert_eq(lookup_ok("sqlite3_open"), dlsym_addr("sqlite3_open"));
	cr_assert_eq(lookup_ok("libsqlite3.so.0:sqlite3_open"), dlsym_addr("sqlite3_open"));
}

Test(symbols, unknown_names)
{
	uintptr_t addr = 0xdead;

	touch_libs();
	cr_assert_eq(ukp_sym_lookup_name("ukpt_no_such_function_xyz", &addr), -ENOENT);
	cr_assert_eq(ukp_sym_lookup_name("libnosuch.so.7:deflate", &addr), -ENOENT);
	/* A real symbol asked of the wrong object. */
	cr_assert_eq(ukp_sym_lookup_name("libz.so.1:sqlite3_open", &addr), -ENOENT);
	/* Data is not a function. */
	cr_assert_eq(ukp_sym_lookup_name("ukpt_data_object", &addr), -ENOENT);
	cr_assert_eq(ukp_sym_lookup_name("", &addr), -ENOENT);
	cr_assert_eq(ukp_sym_lookup_name("libz.so.1:", &addr), -ENOENT);
	cr_assert_eq(addr, 0xdead, "failed lookups must not write the address");
}

/* ---- address classification ------------------------------------------- */

Test(symbols, addr_is_text)
{
	int on_stack = 1;
	struct ukp_symres res;
	void *heap = malloc(64);

	touch_libs();
	cr_assert(ukp_addr_is_text((uintptr_t)&ukpt_global_fn, 1));
	cr_assert(ukp_addr_is_text((uintptr_t)&ukpt_static_fn, 16));
	cr_assert(ukp_addr_is_text(dlsym_addr("deflate"), 8));

	/* Data of a loaded object: in the object, not text. */
	cr_assert_not(ukp_addr_is_text((uintptr_t)&ukpt_data_object, sizeof(int)));
	cr_assert_not_null(ukp_object_of((uintptr_t)&ukpt_data_object));
	cr_assert(ukp_object_of((uintptr_t)&ukpt_data_object)->is_main);
	cr_assert_neq(ukp_sym_lookup_addr((uintptr_t)&ukpt_data_object, &res), 0);

	/* Stack and heap belong to no object. */
	cr_assert_not(ukp_addr_is_text((uintptr_t)&on_stack, sizeof(on_stack)));
	cr_assert_null(ukp_object_of((uintptr_t)&on_stack));
	cr_assert_not(ukp_addr_is_text((uintptr_t)heap, 1));
	cr_assert_eq(ukp_sym_lookup_addr((uintptr_t)&on_stack, &res), -ENOENT);
	free(heap);
}

/* ---- NOKPROBE_SYMBOL ---------------------------------------------------- */

struct nk_find {
	const char *name;
	uintptr_t start;
	uintptr_t end;
	int hits;
};

static void nk_cb(uintptr_t start, uintptr_t end, const char *name, void *arg)
{
	struct nk_find *f = arg;

	if (name && !strcmp(name, f->name)) {
		f->start = start;
		f->end = end;
		f->hits++;
	}
}

Test(symbols, nokprobe_in_shared_object)
{
	struct nk_find f = { .name = "ukptarget_forbidden" };
	struct nk_find g = { .name = "ukptarget_add" };
	void *h = open_target();
	uintptr_t fn = (uintptr_t)dlsym(h, "ukptarget_forbidden");
	size_t n;

	cr_assert_neq(fn, 0);
	n = ukp_for_each_nokprobe(nk_cb, &f);
	cr_assert_eq(f.hits, 1, "ukptarget_forbidden reported %d times", f.hits);
	cr_assert_eq(f.start, fn);
	cr_assert_gt(f.end, f.start);
	cr_assert_lt(f.end - f.start, 4096);
	cr_assert_geq(n, 2, "at least this test's and the library's entries");

	/* The allowed neighbour is not listed. */
	ukp_for_each_nokprobe(nk_cb, &g);
	cr_assert_eq(g.hits, 0);
	dlclose(h);
}

Test(symbols, nokprobe_in_executable)
{
	struct nk_find f = { .name = "ukpt_nokprobe_fn" };
	struct nk_find g = { .name = "ukpt_global_fn" };
	struct ukp_symres res;

	ukp_for_each_nokprobe(nk_cb, &f);
	cr_assert_eq(f.hits, 1);
	cr_assert_eq(f.start, (uintptr_t)&ukpt_nokprobe_fn);
	cr_assert_eq(ukp_sym_lookup_addr((uintptr_t)&ukpt_nokprobe_fn, &res), 0);
	cr_assert_eq(f.end, res.start + res.size);

	/* A function not marked stays out. */
	ukp_for_each_nokprobe(nk_cb, &g);
	cr_assert_eq(g.hits, 0);
	/* A NULL callback still counts. */
	cr_assert_geq(ukp_for_each_nokprobe(NULL, NULL), 1);
}

/* ---- dlopen / dlclose --------------------------------------------------- */

Test(symbols, global_beats_earlier_local)
{
	uintptr_t lib_add, main_add = (uintptr_t)&ukptarget_add;
	char spec[PATH_MAX + 64];
	void *h;

	/* Only the static exists: it is found. */
	cr_assert_eq(lookup_ok("ukptarget_add"), main_add);

	h = open_target();
	lib_add = (uintptr_t)dlsym(h, "ukptarget_add");
	cr_assert_neq(lib_add, 0);
	cr_assert_neq(lib_add, main_add);
	/* The main program comes first, but its definition is local. */
	cr_assert_eq(lookup_ok("ukptarget_add"), lib_add);
	/* Naming the object still reaches the static. */
	snprintf(spec, sizeof(spec), "%s:ukptarget_add", exe_basename());
	cr_assert_eq(lookup_ok(spec), main_add);
	cr_assert_eq(ukptarget_add(5, 3), 2);
	dlclose(h);
}

Test(symbols, dlclose_kills_object)
{
	struct nk_find f = { .name = "ukptarget_forbidden" };
	const struct ukp_object *obj;
	uintptr_t add, forbidden, addr;
	struct ukp_symres res;
	char *path = target_path();
	uint64_t gen0, gen1;
	void *h;

	touch_libs();
	ukp_objects_refresh();
	gen0 = ukp_objects_generation();
	cr_assert_eq(ukp_sym_lookup_name("libukptarget.so:ukptarget_add", &addr), -ENOENT,
		     "library found before dlopen");

	h = open_target();
	add = (uintptr_t)dlsym(h, "ukptarget_add");
	forbidden = (uintptr_t)dlsym(h, "ukptarget_forbidden");
	cr_assert_neq(add, 0);

	cr_assert_not(ukp_objects_refresh(), "a dlopen removed nothing");
	gen1 = ukp_objects_generation();
	cr_assert_gt(gen1, gen0);
	cr_assert_eq(lookup_ok("libukptarget.so:ukptarget_add"), add);
	obj = ukp_object_of(add);
	cr_assert_not_null(obj);
	cr_assert_str_eq(obj->name, "libukptarget.so");
	cr_assert_eq(obj->gen, gen1);
	cr_assert(ukp_object_alive(obj));
	cr_assert(ukp_addr_is_text(add, 1));
	cr_assert_eq(ukp_sym_lookup_addr(forbidden, &res), 0);
	cr_assert_str_eq(res.name, "ukptarget_forbidden");

	cr_assert_eq(dlclose(h), 0);
	cr_assert_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD), "library still loaded");

	cr_assert(ukp_objects_refresh(), "refresh must report the removal");
	cr_assert_not(ukp_objects_refresh(), "reported only once");
	cr_assert_gt(ukp_objects_generation(), gen1);
	cr_assert_not(ukp_object_alive(obj));
	/* The record itself stays readable for the callers holding it. */
	cr_assert_str_eq(obj->name, "libukptarget.so");

	cr_assert_eq(ukp_sym_lookup_name("libukptarget.so:ukptarget_add", &addr), -ENOENT);
	/* Only this executable's static of that name is left. */
	cr_assert_eq(lookup_ok("ukptarget_add"), (uintptr_t)&ukptarget_add);
	cr_assert_eq(ukp_sym_lookup_addr(add, &res), -ENOENT);
	cr_assert_null(ukp_object_of(add));
	cr_assert_not(ukp_addr_is_text(add, 1));

	ukp_for_each_nokprobe(nk_cb, &f);
	cr_assert_eq(f.hits, 0, "blacklist of an unloaded object still reported");

	/* Loading it again gives a new, live record. */
	h = open_target();
	add = (uintptr_t)dlsym(h, "ukptarget_add");
	cr_assert_eq(lookup_ok("libukptarget.so:ukptarget_add"), add);
	cr_assert_neq(ukp_object_of(add), NULL);
	cr_assert_neq(ukp_object_of(add), obj);
	cr_assert(ukp_object_alive(ukp_object_of(add)));
	cr_assert_not(ukp_object_alive(obj));
	dlclose(h);
	free(path);
}

/* ---- iteration and reset ----------------------------------------------- */

struct sym_walk {
	const char *want;
	uintptr_t want_start;
	const char *only_obj;
	int found;
	int foreign;
	size_t total;
};

static void walk_cb(const struct ukp_symres *sym, void *arg)
{
	struct sym_walk *w = arg;

	w->total++;
	if (w->only_obj && strcmp(sym->obj->name, w->only_obj))
		w->foreign++;
	if (!strcmp(sym->name, w->want) && sym->start == w->want_start)
		w->found++;
	cr_assert_gt(sym->size, 0, "%s has no extent", sym->name);
}

Test(symbols, for_each_symbol)
{
	struct sym_walk z = { .want = "deflate", .only_obj = "libz.so.1" };
	struct sym_walk all = { .want = "ukpt_static_fn" };
	struct sym_walk none = { .want = "deflate" };

	touch_libs();
	z.want_start = dlsym_addr("deflate");
	ukp_for_each_symbol("libz.so.1", walk_cb, &z);
	cr_assert_eq(z.found, 1);
	cr_assert_eq(z.foreign, 0, "symbols of other objects in a libz walk");
	cr_assert_gt(z.total, 50);

	all.want_start = (uintptr_t)&ukpt_static_fn;
	ukp_for_each_symbol(NULL, walk_cb, &all);
	cr_assert_eq(all.found, 1);
	cr_assert_gt(all.total, z.total);

	ukp_for_each_symbol("libnosuch.so", walk_cb, &none);
	cr_assert_eq(none.total, 0);
}

Test(symbols, reset_rebuilds)
{
	uint64_t gen;

	touch_libs();
	cr_assert_eq(lookup_ok("deflate"), dlsym_addr("deflate"));
	gen = ukp_objects_generation();
	ukp_symbols_reset();
	cr_assert_eq(lookup_ok("deflate"), dlsym_addr("deflate"));
	cr_assert_eq(lookup_ok("ukpt_static_fn"), (uintptr_t)&ukpt_static_fn);
	cr_assert_gt(ukp_objects_generation(), gen);
	ukp_symbols_reset();
}

/* ---- IFUNC symbols ------------------------------------------------------ */

/*
 * libc's strlen is an IFUNC: its symbol is the resolver, which runs once
 * at load. A probe on the name must sit on the implementation the
 * resolver chose for this process (what dlsym() returns) and count every
 * call. Hits are counted only for our string, so the library's own calls
 * (the optimizer thread's) do not count.
 */
static const char ifunc_arg[] = "counted by the strlen probe";
static int ifunc_hits;

static int ifunc_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	if (regs->di == (unsigned long)ifunc_arg)
		ifunc_hits++;
	return 0;
}

/* dlsym() in libc itself: a sanitizer's interceptor in the program may
 * take the name first for RTLD_DEFAULT. */
static uintptr_t libc_dlsym(const char *name)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *p;

	cr_assert_not_null(h);
	p = dlsym(h, name);
	dlclose(h);
	cr_assert_not_null(p, "dlsym(libc, %s)", name);
	return (uintptr_t)p;
}

static void expect_strlen_probed(const char *spec)
{
	bool in_libc = strchr(spec, ':') || libc_dlsym("strlen") == dlsym_addr("strlen");
	size_t (*volatile fn)(const char *) =
		(size_t (*)(const char *))(in_libc ? libc_dlsym("strlen") : dlsym_addr("strlen"));
	struct kprobe kp = { .symbol_name = spec, .pre_handler = ifunc_pre };
	struct ukp_symres res;
	uintptr_t addr = 0;
	bool ifunc = false;
	size_t total = 0;
	int i;

	cr_assert_eq(ukp_sym_lookup_name_ifunc(spec, &addr, &ifunc), 0);
	/* (unless the program interposes strlen: a sanitizer's runtime) */
	cr_expect(ifunc == in_libc, "%s is an IFUNC", spec);
	cr_assert_eq(addr, (uintptr_t)fn, "%s: %#lx, dlsym: %p", spec, (unsigned long)addr,
		     (void *)fn);
	/* the implementation has a symbol (its own, or "strlen.impl") */
	cr_assert_eq(ukp_sym_lookup_addr(addr, &res), 0);
	cr_expect_eq(res.start, addr);
	cr_expect_gt(res.size, 0);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect((uintptr_t)kp.addr == addr || (uintptr_t)kp.addr == addr + 4,
		  "probe at %p, implementation at %#lx", (void *)kp.addr, (unsigned long)addr);
	ifunc_hits = 0;
	for (i = 0; i < 1000; i++)
		total += fn(ifunc_arg);
	unregister_kprobe(&kp);
	cr_expect_eq(total, 1000 * strlen(ifunc_arg));
	cr_expect_eq(ifunc_hits, 1000, "%d hits", ifunc_hits);
}

Test(ifunc, strlen_probed_on_its_implementation)
{
	expect_strlen_probed("strlen");
}

Test(ifunc, libc_strlen_probed_on_its_implementation)
{
	expect_strlen_probed("libc.so.6:strlen");
}

/* Without libc's debug file the implementation is named after the IFUNC
 * ("strlen.impl"), sized by its FDE. */
Test(ifunc, implementation_without_debug_file)
{
	struct ukp_symres res;
	uintptr_t addr = lookup_ok("libc.so.6:strlen");

	(void)addr;
	ukp_symbols_reset();
	ukp_debuginfo_set_root("/nonexistent");
	addr = lookup_ok("libc.so.6:strlen");
	cr_assert_eq(addr, libc_dlsym("strlen"));
	cr_assert_eq(ukp_sym_lookup_addr(addr, &res), 0);
	cr_expect_str_eq(res.name, "strlen.impl");
	cr_expect(res.func, "sized by its FDE");
	ukp_debuginfo_set_root(NULL);
}

/* A walk gives IFUNCs as they are; ukp_sym_ifunc_impl resolves them. */
struct ifunc_walk {
	uintptr_t strlen_impl;
	size_t ifuncs;
};

static void ifunc_walk_cb(const struct ukp_symres *sym, void *arg)
{
	struct ifunc_walk *w = arg;
	uintptr_t impl;

	if (!sym->ifunc)
		return;
	w->ifuncs++;
	/* an exported IFUNC always resolves; a local one when an IRELATIVE
	 * relocation uses it (else nothing calls through it) */
	if (!sym->global && ukp_sym_ifunc_impl(sym, &impl) == -ENOENT)
		return;
	cr_assert_eq(ukp_sym_ifunc_impl(sym, &impl), 0, "%s", sym->name);
	cr_assert(ukp_addr_is_text(impl, 1), "%s: %#lx", sym->name, (unsigned long)impl);
	if (!strcmp(sym->name, "strlen") || !strncmp(sym->name, "strlen@", 7))
		w->strlen_impl = impl;
}

Test(ifunc, walk_resolves_each)
{
	struct ifunc_walk w = { 0 };

	ukp_for_each_symbol("libc.so.6", ifunc_walk_cb, &w);
	cr_expect_gt(w.ifuncs, 10);
	cr_expect_eq(w.strlen_impl, libc_dlsym("strlen"));
}

/* ---- debug files and MiniDebugInfo ------------------------------------- */

/* With libc6-dbg (scripts/setup.sh installs it), libc's local functions:
 * the same code as the one memmove may be resolved to, called directly. */
static int memmove_hits;

static int memmove_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	memmove_hits++;
	return 0;
}

Test(debuginfo, libc_local_function_from_debug_file)
{
	void *(*fn)(void *, const void *, size_t);
	struct kprobe kp = { .symbol_name = "libc.so.6:__memmove_avx_unaligned_erms",
			     .pre_handler = memmove_pre };
	char src[64] = "copied by __memmove_avx_unaligned_erms", dst[64] = "";
	struct ukp_symres res;
	uintptr_t addr = lookup_ok("libc.so.6:__memmove_avx_unaligned_erms");

	cr_assert_eq(ukp_sym_lookup_addr(addr, &res), 0);
	cr_expect_eq(res.start, addr);
	cr_expect(res.func && res.size > 64, "%s: %zu bytes", res.name, res.size);
	cr_expect_str_eq(res.obj->name, "libc.so.6");
	/* exported names still resolve as before */
	cr_expect_eq(lookup_ok("libc.so.6:malloc"), libc_dlsym("malloc"));
	if (!__builtin_cpu_supports("avx"))
		return; /* the code needs AVX to run */
	/* libc's memmove in a build whose hit path calls it (blacklist.c) */
	if (ukp_blacklisted(addr))
		return;
	fn = (void *(*)(void *, const void *, size_t))addr;
	cr_assert_eq(register_kprobe(&kp), 0);
	memmove_hits = 0;
	cr_expect_eq(fn(dst, src, sizeof(src)), dst);
	unregister_kprobe(&kp);
	cr_expect_str_eq(dst, src);
	cr_expect_eq(memmove_hits, 1);
}

static void *open_prog(const char *name)
{
	const char *dir = getenv("UKP_TEST_PROGS");
	char *path;
	void *h;

	cr_assert_not_null(dir, "UKP_TEST_PROGS is not set");
	cr_assert_neq(asprintf(&path, "%s/%s", dir, name), -1);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "dlopen(%s): %s", path, dlerror());
	free(path);
	return h;
}

/* Point the debug root at UKP_TEST_PROGS/dir. */
static void debug_root(const char *dir)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", getenv("UKP_TEST_PROGS"), dir);
	ukp_debuginfo_set_root(path);
}

static int local_hits;

static int local_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	local_hits++;
	return 0;
}

/* The stripped object's static function, found through its debug
 * symbols: at the right address, and probed. */
static void expect_local_found(const char *obj)
{
	char spec[128];
	struct kprobe kp = { .symbol_name = spec, .pre_handler = local_pre };
	void *h = open_prog(obj);
	void *(*where)(void) = (void *(*)(void))dlsym(h, "ukpds_local_addr");
	int (*call)(int) = (int (*)(int))dlsym(h, "ukpds_call");
	struct ukp_symres res;

	cr_assert(where && call);
	snprintf(spec, sizeof(spec), "%s:ukpds_local", obj);
	cr_assert_eq(lookup_ok(spec), (uintptr_t)where());
	cr_assert_eq(ukp_sym_lookup_addr((uintptr_t)where() + 1, &res), 0);
	cr_expect_str_eq(res.name, "ukpds_local");
	cr_expect(res.func);
	cr_assert_eq(register_kprobe(&kp), 0);
	local_hits = 0;
	call(3);
	call(4);
	unregister_kprobe(&kp);
	cr_expect_eq(local_hits, 2);
}

Test(debuginfo, minidebuginfo)
{
	debug_root("nonexistent");
	expect_local_found("libukpds_mini.so");
}

/* The stripped object's static variable, from its debug file: by name
 * and by address, a variable (the functions' look-ups do not see it). */
static void expect_static_data_found(const char *obj)
{
	char spec[128];
	void *h = open_prog(obj);
	void *(*where)(void) = (void *(*)(void))dlsym(h, "ukpds_tally_addr");
	struct ukp_symres res;
	uintptr_t addr;

	cr_assert_not_null(where);
	snprintf(spec, sizeof(spec), "%s:ukpds_tally", obj);
	cr_assert_eq(ukp_sym_lookup_name(spec, &addr), -ENOENT);
	cr_assert_eq(ukp_data_lookup_name(spec, &res), 0);
	cr_expect_eq(res.start, (uintptr_t)where());
	cr_expect(res.data && res.debug && !res.func && !res.global);
	cr_expect_eq(res.size, 4 * sizeof(int));
	cr_assert_eq(ukp_data_lookup_addr((uintptr_t)where() + 8, &res), 0);
	cr_expect_str_eq(res.name, "ukpds_tally");
	cr_expect_str_eq(res.obj->name, obj);
}

Test(debuginfo, debug_file_by_build_id)
{
	debug_root("dbgroot_good");
	expect_local_found("libukpds_buildid.so");
	expect_static_data_found("libukpds_buildid.so");
}

Test(debuginfo, debug_file_by_debuglink)
{
	debug_root("nonexistent");
	expect_local_found("libukpds_link.so");
	expect_static_data_found("libukpds_link.so");
}

/* A debug file at the right place that is another object's. */
static void expect_local_not_found(const char *obj)
{
	char spec[128];
	void *h;
	uintptr_t addr;
	struct ukp_symres res;
	void *(*where)(void);

	h = open_prog(obj);
	where = (void *(*)(void))dlsym(h, "ukpds_local_addr");
	cr_assert_not_null(where);
	snprintf(spec, sizeof(spec), "%s:ukpds_local", obj);
	cr_expect_eq(ukp_sym_lookup_name(spec, &addr), -ENOENT);
	cr_expect_neq(ukp_sym_lookup_addr((uintptr_t)where(), &res), 0,
		      "%s", res.name);
	/* the exported ones still come from .dynsym */
	snprintf(spec, sizeof(spec), "%s:ukpds_call", obj);
	cr_expect_eq(lookup_ok(spec), (uintptr_t)dlsym(h, "ukpds_call"));
}

Test(debuginfo, mismatched_build_id_ignored)
{
	debug_root("dbgroot_bad");
	expect_local_not_found("libukpds_badid.so");
}

/* No build-id: the debuglink's CRC decides. */
Test(debuginfo, mismatched_debuglink_crc_ignored)
{
	debug_root("nonexistent");
	expect_local_not_found("libukpds_badlink.so");
}

/*
 * libc's memset and memcpy (IFUNCs): probed on their implementations,
 * which a clang, unoptimized or sanitizer build of the library calls from
 * its own hit path; there they are blacklisted (-EINVAL), elsewhere a hit
 * counts. Either way the process survives.
 */
static int memfn_hits;

static int memfn_pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	if (regs->dx == 77)
		memfn_hits++;
	return 0;
}

Test(ifunc, libc_memory_functions_probed_or_refused)
{
	static const char *const names[] = { "libc.so.6:memset", "libc.so.6:memcpy" };
	void *(*volatile set)(void *, int, size_t) =
		(void *(*)(void *, int, size_t))libc_dlsym("memset");
	void *(*volatile cpy)(void *, const void *, size_t) =
		(void *(*)(void *, const void *, size_t))libc_dlsym("memcpy");
	char a[128], b[128];
	size_t i;

	for (i = 0; i < 2; i++) {
		struct kprobe kp = { .symbol_name = names[i], .pre_handler = memfn_pre };
		int ret = register_kprobe(&kp);

		if (ret) {
			cr_expect_eq(ret, -EINVAL, "%s: %d", names[i], ret);
			cr_expect(ukp_blacklisted(i ? libc_dlsym("memcpy") : libc_dlsym("memset")));
			continue;
		}
		memfn_hits = 0;
		if (i)
			cpy(a, b, 77);
		else
			set(a, 1, 77);
		unregister_kprobe(&kp);
		cr_expect_eq(memfn_hits, 1, "%s: %d hits", names[i], memfn_hits);
	}
	memset(b, 0, sizeof(b));
}
