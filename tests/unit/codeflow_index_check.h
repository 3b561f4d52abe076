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

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow/scan_share.h"
#include "flow/codeflow.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

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
/* The same targets and references in a and b? Else why, in msg. */
static bool ukt_index_equal(const struct ukp_codeflow_index *a,
			    const struct ukp_codeflow_index *b, const char *what, char *msg,
			    size_t msglen)
{
	size_t d;

	if (a->refs_err != b->refs_err) {
		snprintf(msg, msglen, "refs error %d (one pass) vs %d (%s)", a->refs_err,
			 b->refs_err, what);
		return false;
	}
	d = ukt_first_diff(a->targets, a->ntargets, b->targets, b->ntargets);
	if (d < a->ntargets || d < b->ntargets) {
		snprintf(msg, msglen, "%zu vs %zu jump targets (%s), first difference at %zu (%#lx)",
			 a->ntargets, b->ntargets, what, d,
			 (unsigned long)(d < a->ntargets ? a->targets[d] : b->targets[d]));
		return false;
	}
	d = ukt_first_diff(a->refs, a->nrefs, b->refs, b->nrefs);
	if (d < a->nrefs || d < b->nrefs) {
		snprintf(msg, msglen,
			 "%zu vs %zu code references (%s), first difference at %zu (%#lx)",
			 a->nrefs, b->nrefs, what, d,
			 (unsigned long)(d < a->nrefs ? a->refs[d] : b->refs[d]));
		return false;
	}
	return true;
}

/*
 * The index of obj built in one pass (the literal scan serves the ranges)
 * the same as in two, and as in one pass with a large literal scan in
 * one piece (scan_share.c); its ranges and references into *one, and
 * a line in msg ("... the same" and how many scans were split).
 */
static int ukt_index_same(const struct ukp_object *obj, struct ukp_codeflow_index *one,
			  char *msg, size_t msglen)
{
	struct ukp_codeflow_index two = { 0 }, whole = { 0 };
	size_t split_min = ukp_share_min, splits;
	int ret = -1, err;

	memset(one, 0, sizeof(*one));
	if (ukp_lock_for_show() != 0) {
		snprintf(msg, msglen, "no registry lock");
		return -1;
	}
	/* the helper takes its chunks whatever the machine's load */
	splits = ukp_shared_scans;
	ukp_share_wait = true;
	err = ukp_codeflow_index(obj, true, one) || ukp_codeflow_index(obj, false, &two);
	ukp_share_wait = false;
	if (err) {
		snprintf(msg, msglen, "build failed");
		goto out;
	}
	splits = ukp_shared_scans - splits;
	ukp_share_min = SIZE_MAX;
	err = ukp_codeflow_index(obj, true, &whole);
	ukp_share_min = split_min;
	if (err) {
		snprintf(msg, msglen, "build failed (in one piece)");
		goto out;
	}
	if (!ukt_index_equal(one, &two, "two passes", msg, msglen) ||
	    !ukt_index_equal(one, &whole, "in one piece", msg, msglen))
		goto out;
	if (two.nalone != two.nranges) {
		snprintf(msg, msglen, "two passes decoded %zu of %zu ranges alone", two.nalone,
			 two.nranges);
		goto out;
	}
	snprintf(msg, msglen, "%zu ranges (%zu decoded alone in one pass), %zu jump targets, "
		 "%zu code references (%d), %zu scans split: the same", one->nranges, one->nalone,
		 one->ntargets, one->nrefs, one->refs_err, splits);
	ret = 0;
out:
	ukp_unlock_for_show();
	free(one->targets);
	free(one->refs);
	free(two.targets);
	free(two.refs);
	free(whole.targets);
	free(whole.refs);
	one->targets = one->refs = NULL;
	return ret;
}

#endif /* UKT_CODEFLOW_INDEX_CHECK_H */
