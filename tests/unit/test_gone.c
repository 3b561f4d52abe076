// SPDX-License-Identifier: MIT
/*
 * test_gone.c - probes in an object that is unloaded (the kernel's module
 * unload: [GONE]), and NOKPROBE_SYMBOL() in a dlopen()ed object.
 *
 * The object is tests/progs/libukptarget.so, opened by path from
 * $UKP_TEST_PROGS.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ukprobes.h"

static char lib_path[4096];

static void find_lib(void)
{
	const char *dir = getenv("UKP_TEST_PROGS");

	cr_assert(dir, "UKP_TEST_PROGS is not set");
	snprintf(lib_path, sizeof(lib_path), "%s/libukptarget.so", dir);
}

TestSuite(gone, .init = find_lib);

static _Atomic unsigned long hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	return 0;
}

/* kprobes_show_list() into a string (caller frees). */
static char *show_list(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	cr_assert_eq(kprobes_show_list(f), 0);
	fclose(f);
	return buf;
}

static char *show_blacklist(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	cr_assert_eq(kprobes_show_blacklist(f), 0);
	fclose(f);
	return buf;
}

static void *open_lib(void)
{
	void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);

	cr_assert(h, "dlopen %s: %s", lib_path, dlerror());
	return h;
}

static void close_lib(void *h)
{
	cr_assert_eq(dlclose(h), 0);
	/* really unloaded (nothing else holds it) */
	cr_assert_null(dlopen(lib_path, RTLD_NOW | RTLD_NOLOAD), "the object is still loaded");
}

/* Heap blocks of every small size, filled with 'Z': memory freed just
 * before (an unloaded object's symbol names) is likely among them. */
#define SCRIBBLE_N 2048
static void **scribble_heap(void)
{
	void **v = calloc(SCRIBBLE_N, sizeof(*v));

	cr_assert(v);
	for (size_t i = 0; i < SCRIBBLE_N; i++) {
		size_t n = 16 + 16 * (i % 512);

		v[i] = malloc(n);
		cr_assert(v[i]);
		memset(v[i], 'Z', n);
	}
	return v;
}

static void scribble_free(void **v)
{
	for (size_t i = 0; i < SCRIBBLE_N; i++)
		free(v[i]);
	free(v);
}

/*
 * Probe, call, dlclose: the probe is [GONE] in the list and in its flags,
 * cannot be enabled, can be unregistered (the list is then empty), and
 * the object loaded again runs its original code.
 */
Test(gone, dlclose_makes_probe_gone)
{
	struct kprobe kp = { .symbol_name = "libukptarget.so:ukptarget_add",
			     .pre_handler = count_pre };
	int (*add)(int, int);
	uint8_t orig[16];
	void **scribble;
	char *list;
	void *h;

	h = open_lib();
	add = (int (*)(int, int))dlsym(h, "ukptarget_add");
	cr_assert(add);
	memcpy(orig, (const void *)add, sizeof(orig));
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)add);
	cr_expect_eq(add(2, 3), 5);
	cr_expect_eq(atomic_load(&hits), 1);
	list = show_list();
	cr_expect(strstr(list, "ukptarget_add+0x0") && strstr(list, "libukptarget.so"), "%s",
		  list);
	cr_expect_null(strstr(list, "[GONE]"), "%s", list);
	free(list);

	close_lib(h);

	/* the symbol's name outlives the object's names in the symbol cache */
	scribble = scribble_heap();
	list = show_list();
	scribble_free(scribble);
	cr_expect(strstr(list, "ukptarget_add+0x0"), "list: %s", list);
	cr_expect(strstr(list, "[GONE]"), "no [GONE] in: %s", list);
	cr_expect_null(strstr(list, "[DISABLED]"), "a gone probe shows [DISABLED]: %s", list);
	free(list);
	cr_expect(kp.flags & KPROBE_FLAG_GONE, "flags %#x", kp.flags);
	cr_expect(kprobe_gone(&kp));
	cr_expect(kprobe_disabled(&kp));
	cr_expect_eq(enable_kprobe(&kp), -EINVAL);
	cr_expect(kp.flags & KPROBE_FLAG_GONE);

	unregister_kprobe(&kp);
	cr_expect_eq((void *)kp.addr, (void *)add, "a valid unregister cleared addr");
	list = show_list();
	cr_expect_str_empty(list, "list after unregister: %s", list);
	free(list);

	/* Loaded again: the original code, no breakpoint, no handler. */
	h = open_lib();
	add = (int (*)(int, int))dlsym(h, "ukptarget_add");
	cr_assert(add);
	cr_expect_eq(memcmp(orig, (const void *)add, sizeof(orig)), 0,
		     "the reloaded object does not hold its original code");
	cr_expect_eq(add(20, 22), 42);
	cr_expect_eq(atomic_load(&hits), 1);
	close_lib(h);
}

/* The object reloaded while the [GONE] probe is still registered: a new
 * probe on the same function works, the old one stays GONE and inert. */
