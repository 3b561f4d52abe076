/* SPDX-License-Identifier: MIT */
/*
 * ring.c - per-thread ring buffers of event records, and the reader
 * thread that sends them to ukprobe.
 *
 * A thread gets a ring at its first recorded hit (claimed from a fixed
 * pool with one compare-and-swap) and keeps it until it exits; then the
 * reader returns the ring to the pool once it is empty. Each ring has one
 * producer (its thread's handlers, which never nest: libukprobes counts a
 * hit inside a handler as missed) and one consumer (the reader): head is
 * written by the producer, tail by the consumer, and a record is
 * published by the release store of head. A full ring, or a thread for
 * which no ring is left, drops the event and counts it: the program is
 * never blocked or slowed beyond the probe itself.
 *
 * The reader merges the rings by timestamp in each pass, announces (SYM)
 * every address an event needs before the event itself (return
 * addresses, values of symbol-typed arguments), and writes batches to
 * the socket. Now and then it also looks whether the program loaded
 * objects that pending SPECs wait for (libc's own dlopen()s, which the
 * dlopen interposer does not see).
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "symbols.h"
#include "internal.h"

/* libukprobes' registry lock (src/kprobes.c), which the symbol cache
 * needs; taken by ordinary threads only. */

#define NRINGS 128
#define RING_RECS 2048 /* a power of two */
#define IDLE_SLEEP_NS 1000000L
#define RECYCLE_EVERY 64 /* passes */
#define OBJECTS_EVERY 16 /* passes */

_Static_assert(sizeof(struct ukp_rec) == UKP_REC_SIZE, "record size");
_Static_assert(offsetof(struct ukp_rec, data) == UKP_REC_HEADER, "record header");
_Static_assert(UKP_REC_PAYLOAD == UKP_SPEC_PAYLOAD_MAX, "payload size");

struct ring {
	/* the producer's */
	_Atomic uint64_t head;
	_Atomic uint64_t lost;
	_Atomic int writing;
	unsigned int comm_age;
	char comm[16];
	struct ukp_rec *recs;
	_Atomic int owner;        /* tid, 0 when free */
	/* the consumer's */
	_Atomic uint64_t tail __attribute__((aligned(64)));
	uint64_t end;             /* head seen at the start of a pass */
} __attribute__((aligned(64)));

static struct ring rings[NRINGS];
static struct ukp_rec *ring_mem;
static UKPA_TLS struct ring *my_ring;
static _Atomic uint64_t lost_noring;   /* hits of threads that got no ring */
static _Atomic uint64_t lost_recycled; /* lost counts of rings given back */
static pid_t my_pid;

static pthread_t reader;
static bool reader_running;             /* started, and not stopped */
static bool reader_exists;              /* this process has the thread */
static _Atomic bool reader_stop, reader_parked, reader_entered, reader_exit;
/* ukpa_reader_flush(): requests, and the last request a pass served */
static _Atomic unsigned long flush_req, flush_done;

/* ------------------------------------------------------------ [hit] */

static struct ring *claim_ring(void)
{
	int tid = (int)syscall(SYS_gettid);
	int i;

