/* SPDX-License-Identifier: MIT */
/*
 * filter.h - event filters in the kernel's syntax
 * (Documentation/trace/events.rst, "Event filtering"):
 *
 *   FIELD OP VALUE, combined with &&, ||, ! and parentheses
 *
 * FIELD is a fetch argument's name, common_pid (the thread id) or comm
 * (the thread's name). Numeric fields take == != < <= > >= & (& is true
 * when the bitwise and is not 0), compared signed or unsigned by the
 * field's type; string fields take == != and ~ (a glob: * ? [...]).
 * String values may be quoted with " or '.
 *
 * The filter is compiled once, by the CLI (filter.c: errors are reported
 * before anything runs), into one malloc'ed block: a postfix program of
 * predicates over the event's argument slots, which ukp_filter_run()
 * (filter_run.c) evaluates without allocating. The agent gets it compiled
 * with its SPEC (spec_wire.h) and builds the evaluator only.
 */
#ifndef UKPROBE_FILTER_H
#define UKPROBE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"

/* Several --filter of one -e, joined before they are and-ed (the CLI's
 * options.c) */
#define UKP_FILTER_SEP     '\x1f'
#define UKP_FILTER_MAX_PREDS 64   /* the evaluator's stack is one 64-bit word */
#define UKP_FILTER_TEXT_MAX 1024

/* Fields other than the fetch arguments (pred.arg). */
#define UKP_FILTER_PID  (-1)      /* common_pid */
#define UKP_FILTER_COMM (-2)      /* comm */

enum ukp_filter_op {
	UKP_FOP_EQ, UKP_FOP_NE, UKP_FOP_LT, UKP_FOP_LE, UKP_FOP_GT, UKP_FOP_GE,
	UKP_FOP_AND,  /* & */
	UKP_FOP_GLOB, /* ~ */
};

struct ukp_filter_pred {
	int arg;                  /* fetch argument index, or UKP_FILTER_PID/COMM */
	enum ukp_filter_op op;
	bool is_string, is_signed;
	unsigned int size;        /* numeric fields: bytes (for sign extension) */
	uint64_t val;
	char str[UKP_SPEC_STR_SLOT]; /* string value, NUL-terminated */
};

/* Postfix instructions: PRED pushes a predicate's result. */
enum ukp_filter_insn { UKP_FI_PRED, UKP_FI_AND, UKP_FI_OR, UKP_FI_NOT };

struct ukp_filter {
	int npreds, ninsns;
	bool uses_pid, uses_comm;
	uint32_t args_used;       /* bit i: the filter reads fetch argument i */
	struct ukp_filter_pred preds[UKP_FILTER_MAX_PREDS];
	/* insn i: kind in the low 8 bits, predicate index above */
	uint32_t insns[3 * UKP_FILTER_MAX_PREDS];
};

/*
 * Compile text for the event spec (its fetch arguments name the fields).
 * Returns 0 with *out malloc'ed (free() it), or -1 with *err filled (col
 * in text).
 */
int ukp_filter_compile(const char *text, const struct ukp_spec *spec, struct ukp_filter **out,
		       struct ukp_spec_error *err);

/*
 * [hit] Does an event pass? data: the argument slots as an event record
 * carries them (struct ukp_fetcharg.off), faults: bit i set when argument
 * i could not be read (compared as 0 or ""), comm: the thread's name (16
 * bytes, may be NULL when !uses_comm), pid: the thread id. Allocation-free
 * and async-signal-safe.
 */
bool ukp_filter_run(const struct ukp_filter *f, const struct ukp_spec *spec,
		    const unsigned char *data, uint32_t faults, const char *comm, int pid);

/* [hit] The kernel's glob_match(): * ? [...] ([!...] and ranges), on
 * str[0..len). */
bool ukp_filter_glob(const char *pat, const char *str, size_t len);

/*
 * --trigger TEXT for spec (trigger.c): stacktrace or stacktrace:N. Sets
 * spec->stacktrace, stack_count, stack_off, stack_max (not
 * trigger_text). 0, or -1 with *err (col in text).
 */
int ukp_trigger_parse(const char *text, struct ukp_spec *spec, struct ukp_spec_error *err);

#endif /* UKPROBE_FILTER_H */
