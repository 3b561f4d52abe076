/* SPDX-License-Identifier: MIT */
/*
 * spec_wire.c - the parsed SPECs' form on the way to the agent
 * (spec_wire.h): the CLI's encoder and the agent's decoder, in one file
 * so that the two never disagree. [init]: plain C, malloc.
 *
 * A record, 8-byte aligned throughout:
 *   struct rec_head
 *   struct ukp_spec without its args[] array (the bytes before and after it)
 *   args[0..nargs)
 *   the --filter (REC_FILTER), the traceon/traceoff filter (REC_ONOFF),
 *   the hist (REC_HIST) and its filter (REC_HIST_FILTER), each present
 *   as its bit says; a filter as struct ukp_filter up to preds[], then
 *   preds[0..npreds) and insns[0..ninsns)
 *   the strings: text, object, symbol, filter_text, trigger_text, each
 *   argument's symbol, the hist's info; each a uint32_t length
 *   (UINT32_MAX: none) and its bytes with a NUL
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_types.h"
#include "filter.h"
#include "hist.h"
#include "proto.h"
#include "spec_wire.h"

#define REC_FILTER      0x1
#define REC_ONOFF       0x2
#define REC_HIST        0x4
#define REC_HIST_FILTER 0x8

struct rec_head {
	uint32_t size;            /* the record's bytes, this head included */
	uint32_t parts;           /* REC_* */
};

#define ARGS_OFF offsetof(struct ukp_spec, args)
#define ARGS_END (ARGS_OFF + sizeof(((struct ukp_spec *)0)->args))
#define FILTER_HEAD offsetof(struct ukp_filter, preds)
#define NO_STRING UINT32_MAX

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ------------------------------------------------------- encoder */

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
};

/* n bytes of src (zeros when NULL), padded to 8; returns where they went. */
static size_t put(struct out *o, const void *src, size_t n)
{
	size_t at = o->len, need = round8(n);

	if (o->failed)
		return 0;
	if (o->cap - o->len < need) {
		size_t cap = o->cap ? o->cap : 4096;
		char *b;

		while (cap - o->len < need)
			cap *= 2;
		b = realloc(o->buf, cap);
		if (!b) {
			o->failed = true;
			return 0;
		}
		o->buf = b;
		o->cap = cap;
	}
	if (src)
		memcpy(o->buf + at, src, n);
	else
		memset(o->buf + at, 0, n);
	memset(o->buf + at + n, 0, need - n);
	o->len += need;
	return at;
}

static void put_string(struct out *o, const char *s)
{
	uint32_t len = s ? (uint32_t)strlen(s) : NO_STRING;

	put(o, &len, sizeof(len));
	if (s)
		put(o, s, (size_t)len + 1);
}

static void put_filter(struct out *o, const struct ukp_filter *f)
{
	put(o, f, FILTER_HEAD);
	put(o, f->preds, (size_t)f->npreds * sizeof(f->preds[0]));
	put(o, f->insns, (size_t)f->ninsns * sizeof(f->insns[0]));
}

