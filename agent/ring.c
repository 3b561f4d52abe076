/* SPDX-License-Identifier: MIT */
/*
 * ring.c - per-thread ring buffers of event records, and the reader
 * thread that sends them to ukprobe.
 *
 * A thread gets a ring at its first recorded hit (claimed from a fixed
 * table with one compare-and-swap, its memory mapped then) and keeps it
 * until it exits; then the reader gives the ring back once it is empty.
 * Each ring has one producer (its thread's handlers, which never nest:
 * libukprobes counts a hit inside a handler as missed) and one consumer
 * (the reader): head is written by the producer, tail by the consumer,
 * and a record is published by the release store of head. The producer
 * keeps its own copy of tail and reads the consumer's cache line only
 * when its copy says the ring is full.
 *
 * The hit path is vector-free (handlers.c): the timestamp is the CPU's
 * counter, read with the CPU number as the architecture allows
 * (arch/ARCH/hit_clock.h: x86-64's time-stamp counter, AArch64's virtual
 * counter); the reader converts it to CLOCK_MONOTONIC nanoseconds before
 * the record leaves the process (interpolating between a pair of
 * readings of both clocks taken at start-up and one taken at each pass:
 * the counter is the kernel's clocksource, so the two are linear). Where
 * the counter is not usable so, the handler asks the kernel (a system
 * call) instead.
 *
 * Records are fixed-size slots of the ring, as large as the largest
 * event of the image needs: what differs per hit (common/region.h,
 * struct ukp_region_rec) and the payload, no more (a hit's cost is
 * mostly its stores and the cache lines they miss); the reader makes
 * each the wire's record, with only its event's payload and the ring's
 * tid and name. Where every event is an entry probe's without a payload,
 * a slot is a compact record (the timestamp, the probe, the CPU:
 * common/region.h), and the reader takes the address from the probe;
 * where they are entry and return probes' without one, the compact
 * record has the return address too. Where the output goes:
 *  - to ukprobe over the socket (a full ring drops the event and counts
 *    it: the program is never blocked or slowed beyond the probe itself);
 *  - with trace -o FILE (UKP_ENV_RAW_FD), straight into a file ukprobe
 *    formats after the run: the reader writes the rings' records there
 *    as they are (a RECS message per ring and pass, written from the
 *    ring itself, after the SYM messages they need), one write per pass
 *    and at most a pass per millisecond while the rings have room, and
 *    never waits for ukprobe: it converts nothing (ukprobe merges the
 *    spans by timestamp, as the reader does for the socket). The rings are larger, and a thread that finds its ring
 *    full waits for the reader (yielding) a bounded time before it drops
 *    the event, so that a reader kept off the CPU for a while loses
 *    nothing. Drops are counted.
 *
 * The reader merges the rings by timestamp in each pass, announces (SYM)
 * every address an event needs before the event itself (return
 * addresses, values of symbol-typed arguments), and writes batches out.
 * Now and then it also looks whether the program loaded objects that
 * pending SPECs wait for (libc's own dlopen()s, which the dlopen
 * interposer does not see), and folds the counts of exited threads
 * (counts.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"
#include "hit_clock.h"

#define RING_BYTES_STREAM (4UL << 20)  /* per thread, towards the socket */
#define FULL_WAIT_YIELDS 200000        /* -o FILE: a full ring waits so long at most */
#define COMM_EVERY 256                 /* hits between two looks at the thread's name */
#define IDLE_SLEEP_NS 1000000L
#define RECYCLE_EVERY 64 /* passes */
#define OBJECTS_EVERY 16 /* passes */
#define FILE_CHUNK (1UL << 20)         /* bytes per write to the -o file */
#define POPULATE_FIRST (256UL << 10)   /* ring bytes committed when a thread claims it */
#define POPULATE_STEP_MAX (4UL << 20)  /* the most the reader commits ahead at once */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

_Static_assert(sizeof(struct ukp_rec) == UKP_REC_SIZE, "record size");
_Static_assert(offsetof(struct ukp_rec, data) == UKP_REC_HEADER, "record header");
_Static_assert(sizeof(struct ukp_region_rec) == UKP_REGION_REC_HEADER, "ring record header");
_Static_assert(UKP_REC_PAYLOAD == UKP_SPEC_PAYLOAD_MAX, "payload size");

/* The rings live in the image's region (common/region.h), which ukprobe
 * holds too, and so does what the reader took from them and has not
 * written out yet (its output buffer): whatever a ring holds (its
 * records [tail, head)) and whatever the buffer holds reaches ukprobe
 * however the process ends. */
#define ring ukp_region_ring
#define rings ((struct ring *)(void *)((char *)ukpa_region + UKP_REGION_RINGS_OFF))
#define NRINGS UKP_REGION_RINGS
/* -o FILE: slots per thread. Few enough that a thread's ring stays in
 * the caches and its pages are few to commit (a ring the size of the
 * region's room, 16 MiB, cost more than its events did: the records
 * written to cold memory, megabytes of pages committed per thread);
 * enough that the reader's pass, every millisecond, finds room left at
 * a busy thread's rate (a full ring makes the thread wait for the
 * reader: FULL_WAIT_YIELDS). 24-byte records: 3 MiB; the largest
 * (232 bytes) fill the room with 65,536. */
#define RING_RECS_FILE 131072UL

static size_t rec_size;       /* bytes of a ring slot */
/* slots are compact records (rec_size UKP_REGION_REC_COMPACT, or
 * UKP_REGION_REC_CALLER: compact_caller) */
static bool compact, compact_caller;
static uint64_t ring_recs;    /* slots per ring, a power of two */
static size_t ring_bytes;
/* the thread's ring: in its block (agent.h, struct ukpa_thread) */
#define my_ring (*(struct ring **)&ukpa_self()->thread_ring)
/* events lost besides the rings' own: hits of threads that got no ring,
 * lost counts of rings given back, records the -o file did not take */
#define lost_other (ukpa_region->lost_other)
static pid_t my_pid;
static bool use_counter;                   /* timestamps are counter readings */
static bool need_fence;                /* no membarrier: writers fence themselves */
static bool announce_any;              /* an event may carry an address to name */
/* -o FILE: the last pass found a ring an eighth full or more */
static bool file_pass_full;

/* -o FILE: the file the reader writes (UKP_ENV_RAW_FD), or -1 */
static int raw_fd = -1;
static dev_t raw_dev;
static ino_t raw_ino;
static bool raw_broken;
static bool raw_no_falloc;              /* the file system has no fallocate */

