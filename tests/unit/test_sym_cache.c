// SPDX-License-Identifier: MIT
/*
 * test_sym_cache.c - a debug file's symbols kept across runs
 * (src/symbols/sym_cache.h, in the directory of base/disk_cache.h): what
 * an object's tables hold is the same read from the debug file, from
 * the cache, and with the cache off; a damaged entry is not used and is
 * written again; an entry for another key (a debug file changed since)
 * is not used; the cache off writes nothing.
 *
 * Objects: libc.so.6 with libc6-dbg's debug file (scripts/setup.sh
 * installs it; its local functions are what a return's caller is named
 * by), and tests/progs' libukpds_buildid.so with a copy of its debug
 * tree, to change the debug file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/disk_cache.h"
#include "symbols/debuginfo.h"
#include "symbols/sym_cache.h"
#include "symbols/symbols.h"

/* ---- an object's tables, as text ---- */

struct dump {
	char *buf;
	size_t len;
	FILE *f;
};

static void dump_cb(const struct ukp_symres *s, void *arg)
{
	struct dump *d = arg;

	fprintf(d->f, "%s %lx %zx %d%d%d%d%d\n", s->name, (unsigned long)(s->start - s->obj->base),
		s->size, s->func, s->ifunc, s->global, s->debug, s->data);
}

/* Every function and data symbol of obj, read afresh (through the cache
 * in dir, NULL: off), and the name of libc's __libc_start_call_main
 * for an address inside it; *use: what the cache did. */
static char *tables(const char *obj, const char *dir, enum ukp_sym_cache_use *use)
{
	struct dump d = { 0 };

	ukp_symbols_reset();
	ukp_disk_cache_dir_override = dir;
	ukp_disk_cache_off = !dir;
	ukp_sym_cache_last = UKP_SYM_CACHE_OFF;
	d.f = open_memstream(&d.buf, &d.len);
	cr_assert_not_null(d.f);
	ukp_for_each_symbol_kind(obj, true, dump_cb, &d);
	*use = ukp_sym_cache_last;
	fclose(d.f);
	ukp_disk_cache_dir_override = NULL;
	ukp_disk_cache_off = false;
	return d.buf;
}

static char cache_dir[PATH_MAX];

static void make_dir(void)
{
	snprintf(cache_dir, sizeof(cache_dir), "/tmp/ukt_symcache.XXXXXX");
	cr_assert_not_null(mkdtemp(cache_dir));
}

static void remove_dir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache_dir);
	cr_expect_eq(system(cmd), 0);
}

/* The entries of kind "syms" in cache_dir (their paths in out[max]). */
static size_t entries(char out[][PATH_MAX], size_t max)
{
	char cmd[PATH_MAX + 64], line[PATH_MAX];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls %s/syms-* 2>/dev/null", cache_dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (n < max)
			snprintf(out[n], PATH_MAX, "%s", line);
		n++;
	}
	pclose(f);
	return n;
}

static bool libc_has_debug_file(void)
{
	struct ukp_symres res;
	uintptr_t addr;

	/* a local function only libc6-dbg names */
	ukp_symbols_reset();
	return ukp_sym_lookup_name("libc.so.6:__libc_start_call_main", &addr) == 0 &&
	       ukp_sym_lookup_addr(addr, &res) == 0 && res.debug;
}

/* Change the entry at path as how says: "flip" a byte of a record,
 * "name" one of the names, "key" one of its key, "truncate" it to half,
 * "chmod" it group-writable. */
static void spoil(const char *path, const char *how)
{
	struct stat st;
	FILE *f;
	long at;
	int c;

	cr_assert_eq(stat(path, &st), 0);
	if (!strcmp(how, "chmod")) {
		cr_assert_eq(chmod(path, 0620), 0);
		return;
	}
	if (!strcmp(how, "truncate")) {
		cr_assert_eq(truncate(path, st.st_size / 2), 0);
		return;
	}
	/* the key is the head's first bytes, the names the last ones */
	at = !strcmp(how, "key") ? 40 : !strcmp(how, "name") ? st.st_size - 20 : st.st_size / 3;
	f = fopen(path, "r+b");
	cr_assert_not_null(f);
	cr_assert_eq(fseek(f, at, SEEK_SET), 0);
	c = fgetc(f);
	cr_assert_neq(c, EOF);
	cr_assert_eq(fseek(f, at, SEEK_SET), 0);
	fputc(c ^ 0x10, f);
	fclose(f);
}

