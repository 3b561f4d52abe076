// SPDX-License-Identifier: MIT
/*
 * scan_share.c - scans of a whole object's code shared with a helper
 * thread (scan_share.h), with exactly the findings of the scan alone:
 * a non-PIE executable's literal scan (arch_scan_literals, megabytes of
 * code), and the flow index's ranges scanned alone (arch_scan_flow,
 * every function of a stripped library).
 *
 * The work is cut into chunks. This thread takes chunks from the first
 * on and reports as it goes; the helper takes them from the last one
 * down, logging what it finds; each chunk is taken by whichever comes
 * first. When the helper gets no time (a busy machine), this thread
 * does everything; either way no thread waits for the other but for the
 * chunk the helper is at. After the helper is joined, its logs are
 * reported, chunk after chunk: the callbacks see what the scan alone
 * reports, in the same order. The helper only decodes and logs: it
 * calls none of the caller's callbacks and reads nothing but the bytes
 * it was given (copies of its ranges too).
 *
 * The literal scan's chunks start at boundaries (sync). Why they add up
 * to the whole scan: its decoding goes from each instruction to the
 * next, or one byte on, or to a boundary that an instruction would
 * cover; where it goes depends on nothing but the offset it is at. A
 * chunk decodes the instructions that start in it, with the bytes of the
 * whole code available, as the whole scan does. When the chunks before
 * one stopped exactly at its start (*stopped), the whole scan decodes an
 * instruction there too, and from there on does what the chunk did: its
 * log is reported. Otherwise (an instruction covered the chunk's start)
 * the chunk is scanned again from where the previous one stopped. The
 * flow ranges (the index's direct transfers) that lie in one chunk are
 * scanned there, with the range's own decoding limit; a range across
 * chunks is left to the caller, as any range the scan does not serve.
 * The index's ranges are each scanned alone from their own bytes: a
 * chunk is a run of them.
 *
 * [reg] everything here; the helper thread runs the *_helper functions
 * alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "flow/scan_share.h"
#include "base/grow_array.h"
#include "base/lower_bound.h"
#include "base/base.h"
#include "base/sys.h"

/* Below this, a thread costs more than it saves (tests change it). */
size_t ukp_share_min = 256u << 10;
/* Scans of which the helper did a chunk, and (tests) whether to let it
 * take its first chunk before this thread starts. */
size_t ukp_shared_scans;
bool ukp_share_wait;

#define NCHUNKS 8

/* A finding of the helper: a literal (range SIZE_MAX) or a direct
 * transfer of ranges[range]. */
struct logged {
	uintptr_t value, from;
	size_t range;
};

enum { FREE, MINE, HELPERS };

struct chunk {
	size_t start, end;              /* offsets; start is a boundary (or 0) */
	atomic_int owner;
	/* the helper's: */
	struct arch_flow_range *ranges; /* copies of those starting in the chunk */
	size_t k0, nranges;             /* ... from sc->ranges[k0] */
	struct logged *log;
	size_t n, cap;
	size_t stopped;
	int ret;
};

struct split {
	const struct arch_literal_scan *sc;
	struct chunk c[NCHUNKS];
	size_t nc;
	void *cache, *helper_cache; /* each thread's decoding cache (the arch's) */
};

static int log_add(struct chunk *c, uintptr_t value, uintptr_t from, size_t range)
{
	struct logged *l = ukp_grow(c->log, &c->cap, c->n, sizeof(*l));

	if (!l)
		return -ENOMEM;
	c->log = l;
	c->log[c->n++] = (struct logged){ value, from, range };
	return 0;
}

static int log_literal(void *arg, uintptr_t value)
{
	return log_add(arg, value, 0, SIZE_MAX);
}

static int log_range(void *arg, size_t range, uintptr_t from, uintptr_t target)
{
	struct chunk *c = arg;

	return log_add(c, target, from, c->k0 + range);
}

/* First range starting at or after addr (ranges by start). */
static size_t range_from(const struct arch_literal_scan *sc, uintptr_t addr)
{
	return UKP_LOWER_BOUND(sc->ranges, sc->nranges, start, addr);
}

/* [reg] (the helper) One chunk, from its start, into its log. */
static void literals_chunk_helper(struct split *sp, struct chunk *c)
{
	const struct arch_literal_scan *whole = sp->sc;
	struct arch_literal_scan sc = *whole;

	sc.from = c->start;
	sc.to = c->end;
	sc.stopped = &c->stopped;
	sc.fn = log_literal;
	sc.arg = c;
	sc.range_fn = NULL;
	sc.nranges = 0;
	if (whole->range_fn && whole->nranges) {
		c->k0 = range_from(whole, whole->addr + c->start);
		c->nranges = range_from(whole, whole->addr + c->end) - c->k0;
		c->ranges = malloc((c->nranges ? c->nranges : 1) * sizeof(*c->ranges));
		if (!c->ranges) {
			c->ret = -ENOMEM;
			return;
		}
		memcpy(c->ranges, whole->ranges + c->k0, c->nranges * sizeof(*c->ranges));
		sc.ranges = c->ranges;
		sc.nranges = c->nranges;
		sc.range_fn = log_range;
		sc.range_arg = c;
		sc.cache = &sp->helper_cache;
	}
	c->ret = arch_scan_literals(&sc);
}

