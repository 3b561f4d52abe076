/* SPDX-License-Identifier: MIT */
/*
 * filter_hit.c - [hit] an event's --filter, evaluated in the traced
 * thread before the hit is counted or recorded (the kernel's
 * filter_match_preds), and its hist trigger, updated with the same
 * fetched arguments when the filter passes. The arguments are fetched
 * by the trace's own code (fetch.c) into a record on the stack, or,
 * when those read are all registers as they are, copied from pt_regs;
 * the compiled program (common/filter.c) runs over it. A numeric
 * filter of registers and dereference chains from them fetches its
 * values straight into an array (ukpa_filter_direct, handlers.c), no
 * record. A filter
 * alone on its SPEC that is one comparison of a register is decided by
 * the handler itself (handlers.c), on pt_regs. Async-signal-safe and
 * allocation-free: syscalls only for the thread's id and name, and only
 * when the filter needs them.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"
#include "filter.h"
#include "filter_branch.h"
#include "hist.h"

/*
 * traceon/traceoff: as the kernel's *_count triggers, N counts the
 * changes made (a traceoff while tracing is off changes nothing and
 * costs nothing of N).
 */
static void onoff(struct ukpa_spec *s, const struct ukp_rec *rec, int tid)
{
	const struct ukp_spec *spec = &s->spec;
	bool on = spec->onoff > 0;
	long left;

	if (atomic_load_explicit(&ukpa_trace_on, memory_order_relaxed) == on)
		return;
	if (spec->onoff_filter &&
	    !ukp_filter_run(spec->onoff_filter, spec, rec->data, rec->faults, rec->comm, tid))
		return;
	left = atomic_load_explicit(&s->onoff_left, memory_order_relaxed);
	do {
		if (!left)
			return;
	} while (left > 0 && !atomic_compare_exchange_weak_explicit(&s->onoff_left, &left, left - 1,
								     memory_order_relaxed,
								     memory_order_relaxed));
	atomic_store_explicit(&ukpa_trace_on, on, memory_order_relaxed);
}

/* the branch program reads the payload as 64-bit words */
_Static_assert(offsetof(struct ukp_rec, data) % 8 == 0, "record payload not word-aligned");

/* [init] Can a register or a dereference chain from one give fa's value
 * in ukpa_filter_direct()? */
static bool direct_ok(const struct ukp_fetcharg *fa)
{
	if (fa->plain_reg)
		return fa->param <= UINT16_MAX;
	return fa->base == UKP_FA_REG && fa->param <= UINT16_MAX && fa->type != UKP_TY_STRING &&
	       !fa->bf_width && !fa->index_scale && fa->nderef >= 0 && fa->nderef <= 255 &&
	       (fa->size == 1 || fa->size == 2 || fa->size == 4 || fa->size == 8);
}

/* [init] s's direct filter (fb_args, direct[]), when it can have one: its
 * --filter is all it checks, a branch program, and reads only arguments
 * direct_ok() takes, not all of them registers as they are (fb_regs). */
static void direct_prepare(struct ukpa_spec *s)
{
	const struct ukp_spec *spec = &s->spec;
	const struct ukp_filter *f = spec->filter;
	int i;

	free(s->fb_args);
	s->fb_args = NULL;
	s->ndirect = 0;
	if (!f || !s->fb || s->fb_regs || spec->hist || spec->onoff || s->need_comm || s->need_pid)
		return;
	for (i = 0; i < spec->nargs; i++) {
		const struct ukp_fetcharg *fa = &spec->args[i];
		struct ukpa_direct_arg *d = &s->direct[s->ndirect];

		if (!(s->fetch_mask & (1u << i)))
			continue;
		if (!direct_ok(fa)) {
			s->ndirect = 0;
			return;
		}
		d->arg = (uint16_t)i;
		d->reg = (uint16_t)fa->param;
		d->nderef = fa->plain_reg ? 0 : (uint8_t)fa->nderef;
		d->size = (uint8_t)fa->size;
		d->deref = fa->deref;
		d->add = fa->plain_reg ? 0 : fa->add;
		d->keep = fa->size < 8 ? (1ULL << (fa->size * 8)) - 1 : ~0ULL;
		s->ndirect++;
	}
	if (!s->ndirect || !(s->fb_args = malloc(sizeof(*s->fb_args))))
		return;
	if (ukp_fbranch_build(f, spec, UKP_FB_ARGS, s->fb_args)) {
		free(s->fb_args);
		s->fb_args = NULL;
	}
}

