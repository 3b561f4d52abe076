/* SPDX-License-Identifier: MIT */
/*
 * hist_print.c - the hist triggers' tables as ukprobe receives them
 * (UKPM_HIST, one or more per image and SPEC), merged over every image
 * (-f) and printed at the end in the kernel's hist file format
 * (Documentation/trace/histogram.rst): a header with the trigger, one
 * line per entry sorted as the trigger says, and the totals.
 * Plain C; not for signal context.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "format.h"
#include "hist.h"

struct hist_row {
	uint64_t hits;
	uint64_t vals[UKP_HIST_MAX_VALS];
	char comm[16];
	unsigned char key[3 * UKP_SPEC_STR_SLOT];
	char *sym[UKP_HIST_MAX_KEYS];   /* .sym/.sym-offset: the address's text */
};

struct ukp_hist_rows {
	struct hist_row *rows;
	size_t n, cap;
	uint64_t hits, dropped;
	bool got;                       /* a table came (from some image) */
	bool ready;                     /* merged and sorted (prepare) */
};

static uint64_t key_word(const struct hist_row *r, const struct ukp_hist_field *f)
{
	uint64_t v;

	memcpy(&v, r->key + f->off, 8);
	return v;
}

/* "sym+0xoff/0xsize [obj]" -> "sym [obj]" (.sym) or kept (.sym-offset);
 * a demangled sym may hold blanks and '+': its offset is the last "+0x" */
static char *sym_text(const char *t, bool offset)
{
	const char *plus = NULL, *q, *obj;
	char *out;

	for (q = strstr(t, "+0x"); q; q = strstr(q + 1, "+0x"))
		plus = q;
	if (offset || !plus || t[0] == '[')
		return strdup(t);
	obj = strstr(plus, " [");
	out = malloc(strlen(t) + 1);
	if (!out)
		return NULL;
	memcpy(out, t, (size_t)(plus - t));
	strcpy(out + (plus - t), obj ? obj : "");
	return out;
}

int ukp_hist_take(struct ukp_session *s, struct ukp_image *img, const char *p, size_t len)
{
	struct ukp_msg_hist m;
	const struct ukp_hist *h;
	struct ukp_hist_rows *hr;
	uint32_t i;
	int k0;

	if (len < sizeof(m))
		return -1;
	memcpy(&m, p, sizeof(m));
	if (m.spec >= (uint32_t)s->nspecs || !(h = s->specs[m.spec].hist) ||
	    m.entry_size != ukp_hist_entry_size(h) ||
	    (uint64_t)m.n * m.entry_size > len - sizeof(m))
		return -1;
	if (!s->hists) {
		s->hists = calloc((size_t)s->nspecs, sizeof(*s->hists));
		if (!s->hists)
			return -1;
	}
	/* the copies of a line or function share their first's table (a
	 * recording's SPECs say which: one that names no SPEC is damaged) */
	k0 = s->specs[m.spec].copy_of ? s->specs[m.spec].copy_of - 1 : (int)m.spec;
	if (k0 < 0 || k0 >= s->nspecs)
		return -1;
	hr = &s->hists[k0];
	hr->got = true;
	if (m.first) {
		hr->hits += m.hits;
		hr->dropped += m.dropped;
	}
	for (i = 0; i < m.n; i++) {
		const char *e = p + sizeof(m) + (size_t)i * m.entry_size;
		struct hist_row *r;
		int k;

		if (hr->n == hr->cap) {
			size_t cap = hr->cap ? 2 * hr->cap : 256;
			struct hist_row *n = realloc(hr->rows, cap * sizeof(*n));

			if (!n)
				return -1;
			hr->rows = n;
			hr->cap = cap;
		}
		r = &hr->rows[hr->n++];
		memset(r, 0, sizeof(*r));
		memcpy(&r->hits, e + 8, 8);
		memcpy(r->vals, e + 16, 8 * (size_t)h->nvals);
		if (h->execname)
			memcpy(r->comm, e + ukp_hist_comm_off(h), 15);
		memcpy(r->key, e + ukp_hist_key_off(h), h->key_bytes);
		for (k = 0; k < h->nkeys; k++) {
			char buf[32];

			if (h->keys[k].mod != UKP_HM_SYM && h->keys[k].mod != UKP_HM_SYMOFF)
				continue;
			r->sym[k] = sym_text(ukp_image_addr(img, key_word(r, &h->keys[k]), buf,
							    sizeof(buf)),
					     h->keys[k].mod == UKP_HM_SYMOFF);
			if (!r->sym[k])
				return -1;
		}
	}
	return 0;
}

/* qsort has no context argument: the table being sorted. */
static const struct ukp_hist *sorting;

static int by_key(const void *pa, const void *pb)
{
	const struct hist_row *a = pa, *b = pb;

	return memcmp(a->key, b->key, sorting->key_bytes);
}

static int cmp_u64(uint64_t a, uint64_t b, bool is_signed)
{
	if (is_signed)
		return ((int64_t)a > (int64_t)b) - ((int64_t)a < (int64_t)b);
	return (a > b) - (a < b);
}

