/* SPDX-License-Identifier: MIT */
/*
 * trace_recs.c - the RECS messages of a records file (common/proto.h,
 * struct ukp_msg_recs): spans of the agent's rings as the rings held
 * them, which the agent's reader wrote without converting a record.
 * The spans of one packet are one pass of the reader: their records
 * become EVENTs merged by timestamp exactly as the reader merges the
 * rings for the socket (agent/ring.c, drain_pass_socket), so that the
 * report shows the events a live trace shows, in the same order. Every
 * byte is the file's: each span's header and each record are checked
 * before use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "region.h"
#include "session.h"
#include "trace_recs.h"

/* The bytes of a slot read at most: a record's header and its largest
 * payload. */
#define SLOT_MAX (UKP_REGION_REC_HEADER + UKP_REC_PAYLOAD)

bool ukp_recs_head(const char *p, uint32_t len, struct ukp_msg_recs *m)
{
	if (len < sizeof(*m))
		return false;
	memcpy(m, p, sizeof(*m));
	return m->h.type == UKPM_RECS && m->h.len == len && m->ring_no < UKP_REGION_RINGS &&
	       ukp_region_rec_size_ok(m->rec_size) && m->n &&
	       (uint64_t)m->n * m->rec_size == (uint64_t)len - sizeof(*m);
}

int ukp_recs_take(struct ukp_recs_group *g, struct ukp_session *s, struct ukp_image *img,
		  const char *p, uint32_t len, const struct ukp_session_ops *ops, void *arg)
{
	struct ukp_recs_span *sp;
	struct ukp_msg_recs m;

	if (!ukp_recs_head(p, len, &m))
		return -1;
	/* (the spans of one image's packet: more than its rings are not
	 * one pass) */
	if (g->n && (g->img != img || g->n == UKP_REGION_RINGS) && ukp_recs_flush(g, s, ops, arg))
		return -1;
	g->img = img;
	sp = &g->spans[g->n++];
	sp->m = m;
	sp->recs = (const unsigned char *)p + sizeof(m);
	sp->at = 0;
	/* which of the ring's records ukprobe has, should the image have
	 * ended before its reader moved the ring's tail (region.c) */
	if (img->in_seq) {
		if (!img->seq_ends && !(img->seq_ends = calloc(UKP_REGION_RINGS, sizeof(uint64_t))))
			return -1;
		img->seq_ends[m.ring_no] = m.pos + m.n;
		img->seq_ends_set[m.ring_no / 64] |= 1ULL << (m.ring_no % 64);
		img->seq_msgs++; /* (as ukp_images_handle counts a message) */
	}
	return 0;
}

static uint64_t ts_at(const struct ukp_recs_span *sp)
{
	uint64_t ts;

	memcpy(&ts, sp->recs + (size_t)sp->at * sp->m.rec_size, sizeof(ts));
	return ts;
}

/* Span sp's next record as an EVENT: 0, or -1 when it is no record of
 * this image. */
static int emit(struct ukp_recs_group *g, struct ukp_session *s, struct ukp_recs_span *sp,
		const struct ukp_session_ops *ops, void *arg)
{
	uint64_t slot[SLOT_MAX / 8];
	const struct ukp_region_rec *r = (const struct ukp_region_rec *)(void *)slot;
	struct ukp_rec rec;
	uint64_t ns;

	memcpy(slot, sp->recs + (size_t)sp->at * sp->m.rec_size, sp->m.rec_size);
	sp->at++;
	if (ukp_region_rec_is_compact(sp->m.rec_size)) {
		struct ukp_region_rec full;

		ukp_region_rec_expand_slot(slot, sp->m.rec_size,
					   ukp_image_event_ip(g->img, ukp_region_rec_compact_id(
									      slot, sp->m.rec_size)),
					   &full);
		memcpy(slot, &full, sizeof(full));
	} else if (UKP_REGION_REC_HEADER + (uint64_t)r->len > sp->m.rec_size)
		return -1;
	ns = sp->m.use_counter ? ukp_counter_ns(r->ts, sp->m.cal_cnt0, sp->m.cal_ns0,
						 sp->m.cal_mult)
			       : r->ts;
	if (!ukp_rec_of(r, sp->m.tid, sp->m.comm, ns, &rec))
		return -1;
	memset(rec.data + r->len, 0, sizeof(rec.data) - r->len);
	return ukp_images_event(s, g->img, &rec, ops, arg);
}

int ukp_recs_flush(struct ukp_recs_group *g, struct ukp_session *s,
		   const struct ukp_session_ops *ops, void *arg)
{
	struct ukp_recs_span *act[UKP_REGION_RINGS];
	size_t nact = 0, i;
	int ret = 0;

	for (i = 0; i < g->n; i++)
		act[nact++] = &g->spans[i];
	g->n = 0;
	/* the reader's merge: the lowest timestamp first; of equal ones,
	 * the first in act, where an exhausted span's place goes to the
	 * last */
	while (nact && !ret) {
		size_t best = 0;
		uint64_t bts = ts_at(act[0]);

		for (i = 1; i < nact; i++) {
			uint64_t t = ts_at(act[i]);

			if (t < bts) {
				bts = t;
				best = i;
			}
		}
		ret = emit(g, s, act[best], ops, arg);
		if (act[best]->at == act[best]->m.n)
			act[best] = act[--nact];
	}
	return ret;
}

int ukp_records_head_write(int fd, const char *what)
{
	struct ukp_msg_records_head h = { .h = { UKPM_RECORDS_HEAD, sizeof(h) }, .end = sizeof(h) };

	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		ukp_err("cannot write %s: %s", what, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

void ukp_records_whole(const char *p, size_t *size, size_t *pos)
{
	struct ukp_msg_records_head h;

	*pos = 0;
	if (*size < sizeof(h))
		return;
	memcpy(&h, p, sizeof(h));
	if (h.h.type != UKPM_RECORDS_HEAD || h.h.len != sizeof(h))
		return;
	*pos = sizeof(h);
	/* (past end: a packet cut short by its process's end, not read) */
	if (h.end >= sizeof(h) && h.end <= *size)
		*size = (size_t)h.end;
}
