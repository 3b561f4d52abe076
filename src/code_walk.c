// SPDX-License-Identifier: MIT
/*
 * code_walk.c - see code_walk.h. [reg] everything here.
 */
#include <errno.h>
#include <stdlib.h>

#include "code_walk.h"

int ukp_walk_init(struct ukp_walk *w, unsigned int budget)
{
	*w = (struct ukp_walk){ 0 };
	/* a power of two above twice the budget: probes stay short */
	for (w->seen_cap = 64; w->seen_cap <= 2 * (size_t)budget; w->seen_cap *= 2)
		;
	w->seen = calloc(w->seen_cap, sizeof(*w->seen));
	return w->seen ? 0 : -ENOMEM;
}

static size_t hash_addr(uintptr_t a, size_t cap)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

bool ukp_walk_mark(struct ukp_walk *w, uintptr_t a)
{
	size_t i = hash_addr(a, w->seen_cap);

	while (w->seen[i]) {
		if (w->seen[i] == a)
			return false;
		i = (i + 1) & (w->seen_cap - 1);
	}
	w->seen[i] = a;
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
