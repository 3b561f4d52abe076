/* SPDX-License-Identifier: MIT */
/*
 * A ring's record (common/region.h, struct ukp_region_rec) as the
 * agent's reader and ukprobe's region reader turn it into the wire's
 * record (struct ukp_rec): every field where the wire has it, the
 * ring's tid and name, the payload's bytes and no more; a record whose
 * length is out of bounds is refused.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "region.h"

_Static_assert(sizeof(struct ukp_region_rec) == UKP_REGION_REC_HEADER, "ring record header");
/* a record's payload is where the wire's is, 8-aligned */
_Static_assert(offsetof(struct ukp_region_rec, data) % 8 == 0, "payload alignment");

static uint64_t slot[(UKP_REGION_REC_HEADER + UKP_REC_PAYLOAD + 8) / 8];

static struct ukp_region_rec *filled(uint32_t len)
{
	struct ukp_region_rec *s = (struct ukp_region_rec *)(void *)slot;
	uint32_t i;

	memset(slot, 0xa5, sizeof(slot));
	s->ts = 123456789;
	s->ip = 0x401000;
	s->caller = 0x402345;
	s->id = 77;
	s->faults = 0x5;
	s->len = len;
	s->cpu = 3;
	for (i = 0; i < len; i++)
		s->data[i] = (unsigned char)(i * 7 + 1);
	return s;
}

static void ring_of(struct ukp_region_ring *r)
{
	memset(r, 0, sizeof(*r));
	r->owner = 4242;
	memcpy(r->comm, "worker-thread-1", 16);
}

Test(region_rec, expands_every_field)
{
	struct ukp_region_ring r;
	struct ukp_rec out;
	struct ukp_region_rec *s = filled(24);
	uint32_t i;

	ring_of(&r);
	memset(&out, 0xee, sizeof(out));
	cr_assert(ukp_region_rec_event(s, &r, 999000111, &out));
	cr_assert_eq(out.h.type, UKPM_EVENT);
	cr_assert_eq(out.h.len, UKP_REC_HEADER + 24);
	cr_assert_eq(out.ts, 999000111); /* the ns given, not the counter */
	cr_assert_eq(out.ip, 0x401000);
	cr_assert_eq(out.caller, 0x402345);
	cr_assert_eq(out.tid, 4242);
	cr_assert_eq(out.cpu, 3);
	cr_assert_eq(out.id, 77);
	cr_assert_eq(out.faults, 0x5);
	cr_assert_eq(memcmp(out.comm, "worker-thread-1", 16), 0);
	for (i = 0; i < 24; i++)
		cr_assert_eq(out.data[i], (unsigned char)(i * 7 + 1), "payload byte %u", i);
	/* nothing past the payload is written */
	cr_assert_eq(out.data[24], 0xee);
}

Test(region_rec, largest_payload)
{
	struct ukp_region_ring r;
	struct ukp_rec out;

	ring_of(&r);
	cr_assert(ukp_region_rec_event(filled(UKP_REC_PAYLOAD), &r, 1, &out));
	cr_assert_eq(out.h.len, UKP_REC_SIZE);
	cr_assert_eq(out.data[UKP_REC_PAYLOAD - 1], (unsigned char)((UKP_REC_PAYLOAD - 1) * 7 + 1));
}

Test(region_rec, refuses_bad_lengths)
{
	struct ukp_region_ring r;
	struct ukp_rec out;

	ring_of(&r);
	cr_assert_not(ukp_region_rec_event(filled(UKP_REC_PAYLOAD + 8), &r, 1, &out));
	cr_assert_not(ukp_region_rec_event(filled(12), &r, 1, &out)); /* not a multiple of 8 */
	cr_assert(ukp_region_rec_event(filled(0), &r, 1, &out));
	cr_assert_eq(out.h.len, UKP_REC_HEADER);
}

/* A compact record (an entry probe's without a payload) is the full one
 * with its probe's address, no caller, faults or payload. */
