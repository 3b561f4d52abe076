/* SPDX-License-Identifier: MIT */
/*
 * region.c - the images' regions (common/region.h): the memfd each
 * image's agent counts and buffers its events in, which it sends with
 * its HELLO. An image that ends with END has sent everything, and its
 * region is closed then. One that ended without (killed, a fatal signal,
 * abort, a raw exit_group, an _exit that could not wait) is read here
 * once its process is gone: its counts become its STAT messages and the
 * events its reader had not written out become EVENT messages, both
 * handled as if the agent had sent them (with trace -o, after the
 * records file's: the reader's write may have been cut short by the
 * end, and what it did write is not taken twice).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "region.h"

ssize_t ukp_region_recvmsg(struct ukp_session *s, int fd, void *buf, size_t cap, int flags,
			   bool *truncated)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(fd, &mh, flags | MSG_CMSG_CLOEXEC);

	*truncated = n > 0 && (mh.msg_flags & MSG_TRUNC);
	if (n < 0)
		return n;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			int rfd;

			memcpy(&rfd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			/* the packet's HELLO takes the first (ukp_images_handle) */
			if (!s->region_in && k == 0) {
				s->region_in = true;
				s->region_in_fd = rfd;
			} else {
				close(rfd);
			}
		}
	}
	return n;
}

void ukp_region_unclaimed(struct ukp_session *s)
{
	if (s->region_in)
		close(s->region_in_fd);
	s->region_in = false;
}

void ukp_region_take(struct ukp_session *s, struct ukp_image *img)
{
	if (!s->region_in)
		return;
	ukp_region_drop(img);
	img->has_region = true;
	img->region_fd = s->region_in_fd;
	s->region_in = false;
}

void ukp_region_drop(struct ukp_image *img)
{
	if (img->has_region)
		close(img->region_fd);
	img->has_region = false;
}

/* ------------------------------------------------------- recovery */

void ukp_region_count_event(struct ukp_image *img, int32_t tid)
{
	size_t i = img->tid_last;

	/* (a batch is mostly one thread's) */
	if (i >= img->ntids || img->tids[i].tid != tid)
		for (i = 0; i < img->ntids && img->tids[i].tid != tid; i++)
			;
	if (i == img->ntids) {
		if (img->ntids == img->tids_cap) {
			size_t cap = img->tids_cap ? 2 * img->tids_cap : 16;
			struct ukp_tid_count *n = realloc(img->tids, cap * sizeof(*n));

			if (!n)
				return;
			img->tids = n;
			img->tids_cap = cap;
		}
		img->tids[img->ntids++] = (struct ukp_tid_count){ tid, 0 };
	}
	img->tids[i].n++;
	img->tid_last = i;
}

/* EVENTs of tid handled so far. */
static uint64_t events_of(const struct ukp_image *img, int32_t tid)
{
	size_t i;

	for (i = 0; i < img->ntids; i++)
		if (img->tids[i].tid == tid)
			return img->tids[i].n;
	return 0;
}

static bool read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* Is the header the one this build's agent writes, of this process? */
static bool head_ok(const struct ukp_region_head *h, const struct ukp_image *img)
{
	return h->magic == UKP_REGION_MAGIC && h->version == UKP_REGION_VERSION &&
	       h->head_size == sizeof(*h) && h->ring_size == sizeof(struct ukp_region_ring) &&
	       h->rings == UKP_REGION_RINGS && h->slots == UKP_REGION_SLOTS &&
	       h->ids == UKP_REGION_IDS && h->rings_off == UKP_REGION_RINGS_OFF &&
	       h->counts_off == UKP_REGION_COUNTS_OFF && h->recs_off == UKP_REGION_RECS_OFF &&
	       h->ring_stride == UKP_REGION_RING_MAX && h->size == UKP_REGION_SIZE &&
	       h->pid == img->pid && h->slots_used <= UKP_REGION_SLOTS;
}

/* Messages of img, handled as a packet from its agent: FROM, then the
 * messages in buf[0..len). */