static int by_sort(const void *pa, const void *pb)
{
	const struct hist_row *a = pa, *b = pb;
	const struct ukp_hist *h = sorting;
	int i, c = 0;

	for (i = 0; i < h->nsort && !c; i++) {
		const struct ukp_hist_sort *s = &h->sort[i];

		if (s->key < 0) {
			c = cmp_u64(a->hits, b->hits, false);
		} else if (s->key < h->nkeys) {
			const struct ukp_hist_field *f = &h->keys[s->key];

			c = f->is_string ? strncmp((const char *)a->key + f->off,
						   (const char *)b->key + f->off, f->size)
					 : cmp_u64(key_word(a, f), key_word(b, f),
						   f->is_signed && f->mod == UKP_HM_NONE);
		} else {
			int v = s->key - h->nkeys;

			c = cmp_u64(a->vals[v], b->vals[v], h->vals[v].is_signed);
		}
		if (s->descending)
			c = -c;
	}
	return c ? c : memcmp(a->key, b->key, h->key_bytes);
}

static void print_key(FILE *out, const struct ukp_hist_field *f, const struct hist_row *r, int k)
{
	uint64_t v = f->is_string ? 0 : key_word(r, f);
	char str[UKP_SPEC_STR_SLOT + 1];

	switch (f->mod) {
	case UKP_HM_HEX:
		fprintf(out, "%s: %" PRIx64, f->name, v);
		return;
	case UKP_HM_SYM:
		fprintf(out, "%s: [%" PRIx64 "] %-45s", f->name, v, r->sym[k] ? r->sym[k] : "");
		return;
	case UKP_HM_SYMOFF:
		fprintf(out, "%s: [%" PRIx64 "] %-55s", f->name, v, r->sym[k] ? r->sym[k] : "");
		return;
	case UKP_HM_EXECNAME:
		fprintf(out, "%s: %-16s[%10" PRIu64 "]", f->name, r->comm, v);
		return;
	case UKP_HM_LOG2:
		fprintf(out, "%s: ~ 2^%-2" PRIu64, f->name, v);
		return;
	case UKP_HM_BUCKETS:
		fprintf(out, "%s: ~ %" PRIu64 "-%" PRIu64, f->name, v, v + f->buckets - 1);
		return;
	case UKP_HM_NONE:
		break;
	}
	if (f->is_string) {
		memcpy(str, r->key + f->off, f->size);
		str[f->size] = '\0';
		fprintf(out, "%s: %-50s", f->name, str);
	} else if (f->is_signed) {
		fprintf(out, "%s: %10" PRId64, f->name, (int64_t)v);
	} else {
		fprintf(out, "%s: %10" PRIu64, f->name, v);
	}
}

/* Merge the rows of equal keys (from several images). */
static void merge(struct ukp_hist_rows *hr, const struct ukp_hist *h)
{
	size_t i, o = 0;
	int k;

	sorting = h;
	qsort(hr->rows, hr->n, sizeof(*hr->rows), by_key);
	for (i = 0; i < hr->n; i++) {
		struct hist_row *r = &hr->rows[i];

		if (o && !by_key(&hr->rows[o - 1], r)) {
			struct hist_row *d = &hr->rows[o - 1];

			d->hits += r->hits;
			for (k = 0; k < h->nvals; k++)
				d->vals[k] += r->vals[k];
			for (k = 0; k < h->nkeys; k++)
				free(r->sym[k]);
			continue;
		}
		hr->rows[o++] = *r;
	}
	hr->n = o;
}

/* Merged and sorted, once (the text and the JSON show the same). */
static void prepare(struct ukp_hist_rows *hr, const struct ukp_hist *h)
{
	if (hr->ready)
		return;
	merge(hr, h);
	sorting = h;
	qsort(hr->rows, hr->n, sizeof(*hr->rows), by_sort);
	hr->ready = true;
}

void ukp_hist_print(FILE *out, struct ukp_session *s)
{
	int j, k;
	size_t i;

	for (j = 0; j < s->nspecs; j++) {
		const struct ukp_hist *h = s->specs[j].hist;
		struct ukp_hist_rows *hr = s->hists ? &s->hists[j] : NULL;

		if (!h || s->specs[j].copy_of)
			continue;
		/* a blank line from what came before */
		fprintf(out, "\n# event histogram\n#\n# event: %s/%s\n# trigger info: %s [active]\n#\n\n",
			s->specs[j].group, s->specs[j].event, h->info);
		if (hr) {
			prepare(hr, h);
			for (i = 0; i < hr->n; i++) {
				const struct hist_row *r = &hr->rows[i];

				fputs("{ ", out);
				for (k = 0; k < h->nkeys; k++) {
					if (k)
						fputs(", ", out);
					print_key(out, &h->keys[k], r, k);
				}
				fprintf(out, " } hitcount: %10" PRIu64, r->hits);
				for (k = 0; k < h->nvals; k++)
					fprintf(out, h->vals[k].mod == UKP_HM_HEX ? "  %s: %10" PRIx64
						     : h->vals[k].is_signed ? "  %s: %10" PRId64
									    : "  %s: %10" PRIu64,
						h->vals[k].name, r->vals[k]);
				fputc('\n', out);
			}
		}
		fprintf(out, "\nTotals:\n    Hits: %" PRIu64 "\n    Entries: %zu\n    Dropped: %" PRIu64
			"\n\n", hr ? hr->hits : 0, hr ? hr->n : 0, hr ? hr->dropped : 0);
	}
}

