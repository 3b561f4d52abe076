/* SPDX-License-Identifier: MIT */
/*
 * region.c - the images' regions (common/region.h): the memfd each
 * image's agent counts and buffers its events in, which it sends with
 * its HELLO. An image that ends with END has sent everything, and its
 * region is closed then. One that ended without (killed, a fatal signal,
 * abort, a raw exit_group, an _exit that could not wait) is read here
 * once its process is gone: its counts become its STAT messages, its
 * hist triggers' tables its HIST messages, and the
 * events its reader had not written out become EVENT messages, all
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
#include "session.h"
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

void ukp_region_begun(struct ukp_image *img)
{
	uint32_t one = 1;

	/* the agent polls the word in its mapping of the same file */
	if (img->has_region &&
	    pwrite(img->region_fd, &one, sizeof(one), offsetof(struct ukp_region_head, begun)) !=
		    (ssize_t)sizeof(one))
		ukp_warn("cannot tell the program to start: %s", strerror(errno));
}

void ukp_region_drop(struct ukp_image *img)
{
	if (img->has_region)
		close(img->region_fd);
	img->has_region = false;
}

/* ------------------------------------------------------- recovery */

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
	       h->pid == img->own_pid && h->slots_used <= UKP_REGION_SLOTS;
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

/* One table's entries (esize bytes each, the wire's from tail on) as
 * HIST messages, the first with the totals. */
static void recover_hist(struct out *o, const struct ukp_region_hist *d,
			 const unsigned char *tab)
{
	union {
		struct ukp_msg_hist m;
		unsigned char buf[UKP_MSG_MAX];
	} u;
	size_t per = (sizeof(u) - sizeof(u.m)) / d->wsize, n = 0;
	uint64_t hits = 0, v;
	uint32_t i, k;
	bool first = true;

	for (i = 0; i < d->size; i++) {
		const unsigned char *e = tab + (size_t)i * d->esize;

		memcpy(&v, e, 8);
		if (v != 2)
			continue;
		memcpy(&v, e + 16, 8);
		hits += v;
		memcpy(&v, e + 24, 8);
		hits += v;
	}
	for (i = 0;; i++) {
		const unsigned char *e = i < d->size ? tab + (size_t)i * d->esize : NULL;

		if (e && (memcpy(&v, e, 8), v == 2)) {
			unsigned char *w = u.m.data + n * d->wsize;
			uint64_t a, b;

			memcpy(w, &v, 8);
			memcpy(&a, e + 16, 8);
			memcpy(&b, e + 24, 8);
			v = a + b;
			memcpy(w + 8, &v, 8);
			for (k = 0; k < d->nvals; k++) {
				memcpy(&a, e + 32 + 8 * k, 8);
				memcpy(&b, e + 32 + 8 * (d->nvals + k), 8);
				v = a + b;
				memcpy(w + 16 + 8 * k, &v, 8);
			}
			memcpy(w + 16 + 8 * d->nvals, e + d->tail, d->wsize - 16 - 8 * d->nvals);
			n++;
		}
		if (!e || n == per) {
			u.m.h.type = UKPM_HIST;
			u.m.h.len = (uint32_t)((sizeof(u.m) + n * d->wsize + 7) & ~(size_t)7);
			u.m.spec = d->spec;
			u.m.n = (uint32_t)n;
			u.m.entry_size = d->wsize;
			u.m.first = first;
			u.m.dropped = first ? d->dropped : 0;
			u.m.hits = first ? hits + d->dropped : 0;
			if (!e || n)
				out_put(o, &u, u.m.h.len);
			first = false;
			n = 0;
		}
		if (!e)
			break;
	}
}

/* The hist triggers' tables (common/region.h's list). */
static void recover_hists(struct out *o, int fd)
{
	struct ukp_region_hist d;
	uint32_t i;

	for (i = 0; i < UKP_REGION_HISTS; i++) {
		unsigned char *tab;
		size_t bytes;

		if (!read_at(fd, &d, sizeof(d), UKP_REGION_HISTS_OFF + i * sizeof(d)) || !d.size)
			return;
		/* (a damaged entry ends the list: the wire's entry is the
		 * counts, nvals sums and the comm and keys at tail) */
		if (d.size > (1u << 17) || d.nvals > 8 || d.wsize > 1024 ||
		    d.wsize < 16 + 8 * d.nvals || d.esize > 2048 ||
		    d.tail + (d.wsize - 16 - 8 * d.nvals) > d.esize ||
		    d.tail < 32 + 16 * d.nvals || d.off < UKP_REGION_HIST_TABLES_OFF)
			return;
		bytes = (size_t)d.size * d.esize;
		tab = malloc(bytes);
		if (tab && read_at(fd, tab, bytes, d.off))
			recover_hist(o, &d, tab);
		free(tab);
	}
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
	if (!h->use_counter)
		return ts;
	return ukp_counter_ns(ts, h->cal_cnt0, h->cal_ns0, h->cal_mult);
}

struct events {
	struct taken *v;
	size_t n, cap;
};

static struct taken *event_slot(struct events *e)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 1024;
		struct taken *nv = realloc(e->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		e->v = nv;
		e->cap = cap;
	}
	memset(&e->v[e->n], 0, sizeof(e->v[0]));
	e->v[e->n].order = e->n;
	return &e->v[e->n];
}