struct out {
	struct ukp_session *s;
	struct ukp_image *img;
	const struct ukp_session_ops *ops;
	void *arg;
	char buf[UKP_PACKET_MAX];
	size_t len;
};

static void out_flush(struct out *o)
{
	struct ukp_msg_from *f = (struct ukp_msg_from *)(void *)o->buf;

	if (o->len <= sizeof(*f))
		return;
	*f = (struct ukp_msg_from){ .h = { UKPM_FROM, sizeof(*f) }, .pid = o->img->pid,
				    .image = o->img->id };
	ukp_session_packet(o->s, o->buf, o->len, o->ops, o->arg);
	o->len = sizeof(*f);
}

static void out_put(struct out *o, const void *msg, size_t len)
{
	if (o->len + len > sizeof(o->buf))
		out_flush(o);
	memcpy(o->buf + o->len, msg, len);
	o->len += len;
}

/* The counts: STAT messages (MISSED is the agent's to say: 0 here). */
static void recover_counts(struct out *o, int fd, const struct ukp_region_head *h)
{
	size_t n = o->img->nprobes, k;
	uint64_t *sum = calloc(n ? n : 1, sizeof(*sum)), *part = calloc(n ? n : 1, sizeof(*part));
	uint32_t slot;

	if (!sum || !part || n > UKP_REGION_IDS)
		goto out;
	for (slot = 0; slot <= UKP_REGION_SLOTS; slot++) {
		if (slot >= h->slots_used && slot != UKP_REGION_SLOTS)
			continue;
		if (!read_at(fd, part, n * sizeof(*part),
			     UKP_REGION_COUNTS_OFF + slot * UKP_REGION_SLOT_BYTES))
			goto out;
		for (k = 0; k < n; k++)
			sum[k] += part[k];
	}
	for (k = 0; k < n; k++) {
		struct ukp_msg_stat m = { .h = { UKPM_STAT, sizeof(m) }, .id = (uint32_t)k };

		if (!o->img->probes[k].used)
			continue;
		m.hits = sum[k];
		if (o->img->probes[k].have_stat) /* it sent them: MISSED is known */
			m.missed = o->img->probes[k].missed;
		out_put(o, &m, sizeof(m));
	}
out:
	free(sum);
	free(part);
}

struct taken {
	struct ukp_rec rec;
	size_t order;
};

