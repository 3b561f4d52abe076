/* SPDX-License-Identifier: MIT */
/*
 * output.c - `ukprobe run`'s output, as bpftrace 0.17 writes it: printf
 * records formatted from their binary form (recorded in the traced
 * thread, or sent by BEGIN and END), and maps, whose per-thread parts
 * are merged here, sorted and printed as bpftrace's text output does
 * (`@name[key]: value`, hist()/lhist() bars, stats() lines).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "session.h"
#include "script.h"
#include "script_out.h"

struct mapdata {
	uint64_t *w;              /* entries of kw + vw words */
	size_t n, cap;
};

struct script_out {
	const struct script *sc;
	FILE *out;
	struct mapdata maps[256];     /* the entries the processes end with */
	/* a print()'s entries, between its CLEAR and its PRINT */
	struct mapdata printing[256];
	bool collecting[256];
	uint64_t drops;
	bool started;
	/* func and probe values in maps, named as their process names them
	 * (processes differ): NAMED | index */
	char **names;
	size_t nnames;
};

#define NAMED (1ULL << 63)
#define STACK_TEXT 20000             /* a ustack's text: 32 frames of names */

struct script_out *script_out_new(const struct script *sc, FILE *out)
{
	struct script_out *o = calloc(1, sizeof(*o));

	if (o) {
		o->sc = sc;
		o->out = out;
	}
	return o;
}

bool script_out_started(const struct script_out *o)
{
	return o->started;
}

/* ------------------------------------------------ names of addresses */

static const struct ukp_probe_info *probe_at(const struct ukp_image *img, uint64_t addr)
{
	size_t i;

	for (i = 0; img && i < img->nprobes; i++)
		if (img->probes[i].used && img->probes[i].addr == addr)
			return &img->probes[i];
	for (i = 0; img && i < img->nprobes; i++)
		if (img->probes[i].used && img->probes[i].func == addr)
			return &img->probes[i];
	return NULL;
}

static void sym_text(const struct ukp_image *img, uint64_t addr, char *buf, size_t len)
{
	const struct ukp_probe_info *pi = probe_at(img, addr);

	if (pi && pi->func_name)
		snprintf(buf, len, "%s", pi->func_name);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
}

static void probe_text(const struct script_out *o, const struct ukp_image *img, uint64_t v,
		       char *buf, size_t len)
{
	uint64_t idx = (v >> 48) - 1, addr = v & 0xffffffffffffULL;
	const struct probe *p;
	const struct ukp_probe_info *pi;

	if (idx >= (uint64_t)o->sc->nprobes) {
		snprintf(buf, len, "?");
		return;
	}
	p = &o->sc->probes[idx];
	if (p->type == P_BEGIN || p->type == P_END || p->type == P_INTERVAL) {
		snprintf(buf, len, "%s", p->text);
		return;
	}
	pi = probe_at(img, addr);
	if (p->type == P_USDT) {
		/* func: "%PROVIDER:NAME" */
		snprintf(buf, len, "usdt:%s:%s", pi && pi->object ? pi->object : p->obj, p->func + 1);
		return;
	}
	snprintf(buf, len, "%s:%s:%s", p->type == P_UPROBE ? "uprobe" : "uretprobe",
		 pi && pi->object ? pi->object : p->obj, pi && pi->func_name ? pi->func_name : p->func);
}

/* a frame of a ustack, as bpftrace's: "sym+OFFSET" (decimal), or the
 * address */
static void frame_text(const struct ukp_image *img, uint64_t addr, char *buf, size_t len)
{
	char tmp[32];
	const char *t = img ? ukp_image_addr(img, addr, tmp, sizeof(tmp)) : "";
	const char *slash = strchr(t, '/'), *plus = NULL, *q;

	for (q = t; slash && q < slash; q++)
		if (*q == '+')
			plus = q;
	if (t[0] != '[' && plus && plus > t && !strncmp(plus, "+0x", 3))
		snprintf(buf, len, "%.*s+%lu", (int)(plus - t), t, strtoul(plus + 3, NULL, 16));
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
}

