// SPDX-License-Identifier: MIT
/*
 * stack_objects.c - where the loaded objects' code and call frame
 * information are, for the hit's unwinder (core/stacktrace.c): a table
 * [reg] built with ukp_iterate_objects() whenever the symbol cache rescans
 * the loaded objects, published by swapping two copies, read [hit]
 * without locks. Built without jump tables (src/meson.build), as the
 * unwinder.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <stdatomic.h>

#include "base/base.h"
#include "symbols/stack_objects.h"
#include "symbols/maps_objects.h"

#define ST_MAX_OBJS 1024


static struct ukp_stack_range tabs[2][ST_MAX_OBJS];
static int counts[2];
static _Atomic int cur = -1;

struct build {
	struct ukp_stack_range *t;
	int n;
};

/* [reg] Called inside a walk (the loader's lock held, or a snapshot's
 * copies: iterate_objects.c): copy and return. */
static int build_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build *b = arg;
	uintptr_t hdr = 0, hdr_end = 0;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = info->dlpi_addr + ph->p_vaddr;
			hdr_end = hdr + ph->p_memsz;
		}
	}
	for (i = 0; i < info->dlpi_phnum && b->n < ST_MAX_OBJS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		b->t[b->n].lo = info->dlpi_addr + ph->p_vaddr;
		b->t[b->n].hi = b->t[b->n].lo + ph->p_memsz;
		b->t[b->n].hdr = hdr;
		b->t[b->n].hdr_end = hdr_end;
		b->n++;
	}
	return 0;
}

/* [reg] (registry mutex held: one builder at a time) */
void ukp_stacktrace_objects_changed(void)
{
	int next = atomic_load(&cur) == 0 ? 1 : 0;
	struct build b = { tabs[next], 0 };

	ukp_iterate_objects(build_cb, &b);
	counts[next] = b.n;
	atomic_store_explicit(&cur, next, memory_order_release);
}

/* ------------------------------------------------------------ [hit] */

/* The executable segment holding ip, or NULL. */
const struct ukp_stack_range *ukp_stack_range_of(uintptr_t ip)
{
	int t = atomic_load_explicit(&cur, memory_order_acquire), i, n;

	if (t < 0)
		return NULL;
	n = counts[t];
	for (i = 0; i < n && i < ST_MAX_OBJS; i++)
		if (ip >= tabs[t][i].lo && ip < tabs[t][i].hi)
			return &tabs[t][i];
	return NULL;
}
