/* SPDX-License-Identifier: MIT */
/*
 * region.h - the memory an image's agent counts and buffers events in,
 * which ukprobe holds too: a memfd the agent makes at the start of each
 * image (agent/region.c) and sends to ukprobe with its HELLO message (as
 * SCM_RIGHTS). Whatever the image counted and recorded is in the file
 * however the process ends (exit, _exit, a raw exit_group, abort,
 * SIGKILL, a fatal signal): when an image ends without its END message,
 * ukprobe reads its last counts and the events its reader had not yet
 * sent from here (tools/ukprobe/region.c).
 *
 * The file, at fixed offsets (the header says where, so that ukprobe
 * checks rather than assumes):
 *   struct ukp_region_head
 *   rings: UKP_REGION_RINGS struct ukp_region_ring (one per thread that
 *          records events, claimed at its first event)
 *   counts: UKP_REGION_SLOTS + 1 arrays of UKP_REGION_IDS counters, by
 *          probe id: one per thread that counts (claimed at its first
 *          hit; a slot of an exited thread goes, counts and all, to the
 *          next thread that claims one, so no count is ever moved), and
 *          the last one shared (atomic adds of threads that got no slot)
 *   records: UKP_REGION_RINGS rings' records, ring_stride bytes apart:
 *          each a struct ukp_region_rec and its payload (or a struct
 *          ukp_region_rec_compact or ukp_region_rec_caller), in slots of
 *          rec_size bytes (the wire's struct ukp_rec less what the ring
 *          itself says: its thread's tid and name; ukp_region_rec_event()
 *          makes the wire's record of one)
 *   out: the reader's output buffer: whole messages (SYM, and EVENT
 *        with their timestamps in ns) taken from the rings and not yet
 *        written out, which go out as the packet numbered out_seq (in
 *        its FROM message's pad); with -o FILE only SYM messages: that
 *        packet's RECS messages are written from the rings themselves
 *        (proto.h), whose tails move after the write, so that ukprobe
 *        takes a ring's records after the spans of packet out_seq it
 *        read in the file
 *   hists: UKP_REGION_HISTS struct ukp_region_hist (in use from the
 *          first: spec's table, size 0 ends the list), then the tables
 *          of hist triggers (agent/hist_hit.c), where the threads count
 *          in them: an image that ends without END still has them here
 * The file is sparse: only what threads touch takes memory. A probe's
 * count is the sum of its counters in slots [0, slots_used) and the
 * shared one. Events not yet delivered are the output buffer's (but for
 * the messages of packet out_seq ukprobe handled: all of a packet sent
 * on the socket, those before the cut of one written to the -o file),
 * then the rings' records [tail, head) (at most ring_recs). The reader
 * copies a record into the buffer, then says so in out_state (the
 * buffer's length, the ring and the position the record came from),
 * then moves the ring's tail past it: while the position is still the
 * ring's tail, the record is in both.
 */
#ifndef UKPROBE_REGION_H
#define UKPROBE_REGION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define UKP_REGION_MAGIC 0x6e6f696765726b75ULL /* "ukregion" */
#define UKP_REGION_VERSION 3
#define UKP_REGION_RINGS 128
#define UKP_REGION_SLOTS 256
#define UKP_REGION_IDS (1u << 20)
#define UKP_REGION_RING_MAX (16UL << 20) /* bytes of one ring's records, at most */

/* One thread's ring: written by its thread (the producer) and the agent's
 * reader (the consumer), read by ukprobe after the process ended. */
struct ukp_region_ring {
	/* the producer's (one cache line) */
	_Atomic uint64_t head;    /* records published */
	uint64_t tail_seen;       /* the consumer's tail, as last read */
	_Atomic uint64_t lost;    /* events dropped (ring full) */
	_Atomic int32_t writing;
	uint8_t stalled;          /* a wait for the reader timed out */
	uint8_t pad0[3];
	uint32_t comm_age;
	_Atomic int32_t owner;    /* tid, 0 when free, -1 while being set up */
	char comm[16];
	_Atomic uint64_t recs;    /* the agent's address of the records (not ukprobe's) */
	/* the consumer's, on a line of their own */
	_Atomic uint64_t tail __attribute__((aligned(64))); /* records written out */
	uint64_t end;             /* head seen at the start of a pass */
	uint64_t populated;       /* ring bytes committed */
} __attribute__((aligned(64)));

