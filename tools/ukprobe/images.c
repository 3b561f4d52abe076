/* SPDX-License-Identifier: MIT */
/*
 * images.c - what ukprobe knows about each process image the agent runs
 * in (proto.h): its probes, the addresses it announced, its counts and
 * how it ended; and what became of each SPEC over all of them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "target.h"

/* ----------------------------------------------------- address map */

struct ukp_addrmap {
	uint64_t *keys;   /* 0 = empty */
	char **vals;
	size_t cap, n;
};

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

static int addrmap_put(struct ukp_addrmap **mp, uint64_t key, const char *text)
{
	struct ukp_addrmap *m = *mp;
	size_t i;

	if (!key)
		return 0;
	if (!m) {
		m = *mp = calloc(1, sizeof(*m));
		if (!m)
			return -1;
	}
	if ((m->n + 1) * 2 > m->cap) {
		struct ukp_addrmap nm = { 0 };
		size_t k;

		nm.cap = m->cap ? m->cap * 2 : 256;
		nm.keys = calloc(nm.cap, sizeof(*nm.keys));
		nm.vals = calloc(nm.cap, sizeof(*nm.vals));
		if (!nm.keys || !nm.vals) {
			free(nm.keys);
			free(nm.vals);
			return -1;
		}
		for (k = 0; k < m->cap; k++) {
			if (!m->keys[k])
				continue;
			for (i = slot_of(m->keys[k], nm.cap); nm.keys[i]; i = (i + 1) & (nm.cap - 1))
				;
			nm.keys[i] = m->keys[k];
			nm.vals[i] = m->vals[k];
		}
		nm.n = m->n;
		free(m->keys);
		free(m->vals);
		*m = nm;
	}
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			char *v = strdup(text);

			if (!v)
				return -1;
			free(m->vals[i]);
			m->vals[i] = v;
			return 0;
		}
	}
	m->vals[i] = strdup(text);
	if (!m->vals[i])
		return -1;
	m->keys[i] = key;
	m->n++;
	return 0;
}

static void addrmap_free(struct ukp_addrmap *m)
{
	size_t k;

	if (!m)
		return;
	for (k = 0; k < m->cap; k++)
		free(m->vals[k]);
	free(m->keys);
	free(m->vals);
	free(m);
}

const char *ukp_where_code(const char *where)
{
	const char *arrow = strstr(where, " -> ");

	return arrow ? arrow + 4 : where;
}

