/* SPDX-License-Identifier: MIT */
/*
 * free.c - `ukprobe run`: a script's memory (the tree, probes, blocks,
 * maps, formats), for the fuzz target (tests/fuzz/fuzz_script.c), which
 * runs with the leak checker.
 */
#include <stdlib.h>

#include "script.h"

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;
		int i;

		node_free(n->a);
		node_free(n->b);
		node_free(n->c);
		for (i = 0; i < n->nargs; i++)
			node_free(n->args[i]);
		free(n->args);
		free(n->name);
		free(n);
		n = next;
	}
}

void script_free(struct script *sc)
{
	int i;

	for (i = 0; i < sc->nprobes; i++) {
		free(sc->probes[i].obj);
		free(sc->probes[i].func);
		free(sc->probes[i].text);
	}
	free(sc->probes);
	for (i = 0; i < sc->nblocks; i++) {
		node_free(sc->blocks[i].pred);
		node_free(sc->blocks[i].body);
		/* the names are the tree's */
		free(sc->blocks[i].vars);
		free(sc->blocks[i].vtypes);
	}
	free(sc->blocks);
	for (i = 0; i < sc->nmaps; i++)
		free(sc->maps[i]);
	for (i = 0; i < sc->nfmts; i++) {
		free(sc->fmts[i].text);
		free(sc->fmts[i].types);
	}
	free(sc->fmts);
	/* the lines are one copy of the text, cut */
	if (sc->nlines)
		free(sc->lines[0]);
	free(sc->lines);
}
