/* SPDX-License-Identifier: MIT */
/*
 * The look-ups of object files that are not loaded (find_module_file and
 * the module_file_* functions, UKPROBES_0.3), on Debian's libsqlite3 and
 * libm (IFUNCs) and on the MiniDebugInfo test object, none of them loaded
 * by this test (built without them, against the shared library's public
 * API only): what the file says must be what the library says of the same
 * object once dlopen() has loaded it, address for address (the file's
 * address plus the load bias). And the errors: no such file, not an ELF
 * object, no such symbol, a buffer too small.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ukprobes.h>

/* One symbol as both walks give it: the file's address (the loaded
 * walk's minus its load bias). */
struct sym {
	char *name;
	unsigned long addr, size;
	unsigned int flags;
};

struct syms {
	struct sym *v;
	size_t n, cap;
	unsigned long bias;
	const char *modpath;      /* every symbol's, checked */
	bool bad_object;
};

static int collect(void *data, const struct ksym_info *info)
{
	struct syms *s = data;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		cr_assert_not_null(s->v);
	}
	if (info->modbase != s->bias || strcmp(info->modpath, s->modpath) ||
	    strcmp(info->modname, strrchr(s->modpath, '/') + 1))
		s->bad_object = true;
	s->v[s->n].name = strdup(info->name);
	s->v[s->n].addr = info->addr - s->bias;
	s->v[s->n].size = info->symsize;
	s->v[s->n].flags = info->flags;
	s->n++;
	return 0;
}

static int sym_cmp(const void *pa, const void *pb)
{
	const struct sym *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return (a->flags > b->flags) - (a->flags < b->flags);
}

static void syms_free(struct syms *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].name);
	free(s->v);
}

/* The load bias, real path and path as loaded (modpath, if not NULL:
 * PATH_MAX bytes) of the loaded object named name. */
static unsigned long loaded_bias(const char *name, char *path, size_t len, char *modpath)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN];
	char *real;

	cr_assert_eq(find_module_info(name, &info, buf, sizeof(buf)), 0, "%s not loaded", name);
	real = realpath(info.modpath, NULL);
	cr_assert_not_null(real);
	snprintf(path, len, "%s", real);
	free(real);
	if (modpath)
		snprintf(modpath, PATH_MAX, "%s", info.modpath);
	return info.modbase;
}

/*
 * The file's walk, then the loaded object's: the same symbols (name,
 * file address, size, flags). With ifuncs, some of them are IFUNCs and
 * come at their resolvers in both.
 */
static void same_walks(const char *name, bool ifuncs)
{
	char path[PATH_MAX], lpath[PATH_MAX], mpath[PATH_MAX];
	struct syms file = { 0 }, mem = { 0 };
	size_t i, nifunc = 0, nfunc = 0;
	void *h;

	h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
	cr_assert_null(h, "%s is loaded already: the test means it not to be", name);
	cr_assert_eq(find_module_file(name, path, sizeof(path)), 0);
	cr_assert_eq(path[0], '/', "%s", path);
	file.modpath = path;
	cr_assert_eq(module_file_kallsyms_on_each_symbol_info(name, collect, &file), 0);
	cr_assert(!file.bad_object, "the file's walk names another object");

	h = dlopen(name, RTLD_NOW);
	cr_assert_not_null(h, "%s", dlerror());
	mem.bias = loaded_bias(name, lpath, sizeof(lpath), mpath);
	cr_assert_str_eq(lpath, path, "dlopen() loaded %s, the search found %s", lpath, path);
	mem.modpath = mpath;
	cr_assert_eq(module_kallsyms_on_each_symbol_info(name, collect, &mem), 0);
	cr_assert(!mem.bad_object);

	cr_assert_gt(file.n, 100, "%s: %zu symbols", name, file.n);
	cr_assert_eq(file.n, mem.n, "%s: %zu symbols in the file, %zu loaded", name, file.n, mem.n);
	qsort(file.v, file.n, sizeof(*file.v), sym_cmp);
	qsort(mem.v, mem.n, sizeof(*mem.v), sym_cmp);
	for (i = 0; i < file.n; i++) {
		cr_assert_str_eq(file.v[i].name, mem.v[i].name);
		cr_assert_eq(file.v[i].addr, mem.v[i].addr, "%s", file.v[i].name);
		cr_assert_eq(file.v[i].size, mem.v[i].size, "%s", file.v[i].name);
		cr_assert_eq(file.v[i].flags, mem.v[i].flags, "%s", file.v[i].name);
		nifunc += !!(file.v[i].flags & KSYM_IFUNC);
		nfunc += !(file.v[i].flags & KSYM_DATA);
	}
	cr_assert_gt(nfunc, 100);
	if (ifuncs)
		cr_assert_gt(nifunc, 10, "%s: %zu IFUNCs", name, nifunc);
	syms_free(&file);
	syms_free(&mem);
	dlclose(h);
}