/* ---- libc with libc6-dbg ---- */

Test(sym_cache, libc_tables_same_cold_warm_off)
{
	enum ukp_sym_cache_use u1, u2, u3;
	char path[1][PATH_MAX];
	char *off, *cold, *warm;

	if (!libc_has_debug_file())
		cr_skip_test("libc6-dbg is not installed");
	make_dir();
	off = tables("libc.so.6", NULL, &u1);
	cold = tables("libc.so.6", cache_dir, &u2);
	warm = tables("libc.so.6", cache_dir, &u3);
	cr_expect_eq(u1, UKP_SYM_CACHE_OFF);
	cr_expect_eq(u2, UKP_SYM_CACHE_STORED);
	cr_expect_eq(u3, UKP_SYM_CACHE_HIT);
	cr_expect_eq(entries(path, 1), 1);
	cr_expect_gt(strlen(off), 100000, "libc's tables: %zu bytes", strlen(off));
	cr_expect(strstr(off, "\n__libc_start_call_main "), "a local only the debug file names");
	cr_expect_str_eq(cold, off);
	cr_expect_str_eq(warm, off);
	free(off);
	free(cold);
	free(warm);
	remove_dir();
}

/* A look-up by address, the agent's way to the debug file (a return's
 * caller), gets the same from the cache. */
Test(sym_cache, libc_caller_named_from_the_cache)
{
	struct ukp_symres res;
	uintptr_t addr;
	char name[2][128];

	if (!libc_has_debug_file())
		cr_skip_test("libc6-dbg is not installed");
	make_dir();
	ukp_disk_cache_dir_override = cache_dir;
	for (int run = 0; run < 2; run++) {
		ukp_symbols_reset();
		cr_assert_eq(ukp_sym_lookup_name("libc.so.6:__libc_start_main", &addr), 0);
		/* (its own table, then the debug file's, as the reader's look-up) */
		ukp_symbols_reset();
		cr_assert_eq(ukp_sym_lookup_addr(addr - 0x50, &res), 0);
		cr_expect_eq(ukp_sym_cache_last, run ? UKP_SYM_CACHE_HIT : UKP_SYM_CACHE_STORED);
		snprintf(name[run], sizeof(name[run]), "%s+%lx", res.name,
			 (unsigned long)(addr - 0x50 - res.start));
		cr_expect(res.debug, "%s", name[run]);
	}
	ukp_disk_cache_dir_override = NULL;
	cr_expect_str_eq(name[1], name[0]);
	remove_dir();
}

static void expect_spoilt_rebuilt(const char *how)
{
	enum ukp_sym_cache_use u;
	char path[2][PATH_MAX];
	char *want, *got;

	if (!libc_has_debug_file())
		cr_skip_test("libc6-dbg is not installed");
	make_dir();
	want = tables("libc.so.6", cache_dir, &u);
	cr_assert_eq(u, UKP_SYM_CACHE_STORED);
	cr_assert_eq(entries(path, 1), 1);
	spoil(path[0], how);
	got = tables("libc.so.6", cache_dir, &u);
	cr_expect_eq(u, UKP_SYM_CACHE_STORED, "%s: read from the debug file and written again",
		     how);
	cr_expect_str_eq(got, want, "%s", how);
	free(got);
	got = tables("libc.so.6", cache_dir, &u);
	cr_expect_eq(u, UKP_SYM_CACHE_HIT, "%s: the entry written again is used", how);
	cr_expect_str_eq(got, want, "%s", how);
	/* "key": a damaged key names another entry's file: that one stays */
	cr_expect_eq(entries(path, 2), 1, "%s", how);
	free(got);
	free(want);
	remove_dir();
}

Test(sym_cache, damaged_record_rebuilt) { expect_spoilt_rebuilt("flip"); }
Test(sym_cache, damaged_name_rebuilt) { expect_spoilt_rebuilt("name"); }
Test(sym_cache, damaged_key_rebuilt) { expect_spoilt_rebuilt("key"); }
Test(sym_cache, truncated_rebuilt) { expect_spoilt_rebuilt("truncate"); }
Test(sym_cache, group_writable_not_trusted) { expect_spoilt_rebuilt("chmod"); }