static void put_spec(struct out *o, const struct ukp_spec *s)
{
	struct ukp_spec copy;
	struct rec_head head = {
		.parts = (s->filter ? REC_FILTER : 0) | (s->onoff_filter ? REC_ONOFF : 0) |
			 (s->hist ? REC_HIST : 0) |
			 (s->hist && s->hist->filter ? REC_HIST_FILTER : 0),
	};
	size_t at = put(o, &head, sizeof(head));
	int i;

	/* memcpy, not an assignment: the padding goes too (zeros from the
	 * parser's memset), so that the same SPECs always give the same form */
	memcpy(&copy, s, sizeof(copy));
	/* no addresses of ours in the form */
	copy.text = copy.object = copy.symbol = copy.filter_text = copy.trigger_text = NULL;
	copy.filter = copy.onoff_filter = NULL;
	copy.hist = NULL;
	put(o, &copy, ARGS_OFF);
	put(o, (const char *)&copy + ARGS_END, sizeof(copy) - ARGS_END);
	for (i = 0; i < s->nargs; i++) {
		struct ukp_fetcharg fa;

		memcpy(&fa, &s->args[i], sizeof(fa));
		fa.symbol = NULL;
		put(o, &fa, sizeof(fa));
	}
	if (s->filter)
		put_filter(o, s->filter);
	if (s->onoff_filter)
		put_filter(o, s->onoff_filter);
	if (s->hist) {
		struct ukp_hist h;

		memcpy(&h, s->hist, sizeof(h));
		h.filter = NULL;
		h.info = NULL;
		put(o, &h, sizeof(h));
		if (s->hist->filter)
			put_filter(o, s->hist->filter);
	}
	put_string(o, s->text);
	put_string(o, s->object);
	put_string(o, s->symbol);
	put_string(o, s->filter_text);
	put_string(o, s->trigger_text);
	for (i = 0; i < s->nargs; i++)
		put_string(o, s->args[i].symbol);
	if (s->hist)
		put_string(o, s->hist->info);
	if (!o->failed) {
		head.size = (uint32_t)(o->len - at);
		memcpy(o->buf + at, &head, sizeof(head));
	}
}

void ukp_specs_header_init(struct ukp_specs_header *h, int n)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, UKP_SPECS_MAGIC, sizeof(h->magic));
	h->version = UKP_PROTO_VERSION;
	h->header_size = sizeof(*h);
	h->spec_size = sizeof(struct ukp_spec);
	h->arg_size = sizeof(struct ukp_fetcharg);
	h->filter_size = sizeof(struct ukp_filter);
	h->pred_size = sizeof(struct ukp_filter_pred);
	h->hist_size = sizeof(struct ukp_hist);
	h->nspecs = (uint32_t)n;
}

void *ukp_specs_encode(const struct ukp_spec *specs, int n, size_t *len)
{
	struct ukp_specs_header h;
	struct out o = { 0 };
	int i;

	ukp_specs_header_init(&h, n);
	put(&o, &h, sizeof(h));
	for (i = 0; i < n; i++)
		put_spec(&o, &specs[i]);
	if (o.failed) {
		free(o.buf);
		return NULL;
	}
	h.size = o.len;
	memcpy(o.buf, &h, sizeof(h));
	*len = o.len;
	return o.buf;
}

/* ------------------------------------------------------- decoder */

struct in {
	const char *p;
	size_t left;
	bool bad;                 /* the bytes do not hold */
	bool nomem;               /* they held; the memory for them did not */
};

static bool get(struct in *in, void *dst, size_t n)
{
	size_t step = round8(n);

	if (in->bad || in->left < step) {
		in->bad = true;
		return false;
	}
	memcpy(dst, in->p, n);
	in->p += step;
	in->left -= step;
	return true;
}

/* A string, malloc'ed into *out (NULL when the form has none). */
static bool get_string(struct in *in, char **out)
{
	uint32_t len;

	*out = NULL;
	if (!get(in, &len, sizeof(len)))
		return false;
	if (len == NO_STRING)
		return true;
	if (len >= in->left || in->p[len] || memchr(in->p, '\0', len)) {
		in->bad = true;
		return false;
	}
	*out = malloc((size_t)len + 1);
	if (!*out) {
		in->nomem = true;
		return false;
	}
	return get(in, *out, (size_t)len + 1);
}

/*
 * The bool fields came as bytes: one that is neither 0 nor 1 is no bool
 * (reading it as one is undefined), so they are checked as bytes before
 * anything reads them.
 */
static bool bytes_bool(const void *base, const size_t *offs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (((const unsigned char *)base)[offs[i]] > 1)
			return false;
	return true;
}
#define BOOLS(base, ...) \
	bytes_bool(base, (const size_t[]){ __VA_ARGS__ }, \
		   sizeof((const size_t[]){ __VA_ARGS__ }) / sizeof(size_t))