/* {"field":..,"mod":..,"value":..[,"sym"|"comm"|"to":..]} of key k */
static void json_key(FILE *out, const struct ukp_hist_field *f, const struct hist_row *r, int k)
{
	static const char *const mods[] = {
		[UKP_HM_NONE] = "", [UKP_HM_HEX] = "hex", [UKP_HM_SYM] = "sym",
		[UKP_HM_SYMOFF] = "sym-offset", [UKP_HM_LOG2] = "log2",
		[UKP_HM_BUCKETS] = "buckets", [UKP_HM_EXECNAME] = "execname",
	};
	uint64_t v = f->is_string ? 0 : key_word(r, f);

	fputs("{\"field\":", out);
	ukp_json_str(out, f->name, sizeof(f->name));
	if (f->mod != UKP_HM_NONE)
		fprintf(out, ",\"mod\":\"%s\"", mods[f->mod]);
	fputs(",\"value\":", out);
	if (f->is_string)
		ukp_json_str(out, (const char *)r->key + f->off, f->size);
	else if (f->is_signed && f->mod == UKP_HM_NONE)
		fprintf(out, "%" PRId64, (int64_t)v);
	else
		fprintf(out, "%" PRIu64, v);
	if ((f->mod == UKP_HM_SYM || f->mod == UKP_HM_SYMOFF) && r->sym[k]) {
		fputs(",\"sym\":", out);
		ukp_json_str(out, r->sym[k], strlen(r->sym[k]));
	} else if (f->mod == UKP_HM_EXECNAME) {
		fputs(",\"comm\":", out);
		ukp_json_str(out, r->comm, sizeof(r->comm));
	} else if (f->mod == UKP_HM_BUCKETS) {
		fprintf(out, ",\"to\":%" PRIu64, v + f->buckets - 1);
	}
	fputc('}', out);
}

void ukp_hist_json(FILE *out, struct ukp_session *s)
{
	bool first = true;
	int j, k;
	size_t i;

	for (j = 0; j < s->nspecs; j++) {
		const struct ukp_hist *h = s->specs[j].hist;
		struct ukp_hist_rows *hr = s->hists ? &s->hists[j] : NULL;
		char name[2 * UKP_SPEC_NAME_MAX + 2];

		if (!h || s->specs[j].copy_of)
			continue;
		fputs(first ? ",\"histograms\":[\n{\"event\":" : ",\n{\"event\":", out);
		first = false;
		snprintf(name, sizeof(name), "%s/%s", s->specs[j].group, s->specs[j].event);
		ukp_json_str(out, name, sizeof(name));
		fputs(",\"trigger\":", out);
		ukp_json_str(out, h->info, strlen(h->info));
		fputs(",\"entries\":[", out);
		if (hr)
			prepare(hr, h);
		for (i = 0; hr && i < hr->n; i++) {
			const struct hist_row *r = &hr->rows[i];

			fputs(i ? ",\n {\"keys\":[" : "\n {\"keys\":[", out);
			for (k = 0; k < h->nkeys; k++) {
				if (k)
					fputc(',', out);
				json_key(out, &h->keys[k], r, k);
			}
			fprintf(out, "],\"hitcount\":%" PRIu64 ",\"vals\":{", r->hits);
			for (k = 0; k < h->nvals; k++) {
				if (k)
					fputc(',', out);
				ukp_json_str(out, h->vals[k].name, sizeof(h->vals[k].name));
				fprintf(out, h->vals[k].is_signed ? ":%" PRId64 : ":%" PRIu64, r->vals[k]);
			}
			fputs("}}", out);
		}
		fprintf(out, "],\"totals\":{\"hits\":%" PRIu64 ",\"entries\":%zu,\"dropped\":%" PRIu64
			"}}", hr ? hr->hits : 0, hr ? hr->n : 0, hr ? hr->dropped : 0);
	}
	if (!first)
		fputs("]", out);
}

void ukp_hist_free_rows(struct ukp_session *s)
{
	int j, k;
	size_t i;

	for (j = 0; s->hists && j < s->nspecs; j++) {
		for (i = 0; i < s->hists[j].n; i++)
			for (k = 0; k < UKP_HIST_MAX_KEYS; k++)
				free(s->hists[j].rows[i].sym[k]);
		free(s->hists[j].rows);
	}
	free(s->hists);
	s->hists = NULL;
}
