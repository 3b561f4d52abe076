/* SPDX-License-Identifier: MIT */
/* trace_recs.h - the records file's RECS messages as events (trace_recs.c). */
#ifndef UKPROBE_TRACE_RECS_H
#define UKPROBE_TRACE_RECS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "region.h"

struct ukp_session;
struct ukp_image;
struct ukp_session_ops;

struct ukp_recs_span {
	struct ukp_msg_recs m;          /* its header, checked */
	const unsigned char *recs;      /* m.n slots of m.rec_size bytes */
	uint32_t at;                    /* the next one */
};

/* The RECS messages of one packet so far (one pass of the reader). */
struct ukp_recs_group {
	struct ukp_image *img;
	size_t n;
	struct ukp_recs_span spans[UKP_REGION_RINGS];
};

/* Is p[0..len) a RECS message whose sizes agree (its header in *m)? */
bool ukp_recs_head(const char *p, uint32_t len, struct ukp_msg_recs *m);
/* A RECS message of img (p stays readable until the group is flushed):
 * into g. 0, or -1 when it is damaged. */
int ukp_recs_take(struct ukp_recs_group *g, struct ukp_session *s, struct ukp_image *img,
		  const char *p, uint32_t len, const struct ukp_session_ops *ops, void *arg);
/* The group's records as events, merged by timestamp; g is empty then.
 * 0, or -1 at a record that is damaged or names no probe (the rest of
 * the group is not shown). */
int ukp_recs_flush(struct ukp_recs_group *g, struct ukp_session *s,
		   const struct ukp_session_ops *ops, void *arg);

/* A new records file (fd, empty): its RECORDS_HEAD (proto.h), which the
 * agents move as they write. 0, or -1 (said why). */
int ukp_records_head_write(int fd, const char *what);
/* The records file p[0..*size): *size becomes the end of its whole
 * packets, *pos where the first starts (a file without RECORDS_HEAD, a
 * recording of an older build, is whole). */
void ukp_records_whole(const char *p, size_t *size, size_t *pos);

#endif /* UKPROBE_TRACE_RECS_H */