#define AT(T, f) offsetof(T, f)

static bool spec_bools(const struct ukp_spec *s)
{
	return BOOLS(s, AT(struct ukp_spec, is_return),
		     AT(struct ukp_spec, is_watch), AT(struct ukp_spec, is_addr),
		     AT(struct ukp_spec, is_glob), AT(struct ukp_spec, cxx_name),
		     AT(struct ukp_spec, is_sdt),
		     AT(struct ukp_spec, event_given), AT(struct ukp_spec, uses_duration),
		     AT(struct ukp_spec, stacktrace));
}

static bool filter_bools(const struct ukp_filter *f)
{
	int i;

	if (!BOOLS(f, AT(struct ukp_filter, uses_pid),
		   AT(struct ukp_filter, uses_comm)))
		return false;
	for (i = 0; i < f->npreds; i++)
		if (!BOOLS(&f->preds[i], AT(struct ukp_filter_pred, is_string),
			   AT(struct ukp_filter_pred, is_signed)))
			return false;
	return true;
}

static bool hist_bools(const struct ukp_hist *h)
{
	size_t i;

	if (!BOOLS(h, AT(struct ukp_hist, uses_pid), AT(struct ukp_hist, uses_comm),
		   AT(struct ukp_hist, execname)))
		return false;
	for (i = 0; i < UKP_HIST_MAX_KEYS + UKP_HIST_MAX_VALS; i++) {
		const struct ukp_hist_field *f = i < UKP_HIST_MAX_KEYS ? &h->keys[i]
								: &h->vals[i - UKP_HIST_MAX_KEYS];

		if (!BOOLS(f, AT(struct ukp_hist_field, is_string),
			   AT(struct ukp_hist_field, is_signed)))
			return false;
	}
	for (i = 0; i < UKP_HIST_MAX_SORT; i++)
		if (!BOOLS(&h->sort[i], AT(struct ukp_hist_sort, descending)))
			return false;
	return true;
}

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* Is argument i of s a string (its slot is read as one)? */
static bool arg_is_string(const struct ukp_spec *s, int i)
{
	return ukp_fetch_types[s->args[i].tidx].is_string;
}

/*
 * What the evaluator relies on (filter_run.c): predicates on fields that
 * exist, of the fields' kind, within the record; instructions that name
 * predicates and keep its stack within bounds, ending with one result.
 */
static bool filter_ok(const struct ukp_filter *f, const struct ukp_spec *s)
{
	int i, sp = 0;

	if (f->npreds < 1 || f->npreds > UKP_FILTER_MAX_PREDS || f->ninsns < 1 ||
	    f->ninsns > 3 * UKP_FILTER_MAX_PREDS)
		return false;
	for (i = 0; i < f->npreds; i++) {
		const struct ukp_filter_pred *pr = &f->preds[i];

		/* a number is sign-extended from its size (1..8 bytes) */
		if (!terminated(pr->str, sizeof(pr->str)) || pr->op > UKP_FOP_GLOB ||
		    (!pr->is_string && (pr->size < 1 || pr->size > 8)))
			return false;
		if (pr->arg == UKP_FILTER_COMM) {
			if (!pr->is_string)
				return false;
		} else if (pr->arg != UKP_FILTER_PID &&
			   (pr->arg < 0 || pr->arg >= s->nargs ||
			    pr->is_string != arg_is_string(s, pr->arg))) {
			return false;
		}
	}
	for (i = 0; i < f->ninsns; i++) {
		uint32_t insn = f->insns[i];

		switch (insn & 0xff) {
		case UKP_FI_PRED:
			if ((insn >> 8) >= (uint32_t)f->npreds || ++sp > UKP_FILTER_MAX_PREDS)
				return false;
			break;
		case UKP_FI_AND:
		case UKP_FI_OR:
			if (sp-- < 2)
				return false;
			break;
		case UKP_FI_NOT:
			if (sp < 1)
				return false;
			break;
		default:
			return false;
		}
	}
	/* one instruction is run as preds[0] alone */
	return sp == 1 && (f->ninsns > 1 || f->insns[0] == UKP_FI_PRED);
}

