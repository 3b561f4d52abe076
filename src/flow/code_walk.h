/* SPDX-License-Identifier: MIT */
/*
 * code_walk.h - the bookkeeping of a walk over code from an entry (the
 * vector-use proofs, src/arch/ARCH/vecuse.c): the addresses met once,
 * and those still to visit. The walking itself, instruction by
 * instruction, is the arch's. [reg] everything here.
 */
#ifndef UKP_CODE_WALK_H
#define UKP_CODE_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ukp_walk {
	uintptr_t *seen;      /* open addressing, 0 = empty */
	size_t seen_cap, nseen;
	size_t seen_max;      /* the most seen_cap grows to */
	uintptr_t *todo;
	size_t ntodo, todo_cap;
	unsigned int insns;   /* the arch's count, against its budget */
};

/* Room for more than 2 * budget addresses, as they come; 0 or -ENOMEM. */
int ukp_walk_init(struct ukp_walk *w, unsigned int budget);
/* true if a was not met before (and marks it) */
bool ukp_walk_mark(struct ukp_walk *w, uintptr_t a);
/* a to visit; 0 or -ENOMEM */
int ukp_walk_push(struct ukp_walk *w, uintptr_t a);
void ukp_walk_free(struct ukp_walk *w);

/* Is a one of the nsafe functions known safe (the walk stops there)? */
static inline bool ukp_walk_known_safe(uintptr_t a, const uintptr_t *safe, size_t nsafe)
{
	for (size_t i = 0; i < nsafe; i++)
		if (safe[i] == a)
			return true;
	return false;
}

#endif