/* A record in a ring: what the thread writes at a hit (the fewer bytes,
 * the fewer cache lines each hit takes). Its payload follows, laid out
 * as the wire record's data. */
struct ukp_region_rec {
	uint64_t ts;              /* the counter, or CLOCK_MONOTONIC ns (head's use_counter) */
	uint64_t ip;              /* the probed address */
	uint64_t caller;          /* return probes: where the function returned to */
	uint32_t id;              /* the probe */
	uint32_t faults;          /* bit i: argument i could not be read */
	uint32_t len;             /* payload bytes, a multiple of 8 */
	int32_t cpu;
	unsigned char data[];
};
#define UKP_REGION_REC_HEADER 40

/* A compact record: where every event of the image is an entry probe's
 * without a payload (no arguments, stack or script data), its slots are
 * UKP_REGION_REC_COMPACT bytes (the head's rec_size, a RECS message's)
 * and hold only what differs per hit. The rest its probe implies: ip is
 * the probe's address (its PROBE message's), caller, faults and len are
 * 0. Its first 8 bytes are the timestamp, as a full record's. */
struct ukp_region_rec_compact {
	uint64_t ts;
	uint32_t id;
	int32_t cpu;
};
#define UKP_REGION_REC_COMPACT 16

/* A compact record with its caller: where every event of the image is
 * an entry or return probe's without a payload, its slots are
 * UKP_REGION_REC_CALLER bytes: a compact record's and where a return
 * went back to (0 for an entry). Its ip the probe implies as for a
 * compact record, but for a probe flagged UKP_PROBE_AT_FUNC (proto.h),
 * whose events' ip is its function's start (its PROBE message's func). */
struct ukp_region_rec_caller {
	uint64_t ts;
	uint64_t caller;
	uint32_t id;
	int32_t cpu;
};
#define UKP_REGION_REC_CALLER 24

/* Is rec_size (a head's, a RECS message's) a slot size a reader takes:
 * compact (with its caller or not), or a full record with a payload of
 * up to UKP_REC_PAYLOAD? */
static inline bool ukp_region_rec_size_ok(uint64_t rec_size)
{
	return rec_size == UKP_REGION_REC_COMPACT || rec_size == UKP_REGION_REC_CALLER ||
	       (rec_size >= UKP_REGION_REC_HEADER &&
		rec_size <= UKP_REGION_REC_HEADER + UKP_REC_PAYLOAD && !(rec_size & 7));
}

/* Does a slot of rec_size bytes hold a compact record (of either form)? */
static inline bool ukp_region_rec_is_compact(uint64_t rec_size)
{
	return rec_size == UKP_REGION_REC_COMPACT || rec_size == UKP_REGION_REC_CALLER;
}

/* The probe id of the compact record in slot (of rec_size bytes, 8-byte
 * aligned). May run anywhere. */
static inline uint32_t ukp_region_rec_compact_id(const void *slot, uint64_t rec_size)
{
	uint32_t id;

	__builtin_memcpy(&id, (const unsigned char *)slot +
				      (rec_size == UKP_REGION_REC_CALLER
					       ? offsetof(struct ukp_region_rec_caller, id)
					       : offsetof(struct ukp_region_rec_compact, id)),
			 sizeof(id));
	return id;
}

/* The full record (no payload) of compact record c, whose probe is at
 * ip (0 when its id names no probe known: the event is then refused
 * where an unknown id is). May run anywhere: it only copies. */