static bool is_event(const struct ukp_rec *r)
{
	return r->h.type == UKPM_EVENT && r->h.len >= UKP_REC_HEADER && r->h.len <= UKP_REC_SIZE &&
	       !(r->h.len & 7);
}

/* The reader's output buffer: the messages ukprobe has not handled (its
 * SYM messages go to the session now, as they would have), its events
 * into e. */
static void take_out(struct out *o, int fd, const struct ukp_region_head *h, struct events *e)
{
	uint64_t len = UKP_REGION_OUT_LEN(h->out_state), pos = 0, skip = 0;
	char *buf;

	if (o->img->seq == h->out_seq)
		skip = o->img->seq_msgs; /* sent, or cut short in the -o file */
	if (!len || len > UKP_REGION_OUT_BYTES || !(buf = malloc(len)))
		return;
	if (!read_at(fd, buf, len, UKP_REGION_OUT_OFF))
		len = 0;
	while (pos + sizeof(struct ukp_msg) <= len) {
		struct ukp_msg m;
		struct taken *t;

		memcpy(&m, buf + pos, sizeof(m));
		if (m.len < sizeof(m) || (m.len & 7) || m.len > len - pos || m.len > UKP_MSG_MAX)
			break; /* damaged: the rest is not taken */
		if (skip) {
			skip--;
		} else if (m.type == UKPM_SYM) {
			out_put(o, buf + pos, m.len);
		} else if (m.type == UKPM_EVENT && m.len <= sizeof(t->rec) && (t = event_slot(e))) {
			memcpy(&t->rec, buf + pos, m.len);
			if (is_event(&t->rec))
				e->n++;
		}
		pos += m.len;
	}
	free(buf);
}

/* The events the agent had not delivered, in time order: the reader's
 * output buffer's, then each ring's records after its tail (but the one
 * the buffer has, region.h). Returns the events the rings had dropped. */
static uint64_t recover_events(struct out *o, int fd, const struct ukp_region_head *h)
{
	uint64_t state = h->out_state, lost = 0;
	struct events e = { 0 };
	size_t k;
	int i;

	if (!ukp_region_rec_size_ok(h->rec_size) ||
	    !h->ring_recs || (h->ring_recs & (h->ring_recs - 1)) ||
	    h->ring_recs * h->rec_size > UKP_REGION_RING_MAX)
		return 0;
	take_out(o, fd, h, &e);
	for (i = 0; i < UKP_REGION_RINGS; i++) {
		struct ukp_region_ring r;
		uint64_t head, tail, x;

		if (!read_at(fd, &r, sizeof(r), UKP_REGION_RINGS_OFF + (uint64_t)i * sizeof(r)))
			break;
		lost += r.lost;
		head = r.head;
		tail = r.tail;
		if (head - tail > h->ring_recs)
			tail = head - h->ring_recs; /* (cannot be: the thread waits for room) */
		/* -o FILE: written to the file in packet out_seq, the tail
		 * not moved yet (the spans of that packet ukprobe read) */
		if (o->img->seq == h->out_seq && o->img->seq_ends &&
		    (o->img->seq_ends_set[i / 64] >> (i % 64) & 1) &&
		    o->img->seq_ends[i] - tail <= head - tail)
			tail = o->img->seq_ends[i];
		/* copied to the buffer, the tail not moved yet */
		if (UKP_REGION_OUT_LEN(state) && UKP_REGION_OUT_RING(state) == (uint64_t)i &&
		    UKP_REGION_OUT_POS(state) == (tail & UKP_REGION_OUT_POS_MASK) && tail != head)
			tail++;
		for (x = tail; x != head; x++) {
			uint64_t buf[(UKP_REGION_REC_HEADER + UKP_REC_PAYLOAD) / 8];
			const struct ukp_region_rec *slot = (const struct ukp_region_rec *)(void *)buf;
			struct taken *t = event_slot(&e);

			if (!t || !read_at(fd, buf, h->rec_size < sizeof(buf) ? h->rec_size : sizeof(buf),
					   UKP_REGION_RECS_OFF + (uint64_t)i * UKP_REGION_RING_MAX +
						   (x & (h->ring_recs - 1)) * h->rec_size))
				break;
			if (ukp_region_rec_is_compact(h->rec_size)) {
				struct ukp_region_rec full;

				ukp_region_rec_expand_slot(
					buf, h->rec_size,
					ukp_image_event_ip(o->img,
							   ukp_region_rec_compact_id(buf, h->rec_size)),
					&full);
				memcpy(buf, &full, sizeof(full));
			} else if (UKP_REGION_REC_HEADER + (uint64_t)slot->len > h->rec_size)
				continue; /* not a record: damaged */
			if (!ukp_region_rec_event(slot, &r, to_ns(h, slot->ts), &t->rec))
				continue; /* not a record: damaged */
			e.n++;
		}
	}
	if (e.n)
		qsort(e.v, e.n, sizeof(*e.v), by_time);
	for (k = 0; k < e.n; k++)
		out_put(o, &e.v[k].rec, e.v[k].rec.h.len);
	free(e.v);
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
		recover_hists(o, img->region_fd);
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