static struct ukp_filter *get_filter(struct in *in, const struct ukp_spec *s)
{
	struct ukp_filter *f = calloc(1, sizeof(*f));

	if (!f) {
		in->nomem = true;
		return NULL;
	}
	if (!get(in, f, FILTER_HEAD) || f->npreds < 0 || f->npreds > UKP_FILTER_MAX_PREDS ||
	    f->ninsns < 0 || f->ninsns > 3 * UKP_FILTER_MAX_PREDS ||
	    !get(in, f->preds, (size_t)f->npreds * sizeof(f->preds[0])) ||
	    !get(in, f->insns, (size_t)f->ninsns * sizeof(f->insns[0])) || !filter_bools(f) ||
	    !filter_ok(f, s)) {
		in->bad = true;
		free(f);
		return NULL;
	}
	return f;
}

/* The fetch (agent/fetch.c) writes each argument's slot into the record
 * and reads %REG's word from struct pt_regs. */
static bool arg_ok(const struct ukp_fetcharg *fa, unsigned int nregs)
{
	const struct ukp_fetch_type *t;

	if (!terminated(fa->name, sizeof(fa->name)) || fa->base > UKP_FA_GOID ||
	    fa->nderef < 0 || fa->nderef > UKP_SPEC_DEREF_MAX + 1 ||
	    fa->tidx >= ukp_fetch_ntypes)
		return false;
	t = &ukp_fetch_types[fa->tidx];
	if (fa->size != t->size || fa->off > UKP_SPEC_PAYLOAD_MAX - t->slot ||
	    fa->bf_width > 8 * fa->size || fa->bf_offset > 8 * fa->size - fa->bf_width)
		return false;
	if (fa->base == UKP_FA_REG && fa->param >= nregs)
		return false;
	/* an index is added to an address: a dereference follows */
	if (fa->index_scale && (fa->index_reg >= nregs || fa->nderef < 1 || fa->plain_reg ||
				(fa->index_scale & (fa->index_scale - 1)) || fa->index_scale > 8))
		return false;
	return !fa->plain_reg || fa->base == UKP_FA_REG;
}

static bool hist_field_ok(const struct ukp_hist_field *f, const struct ukp_spec *s, bool is_key)
{
	if (!terminated(f->name, sizeof(f->name)) || f->mod > UKP_HM_EXECNAME ||
	    (f->mod == UKP_HM_BUCKETS && !f->buckets))
		return false;
	if (f->arg >= 0)
		return f->arg < s->nargs && f->is_string == arg_is_string(s, f->arg) &&
		       (is_key || !f->is_string);
	if (f->arg == UKP_HIST_PID)
		return !f->is_string;
	if (f->arg == UKP_HIST_COMM)
		return is_key && f->is_string;
	return f->arg == UKP_HIST_HITCOUNT && !is_key;
}

/* agent/hist_hit.c builds a key of at most three string slots, with
 * each key field at its off, and indexes the table by size - 1. */
static bool hist_ok(const struct ukp_hist *h, const struct ukp_spec *s)
{
	int i;

	if (h->nkeys < 1 || h->nkeys > UKP_HIST_MAX_KEYS || h->nvals < 0 ||
	    h->nvals > UKP_HIST_MAX_VALS || h->nsort < 0 || h->nsort > UKP_HIST_MAX_SORT ||
	    !h->size || h->size > UKP_HIST_MAX_SIZE || (h->size & (h->size - 1)) ||
	    (h->key_bytes & 7) || h->key_bytes > UKP_HIST_MAX_KEYS * UKP_SPEC_STR_SLOT)
		return false;
	for (i = 0; i < h->nkeys; i++) {
		const struct ukp_hist_field *f = &h->keys[i];
		unsigned int room = f->is_string ? f->size : 8;

		if (!hist_field_ok(f, s, true) || room > h->key_bytes ||
		    f->off > h->key_bytes - room || (f->is_string && f->size > UKP_SPEC_STR_SLOT))
			return false;
	}
	for (i = 0; i < h->nvals; i++)
		if (!hist_field_ok(&h->vals[i], s, false))
			return false;
	for (i = 0; i < h->nsort; i++)
		if (h->sort[i].key < -1 || h->sort[i].key >= h->nkeys + h->nvals)
			return false;
	return true;
}