/* buf(): printable bytes as they are, the others as \xNN (bpftrace's) */
static void buf_text(const uint64_t *w, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)(w + 1);
	size_t at = 0;
	uint64_t i;

	buf[0] = '\0';
	for (i = 0; i < w[0] && i < 64 && at + 5 < len; i++)
		at += (size_t)snprintf(buf + at, len - at, b[i] >= 32 && b[i] <= 126 ? "%c" : "\\x%02x",
				       b[i]);
}

/* usym(): the symbol without its offset, as bpftrace's, or the address */
static void usym_text(const struct ukp_image *img, uint64_t addr, char *buf, size_t len)
{
	char *plus;

	frame_text(img, addr, buf, len);
	plus = buf[0] != '0' ? strrchr(buf, '+') : NULL;
	if (plus)
		*plus = '\0';
}

/* indent: a map key's stack by 4, a printed one by 8, as bpftrace's */
static void stack_text(const struct ukp_image *img, const uint64_t *w, char *buf, size_t len,
		       int indent)
{
	size_t at = 0;
	uint64_t i;

	at += (size_t)snprintf(buf, len, "\n");
	for (i = 0; i < w[0] && i < USTACK_MAX && at < len; i++) {
		char f[512];

		frame_text(img, w[1 + i], f, sizeof(f));
		at += (size_t)snprintf(buf + at, len - at, "%*s%s\n", indent, "", f);
	}
}

/* a value of type t at w, as text */
static void value_text(const struct script_out *o, const struct ukp_image *img, enum type t,
		       const uint64_t *w, char *buf, size_t len)
{
	if (t == TY_STR)
		snprintf(buf, len, "%.64s", (const char *)w);
	else if ((t == TY_SYM || t == TY_PROBE || t == TY_STACK || t == TY_USYM) && (w[0] & NAMED) &&
		 (w[0] & ~NAMED) < o->nnames)
		snprintf(buf, len, "%s", o->names[w[0] & ~NAMED]);
	else if (t == TY_STACK)
		stack_text(img, w, buf, len, 4);
	else if (t == TY_USYM)
		usym_text(img, w[0], buf, len);
	else if (t == TY_BUF)
		buf_text(w, buf, len);
	else if (t == TY_SYM)
		sym_text(img, w[0], buf, len);
	else if (t == TY_PROBE)
		probe_text(o, img, w[0], buf, len);
	else
		snprintf(buf, len, "%lld", (long long)w[0]);
}

/* ------------------------------------------------------------ printf */

void script_out_record(struct script_out *o, const struct ukp_image *img,
		       const unsigned char *data, size_t len)
{
	uint64_t w[4096 / 8] = { 0 };
	const struct fmt *f;
	const char *p;
	int arg = 0, at = 1;

	memcpy(w, data, len < sizeof(w) ? len : sizeof(w));
	/* (the high half: the agent's, gen.c's record()) */
	if ((uint32_t)w[0] >= (uint32_t)o->sc->nfmts)
		return;
	f = &o->sc->fmts[(uint32_t)w[0]];
	if (f->time) {
		char text[256];
		time_t t = time(NULL);
		struct tm tm;

		if (localtime_r(&t, &tm) && strftime(text, sizeof(text), f->text, &tm))
			fputs(text, o->out);
		return;
	}
	if (f->print) {
		char text[8192];

		if (f->types[0] == TY_STACK)
			stack_text(img, w + 1, text, sizeof(text), 8);
		else
			value_text(o, img, f->types[0], w + 1, text, sizeof(text));
		fprintf(o->out, "%s\n", text);
		return;
	}
	for (p = f->text; *p; p++) {
		char spec[64], conv;
		size_t n = 0;

		if (*p != '%') {
			fputc(*p, o->out);
			continue;
		}
		if (p[1] == '%') {
			fputc('%', o->out);
			p++;
			continue;
		}
		spec[n++] = '%';
		for (p++; *p && strchr("-+ #0", *p) && n < 20; p++)
			spec[n++] = *p;
		while ((*p >= '0' && *p <= '9') || *p == '.') {
			if (n < 40)
				spec[n++] = *p;
			p++;
		}
		while (*p && strchr("hlzjt", *p))
			p++;
		conv = *p;
		if (arg >= f->nargs)
			break;
		if (f->types[arg] != TY_INT) {
			char text[8192];

			if (f->types[arg] == TY_STACK)
				stack_text(img, w + at, text, sizeof(text), 8);
			else
				value_text(o, img, f->types[arg], w + at, text, sizeof(text));
			spec[n++] = 's';
			spec[n] = '\0';
			fprintf(o->out, spec, text);
		} else if (conv == 'c') {
			spec[n++] = 'c';
			spec[n] = '\0';
			fprintf(o->out, spec, (int)w[at]);
		} else if (conv == 'p') {
			spec[n++] = 'p';
			spec[n] = '\0';
			fprintf(o->out, spec, (void *)(uintptr_t)w[at]);
		} else {
			spec[n++] = 'l';
			spec[n++] = 'l';
			spec[n++] = conv;
			spec[n] = '\0';
			fprintf(o->out, spec, (long long)w[at]);
		}
		at += rec_words(f->types[arg]);
		arg++;
	}
}

