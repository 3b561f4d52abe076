/* SPDX-License-Identifier: MIT */
/*
 * json.c - "ukprobe trace --json FILE": the Chrome trace-event format
 * (JSON object form), which Perfetto (ui.perfetto.dev) and
 * chrome://tracing load.
 *
 * A hit of an entry probe of a function that also has a return probe in
 * the same image opens a frame on its thread; the return of that
 * function on that thread closes it as one complete event ("ph":"X",
 * name = the function, args = {"entry": ..., "return": ...}). Frames
 * that a return skips (left by longjmp or an exception), entries whose
 * return never comes, returns without an entry and every other hit are
 * instant events ("ph":"i"). Threads and processes get their names
 * ("ph":"M"). Timestamps are CLOCK_MONOTONIC, in microseconds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "format.h"
#include "fetch_types.h"

struct frame {
	uint64_t func, ts;
	char *name, *cat, *args;          /* the entry's event and args (JSON) */
};

struct thread {
	int32_t pid, tid;
	struct frame *frames;
	size_t n, cap;
	struct thread *next;
};

#define NBUCKETS 1024

struct ukp_json {
	FILE *out;
	char *path;
	bool first;
	struct thread *threads[NBUCKETS];
	/* per image: the functions that have a return probe */
	const struct ukp_image *ret_img;
	size_t ret_nprobes;
	uint64_t *ret_funcs;
	size_t ret_n;
};

/* ---------------------------------------------------------- writing */

void ukp_json_str(FILE *out, const char *s, size_t max)
{
	size_t i;

	fputc('"', out);
	for (i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c); /* bytes as Latin-1: always valid */
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void put_ts(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, "\"%s\":%lu.%03lu", key, (unsigned long)(ns / 1000),
		(unsigned long)(ns % 1000));
}

static void begin(struct ukp_json *j)
{
	fputs(j->first ? "\n" : ",\n", j->out);
	j->first = false;
}

/* {"name": value, ...} of an event's arguments */
static void put_args(FILE *out, const struct ukp_image *img, const struct ukp_spec *spec,
		     const struct ukp_rec *rec)
{
	char buf[32], c[2] = { 0, 0 };
	int i;

	fputc('{', out);
	for (i = 0; i < spec->nargs; i++) {
		const struct ukp_fetcharg *fa = &spec->args[i];
		const struct ukp_fetch_type *t = ukp_fetch_type_of(fa);
		const unsigned char *slot = rec->data + fa->off;
		unsigned long v;

		if (i)
			fputc(',', out);
		ukp_json_str(out, fa->name, UKP_SPEC_ARGNAME_MAX);
		fputc(':', out);
		if (rec->faults & (1u << i)) {
			fputs(spec->args[i].base == UKP_FA_UNAVAIL ? "\"(unavailable)\"" : "\"(fault)\"",
			      out);
			continue;
		}
		if (t->print == UKP_PRINT_STRING) {
			ukp_json_str(out, (const char *)slot, UKP_SPEC_STR_SLOT);
			continue;
		}
		v = ukp_arg_number(fa, slot);
		if (t->print == UKP_PRINT_CHAR) {
			c[0] = (char)v;
			ukp_json_str(out, c, 1);
		} else if (t->print == UKP_PRINT_SYMBOL) {
			ukp_json_str(out, ukp_image_addr(img, v, buf, sizeof(buf)), 512);
		} else if (t->print == UKP_PRINT_FLOAT) {
			ukp_format_float(buf, sizeof(buf), v, fa->size);
			/* JSON has no inf or nan: those as strings */
			if (strspn(buf, "0123456789+-.e") == strlen(buf))
				fputs(buf, out);
			else
				ukp_json_str(out, buf, sizeof(buf));
		} else if (t->hex) {
			/* JSON numbers cannot be hexadecimal: a string */
			snprintf(buf, sizeof(buf), "0x%lx", v);
			ukp_json_str(out, buf, sizeof(buf));
		} else if (t->is_signed) {
			fprintf(out, "%ld", (long)v);
		} else {
			fprintf(out, "%lu", v);
		}
	}
	fputc('}', out);
}

static char *args_text(const struct ukp_image *img, const struct ukp_spec *spec,
		       const struct ukp_rec *rec)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	put_args(f, img, spec, rec);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

static void put_common(struct ukp_json *j, const char *name, const char *cat, const char *ph,
		       int32_t pid, int32_t tid, uint64_t ts)
{
	begin(j);
	fputs("{\"name\":", j->out);
	ukp_json_str(j->out, name, 512);
	fputs(",\"cat\":", j->out);
	ukp_json_str(j->out, cat, 512);
	fprintf(j->out, ",\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,", ph, pid, tid);
	put_ts(j->out, "ts", ts);
}

static void put_instant(struct ukp_json *j, const char *name, const char *cat, int32_t pid,
			int32_t tid, uint64_t ts, const char *args)
{
	put_common(j, name, cat, "i", pid, tid, ts);
	fprintf(j->out, ",\"s\":\"t\",\"args\":%s}", args ? args : "{}");
}

static void put_meta(struct ukp_json *j, const char *what, int32_t pid, int32_t tid,
		     const char *name, size_t max)
{
	begin(j);
	fprintf(j->out, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
		what, pid, tid);
	ukp_json_str(j->out, name, max);
	fputs("}}", j->out);
}

/* ---------------------------------------------------------- threads */

static struct thread *thread_of(struct ukp_json *j, int32_t pid, int32_t tid, const char *comm)
{
	size_t b = ((uint32_t)pid * 31u + (uint32_t)tid) % NBUCKETS;
	struct thread *t;