Test(region_rec, compact_expands_to_the_full_record)
{
	struct ukp_region_rec_compact c = { .ts = 555, .id = 9, .cpu = 1 };
	struct ukp_region_ring r;
	struct ukp_rec out;
	struct ukp_region_rec *s = filled(16);

	_Static_assert(sizeof(c) == UKP_REGION_REC_COMPACT, "compact record size");
	_Static_assert(offsetof(struct ukp_region_rec_compact, ts) ==
			       offsetof(struct ukp_region_rec, ts),
		       "the timestamp where a full record has it (the merges read it so)");
	ring_of(&r);
	ukp_region_rec_expand(&c, 0x401230, s);
	cr_assert(ukp_region_rec_event(s, &r, 777, &out));
	cr_assert_eq(out.h.len, UKP_REC_HEADER);
	cr_assert_eq(out.ts, 777);
	cr_assert_eq(out.ip, 0x401230);
	cr_assert_eq(out.caller, 0);
	cr_assert_eq(out.id, 9);
	cr_assert_eq(out.faults, 0);
	cr_assert_eq(out.cpu, 1);
	cr_assert_eq(out.tid, 4242);
	cr_assert_eq(s->ts, 555);
}

/* A compact record with its caller (an entry's or a return's without a
 * payload) is the full one with the ip given, its caller, no faults or
 * payload; the 16-byte form expands through the same call. */
Test(region_rec, compact_with_caller_expands_to_the_full_record)
{
	struct ukp_region_rec_caller k = { .ts = 555, .caller = 0x402468, .id = 9, .cpu = 1 };
	struct ukp_region_rec_compact c = { .ts = 556, .id = 10, .cpu = 2 };
	uint64_t slot_k[3], slot_c[2];
	struct ukp_region_ring r;
	struct ukp_rec out;
	struct ukp_region_rec *s = filled(16);

	_Static_assert(sizeof(k) == UKP_REGION_REC_CALLER, "compact record with caller size");
	_Static_assert(offsetof(struct ukp_region_rec_caller, ts) ==
			       offsetof(struct ukp_region_rec, ts),
		       "the timestamp where a full record has it (the merges read it so)");
	memcpy(slot_k, &k, sizeof(k));
	memcpy(slot_c, &c, sizeof(c));
	cr_assert(ukp_region_rec_is_compact(UKP_REGION_REC_CALLER));
	cr_assert(ukp_region_rec_is_compact(UKP_REGION_REC_COMPACT));
	cr_assert_not(ukp_region_rec_is_compact(UKP_REGION_REC_HEADER));
	cr_assert_eq(ukp_region_rec_compact_id(slot_k, UKP_REGION_REC_CALLER), 9);
	cr_assert_eq(ukp_region_rec_compact_id(slot_c, UKP_REGION_REC_COMPACT), 10);
	ring_of(&r);
	ukp_region_rec_expand_slot(slot_k, UKP_REGION_REC_CALLER, 0x401230, s);
	cr_assert(ukp_region_rec_event(s, &r, 777, &out));
	cr_assert_eq(out.h.len, UKP_REC_HEADER);
	cr_assert_eq(out.ts, 777);
	cr_assert_eq(out.ip, 0x401230);
	cr_assert_eq(out.caller, 0x402468);
	cr_assert_eq(out.id, 9);
	cr_assert_eq(out.faults, 0);
	cr_assert_eq(out.cpu, 1);
	cr_assert_eq(s->ts, 555);
	s = filled(16);
	ukp_region_rec_expand_slot(slot_c, UKP_REGION_REC_COMPACT, 0x401240, s);
	cr_assert(ukp_region_rec_event(s, &r, 778, &out));
	cr_assert_eq(out.ip, 0x401240);
	cr_assert_eq(out.caller, 0);
	cr_assert_eq(out.id, 10);
	cr_assert_eq(out.cpu, 2);
	cr_assert_eq(out.faults, 0);
	cr_assert_eq(out.h.len, UKP_REC_HEADER);
}

/* The slot sizes a reader takes: compact (with its caller or not), or a
 * full record's header and a payload of 8-byte words up to the largest. */
Test(region_rec, slot_sizes)
{
	cr_assert(ukp_region_rec_size_ok(UKP_REGION_REC_COMPACT));
	cr_assert(ukp_region_rec_size_ok(UKP_REGION_REC_CALLER));
	cr_assert(ukp_region_rec_size_ok(UKP_REGION_REC_HEADER));
	cr_assert(ukp_region_rec_size_ok(UKP_REGION_REC_HEADER + UKP_REC_PAYLOAD));
	cr_assert_not(ukp_region_rec_size_ok(0));
	cr_assert_not(ukp_region_rec_size_ok(8));
	cr_assert_not(ukp_region_rec_size_ok(32));
	cr_assert_not(ukp_region_rec_size_ok(UKP_REGION_REC_HEADER + 4));
	cr_assert_not(ukp_region_rec_size_ok(UKP_REGION_REC_HEADER + UKP_REC_PAYLOAD + 8));
}