/* [reg] (the helper thread) Chunks from the last one down, while free. */
static void *literals_helper(void *arg)
{
	struct split *sp = arg;
	size_t i;

	for (i = sp->nc; i-- > 1;) {
		int want = FREE;

		if (!atomic_compare_exchange_strong(&sp->c[i].owner, &want, HELPERS))
			break;
		literals_chunk_helper(sp, &sp->c[i]);
	}
	return NULL;
}

/* Start a helper with every signal blocked but the library's (it
 * answers thread scans and takes breakpoints in what it calls). */
static bool start_thread(struct ukprobes_kthread *t, void *(*fn)(void *), void *arg)
{
	return ukp_kthread_start(t, fn, arg, "ukprobes-scan") == 0;
}

/* The chunks: boundaries of sc at about equal distances. */
static void cut(struct split *sp)
{
	const struct arch_literal_scan *sc = sp->sc;
	size_t i, k = 0;

	sp->nc = 0;
	for (i = 0; i < NCHUNKS; i++) {
		uintptr_t want = sc->addr + sc->len / NCHUNKS * i;
		size_t start;

		while (k < sc->nsync && sc->sync[k] < want)
			k++;
		if (i == 0)
			start = 0;
		else if (k < sc->nsync && sc->sync[k] - sc->addr < sc->len)
			start = sc->sync[k] - sc->addr;
		else
			break;
		if (sp->nc && start <= sp->c[sp->nc - 1].start)
			continue;
		if (sp->nc)
			sp->c[sp->nc - 1].end = start;
		sp->c[sp->nc].start = start;
		atomic_init(&sp->c[sp->nc].owner, FREE);
		sp->nc++;
	}
	sp->c[sp->nc - 1].end = sc->len;
}

/* [reg] The helper's chunk c, reported after the scan got to its start. */
static int replay(const struct arch_literal_scan *sc, const struct chunk *c)
{
	size_t i;
	int ret;

	for (i = 0; i < c->nranges; i++)
		if (c->ranges[i].done)
			sc->ranges[c->k0 + i].done = true;
	for (i = 0; i < c->n; i++) {
		const struct logged *l = &c->log[i];

		ret = l->range == SIZE_MAX ? sc->fn(sc->arg, l->value) :
					     sc->range_fn(sc->range_arg, l->range, l->from, l->value);
		if (ret)
			return ret;
	}
	return 0;
}

/* [reg] From pos (where the scan got to) to the end of chunk c, here. */
static int scan_here(struct split *sp, const struct chunk *c, size_t *pos)
{
	struct arch_literal_scan part = *sp->sc;

	if (*pos >= c->end)
		return 0;	/* an instruction covered the whole chunk */
	part.from = *pos;
	part.to = c->end;
	part.stopped = pos;
	part.cache = &sp->cache;
	return arch_scan_literals(&part);
}

/* [reg] arch_scan_literals(sc), a large whole scan shared with a helper. */
int ukp_scan_literals(const struct arch_literal_scan *sc)
{
	struct split *sp;
	size_t i, pos = 0;
	bool helper, helped = false;
	struct ukprobes_kthread t;
	int ret = 0;

	/* (each thread has a decoding cache of its own to fill) */
	if (sc->from || sc->to || sc->stopped || sc->len / 4 < ukp_share_min)
		return arch_scan_literals(sc);
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return arch_scan_literals(sc);
	sp->sc = sc;
	cut(sp);
	atomic_store(&sp->c[0].owner, MINE);
	helper = sp->nc > 1 && start_thread(&t, literals_helper, sp);
	while (helper && ukp_share_wait && atomic_load(&sp->c[sp->nc - 1].owner) == FREE)
		ukp_sys_sched_yield();
	for (i = 0; i < sp->nc && !ret; i++) {
		int want = FREE;

		if (i && !atomic_compare_exchange_strong(&sp->c[i].owner, &want, MINE))
			break;
		ret = scan_here(sp, &sp->c[i], &pos);
	}
	/* the helper stops at the first chunk it finds taken */
	for (size_t k = i; ret && k < sp->nc; k++) {
		int want = FREE;

		atomic_compare_exchange_strong(&sp->c[k].owner, &want, MINE);
	}
	if (helper)
		ukprobes_kthread_join(&t);
	for (; i < sp->nc && !ret; i++) {
		struct chunk *c = &sp->c[i];

		if (pos == c->start && !c->ret) {
			ret = replay(sc, c);
			pos = c->stopped;
			helped = true;
		} else {
			ret = scan_here(sp, c, &pos);
		}
	}
	for (i = 0; i < sp->nc; i++) {
		free(sp->c[i].ranges);
		free(sp->c[i].log);
	}
	free(sp->cache);
	free(sp->helper_cache);
	free(sp);
	if (helped)
		ukp_shared_scans++;
	return ret;
}