static inline void ukp_region_rec_expand(const struct ukp_region_rec_compact *c, uint64_t ip,
					 struct ukp_region_rec *out)
{
	out->ts = c->ts;
	out->ip = ip;
	out->caller = 0;
	out->id = c->id;
	out->faults = 0;
	out->len = 0;
	out->cpu = c->cpu;
}

/* The full record (no payload) of the compact record in slot, of
 * rec_size bytes (ukp_region_rec_is_compact), whose event's ip is ip
 * (ukp_region_rec_expand's). May run anywhere: it only copies. */
static inline void ukp_region_rec_expand_slot(const void *slot, uint64_t rec_size, uint64_t ip,
					      struct ukp_region_rec *out)
{
	struct ukp_region_rec_compact c;
	uint64_t caller = 0;

	if (rec_size == UKP_REGION_REC_CALLER) {
		struct ukp_region_rec_caller k;

		__builtin_memcpy(&k, slot, sizeof(k));
		c.ts = k.ts;
		c.id = k.id;
		c.cpu = k.cpu;
		caller = k.caller;
	} else {
		__builtin_memcpy(&c, slot, sizeof(c));
	}
	ukp_region_rec_expand(&c, ip, out);
	out->caller = caller;
}

struct ukp_region_head {
	uint64_t magic;           /* UKP_REGION_MAGIC */
	uint32_t version;         /* UKP_REGION_VERSION */
	uint32_t head_size;       /* sizeof(struct ukp_region_head) */
	uint32_t ring_size;       /* sizeof(struct ukp_region_ring) */
	uint32_t rings, slots, ids;
	int32_t pid;
	uint32_t pad;
	uint64_t rings_off, counts_off, recs_off, ring_stride, size;
	/* set when the image starts tracing (0 until then: no rings) */
	uint64_t rec_size;        /* bytes of one record slot */
	uint64_t ring_recs;       /* slots per ring, a power of two */
	/* timestamps: 1 when records hold counter readings, which are
	 * cal_ns0 + (ts - cal_cnt0) * cal_mult / 2^32 ns (the reader keeps
	 * cal_mult up to date); 0 when they are CLOCK_MONOTONIC ns */
	uint32_t use_counter;
	_Atomic uint32_t slots_used; /* count slots claimed so far: [0, slots_used) */
	_Atomic uint64_t cal_cnt0, cal_ns0, cal_mult;
	/* events lost besides the rings' own */
	_Atomic uint64_t lost_other;
	_Atomic uint64_t out_state; /* UKP_REGION_OUT_*() */
	_Atomic uint32_t out_seq;   /* the buffer's packet number (from 1) */
	/* ukprobe run, launched: 1 when ukprobe has written out "Attaching"
	 * and BEGIN's output (the agent waits for it before main()) */
	_Atomic uint32_t begun;
	_Atomic int32_t slot_owner[UKP_REGION_SLOTS]; /* tid, 0 free, -1 being set up */
};

/* One hist trigger's table (agent/hist_hit.c): size entries of esize
 * bytes at off in the file, each the wire's entry (common/proto.h's
 * UKPM_HIST) but for its counts: state (2 when in use), the maker's
 * identity, its hits and the others', nvals sums of the maker's then
 * nvals of the others', then the wire entry's bytes from its comm on
 * (at tail). */
struct ukp_region_hist {
	uint32_t spec;            /* the SPEC's index */
	uint32_t size;            /* entries; 0: no table (the list's end) */
	uint32_t esize, tail, nvals, wsize; /* wsize: the wire's entry size */
	uint64_t off;
	_Atomic uint64_t dropped; /* hits that found no entry */
};

#define UKP_REGION_SLOT_BYTES ((uint64_t)UKP_REGION_IDS * sizeof(uint64_t))

/* The layout both ends compute (and ukprobe checks against the header). */
#define UKP_REGION_RINGS_OFF \
	((((uint64_t)sizeof(struct ukp_region_head)) + 4095) & ~(uint64_t)4095)
#define UKP_REGION_COUNTS_OFF \
	((UKP_REGION_RINGS_OFF + UKP_REGION_RINGS * sizeof(struct ukp_region_ring) + 4095) & \
	 ~(uint64_t)4095)