	for (t = j->threads[b]; t; t = t->next)
		if (t->pid == pid && t->tid == tid)
			return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->next = j->threads[b];
	j->threads[b] = t;
	put_meta(j, "thread_name", pid, tid, comm, 16);
	return t;
}

static void frame_free(struct frame *f)
{
	free(f->name);
	free(f->cat);
	free(f->args);
}

/* An entry whose return was not seen: an instant at its time. */
static void frame_flush(struct ukp_json *j, const struct thread *t, struct frame *f)
{
	put_instant(j, f->name, f->cat, t->pid, t->tid, f->ts, f->args);
	frame_free(f);
}

/* ----------------------------------------------------------- events */

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return (a > b) - (a < b);
}

/* Does img have a return probe on the function at func? */
static bool has_return_probe(struct ukp_json *j, struct ukp_session *s,
			     const struct ukp_image *img, uint64_t func)
{
	size_t k;

	if (j->ret_img != img || j->ret_nprobes != img->nprobes) {
		free(j->ret_funcs);
		j->ret_funcs = malloc((img->nprobes + 1) * sizeof(*j->ret_funcs));
		j->ret_n = 0;
		j->ret_img = img;
		j->ret_nprobes = img->nprobes;
		if (!j->ret_funcs)
			return false;
		for (k = 0; k < img->nprobes; k++)
			if (img->probes[k].used && s->specs[img->probes[k].spec].is_return)
				j->ret_funcs[j->ret_n++] = img->probes[k].func;
		qsort(j->ret_funcs, j->ret_n, sizeof(*j->ret_funcs), u64_cmp);
	}
	return j->ret_n && bsearch(&func, j->ret_funcs, j->ret_n, sizeof(func), u64_cmp);
}

static void on_return(struct ukp_json *j, struct thread *t, const struct ukp_probe_info *pi,
		      const char *cat, const struct ukp_rec *rec, const char *args)
{
	size_t i = t->n;

	while (i > 0 && t->frames[i - 1].func != pi->func)
		i--;
	if (!i) {
		put_instant(j, pi->event, cat, t->pid, t->tid, rec->ts, args);
		return;
	}
	/* frames above it were left without their return */
	while (t->n > i)
		frame_flush(j, t, &t->frames[--t->n]);
	t->n--;
	put_common(j, pi->func_name, cat, "X", t->pid, t->tid, t->frames[t->n].ts);
	fputc(',', j->out);
	put_ts(j->out, "dur", rec->ts - t->frames[t->n].ts);
	fprintf(j->out, ",\"args\":{\"entry\":%s,\"return\":%s}}",
		t->frames[t->n].args ? t->frames[t->n].args : "{}", args ? args : "{}");
	frame_free(&t->frames[t->n]);
}

void ukp_json_event(struct ukp_json *j, struct ukp_session *s, struct ukp_image *img,
		    const struct ukp_probe_info *pi, const struct ukp_rec *rec)
{
	const struct ukp_spec *spec = &s->specs[pi->spec];
	char comm[sizeof(rec->comm) + 1];
	struct thread *t;
	char *args;

	memcpy(comm, rec->comm, sizeof(rec->comm));
	comm[sizeof(rec->comm)] = '\0';
	t = thread_of(j, img->pid, rec->tid, comm);
	args = args_text(img, spec, rec);
	if (!t) {
		free(args);
		return;
	}
	if (spec->is_return) {
		on_return(j, t, pi, spec->group, rec, args);
	} else if ((pi->flags & UKP_PROBE_ENTRY) && has_return_probe(j, s, img, pi->func)) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			struct frame *f = realloc(t->frames, cap * sizeof(*f));

			if (!f) {
				free(args);
				return;
			}
			t->frames = f;
			t->cap = cap;
		}
		t->frames[t->n++] = (struct frame){ pi->func, rec->ts, strdup(pi->event),
						    strdup(spec->group), args };
		return;
	} else {
		put_instant(j, pi->event, spec->group, img->pid, rec->tid, rec->ts, args);
	}
	free(args);
}

struct ukp_json *ukp_json_open(const char *path)
{
	struct ukp_json *j = calloc(1, sizeof(*j));

	if (!j) {
		ukp_err("out of memory");
		return NULL;
	}
	j->out = fopen(path, "w");
	if (!j->out) {
		ukp_err("cannot open %s: %s", path, strerror(errno));
		free(j);
		return NULL;
	}
	j->path = strdup(path);
	j->first = true;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", j->out);
	return j;
}

int ukp_json_close(struct ukp_json *j, struct ukp_session *s)
{
	size_t b, i;
	int ret = 0;

	/* process names: the comm of each image (the last one of a pid
	 * wins in the viewers: an exec'd program's name) */
	for (i = 0; i < s->nimages; i++)
		put_meta(j, "process_name", s->images[i]->pid, 0, s->images[i]->comm, 16);
	for (b = 0; b < NBUCKETS; b++) {
		while (j->threads[b]) {
			struct thread *t = j->threads[b];

			while (t->n)
				frame_flush(j, t, &t->frames[--t->n]);
			j->threads[b] = t->next;
			free(t->frames);
			free(t);
		}
	}
	fputs("\n]", j->out);
	/* the hist triggers' tables beside the events (viewers skip keys
	 * they do not know) */
	ukp_hist_json(j->out, s);
	fputs("}\n", j->out);
	if (ferror(j->out) | fclose(j->out)) {
		ukp_err("cannot write %s", j->path);
		ret = -1;
	}
	free(j->ret_funcs);
	free(j->path);
	free(j);
	return ret;
}
