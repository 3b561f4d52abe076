// SPDX-License-Identifier: MIT
/*
 * code_walk.c - see code_walk.h. [reg] everything here.
 */
#include <errno.h>
#include <stdlib.h>

#include "flow/code_walk.h"

#define SEEN_MIN 64

int ukp_walk_init(struct ukp_walk *w, unsigned int budget)
{
	*w = (struct ukp_walk){ 0 };
	/* at most a power of two above twice the budget: probes stay short.
	 * From small on, grown at half full: most walks meet a few hundred
	 * addresses, and a table sized for the budget (512 KiB) zeroed per
	 * walk is slow and, once freed, leaves heap resident. */
	for (w->seen_max = SEEN_MIN; w->seen_max <= 2 * (size_t)budget; w->seen_max *= 2)
		;
	w->seen_cap = SEEN_MIN;
	w->seen = calloc(w->seen_cap, sizeof(*w->seen));
	return w->seen ? 0 : -ENOMEM;
}

static size_t hash_addr(uintptr_t a, size_t cap)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

/* Twice the room, if it can be had (else the table fills up further). */
static void seen_grow(struct ukp_walk *w)
{
	size_t cap = w->seen_cap * 2;
	uintptr_t *t;

	if (cap > w->seen_max || !(t = calloc(cap, sizeof(*t))))
		return;
	for (size_t k = 0; k < w->seen_cap; k++) {
		size_t i;

		if (!w->seen[k])
			continue;
		for (i = hash_addr(w->seen[k], cap); t[i]; i = (i + 1) & (cap - 1))
			;
		t[i] = w->seen[k];
	}
	free(w->seen);
	w->seen = t;
	w->seen_cap = cap;
}

bool ukp_walk_mark(struct ukp_walk *w, uintptr_t a)
{
	size_t i, n;

	if (2 * (w->nseen + 1) > w->seen_cap)
		seen_grow(w);
	i = hash_addr(a, w->seen_cap);
	for (n = 0; w->seen[i]; n++) {
		if (w->seen[i] == a)
			return false;
		if (n == w->seen_cap)
			return true; /* full (no memory to grow): not marked, the
				      * walk's budget ends it */
		i = (i + 1) & (w->seen_cap - 1);
	}
	w->seen[i] = a;
	w->nseen++;
	return true;
}

int ukp_walk_push(struct ukp_walk *w, uintptr_t a)
{
	if (w->ntodo == w->todo_cap) {
		size_t cap = w->todo_cap ? w->todo_cap * 2 : 64;
		uintptr_t *n = realloc(w->todo, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->todo = n;
		w->todo_cap = cap;
	}
	w->todo[w->ntodo++] = a;
	return 0;
}

void ukp_walk_free(struct ukp_walk *w)
{
	free(w->seen);
	free(w->todo);
	*w = (struct ukp_walk){ 0 };
}