static bool spec_ok(const struct ukp_spec *s, unsigned int nregs)
{
	int i;

	if (s->nargs < 0 || s->nargs > UKP_SPEC_MAX_ARGS || s->payload > UKP_SPEC_PAYLOAD_MAX ||
	    s->maxactive < 0 || s->stack_max > UKP_SPEC_PAYLOAD_MAX / 8 ||
	    s->stack_off > UKP_SPEC_PAYLOAD_MAX ||
	    ukp_spec_record_payload(s) > UKP_SPEC_PAYLOAD_MAX ||
	    !terminated(s->group, sizeof(s->group)) || !terminated(s->event, sizeof(s->event)))
		return false;
	for (i = 0; i < s->nargs; i++)
		if (!arg_ok(&s->args[i], nregs) || s->args[i].off > s->payload ||
		    ukp_fetch_types[s->args[i].tidx].slot > s->payload - s->args[i].off)
			return false;
	return true;
}

/* One record into s (zeroed by the caller's calloc: the unused argument
 * rows stay zeros). */
static bool get_spec(struct in *outer, struct ukp_spec *s, unsigned int nregs)
{
	struct rec_head head;
	struct in in;
	bool read;
	int i;

	if (!get(outer, &head, sizeof(head)) || head.size < sizeof(head) || (head.size & 7) ||
	    head.size - sizeof(head) > outer->left) {
		outer->bad = true;
		return false;
	}
	in = (struct in){ outer->p, head.size - sizeof(head), false, false };
	outer->p += in.left;
	outer->left -= in.left;
	read = get(&in, s, ARGS_OFF) && get(&in, (char *)s + ARGS_END, sizeof(*s) - ARGS_END);
	/* what the copy brought in place of pointers is not ours (also when
	 * the first part came and the second did not) */
	s->text = s->object = s->symbol = s->filter_text = s->trigger_text = NULL;
	s->filter = s->onoff_filter = NULL;
	s->hist = NULL;
	if (!read)
		goto bad;
	if (s->nargs < 0 || s->nargs > UKP_SPEC_MAX_ARGS || !spec_bools(s))
		goto bad;
	for (i = 0; i < s->nargs; i++) {
		if (!get(&in, &s->args[i], sizeof(s->args[i])))
			goto bad;
		s->args[i].symbol = NULL;
		if (!BOOLS(&s->args[i], AT(struct ukp_fetcharg, plain_reg),
			   AT(struct ukp_fetcharg, type_given), AT(struct ukp_fetcharg, sdt_default),
			   AT(struct ukp_fetcharg, sext)) || s->args[i].sext)
			goto bad;
	}
	if (!spec_ok(s, nregs))
		goto bad;
	if ((head.parts & REC_FILTER) && !(s->filter = get_filter(&in, s)))
		goto bad;
	if ((head.parts & REC_ONOFF) && !(s->onoff_filter = get_filter(&in, s)))
		goto bad;
	if (head.parts & REC_HIST) {
		s->hist = calloc(1, sizeof(*s->hist));
		in.nomem = !s->hist;
		if (!s->hist || !get(&in, s->hist, sizeof(*s->hist)))
			goto bad;
		s->hist->filter = NULL;
		s->hist->info = NULL;
		if (!hist_bools(s->hist) || !hist_ok(s->hist, s) ||
		    ((head.parts & REC_HIST_FILTER) && !(s->hist->filter = get_filter(&in, s))))
			goto bad;
	}
	if (!get_string(&in, &s->text) || !get_string(&in, &s->object) ||
	    !get_string(&in, &s->symbol) || !get_string(&in, &s->filter_text) ||
	    !get_string(&in, &s->trigger_text))
		goto bad;
	for (i = 0; i < s->nargs; i++) {
		if (!get_string(&in, &s->args[i].symbol))
			goto bad;
		if ((s->args[i].base == UKP_FA_SYM) != (s->args[i].symbol != NULL))
			goto bad;
	}
	if (s->hist && !get_string(&in, &s->hist->info))
		goto bad;
	/* the library gets "object:symbol" (ukp_spec_symbol_name) */
	if (!s->text || (!s->is_addr && !s->symbol) || in.left)
		goto bad;
	return true;
bad:
	if (in.nomem && !in.bad)
		outer->nomem = true;
	else
		outer->bad = true;
	ukp_spec_free(s);
	return false;
}