/* -------------------------------------------------------------- maps */

struct row {
	const uint64_t *e;        /* key words, then value words */
	char *key;                /* "[k1, k2]" or "" */
	int64_t sort;             /* what bpftrace sorts by */
};

static const struct mapinfo *g_map; /* for the sorts */
static const struct script_out *g_out;

static int key_cmp(const void *pa, const void *pb)
{
	const uint64_t *a = pa, *b = pb;
	int i;

	for (i = 0; i < g_map->kw; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* one entry of the same key from another thread: merged into e */
static void merge(const struct mapinfo *m, uint64_t *e, const uint64_t *f)
{
	uint64_t *v = e + m->kw;
	const uint64_t *u = f + m->kw;
	int i;

	switch (m->vk) {
	case V_MIN:
	case V_MAX:
		if (u[1] && (!v[1] || (m->vk == V_MIN ? (int64_t)u[0] < (int64_t)v[0]
						      : (int64_t)u[0] > (int64_t)v[0]))) {
			v[0] = u[0];
			v[1] = 1;
		}
		break;
	case V_COUNT:
	case V_SUM:
	case V_AVG:
	case V_STATS:
	case V_HIST:
	case V_LHIST:
		for (i = 0; i < m->vw; i++)
			v[i] += u[i];
		break;
	default:
		break;
	}
}

static int by_key(const void *pa, const void *pb);

static int by_sort(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->sort != b->sort)
		return a->sort < b->sort ? -1 : 1;
	return by_key(a, b);
}

static int by_count(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if ((uint64_t)a->sort != (uint64_t)b->sort)
		return (uint64_t)a->sort < (uint64_t)b->sort ? -1 : 1;
	return by_key(a, b);
}

/* bpftrace's sort_by_key: by the first key, then the second, ...; also
 * the order of equal values (bpftrace's is its hash table's) */
static int by_key(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int i, o = 0;

	for (i = 0; i < g_map->nkeys; i++) {
		if (g_map->keys[i] == TY_STR) {
			int c = strncmp((const char *)(a->e + o), (const char *)(b->e + o), 64);

			if (c)
				return c;
		} else if ((a->e[o] & NAMED) && (b->e[o] & NAMED) && a->e[o] != b->e[o] &&
			   (a->e[o] & ~NAMED) < g_out->nnames && (b->e[o] & ~NAMED) < g_out->nnames) {
			/* named in ukprobe (func, probe, ustack, usym()): by name */
			int c = strcmp(g_out->names[a->e[o] & ~NAMED], g_out->names[b->e[o] & ~NAMED]);

			if (c)
				return c;
		} else if (a->e[o] != b->e[o]) {
			return a->e[o] < b->e[o] ? -1 : 1;
		}
		o += type_words(g_map->keys[i]);
	}
	return 0;
}

static void hist_label(char *buf, size_t len, int power)
{
	const char *suffix = "";

	if (power >= 40) {
		suffix = "T";
		power -= 40;
	} else if (power >= 30) {
		suffix = "G";
		power -= 30;
	} else if (power >= 20) {
		suffix = "M";
		power -= 20;
	} else if (power >= 10) {
		suffix = "K";
		power -= 10;
	}
	snprintf(buf, len, "%d%s", 1 << power, suffix);
}

static void lhist_label(char *buf, size_t len, int64_t n)
{
	if (n == 0)
		snprintf(buf, len, "0");
	else if (n % 1048576 == 0)
		snprintf(buf, len, "%lldM", (long long)(n / 1048576));
	else if (n % 1024 == 0)
		snprintf(buf, len, "%lldK", (long long)(n / 1024));
	else
		snprintf(buf, len, "%lld", (long long)n);
}

static void bar_line(FILE *out, const char *header, uint64_t v, uint64_t max)
{
	/* bpftrace's width: in float, truncated */
	int width = (int)((float)v / (float)max * 52);
	char bar[53];

	memset(bar, '@', (size_t)width);
	bar[width] = '\0';
	fprintf(out, "%-16s%8llu |%-52s|\n", header, (unsigned long long)v, bar);
}

static void hist_text(FILE *out, const struct mapinfo *m, const uint64_t *v)
{
	int i, lo = -1, hi = -1;
	uint64_t max = 0;
	char h[64], a[24], b[24];

	if (m->vk == V_HIST) {
		for (i = 0; i < 65; i++) {
			if (v[i] > 0) {
				if (lo < 0)
					lo = i;
				hi = i;
			}
			if (v[i] > max)
				max = v[i];
		}
		for (i = lo; lo >= 0 && i <= hi; i++) {
			if (i == 0) {
				snprintf(h, sizeof(h), "(..., 0)");
			} else if (i == 1) {
				snprintf(h, sizeof(h), "[0]");
			} else if (i == 2) {
				snprintf(h, sizeof(h), "[1]");
			} else {
				hist_label(a, sizeof(a), i - 2);
				hist_label(b, sizeof(b), i - 1);
				snprintf(h, sizeof(h), "[%s, %s)", a, b);
			}
			bar_line(out, h, v[i], max);
		}
		return;
	}
	{
		int buckets = (int)((m->lmax - m->lmin) / m->lstep);

		for (i = 0; i <= buckets + 1; i++) {
			if (v[i] > 0) {
				if (lo < 0)
					lo = i;
				hi = i;
			}
			if (v[i] > max)
				max = v[i];
		}
		for (i = lo; lo >= 0 && i <= hi; i++) {
			if (i == 0) {
				lhist_label(a, sizeof(a), m->lmin);
				snprintf(h, sizeof(h), "(..., %s)", a);
			} else if (i == buckets + 1) {
				lhist_label(a, sizeof(a), m->lmax);
				snprintf(h, sizeof(h), "[%s, ...)", a);
			} else {
				lhist_label(a, sizeof(a), (i - 1) * m->lstep + m->lmin);
				lhist_label(b, sizeof(b), i * m->lstep + m->lmin);
				snprintf(h, sizeof(h), "[%s, %s)", a, b);
			}
			bar_line(out, h, v[i], max);
		}
	}
}

static void print_map(struct script_out *o, const struct ukp_image *img, int id,
		      struct mapdata *d)
{
	const struct mapinfo *m = o->sc->maps[id];
	size_t ew = (size_t)(m->kw + m->vw), i, n = 0;
	struct row *rows;
	int k;

	g_map = m;
	g_out = o;
	/* the threads' parts of a key together, merged */
	if (d->n)
		qsort(d->w, d->n, ew * 8, key_cmp);
	rows = calloc(d->n + 1, sizeof(*rows));
	for (i = 0; i < d->n; i++) {
		uint64_t *e = d->w + i * ew;

		if (n && !key_cmp(rows[n - 1].e, e)) {
			merge(m, (uint64_t *)rows[n - 1].e, e);
			continue;
		}
		rows[n++].e = e;
	}
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];
		const uint64_t *v = r->e + m->kw;
		size_t at = 0;
		int o_ = 0;

		r->key = calloc(1, m->nkeys ? (size_t)m->nkeys * (STACK_TEXT + 2) + 2 : 1);
		if (!r->key) {
			ukp_err("out of memory");
			exit(UKP_EXIT_FAIL);
		}
		if (m->nkeys) {
			r->key[at++] = '[';
			for (k = 0; k < m->nkeys; k++) {
				char text[STACK_TEXT];

				value_text(o, img, m->keys[k], r->e + o_, text, sizeof(text));
				at += (size_t)sprintf(r->key + at, "%s%s", k ? ", " : "", text);
				o_ += type_words(m->keys[k]);
			}
			r->key[at++] = ']';
			r->key[at] = '\0';
		}
		switch (m->vk) {
		case V_HIST:
		case V_LHIST:
			for (k = 0; k < m->vw; k++)
				r->sort += (int64_t)v[k];
			break;
		case V_AVG:
		case V_STATS:
			r->sort = v[0] ? (int64_t)v[1] / (int64_t)v[0] : 0;
			break;
		default:
			r->sort = (int64_t)v[0];
			break;
		}
	}
	if (!n)
		;
	else if (m->vk == V_STR || m->vk == V_SYM || m->vk == V_PROBE || m->vk == V_USYM)
		qsort(rows, n, sizeof(*rows), by_key);
	else
		qsort(rows, n, sizeof(*rows), m->vk == V_COUNT || m->vk == V_HIST ||
						      m->vk == V_LHIST ? by_count : by_sort);
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const uint64_t *v = r->e + m->kw;
		char text[300];

		if (i)
			fputc('\n', o->out);
		fprintf(o->out, "%s%s: ", m->name, r->key);
		switch (m->vk) {
		case V_HIST:
		case V_LHIST:
			fputc('\n', o->out);
			hist_text(o->out, m, v);
			break;
		case V_STATS:
			fprintf(o->out, "count %lld, average %lld, total %lld", (long long)v[0],
				(long long)r->sort, (long long)v[1]);
			break;
		case V_AVG:
			fprintf(o->out, "%lld", (long long)r->sort);
			break;
		case V_COUNT:
			fprintf(o->out, "%llu", (unsigned long long)v[0]);
			break;
		case V_STR:
			value_text(o, img, TY_STR, v, text, sizeof(text));
			fputs(text, o->out);
			break;
		case V_SYM:
		case V_PROBE:
		case V_USYM:
			value_text(o, img, m->vk == V_SYM ? TY_SYM : m->vk == V_PROBE ? TY_PROBE : TY_USYM, v,
				   text, sizeof(text));
			fputs(text, o->out);
			break;
		default:
			fprintf(o->out, "%lld", (long long)v[0]);
			break;
		}
	}
	fputc('\n', o->out);
	if (m->vk == V_STATS || m->vk == V_AVG)
		fputc('\n', o->out);
	for (i = 0; i < n; i++)
		free(rows[i].key);
	free(rows);
}