static int by_time(const void *a, const void *b)
{
	const struct taken *x = a, *y = b;

	if (x->rec.ts != y->rec.ts)
		return x->rec.ts < y->rec.ts ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static uint64_t to_ns(const struct ukp_region_head *h, uint64_t ts)
{
	uint64_t c0 = h->cal_cnt0, n0 = h->cal_ns0, mult = h->cal_mult;

	if (!h->use_counter)
		return ts;
	if (ts >= c0)
		return n0 + (uint64_t)(((unsigned __int128)(ts - c0) * mult) >> 32);
	return n0 - (uint64_t)(((unsigned __int128)(c0 - ts) * mult) >> 32);
}

/* The events the agent's reader had not written out, in time order.
 * A ring's records are its thread's events from the first (its index
 * restarts when the ring goes to another thread): those before tail,
 * and those ukprobe already handled (the reader wrote them, but the
 * process ended before it said so), are not taken again. Returns the
 * events the rings had dropped. */
static uint64_t recover_events(struct out *o, int fd, const struct ukp_region_head *h)
{
	struct taken *all = NULL;
	size_t n = 0, cap = 0, k;
	uint64_t lost = 0;
	int i;

	if (!h->rec_size || h->rec_size > UKP_REGION_RING_MAX || h->rec_size < UKP_REC_HEADER ||
	    !h->ring_recs || (h->ring_recs & (h->ring_recs - 1)) ||
	    h->ring_recs * h->rec_size > UKP_REGION_RING_MAX)
		return 0;
	for (i = 0; i < UKP_REGION_RINGS; i++) {
		struct ukp_region_ring r;
		uint64_t head, tail, x;

		if (!read_at(fd, &r, sizeof(r), UKP_REGION_RINGS_OFF + (uint64_t)i * sizeof(r)))
			break;
		lost += r.lost;
		head = r.head;
		tail = r.tail;
		if (r.owner > 0 && events_of(o->img, r.owner) > tail &&
		    events_of(o->img, r.owner) - tail <= head - tail)
			tail = events_of(o->img, r.owner);
		if (head - tail > h->ring_recs)
			tail = head - h->ring_recs; /* (cannot be: the thread waits for room) */
		for (x = tail; x != head; x++) {
			struct taken *t;

			if (n == cap) {
				struct taken *na = realloc(all, (cap ? cap * 2 : 1024) * sizeof(*all));

				if (!na)
					goto out;
				all = na;
				cap = cap ? cap * 2 : 1024;
			}
			t = &all[n];
			memset(&t->rec, 0, sizeof(t->rec));
			if (!read_at(fd, &t->rec,
				     h->rec_size < sizeof(t->rec) ? h->rec_size : sizeof(t->rec),
				     UKP_REGION_RECS_OFF + (uint64_t)i * UKP_REGION_RING_MAX +
					     (x & (h->ring_recs - 1)) * h->rec_size))
				break;
			if (t->rec.h.type != UKPM_EVENT || t->rec.h.len < UKP_REC_HEADER ||
			    t->rec.h.len > UKP_REC_SIZE || (t->rec.h.len & 7))
				continue; /* not a record: damaged */
			t->rec.ts = to_ns(h, t->rec.ts);
			t->order = n++;
		}
	}
	qsort(all, n, sizeof(*all), by_time);
	for (k = 0; k < n; k++)
		out_put(o, &all[k].rec, all[k].rec.h.len);
out:
	free(all);
	return lost;
}

/* The header of img's region, if it is one this build's agent wrote for
 * that process; else its region is dropped. */
static bool region_head(struct ukp_image *img, struct ukp_region_head *h)
{
	if (read_at(img->region_fd, h, sizeof(*h), 0) && head_ok(h, img))
		return true;
	ukp_region_drop(img);
	return false;
}

static void recover_image_events(struct ukp_session *s, struct ukp_image *img,
				 const struct ukp_session_ops *ops, void *arg, struct out *o)
{
	struct ukp_region_head h;

	if (!region_head(img, &h))
		return;
	*o = (struct out){ .s = s, .img = img, .ops = ops, .arg = arg };
	o->len = sizeof(struct ukp_msg_from);
	img->lost += recover_events(o, img->region_fd, &h) + h.lost_other;
	out_flush(o);
}

void ukp_region_recover(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg)
{
	struct out *o = malloc(sizeof(*o));
	size_t i;

	if (!o)
		return;
	for (i = 0; i < s->nimages; i++) {
		struct ukp_image *img = s->images[i];
		struct ukp_region_head h;

		if (!img->has_region || img->ended || !img->hello || img->setup_failed ||
		    img->recovered || !region_head(img, &h))
			continue;
		*o = (struct out){ .s = s, .img = img, .ops = ops, .arg = arg };
		o->len = sizeof(struct ukp_msg_from);
		recover_counts(o, img->region_fd, &h);
		out_flush(o);
		img->recovered = true;
		/* trace -o: the events once the file is formatted (the
		 * events it holds are counted then) */
		if (s->mode == UKP_MODE_TRACE && !s->raw_file)
			recover_image_events(s, img, ops, arg, o);
		if (s->mode != UKP_MODE_TRACE || !s->raw_file)
			ukp_region_drop(img);
	}
	free(o);
}

void ukp_region_recover_events(struct ukp_session *s, const struct ukp_session_ops *ops,
			       void *arg)
{
	struct out *o = malloc(sizeof(*o));
	size_t i;

	if (!o)
		return;
	for (i = 0; i < s->nimages; i++) {
		struct ukp_image *img = s->images[i];

		if (!img->has_region || !img->recovered)
			continue;
		recover_image_events(s, img, ops, arg, o);
		ukp_region_drop(img);
	}
	free(o);
}
