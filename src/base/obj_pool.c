// SPDX-License-Identifier: MIT
/*
 * obj_pool.c - fixed-size object pools (obj_pool.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "base/obj_pool.h"
#include "base/sys.h"

/* Each mapping: its pages become resident only as objects are carved. */
#define POOL_MAP_SIZE (1024 * 1024UL)

void *ukp_pool_zalloc(struct ukp_pool *p)
{
	void *obj = p->free;

	if (obj) {
		p->free = *(void **)obj;
		memset(obj, 0, p->size);
		return obj;
	}
	if ((size_t)(p->end - p->cur) < p->size) {
		void *m;

		if (ukp_sys_mmap(NULL, POOL_MAP_SIZE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &m)) {
			errno = ENOMEM;
			return NULL;
		}
		/* (the tail of the last mapping, less than one object, is
		 * left unused) */
		p->cur = m;
		p->end = (char *)m + POOL_MAP_SIZE;
	}
	obj = p->cur;
	p->cur += p->size;
	/* fresh anonymous pages are zero */
	return obj;
}

void ukp_pool_free(struct ukp_pool *p, void *obj)
{
	if (!obj)
		return;
	*(void **)obj = p->free;
	p->free = obj;
}

/* Before each array: its size with the header, 0 when from calloc. */
#define BATCH_HDR 16
#define BATCH_MMAP_MIN (64 * 1024UL)

void *ukp_batch_zalloc(size_t n)
{
	size_t total = n + BATCH_HDR;
	char *p;

	if (total < n) {
		errno = ENOMEM;
		return NULL;
	}
	if (total < BATCH_MMAP_MIN) {
		p = calloc(1, total);
		if (!p)
			return NULL;
		*(size_t *)p = 0;
		return p + BATCH_HDR;
	}
	if (ukp_sys_mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			 (void **)&p)) {
		errno = ENOMEM;
		return NULL;
	}
	*(size_t *)p = total;
	return p + BATCH_HDR;
}

void ukp_batch_free(void *p)
{
	char *h = p ? (char *)p - BATCH_HDR : NULL;

	if (!h)
		return;
	if (*(size_t *)h)
		ukp_sys_munmap(h, *(size_t *)h);
	else
		free(h);
}
