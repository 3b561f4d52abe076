/* SPDX-License-Identifier: MIT */
/*
 * hist.h - the kernel's hist trigger (Documentation/trace/histogram.rst)
 * for ukprobe events:
 *
 *   hist:keys=FIELD[.MOD][,FIELD[.MOD]]...[:vals=FIELD[,FIELD]...]
 *        [:sort=FIELD[.descending|.ascending][,FIELD...]][:size=N] [if FILTER]
 *
 * FIELD is a fetch argument's name, common_pid, comm or (vals and sort)
 * hitcount; MOD one of hex, sym, sym-offset, log2, buckets=N, execname
 * (common_pid only). The traced threads aggregate every hit into a table
 * of size entries in the traced process (agent/hist_hit.c) without
 * recording it; the table goes to ukprobe at the end (UKPM_HIST), which
 * merges the tables of every image and prints them in the kernel's hist
 * file format (hist_print.c).
 *
 * Parsed by hist.c (from trigger.c), in the CLI only; the agent gets the
 * parsed form (spec_wire.h). Plain C, malloc only; not for signal
 * context. The layout helpers are [any].
 */
#ifndef UKPROBE_HIST_H
#define UKPROBE_HIST_H

#include <stdbool.h>
#include <stdint.h>

#include "spec.h"

#define UKP_HIST_MAX_KEYS 3
#define UKP_HIST_MAX_VALS 4
#define UKP_HIST_MAX_SORT 2
#define UKP_HIST_DEFAULT_SIZE 2048      /* the kernel's default */
#define UKP_HIST_MAX_SIZE (1u << 17)

/* struct ukp_hist_field.arg beyond the fetch arguments (as filter.h) */
#define UKP_HIST_PID      (-1)          /* common_pid (the thread id) */
#define UKP_HIST_COMM     (-2)          /* comm */
#define UKP_HIST_HITCOUNT (-3)          /* hitcount */

enum ukp_hist_mod {
	UKP_HM_NONE, UKP_HM_HEX, UKP_HM_SYM, UKP_HM_SYMOFF, UKP_HM_LOG2, UKP_HM_BUCKETS,
	UKP_HM_EXECNAME,
};

struct ukp_hist_field {
	char name[UKP_SPEC_ARGNAME_MAX + 1];
	int arg;                  /* fetch argument index, or UKP_HIST_* */
	enum ukp_hist_mod mod;
	uint64_t buckets;         /* .buckets=N */
	bool is_string, is_signed;
	unsigned int size;        /* numbers: the argument's bytes; strings: key bytes */
	unsigned int off;         /* keys: where it is in the entry's key */
};

struct ukp_hist_sort {
	int key;                  /* 0..nkeys-1: a key; nkeys + i: val i; -1: hitcount */
	bool descending;
};

struct ukp_hist {
	int nkeys, nvals, nsort;
	struct ukp_hist_field keys[UKP_HIST_MAX_KEYS];
	struct ukp_hist_field vals[UKP_HIST_MAX_VALS];
	struct ukp_hist_sort sort[UKP_HIST_MAX_SORT];
	unsigned int size;        /* entries, a power of two */
	unsigned int key_bytes;   /* a multiple of 8 */
	bool uses_pid, uses_comm; /* the keys or the filter need them */
	bool execname;            /* an entry keeps the comm of its first hit */
	uint32_t args_used;       /* bit i: keys, vals or filter read argument i */
	struct ukp_filter *filter; /* "if FILTER", or NULL */
	char *info;               /* "hist:keys=...:vals=...:sort=...:size=N" as the
				   * kernel's "# trigger info" line shows it */
};

/*
 * One entry, in the agent's table and on the wire: a state word (0
 * empty, 1 being filled, 2 in use), the hit count, the sums of the vals,
 * the comm of its first hit (execname), then the key.
 */
static inline unsigned int ukp_hist_entry_size(const struct ukp_hist *h)
{
	return 16 + 8 * (unsigned int)h->nvals + (h->execname ? 16 : 0) + h->key_bytes;
}
static inline unsigned int ukp_hist_comm_off(const struct ukp_hist *h)
{
	return 16 + 8 * (unsigned int)h->nvals;
}
static inline unsigned int ukp_hist_key_off(const struct ukp_hist *h)
{
	return ukp_hist_comm_off(h) + (h->execname ? 16 : 0);
}

struct ukp_spec_error;

/*
 * text: the trigger after "hist", from its first ':' (col: its column in
 * the whole trigger, for errors). Sets spec->hist (malloc'ed; freed by
 * ukp_spec_free). 0, or -1 with *err.
 */
int ukp_hist_parse(const char *text, int col, struct ukp_spec *spec, struct ukp_spec_error *err);
/* (spec_parsed.c: the agent frees the hists it decoded) */
void ukp_hist_free(struct ukp_hist *h);

/* [hit] A key field's value as it goes in the key: .log2 and .buckets
 * applied (the others change only how it is printed). */
static inline uint64_t ukp_hist_mod_value(enum ukp_hist_mod mod, uint64_t buckets, uint64_t v)
{
	if (mod == UKP_HM_LOG2) {
		/* the kernel's ilog2(roundup_pow_of_two(v)) */
		if (v <= 1)
			return 0;
		return 64 - (uint64_t)__builtin_clzll(v - 1);
	}
	if (mod == UKP_HM_BUCKETS)
		return v / buckets * buckets;
	return v;
}
static inline uint64_t ukp_hist_key_value(const struct ukp_hist_field *f, uint64_t v)
{
	return ukp_hist_mod_value(f->mod, f->buckets, v);
}

#endif /* UKPROBE_HIST_H */