static struct ukprobes_kthread reader;
static bool reader_running;             /* started, and not stopped */
static bool reader_exists;              /* this process has the thread */
static _Atomic bool reader_stop, reader_parked, reader_entered, reader_exit;
/* ukpa_reader_flush(): requests, and the last request a pass served */
static _Atomic unsigned long flush_req, flush_done;

/* ------------------------------------------------------------ [hit] */

/* Where the counter is not usable: ask the kernel (the vDSO's
 * clock_gettime is reached through a pointer, which the vector-free
 * proof cannot follow). */
static uint64_t kernel_clock(int32_t *cpu)
{
	struct timespec ts;
	unsigned int c = 0;

	ukpa_sys(SYS_clock_gettime, CLOCK_MONOTONIC, &ts, 0);
	ukpa_sys(SYS_getcpu, &c, NULL, NULL);
	*cpu = (int32_t)c;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void get_comm(struct ring *r)
{
	uint64_t name[2];

	/* words, not "char name[16] = { 0 }": without optimization clang
	 * zeroes that with a call of memset */
	name[0] = 0;
	name[1] = 0;
	/* not prctl(): glibc's has a stack protector, whose failure path
	 * (abort) the vector-free proof follows into sigaction */
	ukpa_sys(SYS_prctl, PR_GET_NAME, name, 0);
	/* the reader reads it for each record it sends: written only when
	 * the name changed (the reader may then see it half written for
	 * one record, and records not yet sent take the new name) */
	if (((uint64_t *)(void *)r->comm)[0] != name[0])
		atomic_store_explicit(&((_Atomic uint64_t *)(void *)r->comm)[0], name[0],
				      memory_order_relaxed);
	if (((uint64_t *)(void *)r->comm)[1] != name[1])
		atomic_store_explicit(&((_Atomic uint64_t *)(void *)r->comm)[1], name[1],
				      memory_order_relaxed);
}

/* [hit, init] Give r fresh record memory of ring_bytes, empty. */
static int ring_map(struct ring *r)
{
	/* in the sparse file: pages take memory as the thread writes
	 * records */
	unsigned char *mem = (unsigned char *)ukpa_region + UKP_REGION_RECS_OFF +
			     (size_t)(r - rings) * UKP_REGION_RING_MAX;

	atomic_store_explicit(&r->recs, (uint64_t)(uintptr_t)mem, memory_order_relaxed);
	/* page faults in the traced thread cost more than the record: the
	 * start is committed now, the rest by the reader ahead of the
	 * thread (populate_ahead) */
	r->populated = POPULATE_FIRST < ring_bytes ? POPULATE_FIRST : ring_bytes;
	madvise(mem, r->populated, MADV_POPULATE_WRITE);
	r->tail_seen = atomic_load_explicit(&r->tail, memory_order_relaxed);
	r->stalled = false;
	return 0;
}

static struct ring *claim_ring(void)
{
	int i;

	if (!ukpa_region)
		return NULL;
	for (i = 0; i < NRINGS; i++) {
		int expected = 0;

		if (atomic_load_explicit(&rings[i].owner, memory_order_relaxed))
			continue;
		if (atomic_compare_exchange_strong_explicit(&rings[i].owner, &expected, -1,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			struct ring *r = &rings[i];

			if (ring_map(r)) {
				atomic_store_explicit(&r->owner, 0, memory_order_release);
				return NULL;
			}
			get_comm(r);
			r->comm_age = 0;
			atomic_store_explicit(&r->owner, (int)ukpa_sys0(SYS_gettid),
					      memory_order_release);
			my_ring = r;
			return r;
		}
	}
	return NULL;
}

/* Is there room for a record (head is the producer's)? With -o FILE,
 * wait for the reader a while when there is not. */
static bool room_wait(struct ring *r, uint64_t head)
{
	unsigned int waited = 0;

	for (;;) {
		uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);

		if (t != r->tail_seen)
			r->stalled = false; /* the reader moves again */
		r->tail_seen = t;
		if (head - t < ring_recs)
			return true;
		if (raw_fd < 0 || r->stalled ||
		    !atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
			return false; /* (tracing stops: the reader's last pass comes) */
		if (waited++ >= FULL_WAIT_YIELDS) {
			/* the reader may be waiting for something this
			 * thread holds: drop until it moves again */
			r->stalled = true;
			return false;
		}
		sched_yield();
	}
}

static inline bool room(struct ring *r, uint64_t head)
{
	return head - r->tail_seen < ring_recs || room_wait(r, head);
}

/* [hit] The slot of the thread's next record (at head). */
static inline struct ukp_region_rec *slot_at(const struct ring *r, uint64_t head)
{
	return (struct ukp_region_rec *)((unsigned char *)(uintptr_t)atomic_load_explicit(
						 &r->recs, memory_order_relaxed) +
					 (head & (ring_recs - 1)) * rec_size);
}

void ukpa_record(const struct ukpa_probe *pr, const struct pt_regs *regs,
		 const struct pt_regs *entry, uintptr_t ip, uintptr_t caller)
{
	ukpa_record_in(ukpa_self(), pr, regs, entry, ip, caller);
}

void ukpa_record_in(struct ukpa_thread *t, const struct ukpa_probe *pr,
		    const struct pt_regs *regs, const struct pt_regs *entry, uintptr_t ip,
		    uintptr_t caller)
{
	struct ring *r = t->thread_ring;
	const struct ukp_spec *spec;
	struct ukp_region_rec *rec;
	uint64_t head;
	int32_t cpu;

	if (!r) {
		r = claim_ring();
		if (!r) {
			if (ukpa_region)
				atomic_fetch_add_explicit(&lost_other, 1, memory_order_relaxed);
			return;
		}
	}
	/* Dekker with ukpa_reader_stop(): either it sees us writing, or we
	 * see that tracing stopped. Its membarrier() is the fence on our
	 * side, unless the kernel has none. */
	atomic_store_explicit(&r->writing, 1, memory_order_relaxed);
	if (need_fence)
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		goto out;

	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (!room(r, head)) {
		atomic_store_explicit(&r->lost,
				      atomic_load_explicit(&r->lost, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		goto out;
	}
	rec = slot_at(r, head);
	if (compact) {
		/* what the probe implies (ip, no payload) the reader adds too
		 * (ukpa_rings_init: every event is so) */
		struct ukp_region_rec_compact *c = (struct ukp_region_rec_compact *)(void *)rec;

		/* (a Go function's return: its ip is the function's start,
		 * which its PROBE message gives as func, the same address) */
		if ((pr->flags & UKP_PROBE_AT_FUNC) && ip != pr->func) {
			atomic_fetch_add_explicit(&lost_other, 1, memory_order_relaxed);
			goto out;
		}
		if (compact_caller) {
			struct ukp_region_rec_caller *k = (struct ukp_region_rec_caller *)(void *)rec;

			k->ts = use_counter ? hit_counter_cpu(&cpu) : kernel_clock(&cpu);
			k->caller = caller;
			k->id = pr->id;
			k->cpu = cpu;
		} else {
			c->ts = use_counter ? hit_counter_cpu(&cpu) : kernel_clock(&cpu);
			c->id = pr->id;
			c->cpu = cpu;
		}
		if (++r->comm_age >= COMM_EVERY) {
			r->comm_age = 0;
			get_comm(r);
		}
		atomic_store_explicit(&r->head, head + 1, memory_order_release);
		goto out;
	}
	/* what the ring says (tid, name) the reader adds: the record holds
	 * what differs per hit */
	rec->ts = use_counter ? hit_counter_cpu(&cpu) : kernel_clock(&cpu);
	rec->ip = ip;
	rec->caller = caller;
	rec->id = pr->id;
	rec->faults = 0;
	spec = &pr->spec->spec;
	rec->len = (ukp_spec_record_payload(spec) + 7) & ~7u;
	rec->cpu = cpu;
	/* the thread may rename itself: look again now and then */
	if (++r->comm_age >= COMM_EVERY) {
		r->comm_age = 0;
		get_comm(r);
	}
	if (pr->fspec->nargs)
		ukpa_fetch_into(pr->fspec, regs, entry, rec->data, &rec->faults, r->comm);
	if (spec->stacktrace) /* --trigger stacktrace (unwind.c) */
		ukpa_stack_record(pr, regs, ip, caller, rec->data);
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
out:
	atomic_store_explicit(&r->writing, 0, memory_order_release);
}

/* [hit] A script's record (script.c): len bytes of data as the payload
 * of an event of pr, which the script's handler ran for. */
void ukpa_record_data(const struct ukpa_probe *pr, uintptr_t ip, const void *data, uint32_t len)
{
	struct ring *r = my_ring;
	struct ukp_region_rec *rec;
	uint64_t head, *d;
	const uint64_t *s;
	int32_t cpu;
	uint32_t i;

	if (!r) {
		r = claim_ring();
		if (!r) {
			if (ukpa_region)
				atomic_fetch_add_explicit(&lost_other, 1, memory_order_relaxed);
			return;
		}
	}
	/* as ukpa_record() */
	atomic_store_explicit(&r->writing, 1, memory_order_relaxed);
	if (need_fence)
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&ukpa_tracing, memory_order_relaxed))
		goto out;
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	/* (compact slots have no room for a script's record) */
	if (!room(r, head) || compact || UKP_REGION_REC_HEADER + len > rec_size) {
		atomic_store_explicit(&r->lost,
				      atomic_load_explicit(&r->lost, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		goto out;
	}
	rec = slot_at(r, head);
	rec->ts = use_counter ? hit_counter_cpu(&cpu) : kernel_clock(&cpu);
	rec->ip = ip;
	rec->caller = 0;
	rec->id = pr->id;
	rec->faults = 0;
	rec->len = (len + 7) & ~7u;
	rec->cpu = cpu;
	if (++r->comm_age >= COMM_EVERY) {
		r->comm_age = 0;
		get_comm(r);
	}
	/* words, not memcpy (vector-free); the script's records are
	 * multiples of 8 bytes */
	for (i = 0, s = data, d = (uint64_t *)(void *)rec->data; i < (len + 7) / 8; i++) {
		d[i] = s[i];
		__asm__ volatile("" ::: "memory");
	}
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
out:
	atomic_store_explicit(&r->writing, 0, memory_order_release);
}

/* --------------------------------------------------------- [reader] */

void ukpa_symbolize(uintptr_t addr, char *buf, size_t len, uintptr_t *func, const char *prefer)
{
	char demangled[1024], names[PATH_MAX + KSYM_NAME_LEN], pnames[PATH_MAX + KSYM_NAME_LEN];
	struct ksym_info res = { .size = sizeof(res) }, pres = { .size = sizeof(pres) };
	int ret;

	if (func)
		*func = 0;
	snprintf(buf, len, "0x%lx", (unsigned long)addr);
	ret = kallsyms_lookup_info(addr, &res, names, sizeof(names));
	if (ret == 0 && (res.flags & KSYM_DATA)) {
		/* a variable: as the symbol table names it, or its object */
		if (!ukpa_datasym_format(&res, addr, buf, len))
			snprintf(buf, len, "[%s]+0x%lx", res.modname,
				 (unsigned long)(addr - res.modbase));
		return;
	}
	if (ret == 0) {
		const char *name = res.name, *given = NULL;
		int n = 0;

		/* aliases (free/cfree): the name the user gave, if it is one;
		 * an IFUNC's name goes before its implementation's
		 * ("strlen -> __strlen_avx2+0x0/..."). Looked up only when it
		 * differs: a lookup by "path:name" resolves the path of every
		 * object it passes. */
		given = prefer ? strrchr(prefer, ':') : NULL;
		given = given ? given + 1 : prefer;
		if (prefer && strcmp(given, name) &&
		    kallsyms_lookup_name_info(prefer, &pres, pnames, sizeof(pnames)) == 0 &&
		    pres.addr == res.addr) {
			if (pres.flags & KSYM_IFUNC)
				n = snprintf(buf, len, "%s -> ", given);
			else
				name = given;
		}
		if (n < 0 || (size_t)n >= len)
			n = 0;
		/* C++ and Rust names as people read them */
		if (ukpa_mangled(name)) {
			char *d = ukpa_demangle(name);

			if (d) {
				snprintf(demangled, sizeof(demangled), "%s", d);
				free(d);
				name = demangled;
			}
		}
		if (!(res.flags & KSYM_MAIN))
			snprintf(buf + n, len - (size_t)n, "%s+0x%lx/0x%lx [%s]", name,
				 (unsigned long)(addr - res.addr), res.symsize, res.modname);
		else
			snprintf(buf + n, len - (size_t)n, "%s+0x%lx/0x%lx", name,
				 (unsigned long)(addr - res.addr), res.symsize);
		if (func)
			*func = res.addr;
		return;
	}
	if (ret != -ENOENT || !res.modpath)
		return;
	snprintf(buf, len, "[%s]+0x%lx", res.modname, (unsigned long)(addr - res.modbase));
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

/* What a pass writes out: packets of at most UKP_PACKET_MAX bytes to
 * the socket, or larger writes to the -o file. */
#define outbuf ((char *)ukpa_region + UKP_REGION_OUT_OFF)
static size_t outlen, out_events;
_Static_assert(FILE_CHUNK == UKP_REGION_OUT_BYTES, "the region's output buffer");

/* The bytes in the buffer are whole messages: ukprobe may read them.
 * ring, pos: where its last event came from (its tail moves next), or
 * UKP_REGION_OUT_NONE. */
static void out_done(unsigned ring, uint64_t pos)
{
	atomic_store_explicit(&ukpa_region->out_state,
			      UKP_REGION_OUT_STATE(outlen, ring, pos & UKP_REGION_OUT_POS_MASK),
			      memory_order_release);
}

/* ns per counter tick (32.32 fixed point) for $duration: measured over a
 * few milliseconds at start-up, then over the whole run at each pass
 * (the handlers read it: one word, no lock) */
static _Atomic uint64_t span_mult;

uint64_t ukpa_clock_now(void)
{
	int32_t cpu;

	return use_counter ? hit_counter_cpu(&cpu) : kernel_clock(&cpu);
}

uint64_t ukpa_clock_span_ns(uint64_t span)
{
	if (!use_counter)
		return span;
	return (uint64_t)(((unsigned __int128)span *
			   atomic_load_explicit(&span_mult, memory_order_relaxed)) >> 32);
}

/* The counter to CLOCK_MONOTONIC: two readings of both clocks, the first taken
 * at start-up, the second at the start of each pass (every record that
 * pass sends was written before it, give or take the pass). */
static uint64_t cal_cnt0, cal_ns0, cal_cnt1, cal_ns1;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A reading of both clocks, the counter taken around the clock's reading:
 * the tightest of a few (a thread preempted between two of the readings
 * put its wait into the line: $duration's start-up rate, measured over 5
 * ms, was seen 8% off, a 2 ms sleep given as 1.84 ms). */
static void cal_read(uint64_t *cnt, uint64_t *ns)
{
	uint64_t best = ~0ULL;
	int i;

	for (i = 0; i < 8; i++) {
		int32_t cpu;
		uint64_t a = hit_counter_cpu(&cpu), b, n;

		n = mono_ns();
		b = hit_counter_cpu(&cpu);
		if (b - a < best) {
			best = b - a;
			*ns = n;
			*cnt = a + (b - a) / 2;
		}
	}
}

/* ns per counter tick as a 32.32 fixed-point factor, from the two readings
 * (computed once per pass: no division per event), and the point the
 * conversion line goes through (anc_cnt, anc_ns) */
static uint64_t cal_mult, anc_cnt, anc_ns;
static uint64_t last_cnt1;    /* the previous pass's reading */

static uint64_t counter_to_ns(uint64_t cnt)
{
	if (cnt >= anc_cnt)
		return anc_ns + (uint64_t)(((unsigned __int128)(cnt - anc_cnt) * cal_mult) >> 32);
	return anc_ns - (uint64_t)(((unsigned __int128)(anc_cnt - cnt) * cal_mult) >> 32);
}

/* [reader] The rate again, over the whole time since start-up; the new
 * line starts where the old one ended, at the previous pass's reading
 * (the events this pass sends were written after it), so that time
 * never goes back from one pass to the next (early rates, over a few
 * milliseconds of a loaded machine, are off by more than a later pass's
 * events are apart). */
static void cal_update(void)
{
	uint64_t dt = cal_cnt1 - cal_cnt0, mult;

	mult = dt ? (uint64_t)(((unsigned __int128)(cal_ns1 - cal_ns0) << 32) / dt) : 0;
	if (!mult)
		return;
	if (cal_mult) {
		anc_ns = counter_to_ns(last_cnt1);
		anc_cnt = last_cnt1;
	} else {
		anc_cnt = cal_cnt0;
		anc_ns = cal_ns0;
	}
	cal_mult = mult;
	last_cnt1 = cal_cnt1;
	/* for ukprobe, should the process end before the records are sent */
	atomic_store_explicit(&ukpa_region->cal_cnt0, anc_cnt, memory_order_relaxed);
	atomic_store_explicit(&ukpa_region->cal_ns0, anc_ns, memory_order_relaxed);
	atomic_store_explicit(&ukpa_region->cal_mult, cal_mult, memory_order_relaxed);
}

/* -o FILE: the lock on the records file's first byte, which every image
 * writing the file takes around its packet (proto.h, RECORDS_HEAD).
 * Per process (fcntl's record locks): the kernel lets it go when the
 * process ends, however. */
static bool raw_lock(short type)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	while (fcntl(raw_fd, type == F_UNLCK ? F_SETLK : F_SETLKW, &l))
		if (errno != EINTR)
			return false;
	return true;
}

/*
 * One packet into the -o file: FROM (iov[0], filled here) and whole
 * messages (iov[1..n)), one write. Every image with -f writes the file:
 * the packet goes at the end of the whole packets (the file's
 * RECORDS_HEAD), under the lock, and the end moves past it once the
 * write is whole. A write that a kill or exit_group cuts short between
 * two pages (an image that ends abruptly: the reader is killed with it)
 * is not the end's, and the next writer writes over it: the file never
 * holds half a packet before a whole one (with O_APPEND a cut packet
 * stayed in the middle, other images' packets after it: the file was
 * damaged from there). [reader], or the image's last pass
 * (ukpa_reader_stop()): no allocation.
 */
static void raw_writev(struct iovec *iov, int n, size_t len, size_t events, uint32_t seq)
{
	static struct ukp_msg_from from;
	struct stat st;
	uint64_t end, next;
	ssize_t w;

	ukpa_from_header(&from);
	from.pad = seq; /* (region.h: which of the records ukprobe has) */
	iov[0].iov_base = &from;
	iov[0].iov_len = sizeof(from);
	if (!raw_broken && (fstat(raw_fd, &st) || st.st_dev != raw_dev || st.st_ino != raw_ino))
		raw_broken = true; /* the program closed it, and the number was reused */
	if (raw_broken || !raw_lock(F_WRLCK)) {
		raw_broken = true;
		atomic_fetch_add(&lost_other, events);
		return;
	}
	if (ukpa_sys6(SYS_pread64, raw_fd, (long)&end, sizeof(end), (long)UKP_RECORDS_END_OFF,
		      0, 0) != (long)sizeof(end) ||
	    end < sizeof(struct ukp_msg_records_head) || (end & 7))
		raw_broken = true; /* no RECORDS_HEAD: not ukprobe's records file */
	/* the packet's blocks, allocated in one call before it is written:
	 * ext4's delayed allocation otherwise reserves them page by page
	 * inside the write (a quarter of the reader's CPU) */
	if (!raw_broken && !raw_no_falloc) {
		long f = ukpa_sys6(SYS_fallocate, raw_fd, FALLOC_FL_KEEP_SIZE, (long)end,
				   (long)(sizeof(from) + len), 0, 0);

		if (f == -EOPNOTSUPP || f == -ENOSYS)
			raw_no_falloc = true;
	}
	while (!raw_broken) {
		w = ukpa_sys6(SYS_pwritev, raw_fd, (long)iov, n, (long)end, 0, 0);
		if (w == (ssize_t)(sizeof(from) + len)) {
			/* whole: the end moves past it (8 bytes within a
			 * page: a kill does not cut them) */
			next = end + (uint64_t)w;
			if (ukpa_sys6(SYS_pwrite64, raw_fd, (long)&next, sizeof(next),
				      (long)UKP_RECORDS_END_OFF, 0, 0) == (long)sizeof(next)) {
				raw_lock(F_UNLCK);
				return;
			}
		} else if (w == -EINTR) {
			continue;
		}
		/* a short write (a full disk): the end stays before it */
		raw_broken = true;
	}
	raw_lock(F_UNLCK);
	atomic_fetch_add(&lost_other, events);
}

static void raw_write(const void *buf, size_t len, size_t events, uint32_t seq)
{
	struct iovec iov[2] = { { NULL, 0 }, { (void *)buf, len } };

	raw_writev(iov, 2, len, events, seq);
}

static void out_flush(void)
{
	uint32_t seq = atomic_load_explicit(&ukpa_region->out_seq, memory_order_relaxed);

	if (outlen && raw_fd >= 0)
		raw_write(outbuf, outlen, out_events, seq);
	else if (outlen)
		ukpa_send_seq(outbuf, outlen, seq);
	if (outlen)
		atomic_store_explicit(&ukpa_region->out_seq, seq + 1, memory_order_relaxed);
	outlen = out_events = 0;
	out_done(UKP_REGION_OUT_NONE, 0);
}

static void *out_room(size_t len)
{
	size_t max = raw_fd >= 0 ? FILE_CHUNK : UKP_PACKET_MAX - sizeof(struct ukp_msg_from);

	if (outlen + len > max)
		out_flush();
	outlen += len;
	return outbuf + outlen - len;
}

static void out_put(const void *p, size_t len)
{
	memcpy(out_room(len), p, len);
	out_done(UKP_REGION_OUT_NONE, 0);
}

/* An event as it leaves the process: the wire's record (its own length,
 * the timestamp in nanoseconds, the ring's tid and name). It is the
 * record at pos in ring r, whose tail moves past it next. */
static void out_event(const struct ukp_region_rec *rec, const struct ring *r, uint64_t pos)
{
	struct ukp_rec *o;

	if (rec->len > UKP_REC_PAYLOAD || (rec->len & 7)) {
		/* (cannot be: the hit path writes it) */
		atomic_fetch_add(&lost_other, 1);
		return;
	}
	o = out_room(UKP_REC_HEADER + rec->len);
	ukp_region_rec_event(rec, r, use_counter ? counter_to_ns(rec->ts) : rec->ts, o);
	out_events++;
	out_done((unsigned)(r - rings), pos);
}

union sym_msg {
	struct ukp_msg_sym m;
	char buf[512];
};

/* A SYM message for addr: its length. */
static uint32_t sym_msg(union sym_msg *u, uint64_t addr)
{
	size_t tlen;

	memset(u, 0, sizeof(*u));
	ukpa_symbolize(addr, u->m.text, sizeof(u->buf) - sizeof(u->m), NULL, NULL);
	tlen = strlen(u->m.text) + 1;
	u->m.h.type = UKPM_SYM;
	u->m.h.len = (uint32_t)((sizeof(u->m) + tlen + 7) & ~(size_t)7);
	u->m.addr = addr;
	return u->m.h.len;
}

/* [reader] A SYM message for addr, unless it was sent already. */
static void announce(uint64_t addr)
{
	union sym_msg u;

	if (!addr || !seen_add(addr))
		return;
	out_put(&u, sym_msg(&u, addr));
}

void ukpa_send_sym(uint64_t addr)
{
	union sym_msg u;

	ukpa_send(&u, sym_msg(&u, addr));
}

/* The addresses an event needs: where a function returned to, and the
 * values of symbol arguments. (Probed addresses came with the PROBE
 * messages.) */
static void announce_for(const struct ukp_region_rec *rec)
{
	const struct ukpa_probe *pr = ukpa_probe_by_id(rec->id);
	int i;

	announce(rec->caller);
	if (!pr)
		return;
	if (ukpa_script_loaded()) {
		/* a script's record (ukprobe run): its first word's high half
		 * marks the words that are addresses to name (ustack,
		 * usym() in a printf); its SPEC's arguments are not here */
		uint64_t w0, v;

		memcpy(&w0, rec->data, 8);
		for (i = 1; i < 32; i++)
			if ((w0 >> 32) & (1ull << i) &&
			    (size_t)(i + 1) * 8 <= rec->len) {
				memcpy(&v, rec->data + 8 * (size_t)i, 8);
				announce(v);
			}
		return;
	}
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

static struct ukp_region_rec *ring_rec(struct ring *r, uint64_t i)
{
	return slot_at(r, i);
}

/* [reader] The full record of slot (a compact one made into *buf). */
static const struct ukp_region_rec *full_rec(const struct ukp_region_rec *slot,
					     struct ukp_region_rec *buf)
{
	const struct ukpa_probe *pr;

	if (!compact)
		return slot;
	pr = ukpa_probe_by_id(ukp_region_rec_compact_id(slot, rec_size));
	ukp_region_rec_expand_slot(slot, rec_size, pr ? (uint64_t)ukpa_probe_event_ip(pr) : 0, buf);
	return buf;
}

/* Commit the ring's pages before its thread writes there (its first lap):
 * a page fault in the traced thread costs more than a record. A thread
 * that has used half of what is committed gets as much again (at most
 * POPULATE_STEP_MAX at a time, until it has used less than half): a
 * thread that hits rarely keeps a small ring. */
static void populate_ahead(struct ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	/* (as often as needed: with -o FILE a pass may come only every
	 * millisecond) */
	while (r->populated < ring_bytes && head < ring_recs &&
	       (size_t)head * rec_size >= r->populated / 2) {
		size_t step = r->populated < POPULATE_STEP_MAX ? r->populated : POPULATE_STEP_MAX;

		if (step > ring_bytes - r->populated)
			step = ring_bytes - r->populated;
		madvise((unsigned char *)(uintptr_t)atomic_load_explicit(&r->recs,
									memory_order_relaxed) +
				r->populated,
			step, MADV_POPULATE_WRITE);
		r->populated += step;
	}
}

/* [reader] The clocks' line for this pass's records. */
static void pass_calibrate(void)
{
	if (use_counter) {
		cal_read(&cal_cnt1, &cal_ns1);
		cal_update();
		/* a baseline long enough to beat the start-up one */
		if (cal_mult && cal_ns1 - cal_ns0 > 50000000)
			atomic_store_explicit(&span_mult, cal_mult, memory_order_relaxed);
	}
}

/* -o FILE: the bytes of records one pass writes at most (a writev moves
 * less than 2 GiB; what is left goes at the next pass) */
#define FILE_PASS_MAX (64UL << 20)

/* [reader] -o FILE: of the rings in take, the records up to each one's
 * end (at most a quarter of a ring's, and FILE_PASS_MAX bytes in all),
 * as they are. The SYM messages the records need go into the output
 * buffer first; then one write: FROM, those SYMs, and for each ring a
 * RECS message (proto.h) whose records are written straight from the
 * ring (one or two pieces, as the span wraps); then the tails move (so
 * that a thread finds room again before its reader has written all a
 * pass took). No record is converted or copied here: ukprobe merges
 * the spans by timestamp as drain_pass_socket() does. Returns how many
 * records. */
static size_t file_write_some(const bool *take)
{
	/* (the reader's, or ukpa_reader_stop()'s when it has none: never
	 * both at once) */
	static struct ukp_msg_recs hd[NRINGS];
	static struct iovec iov[2 + 3 * NRINGS];
	static uint64_t upto[NRINGS];
	struct ring *act[NRINGS];
	size_t total = 0, bytes = 0;
	bool name_addrs = announce_any || ukpa_script_loaded();
	struct ukp_region_rec full;
	uint32_t seq;
	int nact = 0, niov = 2, i;

	for (i = 0; i < NRINGS && bytes < FILE_PASS_MAX; i++) {
		struct ring *r = &rings[i];
		struct ukp_msg_recs *m = &hd[nact];
		uint64_t tail, n, x, first, piece;
		unsigned char *base;

		if (!take[i])
			continue;
		tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
		n = r->end - tail;
		if (!n)
			continue;
		populate_ahead(r);
		/* a quarter of the ring at most: its tail moves again before
		 * the thread has filled the rest (the write is the kernel's
		 * copy of every byte) */
		if (n > ring_recs / 4)
			n = ring_recs / 4;
		if (n * rec_size > FILE_PASS_MAX - bytes) {
			n = (FILE_PASS_MAX - bytes) / rec_size;
			if (!n)
				break;
		}
		upto[nact] = tail + n;
		if (name_addrs && compact_caller) {
			/* the return addresses are all a compact record has to
			 * name (no payload): read only them, and a run of
			 * returns to the same place once */
			uint64_t last = 0;

			for (x = tail; x != tail + n; x++) {
				uint64_t c = ((const struct ukp_region_rec_caller *)(const void *)
						      slot_at(r, x))->caller;

				if (c != last)
					announce(c);
				last = c;
			}
		} else if (name_addrs) {
			for (x = tail; x != tail + n; x++)
				announce_for(full_rec(slot_at(r, x), &full));
		}
		memset(m, 0, sizeof(*m));
		m->h.type = UKPM_RECS;
		m->h.len = (uint32_t)(sizeof(*m) + n * rec_size);
		m->tid = atomic_load_explicit(&r->owner, memory_order_relaxed);
		m->ring_no = (uint32_t)i;
		m->pos = tail;
		m->n = (uint32_t)n;
		m->rec_size = (uint32_t)rec_size;
		m->use_counter = use_counter;
		m->cal_cnt0 = anc_cnt;
		m->cal_ns0 = anc_ns;
		m->cal_mult = cal_mult;
		memcpy(m->comm, r->comm, sizeof(m->comm));
		iov[niov].iov_base = m;
		iov[niov++].iov_len = sizeof(*m);
		base = (unsigned char *)(uintptr_t)atomic_load_explicit(&r->recs,
									memory_order_relaxed);
		first = tail & (ring_recs - 1);
		piece = n < ring_recs - first ? n : ring_recs - first;
		iov[niov].iov_base = base + first * rec_size;
		iov[niov++].iov_len = piece * rec_size;
		if (piece < n) {
			iov[niov].iov_base = base;
			iov[niov++].iov_len = (n - piece) * rec_size;
		}
		bytes += m->h.len;
		total += n;
		act[nact++] = r;
	}
	if (!nact)
		return 0;
	iov[1].iov_base = outbuf;
	iov[1].iov_len = outlen;
	seq = atomic_load_explicit(&ukpa_region->out_seq, memory_order_relaxed);
	raw_writev(iov, niov, outlen + bytes, total, seq);
	/* the file has them (ukprobe, reading an image that ended before
	 * the tails moved, takes the ring's records after the spans of
	 * packet out_seq it found there) */
	for (i = 0; i < nact; i++)
		atomic_store_explicit(&act[i]->tail, upto[i], memory_order_release);
	atomic_store_explicit(&ukpa_region->out_seq, seq + 1, memory_order_relaxed);
	outlen = out_events = 0;
	out_done(UKP_REGION_OUT_NONE, 0);
	return total;
}

/* [reader] -o FILE: one pass, every record published when it started,
 * in writes of file_write_some(). Returns how many. */
static size_t drain_pass_file(void)
{
	bool take[NRINGS];
	size_t total = 0, n;
	int i;

	pass_calibrate();
	file_pass_full = false;
	for (i = 0; i < NRINGS; i++) {
		struct ring *r = &rings[i];

		take[i] = atomic_load_explicit(&r->owner, memory_order_acquire) > 0;
		if (!take[i])
			continue;
		r->end = atomic_load_explicit(&r->head, memory_order_acquire);
		if (r->end - atomic_load_explicit(&r->tail, memory_order_relaxed) >= ring_recs / 8)
			file_pass_full = true;
	}
	while ((n = file_write_some(take)) > 0)
		total += n;
	return total;
}

/* One pass over every ring: the records published when it started, in
 * timestamp order, as EVENT messages to the socket. Returns how many. */
static size_t drain_pass_socket(void)
{
	struct ring *act[NRINGS];
	size_t total = 0;
	int nact = 0, i;

	pass_calibrate();
	for (i = 0; i < NRINGS; i++) {
		struct ring *r = &rings[i];

		if (atomic_load_explicit(&r->owner, memory_order_acquire) <= 0)
			continue;
		populate_ahead(r);
		r->end = atomic_load_explicit(&r->head, memory_order_acquire);
		if (atomic_load_explicit(&r->tail, memory_order_relaxed) != r->end)
			act[nact++] = r;
	}
	while (nact) {
		struct ukp_region_rec *rec = NULL, full;
		const struct ukp_region_rec *full_at;
		struct ring *r;
		int best = 0;
		uint64_t t;

		for (i = 0; i < nact; i++) {
			struct ukp_region_rec *c = ring_rec(act[i], atomic_load_explicit(
							       &act[i]->tail, memory_order_relaxed));

			if (!rec || c->ts < rec->ts) {
				rec = c;
				best = i;
			}
		}
		r = act[best];
		full_at = full_rec(rec, &full);
		announce_for(full_at);
		out_event(full_at, r, atomic_load_explicit(&r->tail, memory_order_relaxed));
		t = atomic_load_explicit(&r->tail, memory_order_relaxed) + 1;
		atomic_store_explicit(&r->tail, t, memory_order_release);
		total++;
		if (t == r->end)
			act[best] = act[--nact];
	}
	return total;
}

static size_t drain_pass(void)
{
	return raw_fd >= 0 ? drain_pass_file() : drain_pass_socket();
}

/* Give back the empty rings of threads that have exited. */
static void recycle_dead(void)
{
	int i;

	for (i = 0; i < NRINGS; i++) {
		struct ring *r = &rings[i];
		int tid = atomic_load_explicit(&r->owner, memory_order_acquire);

		if (tid <= 0 || atomic_load_explicit(&r->head, memory_order_acquire) !=
				    atomic_load_explicit(&r->tail, memory_order_relaxed))
			continue;
		if (ukpa_sys(SYS_tgkill, my_pid, tid, 0) != -ESRCH)
			continue;
		atomic_fetch_add(&lost_other, atomic_load(&r->lost));
		atomic_store(&r->lost, 0);
		/* the file's pages go back (the next owner commits its own) */
		madvise((void *)(uintptr_t)atomic_load(&r->recs), ring_bytes, MADV_REMOVE);
		atomic_store(&r->recs, 0);
		atomic_store(&r->head, 0);
		atomic_store(&r->tail, 0);
		atomic_store_explicit(&r->owner, 0, memory_order_release);
	}
	ukpa_counts_recycle_dead();
}

/*
 * Did the loader load or unload objects since the last look? The first
 * look is the probes' setup's (ukpa_reader_objects_seen(), before it
 * resolves the SPECs), not the reader's: a look that finds nothing new
 * costs nothing, while a refresh opens files (each loaded object's real
 * path, /proc/self/maps) from this thread while the program runs. A
 * program that moves its descriptors counts on the lowest free number
 * staying free: a shell's "cmd > file" is close(1), then dup2(file, 1).
 * A refresh at the reader's start (when the program starts too) took
 * that number for an O_PATH descriptor, lost it to the shell's dup2,
 * then closed the shell's file: the command ran with /proc/self/mem,
 * opened next by the library, as its stdout (EIO).
 */
static _Atomic unsigned long long seen_adds, seen_subs;
static _Atomic bool seen_set;

/* [init] The objects loaded now are looked at (by the probes' setup). */
void ukpa_reader_objects_seen(void)
{
	struct ukpa_loader_counters c;

	ukpa_loader_counters(&c);
	atomic_store(&seen_adds, c.adds);
	atomic_store(&seen_subs, c.subs);
	atomic_store(&seen_set, true);
}

static void check_objects(void)
{
	struct ukpa_loader_counters c;

	/* (an unset first look: the setup has not begun; it resolves
	 * what is loaded then) */
	if (!atomic_load(&seen_set))
		return;
	/* The loader's stops do it, on the loading thread, before the
	 * program can call what was loaded. A refresh from here held the
	 * probes' lock while the library started a thread, which waits for
	 * the TLS lock a dlopen() holds in its stop, which waited for the
	 * probes' lock: the program stood still for the stop's bound. */
	if (ukpa_probes_loader_watched())
		return;
	ukpa_loader_counters(&c);
	if (c.adds == atomic_load(&seen_adds) && c.subs == atomic_load(&seen_subs))
		return;
	atomic_store(&seen_adds, c.adds);
	atomic_store(&seen_subs, c.subs);
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
		/* -o FILE: a pass per millisecond at most while the rings
		 * have room (fewer writes, longer spans: the reader's CPU is
		 * the traced program's on a loaded machine) */
		if ((!n || (raw_fd >= 0 && !file_pass_full)) && atomic_load(&flush_req) == want) {
			struct timespec d = { 0, IDLE_SLEEP_NS };

			nanosleep(&d, NULL);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ [init] */

void ukpa_rings_set_file(const char *fdtext)
{
	char *end;
	long fd;

	if (!fdtext)
		return;
	fd = strtol(fdtext, &end, 10);
	if (*end || fd < 0 || fd > 1 << 20)
		return;
	ukpa_rings_set_fd((int)fd);
}

void ukpa_rings_set_fd(int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return;
	raw_fd = fd;
	raw_dev = st.st_dev;
	raw_ino = st.st_ino;
	raw_broken = false;
	/* with -f the programs we exec write there too */
	fcntl(raw_fd, F_SETFD, ukpa_follow ? 0 : FD_CLOEXEC);
}

void ukpa_rings_close_file(void)
{
	if (raw_fd >= 0)
		close(raw_fd);
	raw_fd = -1;
}

/* [init] The header says what ukprobe needs to read the records. */
static void publish_layout(void)
{
	ukpa_region->rec_size = rec_size;
	ukpa_region->ring_recs = ring_recs;
	ukpa_region->use_counter = use_counter;
	atomic_store(&ukpa_region->cal_cnt0, cal_mult ? anc_cnt : cal_cnt0);
	atomic_store(&ukpa_region->cal_ns0, cal_mult ? anc_ns : cal_ns0);
	if (cal_mult)
		atomic_store(&ukpa_region->cal_mult, cal_mult);
}

int ukpa_rings_init(void)
{
	size_t payload = 0, old_bytes = ring_bytes;
	int i;

	if (!ukpa_region)
		return -ENOMEM;
	my_pid = getpid();
	/* slots as large as the largest event of the SPECs */
	for (i = 0; i < ukpa_specs_count(); i++)
		if (ukpa_spec_payload(i) > payload)
			payload = ukpa_spec_payload(i);
	if (ukpa_script_payload() > payload) /* a script's printf records */
		payload = ukpa_script_payload();
	rec_size = (UKP_REGION_REC_HEADER + payload + 7) & ~(size_t)7;
	/* every event an entry's at its probe, nothing else to record: the
	 * hit writes a third of the bytes, and so does the -o file */
	compact = false;
	if (!ukpa_script_loaded() && !ukpa_script_payload() && ukpa_specs_compact()) {
		/* (returns too: with their callers) */
		compact = true;
		rec_size = ukpa_specs_compact();
	}
	compact_caller = compact && rec_size == UKP_REGION_REC_CALLER;
	ring_bytes = raw_fd >= 0 ? UKP_REGION_RING_MAX : RING_BYTES_STREAM;
	for (ring_recs = 1; ring_recs * 2 * rec_size <= ring_bytes; ring_recs *= 2)
		;
	if (raw_fd >= 0 && ring_recs > RING_RECS_FILE)
		ring_recs = RING_RECS_FILE;
	ring_bytes = ring_recs * rec_size;
	use_counter = hit_counter_usable();
	announce_any = ukpa_specs_name_addresses();
	if (use_counter) {
		struct timespec pause = { 0, 5000000 };
		uint64_t t, n;

		cal_read(&cal_cnt0, &cal_ns0);
		cal_cnt1 = cal_cnt0;
		cal_ns1 = cal_ns0;
		if (ukpa_specs_use_duration() && !atomic_load(&span_mult)) {
			/* $duration: a first rate before any event */
			while (nanosleep(&pause, &pause) && errno == EINTR)
				;
			cal_read(&t, &n);
			if (t > cal_cnt0)
				atomic_store(&span_mult, (uint64_t)(((unsigned __int128)(n - cal_ns0) << 32) /
								    (t - cal_cnt0)));
		}
	}
	need_fence = ukpa_sys(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0;
	if (old_bytes) {
		/* attached again (ukprobe -p): the rings were drained at the
		 * detach and each stays with its thread; the new SPECs may
		 * need other slots, so each starts again, empty, at the new
		 * size (no thread records while tracing is off) */
		atomic_store(&lost_other, 0);
		for (i = 0; i < NRINGS; i++) {
			struct ring *r = &rings[i];

			atomic_store(&r->lost, 0);
			atomic_store(&r->head, 0);
			atomic_store(&r->tail, 0);
				if (atomic_load(&r->recs))
				ring_map(r);
		}
	}
	/* what ukprobe needs to read the records, should the process end
	 * before they are sent */
	publish_layout();
	return 0;
}

int ukpa_reader_start(void)
{
	int ret;

	if (reader_exists) {
		/* parked: wake it */
		atomic_store(&reader_stop, false);
		reader_running = true;
		return 0;
	}
	atomic_store(&reader_stop, false);
	/* a raw thread: nothing of the program's (its allocator) runs for it */
	ret = ukprobes_kthread_run(&reader, reader_main, NULL, "ukprobe-agent", 0);
	if (ret)
		return -ret;
	reader_running = reader_exists = true;
	/* the thread's start (with every signal blocked) is over before the
	 * caller puts probes in place */
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
	if (!ukpa_region)
		return 0;
	atomic_thread_fence(memory_order_seq_cst);
	/* every running thread passes a full barrier: a handler that still
	 * saw tracing on has its writing flag visible now (ukpa_record) */
	if (!need_fence)
		ukpa_sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
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
	} else if (rec_size) {
		drain_pass();
		out_flush();
	}
	lost = ukpa_region ? atomic_load(&lost_other) : 0;
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
	ukprobes_kthread_join(&reader);
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

int ukpa_rings_after_fork(void)
{
	int ret;

	/* Only the forking thread exists in the child, and what the rings
	 * hold is the parent's to send: a file of its own, empty. */
	reader_running = reader_exists = false;
	atomic_store(&reader_entered, false);
	atomic_store(&reader_stop, false);
	atomic_store(&reader_parked, false);
	atomic_store(&flush_req, 0);
	atomic_store(&flush_done, 0);
	my_pid = getpid();
	my_ring = NULL;
	ukpa_counts_after_fork();
	seen = NULL; /* (the parent's table may have been mid-update) */
	seen_cap = seen_n = 0;
	outlen = out_events = 0;
	if (!ukpa_region)
		return 0;
	ret = ukpa_region_new_image(false);
	if (!ret && rec_size)
		publish_layout();
	return ret;
}

int ukpa_rings_new_image(void)
{
	int ret, i;

	/* a new image: ukprobe knows none of its addresses (the parent's
	 * table may have been mid-update: drop it, do not free it) */
	seen = NULL;
	seen_cap = seen_n = 0;
	outlen = out_events = 0;
	if (ukpa_mode == UKP_MODE_PROBES)
		return 0;
	/* counts from zero; the threads keep their rings, empty */
	ret = ukpa_region_new_image(true);
	if (ret || !rec_size)
		return ret;
	publish_layout();
	for (i = 0; i < NRINGS; i++) {
		struct ring *r = &rings[i];

		atomic_store(&r->lost, 0);
		atomic_store(&r->head, 0);
		atomic_store(&r->tail, 0);
		if (atomic_load(&r->recs))
			ring_map(r);
	}
	return 0;
}