/* ------------------------------------------------ the index's ranges */

/* Parts in a chunk of ukp_scan_ranges. */
#define PARTS_PER_CHUNK 64u

struct rlogged {
	size_t part;
	uintptr_t from, target;
};

struct rchunk {
	atomic_int owner;
	struct rlogged *log;    /* the helper's */
	size_t n, cap;
	int ret;
};

struct rshare {
	const struct arch_code_part *parts;
	size_t nparts, nc;
	struct rchunk *c;
	/* this thread's reports */
	arch_range_fn fn;
	void *arg;
	size_t part;            /* being scanned */
	/* the helper's */
	struct rchunk *cur;
};

static int report_direct(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct rshare *rs = arg;

	return kind == ARCH_FLOW_DIRECT ? rs->fn(rs->arg, rs->part, from, target) : 0;
}

/* [reg] Part i here, reported. */
static int part_here(struct rshare *rs, size_t i)
{
	rs->part = i;
	return arch_scan_flow(&rs->parts[i], 1, 0, 0, ARCH_FLOW_DIRECT_ONLY, report_direct, rs);
}

struct rlog_arg {
	struct rchunk *c;
	size_t part;
};

static int log_direct(void *arg, enum arch_flow_kind kind, uintptr_t from, uintptr_t target)
{
	struct rlog_arg *a = arg;
	struct rlogged *l;

	if (kind != ARCH_FLOW_DIRECT)
		return 0;
	l = ukp_grow(a->c->log, &a->c->cap, a->c->n, sizeof(*l));
	if (!l)
		return -ENOMEM;
	a->c->log = l;
	a->c->log[a->c->n++] = (struct rlogged){ a->part, from, target };
	return 0;
}

/* [reg] (the helper thread) Chunks from the last one down, while free. */
static void *ranges_helper(void *arg)
{
	struct rshare *rs = arg;
	size_t i, p;

	for (i = rs->nc; i-- > 1;) {
		struct rchunk *c = &rs->c[i];
		int want = FREE;

		if (!atomic_compare_exchange_strong(&c->owner, &want, HELPERS))
			break;
		for (p = i * PARTS_PER_CHUNK; p < rs->nparts && p < (i + 1) * PARTS_PER_CHUNK && !c->ret;
		     p++) {
			struct rlog_arg a = { c, p };

			c->ret = arch_scan_flow(&rs->parts[p], 1, 0, 0, ARCH_FLOW_DIRECT_ONLY,
						log_direct, &a);
		}
	}
	return NULL;
}

/* [reg] */
int ukp_scan_ranges(const struct arch_code_part *parts, size_t n, arch_range_fn fn, void *arg)
{
	struct rshare rs = { .parts = parts, .nparts = n, .fn = fn, .arg = arg };
	size_t i, p, bytes = 0;
	bool helper, helped = false;
	struct ukprobes_kthread t;
	int ret = 0;

	for (i = 0; i < n; i++)
		bytes += parts[i].len;
	rs.nc = (n + PARTS_PER_CHUNK - 1) / PARTS_PER_CHUNK;
	if (bytes >= ukp_share_min && rs.nc > 1)
		rs.c = calloc(rs.nc, sizeof(*rs.c));
	if (!rs.c) {
		for (i = 0; i < n && !ret; i++)
			ret = part_here(&rs, i);
		return ret;
	}
	for (i = 0; i < rs.nc; i++)
		atomic_init(&rs.c[i].owner, i ? FREE : MINE);
	helper = start_thread(&t, ranges_helper, &rs);
	while (helper && ukp_share_wait && atomic_load(&rs.c[rs.nc - 1].owner) == FREE)
		ukp_sys_sched_yield();
	for (i = 0; i < rs.nc && !ret; i++) {
		int want = FREE;

		if (i && !atomic_compare_exchange_strong(&rs.c[i].owner, &want, MINE))
			break;
		for (p = i * PARTS_PER_CHUNK; p < n && p < (i + 1) * PARTS_PER_CHUNK && !ret; p++)
			ret = part_here(&rs, p);
	}
	for (size_t k = i; ret && k < rs.nc; k++) {
		int want = FREE;

		atomic_compare_exchange_strong(&rs.c[k].owner, &want, MINE);
	}
	if (helper)
		ukprobes_kthread_join(&t);
	/* the helper's chunks, in order: its logs, or here what it could not do */
	for (; i < rs.nc && !ret; i++) {
		const struct rchunk *c = &rs.c[i];

		if (c->ret) {
			for (p = i * PARTS_PER_CHUNK; p < n && p < (i + 1) * PARTS_PER_CHUNK && !ret; p++)
				ret = part_here(&rs, p);
			continue;
		}
		helped = true;
		for (p = 0; p < c->n && !ret; p++)
			ret = fn(arg, c->log[p].part, c->log[p].from, c->log[p].target);
	}
	for (i = 0; i < rs.nc; i++)
		free(rs.c[i].log);
	free(rs.c);
	if (helped)
		ukp_shared_scans++;
	return ret;
}
