/* SPDX-License-Identifier: MIT */
/*
 * free.c - `ukprobe run`: the script's memory. Every allocation of the
 * stages (the tree, probes, blocks, maps, formats, the lines) is on the
 * script's list, so that script_free() frees all of it, partial trees of
 * a parse that failed too (the fuzz target, tests/fuzz/fuzz_script.c,
 * runs with the leak checker).
 *
 * An allocation has a header of 16 bytes: its index in the list, so that
 * sc_realloc() updates its entry without a search.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

#define HDR 16

static void oom(void)
{
	fputs("ukprobe: error: out of memory\n", stderr);
	exit(1);
}

void *sc_alloc(struct script *sc, size_t n)
{
	char *p;

	if (sc->nallocs == sc->capallocs) {
		size_t cap = sc->capallocs ? 2 * sc->capallocs : 64;
		void **a = realloc(sc->allocs, cap * sizeof(*a));

		if (!a)
			oom();
		sc->allocs = a;
		sc->capallocs = cap;
	}
	p = calloc(1, HDR + n);
	if (!p)
		oom();
	memcpy(p, &sc->nallocs, sizeof(size_t));
	sc->allocs[sc->nallocs++] = p;
	return p + HDR;
}

void *sc_realloc(struct script *sc, void *old, size_t n)
{
	size_t i;
	char *p;

	if (!old)
		return sc_alloc(sc, n);
	memcpy(&i, (char *)old - HDR, sizeof(size_t));
	p = realloc((char *)old - HDR, HDR + n);
	if (!p)
		oom();
	sc->allocs[i] = p;
	return p + HDR;
}

char *sc_strdup(struct script *sc, const char *s)
{
	return sc_strndup(sc, s, strlen(s));
}

char *sc_strndup(struct script *sc, const char *s, size_t n)
{
	char *d;
	size_t len = strnlen(s, n);

	d = sc_alloc(sc, len + 1);
	memcpy(d, s, len);
	return d;
}

void script_free(struct script *sc)
{
	size_t i;

	for (i = 0; i < sc->nallocs; i++)
		free(sc->allocs[i]);
	free(sc->allocs);
	sc->allocs = NULL;
	sc->nallocs = sc->capallocs = 0;
}