Test(module_file, sqlite_walk_equals_loaded)
{
	same_walks("libsqlite3.so.0", false);
}

Test(module_file, libm_walk_equals_loaded_ifuncs_at_resolvers)
{
	/* x86-64's libm chooses its FMA variants by IFUNCs; a sanitizer's
	 * runtime loads libm before main, and then libmvec (its vector
	 * variants, IFUNCs as well) is the one not loaded yet */
#if defined(__x86_64__)
	same_walks(dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD) ? "libmvec.so.1" : "libm.so.6", true);
#else
	same_walks("libm.so.6", false);
#endif
}

struct texts {
	unsigned long addr[16], size[16];
	int n;
};

static int text_cb(void *data, unsigned long addr, unsigned long size)
{
	struct texts *t = data;

	cr_assert_lt(t->n, 16);
	t->addr[t->n] = addr;
	t->size[t->n] = size;
	t->n++;
	return 0;
}

static int loaded_text_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct texts *t = data;
	int i;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libsqlite3.so.0"))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			t->addr[t->n] = info->dlpi_phdr[i].p_vaddr;
			t->size[t->n] = info->dlpi_phdr[i].p_memsz;
			t->n++;
		}
	return 1;
}

static int stop_cb(void *data, unsigned long addr, unsigned long size)
{
	(void)addr;
	(void)size;
	++*(int *)data;
	return 42;
}

/* The look-up by name, and the executable segments, against the loaded
 * object's symbols and its program headers as the loader has them. */
