/* SPDX-License-Identifier: MIT */
/*
 * agent.h - libukprobe-agent.so, the part of ukprobe that runs inside the
 * traced program (preloaded). It registers the probes the SPECs describe
 * with libukprobes (linked in), writes one record per hit into per-thread
 * ring buffers, and a reader thread sends them to ukprobe.
 *
 * Contexts, as in src/internal.h:
 *  [hit]   probe handlers: signal context, async-signal-safe, no malloc,
 *          no locks, no stdio; per-thread state in initial-exec TLS.
 *  [init]  the constructor and destructor (ordinary context).
 *  [reader] the reader thread (ordinary context, never traced).
 *
 * The whole agent is blacklisted by libukprobes (its code is in the same
 * shared object as the library's), and every thread while it runs agent
 * code has ukpa_busy set, so the probes it hits in libc (malloc under
 * libelf, ...) record nothing.
 */
#ifndef UKPROBE_AGENT_H
#define UKPROBE_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ukprobes.h>

#include "proto.h"
#include "spec.h"

#define UKPA_TLS __attribute__((tls_model("initial-exec"))) __thread

struct ukpa_event {
	struct ukp_spec spec;
	uint16_t id;
	char *symbol_name;        /* "obj:sym" for the library */
	struct kprobe kp;         /* p events */
	struct kretprobe rp;      /* r events */
	_Atomic unsigned long hits;
};

/* agent.c */
extern _Atomic bool ukpa_tracing;    /* handlers record (false in forked children) */
extern bool ukpa_stat_mode;
extern UKPA_TLS int ukpa_busy;       /* >0 while this thread runs agent code */
int ukpa_send(const void *buf, size_t len);    /* [init][reader] whole buffer or -1 */

/* fetch.c [hit]: fill rec->data and rec->faults for ev's arguments.
 * entry: the registers at the function entry (return probes: saved by
 * the entry handler; probes: regs). */
void ukpa_fetch_args(const struct ukpa_event *ev, const struct pt_regs *regs,
		     const struct pt_regs *entry, struct ukp_rec *rec);

/* ring.c */
int ukpa_rings_init(struct ukpa_event *events, int nevents);   /* [init] */
int ukpa_reader_start(void);                                   /* [init] */
/* [init] Stop tracing, wait for handlers that are writing, drain every
 * ring, stop the reader. Returns the number of events lost. */
uint64_t ukpa_reader_stop(void);
/* [hit] Record one hit. caller: return address (return probes) or 0. */
void ukpa_record(const struct ukpa_event *ev, const struct pt_regs *regs,
		 const struct pt_regs *entry, uintptr_t ip, uintptr_t caller);
/* [init] In a forked child: forget the parent's rings. */
void ukpa_rings_after_fork(void);
/* [init][reader] "sym+0xoff/0xsize [obj]" of addr into buf; *func the
 * symbol's start. prefer: a "[obj:]sym" to name the symbol by when it is
 * one of its aliases (or NULL). */
void ukpa_symbolize(uintptr_t addr, char *buf, size_t len, uintptr_t *func, const char *prefer);

#endif /* UKPROBE_AGENT_H */