/* Off: neither read nor written, by the switch or UKPROBES_CACHE=0. */
Test(sym_cache, off_writes_nothing)
{
	enum ukp_sym_cache_use u;
	char path[1][PATH_MAX];
	char *a;

	if (!libc_has_debug_file())
		cr_skip_test("libc6-dbg is not installed");
	make_dir();
	a = tables("libc.so.6", NULL, &u);
	free(a);
	cr_expect_eq(u, UKP_SYM_CACHE_OFF);
	setenv("UKPROBES_CACHE", "0", 1);
	ukp_symbols_reset();
	a = tables("libc.so.6", "", &u); /* (no override: the environment's) */
	free(a);
	unsetenv("UKPROBES_CACHE");
	cr_expect_eq(u, UKP_SYM_CACHE_OFF);
	cr_expect_eq(entries(path, 1), 0);
	remove_dir();
}

/* ---- a debug file that changes ---- */

static void *open_prog(const char *name)
{
	char path[PATH_MAX];
	void *h;

	snprintf(path, sizeof(path), "%s/%s", getenv("UKP_TEST_PROGS"), name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "dlopen(%s): %s", path, dlerror());
	return h;
}

/* A stale entry (the debug file changed since: another mtime) is not
 * used: the symbols are read again, under the new key. */
Test(sym_cache, stale_key_not_used)
{
	char root[PATH_MAX + 16], cmd[3 * PATH_MAX], path[3][PATH_MAX];
	enum ukp_sym_cache_use u;
	char *first, *again;
	void *h = open_prog("libukpds_buildid.so");

	make_dir();
	snprintf(root, sizeof(root), "%s/root", cache_dir);
	snprintf(cmd, sizeof(cmd), "cp -a %s/dbgroot_good %s", getenv("UKP_TEST_PROGS"), root);
	cr_assert_eq(system(cmd), 0);
	ukp_debuginfo_set_root(root);
	first = tables("libukpds_buildid.so", cache_dir, &u);
	cr_expect_eq(u, UKP_SYM_CACHE_STORED);
	cr_expect(strstr(first, "\nukpds_local ") || !strncmp(first, "ukpds_local ", 12),
		  "its static function, from the debug file:\n%s", first);
	again = tables("libukpds_buildid.so", cache_dir, &u);
	cr_expect_eq(u, UKP_SYM_CACHE_HIT);
	cr_expect_str_eq(again, first);
	free(again);
	/* the same bytes, another modification time */
	snprintf(cmd, sizeof(cmd), "find %s -name '*.debug' -exec touch -d '2001-02-03' {} +",
		 root);
	cr_assert_eq(system(cmd), 0);
	again = tables("libukpds_buildid.so", cache_dir, &u);
	cr_expect_eq(u, UKP_SYM_CACHE_STORED, "the entry of the old file is not used");
	cr_expect_str_eq(again, first);
	cr_expect_eq(entries(path, 3), 2);
	free(again);
	free(first);
	ukp_debuginfo_set_root(NULL);
	dlclose(h);
	remove_dir();
}

/* The other sources: a debug file by .gnu_debuglink, a MiniDebugInfo
 * (the object's own file holds it): cached the same way. */
Test(sym_cache, debuglink_and_minidebuginfo_cached)
{
	static const char *const objs[] = { "libukpds_link.so", "libukpds_mini.so" };
	char root[PATH_MAX + 16];

	make_dir();
	snprintf(root, sizeof(root), "%s/nonexistent", cache_dir);
	ukp_debuginfo_set_root(root);
	for (int i = 0; i < 2; i++) {
		enum ukp_sym_cache_use u;
		void *h = open_prog(objs[i]);
		char *first = tables(objs[i], cache_dir, &u), *again;

		cr_expect_eq(u, UKP_SYM_CACHE_STORED, "%s", objs[i]);
		cr_expect(strstr(first, "\nukpds_local ") || !strncmp(first, "ukpds_local ", 12),
			  "%s: its static function, from its debug symbols:\n%s", objs[i], first);
		again = tables(objs[i], cache_dir, &u);
		cr_expect_eq(u, UKP_SYM_CACHE_HIT, "%s", objs[i]);
		cr_expect_str_eq(again, first, "%s", objs[i]);
		free(again);
		free(first);
		dlclose(h);
	}
	ukp_debuginfo_set_root(NULL);
	remove_dir();
}
