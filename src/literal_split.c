// SPDX-License-Identifier: MIT
/*
 * literal_split.c - a large literal scan (arch_scan_literals: a non-PIE
 * executable's code, megabytes of it) in two pieces at the same time,
 * the second one on a helper thread, with exactly the findings of the
 * scan in one piece.
 *
 * Why the pieces add up to the whole scan. The scan's decoding goes from
 * each instruction to the next, or one byte on, or to a boundary (sync)
 * that an instruction would cover; where it goes depends on nothing but
 * the offset it is at. The split offset is a boundary in the middle; the
 * first piece decodes the instructions that start before it, with the
 * bytes of the whole code available, as the whole scan does. When the
 * first piece stops exactly there (*stopped), the whole scan decodes an
 * instruction there too, and from there on does what the second piece
 * did. Otherwise (an instruction at a boundary covered the split
 * offset) the second piece is thrown away and the first goes on. The
 * flow ranges (the index's direct transfers) that lie in one piece are
 * scanned there, with that range's own decoding limit; a range across
 * the split is left to the caller, as any range the scan does not serve.
 *
 * The helper only decodes and logs: it calls none of the caller's
 * callbacks, and scans a copy of the ranges after the split. After it is
 * joined, its done flags are copied back and its findings reported, in
 * its order, after the first piece's: the callbacks see what the whole
 * scan reports, in the same order but for the ranges that cross the
 * split (scanned later by the caller).
 *
 * [reg] everything here; the helper thread runs second_piece alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "code_refs.h"
#include "grow_array.h"
#include "internal.h"

/* Below this, a thread costs more than it saves (tests change it). */
size_t ukp_literal_split_min = 1u << 20;
/* Scans whose two pieces were joined (tests). */
size_t ukp_literal_splits;

/* A finding of the second piece: a literal (range SIZE_MAX) or a direct
 * transfer of ranges[range]. */
struct logged {
	uintptr_t value, from;
	size_t range;
};

struct piece {
	struct arch_literal_scan sc;
	struct arch_flow_range *ranges; /* the whole scan's from k0 on, copied */
	size_t k0;
	struct logged *log;
	size_t n, cap;
	size_t stopped;
	int ret;
};

static int log_add(struct piece *p, uintptr_t value, uintptr_t from, size_t range)
{
	struct logged *l = ukp_grow(p->log, &p->cap, p->n, sizeof(*l));

	if (!l)
		return -ENOMEM;
	p->log = l;
	p->log[p->n++] = (struct logged){ value, from, range };
	return 0;
}

static int log_literal(void *arg, uintptr_t value)
{
	return log_add(arg, value, 0, SIZE_MAX);
}

static int log_range(void *arg, size_t range, uintptr_t from, uintptr_t target)
{
	struct piece *p = arg;

	return log_add(p, target, from, p->k0 + range);
}

/* [reg] (the helper thread) */
static void *second_piece(void *arg)
{
	struct piece *p = arg;

	p->ret = arch_scan_literals(&p->sc);
	return NULL;
}

/* The split offset: the first boundary at or after the middle, or 0. */
static size_t split_at(const struct arch_literal_scan *sc)
{
	uintptr_t mid = sc->addr + sc->len / 2;
	size_t lo = 0, hi = sc->nsync;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (sc->sync[m] < mid)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo == sc->nsync || sc->sync[lo] - sc->addr >= sc->len)
		return 0;
	return sc->sync[lo] - sc->addr;
}

/* First range starting at or after addr (ranges by start). */
static size_t range_from(const struct arch_literal_scan *sc, uintptr_t addr)
{
	size_t lo = 0, hi = sc->nranges;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (sc->ranges[m].start < addr)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* Start the helper with every signal blocked but the library's (it
 * answers thread scans and takes breakpoints in what it calls). */
static bool start_helper(pthread_t *t, struct piece *p)
{
	sigset_t all, old;
	bool ok;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ok = pthread_create(t, NULL, second_piece, p) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok;
}

/* [reg] The helper's findings, after the first piece's. */
static int replay(const struct arch_literal_scan *sc, const struct piece *p)
{
	size_t i;
	int ret;

	for (i = 0; i < p->sc.nranges; i++)
		if (p->ranges[i].done)
			sc->ranges[p->k0 + i].done = true;
	for (i = 0; i < p->n; i++) {
		const struct logged *l = &p->log[i];

		ret = l->range == SIZE_MAX ? sc->fn(sc->arg, l->value) :
					     sc->range_fn(sc->range_arg, l->range, l->from, l->value);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] arch_scan_literals(sc), a large whole scan in two pieces. */
int ukp_scan_literals(const struct arch_literal_scan *sc)
{
	struct arch_literal_scan first = *sc, rest = *sc;
	struct piece p = { .sc = *sc };
	size_t mid, stopped = 0;
	pthread_t t;
	int ret;

	if (sc->from || sc->to || sc->stopped || sc->len < ukp_literal_split_min)
		return arch_scan_literals(sc);
	mid = split_at(sc);
	if (!mid)
		return arch_scan_literals(sc);
	p.sc.from = mid;
	p.sc.stopped = &p.stopped;
	p.sc.fn = log_literal;
	p.sc.arg = &p;
	if (sc->range_fn && sc->nranges) {
		p.k0 = range_from(sc, sc->addr + mid);
		p.sc.nranges = sc->nranges - p.k0;
		p.ranges = malloc((p.sc.nranges ? p.sc.nranges : 1) * sizeof(*p.ranges));
		if (!p.ranges)
			return arch_scan_literals(sc);
		memcpy(p.ranges, sc->ranges + p.k0, p.sc.nranges * sizeof(*p.ranges));
		p.sc.ranges = p.ranges;
		p.sc.range_fn = log_range;
		p.sc.range_arg = &p;
	}
	if (!start_helper(&t, &p)) {
		free(p.ranges);
		return arch_scan_literals(sc);
	}
	first.to = mid;
	first.stopped = &stopped;
	ret = arch_scan_literals(&first);
	pthread_join(t, NULL);
	if (!ret && stopped == mid && !p.ret) {
		ret = replay(sc, &p);
		ukp_literal_splits++;
	} else if (!ret) {
		/* the whole scan's way did not pass the split offset (or the
		 * helper failed): go on from where the first piece stopped */
		rest.from = stopped;
		ret = arch_scan_literals(&rest);
	}
	free(p.ranges);
	free(p.log);
	return ret;
}
