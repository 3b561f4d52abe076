/* SPDX-License-Identifier: MIT */
/*
 * counts.c - hit counts, per thread, in the image's region (region.c,
 * common/region.h), which ukprobe holds too: whatever was counted up to
 * the process's last instruction is there for ukprobe however it ends.
 * A hit adds one to a counter that only its own thread writes (no
 * shared cache line written per hit, no atomic read-modify-write), and
 * the counts are summed when they are reported.
 *
 * A thread gets a slot at its first counted hit (claimed from the
 * region's fixed table with one compare-and-swap): an array of counters
 * indexed by probe id, in the sparse file (its pages take memory as the
 * thread hits probes). When the reader sees a slot's thread gone, it
 * gives the slot back as it is: the next thread to claim one goes on
 * adding to those counters. No count is ever moved from one place to
 * another, so a process that dies at any instruction leaves every count
 * in exactly one place. A thread that gets no slot (more threads than
 * slots) counts in the region's shared slot with atomic adds.
 *
 * Contexts: ukpa_count_slow [hit] (the claim makes one system call, once
 * per thread); the rest [init]/[reader], under counts_lock.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"

static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t counts_pid;

/* [any] Slot i's counters (UKP_REGION_SLOTS: the shared one). */
static _Atomic uint64_t *slot_counts(uint32_t i)
{
	return (_Atomic uint64_t *)(void *)((char *)ukpa_region + UKP_REGION_COUNTS_OFF +
					    i * UKP_REGION_SLOT_BYTES);
}

/* [hit] A slot for this thread, or NULL. */
static _Atomic uint64_t *claim_slot(void)
{
	struct ukp_region_head *h = ukpa_region;
	int me = (int)ukpa_sys0(SYS_gettid);
	uint32_t i, used;

	if (!h)
		return NULL;
	/* its own from an earlier session: ukprobe unmapped the blocks that
	 * held the pointer after that detach (the header stays: region.c) */
	used = atomic_load_explicit(&h->slots_used, memory_order_acquire);
	for (i = 0; i < used && i < UKP_REGION_SLOTS; i++)
		if (atomic_load_explicit(&h->slot_owner[i], memory_order_acquire) == me)
			return slot_counts(i);
	for (i = 0; i < UKP_REGION_SLOTS; i++) {
		int expected = 0;

		if (atomic_load_explicit(&h->slot_owner[i], memory_order_relaxed))
			continue;
		if (!atomic_compare_exchange_strong_explicit(&h->slot_owner[i], &expected, -1,
							    memory_order_acquire,
							    memory_order_relaxed))
			continue;
		/* the slots summed: [0, slots_used) */
		used = atomic_load_explicit(&h->slots_used, memory_order_relaxed);
		while (used < i + 1 &&
		       !atomic_compare_exchange_weak_explicit(&h->slots_used, &used, i + 1,
							      memory_order_relaxed,
							      memory_order_relaxed))
			;
		atomic_store_explicit(&h->slot_owner[i], me, memory_order_release);
		return slot_counts(i);
	}
	return NULL;
}

/* [hit] */
void ukpa_count_slow(struct ukpa_probe *pr)
{
	_Atomic uint64_t *c = ukpa_my_counts;

	if (!c && pr->id < UKPA_COUNT_IDS) {
		c = claim_slot();
		ukpa_my_counts = c;
	}
	if (c && pr->id < UKPA_COUNT_IDS) {
		atomic_store_explicit(&c[pr->id],
				      atomic_load_explicit(&c[pr->id], memory_order_relaxed) + 1,
				      memory_order_relaxed);
		return;
	}
	/* (ids past a slot's: not counted, as none is ever given) */
	if (ukpa_region && pr->id < UKPA_COUNT_IDS)
		atomic_fetch_add_explicit(&slot_counts(UKP_REGION_SLOTS)[pr->id], 1,
					  memory_order_relaxed);
}

void ukpa_counts_recycle_dead(void)
{
	struct ukp_region_head *h = ukpa_region;
	int i;

	if (!h || pthread_mutex_trylock(&counts_lock))
		return; /* the counts are being reported: next time */
	if (!counts_pid)
		counts_pid = getpid();
	for (i = 0; i < UKP_REGION_SLOTS; i++) {
		int tid = atomic_load_explicit(&h->slot_owner[i], memory_order_acquire);

		if (tid <= 0)
			continue;
		if (ukpa_sys(SYS_tgkill, counts_pid, tid, 0) != -ESRCH)
			continue;
		/* its counts stay: the next owner adds to them */
		atomic_store_explicit(&h->slot_owner[i], 0, memory_order_release);
	}
	pthread_mutex_unlock(&counts_lock);
}

uint64_t ukpa_count_of(const struct ukpa_probe *pr)
{
	struct ukp_region_head *h = ukpa_region;
	uint32_t i, used;
	uint64_t n = 0;

	if (!h || pr->id >= UKPA_COUNT_IDS)
		return 0;
	used = atomic_load_explicit(&h->slots_used, memory_order_acquire);
	for (i = 0; i < used; i++)
		n += atomic_load_explicit(&slot_counts(i)[pr->id], memory_order_relaxed);
	return n + atomic_load_explicit(&slot_counts(UKP_REGION_SLOTS)[pr->id],
					memory_order_relaxed);
}

void ukpa_counts_lock(void)
{
	pthread_mutex_lock(&counts_lock);
}

int ukpa_counts_timedlock(const struct timespec *until)
{
	return pthread_mutex_timedlock(&counts_lock, until);
}

void ukpa_counts_unlock(void)
{
	pthread_mutex_unlock(&counts_lock);
}

void ukpa_counts_after_fork(void)
{
	/* Only the forking thread exists in the child, under a new tid, in
	 * a new region (no slot claimed) */
	pthread_mutex_init(&counts_lock, NULL);
	counts_pid = getpid();
	ukpa_my_counts = NULL;
}