const char *ukp_image_addr(const struct ukp_image *img, uint64_t addr, char *buf, size_t len)
{
	const struct ukp_addrmap *m = img->addrs;
	size_t i;

	if (m && m->cap)
		for (i = slot_of(addr, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
			if (m->keys[i] == addr)
				return m->vals[i];
	snprintf(buf, len, "0x%lx", (unsigned long)addr);
	return buf;
}

/* ----------------------------------------------------------- images */

static struct ukp_image *image_find(struct ukp_session *s, int32_t pid, uint64_t id)
{
	size_t i;

	/* the newest first: that is where the traffic is */
	for (i = s->nimages; i-- > 0;)
		if (s->images[i]->pid == pid && s->images[i]->id == id)
			return s->images[i];
	return NULL;
}

static struct ukp_image *image_new(struct ukp_session *s, int32_t pid, uint64_t id)
{
	struct ukp_image *img, **n;

	if (s->nimages % 16 == 0) {
		n = realloc(s->images, (s->nimages + 16) * sizeof(*n));
		if (!n)
			return NULL;
		s->images = n;
	}
	img = calloc(1, sizeof(*img));
	if (!img)
		return NULL;
	img->pid = pid;
	img->id = id;
	s->images[s->nimages++] = img;
	return img;
}

static void probe_info_free(struct ukp_probe_info *pi)
{
	free(pi->event);
	free(pi->where);
	free(pi->func_name);
	free(pi->object);
	free(pi->why);
}

void ukp_images_free(struct ukp_session *s)
{
	size_t i, k;
	int j;

	for (i = 0; i < s->nimages; i++) {
		struct ukp_image *img = s->images[i];

		for (k = 0; k < img->nprobes; k++)
			probe_info_free(&img->probes[k]);
		free(img->probes);
		addrmap_free(img->addrs);
		free(img->seq_ends);
		ukp_region_drop(img);
		free(img);
	}
	free(s->images);
	s->images = NULL;
	s->nimages = 0;
	if (s->states)
		for (j = 0; j < s->nspecs; j++) {
			free((char *)s->states[j].fail.object);
			free((char *)s->states[j].fail.why);
		}
	free(s->states);
	s->states = NULL;
}

/* ----------------------------------------------------------- probes */

/* A SPEC that failed: an error now when it stops the program (the first
 * image, without -f), else remembered for the end of the run. */
static int spec_failure(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_msg_probe *m, const char *object, const char *why)
{
	struct ukp_spec_state *st = &s->states[m->spec];
	const struct ukp_spec *spec = &s->specs[m->spec];
	struct ukp_failure f = { m->err, m->what, m->argi, m->addr, object, why };
	char msg[512];
	int col;

	if (img == s->first && !s->follow) {
		col = ukp_explain_failure(spec, &f, msg, sizeof(msg));
		if (s->spec_error)
			s->spec_error(s, (int)m->spec, msg, s->script_arg);
		else if (s->made_spec)
			ukp_err("%s", msg);
		else
			ukp_spec_err(spec->text, col, "%s", msg);
		s->probe_errors++;
		st->failed = st->reported = true;
		return 0;
	}
	if (st->failed)
		return 0;
	st->failed = true;
	st->fail = f;
	st->fail.object = strdup(object);
	st->fail.why = strdup(why);
	return st->fail.object && st->fail.why ? 0 : -1;
}

static int probe_msg(struct ukp_session *s, struct ukp_image *img, const char *p, uint32_t len,
		     const struct ukp_session_ops *ops, void *arg)
{
	struct ukp_msg_probe m;
	const char *texts[4], *t, *end = p + len;
	struct ukp_probe_report r;
	struct ukp_spec_state *st;
	struct ukp_probe_info *pi;
	int i;

	if (len <= sizeof(m) || p[len - 1] != '\0')
		return -1;
	memcpy(&m, p, sizeof(m));
	/* err: 0 or a negative errno (a message is made of it) */
	if (m.err > 0 || m.err < -4095 || m.spec >= (uint32_t)s->nspecs ||
	    ((m.what == UKP_WHAT_DATASYM || m.what == UKP_WHAT_SDT_ARG) &&
	     m.argi >= (uint32_t)s->specs[m.spec].nargs))
		return -1;
	for (i = 0, t = p + sizeof(m); i < 4; i++) {
		if (t >= end)
			return -1;
		texts[i] = t;
		t += strlen(t) + 1;
	}
	r = (struct ukp_probe_report){ &m, texts[0], texts[1], texts[2], texts[3] };
	if (ops && ops->probe)
		ops->probe(s, img, &r, arg);
	st = &s->states[m.spec];
	if (m.flags & UKP_PROBE_GLOB) {
		if (!st->glob_image)
			st->glob_image = img;
		if (st->glob_image == img && !(m.flags & (UKP_PROBE_PENDING | UKP_PROBE_AGAIN))) {
			if (m.err)
				st->glob_failed++;
			else
				st->glob_ok++;
		}
	}
	if (m.err)
		return m.flags & UKP_PROBE_GLOB ? 0 : spec_failure(s, img, &m, texts[2], texts[3]);
	if (m.flags & UKP_PROBE_PENDING) {
		st->pending = true;
		return 0;
	}
	/* ids come in order (the agent numbers its probes as it announces
	 * them; a forked child's skip its parent's dead ones): the table
	 * grows with what was sent more than with a number it was sent */
	if (m.id >= UKP_PROBES_MAX || m.id > img->ids + (1u << 16))
		return -1;
	if (m.id >= img->ids)
		img->ids = m.id + 1;
	if (m.id >= img->nprobes) {
		size_t n = m.id + 1 > img->nprobes * 2 ? m.id + 1 : img->nprobes * 2;
		struct ukp_probe_info *np = realloc(img->probes, n * sizeof(*np));

		if (!np)
			return -1;
		memset(np + img->nprobes, 0, (n - img->nprobes) * sizeof(*np));
		img->probes = np;
		img->nprobes = n;
	}
	pi = &img->probes[m.id];
	probe_info_free(pi);
	memset(pi, 0, sizeof(*pi));
	pi->used = true;
	pi->spec = m.spec;
	pi->flags = m.flags;
	pi->opt = m.opt;
	pi->addr = m.addr;
	pi->func = m.func;
	pi->base = m.base;
	pi->event = strdup(texts[0]);
	pi->where = strdup(texts[1]);
	/* an SDT probe's: "%PROVIDER:NAME", its argument specs and
	 * semaphore kept for ukprobe probes (cmd_probes.c) */
	if (pi->where && s->specs[m.spec].is_sdt) {
		char *x = strstr(pi->where, " args=");

		if (!x)
			x = strstr(pi->where, " semaphore=");
		if (x)
			*x = '\0';
	}
	pi->where_code = pi->where ? ukp_where_code(pi->where) : NULL;
	/* the function's name: the text up to its last "+0x" (a demangled
	 * C++ name has blanks and may have '+'), or an IFUNC's name before
	 * " -> " */
	{
		const char *t = texts[1], *arrow = strstr(t, " -> "), *plus = NULL, *q;

		for (q = strstr(t, "+0x"); q && (!arrow || q < arrow); q = strstr(q + 1, "+0x"))
			plus = q;
		pi->func_name = strndup(t, arrow ? (size_t)(arrow - t)
					 : plus ? (size_t)(plus - t) : strcspn(t, " "));
	}
	pi->object = strdup(texts[2]);
	pi->why = strdup(texts[3]);
	st->registered++;
	return pi->event && pi->where && pi->func_name && pi->object && pi->why ? 0 : -1;
}

/* ---------------------------------------------------------- messages */

static int handle(struct ukp_session *s, struct ukp_image **imgp, const char *p, uint32_t type,
		  uint32_t len, const struct ukp_session_ops *ops, void *arg);

int ukp_images_handle(struct ukp_session *s, struct ukp_image **imgp, const char *p,
		      uint32_t type, uint32_t len, const struct ukp_session_ops *ops, void *arg)
{
	int ret = handle(s, imgp, p, type, len, ops, arg);

	/* which of its reader's messages ukprobe has (region.c) */
	if (!ret && type == UKPM_FROM && *imgp) {
		struct ukp_msg_from f;

		memcpy(&f, p, sizeof(f));
		(*imgp)->in_seq = f.pad != 0;
		if (f.pad) {
			(*imgp)->seq = f.pad;
			(*imgp)->seq_msgs = 0;
			(*imgp)->seq_ends_set[0] = (*imgp)->seq_ends_set[1] = 0;
		}
	} else if (!ret && *imgp && (*imgp)->in_seq) {
		(*imgp)->seq_msgs++;
	}
	return ret;
}

uint64_t ukp_image_event_ip(const struct ukp_image *img, uint32_t id)
{
	if (!img || id >= img->nprobes || !img->probes[id].used)
		return 0;
	return img->probes[id].flags & UKP_PROBE_AT_FUNC ? img->probes[id].func
							 : img->probes[id].addr;
}

int ukp_images_event(struct ukp_session *s, struct ukp_image *img, const struct ukp_rec *rec,
		     const struct ukp_session_ops *ops, void *arg)
{
	if (rec->id >= img->nprobes || !img->probes[rec->id].used)
		return -1;
	if (ops && ops->event)
		ops->event(s, img, &img->probes[rec->id], rec, arg);
	return 0;
}

static int handle(struct ukp_session *s, struct ukp_image **imgp, const char *p, uint32_t type,
		  uint32_t len, const struct ukp_session_ops *ops, void *arg)
{
	struct ukp_image *img = *imgp;

	if (!s->states) {
		s->states = calloc((size_t)s->nspecs, sizeof(*s->states));
		if (!s->states)
			return -1;
	}
	if (type == UKPM_FROM) {
		struct ukp_msg_from f;
		int32_t host;

		if (len < sizeof(f))
			return -1;
		memcpy(&f, p, sizeof(f));
		/* attached, the connection says which process: its agent
		 * knows only its own PID namespace's number */
		host = s->peer_pid > 0 ? s->peer_pid : f.pid;
		*imgp = image_find(s, host, f.image);
		if (!*imgp) {
			/* a new image: its first message must be HELLO */
			*imgp = image_new(s, host, f.image);
			if (!*imgp)
				return -1;
			(*imgp)->own_pid = f.pid;
		}
		return s->peer_pid <= 0 || (*imgp)->own_pid == f.pid ? 0 : -1;
	}
	if (!img || (type == UKPM_HELLO) == img->hello)
		return -1;
	switch (type) {
	case UKPM_HELLO: {
		struct ukp_msg_hello h;

		if (len < sizeof(h))
			return -1;
		memcpy(&h, p, sizeof(h));
		if (h.version != UKP_PROTO_VERSION) {
			/* an agent that refused our SPECs says so with its own
			 * version (proto.h) */
			ukp_err("the agent %s is of another build than this ukprobe (protocol "
				"version %u, ukprobe's %u): use the agent ukprobe was built with",
				s->agent ? s->agent : "", h.version, UKP_PROTO_VERSION);
			s->version_mismatch = true;
			return -1;
		}
		if ((int)h.nspecs != s->nspecs || h.pid != img->own_pid)
			return -1;
		img->hello = true;
		/* its counts and buffered events, should it end abruptly */
		ukp_region_take(s, img);
		img->ppid = img->pid == img->own_pid ? h.ppid : ukp_parent_of(img->pid);
		img->origin = h.origin;
		memcpy(img->comm, h.comm, sizeof(h.comm));
		img->comm[sizeof(h.comm)] = '\0';
		if (h.origin == UKP_ORIGIN_START && h.pid == s->pid && !s->first)
			s->first = img;
		if (h.origin == UKP_ORIGIN_ATTACH && !s->first)
			s->first = img;
		return 0;
	}
	case UKPM_PROBE:
		return probe_msg(s, img, p, len, ops, arg);
	case UKPM_HIST:
		return ukp_hist_take(s, img, p, len);
	case UKPM_SCRIPT:
		return s->script_msg ? s->script_msg(s, img, p, len, s->script_arg) : -1;
	case UKPM_SYM: {
		struct ukp_msg_sym m;

		if (len <= sizeof(m) || p[len - 1] != '\0')
			return -1;
		memcpy(&m, p, sizeof(m));
		return addrmap_put(&img->addrs, m.addr, p + sizeof(m));
	}
	case UKPM_EVENT: {
		struct ukp_rec rec;

		/* the payload its event needs (proto.h); the rest is zeros */
		if (len < UKP_REC_HEADER || len > sizeof(rec))
			return -1;
		memcpy(&rec, p, len);
		memset((char *)&rec + len, 0, sizeof(rec) - len);
		return ukp_images_event(s, img, &rec, ops, arg);
	}
	case UKPM_STAT: {
		struct ukp_msg_stat m;

		if (len < sizeof(m))
			return -1;
		memcpy(&m, p, sizeof(m));
		if (m.id >= img->nprobes || !img->probes[m.id].used)
			return -1;
		img->probes[m.id].have_stat = true;
		img->probes[m.id].hits = m.hits;
		img->probes[m.id].missed = m.missed;
		return 0;
	}
	case UKPM_END: {
		struct ukp_msg_end m;

		if (len < sizeof(m))
			return -1;
		memcpy(&m, p, sizeof(m));
		img->ended = true;
		ukp_region_drop(img); /* it sent everything */
		img->end_reason = m.reason;
		img->lost = m.lost;
		img->setup_failed = m.setup_failed;
		return 0;
	}
	case UKPM_READY:
		img->ready = true;
		if (s->exec_msg)
			ukp_follow_exec_ready(s, img->pid);
		return 0;
	case UKPM_EXEC: {
		struct ukp_msg_exec m;

		if (len < sizeof(m))
			return -1;
		memcpy(&m, p, sizeof(m));
		if (m.tid <= 0)
			return -1;
		if (s->exec_msg)
			s->exec_msg(s, m.tid, m.failed > 4 ? 1 : (int)m.failed);
		return 0;
	}
	case UKPM_DETACHED: {
		struct ukp_msg_detached m;

		if (len < sizeof(m))
			return -1;
		memcpy(&m, p, sizeof(m));
		img->detached = true;
		img->agent_tid = m.tid;
		img->agent_blocks = m.blocks;
		return 0;
	}
	default:
		return -1;
	}
}
