/* SPDX-License-Identifier: MIT */
/*
 * filter_hit.c - [hit] an event's --filter, evaluated in the traced
 * thread before the hit is counted or recorded (the kernel's
 * filter_match_preds), and its hist trigger, updated with the same
 * fetched arguments when the filter passes. The arguments are fetched by the trace's own code
 * (fetch.c) into a record on the stack; the compiled program
 * (tools/ukprobe/filter.c) runs over it. Async-signal-safe and
 * allocation-free: syscalls only for the thread's id and name, and only
 * when the filter needs them.
 */
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "filter.h"
#include "hist.h"

bool ukpa_filter_pass(const struct ukpa_spec *s, const struct pt_regs *regs,
		      const struct pt_regs *entry)
{
	const struct ukp_spec *spec = &s->spec;
	const struct ukp_filter *f = spec->filter;
	const struct ukp_hist *h = spec->hist;
	struct ukp_rec rec;
	int tid = 0;

	rec.faults = 0;
	if ((f && f->uses_comm) || (h && h->uses_comm)) {
		/* not memset() nor glibc's prctl() (stack protector: its
		 * failure path reaches abort): the hit path stays vector-free */
		uint64_t *w = (uint64_t *)(void *)rec.comm;
		size_t i;

		for (i = 0; i < sizeof(rec.comm) / 8; i++) {
			w[i] = 0;
			__asm__ volatile("" ::: "memory");
		}
		syscall(SYS_prctl, PR_GET_NAME, rec.comm, 0, 0, 0);
	}
	if ((f && f->uses_pid) || (h && h->uses_pid))
		tid = (int)syscall(SYS_gettid);
	ukpa_fetch_args(spec, regs, entry, &rec);
	if (f && !ukp_filter_run(f, spec, rec.data, rec.faults, rec.comm, tid))
		return false;
	if (s->hist)
		ukpa_hist_hit(s->hist, spec, rec.data, rec.faults, rec.comm, tid);
	return true;
}