/* w (a func or probe value of img) as NAMED | its name's index */
static void name_value(struct script_out *o, const struct ukp_image *img, enum type t, uint64_t *w)
{
	char text[STACK_TEXT];
	size_t i;

	value_text(o, img, t, w, text, sizeof(text));
	for (i = 0; i < o->nnames && strcmp(o->names[i], text); i++)
		;
	if (i == o->nnames) {
		char **n = realloc(o->names, (o->nnames + 1) * sizeof(*n));

		if (!n || !(n[o->nnames] = strdup(text)))
			return;
		o->names = n;
		o->nnames++;
	}
	*w = NAMED | i;
	/* a stack's frames: equal stacks are one key now */
	if (t == TY_STACK)
		memset(w + 1, 0, USTACK_MAX * 8);
}

static void name_entries(struct script_out *o, const struct ukp_image *img,
			 const struct mapinfo *m, uint64_t *e, size_t n)
{
	size_t j;
	int k, at;

	for (j = 0; j < n; j++, e += m->kw + m->vw) {
		for (k = 0, at = 0; k < m->nkeys; at += type_words(m->keys[k]), k++)
			if (m->keys[k] == TY_SYM || m->keys[k] == TY_PROBE || m->keys[k] == TY_STACK ||
			    m->keys[k] == TY_USYM)
				name_value(o, img, m->keys[k], e + at);
		if (m->vk == V_SYM || m->vk == V_PROBE || m->vk == V_USYM)
			name_value(o, img, m->vk == V_SYM ? TY_SYM : m->vk == V_PROBE ? TY_PROBE : TY_USYM,
				   e + m->kw);
	}
}