/* The SPEC at index i of an array of stride bytes (a caller's own
 * structs, each holding one). */
static struct ukp_spec *spec_at(void *base, size_t stride, uint32_t i)
{
	return (struct ukp_spec *)(void *)((char *)base + (size_t)i * stride);
}

enum ukp_specs_error ukp_specs_decode_into(const void *buf, size_t len, unsigned int nregs,
					   void *(*alloc)(size_t n, void *arg), void *arg,
					   size_t stride, size_t off, int *n, uint32_t *version)
{
	struct ukp_specs_header h;
	char *base;
	struct in in = { buf, len, false, false };
	uint32_t i;

	*version = 0;
	if (len < sizeof(h))
		return UKP_SPECS_NOT_SPECS;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, UKP_SPECS_MAGIC, sizeof(h.magic)))
		return UKP_SPECS_NOT_SPECS;
	*version = h.version;
	if (h.version != UKP_PROTO_VERSION || h.header_size != sizeof(h) ||
	    h.spec_size != sizeof(struct ukp_spec) || h.arg_size != sizeof(struct ukp_fetcharg) ||
	    h.filter_size != sizeof(struct ukp_filter) ||
	    h.pred_size != sizeof(struct ukp_filter_pred) || h.hist_size != sizeof(struct ukp_hist))
		return UKP_SPECS_VERSION;
	if (h.size != len || h.nspecs > len / sizeof(struct rec_head))
		return UKP_SPECS_DAMAGED;
	get(&in, &h, sizeof(h));
	base = alloc(h.nspecs, arg);
	if (!base)
		return UKP_SPECS_NOMEM;
	base += off;
	for (i = 0; i < h.nspecs; i++) {
		if (!get_spec(&in, spec_at(base, stride, i), nregs)) {
			while (i--)
				ukp_spec_free(spec_at(base, stride, i));
			return in.nomem ? UKP_SPECS_NOMEM : UKP_SPECS_DAMAGED;
		}
	}
	if (in.left) {
		for (i = 0; i < h.nspecs; i++)
			ukp_spec_free(spec_at(base, stride, i));
		return UKP_SPECS_DAMAGED;
	}
	*n = (int)h.nspecs;
	return UKP_SPECS_OK;
}

static void *specs_alloc(size_t n, void *arg)
{
	struct ukp_spec **out = arg;

	*out = calloc(n ? n : 1, sizeof(**out));
	return *out;
}

enum ukp_specs_error ukp_specs_decode(const void *buf, size_t len, unsigned int nregs,
				      struct ukp_spec **specs, int *n, uint32_t *version)
{
	struct ukp_spec *out = NULL;
	enum ukp_specs_error ret = ukp_specs_decode_into(buf, len, nregs, specs_alloc, &out,
							 sizeof(*out), 0, n, version);

	if (ret != UKP_SPECS_OK) {
		free(out);
		return ret;
	}
	*specs = out;
	return UKP_SPECS_OK;
}