/* [init] */
void ukpa_filter_prepare(struct ukpa_spec *s)
{
	const struct ukp_spec *spec = &s->spec;
	const struct ukp_filter *f = spec->filter, *o = spec->onoff_filter;
	const struct ukp_hist *h = spec->hist;
	int i;

	s->need_comm = (f && f->uses_comm) || (h && h->uses_comm) || (o && o->uses_comm);
	s->need_pid = (f && f->uses_pid) || (h && h->uses_pid) || (o && o->uses_pid);
	s->fetch_mask = (f ? f->args_used : 0) | (h ? h->args_used : 0) | (o ? o->args_used : 0);
	/* a numeric filter as a branch program: on the registers when it is
	 * all the SPEC checks and reads only registers as they are (no record
	 * fetched at all), else on the fetched record */
	free(s->fb);
	s->fb = NULL;
	s->fb_regs = false;
	if (f && (s->fb = malloc(sizeof(*s->fb)))) {
		if (!h && !spec->onoff && !ukp_fbranch_build(f, spec, UKP_FB_REGS, s->fb)) {
			s->fb_regs = true;
		} else if (ukp_fbranch_build(f, spec, UKP_FB_RECORD, s->fb)) {
			free(s->fb);
			s->fb = NULL;
		}
	}
	direct_prepare(s);
	s->nplain = 0;
	for (i = 0; i < spec->nargs; i++) {
		const struct ukp_fetcharg *fa = &spec->args[i];

		if (!(s->fetch_mask & (1u << i)))
			continue;
		if (!fa->plain_reg) {
			s->nplain = -1;
			return;
		}
		s->plain[s->nplain].reg = (uint32_t)fa->param;
		s->plain[s->nplain].off = fa->off;
		s->plain[s->nplain++].keep = fa->size < 8 ? (1ULL << (fa->size * 8)) - 1 : ~0ULL;
	}
}

/* [hit] */
bool ukpa_filter_pass(struct ukpa_spec *s, const struct ukp_spec *fspec,
		      const struct pt_regs *regs, const struct pt_regs *entry)
{
	const struct ukp_spec *spec = &s->spec;
	const struct ukp_filter *f = spec->filter;
	struct ukp_rec rec;
	int tid = 0, i;

	rec.faults = 0;
	if (s->need_comm) {
		/* not memset() nor glibc's prctl() (stack protector: its
		 * failure path reaches abort): the hit path stays vector-free */
		uint64_t *w = (uint64_t *)(void *)rec.comm;

		for (i = 0; i < (int)(sizeof(rec.comm) / 8); i++) {
			w[i] = 0;
			__asm__ volatile("" ::: "memory");
		}
		ukpa_sys(SYS_prctl, PR_GET_NAME, rec.comm, 0);
	}
	if (s->need_pid)
		tid = (int)ukpa_sys0(SYS_gettid);
	/* only what the filter and the triggers read; registers as they are
	 * without the fetch's general loop (ukpa_fetch_some's short path) */
	if (s->nplain >= 0) {
		const unsigned long *w = (const unsigned long *)regs;

		for (i = 0; i < s->nplain; i++)
			*(uint64_t *)(void *)(rec.data + s->plain[i].off) =
				w[s->plain[i].reg] & s->plain[i].keep;
	} else {
		ukpa_fetch_some(fspec, regs, entry, &rec, s->fetch_mask);
	}
	if (f) {
		/* the branch program compares no faulted argument (the postfix
		 * program takes it as 0) */
		bool pass = s->fb && !(rec.faults & f->args_used)
				    ? ukp_fbranch_run(s->fb, (const uint64_t *)(const void *)rec.data)
				    : ukp_filter_run(f, spec, rec.data, rec.faults, rec.comm, tid);

		if (!pass)
			return false;
	}
	if (s->hist)
		ukpa_hist_hit(s->hist, spec, rec.data, rec.faults, rec.comm, tid);
	if (spec->onoff)
		onoff(s, &rec, tid);
	return true;
}