	for (i = 0; i < NRINGS; i++) {
		int expected = 0;

		if (atomic_load_explicit(&rings[i].owner, memory_order_relaxed))
			continue;
		if (atomic_compare_exchange_strong_explicit(&rings[i].owner, &expected, tid,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			struct ring *r = &rings[i];

			memset(r->comm, 0, sizeof(r->comm));
			prctl(PR_GET_NAME, r->comm, 0, 0, 0);
			r->comm_age = 0;
			my_ring = r;
			return r;
		}
	}
	return NULL;
}

void ukpa_record(const struct ukpa_probe *pr, const struct pt_regs *regs,
		 const struct pt_regs *entry, uintptr_t ip, uintptr_t caller)
{
	struct ring *r = my_ring;
	struct ukp_rec *rec;
	struct timespec ts;
	uint64_t head, tail;

	if (!r) {
		r = claim_ring();
		if (!r) {
			atomic_fetch_add_explicit(&lost_noring, 1, memory_order_relaxed);
			return;
		}
	}
	/* Dekker with ukpa_reader_stop(): either it sees us writing, or we
	 * see that tracing stopped. */
	atomic_store_explicit(&r->writing, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		goto out;

	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (head - tail >= RING_RECS) {
		atomic_store_explicit(&r->lost,
				      atomic_load_explicit(&r->lost, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		goto out;
	}
	rec = &r->recs[head & (RING_RECS - 1)];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	rec->h.type = UKPM_EVENT;
	rec->h.len = UKP_REC_SIZE;
	rec->ts = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	rec->ip = ip;
	rec->caller = caller;
	rec->tid = atomic_load_explicit(&r->owner, memory_order_relaxed);
	rec->cpu = sched_getcpu();
	rec->id = pr->id;
	rec->faults = 0;
	/* the thread may rename itself: look again now and then */
	if (++r->comm_age >= 64) {
		r->comm_age = 0;
		prctl(PR_GET_NAME, r->comm, 0, 0, 0);
	}
	memcpy(rec->comm, r->comm, sizeof(rec->comm));
	ukpa_fetch_args(&pr->spec->spec, regs, entry, rec);
	if (pr->spec->spec.stacktrace) /* --trigger stacktrace (unwind.c) */
		ukpa_stack_record(pr, regs, ip, caller, rec);
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
out:
	atomic_store_explicit(&r->writing, 0, memory_order_release);
}

/* --------------------------------------------------------- [reader] */

void ukpa_symbolize(uintptr_t addr, char *buf, size_t len, uintptr_t *func, const char *prefer)
{
	struct ukp_symres res;
	const struct ukp_object *obj;

	if (func)
		*func = 0;
	snprintf(buf, len, "0x%lx", (unsigned long)addr);
	if (ukp_lock_for_show())
		return;
	if (ukp_sym_lookup_addr(addr, &res) == 0) {
		const char *name = res.name, *given = NULL;
		bool ifunc = false;
		uintptr_t pa;
		int n = 0;

		/* aliases (free/cfree): the name the user gave, if it is one;
		 * an IFUNC's name goes before its implementation's
		 * ("strlen -> __strlen_avx2+0x0/...") */
		if (prefer && ukp_sym_lookup_name_ifunc(prefer, &pa, &ifunc) == 0 &&
		    pa == res.start) {
			given = strrchr(prefer, ':');
			given = given ? given + 1 : prefer;
			if (ifunc)
				n = snprintf(buf, len, "%s -> ", given);
			else
				name = given;
		}
		if (n < 0 || (size_t)n >= len)
			n = 0;
		if (res.obj && !res.obj->is_main)
			snprintf(buf + n, len - (size_t)n, "%s+0x%lx/0x%lx [%s]", name,
				 (unsigned long)(addr - res.start), (unsigned long)res.size,
				 res.obj->name);
		else
			snprintf(buf + n, len - (size_t)n, "%s+0x%lx/0x%lx", name,
				 (unsigned long)(addr - res.start), (unsigned long)res.size);
		if (func)
			*func = res.start;
		ukp_unlock_for_show();
		return;
	}
	obj = ukp_object_of(addr);
	if (obj)
		snprintf(buf, len, "[%s]+0x%lx", obj->name, (unsigned long)(addr - obj->base));
	ukp_unlock_for_show();
	/* not in a function: a data symbol, maybe */
	if (obj)
		ukpa_datasym_symbolize(addr, buf, len);
}

/* Addresses already announced to ukprobe (open addressing; 0 = empty). */
static uint64_t *seen;
static size_t seen_cap, seen_n;

static bool seen_add(uint64_t addr)
{
	size_t i;

	if (seen_n * 2 >= seen_cap) {
		size_t ncap = seen_cap ? seen_cap * 2 : 1024, k;
		uint64_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return false;
		for (k = 0; k < seen_cap; k++) {
			if (!seen[k])
				continue;
			for (i = (seen[k] * 0x9e3779b97f4a7c15ULL) & (ncap - 1); n[i];
			     i = (i + 1) & (ncap - 1))
				;
			n[i] = seen[k];
		}
		free(seen);
		seen = n;
		seen_cap = ncap;
	}
	for (i = (addr * 0x9e3779b97f4a7c15ULL) & (seen_cap - 1); seen[i];
	     i = (i + 1) & (seen_cap - 1))
		if (seen[i] == addr)
			return false;
	seen[i] = addr;
	seen_n++;
	return true;
}

static char outbuf[64 * 1024];
static size_t outlen;

static void out_flush(void)
{
	if (outlen)
		ukpa_send(outbuf, outlen);
	outlen = 0;
}

static void out_put(const void *p, size_t len)
{
	if (outlen + len > sizeof(outbuf))
		out_flush();
	memcpy(outbuf + outlen, p, len);
	outlen += len;
}

/* A SYM message for addr, unless it was sent already. */
static void announce(uint64_t addr)
{
	union {
		struct ukp_msg_sym m;
		char buf[512];
	} u;
	size_t tlen;

	if (!addr || !seen_add(addr))
		return;
	memset(&u, 0, sizeof(u));
	ukpa_symbolize(addr, u.m.text, sizeof(u.buf) - sizeof(u.m), NULL, NULL);
	tlen = strlen(u.m.text) + 1;
	u.m.h.type = UKPM_SYM;
	u.m.h.len = (uint32_t)((sizeof(u.m) + tlen + 7) & ~(size_t)7);
	u.m.addr = addr;
	out_put(&u, u.m.h.len);
}

/* The addresses an event needs: where a function returned to, and the
 * values of symbol arguments. (Probed addresses came with the PROBE
 * messages.) */
static void announce_for(const struct ukp_rec *rec)
{
	const struct ukpa_probe *pr = ukpa_probe_by_id(rec->id);
	int i;

	announce(rec->caller);
	if (!pr)
		return;
	for (i = 0; i < pr->spec->spec.nargs; i++) {
		const struct ukp_fetcharg *fa = &pr->spec->spec.args[i];
		uint64_t v;

		if (fa->type != UKP_TY_SYMBOL || (rec->faults & (1u << i)))
			continue;
		memcpy(&v, rec->data + fa->off, sizeof(v));
		announce(v);
	}
	if (pr->spec->spec.stacktrace) { /* the frames of a stack */
		const struct ukp_spec *spec = &pr->spec->spec;
		uint64_t n, v;

		memcpy(&n, rec->data + spec->stack_off, 8);
		for (i = 0; i < (int)n && i < (int)spec->stack_max; i++) {
			memcpy(&v, rec->data + spec->stack_off + 8 + 8 * (size_t)i, 8);
			announce(v);
		}
	}
}

/* One pass over every ring: the records published when it started, in
 * timestamp order. Returns how many. */
static size_t drain_pass(void)
{
	struct ring *act[NRINGS];
	size_t total = 0;
	int nact = 0, i;

	for (i = 0; i < NRINGS; i++) {
		struct ring *r = &rings[i];

		if (!atomic_load_explicit(&r->owner, memory_order_acquire))
			continue;
		r->end = atomic_load_explicit(&r->head, memory_order_acquire);
		if (atomic_load_explicit(&r->tail, memory_order_relaxed) != r->end)
			act[nact++] = r;
	}
	while (nact) {
		struct ukp_rec *rec = NULL;
		struct ring *r;
		int best = 0;
		uint64_t t;

		for (i = 0; i < nact; i++) {
			uint64_t tl = atomic_load_explicit(&act[i]->tail, memory_order_relaxed);
			struct ukp_rec *c = &act[i]->recs[tl & (RING_RECS - 1)];

			if (!rec || c->ts < rec->ts) {
				rec = c;
				best = i;
			}
		}
		r = act[best];
		announce_for(rec);
		out_put(rec, UKP_REC_SIZE);
		t = atomic_load_explicit(&r->tail, memory_order_relaxed) + 1;
		atomic_store_explicit(&r->tail, t, memory_order_release);
		total++;
		if (t == r->end)
			act[best] = act[--nact];
	}
	return total;
}

/* Give back the empty rings of threads that have exited. */
static void recycle_dead(void)
{
	int i;

	for (i = 0; i < NRINGS; i++) {
		struct ring *r = &rings[i];
		int tid = atomic_load_explicit(&r->owner, memory_order_acquire);

		if (!tid || atomic_load_explicit(&r->head, memory_order_acquire) !=
				    atomic_load_explicit(&r->tail, memory_order_relaxed))
			continue;
		if (syscall(SYS_tgkill, my_pid, tid, 0) == 0 || errno != ESRCH)
			continue;
		atomic_fetch_add(&lost_recycled, atomic_load(&r->lost));
		atomic_store(&r->lost, 0);
		atomic_store_explicit(&r->owner, 0, memory_order_release);
	}
}

/* Did the loader load or unload objects since the last look? (The
 * first look always says yes: the program may have loaded objects
 * before this thread ran.) */
static unsigned long long seen_adds = ~0ULL, seen_subs;

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	bool *changed = arg;

	(void)size;
	if (info->dlpi_adds != seen_adds || info->dlpi_subs != seen_subs) {
		seen_adds = info->dlpi_adds;
		seen_subs = info->dlpi_subs;
		*changed = true;
	}
	return 1;
}

static void check_objects(void)
{
	bool changed = false;

	dl_iterate_phdr(counters_cb, &changed);
	if (changed)
		ukpa_probes_refresh();
}

/*
 * Stopped, the reader parks instead of returning: a thread that exits
 * runs glibc's exit path with every signal blocked (and it calls
 * getpagesize, madvise, ...): a probe there would be a SIGTRAP nobody
 * can take, which kills the process. It never exits, then; a later
 * ukpa_reader_start() (after a failed exec) wakes it.
 */
static void park(void)
{
	struct timespec d = { 0, IDLE_SLEEP_NS };

	atomic_store(&reader_parked, true);
	while (atomic_load(&reader_stop) && !atomic_load(&reader_exit))
		nanosleep(&d, NULL);
	atomic_store(&reader_parked, false);
}

static void *reader_main(void *arg)
{
	unsigned long passes = 0;
	bool watch = ukpa_probes_pending();

	(void)arg;
	ukpa_busy = 1;
	seen_adds = ~0ULL;
	atomic_store(&reader_entered, true);
	for (;;) {
		bool stop = atomic_load(&reader_stop);
		unsigned long want = atomic_load(&flush_req);
		size_t n = drain_pass();

		out_flush();
		atomic_store(&flush_done, want);
		if (stop) {
			/* that was the last pass */
			park();
			if (atomic_load(&reader_exit))
				break; /* detached: no probe is left */
			seen_adds = ~0ULL;
			continue;
		}
		if (++passes % RECYCLE_EVERY == 0)
			recycle_dead();
		if (watch && passes % OBJECTS_EVERY == 0)
			check_objects();
		if (!n && atomic_load(&flush_req) == want) {
			struct timespec d = { 0, IDLE_SLEEP_NS };

			nanosleep(&d, NULL);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ [init] */

int ukpa_rings_init(void)
{
	size_t bytes = (size_t)NRINGS * RING_RECS * sizeof(struct ukp_rec);
	int i;

	my_pid = getpid();
	if (ring_mem) {
		/* attached again: the rings were drained at the detach, and
		 * each stays with its thread */
		atomic_store(&lost_noring, 0);
		atomic_store(&lost_recycled, 0);
		for (i = 0; i < NRINGS; i++)
			atomic_store(&rings[i].lost, 0);
		return 0;
	}
	/* reserved, not committed: a ring costs memory once its thread
	 * writes to it */
	ring_mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ring_mem == MAP_FAILED) {
		ring_mem = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < NRINGS; i++)
		rings[i].recs = ring_mem + (size_t)i * RING_RECS;
	return 0;
}

int ukpa_reader_start(void)
{
	sigset_t all, old;
	int ret;

	if (reader_exists) {
		/* parked: wake it */
		atomic_store(&reader_stop, false);
		reader_running = true;
		return 0;
	}
	/* The reader must never run the program's signal handlers: it
	 * starts with every signal blocked but the synchronous ones. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&reader_stop, false);
	ret = pthread_create(&reader, NULL, reader_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	pthread_setname_np(reader, "ukprobe-agent");
	reader_running = reader_exists = true;
	/* glibc's start of the thread (with every signal blocked) is over
	 * before the caller puts probes in place */
	while (!atomic_load(&reader_entered)) {
		struct timespec d = { 0, 20000 };

		nanosleep(&d, NULL);
	}
	return 0;
}

uint64_t ukpa_reader_stop(int timeout_ms)
{
	uint64_t lost;
	int i;

	atomic_store(&ukpa_tracing, false);
	atomic_thread_fence(memory_order_seq_cst);
	/* handlers that passed the check finish their record (bounded: a
	 * thread stopped inside a handler must not hang the exit) */
	for (i = 0; i < NRINGS; i++) {
		int spins = 0;

		while (atomic_load(&rings[i].writing) && spins++ < 100000)
			sched_yield();
	}
	if (reader_running) {
		struct timespec step = { 0, 20000 };
		long waited = 0;

		atomic_store(&reader_stop, true);
		/* its last pass drains what was published before the stop */
		while (!atomic_load(&reader_parked) &&
		       (timeout_ms < 0 || waited++ < (long)timeout_ms * 50))
			nanosleep(&step, NULL);
		reader_running = false;
	} else if (ring_mem) {
		drain_pass();
		out_flush();
	}
	lost = atomic_load(&lost_noring) + atomic_load(&lost_recycled);
	for (i = 0; i < NRINGS; i++)
		lost += atomic_load(&rings[i].lost);
	return lost;
}

/* [init] After ukpa_reader_stop(): the reader returns (no probe may be
 * left: its exit path runs with every signal blocked), and is gone when
 * this returns. */
void ukpa_reader_exit(void)
{
	if (!reader_exists || my_pid != getpid())
		return;
	atomic_store(&reader_stop, true);
	atomic_store(&reader_exit, true);
	pthread_join(reader, NULL);
	reader_running = reader_exists = false;
	atomic_store(&reader_entered, false);
	atomic_store(&reader_parked, false);
	atomic_store(&reader_exit, false);
}

void ukpa_reader_flush(int timeout_ms)
{
	struct timespec step = { 0, 20000 };
	unsigned long req;
	int waited = 0;

	if (!reader_running)
		return;
	req = atomic_fetch_add(&flush_req, 1) + 1;
	while (atomic_load(&flush_done) < req && waited < timeout_ms * 50) {
		nanosleep(&step, NULL);
		waited++;
	}
}

void ukpa_rings_after_fork(void)
{
	int i;

	/* Only the forking thread exists in the child, and what the rings
	 * hold is the parent's to send: start empty. */
	reader_running = reader_exists = false;
	atomic_store(&reader_entered, false);
	atomic_store(&reader_stop, false);
	atomic_store(&reader_parked, false);
	atomic_store(&flush_req, 0);
	atomic_store(&flush_done, 0);
	my_pid = getpid();
	for (i = 0; i < NRINGS; i++) {
		atomic_store(&rings[i].head, 0);
		atomic_store(&rings[i].tail, 0);
		atomic_store(&rings[i].lost, 0);
		atomic_store(&rings[i].writing, 0);
		atomic_store(&rings[i].owner, 0);
	}
	my_ring = NULL;
	atomic_store(&lost_noring, 0);
	atomic_store(&lost_recycled, 0);
	ukpa_rings_new_image();
}

void ukpa_rings_new_image(void)
{
	/* a new image: ukprobe knows none of its addresses (the parent's
	 * table may have been mid-update: drop it, do not free it) */
	seen = NULL;
	seen_cap = seen_n = 0;
	outlen = 0;
}