Test(gone, reload_while_gone_probe_registered)
{
	struct kprobe old = { .symbol_name = "libukptarget.so:ukptarget_add",
			      .pre_handler = count_pre };
	struct kprobe fresh = { .symbol_name = "libukptarget.so:ukptarget_add",
				.pre_handler = count_pre };
	int (*add)(int, int);
	char *list;
	void *h;

	h = open_lib();
	cr_assert_eq(register_kprobe(&old), 0);
	close_lib(h);
	cr_expect(kprobe_gone(&old));

	h = open_lib();
	add = (int (*)(int, int))dlsym(h, "ukptarget_add");
	cr_expect_eq(add(1, 1), 2);
	cr_expect_eq(atomic_load(&hits), 0, "the gone probe fired in the reloaded object");
	cr_expect_eq(enable_kprobe(&old), -EINVAL);
	cr_assert_eq(register_kprobe(&fresh), 0);
	cr_expect_eq(add(1, 2), 3);
	cr_expect_eq(atomic_load(&hits), 1);
	cr_expect_not(kprobe_gone(&fresh));
	list = show_list();
	cr_expect(strstr(list, "[GONE]"), "%s", list);
	free(list);
	unregister_kprobe(&old);
	cr_expect_eq(add(2, 2), 4);
	cr_expect_eq(atomic_load(&hits), 2, "unregistering the gone probe broke the new one");
	unregister_kprobe(&fresh);
	cr_expect_eq(add(3, 3), 6);
	cr_expect_eq(atomic_load(&hits), 2);
	list = show_list();
	cr_expect_str_empty(list, "%s", list);
	free(list);
	close_lib(h);
}

/* Two probes at the same address (an aggregate) both become GONE; a
 * disabled one shows [GONE] and not [DISABLED]. */
Test(gone, aggregate_and_disabled_probes_go_together)
{
	struct kprobe a = { .symbol_name = "libukptarget.so:ukptarget_add",
			    .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "libukptarget.so:ukptarget_add",
			    .pre_handler = count_pre, .flags = KPROBE_FLAG_DISABLED };
	struct kprobe *kps[2] = { &a, &b };
	char *list, *p;
	int n = 0;
	void *h;

	h = open_lib();
	cr_assert_eq(register_kprobes(kps, 2), 0);
	close_lib(h);
	cr_expect(kprobe_gone(&a) && kprobe_gone(&b));
	list = show_list();
	for (p = list; (p = strstr(p, "[GONE]")); p++)
		n++;
	cr_expect_eq(n, 2, "%s", list);
	cr_expect_null(strstr(list, "[DISABLED]"), "%s", list);
	free(list);
	unregister_kprobes(kps, 2);
	list = show_list();
	cr_expect_str_empty(list, "%s", list);
	free(list);
}

/* After the unload the symbol is gone: registering by name fails. */
Test(gone, register_after_dlclose_fails)
{
	struct kprobe kp = { .symbol_name = "libukptarget.so:ukptarget_add",
			     .pre_handler = count_pre };

	close_lib(open_lib());
	cr_expect_eq(register_kprobe(&kp), -ENOENT);
}

/*
 * NOKPROBE_SYMBOL() in a dlopen()ed object: ukptarget_forbidden is
 * refused with -EINVAL, kprobes_show_blacklist() lists its range, while
 * its unmarked neighbour in the same object can be probed.
 */
Test(gone, nokprobe_symbol_in_dlopened_object)
{
	struct kprobe bad = { .symbol_name = "libukptarget.so:ukptarget_forbidden",
			      .pre_handler = count_pre };
	struct kprobe bad_addr = { .pre_handler = count_pre };
	struct kprobe ok = { .symbol_name = "libukptarget.so:ukptarget_add",
			     .pre_handler = count_pre };
	int (*forbidden)(int);
	char *bl, *line, *save;
	bool listed = false;
	void *h;

	h = open_lib();
	forbidden = (int (*)(int))dlsym(h, "ukptarget_forbidden");
	cr_assert(forbidden);
	cr_expect_eq(register_kprobe(&bad), -EINVAL);
	bad_addr.addr = (kprobe_opcode_t *)forbidden;
	cr_expect_eq(register_kprobe(&bad_addr), -EINVAL);
	cr_expect_eq(forbidden(3), 21);
	cr_expect_eq(atomic_load(&hits), 0);

	bl = show_blacklist();
	for (line = strtok_r(bl, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long start, end;
		char name[256];

		if (sscanf(line, "0x%lx-0x%lx %255s", &start, &end, name) != 3)
			continue;
		if (!strcmp(name, "ukptarget_forbidden")) {
			listed = true;
			cr_expect_eq(start, (unsigned long)forbidden);
			cr_expect_gt(end, start);
		}
	}
	free(bl);
	cr_expect(listed, "ukptarget_forbidden is not in the blacklist");

	cr_expect_eq(register_kprobe(&ok), 0);
	unregister_kprobe(&ok);
	close_lib(h);

	/* unloaded: its blacklist entry goes with it */
	bl = show_blacklist();
	cr_expect_null(strstr(bl, "ukptarget_forbidden"), "still blacklisted after dlclose");
	free(bl);
}