#define UKP_REGION_RECS_OFF \
	(UKP_REGION_COUNTS_OFF + (UKP_REGION_SLOTS + 1) * UKP_REGION_SLOT_BYTES)
#define UKP_REGION_OUT_OFF (UKP_REGION_RECS_OFF + UKP_REGION_RINGS * UKP_REGION_RING_MAX)
#define UKP_REGION_OUT_BYTES (1UL << 20)
#define UKP_REGION_HISTS 4096
#define UKP_REGION_HISTS_OFF (UKP_REGION_OUT_OFF + UKP_REGION_OUT_BYTES)
#define UKP_REGION_HIST_TABLES_OFF \
	((UKP_REGION_HISTS_OFF + UKP_REGION_HISTS * sizeof(struct ukp_region_hist) + 4095) & \
	 ~(uint64_t)4095)
#define UKP_REGION_HIST_BYTES (1ULL << 32) /* the tables' room (sparse) */
#define UKP_REGION_SIZE (UKP_REGION_HIST_TABLES_OFF + UKP_REGION_HIST_BYTES)
/* out_state: the buffer's bytes, and where its last event came from
 * (ring UKP_REGION_OUT_NONE: the last message is not an event) */
#define UKP_REGION_OUT_NONE 0xffu
#define UKP_REGION_OUT_STATE(len, ring, pos) \
	((uint64_t)(len) | (uint64_t)(ring) << 21 | (uint64_t)(pos) << 29)
#define UKP_REGION_OUT_LEN(s) ((s) & 0x1fffff)
#define UKP_REGION_OUT_RING(s) (((s) >> 21) & 0xff)
#define UKP_REGION_OUT_POS(s) ((s) >> 29)
#define UKP_REGION_OUT_POS_MASK ((1ULL << 35) - 1)

/* The wire's record (common/proto.h) of the ring record s, whose
 * payload is in s->data, with ts in ns (ts_ns), of thread tid named comm
 * (UKP_COMM_LEN bytes). False when s is no record (damaged: a length out
 * of bounds). May run anywhere: it only copies. */
static inline bool ukp_rec_of(const struct ukp_region_rec *s, int32_t tid, const char *comm,
			      uint64_t ts_ns, struct ukp_rec *out)
{
	uint32_t i;

	if (s->len > UKP_REC_PAYLOAD || (s->len & 7))
		return false;
	out->h.type = UKPM_EVENT;
	out->h.len = UKP_REC_HEADER + s->len;
	out->ts = ts_ns;
	out->ip = s->ip;
	out->caller = s->caller;
	out->tid = tid;
	out->cpu = s->cpu;
	out->id = s->id;
	out->faults = s->faults;
	for (i = 0; i < sizeof(out->comm); i++)
		out->comm[i] = comm[i];
	for (i = 0; i < s->len; i++)
		out->data[i] = s->data[i];
	return true;
}

/* The wire's record of ring r's record s: the tid is the ring's owner,
 * the name the one the ring holds now (its thread looks at it every few
 * hundred hits). */
static inline bool ukp_region_rec_event(const struct ukp_region_rec *s,
					const struct ukp_region_ring *r, uint64_t ts_ns,
					struct ukp_rec *out)
{
	return ukp_rec_of(s, r->owner, r->comm, ts_ns, out);
}

/* A counter reading in ns, on the line through (cnt0, ns0) of slope
 * mult / 2^32 ns per tick (the region's header, a RECS message). */
static inline uint64_t ukp_counter_ns(uint64_t cnt, uint64_t cnt0, uint64_t ns0, uint64_t mult)
{
	if (cnt >= cnt0)
		return ns0 + (uint64_t)(((unsigned __int128)(cnt - cnt0) * mult) >> 32);
	return ns0 - (uint64_t)(((unsigned __int128)(cnt0 - cnt) * mult) >> 32);
}

#endif /* UKPROBE_REGION_H */