Test(module_file, lookup_and_text_equal_loaded)
{
	struct ksym_info f = { .size = sizeof(f) }, m = { .size = sizeof(m) };
	char fbuf[PATH_MAX + KSYM_NAME_LEN], mbuf[PATH_MAX + KSYM_NAME_LEN];
	struct texts ft = { .n = 0 }, mt = { .n = 0 };
	int calls = 0, i;
	bool inside = false;
	void *h;

	cr_assert_null(dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_NOLOAD));
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libsqlite3.so.0", "sqlite3_open", &f,
							   fbuf, sizeof(fbuf)), 0);
	cr_assert_str_eq(f.name, "sqlite3_open");
	cr_assert_eq(f.modbase, 0);
	cr_assert_str_eq(f.modname, strrchr(f.modpath, '/') + 1);
	cr_assert_eq(f.flags & (KSYM_FUNC | KSYM_GLOBAL | KSYM_DATA | KSYM_MAIN),
		     KSYM_FUNC | KSYM_GLOBAL);
	cr_assert_gt(f.symsize, 0);
	cr_assert_eq(module_file_on_each_text("libsqlite3.so.0", text_cb, &ft), 0);
	cr_assert_gt(ft.n, 0);
	for (i = 0; i < ft.n; i++)
		inside |= f.addr >= ft.addr[i] && f.addr - ft.addr[i] < ft.size[i];
	cr_assert(inside, "sqlite3_open at %#lx is in no executable segment", f.addr);
	/* a non-zero return stops the walk and is returned */
	cr_assert_eq(module_file_on_each_text("libsqlite3.so.0", stop_cb, &calls), 42);
	cr_assert_eq(calls, 1);

	h = dlopen("libsqlite3.so.0", RTLD_NOW);
	cr_assert_not_null(h);
	cr_assert_eq(kallsyms_lookup_name_info("libsqlite3.so.0:sqlite3_open", &m, mbuf,
					       sizeof(mbuf)), 0);
	cr_assert_eq(m.addr, (unsigned long)(uintptr_t)dlsym(h, "sqlite3_open"));
	cr_assert_eq(f.addr + m.modbase, m.addr);
	cr_assert_eq(f.symsize, m.symsize);
	cr_assert_eq(f.flags, m.flags);
	dl_iterate_phdr(loaded_text_cb, &mt);
	cr_assert_eq(ft.n, mt.n);
	for (i = 0; i < ft.n; i++) {
		cr_assert_eq(ft.addr[i], mt.addr[i]);
		cr_assert_eq(ft.size[i], mt.size[i]);
	}
	/* the file is read loaded or not: the same answer */
	cr_assert_eq(module_file_kallsyms_lookup_name_info(m.modpath, "sqlite3_open", &f, fbuf,
							   sizeof(fbuf)), 0);
	cr_assert_eq(f.addr + m.modbase, m.addr);
	dlclose(h);
}

/* A local function only the MiniDebugInfo names, at the address the
 * loaded object has it. */
Test(module_file, minidebuginfo)
{
	const char *dir = getenv("UKP_TEST_PROGS");
	struct ksym_info f = { .size = sizeof(f) }, v = { .size = sizeof(v) };
	char fbuf[PATH_MAX + KSYM_NAME_LEN], vbuf[PATH_MAX + KSYM_NAME_LEN], path[PATH_MAX];
	void *(*local_addr)(void);
	unsigned long bias;
	void *h;

	/* the aarch64 build has no test objects (tests/progs) */
	if (!dir)
		cr_skip_test("UKP_TEST_PROGS is not set");
	snprintf(path, sizeof(path), "%s/libukpds_mini.so", dir);
	cr_assert_eq(module_file_kallsyms_lookup_name_info(path, "ukpds_local", &f, fbuf,
							   sizeof(fbuf)), 0);
	cr_assert_eq(f.flags & (KSYM_DEBUG | KSYM_GLOBAL | KSYM_DATA), KSYM_DEBUG);
	/* MiniDebugInfo keeps functions only: the static variable is not
	 * there (no function of that name either) */
	cr_assert_eq(module_file_kallsyms_lookup_name_info(path, "ukpds_tally", &v, vbuf,
							   sizeof(vbuf)), -ENOENT);
	/* the exported one from the file's own table */
	cr_assert_eq(module_file_kallsyms_lookup_name_info(path, "ukpds_call", &f, fbuf,
							   sizeof(fbuf)), 0);
	cr_assert_eq(f.flags & (KSYM_DEBUG | KSYM_GLOBAL), KSYM_GLOBAL);
	cr_assert_eq(module_file_kallsyms_lookup_name_info(path, "ukpds_local", &f, fbuf,
							   sizeof(fbuf)), 0);

	h = dlopen(path, RTLD_NOW);
	cr_assert_not_null(h, "%s", dlerror());
	local_addr = (void *(*)(void))dlsym(h, "ukpds_local_addr");
	cr_assert_not_null(local_addr);
	bias = loaded_bias(path, vbuf, sizeof(vbuf), NULL);
	cr_assert_eq(f.addr + bias, (unsigned long)(uintptr_t)local_addr());
	dlclose(h);
}

