/* SPDX-License-Identifier: MIT */
/*
 * sync.c - grace periods between the hit path and the freeing of probes.
 *
 * The probed program's threads never register with us, so this is the
 * urcu-bp idea: a thread claims a record the first time it enters the
 * trap path, and marks itself "inside" with an odd sequence number for as
 * long as a trap handler of ours runs on it (handlers included).
 * ukp_synchronize() waits until every thread that was inside when it
 * started has left once. Threads inside an out-of-line slot are not
 * covered here: sites count those in ->inflight (see kprobes.c).
 *
 * Records live in a static array (no allocation on the hit path). A
 * record whose thread died is reclaimed by the next claimer or writer
 * (tgkill(pid, tid, 0) fails with ESRCH).
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "base/base.h"
#include "base/sys.h"
#include "process/process.h"
#include "text/text.h"
#include "core/core.h"

#define UKP_MAX_THREADS 4096

static struct ukp_thread_rec ukp_recs[UKP_MAX_THREADS];
/* Readers that found no free record count here; writers wait for 0. */
struct ukp_thread_rec ukp_overflow_rec;
static _Atomic unsigned long ukp_overflow_inside;

static UKP_TRAP_TEXT bool tid_dead(int tid)
{
	return ukp_sys_tgkill(ukp_sys_getpid(), tid, 0) == -ESRCH;
}

/* [trap] First trap of a thread: find it a record. */
static UKP_TRAP_TEXT struct ukp_thread_rec *claim_rec(void)
{
	int me = ukp_sys_gettid();
	int i;

	for (i = 0; i < UKP_MAX_THREADS; i++) {
		int expect = 0;

		if (atomic_load_explicit(&ukp_recs[i].tid, memory_order_relaxed))
			continue;
		if (atomic_compare_exchange_strong(&ukp_recs[i].tid, &expect, me))
			return &ukp_recs[i];
	}
	/* Full: take over the record of a thread that exited. */
	for (i = 0; i < UKP_MAX_THREADS; i++) {
		int old = atomic_load(&ukp_recs[i].tid);

		if (atomic_load(&ukp_recs[i].seq) & 1)
			continue;
		if (old && tid_dead(old) &&
		    atomic_compare_exchange_strong(&ukp_recs[i].tid, &old, me))
			return &ukp_recs[i];
	}
	return &ukp_overflow_rec;
}

/* [trap] Enter the read side (nests): the first entry of a thread, an
 * overflowed one, and the fenced flavour (see ukp_read_lock). */
UKP_TRAP_TEXT void ukp_read_lock_slow(struct ukp_ctlblk *c)
{
	if (c->depth++)
		return;
	if (!c->rec)
		c->rec = claim_rec();
	if (c->rec == &ukp_overflow_rec) {
		atomic_fetch_add(&ukp_overflow_inside, 1);
		return;
	}
	atomic_store_explicit(&c->rec->seq,
			      atomic_load_explicit(&c->rec->seq, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/*
	 * Order the "inside" mark before every read of the probe tables.
	 * With membarrier, ukp_synchronize() makes every running thread
	 * execute that barrier for us (the asymmetric fence of liburcu's
	 * memb flavour), so the hit path only stops the compiler.
	 */
	if (atomic_load_explicit(&ukp_reader_fence, memory_order_relaxed))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
}

/* [trap] Leave the read side of an overflowed thread. */
UKP_TRAP_TEXT void ukp_read_unlock_overflow(void)
{
	atomic_fetch_sub(&ukp_overflow_inside, 1);
}

static void pause_briefly(unsigned int round)
{
	struct timespec ts = { 0, 20000 };

	if (round < 64)
		ukp_sys_sched_yield();
	else
		ukp_sys_nanosleep(&ts);
}

/*
 * [reg] Wait until every thread that was inside a trap handler when this
 * was called has left it. Callers unlink what they free first.
 */
void ukp_synchronize(void)
{
	unsigned long snap[64];
	int i, base;

	/* Pairs with ukp_read_lock: every thread either is seen inside
	 * below, or will see what the caller unlinked. */
	if (!ukp_text_sync())
		atomic_thread_fence(memory_order_seq_cst);
	for (base = 0; base < UKP_MAX_THREADS; base += 64) {
		for (i = 0; i < 64; i++)
			snap[i] = atomic_load(&ukp_recs[base + i].seq);
		for (i = 0; i < 64; i++) {
			struct ukp_thread_rec *r = &ukp_recs[base + i];
			unsigned int round = 0;
			int tid;

			if (!(snap[i] & 1))
				continue;
			tid = atomic_load(&r->tid);
			while (atomic_load(&r->seq) == snap[i]) {
				/* A thread that died inside (killed by the
				 * program) will never leave. */
				if (tid && round > 1000 && tid_dead(tid)) {
					atomic_store(&r->seq, snap[i] + 1);
					break;
				}
				pause_briefly(round++);
			}
		}
	}
	for (unsigned int round = 0; atomic_load(&ukp_overflow_inside); round++)
		pause_briefly(round);
}

/*
 * [reg] In a forked child only the forking thread exists: release every
 * other record and re-own ours under the child's tid.
 */
void ukp_sync_after_fork_child(void)
{
	struct ukp_thread_rec *mine = ukp_tb_mapped() ? ukp_ctl.rec : NULL;
	int i;

	for (i = 0; i < UKP_MAX_THREADS; i++) {
		if (&ukp_recs[i] == mine)
			continue;
		atomic_store(&ukp_recs[i].seq, 0);
		atomic_store(&ukp_recs[i].tid, 0);
	}
	if (mine && mine != &ukp_overflow_rec)
		atomic_store(&mine->tid, ukp_sys_gettid());
	atomic_store(&ukp_overflow_inside, 0);
}
