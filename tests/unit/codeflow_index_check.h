/* SPDX-License-Identifier: MIT */
/*
 * codeflow_index_check.h - the flow check's index of an object built in
 * one pass (the ranges decoded with an executable's literals, as the
 * check does) and in two (each range on its own): the same jump targets,
 * the same code references, the same error. For test_codeflow_nopie and
 * the CPython run of codeflow_index_preload.c.
 */
#ifndef UKT_CODEFLOW_INDEX_CHECK_H
#define UKT_CODEFLOW_INDEX_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codeflow.h"
#include "internal.h"

/* The first index where a and b differ, or the shorter length. */
static size_t ukt_first_diff(const uintptr_t *a, size_t na, const uintptr_t *b, size_t nb)
{
	size_t i;

	for (i = 0; i < na && i < nb && a[i] == b[i]; i++)
		;
	return i;
}

/*
 * Build both and compare; 0 when the same, else -1 with the difference
 * in msg. *one gets the one-pass build's counts (its arrays freed).
 */
static int ukt_index_same(const struct ukp_object *obj, struct ukp_codeflow_index *one,
			  char *msg, size_t msglen)
{
	struct ukp_codeflow_index two = { 0 };
	size_t d;
	int ret = -1;

	memset(one, 0, sizeof(*one));
	if (ukp_lock_for_show() != 0) {
		snprintf(msg, msglen, "no registry lock");
		return -1;
	}
	if (ukp_codeflow_index(obj, true, one) || ukp_codeflow_index(obj, false, &two)) {
		snprintf(msg, msglen, "build failed");
		goto out;
	}
	if (one->refs_err != two.refs_err) {
		snprintf(msg, msglen, "refs error %d (one pass) vs %d", one->refs_err, two.refs_err);
		goto out;
	}
	d = ukt_first_diff(one->targets, one->ntargets, two.targets, two.ntargets);
	if (d < one->ntargets || d < two.ntargets) {
		snprintf(msg, msglen, "%zu vs %zu jump targets, first difference at %zu (%#lx)",
			 one->ntargets, two.ntargets, d,
			 (unsigned long)(d < one->ntargets ? one->targets[d] : two.targets[d]));
		goto out;
	}
	d = ukt_first_diff(one->refs, one->nrefs, two.refs, two.nrefs);
	if (d < one->nrefs || d < two.nrefs) {
		snprintf(msg, msglen, "%zu vs %zu code references, first difference at %zu (%#lx)",
			 one->nrefs, two.nrefs, d,
			 (unsigned long)(d < one->nrefs ? one->refs[d] : two.refs[d]));
		goto out;
	}
	if (two.nalone != two.nranges) {
		snprintf(msg, msglen, "two passes decoded %zu of %zu ranges alone", two.nalone,
			 two.nranges);
		goto out;
	}
	snprintf(msg, msglen, "%zu ranges (%zu decoded alone in one pass), %zu jump targets, "
		 "%zu code references (%d): the same", one->nranges, one->nalone, one->ntargets,
		 one->nrefs, one->refs_err);
	ret = 0;
out:
	ukp_unlock_for_show();
	free(one->targets);
	free(one->refs);
	free(two.targets);
	free(two.refs);
	one->targets = one->refs = NULL;
	return ret;
}

#endif /* UKT_CODEFLOW_INDEX_CHECK_H */