int script_out_msg(struct script_out *o, const struct ukp_image *img, const char *p, size_t len)
{
	struct ukp_msg_script_hdr h;
	const char *data = p + sizeof(h);
	size_t dlen;

	if (len < sizeof(h))
		return -1;
	memcpy(&h, p, sizeof(h));
	dlen = len - sizeof(h);
	switch (h.kind) {
	case UKP_SCRIPT_START: {
		int n = (int)h.arg, i;

		for (i = 0; i < o->sc->nprobes; i++)
			n += o->sc->probes[i].type >= P_BEGIN;
		if (!o->started)
			fprintf(o->out, "Attaching %d probe%s...\n", n, n == 1 ? "" : "s");
		o->started = true;
		return 0;
	}
	case UKP_SCRIPT_OUT:
		script_out_record(o, img, (const unsigned char *)data, dlen);
		return 0;
	case UKP_SCRIPT_DROPS:
		if (dlen >= 8) {
			uint64_t d;

			memcpy(&d, data, 8);
			o->drops += d;
		}
		return 0;
	default:
		break;
	}
	if (h.arg >= (uint32_t)o->sc->nmaps)
		return -1;
	{
		const struct mapinfo *m = o->sc->maps[h.arg];
		struct mapdata *d = o->collecting[h.arg] ? &o->printing[h.arg] : &o->maps[h.arg];
		size_t ew = (size_t)(m->kw + m->vw) * 8, n;

		switch (h.kind) {
		case UKP_SCRIPT_CLEAR:
			o->collecting[h.arg] = true;
			o->printing[h.arg].n = 0;
			return 0;
		case UKP_SCRIPT_PRINT:
			print_map(o, img, (int)h.arg, &o->printing[h.arg]);
			o->collecting[h.arg] = false;
			return 0;
		case UKP_SCRIPT_MAP:
			/* the message is padded to 8 bytes: whole entries only */
			n = dlen / ew;
			if (d->n + n > d->cap) {
				size_t cap = (d->n + n) * 2;
				uint64_t *w = realloc(d->w, cap * ew);

				if (!w)
					return -1;
				d->w = w;
				d->cap = cap;
			}
			memcpy((char *)d->w + d->n * ew, data, n * ew);
			name_entries(o, img, m, (uint64_t *)(void *)((char *)d->w + d->n * ew), n);
			d->n += n;
			return 0;
		default:
			return -1;
		}
	}
}

void script_out_end(struct script_out *o, const struct ukp_image *img)
{
	int i;

	int order[256], j;

	/* bpftrace creates its maps in the order of their names, and prints
	 * them in that order */
	for (i = 0; i < o->sc->nmaps; i++) {
		for (j = i; j > 0 && strcmp(o->sc->maps[order[j - 1]]->name, o->sc->maps[i]->name) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	fputs("\n\n", o->out);
	for (i = 0; i < o->sc->nmaps; i++)
		print_map(o, img, order[i], &o->maps[order[i]]);
	fflush(o->out);
	if (o->drops)
		ukp_warn("%llu map updates were dropped: a map was full (4096 entries), or a "
			 "thread beyond the first %d had no map space",
			 (unsigned long long)o->drops, UKP_SCRIPT_THREADS);
}
