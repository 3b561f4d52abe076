/* SPDX-License-Identifier: MIT */
/*
 * obj_pool.h - fixed-size objects the registry keeps one of per probe or
 * per site (struct ukp_site, struct ukp_child, a detour's region), carved
 * from large anonymous mappings instead of one malloc() each: no
 * allocator header or rounding per object, and no call into libc's
 * malloc (which the program may have probed) per registration.
 *
 * Objects are aligned to the pool's alignment and their size is rounded
 * up to it; a freed object goes on the pool's free list (memory is never
 * given back). Context: [reg], under ukp_mutex (the pool has no lock of
 * its own); objects may be read anywhere while allocated.
 */
#ifndef UKP_OBJ_POOL_H
#define UKP_OBJ_POOL_H

#include <stddef.h>

struct ukp_pool {
	size_t size;  /* object size, a multiple of align */
	size_t align; /* a power of two, at least sizeof(void *) */
	void *free;   /* freed objects, linked through their first word */
	char *cur;    /* the rest of the current mapping */
	char *end;
};

#define UKP_POOL_INIT(type, al) \
	{ .size = (sizeof(type) + (al) - 1) & ~((size_t)(al) - 1), .align = (al) }

/* [reg] A zeroed object, or NULL (errno ENOMEM). */
void *ukp_pool_zalloc(struct ukp_pool *p);
/* [reg] Give obj (from p, or NULL) back. */
void ukp_pool_free(struct ukp_pool *p, void *obj);

/*
 * [reg] A zeroed temporary array the size of a batch (NULL if out of
 * memory; errno ENOMEM). From 64 KiB on it has a mapping of its own,
 * unmapped by ukp_batch_free: a batch of 100,000 probes leaves no
 * resident heap behind (glibc raises its mmap threshold after the first
 * large free and then serves such arrays from the heap, whose freed
 * pages stay resident).
 */
void *ukp_batch_zalloc(size_t n);
/* [reg] Give back an array of ukp_batch_zalloc (or NULL). */
void ukp_batch_free(void *p);

#endif
