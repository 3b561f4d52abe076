/* SPDX-License-Identifier: MIT */
/*
 * counts.c - hit counts, per thread: a hit adds one to a counter that
 * only its own thread writes (no shared cache line written per hit, no
 * atomic read-modify-write), and the counts are summed when they are
 * reported.
 *
 * A thread gets a slot at its first counted hit (claimed from a fixed
 * table with one compare-and-swap): an array of counters indexed by probe
 * id, reserved with mmap (its pages are committed as the thread hits
 * probes). A thread that exits keeps its slot until the reader thread
 * sees it gone: it then adds the slot's counts to the probes' shared
 * totals (pr->hits) and gives the slot back, so an exited thread loses
 * nothing. A thread that gets no slot (more threads than slots, or no
 * memory) counts in pr->hits with an atomic add.
 *
 * Contexts: ukpa_count_slow [hit] (the claim makes system calls, once
 * per thread); the rest [init]/[reader], under counts_lock.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#define NSLOTS 256

struct slot {
	_Atomic int owner;        /* tid, 0 when free; -1 while being set up */
	_Atomic(_Atomic uint64_t *) counts;
};

static struct slot slots[NSLOTS];
UKPA_TLS _Atomic uint64_t *ukpa_my_counts;
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t counts_pid;

#define SLOT_BYTES ((size_t)UKPA_COUNT_IDS * sizeof(uint64_t))

/* [hit] A slot for this thread, or NULL. */
static _Atomic uint64_t *claim_slot(void)
{
	int i;

	for (i = 0; i < NSLOTS; i++) {
		int expected = 0;
		void *mem;

		if (atomic_load_explicit(&slots[i].owner, memory_order_relaxed))
			continue;
		if (!atomic_compare_exchange_strong_explicit(&slots[i].owner, &expected, -1,
							    memory_order_acquire,
							    memory_order_relaxed))
			continue;
		mem = mmap(NULL, SLOT_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (mem == MAP_FAILED) {
			atomic_store_explicit(&slots[i].owner, 0, memory_order_release);
			return NULL;
		}
		atomic_store_explicit(&slots[i].counts, mem, memory_order_relaxed);
		/* the counts pointer is published with the owner */
		atomic_store_explicit(&slots[i].owner, (int)syscall(SYS_gettid),
				      memory_order_release);
		return mem;
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
	atomic_fetch_add_explicit(&pr->hits, 1, memory_order_relaxed);
}

/* [init][reader] counts_lock held. */
static void fold_slot(struct slot *s, uint32_t nprobes)
{
	_Atomic uint64_t *c = atomic_load_explicit(&s->counts, memory_order_relaxed);
	uint32_t id;

	for (id = 0; id < nprobes && id < UKPA_COUNT_IDS; id++) {
		uint64_t n = atomic_load_explicit(&c[id], memory_order_relaxed);
		struct ukpa_probe *pr;

		if (!n)
			continue;
		pr = (struct ukpa_probe *)ukpa_probe_by_id(id);
		if (pr)
			atomic_fetch_add_explicit(&pr->hits, n, memory_order_relaxed);
	}
	munmap((void *)c, SLOT_BYTES);
	atomic_store_explicit(&s->counts, NULL, memory_order_relaxed);
	atomic_store_explicit(&s->owner, 0, memory_order_release);
}

void ukpa_counts_recycle_dead(void)
{
	uint32_t nprobes = ukpa_probes_count();
	int i;

	if (pthread_mutex_trylock(&counts_lock))
		return; /* the counts are being reported: next time */
	if (!counts_pid)
		counts_pid = getpid();
	for (i = 0; i < NSLOTS; i++) {
		int tid = atomic_load_explicit(&slots[i].owner, memory_order_acquire);

		if (tid <= 0)
			continue;
		if (syscall(SYS_tgkill, counts_pid, tid, 0) == 0 || errno != ESRCH)
			continue;
		fold_slot(&slots[i], nprobes);
	}
	pthread_mutex_unlock(&counts_lock);
}

uint64_t ukpa_count_of(const struct ukpa_probe *pr)
{
	uint64_t n = atomic_load_explicit(&pr->hits, memory_order_relaxed);
	int i;

	if (pr->id >= UKPA_COUNT_IDS)
		return n;
	for (i = 0; i < NSLOTS; i++) {
		_Atomic uint64_t *c;

		if (atomic_load_explicit(&slots[i].owner, memory_order_acquire) <= 0)
			continue;
		c = atomic_load_explicit(&slots[i].counts, memory_order_relaxed);
		n += atomic_load_explicit(&c[pr->id], memory_order_relaxed);
	}
	return n;
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

void ukpa_counts_reset(void)
{
	int i;

	pthread_mutex_lock(&counts_lock);
	for (i = 0; i < NSLOTS; i++) {
		_Atomic uint64_t *c = atomic_load_explicit(&slots[i].counts, memory_order_relaxed);

		/* zero pages again (the owner keeps its slot) */
		if (atomic_load_explicit(&slots[i].owner, memory_order_acquire) > 0 && c)
			madvise((void *)c, SLOT_BYTES, MADV_DONTNEED);
	}
	pthread_mutex_unlock(&counts_lock);
}

void ukpa_counts_after_fork(void)
{
	int i;

	/* Only the forking thread exists in the child, under a new tid,
	 * and the counts so far are the parent's: every slot goes. */
	pthread_mutex_init(&counts_lock, NULL);
	counts_pid = getpid();
	for (i = 0; i < NSLOTS; i++) {
		_Atomic uint64_t *c = atomic_load_explicit(&slots[i].counts, memory_order_relaxed);

		if (c)
			munmap((void *)c, SLOT_BYTES);
		atomic_store(&slots[i].counts, NULL);
		atomic_store(&slots[i].owner, 0);
	}
	ukpa_my_counts = NULL;
}