Test(module_file, errors)
{
	struct ksym_info info = { .size = sizeof(info) };
	char buf[PATH_MAX + KSYM_NAME_LEN], small[4];
	int calls = 0;
	/* (loaded before main only by a sanitizer's runtime) */
	bool libm_was_loaded = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD) != NULL;

	/* no such file, by name and by path */
	cr_assert_eq(find_module_file("libukprobes-no-such-object.so.9", buf, sizeof(buf)),
		     -ENOENT);
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libukprobes-no-such-object.so.9",
							   "f", &info, buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(module_file_kallsyms_on_each_symbol_info("/no/such/libx.so", collect, NULL),
		     -ENOENT);
	cr_assert_eq(module_file_on_each_text("/no/such/libx.so", stop_cb, &calls), -ENOENT);
	/* a file that is no ELF object */
	cr_assert_eq(find_module_file("/etc/passwd", buf, sizeof(buf)), 0);
	cr_assert_eq(module_file_kallsyms_lookup_name_info("/etc/passwd", "f", &info, buf,
							   sizeof(buf)), -ENOEXEC);
	cr_assert_eq(module_file_on_each_text("/etc/passwd", stop_cb, &calls), -ENOEXEC);
	cr_assert_eq(calls, 0);
	/* no such symbol; the version suffix of a name that has one */
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libm.so.6", "no_such_function_x",
							   &info, buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libm.so.6", "sin", &info, buf,
							   sizeof(buf)), 0);
	cr_assert(!strncmp(info.name, "sin@", 4) || !strcmp(info.name, "sin"), "%s", info.name);
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libm.so.6", "sin@NO_SUCH_VERSION",
							   &info, buf, sizeof(buf)), -ENOENT);
	/* a name no function has: the variable */
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libm.so.6", "signgam", &info, buf,
							   sizeof(buf)), 0);
	cr_assert_eq(info.flags & (KSYM_DATA | KSYM_FUNC | KSYM_GLOBAL), KSYM_DATA | KSYM_GLOBAL);
	/* arguments */
	cr_assert_eq(find_module_file("libm.so.6", small, sizeof(small)), -ERANGE);
	cr_assert_eq(find_module_file(NULL, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libm.so.6", NULL, &info, buf,
							   sizeof(buf)), -EINVAL);
	info.size = 1;
	cr_assert_eq(module_file_kallsyms_lookup_name_info("libm.so.6", "sin", &info, buf,
							   sizeof(buf)), -EINVAL);
	cr_assert_eq(module_file_kallsyms_on_each_symbol_info("libm.so.6", NULL, NULL), -EINVAL);
	cr_assert_eq(module_file_on_each_text(NULL, stop_cb, &calls), -EINVAL);
	cr_assert_eq(dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD) != NULL, libm_was_loaded,
		     "nothing above loads it");
}

/*
 * A bare name is searched in the program's own search path, read from
 * its dynamic section (no dlinfo()): this test program's RUNPATH holds
 * $ORIGIN/progs (tests/meson.build), where libukpsdt_full.so is built,
 * which no system directory holds and nothing loaded sits next to (each
 * test runs in a process of its own).
 */
Test(module_file, bare_name_in_runpath)
{
	char buf[PATH_MAX], want[PATH_MAX], exe[PATH_MAX];
	const char *progs = getenv("UKP_TEST_PROGS");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (!progs)
		cr_skip_test("no test objects (UKP_TEST_PROGS: the AArch64 build makes none)");
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_assert_null(dlopen("libukpsdt_full.so", RTLD_NOW | RTLD_NOLOAD));
	snprintf(buf, sizeof(buf), "%s/libukpsdt_full.so", progs);
	cr_assert(realpath(buf, want), "%s was not built", buf);
	cr_assert_eq(find_module_file("libukpsdt_full.so", buf, sizeof(buf)), 0,
		     "libukpsdt_full.so not found through the RUNPATH of %s", exe);
	cr_assert_str_eq(buf, want);
	/* and what the loader finds there is that file */
	cr_assert_not_null(dlopen("libukpsdt_full.so", RTLD_NOW));
}
